"""An intercommunicator's v-collectives (MPI_Gatherv, Scatterv, Allgatherv, Alltoallv on an
Intercomm): each block goes straight between the two ranks it joins, on the
intercommunicator's collective channel (every receive posted before the sends are waited
for). Vector specs as the intracommunicator's (datatypes.vector); IN_PLACE is ERR_BUFFER, as
an intercommunicator's collectives take none."""

from .datatypes import message, vector
from .intercomm import ROOT, Intercomm, _send_buffer, _send_spec
from .matching import PROC_NULL


def _exchange(comm, sends, recvs):
    """Post a receive from remote member i into recvs[i] (None: none), send sends[i] to
    remote member i (None: none), and wait for all. MPI.Exception ERR_TRUNCATE if a block
    does not fit."""
    ch = comm._channel
    posted = [ch.recv(i, block) for i, block in enumerate(recvs) if block is not None]
    ch.wait(posted + [ch.send(i, block) for i, block in enumerate(sends) if block is not None])


def Gatherv(self, sendbuf, recvbuf, root=ROOT):
    """MPI_Gatherv on an Intercomm: each member of the other group's block into block i of
    the root's vector spec `recvbuf` (`sendbuf` not used at the root). MPI.Exception
    ERR_ROOT, ERR_TRUNCATE, ERR_COUNT, ERR_BUFFER (IN_PLACE)."""
    root = self._root(root)
    n = self._remote_size
    if root == ROOT:
        _exchange(self, [None] * n, vector(recvbuf, True, n)[0])
    elif root != PROC_NULL:
        _exchange(self, [_send_buffer(sendbuf) if i == root else None for i in range(n)],
                  [None] * n)


def Scatterv(self, sendbuf, recvbuf, root=ROOT):
    """MPI_Scatterv on an Intercomm: block i of the root's vector spec `sendbuf` to member i
    of the other group (`recvbuf` not used at the root). Errors as Gatherv's."""
    root = self._root(root)
    n = self._remote_size
    if root == ROOT:
        _exchange(self, vector(_send_spec(sendbuf), False, n)[0], [None] * n)
    elif root != PROC_NULL:
        out = message(_send_spec(recvbuf), True)[0]
        _exchange(self, [None] * n, [out if i == root else None for i in range(n)])


def Allgatherv(self, sendbuf, recvbuf):
    """MPI_Allgatherv on an Intercomm: every member of the other group's block into block i
    of the vector spec `recvbuf`. MPI.Exception ERR_TRUNCATE, ERR_COUNT, ERR_BUFFER."""
    block = _send_buffer(sendbuf)
    n = self._remote_size
    _exchange(self, [block] * n, vector(recvbuf, True, n)[0])


def Alltoallv(self, sendbuf, recvbuf):
    """MPI_Alltoallv on an Intercomm: block i of the vector spec `sendbuf` to member i of the
    other group, block i of `recvbuf` from it. Errors as Allgatherv's."""
    n = self._remote_size
    _exchange(self, vector(_send_spec(sendbuf), False, n)[0], vector(recvbuf, True, n)[0])


for _call in (Gatherv, Scatterv, Allgatherv, Alltoallv):
    setattr(Intercomm, _call.__name__, _call)
