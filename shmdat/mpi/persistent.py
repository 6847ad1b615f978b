"""MPI-4 persistent collectives (MPI 4.0 section 6.13): Comm.Barrier_init ... Exscan_init and
Topocomm.Neighbor_*_init, each a Prequest whose Start begins the non-blocking collective of
the same name (the collective bodies comm.py and topology.py run for Ibcast, Ineighbor_...)
with the arguments bound at init: the buffers, datatypes, op and root given there, their
contents read at each Start.

The init call is collective in MPI; here it sends nothing (but Reduce_scatter_init without
recvcounts, which gathers them once, as mpi4py does). It checks the arguments as the
non-blocking call would (on a channel that starts nothing), so an error (ERR_ROOT, ERR_OP,
a buffer's) is raised there, as MPICH raises it; and it takes the collective's tag, as a
non-blocking collective takes one at its call, in the same order on every rank: every Start
of the request runs on that tag, so its messages never meet another request's, whatever
order the ranks start them in."""

import functools

from .collectives import Channel
from .comm import Comm, Prequest, _CollectiveRequest, _in_place, _invalid, _NullComm
from .datatypes import message
from .info import INFO_NULL
from .ops import SUM
from .topology import Topocomm


class CollectivePrequest(Prequest, _CollectiveRequest):
    """A persistent collective's request: started as a Prequest, completed as a non-blocking
    collective's request (an empty status; a wait raises what the collective raised)."""


class _Unstarted(Channel):
    """A channel that starts nothing: an init runs the collective's checks on it (the
    collective's rounds, a generator, are made and dropped unrun)."""

    def run(self, steps):
        steps.close()


def persistent(comm, collective, *args):
    """The CollectivePrequest of `collective(comm, ch, *args)` (Comm._bcast, ...): its tag
    taken and its arguments checked now; each Start runs it on its channel."""
    ch = comm._channel.nonblocking()
    collective(comm, _Unstarted(ch.engine, ch.context, ch.rank, ch.ranks), *args)
    request = CollectivePrequest(comm._engine, comm._rank_of,
                                 functools.partial(_start, collective, comm, ch, args))
    request._channel = ch
    return request


def _start(collective, comm, ch, args):
    """Prequest.Start's `start`: the collective begun on `ch`; its Schedule."""
    ch.unpacks.clear()      # (a run that raised left its staged buffers unplaced)
    collective(comm, ch, *args)
    return ch.schedule


# Comm's persistent collectives (mpi4py's signatures).

def Barrier_init(self, info=INFO_NULL):
    """MPI_Barrier_init: a persistent Barrier (a Prequest; `info` is not used)."""
    return persistent(self, Comm._barrier)


def Bcast_init(self, buf, root=0, info=INFO_NULL):
    """MPI_Bcast_init: a persistent Bcast. MPI.Exception ERR_ROOT, buffer errors, here;
    ERR_TRUNCATE at the wait."""
    return persistent(self, Comm._bcast, buf, root)


def Gather_init(self, sendbuf, recvbuf, root=0, info=INFO_NULL):
    """MPI_Gather_init: a persistent Gather (root's sendbuf may be IN_PLACE). Errors as
    Igather's, here."""
    return persistent(self, Comm._gather, sendbuf, recvbuf, root)


def Gatherv_init(self, sendbuf, recvbuf, root=0, info=INFO_NULL):
    """MPI_Gatherv_init: a persistent Gatherv. Errors as Igatherv's, here."""
    return persistent(self, Comm._gatherv, sendbuf, recvbuf, root)


def Scatter_init(self, sendbuf, recvbuf, root=0, info=INFO_NULL):
    """MPI_Scatter_init: a persistent Scatter (root's recvbuf may be IN_PLACE). Errors as
    Iscatter's, here."""
    return persistent(self, Comm._scatter, sendbuf, recvbuf, root)


def Scatterv_init(self, sendbuf, recvbuf, root=0, info=INFO_NULL):
    """MPI_Scatterv_init: a persistent Scatterv. Errors as Iscatterv's, here."""
    return persistent(self, Comm._scatterv, sendbuf, recvbuf, root)


def Allgather_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Allgather_init: a persistent Allgather (sendbuf may be IN_PLACE). Errors as
    Iallgather's, here."""
    return persistent(self, Comm._allgather, sendbuf, recvbuf)


def Allgatherv_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Allgatherv_init: a persistent Allgatherv. Errors as Iallgatherv's, here."""
    return persistent(self, Comm._allgatherv, sendbuf, recvbuf)


def Alltoall_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Alltoall_init: a persistent Alltoall (sendbuf may be IN_PLACE). Errors as
    Ialltoall's, here."""
    return persistent(self, Comm._alltoall, sendbuf, recvbuf)


def Alltoallv_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Alltoallv_init: a persistent Alltoallv. Errors as Ialltoallv's, here."""
    return persistent(self, Comm._alltoallv, sendbuf, recvbuf)


def Reduce_init(self, sendbuf, recvbuf, op=SUM, root=0, info=INFO_NULL):
    """MPI_Reduce_init: a persistent Reduce (root's sendbuf may be IN_PLACE). MPI.Exception
    ERR_ROOT, ERR_OP, buffer errors, here."""
    return persistent(self, Comm._reduce, sendbuf, recvbuf, op, root)


def Allreduce_init(self, sendbuf, recvbuf, op=SUM, info=INFO_NULL):
    """MPI_Allreduce_init: a persistent Allreduce (sendbuf may be IN_PLACE). MPI.Exception
    ERR_OP, buffer errors, here."""
    return persistent(self, Comm._allreduce, sendbuf, recvbuf, op)


def Reduce_scatter_block_init(self, sendbuf, recvbuf, op=SUM, info=INFO_NULL):
    """MPI_Reduce_scatter_block_init: a persistent Reduce_scatter_block. Errors as
    Ireduce_scatter_block's, here."""
    return persistent(self, Comm._reduce_scatter_block, sendbuf, recvbuf, op)


def Reduce_scatter_init(self, sendbuf, recvbuf, recvcounts=None, op=SUM, info=INFO_NULL):
    """MPI_Reduce_scatter_init: a persistent Reduce_scatter. `recvcounts` None: every rank's
    recvbuf count, gathered here (once, as mpi4py). Errors as Ireduce_scatter's, here."""
    if recvcounts is None and not _in_place(sendbuf):
        recvcounts = self.allgather(message(recvbuf, True)[1])
    return persistent(self, Comm._reduce_scatter, sendbuf, recvbuf, recvcounts, op)


def Scan_init(self, sendbuf, recvbuf, op=SUM, info=INFO_NULL):
    """MPI_Scan_init: a persistent Scan (sendbuf may be IN_PLACE). Errors as Iscan's, here."""
    return persistent(self, Comm._scan, sendbuf, recvbuf, op)


def Exscan_init(self, sendbuf, recvbuf, op=SUM, info=INFO_NULL):
    """MPI_Exscan_init: a persistent Exscan (sendbuf may be IN_PLACE). Errors as Iexscan's,
    here."""
    return persistent(self, Comm._exscan, sendbuf, recvbuf, op)


# Topocomm's persistent neighbour collectives.

def Neighbor_allgather_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Neighbor_allgather_init: a persistent Neighbor_allgather. Buffer errors here."""
    return persistent(self, Topocomm._neighbor_allgather, sendbuf, recvbuf)


def Neighbor_allgatherv_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Neighbor_allgatherv_init: a persistent Neighbor_allgatherv. Buffer errors here."""
    return persistent(self, Topocomm._neighbor_allgatherv, sendbuf, recvbuf)


def Neighbor_alltoall_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Neighbor_alltoall_init: a persistent Neighbor_alltoall. Buffer errors here."""
    return persistent(self, Topocomm._neighbor_alltoall, sendbuf, recvbuf)


def Neighbor_alltoallv_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Neighbor_alltoallv_init: a persistent Neighbor_alltoallv. Buffer errors here."""
    return persistent(self, Topocomm._neighbor_alltoallv, sendbuf, recvbuf)


# The methods, set on Comm and Topocomm here (comm.py and topology.py, which this module
# builds on, cannot import it); on COMM_NULL's class, ERR_COMM as its other methods.
for _call in (Barrier_init, Bcast_init, Gather_init, Gatherv_init, Scatter_init, Scatterv_init,
              Allgather_init, Allgatherv_init, Alltoall_init, Alltoallv_init, Reduce_init,
              Allreduce_init, Reduce_scatter_block_init, Reduce_scatter_init, Scan_init,
              Exscan_init):
    setattr(Comm, _call.__name__, _call)
    setattr(_NullComm, _call.__name__, _invalid(_call.__name__))
for _call in (Neighbor_allgather_init, Neighbor_allgatherv_init, Neighbor_alltoall_init,
              Neighbor_alltoallv_init):
    setattr(Topocomm, _call.__name__, _call)
