"""Error handlers (MPI_Errhandler, mpi4py's Errhandler): ERRORS_RETURN, ERRORS_ARE_FATAL,
ERRORS_ABORT and those a program makes with Comm.Create_errhandler or Win.Create_errhandler,
and what a communicator or window does with an error by the handler set on it.

Every communicator and window starts with ERRORS_RETURN, as under mpi4py (which sets it on
each one it makes): an error is raised as MPI.Exception and nothing else happens. One whose
handler is another is switched to a subclass of its class whose public methods hand an
MPI.Exception to the handler instead (`handled_class`): the one place the handler runs, and
no cost to objects that keep ERRORS_RETURN."""

import functools
import itertools
import sys
import threading
import traceback
import types
import weakref

from . import errors, unimplemented, wireup
from .errors import Exception as MPIException
from .handles import Handle

USER_SLOTS = 32     # user handlers of one kind alive at once: mpi4py's table of C callbacks


class _Handler:
    """The MPI object its handles name: predefined (`function` None) or a user's, of `kind`
    ("Comm" or "Win"). `refs` counts the handles not freed and the objects it is set on; a
    user's handler gives its slot back when none is left."""
    __slots__ = ("name", "function", "kind", "refs", "handle", "__weakref__")

    def __init__(self, name, function=None, kind=None, handle=None):
        self.name, self.function, self.kind, self.refs = name, function, kind, 1
        self.handle = next(_user_handles) if handle is None else handle
        _by_handle[self.handle] = self

    def ref(self):
        self.refs += 1
        return self

    def unref(self):
        self.refs -= 1
        if self.refs == 0 and self.function is not None:
            with _slots_lock:
                _slots[self.kind].remove(self)

    def call(self, obj, errorcode):
        """What MPI does with error `errorcode` on `obj` under this handler: nothing
        (ERRORS_RETURN), end the job (ERRORS_ARE_FATAL, ERRORS_ABORT: every rank here, a
        communicator's processes being the job's), or the user's function(obj, errorcode),
        whose own exception also ends the job, as under mpi4py."""
        if self.function is not None:
            try:
                self.function(obj, errorcode)
            except BaseException:   # (an error in an error handler is unrecoverable)
                sys.stderr.write(traceback.format_exc())
                sys.stderr.write("Fatal Python error: exception in user-defined error handler "
                                 "function\n")
                _abort(obj, 1)
        elif self is not _RETURN and errorcode != errors.SUCCESS:
            sys.stderr.write(f"shmdat.mpi: {self.name} on a {type(obj).__name__}: "
                             f"{MPIException(errorcode)}\n")     # (str() of any code)
            _abort(obj, errorcode)


# Integer handles (toint, py2f): MPICH's for the predefined ones, then one per user handler.
_NULL_HANDLE = 0x14000000
_user_handles = itertools.count(0x94000000)
_by_handle = weakref.WeakValueDictionary()     # handle -> its _Handler while it lives


def _abort(obj, errorcode):
    sys.stderr.flush()
    wireup.abort(obj._engine.rank, errorcode)


_RETURN = _Handler("ERRORS_RETURN", handle=0x54000001)
_PREDEFINED = (_RETURN, _Handler("ERRORS_ARE_FATAL", handle=0x54000000),
               _Handler("ERRORS_ABORT", handle=0x54000003))
_slots_lock = threading.Lock()
_slots = {"Comm": [], "Win": [], "Session": [], "File": []}    # kind -> the user handlers alive


class Errhandler(Handle, unimplemented.Missing):
    """A handle to an error handler (mpi4py's Errhandler): ERRHANDLER_NULL (false), a
    predefined one, or one of Create_errhandler. Handles to one handler are equal."""

    _unimplemented = unimplemented.ERRHANDLER
    _NULL_HANDLE, _by_handle, _target, _what = _NULL_HANDLE, _by_handle, "_handler", "handler"
    _error = errors.ERR_ERRHANDLER

    def __init__(self, errhandler=None):
        """mpi4py's Errhandler(errhandler=None): a null handle, or another handle to
        `errhandler`'s handler (as a copy of a C handle: freeing either frees it). TypeError
        for anything else."""
        self._assign(errhandler)

    __hash__ = None     # (as mpi4py's handles)

    def __repr__(self):
        return f"<Errhandler {self._handler.name if self._handler else 'ERRHANDLER_NULL'}>"

    def __reduce__(self):
        """pickle: the predefined handles by name (the same object once loaded), another
        handle to a predefined handler as a new handle to it, as mpi4py; ValueError for a
        user's handler (its function lives in this process)."""
        handler = self._handler
        if handler is None:
            return "ERRHANDLER_NULL" if self is ERRHANDLER_NULL else (type(self), ())
        if handler.function is not None:
            raise ValueError(f"cannot serialize {self!r}: only predefined error handlers "
                             "can be pickled")
        constant = _CONSTANTS[handler.name]
        return handler.name if self is constant else (Errhandler, (constant,))

    def Free(self):
        """MPI_Errhandler_free: the handle becomes null (equal to ERRHANDLER_NULL); the handler
        lives on while a communicator or window has it. The predefined constants stay as
        they are. MPI.Exception ERR_ERRHANDLER on a null handle."""
        if self._handler is None:
            raise MPIException(errors.ERR_ERRHANDLER, "Free of ERRHANDLER_NULL")
        if any(self is constant for constant in _CONSTANTS.values()):
            return
        handler, self._handler = self._handler, None
        handler.unref()


ERRHANDLER_NULL = Errhandler()
_CONSTANTS = {handler.name: Errhandler._to(handler) for handler in _PREDEFINED}  # what pickle names
ERRORS_RETURN, ERRORS_ARE_FATAL, ERRORS_ABORT = _CONSTANTS.values()
Errhandler._constants = _CONSTANTS.values()     # (what free leaves alone)


class ErrorHandling:
    """What a communicator or window (a subclass naming its `_kind`) has of error handlers:
    MPI_Comm_create/get/set/call_errhandler and MPI_Win_'s. `_errhandler` is the _Handler set
    (a class default, ERRORS_RETURN, until Set_errhandler)."""

    _kind = None
    _errhandler = _RETURN
    # Setting another kind's user handler (MPICH's answer): ERR_ARG; None: taken (a
    # communicator's, as MPICH's, which calls it as it would its own kind's).
    _kind_error = errors.ERR_ARG

    @classmethod
    def Create_errhandler(cls, errhandler_fn):
        """MPI_Comm_create_errhandler / MPI_Win_create_errhandler: a handler calling
        errhandler_fn(obj, errorcode) when a call on obj fails. TypeError if it is not
        callable; RuntimeError with USER_SLOTS handlers of this kind alive (mpi4py's limit)."""
        if not callable(errhandler_fn):
            raise TypeError(f"an error handler function must be callable, not "
                            f"{type(errhandler_fn).__name__}")
        handler = _Handler(getattr(errhandler_fn, "__name__", "user"), errhandler_fn, cls._kind)
        with _slots_lock:
            if len(_slots[cls._kind]) >= USER_SLOTS:
                raise RuntimeError("cannot create too many user-defined error handlers")
            _slots[cls._kind].append(handler)
        return Errhandler._to(handler)

    def Get_errhandler(self):
        """MPI_Comm_get_errhandler / MPI_Win_get_errhandler: a new handle to the handler set,
        to Free when done."""
        self._check_errhandler_owner()
        return Errhandler._to(self._errhandler.ref())

    def Set_errhandler(self, errhandler):
        """MPI_Comm_set_errhandler / MPI_Win_set_errhandler. TypeError if `errhandler` is no
        Errhandler; MPI.Exception ERR_ERRHANDLER if it is null, ERR_ARG for a user handler of
        another kind on a window or file (a communicator takes any, as MPICH's)."""
        self._check_errhandler_owner()
        if not isinstance(errhandler, Errhandler):
            raise TypeError(f"expected an Errhandler, not {type(errhandler).__name__}")
        handler = errhandler._handler
        if handler is None or (handler.function is not None and handler.kind != self._kind
                               and self._kind_error is not None):
            raise MPIException(errors.ERR_ERRHANDLER if handler is None else self._kind_error,
                               f"Set_errhandler({errhandler!r}) on a {self._kind}")
        old, self._errhandler = self._errhandler, handler.ref()
        old.unref()
        self.__class__ = _plain_class(type(self)) if handler is _RETURN \
            else handled_class(type(self))

    def Call_errhandler(self, errorcode):
        """MPI_Comm_call_errhandler / MPI_Win_call_errhandler: the handler set, called with
        `errorcode` (ERRORS_ARE_FATAL and ERRORS_ABORT end the job for any code but SUCCESS)."""
        self._check_errhandler_owner()
        self._errhandler.call(self, errorcode)

    def _drop_errhandler(self):
        """The object is freed: it no longer holds its handler."""
        handler = self._errhandler
        if handler is not _RETURN:
            self._errhandler = _RETURN
            handler.unref()

    def _check_errhandler_owner(self):
        """Overridden where an object can be in a state that has no handler (a freed window)."""


_handled_classes = {}   # a class -> its handled subclass
_plain_classes = {}     # a handled subclass -> its class


def handled_class(cls):
    """The subclass of `cls` (a communicator or window class) whose public methods run the
    handler set on their object when they fail with MPI.Exception (once per error: a method
    calling another does not run it twice). ERRORS_ARE_FATAL and ERRORS_ABORT end the job;
    after a user's handler returns, the call returns None, its results undefined, as
    mpi4py's calls do over MPICH (the exception is not raised)."""
    if cls in _plain_classes:
        return cls
    handled = _handled_classes.get(cls)
    if handled is None:
        methods = {}
        for klass in reversed(cls.__mro__):
            for name, attr in vars(klass).items():
                if not name.startswith("_") and isinstance(attr, types.FunctionType):
                    methods[name] = _handled_method(attr)
        handled = type(cls.__name__, (cls,), {"__module__": cls.__module__,
                                              "__qualname__": cls.__qualname__, **methods})
        _handled_classes[cls], _plain_classes[handled] = handled, cls
    return handled


def _plain_class(cls):
    return _plain_classes.get(cls, cls)


plain_class = _plain_class      # (File.Close: a closed file's errors are FILE_NULL's)


def handle_error(obj, exc):
    """An error with no object to call on (File.Open's and Delete's: FILE_NULL's handler,
    `obj`): `exc` raised under ERRORS_RETURN, else the handler run (ERRORS_ARE_FATAL ends
    the job) and, if it returns, so does this."""
    if obj._errhandler is _RETURN:
        raise exc
    obj._errhandler.call(obj, exc.error_code)


_calls = threading.local()     # .depth: handled calls under way in this thread


def _handled_method(method):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        depth = getattr(_calls, "depth", 0)
        _calls.depth = depth + 1
        try:
            return method(self, *args, **kwargs)
        except MPIException as exc:
            if depth:
                raise           # the outermost call of this object's methods handles it
            self._errhandler.call(self, exc.error_code)
            return None         # a user's handler returned: so does the call, as under MPICH
        finally:
            _calls.depth = depth
    return call
