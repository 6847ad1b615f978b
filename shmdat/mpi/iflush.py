"""MPI 4.1's nonblocking buffer flushes: MPI.Iflush_buffer, Comm.Iflush_buffer and
Session.Iflush_buffer (MPI_Buffer_iflush, MPI_Comm_iflush_buffer, MPI_Session_iflush_buffer):
a Request done once every send buffered in the attached buffer when it was made has left (at
once if none is attached, or none is under way). Its status is empty (MPICH leaves it
unfilled)."""

from . import bsend
from .comm import Comm, Request, _invalid, _NullComm
from .matching import ANY_SOURCE, ANY_TAG
from .session import Session

_EMPTY = {ANY_SOURCE: ANY_SOURCE}   # (the request's rank_of: its status names no rank)


class _Flushed:
    """The operation of a flush's request: the buffered sends it waits for (`ops`, what the
    engine waits on); an empty status (source ANY_SOURCE, tag ANY_TAG, no bytes)."""

    source, tag, nbytes, buf, data = ANY_SOURCE, ANY_TAG, 0, None, None

    def __init__(self, ops):
        self.ops = tuple(ops)

    @property
    def done(self):
        return all(op.done for op in self.ops)

    @property
    def error(self):
        """The first error of a send (ERR_OTHER, a destination gone), else SUCCESS."""
        return next((op.error for op in self.ops if op.error), 0)


def request(key, engine):
    """The Request of a flush of the buffer attached under `key` (None: the process's, a
    communicator's context, a session's state)."""
    return Request(engine, _EMPTY, _Flushed(bsend.pending(key)))


def _comm_iflush_buffer(self):
    """MPI_Comm_iflush_buffer: a Request done once this communicator's buffered sends (those
    under way now) have left. MPI.Exception ERR_COMM on COMM_NULL."""
    return request(self._context, self._engine)


def _session_iflush_buffer(self):
    """MPI_Session_iflush_buffer: a Request done once the session's buffered sends (those
    under way now) have left. MPI.Exception ERR_SESSION on a null or finalized session."""
    return request(self._live(), self._engine)


Comm.Iflush_buffer = _comm_iflush_buffer
_NullComm.Iflush_buffer = _invalid("Iflush_buffer")
Session.Iflush_buffer = _session_iflush_buffer
