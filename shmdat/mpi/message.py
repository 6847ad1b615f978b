"""mpi4py's Message (MPI_Message): a message a matched probe (Comm.Mprobe, Improbe, mprobe,
improbe) took out of the unexpected queue, so that only a receive through its handle
(Message.Recv, Irecv, recv, irecv) can get it: with threads, a Probe followed by a Recv may
receive another thread's message; a Mprobe followed by Message.Recv cannot.

As mpi4py's, a Message object is a handle: `Message(m)` is another handle to m's message
(equal to it), `Message()` a null one (equal to MESSAGE_NULL, false). A receive through a
handle makes that handle null; MESSAGE_NO_PROC (what a matched probe of PROC_NULL gives)
receives nothing from PROC_NULL, and the constant itself stays as it is."""

import itertools
import weakref

from . import errors, unimplemented
from .datatypes import message
from .errors import Exception as MPIException
from .handles import Handle
from .matching import ANY_SOURCE, ANY_TAG

# Integer handles (toint, py2f): MPICH's for the predefined ones, then one per matched message.
_NULL_HANDLE, _NO_PROC_HANDLE = 0x2c000000, 0x6c000000
_handles = itertools.count(0xac000000)
_by_handle = weakref.WeakValueDictionary()     # handle -> its _Matched while a handle lives


class _Matched:
    """What the handles of one matched message share: the communicator it was matched on and
    the engine's matching.Message (`msg`, None once received through one of them)."""
    __slots__ = ("comm", "msg", "handle", "__weakref__")

    def __init__(self, comm, msg, handle):
        self.comm, self.msg, self.handle = comm, msg, handle
        _by_handle[handle] = self


_NO_PROC = _Matched(None, None, _NO_PROC_HANDLE)   # a receive from PROC_NULL, at every use


class Message(Handle, unimplemented.Missing):
    """MPI_Message. `_matched`: the _Matched its handle names, None for a null handle."""

    _unimplemented = unimplemented.MESSAGE
    _NULL_HANDLE, _by_handle, _target, _what = _NULL_HANDLE, _by_handle, "_matched", "message"
    _error = errors.ERR_REQUEST
    COMM_SELF = None    # (set by MPI.py) where MESSAGE_NO_PROC's receives from PROC_NULL run

    def __init__(self, message=None):
        """mpi4py's Message(message=None): a null handle, or another handle to `message`'s
        message. TypeError for anything else."""
        self._assign(message)

    @classmethod
    def _of(cls, comm, msg):
        """A handle to the engine's message `msg`, matched on `comm`."""
        return cls._to(_Matched(comm, msg, next(_handles)))

    __hash__ = None

    def _free_object(self):
        """(free) Nothing: a matched message is not freed but received (as mpi4py's)."""

    def __reduce__(self):
        """pickle: MESSAGE_NULL and MESSAGE_NO_PROC (and handles to them) by name, as
        mpi4py; ValueError for a matched message (it is this process's)."""
        for name, predefined in (("MESSAGE_NULL", MESSAGE_NULL),
                                 ("MESSAGE_NO_PROC", MESSAGE_NO_PROC)):
            if self == predefined:
                return name if self is predefined else (type(self), (predefined,))
        raise ValueError("cannot serialize a matched Message (as mpi4py)")

    # Matching probes (Comm.Mprobe and Improbe, as mpi4py's class methods).

    @classmethod
    def Probe(cls, comm, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """MPI_Mprobe on `comm` (Comm.Mprobe)."""
        return comm.Mprobe(source, tag, status)

    @classmethod
    def Iprobe(cls, comm, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """MPI_Improbe on `comm` (Comm.Improbe): a Message, or None if none has come."""
        return comm.Improbe(source, tag, status)

    probe = Probe
    iprobe = Iprobe

    # Matched receives.

    def _take(self):
        """(the communicator, the engine's message or None for PROC_NULL) of this handle's
        message, which this handle no longer names (MESSAGE_NO_PROC itself stays).
        MPI.Exception ERR_REQUEST for a null handle or a message received already."""
        matched = self._matched
        if matched is _NO_PROC:
            comm, msg = self.COMM_SELF, None
        elif matched is None or matched.msg is None:
            raise MPIException(errors.ERR_REQUEST, "a receive of MESSAGE_NULL, or of a "
                               "matched message received already")
        else:
            comm, msg, matched.msg = matched.comm, matched.msg, None
        if self is not MESSAGE_NO_PROC:
            self._matched = None
        return comm, msg

    def _receive(self, view, decode):
        comm, msg = self._take()
        return comm._receive_matched(msg, view, decode)

    def Irecv(self, buf):
        """MPI_Imrecv into a buffer spec (None from MESSAGE_NO_PROC); the handle becomes
        MESSAGE_NULL. A longer message completes the request with ERR_TRUNCATE; MPI.Exception
        ERR_REQUEST (a null handle, a message received already), buffer errors as Comm.Irecv."""
        return self._receive(message(buf, True)[0], False)

    def Recv(self, buf, status=None):
        """MPI_Mrecv: Irecv, waited for; `status` gets source, tag and count."""
        self.Irecv(buf).Wait(status)

    def irecv(self):
        """The matched message as an object, without blocking: `request.wait()` returns it
        (None from MESSAGE_NO_PROC). Errors as Irecv."""
        return self._receive(None, True)

    def recv(self, status=None):
        """The matched message as an object (None from MESSAGE_NO_PROC). Errors as Irecv."""
        return self.irecv().wait(status)


MESSAGE_NULL = Message()
MESSAGE_NO_PROC = Message._to(_NO_PROC)
Message._constants = (MESSAGE_NO_PROC,)     # (what free leaves alone)
