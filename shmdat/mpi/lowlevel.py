"""mpi4py's low-level helpers in the MPI namespace: `_sizeof`, `_handleof`, `_addressof` (the
MPI handle behind an object: MPICH's, as mpi4py over MPICH gives them) and the communicator
locks `_comm_lock`, `_comm_lock_table` (mpi4py.util.pkl5 and util.pool take them)."""

import ctypes
import threading
import weakref

from . import errors
from .comm import Comm, Request, Status
from .datatypes import Datatype
from .errhandler import Errhandler
from .errors import Exception as MPIException
from .file import File
from .group import Group
from .info import Info
from .message import Message
from .ops import Op
from .session import Session
from .unimplemented import NotImplementedCall
from .win import Win

_HANDLE_CLASSES = (Datatype, Request, Message, Op, Group, Info, Errhandler, Session, Comm, Win,
                   File)
_INT_HANDLE = ctypes.sizeof(ctypes.c_int)           # MPICH's handles are C ints...
_POINTER_HANDLE = ctypes.sizeof(ctypes.c_void_p)    # ...but for MPI_File, a pointer


def _sizeof(arg):
    """mpi4py's _sizeof: the size in bytes of the MPI handle of `arg` (an MPI class or one of
    its objects) in MPICH: MPI_Status's 5 ints, MPI_File's pointer, a C int for the others.
    TypeError for anything else."""
    cls = arg if isinstance(arg, type) else type(arg)
    if issubclass(cls, Status):
        return ctypes.sizeof(Status()._mpi)
    if issubclass(cls, File):
        return _POINTER_HANDLE
    if issubclass(cls, _HANDLE_CLASSES):
        return _INT_HANDLE
    raise TypeError("expecting an MPI type or instance")


def _handleof(arg):
    """mpi4py's _handleof: the MPI handle of `arg` as an unsigned integer (a status's: its
    memory's address). TypeError if `arg` is no MPI object."""
    if isinstance(arg, Status):
        return ctypes.addressof(arg._mpi)
    if isinstance(arg, _HANDLE_CLASSES):
        return arg.handle
    raise TypeError("expecting an MPI instance")


def _addressof(arg):
    """mpi4py's _addressof: the address of the memory of `arg`'s MPI handle; a Status's
    fields live there (writes change them). shmdat.mpi's other handles are Python objects
    with no memory a write could change: NotImplementedCall (a copy of the number would
    be a wrong answer when written). TypeError if `arg` is no MPI object."""
    if isinstance(arg, Status):
        return ctypes.addressof(arg._mpi)
    if isinstance(arg, _HANDLE_CLASSES):
        raise NotImplementedCall(f"MPI._addressof of a {type(arg).__name__} is not "
                                 "implemented by shmdat.mpi (only of a Status)")
    raise TypeError("expecting an MPI instance")


# A communicator's lock table: what its handles share (Comm._identity) -> {key: Lock}. MPI
# keeps it as an attribute without a copy function (mpi4py's): Dup's communicator starts
# with an empty one.
_lock_tables = weakref.WeakKeyDictionary()
_lock_tables_lock = threading.Lock()


def _comm_lock_table(comm):
    """mpi4py's _comm_lock_table: the dict of `comm`'s locks (key -> threading.Lock), the
    same for every handle to the communicator. MPI.Exception ERR_COMM for a null one;
    TypeError for anything but a Comm."""
    with _lock_tables_lock:
        return _table(comm)


def _comm_lock(comm, key=None):
    """mpi4py's _comm_lock: the lock of `comm` for `key` (made on first use). MPI.Exception
    ERR_COMM for a null communicator; TypeError for anything but a Comm, or an unhashable
    key."""
    with _lock_tables_lock:
        table = _table(comm)
        lock = table.get(key)
        if lock is None:
            lock = table[key] = threading.Lock()
        return lock


def _table(comm):
    if not isinstance(comm, Comm):
        raise TypeError(f"Argument 'comm' has incorrect type (expected Comm, got "
                        f"{type(comm).__name__})")
    identity = comm._identity()
    if identity is None:
        raise MPIException(errors.ERR_COMM, "the lock table of MPI.COMM_NULL")
    return _lock_tables.setdefault(identity, {})
