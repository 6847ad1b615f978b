"""mpi4py's low-level helpers in the MPI namespace: `_sizeof`, `_handleof`, `_addressof` (the
MPI handle behind an object: MPICH's, as mpi4py over MPICH gives them). (The communicator locks
and contexts mpi4py.util takes are commctx.py's.)"""

import ctypes

from .comm import Comm, Request, Status
from .datatypes import Datatype
from .errhandler import Errhandler
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
