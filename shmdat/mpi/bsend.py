"""MPI's buffered mode (Bsend, Ibsend, Bsend_init, bsend, ibsend): the buffers attached with
MPI.Attach_buffer (the process's) and Comm.Attach_buffer (one communicator's), and the room
their buffered sends hold.

A buffered send copies its payload and starts it as a standard send; the copy counts against
the attached buffer's size (its length and BSEND_OVERHEAD) until the send has left, which an
eager send has at once (its data is in an eager slot), a rendezvous send copied into the
engine's bounce arena at once too, and one read from the copy itself (too large for the arena,
or the arena full) once its FIN has come. A send that finds no room fails with ERR_BUFFER, as MPI says; Detach_buffer and
Flush_buffer wait for the sends under way. BUFFER_AUTOMATIC (mpi4py 4, MPI 4.1) has no limit.
The copy is a bytes object of its own rather than a place in the user's buffer: the room is
what MPI's rule is about, and no send ever reads the attached memory."""

import operator
import threading

from . import errors
from .datatypes import message
from .errors import Exception as MPIException

BSEND_OVERHEAD = 96     # bytes of the buffer one buffered message takes beyond its data (MPICH's)


class BufferAutomaticType:
    """The type of MPI.BUFFER_AUTOMATIC: attached, buffered sends take what room they need
    (as mpi4py's: the int -2, true, pickled by name)."""

    def __int__(self):
        return -2

    __index__ = __int__

    def __hash__(self):
        return -2

    def __eq__(self, other):
        if isinstance(other, BufferAutomaticType):
            return True
        try:
            return operator.index(other) == -2
        except TypeError:
            return NotImplemented

    def __bool__(self):
        return True

    def __repr__(self):
        return "BUFFER_AUTOMATIC"

    def __reduce__(self):
        return "BUFFER_AUTOMATIC"


BUFFER_AUTOMATIC = BufferAutomaticType()


class Attached:
    """An attached buffer: the user's object `buf`, its `size` in bytes (None: automatic, no
    limit), and the buffered sends that have not left yet with the room each holds."""

    def __init__(self, buf, size):
        self.buf, self.size = buf, size
        self.used = 0
        self.pending = []        # (op, room) of the sends under way
        self.lock = threading.Lock()    # (threads may send buffered at once: THREAD_MULTIPLE)

    def send(self, engine, view, start):
        """Buffer the byte memoryview `view`: copied, then `start(copy)` starts it as a standard
        send and returns its op, which holds len(view) + BSEND_OVERHEAD bytes of room until it
        is done. MPI.Exception ERR_BUFFER if the buffer has not that room (progress runs first,
        so sends that have left give theirs back)."""
        room = len(view) + BSEND_OVERHEAD
        with self.lock:
            if self.size is not None and self.used + room > self.size:
                engine.progress()
                self._reclaim()
                if self.used + room > self.size:
                    raise MPIException(errors.ERR_BUFFER, f"a buffered send of {len(view)} "
                                       f"bytes (+{BSEND_OVERHEAD}) where {self.size - self.used} "
                                       f"of the attached buffer's {self.size} are free")
            op = start(memoryview(bytes(view)))
            if not op.done:
                self.pending.append((op, room))
                self.used += room

    def _reclaim(self):
        self.pending = [(op, room) for op, room in self.pending if not op.done]
        self.used = sum(room for _, room in self.pending)

    def flush(self, engine):
        """Wait until every buffered send has left. MPI.Exception ERR_OTHER if one's
        destination has gone."""
        with self.lock:
            ops = [op for op, _ in self.pending]
        engine.wait(ops)
        with self.lock:
            self._reclaim()


_attached = {}      # None (the process's buffer) or a communicator's context -> its Attached


def attach(key, buf):
    """MPI_Buffer_attach (key None) or MPI_Comm_attach_buffer (key: the communicator's
    context): `buf` (a writable contiguous buffer, or BUFFER_AUTOMATIC or None: automatic).
    MPI.Exception ERR_OTHER if one is attached already (MPICH's class), ERR_BUFFER if it is
    smaller than BSEND_OVERHEAD; BufferError (read-only, not contiguous) and TypeError, as
    mpi4py."""
    if key in _attached:
        raise MPIException(errors.ERR_OTHER, "a buffer is attached already")
    if buf is None or isinstance(buf, BufferAutomaticType):
        buf, size = BUFFER_AUTOMATIC, None
    else:
        size = len(message(buf, True)[0])
        if size < BSEND_OVERHEAD:
            raise MPIException(errors.ERR_BUFFER, f"a buffer of {size} bytes is smaller than "
                               f"BSEND_OVERHEAD ({BSEND_OVERHEAD})")
    _attached[key] = Attached(buf, size)


def detach(key, engine):
    """MPI_Buffer_detach / MPI_Comm_detach_buffer: once every buffered send has left, the
    buffer attached (BUFFER_AUTOMATIC if automatic; an empty bytearray if none was, as
    mpi4py's empty buffer over MPICH)."""
    attached = _attached.get(key)
    if attached is None:
        return bytearray()
    attached.flush(engine)
    del _attached[key]
    return attached.buf


def flush(key, engine):
    """MPI_Buffer_flush / MPI_Comm_flush_buffer: wait until every send buffered in the
    buffer attached has left (nothing if none is)."""
    attached = _attached.get(key)
    if attached is not None:
        attached.flush(engine)


def pending(key):
    """The buffered sends under way in the buffer attached under `key` (none if none is)."""
    attached = _attached.get(key)
    if attached is None:
        return []
    with attached.lock:
        attached._reclaim()
        return [op for op, _ in attached.pending]


def attached_to(context):
    """The buffer a buffered send on the communicator of `context` uses: its own, else the
    process's. MPI.Exception ERR_BUFFER if neither is attached."""
    attached = _attached.get(context) or _attached.get(None)
    if attached is None:
        raise MPIException(errors.ERR_BUFFER, "a buffered send with no buffer attached")
    return attached
