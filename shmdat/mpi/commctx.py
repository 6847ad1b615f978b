"""What mpi4py keeps per communicator for its pure-Python modules (mpi4py.util.pkl5,
util.pool, util.sync): `_comm_lock`, `_comm_lock_table` (a table of locks by key) and
`_commctx_intra`, `_commctx_inter` (a duplicate of the communicator with a counter of tags,
for the point-to-point traffic of pkl5's collectives; an intercommunicator's also with its
local group as an intracommunicator).

The lock table is the communicator's own (Comm._locks; its object collectives take their
locks from it, as mpi4py's). The context is, as mpi4py's, an attribute of the communicator,
under a keyval made on first use with no copy function (Dup's communicator starts without
one): every handle to one communicator sees the same, and freeing it (or Finalize, for
COMM_WORLD's and COMM_SELF's) frees the duplicates through the delete function."""

import threading

from . import errors
from .comm import _TAG_MAX, Comm, Intracomm
from .errors import Exception as MPIException
from .intercomm import Intercomm

_keyvals = {}               # "commctx" -> the keyval
_keyvals_lock = threading.Lock()    # (each made once)


class _Context:
    """A communicator's context: its duplicate, the next tag, and for an intercommunicator
    its local group's intracommunicator and whether this is the low group."""

    def __init__(self, dupcomm):
        self.dupcomm, self.tag = dupcomm, 0
        self.localcomm, self.low_group = None, None

    def next_tag(self):
        """The next tag of the duplicate's traffic (back to 0 after TAG_UB, as mpi4py)."""
        if self.tag >= _TAG_MAX:
            self.tag = 0
        tag, self.tag = self.tag, self.tag + 1
        return tag


def _free_context(comm, keyval, context):
    """The delete function of a communicator's context: its communicators are freed."""
    if context.localcomm is not None:
        context.localcomm.Free()
    context.dupcomm.Free()


def _attribute(comm, name, make, delete_fn=None):
    """`comm`'s attribute `name` (made by make(comm) if it has none). MPI.Exception ERR_COMM
    for a null communicator (Get_attr's); TypeError for anything but a Comm."""
    if not isinstance(comm, Comm):
        raise TypeError(f"Argument 'comm' has incorrect type (expected Comm, got "
                        f"{type(comm).__name__})")
    with _keyvals_lock:
        keyval = _keyvals.get(name)
        if keyval is None:
            keyval = _keyvals[name] = Comm.Create_keyval(delete_fn=delete_fn)
    value = comm.Get_attr(keyval)
    if value is None:
        value = make(comm)
        comm.Set_attr(keyval, value)
    return value


def _comm_lock_table(comm):
    """mpi4py's _comm_lock_table: the dict of `comm`'s locks (key -> threading.Lock), the
    same for every handle to the communicator (its object collectives take theirs by
    name, as mpi4py's). MPI.Exception ERR_COMM for a null one; TypeError for anything but
    a Comm."""
    return _checked(comm)._locks


def _comm_lock(comm, key=None):
    """mpi4py's _comm_lock: the lock of `comm` for `key` (made on first use). MPI.Exception
    ERR_COMM for a null communicator; TypeError for anything but a Comm, or an unhashable
    key."""
    return _checked(comm)._lock(key)


def _checked(comm):
    """`comm`, a communicator that is not null (as mpi4py's calls take one)."""
    if not isinstance(comm, Comm):
        raise TypeError(f"Argument 'comm' has incorrect type (expected Comm, got "
                        f"{type(comm).__name__})")
    if not comm:
        raise MPIException(errors.ERR_COMM, "a null communicator has no locks")
    return comm


def _commctx_intra(comm):
    """mpi4py's _commctx_intra: (the duplicate of intracommunicator `comm`, the next tag of
    its traffic). The first call on a communicator is collective (Dup). MPI.Exception
    ERR_COMM for a null communicator; TypeError for an Intercomm or anything but a Comm."""
    if not isinstance(comm, Intracomm):
        raise TypeError(f"Argument 'comm' has incorrect type (expected Intracomm, got "
                        f"{type(comm).__name__})")
    with _comm_lock(comm, "@commctx_intra"):
        context = _attribute(comm, "commctx", lambda comm: _Context(comm.Dup()), _free_context)
        return context.dupcomm, context.next_tag()


def _commctx_inter(comm):
    """mpi4py's _commctx_inter: (the duplicate of intercommunicator `comm`, the next tag, its
    local group as an intracommunicator, whether this is the low group: the smaller one, or
    of two of a size the one whose ranks come first when merged). The first call on a
    communicator is collective over both groups (Dup, Merge). MPI.Exception ERR_COMM for a
    null communicator; TypeError for anything but an Intercomm."""
    if not isinstance(comm, Intercomm):
        raise TypeError(f"Argument 'comm' has incorrect type (expected Intercomm, got "
                        f"{type(comm).__name__})")
    with _comm_lock(comm, "@commctx_inter"):
        context = _attribute(comm, "commctx", lambda comm: _Context(comm.Dup()), _free_context)
        if context.localcomm is None:
            local, remote = comm.Get_size(), comm.Get_remote_size()
            merged = comm.Merge(local > remote)
            context.low_group = local < remote or local == remote and merged.Get_rank() < local
            group = comm.Get_group()
            context.localcomm = merged.Create(group)
            group.Free()
            merged.Free()
        return context.dupcomm, context.next_tag(), context.localcomm, context.low_group
