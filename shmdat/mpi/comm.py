"""mpi4py's Comm, Request, Prequest and Status, on the engine (shmdat/mpi/engine.py). Names,
signatures and defaults are mpi4py's; what is not here is not implemented yet."""

import ctypes
import functools
import os
import threading
import warnings

import numpy as np

from . import attributes, bsend, collectives, errors, handles, unimplemented, wireup
from .errhandler import ErrorHandling
from .collectives import Arrays, Channel, Objects
from .attributes import KEYVAL_INVALID
from .datatypes import BYTE, IN_PLACE, message, per_block, receive_message, send_message, vector
from .engine import Engine, RecvOp, SendOp
from .errors import Exception as MPIException
from .flags import SLOT_PAYLOAD, FlagChannel
from .pickler import pickle
from .group import CONGRUENT, IDENT, SIMILAR, UNDEFINED, UNEQUAL, Group
from .info import Info
from .launcher import ENV_APPNUM
from .matching import ANY_SOURCE, ANY_TAG, PROC_NULL
from .message import MESSAGE_NO_PROC, Message
from .ops import MAX, SUM

# The predefined attribute keys of Get_attr (MPICH's numbers, as mpi4py over MPICH has them).
TAG_UB, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, LASTUSEDCODE, APPNUM = (
    0x64400001, 0x64400005, 0x64400007, 0x64400009, 0x6440000b, 0x6440000d)
_TAG_MAX = 2**31 - 1    # Get_attr(TAG_UB): the largest tag
WORLD_CONTEXT, SELF_CONTEXT = 0, 2     # a communicator's context c for point to point, c + 1
#                                        for its collectives
_APPNUM = int(os.environ.get(ENV_APPNUM, "0"))  # which of a Spawn_multiple's commands this runs
_next_context = 4    # this process's lowest context id none of its communicators uses: ids
#                      are never reused, so a late message on a freed one matches nothing new
_LOCKS_LOCK = threading.Lock()     # (a communicator's lock table changes under it)
_PREDEFINED = {}     # WORLD_CONTEXT, SELF_CONTEXT -> COMM_WORLD, COMM_SELF: what pickle names


_StatusMemory = ctypes.c_int * 5     # MPICH's MPI_Status: five C ints


def _status_field(index):
    """A Status field kept as the C int at `index` of its memory (OverflowError beyond one)."""
    def get_field(status):
        return status._mpi[index]

    def set_field(status, value):
        status._mpi[index] = handles.c_int(value)
    return property(get_field, set_field)


class Status(unimplemented.Missing):
    """MPI_Status: `source`, `tag`, `error` and the received byte count."""

    _unimplemented = unimplemented.STATUS

    def __init__(self, status=None):
        """MPI.Status(): empty (ANY_SOURCE, ANY_TAG, SUCCESS, no bytes, not cancelled);
        Status(status): a copy of `status`. TypeError if `status` is no Status."""
        if status is None:
            self._mpi = _StatusMemory()
            self._set(ANY_SOURCE, ANY_TAG, errors.SUCCESS, 0, False)
        elif isinstance(status, Status):
            self._mpi = _StatusMemory(*status._mpi)
        else:
            raise TypeError(f"expected a Status, got {type(status).__name__}")

    def _set(self, source, tag, error, count, cancelled):
        """All the fields at once, from values the library made (in range): what a completion
        or a probe fills, in one write of the memory instead of five checked properties'."""
        self._mpi[:] = (count % 2**32 - (count & 2**31) * 2, count >> 32 << 1 | cancelled,
                        source, tag, error)

    def __eq__(self, other):
        """As mpi4py's: equal if every field is (source, tag, error, count, cancelled)."""
        if not isinstance(other, Status):
            return NotImplemented
        return self.py2f() == other.py2f()

    __hash__ = None

    def __getstate__(self):
        """pickle, copy: the fields (the memory as a list of its ints)."""
        return {**self.__dict__, "_mpi": list(self._mpi)}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._mpi = _StatusMemory(*state["_mpi"])

    # The fields live in MPICH's MPI_Status layout (the Fortran status's five ints, below), so
    # that tomemory and MPI._addressof give memory whose writes the status sees, as mpi4py's.
    F_SOURCE, F_TAG, F_ERROR, F_STATUS_SIZE = 2, 3, 4, 5
    source = _status_field(F_SOURCE)
    tag = _status_field(F_TAG)
    error = _status_field(F_ERROR)

    @property
    def count(self):
        """The bytes received (MPICH's 63-bit count: the low 32 bits, then the high ones
        shifted left once over the cancelled flag)."""
        return self._mpi[0] % 2**32 | self._mpi[1] >> 1 << 32

    @count.setter
    def count(self, count):
        self._mpi[0] = handles.signed(count)
        self._mpi[1] = handles.c_int(count >> 32 << 1 | self._mpi[1] & 1)

    @property
    def cancelled(self):
        return bool(self._mpi[1] & 1)

    @cancelled.setter
    def cancelled(self, flag):
        self._mpi[1] = self._mpi[1] & ~1 | bool(flag)

    def tomemory(self):
        """mpi4py's tomemory: a writable view of the status's memory (MPICH's MPI_Status,
        F_STATUS_SIZE C ints: the Fortran status's fields); writes change the status."""
        return memoryview(self._mpi).cast("B").cast("i")

    def Set_source(self, source):
        self.source = source

    def Set_tag(self, tag):
        self.tag = tag

    def Set_error(self, error):
        self.error = error

    def Is_cancelled(self):
        """MPI_Test_cancelled: whether the request was cancelled (Request.Cancel)."""
        return self.cancelled

    def Set_cancelled(self, flag):
        self.cancelled = bool(flag)

    def Get_elements(self, datatype):
        """MPI_Get_elements: the basic elements received (two per MAXLOC/MINLOC pair),
        UNDEFINED if not whole."""
        if not datatype.is_named:
            raise unimplemented.NotImplementedCall("Status.Get_elements of a derived datatype is "
                                                   "not implemented by shmdat.mpi")
        count = self.Get_count(datatype)
        return count if count == UNDEFINED or datatype.dtype.names is None else 2 * count

    def Set_elements(self, datatype, count):
        """MPI_Status_set_elements: as if `count` basic elements of `datatype` had come."""
        self.count = (count if datatype.dtype.names is None else count // 2) * datatype.extent

    def Get_source(self):
        return self.source

    def Get_tag(self):
        return self.tag

    def Get_error(self):
        return self.error

    def py2f(self):
        """mpi4py's py2f: the status as MPICH's Fortran status (a list of F_STATUS_SIZE ints:
        the count's low 32 bits, its high bits shifted left once with the cancelled flag as
        bit 0, source, tag, error)."""
        return list(self._mpi)

    @classmethod
    def f2py(cls, arg):
        """mpi4py's f2py: a new Status from a Fortran status (IndexError if it is short)."""
        status = cls()
        count_low, count_high = arg[0] % 2**32, arg[1]
        status.count, status.cancelled = count_high >> 1 << 32 | count_low, bool(count_high & 1)
        status.source, status.tag, status.error = arg[2], arg[3], arg[4]
        return status

    def Get_count(self, datatype=BYTE):
        """MPI_Get_count: whole elements of `datatype` received (each wire_size bytes in a
        message: a named datatype's extent, a derived one's size), UNDEFINED if not whole."""
        if not datatype.wire_size:
            return 0 if not self.count else UNDEFINED
        count, rest = divmod(self.count, datatype.wire_size)
        return UNDEFINED if rest else count


class Request(handles.Numbered, unimplemented.Missing):
    """A non-blocking operation (mpi4py's Request). Buffer requests: Wait/Test; object
    requests also wait/test, which return the received object. `rank_of` maps the engine's
    ranks to the communicator's, for statuses."""

    _unimplemented = unimplemented.REQUEST
    _numbers = handles.Numbers(handles.REQUEST["null"], handles.REQUEST["first"])
    _error = errors.ERR_REQUEST

    def __init__(self, engine=None, rank_of=None, op=None, decode=False):
        """mpi4py's Request() (no operation): a null request, equal to REQUEST_NULL;
        Request(request): another handle to `request`'s operation, equal to it. TypeError
        for anything else, as mpi4py's."""
        if engine.__class__ is not Engine:     # (the library's own requests pass one test)
            if isinstance(engine, Request):
                self.__dict__.update(engine.__dict__)
                return
            if engine is not None and not isinstance(engine, Engine):
                raise TypeError(f"expected a Request, not {type(engine).__name__}")
        self._engine, self._rank_of, self._decode = engine, rank_of, decode
        self._op = _Done() if op is None else op
        self._active = op is not None  # until a completion call has returned it (MPI's
        #                                REQUEST_NULL after that, for Waitany and Testany)

    # Set on the request only when they are not these (fewer lines for each request made).
    _unpack = None              # a receive into a derived datatype: places what came
    _cancelled = False

    def _is_null(self):
        """A completed request is REQUEST_NULL; a persistent one (Request(prequest) too) is
        until freed."""
        return not self._active and self.__dict__.get("_start") is None

    def _not_null(self, call):
        """MPI.Exception ERR_REQUEST for `call` on REQUEST_NULL, as MPICH."""
        if self._is_null():
            raise MPIException(errors.ERR_REQUEST, f"Request.{call} of MPI.REQUEST_NULL")

    def _handle(self):
        """What handles to the same request share (and other requests do not): a persistent
        request's start (also for Request(prequest)), another's operation."""
        return self.__dict__.get("_start") or self._op

    def _identity(self):
        """(handles.Numbered) A request completed or freed is REQUEST_NULL."""
        return None if self._is_null() else self._handle()

    def __eq__(self, other):
        """As mpi4py's handles: every null request is REQUEST_NULL, and Request(request) is
        another handle to the same one."""
        if self is other:
            return True
        if not isinstance(other, Request):
            return NotImplemented       # (as mpi4py's: another type may answer)
        if self._is_null() != other._is_null():
            return False
        return self._is_null() or self._handle() is other._handle()

    def __bool__(self):
        return not self._is_null()

    def __reduce__(self):
        """pickle: REQUEST_NULL by name, another null request as a new one, as mpi4py;
        ValueError for a request under way (its operation is this process's)."""
        if self is REQUEST_NULL:
            return "REQUEST_NULL"
        if self._is_null():
            return type(self), ()
        raise ValueError(f"cannot serialize a {type(self).__name__} under way (as mpi4py)")

    def _fill(self, status):
        """Fill `status` from the done operation (a receive's source, tag, error, count; a
        cancelled one's is empty, and says so)."""
        if status is None:
            return
        op = self._op
        if self._cancelled:
            Status.__init__(status)
            status.cancelled = True
        elif not isinstance(op, SendOp):
            status._set(self._rank_of[op.source], op.tag, op.error, op.nbytes, False)

    def Cancel(self):
        """MPI_Cancel: a receive not matched yet is cancelled (it completes, its status
        Is_cancelled); a send, or a receive matched already, completes as it would (MPI
        lets a cancel fail)."""
        self._not_null("Cancel")
        if self._active and isinstance(self._op, RecvOp) and self._engine.cancel(self._op):
            self._cancelled = True

    cancel = Cancel

    def _finish(self, status):
        """Fill `status`; raise MPI.Exception if the operation ended in error."""
        self._active = False
        if status is not None:
            self._fill(status)
        op = self._op
        if self._unpack is not None and not self._cancelled:
            self._unpack(op.nbytes)
        if op.error:
            raise MPIException(op.error, f"{op.nbytes} bytes from rank "
                               f"{self._rank_of[op.source]} into a buffer of {len(op.buf)}")

    def _complete(self, status):
        """Finish the request if it is active; if a completion call already returned it,
        it is MPI's REQUEST_NULL (or an inactive persistent request): an empty status, and
        no object (mpi4py's wait() of a null request is None)."""
        if self._active:
            self._finish(status)
            return self._result()
        if status is not None:
            Status.__init__(status)
        return None

    def _result(self):
        if not self._decode:
            return None
        op = self._op
        if isinstance(op, SendOp) or not op.nbytes:
            return None     # (an empty message, and PROC_NULL's, is mpi4py's None)
        return pickle.loads(op.buf[:op.nbytes] if op.data is None else op.data)

    def Free(self):
        """MPI_Request_free: the request becomes REQUEST_NULL; an operation under way still
        completes (progress goes on in later calls). MPI.Exception ERR_REQUEST for
        REQUEST_NULL (a request completed included)."""
        self._not_null("Free")
        self._active = False

    def Wait(self, status=None):
        """MPI_Wait. Raises MPI.Exception (ERR_TRUNCATE, or ERR_OTHER for a rank gone)."""
        Request.wait(self, status)      # (not a subclass's wait: mpi4py's Wait is its own)
        return True

    def Test(self, status=None):
        """MPI_Test: whether the operation is done (progress runs first)."""
        return Request.test(self, status)[0]

    def Get_status(self, status=None):
        """MPI_Request_get_status: whether the operation is done (progress runs first),
        leaving the request as it is; `status` filled if so."""
        if not self._active:
            if status is not None:
                Status.__init__(status)
            return True
        self._engine.progress()
        if self._op.done:
            self._fill(status)
        return self._op.done

    get_status = Get_status

    # MPI 4.1's MPI_Request_get_status_all/any/some: Testall/any/some that leave the
    # requests as they are (active, not freed); null and inactive ones count as done.

    @classmethod
    def Get_status_all(cls, requests, statuses=None):
        """MPI_Request_get_status_all: whether every request is done (progress runs first);
        if so, `statuses` filled (an empty status for a null or inactive one)."""
        ops, engine = _active(requests)
        if ops:
            engine.progress()
        if not all(op.done for op in ops):
            return False
        for i, r in enumerate(requests):
            r.Get_status(_status_at(statuses, i))
        return True

    @classmethod
    def Get_status_any(cls, requests, status=None):
        """MPI_Request_get_status_any: (index, True) for the first request done, its status
        in `status`; (UNDEFINED, False) if none is done yet, (UNDEFINED, True) if none is
        active (`status` empty)."""
        ops, engine = _active(requests)
        if not ops:
            if status is not None:
                Status.__init__(status)
            return UNDEFINED, True
        engine.progress()
        index = next((i for i, r in enumerate(requests) if r._active and r._op.done), UNDEFINED)
        if index != UNDEFINED:
            requests[index].Get_status(status)
        return index, index != UNDEFINED

    @classmethod
    def Get_status_some(cls, requests, statuses=None):
        """MPI_Request_get_status_some: the indices of the requests done now (maybe none),
        statuses[k] the status of the k-th of them; None if none is active."""
        ops, engine = _active(requests)
        if not ops:
            return None
        engine.progress()
        indices = [i for i, r in enumerate(requests) if r._active and r._op.done]
        for k, i in enumerate(indices):
            requests[i].Get_status(_status_at(statuses, k))
        return indices

    get_status_all, get_status_any, get_status_some = Get_status_all, Get_status_any, \
        Get_status_some

    def wait(self, status=None):
        """Wait, then the received object (None for a send, or once returned already)."""
        if self._active and not self._op.done:     # (done: nothing to wait for)
            self._engine.wait([self._op])
        return self._complete(status)

    def test(self, status=None):
        """(done, the received object or None)."""
        if not self._active:
            return True, self._complete(status)
        self._engine.progress()
        if not self._op.done:
            return False, None
        return True, self._complete(status)

    @classmethod
    def Waitall(cls, requests, statuses=None):
        """MPI_Waitall over a sequence of Requests; fills `statuses` if a list is given."""
        cls.waitall(requests, statuses)
        return True

    @classmethod
    def waitall(cls, requests, statuses=None):
        """Waitall, then the received objects (None for sends and null requests)."""
        ops, engine = _active(requests)
        if ops:
            engine.wait(ops)
        return [r._complete(_status_at(statuses, i)) for i, r in enumerate(requests)]

    @classmethod
    def Testall(cls, requests, statuses=None):
        """MPI_Testall: True, with every request finished, if all are done."""
        return cls.testall(requests, statuses)[0]

    @classmethod
    def testall(cls, requests, statuses=None):
        """Testall, then (True, the received objects: None for sends and null requests) or
        (False, None)."""
        ops, engine = _active(requests)
        if ops:
            engine.progress()
        if not all(op.done for op in ops):
            return False, None
        return True, [r._complete(_status_at(statuses, i)) for i, r in enumerate(requests)]

    @classmethod
    def Waitsome(cls, requests, statuses=None):
        """MPI_Waitsome: once one of the active requests is done, the indices of all that are,
        finished (statuses[k] for the k-th of them); None if none is active. MPI.Exception
        only if none of them can ever complete."""
        ops, engine = _active(requests)
        if not ops:
            return None
        engine.wait_any(ops)
        return cls._finish_done(requests, statuses)

    @classmethod
    def Testsome(cls, requests, statuses=None):
        """MPI_Testsome: the indices of the requests done now (maybe none), finished; None if
        none is active."""
        ops, engine = _active(requests)
        if not ops:
            return None
        engine.progress()
        return cls._finish_done(requests, statuses)

    @classmethod
    def waitsome(cls, requests, statuses=None):
        """Waitsome, then (the indices, the received objects), or (None, None)."""
        return cls._with_objects(requests, cls.Waitsome(requests, statuses))

    @classmethod
    def testsome(cls, requests, statuses=None):
        """Testsome, then (the indices, the received objects), or (None, None)."""
        return cls._with_objects(requests, cls.Testsome(requests, statuses))

    @staticmethod
    def _with_objects(requests, indices):
        return indices, None if indices is None else [requests[i]._result() for i in indices]

    @staticmethod
    def _finish_done(requests, statuses):
        indices = [i for i, r in enumerate(requests) if r._active and r._op.done]
        for k, i in enumerate(indices):
            requests[i]._finish(_status_at(statuses, k))
        return indices

    @classmethod
    def Waitany(cls, requests, status=None):
        """MPI_Waitany: the index of a request that has completed (the first done in list
        order), finished; UNDEFINED if none is active. Completed requests count as inactive
        afterwards, so repeated calls return the others in turn."""
        ops, engine = _active(requests)
        if not ops:
            return UNDEFINED
        engine.wait_any(ops)
        return cls._finish_first(requests, status)

    @classmethod
    def Testany(cls, requests, status=None):
        """MPI_Testany: (index, True) for a completed request, (UNDEFINED, False) if none
        has completed yet, (UNDEFINED, True) if none is active."""
        ops, engine = _active(requests)
        if not ops:
            return UNDEFINED, True
        engine.progress()
        index = cls._finish_first(requests, status)
        return index, index != UNDEFINED

    @classmethod
    def waitany(cls, requests, status=None):
        """Waitany, then (index, the received object or None)."""
        index = cls.Waitany(requests, status)
        return index, None if index == UNDEFINED else requests[index]._result()

    @classmethod
    def testany(cls, requests, status=None):
        """Testany, then (index, flag, the received object or None)."""
        index, flag = cls.Testany(requests, status)
        return index, flag, None if index == UNDEFINED else requests[index]._result()

    @staticmethod
    def _finish_first(requests, status):
        for i, r in enumerate(requests):
            if r._active and r._op.done:
                r._finish(status)
                return i
        return UNDEFINED


def _active(requests):
    """The operations of the active ones of `requests`, and the engine they run on (None if
    none is active)."""
    active = [r for r in requests if r._active]
    return [r._op for r in active], active[0]._engine if active else None


class Prequest(Request):
    """A persistent request (mpi4py's Prequest, from Send_init, Ssend_init, Recv_init):
    inactive until Start; once a completion call has returned it, inactive again (not
    REQUEST_NULL) and ready to Start anew. `start` starts the operation: the buffer, the
    peer's engine rank and the tag are bound once, at init."""

    def __init__(self, engine=None, rank_of=None, start=None):
        """mpi4py's Prequest() (no operation): a null request; Prequest(prequest): another
        handle to `prequest`. TypeError for a request under way that is not persistent."""
        if isinstance(engine, Request) and engine and not isinstance(engine, Prequest):
            raise TypeError(f"cannot convert {type(engine).__name__} to Prequest")
        super().__init__(engine, rank_of)
        if not isinstance(engine, Request):
            self._start = start        # None once freed
        elif not isinstance(engine, Prequest):
            self._start = None         # (Prequest(REQUEST_NULL): a null one)

    def _is_null(self):
        return self._start is None

    def Start(self):
        """MPI_Start. MPI.Exception ERR_REQUEST if the request is active or freed."""
        if self._active or self._start is None:
            raise MPIException(errors.ERR_REQUEST, "MPI_Start of a persistent request that is "
                               + ("freed" if self._start is None else "active already"))
        self._op = self._start()
        self._active = True

    @classmethod
    def Startall(cls, requests):
        """MPI_Startall: Start each of `requests`, in order."""
        for r in requests:
            r.Start()

    def Free(self):
        """MPI_Request_free: the request becomes REQUEST_NULL (it cannot be started again).
        MPI.Exception ERR_REQUEST for REQUEST_NULL."""
        self._not_null("Free")
        self._active, self._start = False, None


class _CollectiveRequest(Request):
    """The request of a non-blocking collective (Ibcast, Iallreduce, ...): its op is a
    collectives.Schedule, which the engine advances as it progresses. Its status is empty;
    completing it raises what the collective raised (as the blocking call would)."""

    def _fill(self, status):
        if status is not None:
            Status.__init__(status)

    _channel = None                 # its NonblockingChannel (staged buffers placed at the end)

    def _finish(self, status):
        self._active = False
        self._fill(status)
        if self._op.exception is not None:
            raise self._op.exception
        self._channel.finish()


def _blocking(collective):
    """A buffer collective of Comm (MPI_Bcast, ...) from `collective(self, ch, ...)`: run on
    the communicator's channel, returning when done."""
    def call(self, *args, **kwargs):
        self._engine.check_revoked(self._context)
        ch = self._channel
        try:
            collective(self, ch, *args, **kwargs)
        except BaseException:
            ch.unpacks.clear()      # (a collective that raised places nothing)
            raise
        if ch.unpacks:
            ch.finish()
    call.__name__ = call.__qualname__ = collective.__name__[1:].capitalize()
    call.__doc__ = collective.__doc__
    return call


def _nonblocking(collective):
    """The non-blocking twin (MPI_Ibcast, ...) of `collective(self, ch, ...)`: its arguments
    checked and its buffers taken now, its rounds started on a channel of its own (its own
    tag: other collectives may run meanwhile) and advanced whenever the engine progresses;
    returns its Request, which completes once it has ended."""
    def call(self, *args, **kwargs):
        self._engine.check_revoked(self._context)
        ch = self._channel.nonblocking()
        collective(self, ch, *args, **kwargs)
        request = _CollectiveRequest(self._engine, self._rank_of, ch.schedule)
        request._channel = ch
        return request
    name = collective.__name__[1:].capitalize()
    call.__name__ = call.__qualname__ = f"I{name.lower()}"
    call.__doc__ = f"MPI_I{name.lower()}: {name} as a Request (started now, advanced as " \
        "the engine progresses: by any MPI call of this rank)."
    return call


def _wait_blocking(request, status):
    """A blocking receive's wait: where the request would be ERR_PROC_FAILED_PENDING (an
    ANY_SOURCE receive, a rank failed), the receive is cancelled and the call fails with
    ERR_PROC_FAILED, as ULFM says."""
    try:
        return request.wait(status)
    except MPIException as e:
        if e.error_code != errors.ERR_PROC_FAILED_PENDING:
            raise
        request.Cancel()
        raise MPIException(errors.ERR_PROC_FAILED, e.detail) from None


def _status_at(statuses, i):
    """The i-th Status of `statuses` (created if a list is short, as mpi4py), or None (no
    statuses, or a tuple that is short)."""
    if statuses is None:
        return None
    if isinstance(statuses, list):
        while len(statuses) <= i:
            statuses.append(Status())
    return statuses[i] if i < len(statuses) else None


def _probed(status, msg, rank_of):
    """Fill `status` from a probed message (a Message, or _Done for PROC_NULL); `rank_of`
    maps the engine's ranks to the communicator's."""
    if status is not None:
        status._set(rank_of[msg.source], msg.tag, errors.SUCCESS,
                    msg.nbytes if isinstance(msg, _Done) else msg.length, False)


class _Done:
    """The finished operation of a send to, or a receive from, PROC_NULL."""
    done, error, nbytes, source, tag, buf, data = True, 0, 0, PROC_NULL, ANY_TAG, None, None


class Comm(ErrorHandling, attributes.Keyvals, handles.Numbered, unimplemented.Missing):
    """An intracommunicator: COMM_WORLD, COMM_SELF, or one that Dup or Split made. `ranks`
    maps its ranks to the engine's (world) ranks; `context` tells its point-to-point traffic
    apart, and its collectives use context + 1 (their own channel,
    shmdat/mpi/collectives.py)."""

    _unimplemented = unimplemented.COMM
    _numbers = handles.Numbers(handles.COMM["null"], handles.COMM["first"])
    _error = errors.ERR_COMM
    _kind = "Comm"
    _kind_error = None      # (a window's or file's user handler is taken, as MPICH's)
    _inter = False      # (an Intercomm's is True: shmdat/mpi/intercomm.py)

    def __new__(cls, engine=None, *args, **kwargs):
        """mpi4py's Comm() (and Intracomm(), Intercomm()): a new null communicator, equal to
        COMM_NULL; Comm(comm): another handle to comm (also through a subclass's
        super().__new__(cls, comm)), an Intercomm for an intercommunicator. TypeError for
        anything else, and for Intracomm(intercomm) and Intercomm(intracomm), as mpi4py."""
        if engine is None or isinstance(engine, _NullComm):
            return super().__new__(_null_class(cls))
        if not isinstance(engine, (Comm, Engine)):
            raise TypeError(f"expected a Comm, got {type(engine).__name__}")
        if isinstance(engine, Comm) and engine._inter != cls._inter:
            if cls is not Comm:
                raise TypeError("expecting an " + ("intercommunicator" if cls._inter
                                                   else "intracommunicator"))
            cls = type(engine)          # (its point-to-point names the remote group's ranks)
        self = super().__new__(cls)
        # Here, not in __init__: a subclass's __new__ may pass on another communicator than
        # the one __init__ is then called with (mpi4py's classes have no __init__).
        if isinstance(engine, Comm):    # mpi4py's Comm(comm): another handle to the same one
            self.__dict__.update(engine.__dict__)
        return self

    def __init__(self, engine, context=None, ranks=None, name=""):
        if isinstance(engine, Comm):    # (Comm(comm): __new__ made the handle)
            return
        if context in (WORLD_CONTEXT, SELF_CONTEXT):
            _PREDEFINED.setdefault(context, self)
        self._engine, self._context, self._name = engine, context, name
        self._ranks = ranks            # this communicator's rank -> the engine's (world) rank
        self._rank, self._size = ranks.index(engine.rank), len(ranks)
        # The ranks point-to-point names (MPI: an intracommunicator's remote group is itself).
        self._remote_ranks, self._remote_size = ranks, self._size
        # The engine's rank -> this communicator's, for statuses (PROC_NULL's is PROC_NULL).
        self._rank_of = {PROC_NULL: PROC_NULL, **{r: i for i, r in enumerate(ranks)}}
        self._channel = Channel(engine, context + 1, self._rank, ranks)
        self._attrs = attributes.Attributes()       # (Comm(comm) shares them, as the channel)
        self._locks = {}        # key -> threading.Lock: mpi4py's _comm_lock_table (Dup's starts empty)
        engine.members[context] = ranks     # (what its ANY_SOURCE receives match: ulfm.py)

    def _lock(self, key):
        """The communicator's lock for `key`, made on first use (mpi4py's _comm_lock): an
        object collective holds the one of its name, as mpi4py's do, so that threads of a
        THREAD_MULTIPLE program never interleave the two steps of one."""
        with _LOCKS_LOCK:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.Lock()
            return lock

    def __eq__(self, other):
        """As mpi4py's handles: equal if both name the same communicator (Comm(comm) is
        another handle to comm). Unhashable, as mpi4py's."""
        if not isinstance(other, Comm):
            return NotImplemented
        return not isinstance(other, _NullComm) and other._context == self._context

    __hash__ = None

    def _identity(self):
        """(handles.Numbered) What the handles to one communicator share."""
        return self._channel

    def __reduce__(self):
        """pickle: COMM_WORLD and COMM_SELF (and handles to them) by name, as mpi4py; any
        other communicator is ValueError."""
        predefined = _PREDEFINED.get(self._context)
        if predefined is None:
            raise ValueError(f"cannot serialize communicator {self._name!r}: only COMM_WORLD, "
                             "COMM_SELF and COMM_NULL can be pickled")
        return (_predefined, (self._context,)) if self is predefined else (Comm, (predefined,))

    def Get_rank(self):
        return self._rank

    def Get_size(self):
        return self._size

    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    # Communicators.

    def Get_attr(self, keyval):
        """MPI_Comm_get_attr: a user keyval's value (None if not set), or a predefined key's:
        TAG_UB (the largest tag), UNIVERSE_SIZE (the job's ranks), APPNUM (which of a
        Spawn_multiple's commands this process runs; 0 otherwise),
        WTIME_IS_GLOBAL (0: each rank's clock), IO (ANY_SOURCE: every rank can do I/O),
        LASTUSEDCODE (the last error code or class MPI.Add_error_class or _code gave,
        ERR_LASTCODE if none). TypeError for a keyval that is not an int, MPI.Exception
        ERR_KEYVAL for one that names no Comm keyval."""
        if keyval == TAG_UB:
            return _TAG_MAX
        if keyval == UNIVERSE_SIZE:
            return self._engine.size
        if keyval == APPNUM:
            return _APPNUM
        if keyval == WTIME_IS_GLOBAL:
            return 0
        if keyval == IO:
            return ANY_SOURCE
        if keyval == LASTUSEDCODE:
            return errors.last_used_code()
        return self._attrs.get(self._kind, keyval)

    def Set_attr(self, keyval, attrval):
        """MPI_Comm_set_attr: a value already set is deleted first (its delete_fn).
        MPI.Exception ERR_KEYVAL (a predefined key, or none of Comm's), ERR_OTHER (the
        delete_fn raised); TypeError (nopython keyval: not an int)."""
        self._attrs.set(self, self._kind, keyval, attrval)

    def Delete_attr(self, keyval):
        """MPI_Comm_delete_attr: the value goes, through the keyval's delete_fn (nothing if
        not set). MPI.Exception ERR_KEYVAL, ERR_OTHER (the delete_fn raised)."""
        self._attrs.delete(self, self._kind, keyval)

    def Get_name(self):
        """MPI_Comm_get_name: MPI_COMM_WORLD, MPI_COMM_SELF, else what Set_name gave ('')."""
        return self._name

    def Set_name(self, name):
        """MPI_Comm_set_name (this process's handle only). TypeError if `name` is not a str."""
        if not isinstance(name, str):
            raise TypeError(f"a communicator's name is a str, not {type(name).__name__}")
        self._name = name

    name = property(Get_name, Set_name)

    def Is_inter(self):
        return False

    _topology = UNDEFINED           # (Cartcomm's: CART, shmdat/mpi/topology.py)

    def Get_topology(self):
        """MPI_Topo_test: the topology's kind, UNDEFINED for none."""
        return self._topology

    topology = property(Get_topology)
    is_topo = property(lambda self: self._topology != UNDEFINED)

    def Is_intra(self):
        return True

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)

    def Compare(self, comm):
        """MPI_Comm_compare: IDENT (this very communicator), CONGRUENT (the same ranks in the
        same order), SIMILAR (the same ranks in another order) or UNEQUAL (an Intercomm too).
        MPI.Exception ERR_COMM if either is COMM_NULL (Comm.Compare(COMM_NULL, comm)) or
        `comm` is no communicator."""
        if not isinstance(comm, Comm) or not comm or not self:
            raise MPIException(errors.ERR_COMM, f"Compare with {comm!r}")
        if comm is self:
            return IDENT
        if self._inter:     # (Comm.Compare(intercomm, comm): the intercommunicator's own)
            return type(self).Compare(self, comm)
        if comm._inter:
            return UNEQUAL
        if list(comm._ranks) == list(self._ranks):
            return CONGRUENT
        return SIMILAR if sorted(comm._ranks) == sorted(self._ranks) else UNEQUAL

    def Dup(self, info=None):
        """MPI_Comm_dup (collective): the same ranks on a new context, so its traffic never
        matches this communicator's, and the attributes the keyvals' copy_fn give; with an
        `info`, MPI_Comm_dup_with_info. TypeError if `info` is neither None nor an Info;
        MPI.Exception ERR_OTHER if a copy_fn raised."""
        assertions = {} if info is None else Comm._assertions(info)
        dup = Comm(self._engine, self._new_context(), self._ranks)
        dup._attrs = self._attrs.copied(self)       # (after the collective: every rank got there)
        if assertions:
            dup._set_assertions(assertions)
        return dup

    def Dup_with_info(self, info):
        """MPI_Comm_dup_with_info: Dup, with the hints `info` gives (none of this
        communicator's, as MPICH). TypeError if `info` is no Info (None included)."""
        if info is None:
            raise TypeError("expected an Info, not NoneType")
        return self.Dup(info)

    # Hints: MPI's assertions, kept per communicator as MPICH keeps them (by context id, so
    # its handles share them; ids are never reused), acted on by nothing here. Other hints
    # are not kept: MPI lets Get_info leave out the hints not used, and MPICH leaves out
    # those it does not know.
    _ASSERTIONS = ("mpi_assert_no_any_tag", "mpi_assert_no_any_source",
                   "mpi_assert_exact_length", "mpi_assert_allow_overtaking",
                   "mpi_assert_strict_persistent_collective_ordering")
    _hints = {}         # context -> {assertion: "true" or "false"}, once one was set

    @staticmethod
    def _assertions(info):
        """The assertions `info` sets, "true" ("true" or "1") or "false" (any other value, as
        MPICH reads them); none in INFO_NULL. TypeError if `info` is no Info."""
        if not isinstance(info, Info):
            raise TypeError(f"expected an Info, not {type(info).__name__}")
        return {key: "true" if info.Get(key) in ("true", "1") else "false"
                for key in Comm._ASSERTIONS if info and key in info}

    def _set_assertions(self, assertions):
        hints = Comm._hints.setdefault(self._context, dict.fromkeys(Comm._ASSERTIONS, "false"))
        hints.update(assertions)

    def Set_info(self, info):
        """MPI_Comm_set_info: the assertions `info` sets replace theirs, the others stay.
        TypeError if `info` is no Info; MPI.Exception ERR_ARG for INFO_NULL (or freed)."""
        assertions = Comm._assertions(info)
        if not info:
            raise MPIException(errors.ERR_ARG, "Comm.Set_info of INFO_NULL")
        self._set_assertions(assertions)

    def Get_info(self):
        """MPI_Comm_get_info: a new Info of the assertions ("false" for those not set)."""
        return Info.Create(Comm._hints.get(self._context)
                           or dict.fromkeys(Comm._ASSERTIONS, "false"))

    info = property(Get_info, Set_info)

    def Idup(self, info=None):
        """MPI_Comm_idup: (the Dup, a Request already complete): the context is agreed at
        once, as Dup's, so the new communicator may be used before the request is waited on."""
        return self.Dup(info), Request(self._engine, self._rank_of, SendOp(self._rank, done=True))

    Idup_with_info = Idup

    def _new_context(self):
        """(Collective) a context id free at every rank here, claimed: a new
        communicator's, among any of these ranks."""
        context = self.allreduce(_next_context, MAX)
        _claim(context)
        return context

    def Clone(self):
        """mpi4py's Clone: Dup."""
        return self.Dup()

    def Split(self, color=0, key=0):
        """MPI_Comm_split (collective): one new communicator per color, its ranks ordered by
        (key, rank here); COMM_NULL for color UNDEFINED. Raised on every rank alike, once
        all have given theirs: TypeError for a color or key that is not an int,
        MPI.Exception ERR_ARG for a negative color other than UNDEFINED."""
        entries = self.allgather((color, key, _next_context))
        for rank, (c, k, _) in enumerate(entries):
            if not isinstance(c, int) or not isinstance(k, int):
                raise TypeError(f"Split: rank {rank} gave color {c!r}, key {k!r}: ints are due")
            if c < 0 and c != UNDEFINED:
                raise MPIException(errors.ERR_ARG, f"Split: rank {rank} gave color {c}")
        # The largest next free id of all the ranks here is free at every member of every
        # color; colors share it (their members never message each other on it).
        context = max(next_free for _, _, next_free in entries)
        _claim(context)
        if color == UNDEFINED:
            return COMM_NULL
        members = sorted((k, rank) for rank, (c, k, _) in enumerate(entries) if c == color)
        return Comm(self._engine, context, [self._ranks[rank] for _, rank in members])

    def Free(self):
        """MPI_Comm_free: each attribute's delete_fn runs, then this handle becomes COMM_NULL
        (operations already started still complete). MPI.Exception ERR_COMM on COMM_WORLD
        and COMM_SELF, ERR_OTHER if a delete_fn raised."""
        if self._context in (WORLD_CONTEXT, SELF_CONTEXT):
            raise MPIException(errors.ERR_COMM, f"Free of {self._name}")
        self._attrs.clear(self)         # each keyval's delete_fn
        self._drop_errhandler()
        Comm._hints.pop(self._context, None)
        if self._channel.flags is not None:     # (None again: another handle's Free)
            self._channel.flags.close()
            self._channel.flags = None
        self.__class__ = _NullComm      # every call now raises ERR_COMM, at no cost to others

    def Get_group(self):
        """MPI_Comm_group: this communicator's ranks as a Group."""
        return Group._of(self._ranks, self._engine.rank)

    group = property(Get_group)

    def Create(self, group):
        """MPI_Comm_create (collective, every rank giving the same group): a communicator of
        the group's members in its order, on a new context; COMM_NULL elsewhere.
        MPI.Exception ERR_GROUP if a member is not in this communicator."""
        if not set(group._members()) <= set(self._ranks):
            raise MPIException(errors.ERR_GROUP, f"Create: the group has ranks that "
                               f"{self._name or 'this communicator'} has not")
        context = self._new_context()
        if group.Get_rank() == UNDEFINED:
            return COMM_NULL
        return Comm(self._engine, context, list(group._members()))

    # Point-to-point: checks and the translation to the engine's ranks.

    def _engine_rank(self, rank, what, wildcard=False):
        """A rank of this communicator's remote group (its own group, unless an Intercomm)
        as the engine's rank (PROC_NULL, and ANY_SOURCE with `wildcard`, as they are);
        MPI.Exception ERR_RANK if it is none of these."""
        if isinstance(rank, int):
            if 0 <= rank < self._remote_size:
                return self._remote_ranks[rank]
            if rank == PROC_NULL or wildcard and rank == ANY_SOURCE:
                return rank
        elif isinstance(rank, float):   # mpi4py takes a float as C's int conversion does
            return self._engine_rank(int(rank), what, wildcard)
        raise MPIException(errors.ERR_RANK, f"{what} {rank!r} (size {self._remote_size})")

    def _check_tag(self, tag, wildcard=False):
        if not isinstance(tag, int) or not (0 <= tag <= _TAG_MAX or wildcard and tag == ANY_TAG):
            raise MPIException(errors.ERR_TAG, f"tag {tag!r}")

    def _isend(self, view, dest, tag, context, sync=False):
        if dest.__class__ is int and 0 <= dest < self._remote_size and \
                tag.__class__ is int and 0 <= tag <= _TAG_MAX:     # (the commonest: no wildcard)
            return self._engine.send(self._remote_ranks[dest], context, tag, view, sync)
        dest = self._engine_rank(dest, "dest")
        self._check_tag(tag)
        if dest == PROC_NULL:
            self._engine.check_revoked(context)
            return _Done()
        return self._engine.send(dest, context, tag, view, sync)

    def _irecv(self, view, source, tag, context):
        if source.__class__ is int and 0 <= source < self._remote_size and \
                tag.__class__ is int and 0 <= tag <= _TAG_MAX:     # (the commonest: no wildcard)
            return self._engine.post_recv(context, self._remote_ranks[source], tag, view)
        source = self._engine_rank(source, "source", wildcard=True)
        self._check_tag(tag, wildcard=True)
        if source == PROC_NULL:
            self._engine.check_revoked(context)
            return _Done()
        return self._engine.post_recv(context, source, tag, view)

    # Buffer point-to-point.

    def Isend(self, buf, dest, tag=0):
        """MPI_Isend of a buffer spec. MPI.Exception: ERR_RANK, ERR_TAG, ERR_TYPE, ERR_COUNT,
        ERR_OTHER (dest has gone); BufferError (not contiguous) and ValueError (a malformed
        spec), as mpi4py."""
        return Request(self._engine, self._rank_of,
                       self._isend(send_message(buf)[0], dest, tag, self._context))

    def Irecv(self, buf, source=ANY_SOURCE, tag=ANY_TAG):
        """MPI_Irecv into a buffer spec; a longer message completes it with ERR_TRUNCATE.
        Into a derived datatype with gaps, the message is received packed and placed at
        completion."""
        view, _, _, unpack = receive_message(buf)
        request = Request(self._engine, self._rank_of, self._irecv(view, source, tag, self._context))
        if unpack is not None:
            request._unpack = unpack
        return request

    def Issend(self, buf, dest, tag=0):
        """MPI_Issend: the request completes once a receive has matched the message."""
        return Request(self._engine, self._rank_of,
                       self._isend(send_message(buf)[0], dest, tag, self._context, sync=True))

    def Send(self, buf, dest, tag=0):
        """MPI_Send (standard mode: returns once the buffer may be reused)."""
        op = self._isend(send_message(buf)[0], dest, tag, self._context)
        if not op.done or op.error:         # (an eager send is done at once: nothing to wait for)
            Request(self._engine, self._rank_of, op).Wait()

    # Ready mode: a correct program's ready sends may be standard ones (MPI 3.1, 3.4).
    Rsend, Irsend = Send, Isend

    def Ssend(self, buf, dest, tag=0):
        """MPI_Ssend: returns once a receive has matched the message."""
        self.Issend(buf, dest, tag).Wait()

    # Buffered mode (shmdat/mpi/bsend.py): the payload copied, its room in the attached
    # buffer held until the send has left.

    def Attach_buffer(self, buf):
        """MPI_Comm_attach_buffer: `buf` (or BUFFER_AUTOMATIC) for this communicator's
        buffered sends. Errors as MPI.Attach_buffer."""
        bsend.attach(self._context, buf)

    def Detach_buffer(self):
        """MPI_Comm_detach_buffer: once this communicator's buffered sends have left, its
        buffer (an empty bytearray if none is attached)."""
        return bsend.detach(self._context, self._engine)

    def Flush_buffer(self):
        """MPI_Comm_flush_buffer: wait until this communicator's buffered sends have left."""
        bsend.flush(self._context, self._engine)

    def _bsend(self, view, dest, tag):
        """A buffered send of the byte memoryview `view`: done at once (the data is copied;
        to PROC_NULL nothing is)."""
        dest = self._engine_rank(dest, "dest")
        self._check_tag(tag)
        if dest != PROC_NULL:
            bsend.attached_to(self._context).send(self._engine, view, functools.partial(
                self._engine.send, dest, self._context, tag))
        return SendOp(dest, done=True)

    def Ibsend(self, buf, dest, tag=0):
        """MPI_Ibsend: a Request done at once, the data copied into the attached buffer's
        room. MPI.Exception ERR_BUFFER if no buffer is attached or it has not the room
        (len + BSEND_OVERHEAD bytes) while earlier buffered sends are under way; as Isend's."""
        return Request(self._engine, self._rank_of,
                       self._bsend(send_message(buf)[0], dest, tag))

    def Bsend(self, buf, dest, tag=0):
        """MPI_Bsend: returns once the data is copied. Errors as Ibsend."""
        self._bsend(send_message(buf)[0], dest, tag)

    def Recv(self, buf, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """MPI_Recv; `status` gets source, tag and count."""
        _wait_blocking(self.Irecv(buf, source, tag), status)

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=ANY_SOURCE,
                 recvtag=ANY_TAG, status=None):
        """MPI_Sendrecv: both at once, so a ring of them cannot deadlock. `recvbuf` None
        receives an empty message. The send's arguments are checked before the receive is
        posted, as the receive's are (a bad one leaves nothing posted behind)."""
        view = self._checked_send(sendbuf, dest, sendtag)
        recv = self.Irecv(memoryview(bytearray()) if recvbuf is None else recvbuf, source,
                          recvtag)
        send = Request(self._engine, self._rank_of,
                       self._isend(view, dest, sendtag, self._context))
        recv.Wait(status)           # (both are posted: waiting for one moves the other too)
        send.Wait()

    def _checked_send(self, buf, dest, tag):
        """The byte view of a send's `buf`, its `dest` and `tag` checked (errors as Send's)."""
        view = send_message(buf)[0]
        self._engine_rank(dest, "dest")
        self._check_tag(tag)
        return view

    def Sendrecv_replace(self, buf, dest, sendtag=0, source=ANY_SOURCE, recvtag=ANY_TAG,
                         status=None):
        """MPI_Sendrecv_replace: send `buf`, then receive into it (the outgoing data is
        copied first)."""
        outgoing = memoryview(bytes(message(buf, True)[0]))
        self._checked_send(outgoing, dest, sendtag)
        recv = self.Irecv(buf, source, recvtag)
        send = Request(self._engine, self._rank_of,
                       self._isend(outgoing, dest, sendtag, self._context))
        recv.Wait(status)
        send.Wait()

    def Probe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """MPI_Probe: block until a message (source, tag) could be received; it stays
        queued. `status` gets its source, tag and count. Returns True."""
        source = self._engine_rank(source, "source", wildcard=True)
        self._check_tag(tag, wildcard=True)
        if source == PROC_NULL:
            _probed(status, _Done(), self._rank_of)
            return True
        _probed(status, self._engine.wait_probe(self._context, source, tag), self._rank_of)
        return True

    def Iprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """MPI_Iprobe: whether a message (source, tag) could be received now."""
        source = self._engine_rank(source, "source", wildcard=True)
        self._check_tag(tag, wildcard=True)
        if source == PROC_NULL:
            _probed(status, _Done(), self._rank_of)
            return True
        self._engine.progress()
        msg = self._engine.probe(self._context, source, tag)
        if msg is not None:
            _probed(status, msg, self._rank_of)
        return msg is not None

    probe = Probe
    iprobe = Iprobe

    # Matched probes: the message taken, received through its Message (shmdat/mpi/message.py).

    def _mprobe(self, source, tag, status, block):
        source = self._engine_rank(source, "source", wildcard=True)
        self._check_tag(tag, wildcard=True)
        if source == PROC_NULL:
            _probed(status, _Done(), self._rank_of)
            return Message(MESSAGE_NO_PROC)
        msg = self._engine.matched_probe(self._context, source, tag, block)
        if msg is None:
            return None
        _probed(status, msg, self._rank_of)
        return Message._of(self, msg)

    def Mprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """MPI_Mprobe: block until a message (source, tag) has come, and take it: only a
        receive through the Message returned can get it (a handle equal to MESSAGE_NO_PROC
        for PROC_NULL). `status` gets its source, tag and count. MPI.Exception ERR_RANK,
        ERR_TAG, ERR_OTHER (the source has gone)."""
        return self._mprobe(source, tag, status, True)

    def Improbe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """MPI_Improbe: as Mprobe if a message (source, tag) has come, else None (`status`
        left as it was)."""
        return self._mprobe(source, tag, status, False)

    mprobe = Mprobe
    improbe = Improbe

    def _receive_matched(self, msg, view, decode):
        """The Request of the receive of `msg`, a message matched_probe took here (None: a
        receive from PROC_NULL), into the byte memoryview `view` (None: into new bytes);
        `decode`: wait() returns the unpickled object."""
        op = _Done() if msg is None else self._engine.receive_matched(msg, view)
        return Request(self._engine, self._rank_of, op, decode)

    # Persistent requests: the buffer, peer and tag bound once; each Start posts anew.

    def _send_init(self, buf, dest, tag, sync):
        dest = self._engine_rank(dest, "dest")
        self._check_tag(tag)
        view = message(buf, False)[0]
        start = functools.partial(_Done) if dest == PROC_NULL else functools.partial(
            self._engine.send, dest, self._context, tag, view, sync)   # (each its own: a handle)
        return Prequest(self._engine, self._rank_of, start)

    def Send_init(self, buf, dest, tag=0):
        """MPI_Send_init: a Prequest that sends `buf` (its contents at each Start) to `dest`.
        MPI.Exception: ERR_RANK, ERR_TAG, buffer errors, here; a send's errors at Wait."""
        return self._send_init(buf, dest, tag, False)

    def Ssend_init(self, buf, dest, tag=0):
        """MPI_Ssend_init: as Send_init, each send synchronous (as Issend)."""
        return self._send_init(buf, dest, tag, True)

    Rsend_init = Send_init      # (ready mode as standard mode, as Rsend)

    def Bsend_init(self, buf, dest, tag=0):
        """MPI_Bsend_init: as Send_init, each send buffered (as Ibsend: ERR_BUFFER at Start).
        MPI.Exception: ERR_RANK, ERR_TAG, buffer errors, here."""
        self._engine_rank(dest, "dest")
        self._check_tag(tag)
        return Prequest(self._engine, self._rank_of,
                        functools.partial(self._bsend, message(buf, False)[0], dest, tag))

    def Recv_init(self, buf, source=ANY_SOURCE, tag=ANY_TAG):
        """MPI_Recv_init: a Prequest that receives into `buf`. MPI.Exception: ERR_RANK,
        ERR_TAG, buffer errors, here; ERR_TRUNCATE at Wait."""
        source = self._engine_rank(source, "source", wildcard=True)
        self._check_tag(tag, wildcard=True)
        view = message(buf, True)[0]
        start = functools.partial(_Done) if source == PROC_NULL else functools.partial(
            self._engine.post_recv, self._context, source, tag, view)
        return Prequest(self._engine, self._rank_of, start)

    def Abort(self, errorcode=0):
        """MPI_Abort: end the whole job; the launcher exits with `errorcode`."""
        wireup.abort(self._engine.rank, errorcode)

    # Object point-to-point (pickle).

    def isend(self, obj, dest, tag=0):
        """Send a picklable object without blocking; returns a Request."""
        data = pickle.dumps(obj)
        return Request(self._engine, self._rank_of,
                       self._isend(memoryview(data), dest, tag, self._context))

    def irecv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG):
        """Receive an object without blocking; `request.wait()` returns it (None for an
        empty message, as mpi4py). `buf`, if given, receives the pickle (an int: a new
        buffer of that many bytes), and a longer one is MPI.Exception ERR_TRUNCATE at the
        wait, as in mpi4py; without it a pickle of any size is received."""
        view = None if buf is None else \
            memoryview(bytearray(buf)) if isinstance(buf, int) else message(buf, True)[0]
        return Request(self._engine, self._rank_of, self._irecv(view, source, tag, self._context),
                       decode=True)

    def issend(self, obj, dest, tag=0):
        """Synchronous isend: the request completes once a receive has matched it."""
        data = pickle.dumps(obj)
        return Request(self._engine, self._rank_of,
                       self._isend(memoryview(data), dest, tag, self._context, sync=True))

    def ibsend(self, obj, dest, tag=0):
        """Buffered isend (as Ibsend): the request is done at once."""
        return Request(self._engine, self._rank_of, self._bsend(
            memoryview(pickle.dumps(obj)), dest, tag))

    def send(self, obj, dest, tag=0):
        self.isend(obj, dest, tag).wait()

    def bsend(self, obj, dest, tag=0):
        """Buffered send (as Bsend): returns once the pickle is copied."""
        self.ibsend(obj, dest, tag)

    def ssend(self, obj, dest, tag=0):
        self.issend(obj, dest, tag).wait()

    def sendrecv(self, sendobj, dest, sendtag=0, recvbuf=None, source=ANY_SOURCE,
                 recvtag=ANY_TAG, status=None):
        """Send `sendobj` and receive an object at once; returns the received object.
        `recvbuf` as recv's `buf` (deprecated: a UserWarning, as mpi4py)."""
        if recvbuf is not None:
            warnings.warn("the 'buf' argument is deprecated", UserWarning, stacklevel=2)
        recv = self.irecv(recvbuf, source, recvtag)
        send = self.isend(sendobj, dest, sendtag)
        obj = recv.wait(status)
        send.wait()
        return obj

    def recv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Receive an object (None from PROC_NULL); `status` gets source, tag and count.
        `buf` as irecv's, with mpi4py's UserWarning that it is deprecated."""
        if buf is not None:
            warnings.warn("the 'buf' argument is deprecated", UserWarning, stacklevel=2)
        return _wait_blocking(self.irecv(buf, source, tag), status)

    # Synchronization.

    def _barrier(self, ch):
        """MPI_Barrier by dissemination: ceil(log2 size) rounds (blocking: of flag writes,
        flags.py; non-blocking: of empty messages)."""
        collectives.barrier(self._flags(ch))

    def _flags(self, ch):
        """The channel for a small collective on `ch`: the communicator's FlagChannel (made
        by the first, on every rank) if `ch` is its blocking channel and there are other
        ranks, else `ch` itself; its epoch begun."""
        if ch is not self._channel or self._size == 1:
            return ch
        if ch.flags is None:
            ch.flags = FlagChannel.open(ch)
        ch.flags.begin()
        return ch.flags

    Barrier, Ibarrier = _blocking(_barrier), _nonblocking(_barrier)
    barrier = Barrier

    # Collectives on buffers (numpy arrays and buffer specs).

    def _check_root(self, root):
        if not isinstance(root, int) or not 0 <= root < self._size:
            raise MPIException(errors.ERR_ROOT, f"root {root!r} (size {self._size})")

    def _bcast(self, ch, buf, root=0):
        """MPI_Bcast (binomial tree). MPI.Exception: ERR_ROOT, buffer errors, ERR_TRUNCATE
        if the ranks' sizes differ."""
        self._check_root(root)
        collectives.bcast(ch, root, ch.buffer(buf, self._rank != root)[0])

    Bcast, Ibcast = _blocking(_bcast), _nonblocking(_bcast)

    def _reduce(self, ch, sendbuf, recvbuf, op=SUM, root=0):
        """MPI_Reduce (binomial tree; rooted at rank 0, then sent to root, for an op that
        does not commute); `sendbuf` may be IN_PLACE at root, `recvbuf` matters at root
        only. MPI.Exception ERR_OP for an op the datatype does not have (BAND on DOUBLE...)
        or a freed one."""
        self._check_root(root)
        if self._rank == root:
            acc, datatype = _accumulator(sendbuf, recvbuf)
        else:
            view, _, datatype = message(sendbuf, False)
            acc = np.frombuffer(view, datatype.dtype).copy()
        collectives.reduce(ch, root, acc, Arrays(op, acc, datatype))

    Reduce, Ireduce = _blocking(_reduce), _nonblocking(_reduce)

    def _allreduce(self, ch, sendbuf, recvbuf, op=SUM):
        """MPI_Allreduce: recursive doubling (blocking, up to SLOT_PAYLOAD bytes: of flag
        writes, flags.py); on more than 2 ranks from ALLREDUCE_LARGE bytes with a
        commutative op, reduce-scatter + allgather. `sendbuf` may be IN_PLACE."""
        acc, datatype = _accumulator(sendbuf, recvbuf)
        if self._size > 2 and acc.nbytes >= collectives.ALLREDUCE_LARGE and \
                op.Is_commutative():
            collectives.allreduce_large(ch, acc, op, datatype)
        else:
            codec = Arrays(op, acc, datatype)       # (checks the op before any message)
            if acc.nbytes <= SLOT_PAYLOAD:
                ch = self._flags(ch)
            collectives.allreduce(ch, acc, codec)

    Allreduce, Iallreduce = _blocking(_allreduce), _nonblocking(_allreduce)

    def _gather(self, ch, sendbuf, recvbuf, root=0):
        """MPI_Gather (binomial tree) into root's `recvbuf` (size blocks); root's `sendbuf`
        may be IN_PLACE (its block is in recvbuf already)."""
        self._check_root(root)
        out = None
        if self._rank == root:
            out = ch.buffer(recvbuf, True, self._size)[0]
            width = len(out) // self._size
            block = out[root * width:(root + 1) * width] if _in_place(sendbuf) else \
                _fitting(ch.buffer(sendbuf, False)[0], width)
        else:
            block = ch.buffer(sendbuf, False)[0]
        collectives.gather(ch, root, block, out)

    Gather, Igather = _blocking(_gather), _nonblocking(_gather)

    def _scatter(self, ch, sendbuf, recvbuf, root=0):
        """MPI_Scatter (binomial tree) of root's `sendbuf` (size blocks); root's `recvbuf`
        may be IN_PLACE (its block stays in sendbuf)."""
        self._check_root(root)
        blocks = None
        if self._rank == root:
            blocks = ch.buffer(sendbuf, False, self._size)[0]
            width = len(blocks) // self._size
            out = None if _in_place(recvbuf) else ch.buffer(recvbuf, True)[0][:width]
            if out is not None and len(out) < width:
                raise MPIException(errors.ERR_TRUNCATE, f"a block of {width} bytes into "
                                   f"{len(out)}")
        else:
            out = ch.buffer(recvbuf, True)[0]
        collectives.scatter(ch, root, blocks, out)

    Scatter, Iscatter = _blocking(_scatter), _nonblocking(_scatter)

    def _allgather(self, ch, sendbuf, recvbuf):
        """MPI_Allgather (ring); `sendbuf` may be IN_PLACE (this rank's block in recvbuf)."""
        views = equal_blocks(ch.buffer(recvbuf, True, self._size)[0], self._size)
        collectives.allgatherv(ch, views, None if _in_place(sendbuf) else
                               _fitting(ch.buffer(sendbuf, False)[0], len(views[0])))

    Allgather, Iallgather = _blocking(_allgather), _nonblocking(_allgather)

    def _alltoall(self, ch, sendbuf, recvbuf):
        """MPI_Alltoall (pairwise exchange); `sendbuf` may be IN_PLACE."""
        out = ch.buffer(recvbuf, True, self._size)[0]
        sends = memoryview(bytes(out)) if _in_place(sendbuf) else \
            _fitting(ch.buffer(sendbuf, False, self._size)[0], len(out))
        collectives.alltoallv(ch, equal_blocks(sends, self._size),
                              equal_blocks(out, self._size))

    Alltoall, Ialltoall = _blocking(_alltoall), _nonblocking(_alltoall)

    def _reduce_scatter_block(self, ch, sendbuf, recvbuf, op=SUM):
        """MPI_Reduce_scatter_block (pairwise exchange; reduce then scatter for an op that
        does not commute): block i of the reduction to rank i. With `sendbuf` IN_PLACE,
        recvbuf holds the size blocks and gets the result in its first."""
        if _in_place(sendbuf):
            view, count, datatype = message(recvbuf, True, self._size)
            send = np.frombuffer(view, datatype.dtype)
            out = send[:count]
        else:
            view, count, datatype = message(sendbuf, False, self._size)
            send = np.frombuffer(view, datatype.dtype)
            out = np.frombuffer(_fitting(message(recvbuf, True)[0], count * datatype.extent),
                                datatype.dtype)
        collectives.reduce_scatter(ch, send, [count] * self._size, out, op, datatype)

    Reduce_scatter_block = _blocking(_reduce_scatter_block)
    Ireduce_scatter_block = _nonblocking(_reduce_scatter_block)

    def _reduce_scatter(self, ch, sendbuf, recvbuf, recvcounts=None, op=SUM):
        """MPI_Reduce_scatter: block i (recvcounts[i] elements) of the reduction to rank i
        (pairwise exchange; reduce then scatterv for an op that does not commute).
        `recvcounts` None: each rank's recvbuf count (gathered first, by a blocking allgather
        also for Ireduce_scatter, as mpi4py's). With `sendbuf`
        IN_PLACE, recvbuf holds the whole vector and gets the result in its first elements
        (recvcounts then needed). ValueError for counts that do not add up, as mpi4py;
        MPI.Exception ERR_COUNT for a negative count, ERR_OP."""
        outview, outcount, datatype = message(recvbuf, True)
        if _in_place(sendbuf):
            if recvcounts is None:
                raise TypeError("Reduce_scatter with IN_PLACE needs recvcounts")
            view, count = outview, outcount
        else:
            view, count, sendtype = message(sendbuf, False)
            if sendtype is not datatype:
                raise ValueError("mismatch in send and receive MPI datatypes")
            if recvcounts is None:
                recvcounts = collectives.allgather_objects(self._channel, outcount)
        counts = per_block(recvcounts, self._size, lambda i, c: c)
        if min(counts) < 0:
            raise MPIException(errors.ERR_COUNT, f"negative count in {counts}")
        if sum(counts) != count:
            raise ValueError(f"mismatch in {'receive' if _in_place(sendbuf) else 'send'} "
                             f"count {count} and sum(counts) {sum(counts)}")
        if not _in_place(sendbuf) and outcount != counts[self._rank]:
            raise ValueError(f"mismatch in receive count {outcount} and "
                             f"counts[{self._rank}] {counts[self._rank]}")
        send = np.frombuffer(view, datatype.dtype)
        out = send[:counts[self._rank]] if _in_place(sendbuf) else \
            np.frombuffer(outview, datatype.dtype)
        collectives.reduce_scatter(ch, send, counts, out, op, datatype)

    Reduce_scatter, Ireduce_scatter = _blocking(_reduce_scatter), _nonblocking(_reduce_scatter)

    def _gatherv(self, ch, sendbuf, recvbuf, root=0):
        """MPI_Gatherv (binomial tree) into root's vector spec `recvbuf` ([buf, counts,
        displs, T] and the other forms; recvbuf matters at root only); root's `sendbuf` may
        be IN_PLACE. MPI.Exception ERR_TRUNCATE if a rank's block is longer than its count,
        ERR_COUNT, ERR_ROOT."""
        self._check_root(root)
        out = None
        if self._rank == root:
            out = vector(recvbuf, True, self._size)[0]
        block = None if self._rank == root and _in_place(sendbuf) else \
            message(sendbuf, False)[0]
        collectives.gatherv(ch, root, block, out)

    Gatherv, Igatherv = _blocking(_gatherv), _nonblocking(_gatherv)

    def _scatterv(self, ch, sendbuf, recvbuf, root=0):
        """MPI_Scatterv (binomial tree) of root's vector spec `sendbuf` (matters at root
        only); root's `recvbuf` may be IN_PLACE. MPI.Exception ERR_TRUNCATE if a block is
        longer than its rank's recvbuf, ERR_COUNT, ERR_ROOT."""
        self._check_root(root)
        blocks = None
        if self._rank == root:
            blocks = vector(sendbuf, False, self._size)[0]
        out = None if self._rank == root and _in_place(recvbuf) else \
            message(recvbuf, True)[0]
        collectives.scatterv(ch, root, blocks, out)

    Scatterv, Iscatterv = _blocking(_scatterv), _nonblocking(_scatterv)

    def _allgatherv(self, ch, sendbuf, recvbuf):
        """MPI_Allgatherv (ring) into the vector spec `recvbuf`; `sendbuf` may be IN_PLACE
        (this rank's block in recvbuf). MPI.Exception ERR_TRUNCATE, ERR_COUNT."""
        collectives.allgatherv(ch, vector(recvbuf, True, self._size)[0],
                               None if _in_place(sendbuf) else message(sendbuf, False)[0])

    Allgatherv, Iallgatherv = _blocking(_allgatherv), _nonblocking(_allgatherv)

    def _alltoallv(self, ch, sendbuf, recvbuf):
        """MPI_Alltoallv (pairwise exchange) between vector specs; `sendbuf` may be IN_PLACE
        (the blocks are taken from recvbuf's layout). MPI.Exception ERR_TRUNCATE, ERR_COUNT."""
        recvs = vector(recvbuf, True, self._size)[0]
        sends = [memoryview(bytes(v)) for v in recvs] if _in_place(sendbuf) else \
            vector(sendbuf, False, self._size)[0]
        collectives.alltoallv(ch, sends, recvs)

    Alltoallv, Ialltoallv = _blocking(_alltoallv), _nonblocking(_alltoallv)

    def _scan(self, ch, sendbuf, recvbuf, op=SUM):
        """MPI_Scan (recursive doubling): recvbuf at rank i = the reduction of ranks 0..i,
        in rank order; `sendbuf` may be IN_PLACE. ValueError if the buffers' counts or
        datatypes differ (as mpi4py); MPI.Exception ERR_OP."""
        view, out, datatype = _scan_buffers(sendbuf, recvbuf)
        partial = np.frombuffer(view, datatype.dtype).copy()
        result = np.frombuffer(out, datatype.dtype)
        result[...] = partial
        collectives.scan(ch, partial, result, Arrays(op, partial, datatype), True)

    Scan, Iscan = _blocking(_scan), _nonblocking(_scan)

    def _exscan(self, ch, sendbuf, recvbuf, op=SUM):
        """MPI_Exscan (recursive doubling): recvbuf at rank i > 0 = the reduction of ranks
        0..i-1 (rank 0's is left as it was); `sendbuf` may be IN_PLACE. Errors as Scan."""
        view, out, datatype = _scan_buffers(sendbuf, recvbuf)
        partial = np.frombuffer(view, datatype.dtype).copy()
        collectives.scan(ch, partial, np.frombuffer(out, datatype.dtype),
                         Arrays(op, partial, datatype), False)

    Exscan, Iexscan = _blocking(_exscan), _nonblocking(_exscan)

    # Collectives on Python objects (pickle).

    def bcast(self, obj, root=0):
        """Broadcast root's object (binomial tree); every rank gets a copy."""
        self._check_root(root)
        with self._lock("bcast"):
            data = collectives.bcast(self._channel, root,
                                     memoryview(pickle.dumps(obj)) if self._rank == root else None)
        return pickle.loads(data)

    def scatter(self, sendobj, root=0):
        """Root's size objects (an iterable; None: size Nones), one to each rank (binomial
        tree). ValueError at root unless there are size."""
        self._check_root(root)
        if self._rank == root:
            sendobj = collectives.items(sendobj, self._size)
        with self._lock("scatter"):
            return collectives.scatter_objects(self._channel, root, sendobj)

    def gather(self, sendobj, root=0):
        """Every rank's object, as a list at root (None elsewhere); binomial tree."""
        self._check_root(root)
        with self._lock("gather"):
            return collectives.gather_objects(self._channel, root, sendobj)

    def allgather(self, sendobj):
        """Every rank's object, as a list at every rank (ring)."""
        with self._lock("allgather"):
            return collectives.allgather_objects(self._channel, sendobj)

    def alltoall(self, sendobj):
        """sendobj[i] to rank i; returns the list of what each rank sent here (pairwise)."""
        sendobj = collectives.items(sendobj, self._size)
        with self._lock("alltoall"):
            return collectives.alltoall_objects(self._channel, sendobj)

    def reduce(self, sendobj, op=SUM, root=0):
        """The objects combined with `op` (an MPI.Op or any callable of two), at root;
        None elsewhere. Binomial tree."""
        self._check_root(root)
        return collectives.reduce(self._channel, root, collectives.copied(sendobj), Objects(op))

    def allreduce(self, sendobj, op=SUM):
        """The objects combined with `op`, at every rank (recursive doubling)."""
        return collectives.allreduce(self._channel, collectives.copied(sendobj), Objects(op))

    def scan(self, sendobj, op=SUM):
        """The objects of ranks 0..rank combined with `op` in rank order (recursive
        doubling)."""
        obj = collectives.copied(sendobj)
        return collectives.scan(self._channel, obj, obj, Objects(op), True)

    def exscan(self, sendobj, op=SUM):
        """The objects of ranks 0..rank-1 combined with `op` in rank order; None at rank 0."""
        return collectives.scan(self._channel, collectives.copied(sendobj), None, Objects(op), False)


def _in_place(buf):
    """Whether a collective's buffer at a place MPI takes MPI.IN_PLACE is it: IN_PLACE or,
    as mpi4py reads it, None."""
    return buf is None or buf is IN_PLACE


def _fitting(view, width):
    """`view` cut to `width` bytes; MPI.Exception ERR_TRUNCATE if it is shorter."""
    if len(view) < width:
        raise MPIException(errors.ERR_TRUNCATE, f"{len(view)} bytes where {width} are due")
    return view[:width]


def _accumulator(sendbuf, recvbuf):
    """(the numpy array over `recvbuf` a reduction accumulates in, holding sendbuf's data
    (already there if `sendbuf` is IN_PLACE), the datatype: the send's sets the dtype)."""
    out, _, datatype = message(recvbuf, True)
    if not _in_place(sendbuf):
        view, _, datatype = message(sendbuf, False)
        out = _fitting(out, len(view))
        out[:] = view
    return np.frombuffer(out, datatype.dtype), datatype


def _scan_buffers(sendbuf, recvbuf):
    """(sendbuf's bytes, or recvbuf's if it is IN_PLACE or None, recvbuf's bytes, the datatype);
    ValueError if their counts or datatypes differ, as mpi4py checks them for Scan."""
    out, count, datatype = message(recvbuf, True)
    if _in_place(sendbuf):
        return out, out, datatype
    view, sendcount, sendtype = message(sendbuf, False)
    if (sendcount, sendtype) != (count, datatype):
        raise ValueError(f"mismatch in send ({sendcount} {sendtype.Get_name()}) and receive "
                         f"({count} {datatype.Get_name()}) buffers")
    return view, out, datatype


def equal_blocks(view, size):
    """`view` cut into `size` blocks of equal length."""
    width = len(view) // size
    return [view[i * width:(i + 1) * width] for i in range(size)]


def _claim(context, ids=2):
    """A new communicator's members agreed on `context` (at least every member's next free
    id): it and the `ids` - 1 after it are used here from now on (2: its collective twin; an
    Intercomm's local group has its own pair after them)."""
    global _next_context
    _next_context = context + ids


def _invalid(name):
    """COMM_NULL's method `name`: raises ERR_COMM naming the call."""
    def call(self, *args, **kwargs):
        raise MPIException(errors.ERR_COMM, f"Comm.{name} on COMM_NULL")
    return call


class _NullComm(Comm):
    """MPI.COMM_NULL, and what Free turns a communicator into: every call raises
    MPI.Exception ERR_COMM (the methods are made below, from Comm's)."""

    def __init__(self, *args):
        pass                            # no engine, no ranks: nothing may use them

    def _check_errhandler_owner(self):
        raise MPIException(errors.ERR_COMM, "an error handler of COMM_NULL")

    def __eq__(self, other):
        if not isinstance(other, Comm):
            return NotImplemented
        return isinstance(other, _NullComm)

    def __bool__(self):
        return False

    def _identity(self):
        return None

    def Get_name(self):
        return "MPI_COMM_NULL"

    name = property(Get_name)

    def __reduce__(self):
        """pickle: COMM_NULL by name; another null handle as a new one of its class (a
        subclass's: the program's class)."""
        if self is COMM_NULL:
            return "COMM_NULL"
        return (Comm if type(self) is _NullComm else _user_class(type(self))), ()


_null_classes = {}     # a subclass of Comm's classes (the program's) -> its null class


def _user_class(null_class):
    """The program's class a null class of _null_class's was made for; else the class."""
    return next((cls for cls, null in _null_classes.items() if null is null_class), null_class)


def _null_class(cls):
    """The class of a null handle made by cls(): _NullComm, or for a subclass the program
    made, a subclass of both (an instance of it; every Comm call raises ERR_COMM)."""
    if issubclass(cls, _NullComm):
        return cls
    if cls.__module__.startswith(__package__ + "."):    # (ours)
        return _NullComm
    null = _null_classes.get(cls)
    if null is None:
        null = _null_classes[cls] = type(cls.__name__, (_NullComm, cls),
                                         {"__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__})
    return null


for _name, _attr in list(vars(Comm).items()):     # (class methods, as Create_keyval, work there too)
    if not _name.startswith("_") and _name not in vars(_NullComm) and not isinstance(_attr, classmethod):
        setattr(_NullComm, _name,
                property(_invalid(_name)) if isinstance(_attr, property) else _invalid(_name))
# An Intercomm's own calls, on a null one (Intercomm() is COMM_NULL too), and Create_intercomm
# (which shmdat/mpi/intercomm.py sets on Comm): ERR_COMM as well.
for _name in ("Get_remote_group", "Get_remote_size", "Merge", "Create_intercomm"):
    setattr(_NullComm, _name, _invalid(_name))
_NullComm.remote_group = property(_invalid("remote_group"))
_NullComm.remote_size = property(_invalid("remote_size"))


class _IntracommType(type(Comm)):
    """Intracomm's metaclass: every communicator that is not an intercommunicator is an
    Intracomm to isinstance and issubclass (COMM_WORLD, Dup's, Split's and Cartcomm are of
    class Comm here, which serves both), and an Intercomm is not one, as in mpi4py."""

    def __instancecheck__(cls, obj):
        if cls is Intracomm:
            return isinstance(obj, Comm) and not obj._inter
        return super().__instancecheck__(obj)

    def __subclasscheck__(cls, sub):
        if cls is Intracomm:
            return issubclass(sub, Comm) and not sub._inter
        return super().__subclasscheck__(sub)


class Intracomm(Comm, metaclass=_IntracommType):
    """mpi4py's Intracomm: Intracomm() a null communicator, Intracomm(comm) another handle
    to comm (TypeError for an intercommunicator); its calls are Comm's."""


def _predefined(context):
    """Unpickling COMM_WORLD or COMM_SELF: this process's own."""
    return _PREDEFINED[context]


COMM_NULL = _NullComm()
REQUEST_NULL = Request()
