"""MPI 4's sessions (mpi4py's Session), Group.Create_from_session_pset,
Comm.Create_from_group and Intercomm.Create_from_groups. (Comm.Create_group, which also
makes a communicator collectively over a group's members alone, is create_group.py's.)

A session is a handle on the process sets the job has: "mpi://WORLD" (every rank) and
"mpi://SELF" (this rank), named as MPICH names them, without regard to case. Importing MPI
initialized the engine already, so Session.Init opens nothing: a session is its state (its
error handler, its attached buffer) and a group of a process set is a Group of the engine's
ranks. A communicator made from a group (Create_from_group) agrees on its context id with
the group's members alone, there being no parent communicator: they run an allreduce (MAX)
of their next free ids on a bootstrap context derived from the string tag
(BOOTSTRAP_BASE + crc32(stringtag), even), which MPI makes unique among concurrent calls of
overlapping groups."""

import operator
import zlib

from . import bsend, errors, handles, unimplemented
from . import comm as _comm
from .comm import COMM_NULL, Comm, _claim
from .errhandler import ERRORS_RETURN, ErrorHandling, Errhandler, handled_class, plain_class
from .errors import Exception as MPIException
from .group import Group
from .info import INFO_NULL, Info
from .intercomm import Intercomm, _not_on_intercomm
from .ops import MAX

PSETS = ("mpi://WORLD", "mpi://SELF")
MAX_PSET_NAME_LEN = MAX_STRINGTAG_LEN = 256     # (MPICH's)
BOOTSTRAP_BASE = 1 << 29        # + 2 * (crc32(stringtag) % BOOTSTRAP_IDS): Create_from_group's
BOOTSTRAP_IDS = 1 << 27         # bootstrap contexts, below ulfm.py's FT_BASE (1 << 30)


class _State:
    """What the handles of one session share: whether it is finalized, its error handler;
    it is also the key of its attached buffer (shmdat/mpi/bsend.py)."""

    def __init__(self):
        self.finalized, self.errhandler = False, None


class Session(ErrorHandling, handles.Numbered, unimplemented.Missing):
    """MPI_Session (mpi4py's Session): SESSION_NULL (false), or one Session.Init made. Handles
    to one session are equal; Finalize makes them all null."""

    _unimplemented = unimplemented.SESSION
    _numbers = handles.Numbers(0x38000000, 0xb8000000)     # MPICH's: the null's, the first
    _error = errors.ERR_SESSION
    _kind = "Session"
    COMM_WORLD = None       # set by MPI.py (it cannot be imported): the job's ranks and engine

    def __init__(self, session=None):
        """mpi4py's Session(session=None): a null handle, or another handle to `session`'s
        session. TypeError for anything else."""
        if session is not None and not isinstance(session, Session):
            raise TypeError(f"expected a Session, not {type(session).__name__}")
        self._state = None if session is None else session._state
        if session is not None and type(session) is not plain_class(type(session)):
            self.__class__ = handled_class(type(self))  # (handled by its error handler)

    @property
    def _errhandler(self):      # (ErrorHandling's: the session's, which its handles share)
        state = self._state
        return ERRORS_RETURN._handler if state is None else state.errhandler

    @_errhandler.setter
    def _errhandler(self, handler):
        self._state.errhandler = handler

    def _live(self):
        """The session's state; MPI.Exception ERR_SESSION on a null or finalized one."""
        state = self._state
        if state is None or state.finalized:
            raise MPIException(errors.ERR_SESSION, "the session is MPI.SESSION_NULL")
        return state

    def _check_errhandler_owner(self):
        self._live()

    @property
    def _engine(self):      # (what ERRORS_ARE_FATAL ends the job through)
        return Session.COMM_WORLD._engine

    def _identity(self):
        """(handles.Numbered) What the handles to one session share; None when null."""
        return self._state if self else None

    def __eq__(self, other):
        if not isinstance(other, Session):
            return NotImplemented
        return bool(self) == bool(other) and (not self or self._state is other._state)

    __hash__ = None

    def __bool__(self):
        return self._state is not None and not self._state.finalized

    def __reduce__(self):
        """pickle: SESSION_NULL by name, as mpi4py; ValueError for a session."""
        if self:
            raise ValueError("cannot serialize a Session (as mpi4py)")
        return "SESSION_NULL" if self is SESSION_NULL else (type(self), ())

    @classmethod
    def Init(cls, info=INFO_NULL, errhandler=None):
        """MPI_Session_init: a new session; `errhandler` (None: ERRORS_RETURN) is its error
        handler. TypeError for an `info` that is no Info or an `errhandler` that is no
        Errhandler; MPI.Exception ERR_ERRHANDLER for a null or a communicator's one."""
        if not isinstance(info, Info):
            raise TypeError(f"expected an Info, not {type(info).__name__}")
        session = cls()
        session._state = _State()
        session._state.errhandler = ERRORS_RETURN._handler.ref()
        session.Set_errhandler(ERRORS_RETURN if errhandler is None else errhandler)
        return session

    def Set_errhandler(self, errhandler):
        """MPI_Session_set_errhandler. TypeError if `errhandler` is no Errhandler;
        MPI.Exception ERR_ERRHANDLER if it is null, ERR_ARG if it is a communicator's or a
        window's (MPICH's classes), ERR_SESSION on a null session."""
        self._live()
        handler = getattr(errhandler, "_handler", None)
        if handler is not None and handler.function is not None and handler.kind != self._kind:
            raise MPIException(errors.ERR_ARG, f"a {handler.kind}'s error handler on a Session")
        super().Set_errhandler(errhandler)

    def Finalize(self):
        """MPI_Session_finalize: the session's buffer is detached (its sends waited for), and
        its handles become null. MPI.Exception ERR_SESSION on a null one."""
        state = self._live()
        bsend.detach(state, self._engine)
        state.finalized = True
        self._drop_errhandler()
        self._state = None

    def free(self):
        """mpi4py's free: Finalize unless null."""
        if self:
            self.Finalize()

    def Get_num_psets(self, info=INFO_NULL):
        """MPI_Session_get_num_psets: the process sets there are (2)."""
        self._live()
        return len(PSETS)

    def Get_nth_pset(self, n, info=INFO_NULL):
        """MPI_Session_get_nth_pset: the name of process set `n`. MPI.Exception ERR_ARG for
        `n` out of range; TypeError for one that is not an int."""
        self._live()
        n = operator.index(n)
        if not 0 <= n < len(PSETS):
            raise MPIException(errors.ERR_ARG, f"Get_nth_pset({n}): there are {len(PSETS)}")
        return PSETS[n]

    def Get_info(self):
        """MPI_Session_get_info: a new Info of the session's properties (the thread level,
        the memory allocation kinds, as MPICH's)."""
        self._live()
        return Info.Create({"thread_level": "MPI_THREAD_MULTIPLE",
                            "mpi_memory_alloc_kinds": "mpi,system"})

    def _members(self, pset_name):
        """The engine ranks of process set `pset_name`. MPI.Exception ERR_ARG for a name of
        none; TypeError for a name that is not a str."""
        self._live()
        if not isinstance(pset_name, str):
            raise TypeError(f"expected a str, not {type(pset_name).__name__}")
        name = pset_name.lower()
        engine = self._engine
        if name == "mpi://world":
            return range(engine.size)
        if name == "mpi://self":
            return [engine.rank]
        raise MPIException(errors.ERR_ARG, f"no process set {pset_name!r}")

    def Get_pset_info(self, pset_name):
        """MPI_Session_get_pset_info: a new Info with "mpi_size", the process set's size.
        Errors as Create_group."""
        return Info.Create({"mpi_size": str(len(self._members(pset_name)))})

    def Create_group(self, pset_name):
        """MPI_Group_from_session_pset: the group of process set `pset_name` ("mpi://WORLD",
        "mpi://SELF"). MPI.Exception ERR_ARG for another name, ERR_SESSION on a null
        session; TypeError for a name that is not a str."""
        return Group._of(self._members(pset_name), self._engine.rank)

    def Attach_buffer(self, buf):
        """MPI_Session_attach_buffer: `buf` (or BUFFER_AUTOMATIC) for buffered sends. Errors
        as MPI.Attach_buffer."""
        bsend.attach(self._live(), buf)

    def Detach_buffer(self):
        """MPI_Session_detach_buffer: once its buffered sends have left, the buffer attached
        (an empty bytearray if none is)."""
        return bsend.detach(self._live(), self._engine)

    def Flush_buffer(self):
        """MPI_Session_flush_buffer: wait until its buffered sends have left."""
        bsend.flush(self._live(), self._engine)


SESSION_NULL = Session()


def create_from_session_pset(cls, session, pset_name):
    """MPI_Group_from_session_pset: session.Create_group(pset_name). TypeError if `session`
    is no Session."""
    if not isinstance(session, Session):
        raise TypeError(f"expected a Session, not {type(session).__name__}")
    return session.Create_group(pset_name)


def _agreed_context(engine, members, stringtag):
    """(Collective over the engine ranks `members`, sorted) the largest next free context id
    among them, agreed on the bootstrap context of `stringtag`, and claimed with `ids`."""
    bootstrap = BOOTSTRAP_BASE + 2 * (zlib.crc32(stringtag.encode()) % BOOTSTRAP_IDS)
    return Comm(engine, bootstrap, sorted(members)).allreduce(_comm._next_context, MAX)


def _check_arguments(stringtag, info, errhandler):
    if not isinstance(stringtag, str):
        raise TypeError(f"stringtag: expected a str, not {type(stringtag).__name__}")
    if not isinstance(info, Info):
        raise TypeError(f"expected an Info, not {type(info).__name__}")
    if errhandler is not None and not isinstance(errhandler, Errhandler):
        raise TypeError(f"expected an Errhandler, not {type(errhandler).__name__}")


def _with_errhandler(comm, errhandler):
    if errhandler is not None:
        comm.Set_errhandler(errhandler)
    return comm


def create_from_group(cls, group, stringtag="org.mpi4py", info=INFO_NULL, errhandler=None):
    """MPI_Comm_create_from_group (collective over the group's members, which give the same
    `stringtag`): a communicator of the group's processes in its order, with `errhandler`
    (None: ERRORS_RETURN); COMM_NULL at a process not in it. TypeError for a stringtag
    that is not a str, an info or errhandler of another type; MPI.Exception ERR_GROUP for
    GROUP_NULL."""
    _check_arguments(stringtag, info, errhandler)
    members = group._members()
    engine = Session.COMM_WORLD._engine
    if engine.rank not in members:
        return COMM_NULL
    context = _agreed_context(engine, members, stringtag)
    _claim(context)
    return _with_errhandler(Comm(engine, context, list(members)), errhandler)


def create_from_groups(cls, local_group, local_leader, remote_group, remote_leader,
                       stringtag="org.mpi4py", info=INFO_NULL, errhandler=None):
    """MPI_Intercomm_create_from_groups (collective over both groups' members): an
    Intercomm of `local_group` and `remote_group`. TypeError as Create_from_group's and for
    a leader that is not an int; MPI.Exception ERR_GROUP for GROUP_NULL, for groups that
    share a process or a local group without this process, ERR_RANK for a leader out of
    its group."""
    _check_arguments(stringtag, info, errhandler)
    local, remote = local_group._members(), remote_group._members()
    engine = Session.COMM_WORLD._engine
    for leader, members in ((local_leader, local), (remote_leader, remote)):
        if not 0 <= operator.index(leader) < len(members):
            raise MPIException(errors.ERR_RANK, f"leader {leader} (group size {len(members)})")
    if engine.rank not in local or set(local) & set(remote):
        raise MPIException(errors.ERR_GROUP, "Create_from_groups: this process must be in the "
                           "local group, and no process in both")
    context = _agreed_context(engine, list(local) + list(remote), stringtag)
    _claim(context, 4)
    return _with_errhandler(Intercomm(engine, context, list(local), list(remote)), errhandler)


# An intracommunicator's calls (mpi4py's Intercomm has neither).
Intercomm.Create_from_group = _not_on_intercomm("Create_from_group")
Group.Create_from_session_pset = classmethod(create_from_session_pset)
Comm.Create_from_group = classmethod(create_from_group)
Intercomm.Create_from_groups = classmethod(create_from_groups)
