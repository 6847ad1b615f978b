"""mpi4py's Win: one-sided communication on a window of each member's memory, on the engine
(shmdat/mpi/engine.py). Put is one RDMA write and Get one RDMA read, done by the origin alone;
Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap and the passive-target locks are
window messages that the target's progress engine handles in order (any MPI call the target
makes serves them), so an accumulate is applied whole before the next one: atomic per
element, as MPI asks. The request-based calls (Rput...) give a Request on the same operations.
General active target (Post, Start, Complete, Wait) sends empty messages on the window's own
communicator. docs/design/mpi.md has the protocol."""

import collections
import operator
import struct

import numpy as np

from shmdat import MemPriv, RmrTriplet

from . import attributes, errors, handles, ops, unimplemented
from .buffer import over
from .comm import Request
from .datatypes import BYTE, NAMED, BottomType, message, named
from .errhandler import ErrorHandling, plain_class
from .engine import WIN_ACC, WIN_BODY_LIMIT, WIN_LOCK, WIN_UNLOCK
from .errors import Exception as MPIException
from .group import UNDEFINED, Group
from .info import INFO_NULL, Info
from .matching import ANY_TAG, PROC_NULL

LOCK_EXCLUSIVE, LOCK_SHARED = 234, 235          # MPICH's values, as mpi4py over MPICH has them
MODE_NOCHECK, MODE_NOSTORE, MODE_NOPUT = 1024, 2048, 4096
MODE_NOPRECEDE, MODE_NOSUCCEED = 8192, 16384
WINDOW_PRIVILEGES = (MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE | MemPriv.REMOTE_READ
                     | MemPriv.REMOTE_WRITE)
ACC_BODY = struct.Struct("<qHH?")   # target byte offset, op, datatype, answer the old values
LOCK_BODY = struct.Struct("<?")     # exclusive (WIN_LOCK and WIN_UNLOCK)
POST_TAG, COMPLETE_TAG = 1, 2       # Post's and Complete's messages (on the window's own comm)
# Get_attr's predefined keys and their values (MPICH's numbers, as mpi4py over MPICH has them).
WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL = (
    0x66000001, 0x66000003, 0x66000005, 0x66000007, 0x66000009)
WIN_FLAVOR = WIN_CREATE_FLAVOR
WIN_FLAVOR_CREATE, WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_DYNAMIC, WIN_FLAVOR_SHARED = 1, 2, 3, 4
WIN_SEPARATE, WIN_UNIFIED = 1, 2


def _replace(origin, target, out):
    out[...] = origin


def _no_op(origin, target, out):
    pass


_ANY_KIND = "biufcSUV"          # REPLACE and NO_OP take every datatype
# As every op's ufunc, called (origin, target, out=target): the result is the target's.
# Called on two objects, as mpi4py's: REPLACE(x, y) is y, NO_OP(x, y) is x.
REPLACE = ops.Op._make("REPLACE", lambda x, y: y, _replace, _ANY_KIND)
NO_OP = ops.Op._make("NO_OP", lambda x, y: x, _no_op, _ANY_KIND)

# What an accumulate names on the wire, by index: the predefined ops (MPI allows no
# user-defined op there) and the named datatypes.
_OPS = [ops.SUM, ops.PROD, ops.MAX, ops.MIN, ops.LAND, ops.LOR, ops.LXOR, ops.BAND, ops.BOR,
        ops.BXOR, ops.MAXLOC, ops.MINLOC, REPLACE, NO_OP]
_TYPES = list(NAMED.values())
# (keyed by what a datatype's handles share: handles are unhashable, as mpi4py's)
_TYPE_INDEX = {id(datatype.__dict__): i for i, datatype in enumerate(_TYPES)}
# Compare_and_swap's op on the wire: the body holds the origin, then the compare element.
_COMPARE_AND_SWAP = len(_OPS)


def _op_index(op):
    """The index of `op` in _OPS (None if not there: ops are unhashable, as mpi4py's)."""
    return next((i for i, known in enumerate(_OPS) if known == op), None)


# MPI's window hints (MPI 4.1 section 12.2.1) and MPICH's values for them where not set.
HINTS = {"no_locks": "false", "accumulate_ordering": "rar,raw,war,waw",
         "accumulate_ops": "same_op_no_op", "alloc_shared_noncontig": "false",
         "same_size": "false", "same_disp_unit": "false"}


def _hints_of(info):
    """The values `info` gives MPI's window hints (none in INFO_NULL). TypeError if `info`
    is no Info."""
    if not isinstance(info, Info):
        raise TypeError(f"expected an Info, not {type(info).__name__}")
    return {key: info.Get(key) for key in HINTS if info and key in info}


def _fail(error_class, detail):
    raise MPIException(error_class, detail)


def _target_spec(target, count, datatype):
    """(disp, count, datatype) of mpi4py's target argument: None, a displacement, or a
    sequence (disp, count, datatype) of which trailing items may be left out (the origin's
    count and datatype stand in), the datatype also a typecode. ValueError for another
    kind or more items, TypeError for a displacement or count that is not an int, KeyError
    for no datatype, MPI.Exception ERR_COUNT for a negative count."""
    if target is None:
        return 0, count, datatype
    if isinstance(target, int):
        return target, count, datatype
    if not isinstance(target, (list, tuple)):
        raise ValueError(f"target: expecting integral or list/tuple, not {target!r}")
    if len(target) > 3:
        raise ValueError(f"target: expecting 3 items at most, not {len(target)}")
    disp, count, datatype = (*target, *(0, count, datatype)[len(target):])
    disp, count = operator.index(disp), operator.index(count)   # TypeError, as mpi4py
    if count < 0:
        _fail(errors.ERR_COUNT, f"target count {count}")
    return disp, count, named(datatype)


def _check_single(**messages):
    """mpi4py's checks of Fetch_and_op and Compare_and_swap, made before MPI is called:
    ValueError unless each of `messages` ((view, count, datatype) by name, the origin's
    first) is one element of the origin's datatype."""
    for name, (_, count, _) in messages.items():
        if count != 1:
            raise ValueError(f"{name}: expecting a single element, got {count}")
    datatype = messages["origin"][2]
    for name, (_, _, other) in messages.items():
        if other is not datatype:
            raise ValueError(f"mismatch in origin and {name} MPI datatypes")


class _Operations:
    """What a request-based call (Rput, Rget, Raccumulate, Rget_accumulate) gives its
    Request to wait on: done once all its RmaOps are (one target's); `ops` is what the
    engine looks at to tell whether one can still complete. Its status is empty."""
    source, tag, error, nbytes = PROC_NULL, ANY_TAG, errors.SUCCESS, 0

    def __init__(self, started):
        self.ops = started

    @property
    def done(self):
        return all(op.done for op in self.ops)


def _check_size(size):
    if not isinstance(size, int) or size < 0:
        _fail(errors.ERR_SIZE, f"size must be an int >= 0, not {size!r}")


def _check_disp_unit(disp_unit):
    if not isinstance(disp_unit, int) or disp_unit < 1:
        _fail(errors.ERR_DISP, f"disp_unit must be a positive int, not {disp_unit!r}")


def _check_op(op, datatype):
    """MPI.Exception ERR_OP unless `op` may accumulate `datatype` (checked at the origin, so
    the target never meets a bad one)."""
    if _op_index(op) is None:
        _fail(errors.ERR_OP, f"an accumulate takes a predefined op or REPLACE or NO_OP, "
                             f"not {op!r}")
    op.check(datatype.dtype)            # ERR_OP where MPI's table has no entry


class Win(ErrorHandling, attributes.Keyvals, handles.SharedState, handles.Numbered,
          unimplemented.Missing):
    """MPI_Win (mpi4py's Win): Create, Allocate, Put, Get, Accumulate, Get_accumulate,
    Fetch_and_op, Compare_and_swap, Rput, Rget, Raccumulate, Rget_accumulate, Fence, Post,
    Start, Complete, Wait, Test, Lock, Unlock, Lock_all, Unlock_all, Flush, Flush_all,
    Flush_local, Flush_local_all, Sync, tomemory, Free; the attributes, hints, group and
    name. (Create_dynamic's windows: shmdat/mpi/dynamic.py.)
    Target ranks are the communicator's. A handle whose window is freed, or Win(), is null:
    equal to WIN_NULL."""

    _unimplemented = unimplemented.WIN
    _alive = "_memory"      # (SharedState: None in WIN_NULL, a freed window)
    _numbers = handles.Numbers(handles.WIN["null"], handles.WIN["first"])
    _error = errors.ERR_WIN
    _kind = "Win"

    COMM_SELF = None    # mpi4py's default communicator, set by MPI.py (it cannot be imported)
    _shared_parts = None    # a shared window's parts, [(memory, disp_unit)] by rank (shared.py)

    def __init__(self, win=None):
        """mpi4py's Win(win=None): a null handle (equal to WIN_NULL, false), or another handle
        to `win`'s window: the same state (its very __dict__), so that a Free through either
        makes both null. TypeError for anything else."""
        if win is None:
            self._memory = None         # null: every call but Get_name raises ERR_WIN
        elif isinstance(win, Win):
            self.__dict__ = win.__dict__
            if not isinstance(self, type(win)):     # (a dynamic one's class; a subclass's kept)
                self.__class__ = type(win)
        else:
            raise TypeError(f"expected a Win, not {type(win).__name__}")

    @classmethod
    def _open(cls, memory, lmr, disp_unit, comm, flavor, info=INFO_NULL):
        """The window over `memory` (registered as `lmr`, None if empty) of every member of
        `comm` (collective): ids and triplets agreed, registered with the engine; the hints
        of `info` kept."""
        self = cls.__new__(cls)
        self._hints = dict(HINTS, **_hints_of(info))
        engine = self._engine = comm._engine
        self._memory, self._lmr, self._flavor = memory, lmr, flavor
        self._name = ""
        mine = (engine.next_window, tuple(lmr.rmr_triplet()) if lmr else (0, 0, 0), disp_unit)
        self._ranks = [comm._ranks[r] for r in range(comm.size)]
        self._rank, members = comm.rank, comm.allgather(mine)
        self._id = max(m[0] for m in members)     # above every id a member has used
        engine.next_window = self._id + 1
        self._targets = [(RmrTriplet(*rmr), unit) for _, rmr, unit in members]
        self._pending = [[] for _ in members]     # per target: RmaOps not yet known complete
        self._fence_open, self._lock_all = False, False
        self._locks = {}                          # target -> lock type: this rank's epochs
        self._exclusive, self._shared = False, 0  # the lock on this rank's window
        self._waiting = collections.deque()       # lock requests not yet granted
        self._started = None                      # Start's targets, while its epoch is open
        self._exposure = None                     # Post's receives of Complete, while open
        # The window's own communicator (its group, Fence's barrier, Post's and Complete's
        # messages): a program may free the one it gave before the window, as MPI allows.
        self._comm = comm.Dup()
        self._attrs = attributes.Attributes()
        engine.windows[self._id] = self
        comm.Barrier()          # every member has registered the window before any message
        return self

    def __reduce__(self):
        """pickle: WIN_NULL (and a null handle) only, as mpi4py; a window is ValueError."""
        if self._memory is not None:
            raise ValueError("cannot serialize a window: only WIN_NULL can be pickled")
        return "WIN_NULL" if self is WIN_NULL else (plain_class(type(self)), ())

    @classmethod
    def _over(cls, comm):
        """The communicator a window is made over: `comm`, None for COMM_SELF.
        NotImplementedCall for an intercommunicator (before any memory is registered)."""
        comm = cls.COMM_SELF if comm is None else comm
        if comm.Is_inter():
            raise unimplemented.NotImplementedCall(
                "a window on an Intercomm is not implemented by shmdat.mpi")
        return comm

    @classmethod
    def Create(cls, memory, disp_unit=1, info=INFO_NULL, comm=None):
        """MPI_Win_create: a window over `memory` (a writable contiguous buffer), registered
        for remote reads and writes; collective over `comm` (None: COMM_SELF). Displacements
        at a target count in its `disp_unit` bytes; MPI.BOTTOM (or None) gives no memory.
        BufferError (read-only or not contiguous, as mpi4py), MPI.Exception ERR_DISP
        (disp_unit below 1)."""
        _check_disp_unit(disp_unit)
        comm = cls._over(comm)
        engine = comm._engine
        data = memoryview(bytearray()) if isinstance(memory, BottomType) \
            else message([memory, BYTE], True)[0]
        lmr = engine.ia.lmr_create(engine.pz, np.frombuffer(data, np.uint8),
                                   WINDOW_PRIVILEGES) if len(data) else None
        return cls._open(data, lmr, disp_unit, comm, WIN_FLAVOR_CREATE, info)

    @classmethod
    def Allocate(cls, size, disp_unit=1, info=INFO_NULL, comm=None):
        """MPI_Win_allocate: a window over `size` new bytes (a provider LMR), which
        tomemory() gives; collective over `comm` (None: COMM_SELF). MPI.Exception ERR_SIZE,
        ERR_DISP."""
        _check_size(size)
        _check_disp_unit(disp_unit)
        comm = cls._over(comm)
        engine = comm._engine
        lmr = engine.ia.lmr_create(engine.pz, size, WINDOW_PRIVILEGES) if size else None
        return cls._open(memoryview(lmr.buffer) if lmr else memoryview(bytearray()), lmr,
                         disp_unit, comm, WIN_FLAVOR_ALLOCATE, info)

    def tomemory(self):
        """mpi4py's tomemory: this rank's window memory, as a new MPI.buffer whose obj is
        the window (address 0 if it has no memory). MPI.Exception ERR_WIN."""
        self._check_live()
        return over(self._memory, self, self.Get_attr(WIN_BASE))

    # The window's attributes, group and name.

    def Get_attr(self, keyval):
        """MPI_Win_get_attr: a user keyval's value (None if not set), or a predefined key's:
        WIN_BASE (the address of this rank's window memory, 0 if it has none), WIN_SIZE
        (its bytes), WIN_DISP_UNIT, WIN_CREATE_FLAVOR (WIN_FLAVOR_CREATE,
        WIN_FLAVOR_ALLOCATE or WIN_FLAVOR_SHARED), WIN_MODEL (WIN_UNIFIED: RDMA reaches the memory a rank
        reads). TypeError for a keyval that is not an int, MPI.Exception ERR_WIN,
        ERR_KEYVAL for one that names no Win keyval."""
        self._check_live()
        if keyval == WIN_BASE:
            return np.frombuffer(self._memory, np.uint8).ctypes.data if len(self._memory) else 0
        if keyval == WIN_SIZE:
            return len(self._memory)
        if keyval == WIN_DISP_UNIT:
            return self._targets[self._rank][1]
        if keyval == WIN_CREATE_FLAVOR:
            return self._flavor
        if keyval == WIN_MODEL:
            return WIN_UNIFIED
        return self._attrs.get(self._kind, keyval)

    def Set_attr(self, keyval, attrval):
        """MPI_Win_set_attr: a value already set is deleted first (its delete_fn).
        MPI.Exception ERR_WIN, ERR_KEYVAL (a predefined key, or none of Win's), ERR_OTHER
        (the delete_fn raised); TypeError (nopython keyval: not an int)."""
        self._check_live()
        self._attrs.set(self, self._kind, keyval, attrval)

    def Delete_attr(self, keyval):
        """MPI_Win_delete_attr: the value goes, through the keyval's delete_fn (nothing if
        not set). MPI.Exception ERR_WIN, ERR_KEYVAL, ERR_OTHER (the delete_fn raised)."""
        self._check_live()
        self._attrs.delete(self, self._kind, keyval)

    @property
    def attrs(self):
        """mpi4py's attrs: (WIN_BASE, WIN_SIZE, WIN_DISP_UNIT)."""
        return tuple(self.Get_attr(key) for key in (WIN_BASE, WIN_SIZE, WIN_DISP_UNIT))

    @property
    def flavor(self):
        return self.Get_attr(WIN_CREATE_FLAVOR)

    @property
    def model(self):
        return self.Get_attr(WIN_MODEL)

    def Get_group(self):
        """MPI_Win_get_group: the group of the communicator the window was made over, a new
        Group. MPI.Exception ERR_WIN."""
        self._check_live()
        return self._comm.Get_group()

    group = property(Get_group)

    @property
    def group_size(self):
        self._check_live()
        return len(self._ranks)

    @property
    def group_rank(self):
        self._check_live()
        return self._rank

    def Get_name(self):
        """MPI_Win_get_name: what Set_name gave ('' at first), MPI_WIN_NULL on a null one."""
        return "MPI_WIN_NULL" if self._memory is None else self._name

    def Set_name(self, name):
        """MPI_Win_set_name (this process's handle only). MPI.Exception ERR_WIN; TypeError if
        `name` is not a str."""
        self._check_live()
        if not isinstance(name, str):
            raise TypeError(f"a window's name is a str, not {type(name).__name__}")
        self._name = name

    name = property(Get_name, Set_name)

    def Get_info(self):
        """MPI_Win_get_info: a new Info of the window's hints (MPI's keys, MPICH's defaults
        where not set; nothing here acts on them). MPI.Exception ERR_WIN."""
        self._check_live()
        return Info.Create(self._hints)

    def Set_info(self, info):
        """MPI_Win_set_info: the values `info` gives MPI's window hints replace theirs (other
        keys are not kept, as MPICH). TypeError if `info` is no Info; MPI.Exception ERR_WIN,
        ERR_ARG for INFO_NULL (or freed)."""
        self._check_live()
        hints = _hints_of(info)
        if not info:
            _fail(errors.ERR_ARG, "Win.Set_info of INFO_NULL")
        self._hints.update(hints)

    info = property(Get_info, Set_info)

    def Attach(self, memory):
        """MPI_Win_attach: MPI.Exception ERR_RMA_FLAVOR, but on a window of Create_dynamic
        (shmdat/mpi/dynamic.py); ERR_WIN."""
        self._check_live()
        _fail(errors.ERR_RMA_FLAVOR, "Attach on a window not made by Create_dynamic")

    Detach = Attach

    # Communication.

    def Put(self, origin, target_rank, target=None):
        """MPI_Put: one RDMA write of `origin` into target_rank's window at `target`
        (displacement, or (disp, count, datatype)); complete at the next Fence, Flush or
        Unlock. MPI.Exception ERR_WIN (freed), ERR_RANK, ERR_RMA_SYNC (no epoch open on
        target_rank), ERR_DISP, ERR_COUNT, ERR_TYPE (target and origin sizes differ),
        ERR_RMA_RANGE (outside the target's window); BufferError (as mpi4py)."""
        self._transfer(True, origin, target_rank, target)

    def Get(self, origin, target_rank, target=None):
        """MPI_Get: one RDMA read of target_rank's window at `target` into `origin`; its data
        is there after the next Fence, Flush or Unlock. MPI.Exception as Put."""
        self._transfer(False, origin, target_rank, target)

    def Accumulate(self, origin, target_rank, target=None, op=ops.SUM):
        """MPI_Accumulate: target = target op origin, elementwise, applied by the target (atomic
        per element against every other accumulate); complete at the next Fence, Flush or
        Unlock. MPI.Exception as Put, and ERR_OP (not a predefined op, REPLACE or NO_OP, or
        not one of the datatype's), ERR_TYPE (the target's datatype is not the origin's)."""
        self._accumulate(message(origin, False), None, target_rank, target, op)

    def Get_accumulate(self, origin, result, target_rank, target=None, op=ops.SUM):
        """MPI_Get_accumulate: as Accumulate, and `result` gets the target's values from just
        before (after the next Fence, Flush or Unlock). MPI.Exception as Accumulate, and
        ERR_TYPE (result not the origin's size)."""
        self._accumulate(message(origin, False), message(result, True)[0], target_rank, target,
                         op)

    def Fetch_and_op(self, origin, result, target_rank, target_disp=0, op=ops.SUM):
        """MPI_Fetch_and_op: Get_accumulate of one element at displacement `target_disp`.
        ValueError (as mpi4py: origin or result not one element, or not of one datatype);
        MPI.Exception as Get_accumulate."""
        origin, result = message(origin, False), message(result, True)
        if target_rank != PROC_NULL:
            _check_single(origin=origin, result=result)
        self._accumulate(origin, result[0], target_rank, target_disp, op)

    def Compare_and_swap(self, origin, compare, result, target_rank, target_disp=0):
        """MPI_Compare_and_swap: `result` gets the element at `target_disp` of target_rank's
        window, which becomes `origin` if it was equal to `compare`; atomic at the target as
        an accumulate, complete as one. ValueError (as mpi4py: a buffer not one element, or
        datatypes that differ); MPI.Exception as Put, and ERR_TYPE (not an integer, logical
        or byte datatype)."""
        view, count, datatype = origin = message(origin, False)
        if target_rank != PROC_NULL:
            compare, result = message(compare, False), message(result, True)
            _check_single(origin=origin, compare=compare, result=result)
            if datatype.dtype.kind not in "iub":
                _fail(errors.ERR_TYPE, f"Compare_and_swap of {datatype.Get_name()}: an "
                                       f"integer, logical or byte datatype is due")
        offset = self._locate(target_rank, target_disp, count, datatype, len(view))
        if offset is not None:
            self._acc_messages(target_rank, offset, _COMPARE_AND_SWAP, datatype,
                               bytes(view) + bytes(compare[0]), result[0])

    def Rput(self, origin, target_rank, target=None):
        """MPI_Rput: Put, and a Request that completes with it (Wait, Test...); in a
        passive-target epoch on target_rank only (Lock or Lock_all). MPI.Exception as Put."""
        return self._request(self._transfer(True, origin, target_rank, target, passive=True))

    def Rget(self, origin, target_rank, target=None):
        """MPI_Rget: Get, and a Request that completes once `origin` holds the data; in a
        passive-target epoch on target_rank only. MPI.Exception as Get."""
        return self._request(self._transfer(False, origin, target_rank, target, passive=True))

    def Raccumulate(self, origin, target_rank, target=None, op=ops.SUM):
        """MPI_Raccumulate: Accumulate, and a Request that completes with it; in a
        passive-target epoch on target_rank only. MPI.Exception as Accumulate."""
        return self._request(self._accumulate(message(origin, False), None, target_rank, target,
                                              op, passive=True))

    def Rget_accumulate(self, origin, result, target_rank, target=None, op=ops.SUM):
        """MPI_Rget_accumulate: Get_accumulate, and a Request that completes once `result`
        holds the old values; in a passive-target epoch on target_rank only. MPI.Exception
        as Get_accumulate."""
        return self._request(self._accumulate(message(origin, False), message(result, True)[0],
                                              target_rank, target, op, passive=True))

    def _request(self, started):
        return Request(self._engine, self._comm._rank_of, _Operations(started))

    def _transfer(self, write, origin, target_rank, target, passive=False):
        """Put (`write`) or Get: the RmaOps started (none for PROC_NULL, for nothing to move,
        or on this rank's own window, where it is a copy)."""
        view, count, datatype = message(origin, not write)
        offset = self._locate(target_rank, target, count, datatype, len(view), passive=passive)
        if offset is None or not view:
            return []
        if target_rank == self._rank:
            if write:
                self._local(offset, len(view))[:] = view
            else:
                view[:] = self._local(offset, len(view))
            return []
        op = self._engine.rdma(self._ranks[target_rank], write, view,
                               self._rmr(target_rank, offset, len(view)))
        self._pending[target_rank].append(op)
        return [op]

    def _accumulate(self, origin, result, target_rank, target, op, passive=False):
        """Accumulate the message `origin` (view, count, datatype); with `result` (a byte
        view), the old values come back into it. The RmaOps started."""
        view, count, datatype = origin
        if result is not None and len(result) != len(view):
            _fail(errors.ERR_TYPE, f"result holds {len(result)} bytes, the origin {len(view)}")
        offset = self._locate(target_rank, target, count, datatype, len(view), same_type=True,
                              passive=passive)
        _check_op(op, datatype)
        if offset is None:
            return []
        return self._acc_messages(target_rank, offset, _op_index(op), datatype, view, result)

    def _acc_messages(self, target_rank, offset, op, datatype, data, result):
        """WIN_ACC messages applying op (an index of _OPS, or _COMPARE_AND_SWAP) with `data`
        at byte `offset` of target_rank's window, in messages of at most WIN_BODY_LIMIT
        bytes (whole elements); with `result`, the old values come back into it. The RmaOps
        started."""
        step = (WIN_BODY_LIMIT - ACC_BODY.size) // datatype.extent * datatype.extent
        head = (op, _TYPE_INDEX[id(datatype.__dict__)], result is not None)
        started = [self._engine.window_message(
            self._ranks[target_rank], WIN_ACC, self._id,
            ACC_BODY.pack(offset + start, *head) + data[start:start + step],
            None if result is None else result[start:start + step])
            for start in range(0, len(data), step)]
        self._pending[target_rank].extend(started)
        return started

    def _locate(self, target_rank, target, count, datatype, nbytes, same_type=False,
                passive=False):
        """The byte offset in target_rank's window of an access of the origin's `nbytes`
        (count of datatype) at `target`; None for PROC_NULL. `passive`: only a lock's epoch
        allows it. Raises what Put lists."""
        self._check_live()
        if target_rank == PROC_NULL:
            return None
        self._check_rank(target_rank)
        self._check_epoch(target_rank, passive)
        disp, tcount, tdatatype = _target_spec(target, count, datatype)
        if disp < 0:
            _fail(errors.ERR_DISP, f"target displacement {disp}")
        if same_type and tdatatype is not datatype:
            _fail(errors.ERR_TYPE, f"the target's datatype {tdatatype.Get_name()} is not the "
                                   f"origin's {datatype.Get_name()}")
        length = tcount * tdatatype.extent
        if length != nbytes:
            _fail(errors.ERR_TYPE, f"the target spec covers {length} bytes, the origin {nbytes}")
        return self._offset(target_rank, disp, length)

    def _offset(self, target_rank, disp, length):
        """The byte offset of `length` bytes at displacement `disp` of target_rank's window.
        MPI.Exception ERR_RMA_RANGE if they are not all in it."""
        rmr, unit = self._targets[target_rank]
        offset = disp * unit
        if offset + length > rmr.segment_length:
            _fail(errors.ERR_RMA_RANGE, f"bytes {offset} to {offset + length} of rank "
                                        f"{target_rank}'s window of {rmr.segment_length}")
        return offset

    def _local(self, offset, length):
        """The byte view of `length` bytes at `offset` of this rank's window memory."""
        return self._memory[offset:offset + length]

    def _check_epoch(self, target_rank, passive=False):
        """MPI.Exception ERR_RMA_SYNC unless an access epoch is open on target_rank (Fence,
        Start, Lock, Lock_all; with `passive`, a lock's only)."""
        if not (self._lock_all or target_rank in self._locks
                or not passive and (self._fence_open or target_rank in (self._started or ()))):
            _fail(errors.ERR_RMA_SYNC, f"no {'passive-target ' if passive else ''}access "
                                       f"epoch is open on rank {target_rank} (Lock or Lock_all"
                                       f"{'' if passive else ', Fence or Start'} first)")

    def _rmr(self, target_rank, offset, length):
        rmr = self._targets[target_rank][0]
        return RmrTriplet(rmr.rmr_context, rmr.target_address + offset, length)

    # Synchronization.

    def Fence(self, assertion=0):
        """MPI_Win_fence: complete this rank's operations, then a barrier over the window's
        communicator, so every operation on every window is complete; opens the next access
        epoch unless `assertion` has MODE_NOSUCCEED. MPI.Exception ERR_WIN."""
        self._check_live()
        self._complete_all()
        self._comm.Barrier()
        self._fence_open = not assertion & MODE_NOSUCCEED

    # General active target: Post and Start, Complete and Wait. Their messages go on the
    # window's own communicator (`_comm`), empty: Post tells each origin of its group that
    # it may access this rank's window (Start waits for that), Complete tells each target
    # that this rank's operations on it are done (Wait waits for that).

    def Post(self, group, assertion=0):
        """MPI_Win_post: an exposure epoch of this rank's window to the processes of `group`
        (each of which may then Start on it); Wait or Test ends it once each has called
        Complete. `assertion` is not needed. TypeError (not a Group); MPI.Exception ERR_WIN,
        ERR_GROUP (GROUP_NULL, or a process not in the window), ERR_RMA_SYNC (an exposure
        epoch is open already)."""
        origins = self._window_ranks(group)
        if self._exposure is not None:
            _fail(errors.ERR_RMA_SYNC, "Post while Post's epoch is open (Wait first)")
        for rank in origins:
            self._comm.Send(b"", rank, POST_TAG)        # (empty: eager, done at once)
        self._exposure = [self._comm.Irecv(bytearray(), rank, COMPLETE_TAG) for rank in origins]

    def Start(self, group, assertion=0):
        """MPI_Win_start: an access epoch on the windows of `group`'s processes; returns once
        each has called Post (MPI lets Start wait for them; progress runs meanwhile, so this
        rank's window serves others). `assertion` is not needed. TypeError (not a Group);
        MPI.Exception ERR_WIN, ERR_GROUP, ERR_RMA_SYNC (an access epoch of Start, Lock or
        Lock_all is open)."""
        targets = self._window_ranks(group)
        if self._started is not None or self._locks or self._lock_all:
            _fail(errors.ERR_RMA_SYNC, "Start while Start's epoch or a lock is open")
        Request.Waitall([self._comm.Irecv(bytearray(), rank, POST_TAG) for rank in targets])
        self._started = frozenset(targets)

    def Complete(self):
        """MPI_Win_complete: complete this rank's operations on Start's targets, tell each
        of them, end the access epoch (without waiting for the targets' Wait).
        MPI.Exception ERR_WIN, ERR_RMA_SYNC (no Start)."""
        self._check_live()
        if self._started is None:
            _fail(errors.ERR_RMA_SYNC, "Complete without Start")
        for rank in sorted(self._started):
            self._complete(rank)
            self._comm.Send(b"", rank, COMPLETE_TAG)
        self._started = None

    def Wait(self):
        """MPI_Win_wait: end Post's exposure epoch once every process of its group has
        called Complete (their operations are then in this rank's window); True.
        MPI.Exception ERR_WIN, ERR_RMA_SYNC (no Post)."""
        Request.Waitall(self._exposed())
        self._exposure = None
        return True

    def Test(self):
        """MPI_Win_test: Wait if every process of Post's group has called Complete (True),
        else False and the epoch stays open. MPI.Exception as Wait."""
        done = Request.Testall(self._exposed())
        if done:
            self._exposure = None
        return done

    def _exposed(self):
        """The receives of Post's epoch; MPI.Exception ERR_WIN, ERR_RMA_SYNC (no Post)."""
        self._check_live()
        if self._exposure is None:
            _fail(errors.ERR_RMA_SYNC, "Wait or Test without Post")
        return self._exposure

    def _window_ranks(self, group):
        """The window's ranks of `group`'s processes. TypeError (not a Group);
        MPI.Exception ERR_WIN, ERR_GROUP (GROUP_NULL, a process not in the window)."""
        self._check_live()
        if not isinstance(group, Group):
            raise TypeError(f"expected a Group, not {type(group).__name__}")
        ranks = group.Translate_ranks(None, self._comm.Get_group())
        if UNDEFINED in ranks:
            _fail(errors.ERR_GROUP, "the group has processes that the window has not")
        return ranks

    def Lock(self, rank, lock_type=LOCK_EXCLUSIVE, assertion=0):
        """MPI_Win_lock: an access epoch on `rank`'s window; returns once the lock is granted
        (the target's progress engine grants it: any MPI call it makes). MPI.Exception
        ERR_WIN, ERR_RANK, ERR_ARG (lock_type), ERR_RMA_SYNC (rank locked already, or
        Lock_all)."""
        self._check_live()
        if rank == PROC_NULL:
            return
        self._check_rank(rank)
        if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
            _fail(errors.ERR_ARG, f"lock_type {lock_type!r}")
        if rank in self._locks or self._lock_all or self._started is not None:
            _fail(errors.ERR_RMA_SYNC, f"rank {rank} is locked already, or Start's epoch is "
                                       f"open")
        self._engine.wait([self._lock_message(WIN_LOCK, rank, lock_type)])
        self._locks[rank] = lock_type

    def Unlock(self, rank):
        """MPI_Win_unlock: complete this rank's operations on `rank`, then release its lock.
        MPI.Exception ERR_WIN, ERR_RANK, ERR_RMA_SYNC (not locked by Lock)."""
        self._check_live()
        if rank == PROC_NULL:
            return
        self._check_rank(rank)
        if rank not in self._locks:
            _fail(errors.ERR_RMA_SYNC, f"rank {rank} is not locked")
        self._complete(rank)
        self._engine.wait([self._lock_message(WIN_UNLOCK, rank, self._locks.pop(rank))])

    def Lock_all(self, assertion=0):
        """MPI_Win_lock_all: a shared lock on every member's window. MPI.Exception ERR_WIN,
        ERR_RMA_SYNC (a lock is held already, or Start's epoch is open)."""
        self._check_live()
        if self._locks or self._lock_all or self._started is not None:
            _fail(errors.ERR_RMA_SYNC, "Lock_all while locks are held or Start's epoch is open")
        self._engine.wait([self._lock_message(WIN_LOCK, r, LOCK_SHARED)
                           for r in range(len(self._ranks))])
        self._lock_all = True

    def Unlock_all(self):
        """MPI_Win_unlock_all: complete every operation, then release Lock_all's locks.
        MPI.Exception ERR_WIN, ERR_RMA_SYNC (no Lock_all)."""
        self._check_live()
        if not self._lock_all:
            _fail(errors.ERR_RMA_SYNC, "Unlock_all without Lock_all")
        self._complete_all()
        self._lock_all = False
        self._engine.wait([self._lock_message(WIN_UNLOCK, r, LOCK_SHARED)
                           for r in range(len(self._ranks))])

    def Flush(self, rank):
        """MPI_Win_flush: complete this rank's operations on `rank` (its Gets' data is here,
        its Puts and Accumulates are in the target's memory). MPI.Exception ERR_WIN,
        ERR_RANK, ERR_RMA_SYNC (no lock's epoch open on `rank`, as MPICH)."""
        self._check_live()
        if rank != PROC_NULL:
            self._check_rank(rank)
            self._check_epoch(rank, passive=True)
            self._complete(rank)

    def Flush_all(self):
        """MPI_Win_flush_all: complete this rank's operations on every target. MPI.Exception
        ERR_WIN, ERR_RMA_SYNC (no lock held, as MPICH)."""
        self._check_passive()
        self._complete_all()

    def Flush_local(self, rank):
        """MPI_Win_flush_local: Flush, as complete at the origin is complete at the target
        here (an RDMA's completion comes once the target's memory has the data, an
        accumulate's once the target applied it). MPI.Exception as Flush."""
        self.Flush(rank)

    def Flush_local_all(self):
        """MPI_Win_flush_local_all: Flush_all (as Flush_local). MPI.Exception as Flush_all."""
        self.Flush_all()

    def Sync(self):
        """MPI_Win_sync: the window's memory is the one RDMA reaches (WIN_UNIFIED), so
        there is nothing to copy; progress runs, so that the accumulates and lock requests
        already come are applied (a rank polling its window with Sync sees them).
        MPI.Exception ERR_WIN, ERR_RMA_SYNC (no lock held, as MPICH)."""
        self._check_passive()
        self._engine.progress()

    def _check_passive(self):
        self._check_live()
        if not (self._locks or self._lock_all):
            _fail(errors.ERR_RMA_SYNC, "no passive-target epoch is open (Lock or Lock_all "
                                       "first)")

    def Free(self):
        """MPI_Win_free (collective): complete this rank's operations, wait for every
        member (so none accesses this window any more), unregister the memory. Any call on
        the window afterwards raises ERR_WIN, and every handle to it is equal to WIN_NULL.
        MPI.Exception ERR_WIN, ERR_RMA_SYNC (a lock is still held, or an epoch of Start or
        Post is open)."""
        self._check_live()
        if self._locks or self._lock_all or self._started is not None \
                or self._exposure is not None:
            _fail(errors.ERR_RMA_SYNC, "Free while locks are held (Unlock first) or an epoch "
                                       "of Start or Post is open (Complete, Wait)")
        self._attrs.clear(self)         # each keyval's delete_fn (ERR_OTHER if one raised)
        self._complete_all()
        self._comm.Barrier()
        self._comm.Free()
        del self._engine.windows[self._id]
        if self._lmr is not None:
            self._lmr.free()
        self._memory = self._lmr = self._shared_parts = None
        self._drop_errhandler()

    def _check_live(self):
        if self._memory is None:
            _fail(errors.ERR_WIN, "the window is WIN_NULL (or freed)")

    _check_errhandler_owner = _check_live

    def _check_rank(self, rank):
        if not isinstance(rank, int) or not 0 <= rank < len(self._ranks):
            _fail(errors.ERR_RANK, f"target rank {rank!r} (the window has {len(self._ranks)})")

    def _lock_message(self, kind, rank, lock_type):
        return self._engine.window_message(self._ranks[rank], kind, self._id,
                                           LOCK_BODY.pack(lock_type == LOCK_EXCLUSIVE))

    def _complete(self, rank):
        pending = self._pending[rank]
        if pending:
            self._engine.wait(pending)
            pending.clear()

    def _complete_all(self):
        for rank in range(len(self._pending)):
            self._complete(rank)

    # The target's side: the engine hands this window's messages here.

    def on_message(self, kind, source, request_id, body):
        """A window message from engine rank `source`: an accumulate, applied and answered
        at once (with the old values if asked), or a lock request, answered once granted,
        or a lock's release."""
        if kind == WIN_ACC:
            offset, op, datatype, fetch = ACC_BODY.unpack_from(body)
            dtype = _TYPES[datatype].dtype
            data = np.frombuffer(body[ACC_BODY.size:], dtype)
            if op == _COMPARE_AND_SWAP:
                data = data.reshape(2, -1)      # the origin, the compare element
            here = np.frombuffer(self._local(offset, data.shape[-1] * dtype.itemsize), dtype)
            old = here.tobytes() if fetch else b""
            if op == _COMPARE_AND_SWAP:
                np.copyto(here, data[0], where=here == data[1])
            else:
                _OPS[op].reduce_local(data, here)
            self._engine.answer(source, request_id, old)
        elif kind == WIN_LOCK:
            self._waiting.append((source, request_id, LOCK_BODY.unpack(body)[0]))
            self._grant()
        else:
            if LOCK_BODY.unpack(body)[0]:
                self._exclusive = False
            else:
                self._shared -= 1
            self._engine.answer(source, request_id)
            self._grant()

    def _grant(self):
        """Grant waiting lock requests in their order of arrival while they are compatible
        with the locks held (a waiting exclusive request holds back later shared ones)."""
        while self._waiting:
            source, request_id, exclusive = self._waiting[0]
            if self._exclusive or exclusive and self._shared:
                return
            self._waiting.popleft()
            if exclusive:
                self._exclusive = True
            else:
                self._shared += 1
            self._engine.answer(source, request_id)


WIN_NULL = Win()
