"""MPI-4's partitioned point to point (MPI 4.0 chapter 4): Comm.Psend_init and Precv_init
make persistent requests over a buffer of `partitions` equal parts; after each Start the
sender marks parts ready (Prequest.Pready, Pready_range, Pready_list) and the receiver may
ask whether a part has arrived (Prequest.Parrived).

Design: the whole buffer is one message, sent once every partition of the round is ready
(the receive is posted at the receiver's Start); Parrived of any partition is true once the
message has arrived. So the two sides may cut the buffer into different numbers of parts
(MPI allows it), and a message is the engine's ordinary one (eager or rendezvous). It goes
on the communicator's collective context under a tag of its own (PARTITIONED_TAG - tag,
below every non-blocking collective's), so no point-to-point receive, ANY_TAG's included,
and no collective can match it, and a round k of the send meets round k of the receive
(MPI's matching at init: messages of one tag keep their order).

Tags are checked against MPICH's TAG_UB (2**29 - 1: MPICH's ERR_TAG beyond it, and every
partitioned tag has its own wire tag); source and dest must be ranks or PROC_NULL (a round
with PROC_NULL is done at its Start), not wildcards (ERR_RANK, ERR_TAG, as MPICH)."""

from . import errors
from .collectives import NONBLOCKING_TAG, TAGS
from .comm import Comm, Prequest, _Done, _invalid, _NullComm
from .datatypes import message
from .errors import Exception as MPIException
from .info import INFO_NULL
from .matching import ANY_SOURCE, ANY_TAG, PROC_NULL

PARTITIONED_TAG = NONBLOCKING_TAG - TAGS    # the wire tag of partitioned tag 0
TAG_LIMIT = 2**29                           # MPICH's TAG_UB + 1


class _Round:
    """One Start's operation: `op`, the message's engine operation (None until a send's
    partitions are all ready), and `ready`, the partitions marked ready. Its status is the
    receive's with the program's tag (the wire tag is this module's)."""

    def __init__(self, partitions, tag, op=None):
        self.ready, self.tag, self.op = [False] * partitions, tag, op

    done = property(lambda self: self.op is not None and self.op.done)
    error = property(lambda self: 0 if self.op is None else self.op.error)
    ops = property(lambda self: () if self.op is None else (self.op,))    # (the engine's waits)

    def __getattr__(self, name):        # source, nbytes, buf, data: the receive's
        return getattr(self.op, name)


class _Partitioned(Prequest):
    """A partitioned request (Prequest's Start, completion calls and Free)."""

    def _partition(self, partition):
        """MPI.Exception ERR_OTHER (as MPICH) unless `partition` is one of this request's."""
        if not isinstance(partition, int) or not 0 <= partition < self._partitions:
            raise MPIException(errors.ERR_OTHER, f"partition {partition!r} of a request of "
                               f"{self._partitions}")


class _Psend(_Partitioned):

    def _fill(self, status):
        """(a send's status is left as it is)"""

    def _ready(self, partitions):
        """Mark `partitions` ready; the message goes once all of this round's are."""
        if not self._active:
            raise MPIException(errors.ERR_REQUEST, "Pready of a partitioned send not started")
        for partition in partitions:
            self._partition(partition)
        round_ = self._op
        for partition in partitions:
            round_.ready[partition] = True
        if round_.op is None and all(round_.ready):
            round_.op = self._send()


class _Precv(_Partitioned):
    pass


def _checked_tag(tag):
    if not isinstance(tag, int) or not 0 <= tag < TAG_LIMIT:
        raise MPIException(errors.ERR_TAG, f"partitioned tag {tag!r} (0 to {TAG_LIMIT - 1})")
    return tag


def _init(comm, cls, buf, writable, partitions, rank, tag):
    """The request of class `cls`: partitions, buffer, peer and tag checked; (its byte view,
    the peer's engine rank, the wire tag)."""
    if not isinstance(partitions, int) or partitions < 1:
        raise MPIException(errors.ERR_ARG, f"partitions {partitions!r}")
    view = message(buf, writable, partitions)[0]
    if rank == ANY_SOURCE:
        raise MPIException(errors.ERR_RANK, "a partitioned receive from ANY_SOURCE")
    peer = comm._engine_rank(rank, "dest" if cls is _Psend else "source")
    _checked_tag(tag)
    request = cls(comm._engine, comm._rank_of)
    request._partitions = partitions
    return request, view, peer, PARTITIONED_TAG - tag


def Psend_init(self, buf, partitions, dest, tag=0, info=INFO_NULL):
    """MPI_Psend_init: a partitioned send of `buf` (`partitions` equal parts) to `dest`.
    MPI.Exception ERR_ARG (partitions < 1), ERR_RANK, ERR_TAG (wildcards too, and tags
    beyond MPICH's TAG_UB), buffer errors; ValueError if the buffer is not cut evenly."""
    request, view, peer, wire_tag = _init(self, _Psend, buf, False, partitions, dest, tag)
    context, engine = self._channel.context, self._engine

    def start():
        return _Round(partitions, tag, _Done() if peer == PROC_NULL else None)

    request._start = start
    request._send = lambda: engine.send(peer, context, wire_tag, view)
    return request


def Precv_init(self, buf, partitions, source=ANY_SOURCE, tag=ANY_TAG, info=INFO_NULL):
    """MPI_Precv_init: a partitioned receive into `buf` (`partitions` equal parts) from
    `source`. Errors as Psend_init's; ERR_TRUNCATE at the wait for a longer message."""
    request, view, peer, wire_tag = _init(self, _Precv, buf, True, partitions, source, tag)
    context, engine = self._channel.context, self._engine

    def start():
        if peer == PROC_NULL:
            return _Round(partitions, ANY_TAG, _Done())
        return _Round(partitions, tag, engine.post_recv(context, peer, wire_tag, view))

    request._start = start
    return request


# Prequest's calls (mpi4py's): on another request, MPI.Exception ERR_REQUEST, as MPICH.

def _sender(request, call):
    if not isinstance(request, _Psend):
        raise MPIException(errors.ERR_REQUEST, f"{call} of a request that is no partitioned send")


def Pready(self, partition):
    """MPI_Pready: partition `partition` of this round may be sent. MPI.Exception
    ERR_REQUEST (not a partitioned send, or not started), ERR_OTHER (no such partition)."""
    _sender(self, "Pready")
    self._ready([partition])


def Pready_range(self, partition_low, partition_high):
    """MPI_Pready_range: partitions partition_low to partition_high (inclusive) are ready.
    Errors as Pready's."""
    _sender(self, "Pready_range")
    self._ready(range(partition_low, partition_high + 1))


def Pready_list(self, partitions):
    """MPI_Pready_list: each of `partitions` is ready. Errors as Pready's."""
    _sender(self, "Pready_list")
    self._ready([int(p) for p in partitions])


def Parrived(self, partition):
    """MPI_Parrived: whether partition `partition` has arrived (progress runs first); true
    for a request not started. MPI.Exception ERR_REQUEST (not a partitioned receive),
    ERR_OTHER (no such partition)."""
    if not isinstance(self, _Precv):
        raise MPIException(errors.ERR_REQUEST, "Parrived of a request that is no partitioned "
                           "receive")
    self._partition(partition)
    if not self._active:
        return True
    self._engine.progress()
    return self._op.done


# Set on Comm and Prequest here (comm.py, which this module builds on, cannot import it); on
# COMM_NULL's class, ERR_COMM as its other methods.
for _call in (Psend_init, Precv_init):
    setattr(Comm, _call.__name__, _call)
    setattr(_NullComm, _call.__name__, _invalid(_call.__name__))
for _call in (Pready, Pready_range, Pready_list, Parrived):
    setattr(Prequest, _call.__name__, _call)
