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
    Close_port DISPLACEMENT_CURRENT DISP_CUR
    ERR_ABI ERR_PROC_FAILED ERR_PROC_FAILED_PENDING ERR_REVOKED FILE_NULL
    F_ERROR F_SOURCE F_STATUS_SIZE F_TAG File Get_abi_fortran_info Get_abi_info
    Get_abi_version Get_hw_resource_info Iflush_buffer InPlaceType
    Lookup_name MAX_DATAREP_STRING MAX_ERROR_STRING MAX_LIBRARY_VERSION_STRING
    MAX_OBJECT_NAME MAX_PORT_NAME MAX_PROCESSOR_NAME MAX_PSET_NAME_LEN MAX_STRINGTAG_LEN
    MODE_APPEND MODE_CREATE MODE_DELETE_ON_CLOSE MODE_EXCL MODE_RDONLY MODE_RDWR
    MODE_SEQUENTIAL MODE_UNIQUE_OPEN MODE_WRONLY Open_port Publish_name
    Register_datarep Remove_error_class Remove_error_code Remove_error_string SEEK_CUR
    SEEK_END SEEK_SET SESSION_NULL Session Unpublish_name
""".split())

COMM = frozenset("""
    Accept Ack_failed Agree
    Connect
    Create_from_group
    Disconnect Get_failed
    Get_parent Iagree Iflush_buffer Is_revoked Isendrecv
    Isendrecv_replace Ishrink Join Precv_init Psend_init
    Revoke
    Shrink Spawn Spawn_multiple f2py free fromhandle
    fromint handle py2f toint
""".split())

# Cartcomm's names beyond Comm's (mpi4py's Topocomm): none now.
CARTCOMM = COMM

# Intercomm's names beyond Comm's (shmdat/mpi/intercomm.py; the calls of Comm it does not
# have raise NotImplementedCall when called).
INTERCOMM = COMM | frozenset("""
    Create_from_groups
""".split())

REQUEST = frozenset("""
    Get_status_all Get_status_any Get_status_some Parrived Pready
    Pready_list Pready_range f2py free fromhandle fromint
    get_status_all get_status_any get_status_some handle py2f
    toint
""".split())

WIN = frozenset("""
    f2py free fromhandle fromint handle py2f toint
""".split())

STATUS = frozenset("""
    f2py py2f tomemory
""".split())

DATATYPE = frozenset("""
    Pack_external Pack_external_size Unpack_external f2py
    free fromhandle fromint handle py2f toint
""".split())

OP = frozenset("""
    f2py free fromhandle fromint handle py2f toint
""".split())

GROUP = frozenset("""
    Create_from_session_pset f2py free fromhandle fromint handle py2f toint
""".split())

MESSAGE = frozenset("""
    fromhandle free handle
""".split())

ERRHANDLER = frozenset("""
    fromhandle handle
""".split())

INFO = frozenset("""
    Create_env fromhandle handle
""".split())
