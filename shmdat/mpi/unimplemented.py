"""The names of mpi4py 4.1.2's API that shmdat.mpi does not implement, by namespace (the
MPI module, Comm, Request/Prequest, Win, Status, Datatype, Op, Group, Info). Using one raises
NotImplementedCall naming it, never a wrong answer; NotImplementedCall is also an
AttributeError, so `hasattr(MPI, "File")` is False and getattr(..., default) gives the
default, as a program probing for an optional feature expects. A name in no table is an
ordinary AttributeError (a typo)."""


class NotImplementedCall(NotImplementedError, AttributeError):
    """An mpi4py call or constant that shmdat.mpi does not have (yet)."""


class _Lookup(type):
    """The metaclass of Missing: names looked up on the class itself (mpi4py's class
    methods, `MPI.Datatype.Create_struct`)."""

    def __getattr__(cls, name):
        missing(_owner(cls), cls._unimplemented, name)


class Missing(metaclass=_Lookup):
    """The base of shmdat.mpi's classes: a name of mpi4py's class that this one lacks
    (`_unimplemented`, a table below), on the class or on its objects, raises
    NotImplementedCall. Only names not found otherwise come here: no cost on the rest."""
    _unimplemented = frozenset()

    def __getattr__(self, name):
        missing(_owner(type(self)), self._unimplemented, name)


def _owner(cls):
    """The mpi4py class whose names `cls` answers for: the one that set its table (Comm for
    COMM_NULL's class, Request for Prequest)."""
    return next(c.__name__ for c in cls.__mro__ if "_unimplemented" in vars(c))


def missing(owner, table, name):
    """Raise for attribute `name` that `owner` (e.g. "MPI", "Comm") lacks: NotImplementedCall
    if it is mpi4py's (in `table`), else AttributeError."""
    if name in table:
        raise NotImplementedCall(f"{owner}.{name} is not implemented by shmdat.mpi")
    raise AttributeError(f"{owner} has no attribute {name!r}")


MODULE = frozenset("""
    ERR_ABI Get_abi_fortran_info Get_abi_info Get_abi_version Get_hw_resource_info
    InPlaceType MAX_ERROR_STRING MAX_LIBRARY_VERSION_STRING MAX_OBJECT_NAME
    MAX_PROCESSOR_NAME Remove_error_class Remove_error_code Remove_error_string
""".split())

COMM = frozenset()

# Cartcomm's names: Comm's (mpi4py's Topocomm: the neighbour collectives are all there).
CARTCOMM = COMM

# Intercomm's names: Comm's, and Create_group, an intracommunicator's that mpi4py's Intercomm
# has not (create_group.py hides Comm's; shmdat/mpi/intercomm.py: the other calls of Comm it
# does not have raise NotImplementedCall when called).
INTERCOMM = COMM | frozenset(["Create_group"])

REQUEST = frozenset()

WIN = frozenset()

STATUS = frozenset()

DATATYPE = frozenset()

OP = frozenset()

GROUP = frozenset()

MESSAGE = frozenset()

ERRHANDLER = frozenset()

FILE = frozenset()

SESSION = frozenset()

INFO = frozenset()
