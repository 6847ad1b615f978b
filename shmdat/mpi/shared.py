"""Memory shared by the ranks of one node: `Comm.Split_type` (MPI_Comm_split_type) and the
shared windows, `Win.Allocate_shared` and `Win.Shared_query`, with which ranks read and
write each other's window memory by plain loads and stores.

A shared window is one memfd made by the communicator's rank 0: the others open it
through /proc/<pid>/fd/<fd> (the same user: what /proc lets through) and map it, and every
rank's part is a slice of the one mapping, in rank order, as MPI's default contiguous
layout. A memfd has no name, so nothing can be left behind in /dev/shm, whatever happens
to the ranks; the mapping lives until its last view is gone. Each rank's part is also an
LMR, as any window's memory: Put, Get, Accumulate and the synchronisation calls work on a
shared window as on the others. Defined here, where the node is known, and set on Comm and
Win (as topology.py sets Create_cart on Comm).
"""

import mmap
import operator
import os
import socket

import numpy as np

from . import errors
from .buffer import over
from .comm import Comm
from .group import UNDEFINED
from .info import INFO_NULL
from .matching import PROC_NULL
from .win import WIN_FLAVOR_SHARED, WINDOW_PRIVILEGES, Win, _check_disp_unit, _check_size, _fail

# MPICH's values, as mpi4py over MPICH has them.
COMM_TYPE_SHARED, COMM_TYPE_HW_GUIDED, COMM_TYPE_HW_UNGUIDED, COMM_TYPE_RESOURCE_GUIDED = 1, 2, 3, 4
HW_RESOURCE_TYPE, SHARED_MEMORY = "mpi_hw_resource_type", "mpi_shared_memory"


def _node():
    """What two processes share when they can share memory: the machine (its name and this
    boot) and the pid namespace (/proc/<pid> of one is the other's)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return socket.gethostname(), boot, os.stat("/proc/self/ns/pid").st_ino


NODE = _node()


def _resource(split_type, info):
    """Whether a guided split asks for the one hardware resource shmdat.mpi knows: the
    node's shared memory (info's mpi_hw_resource_type)."""
    return info is not None and info != INFO_NULL and info.Get(HW_RESOURCE_TYPE) == SHARED_MEMORY


def split_type(self, split_type, key=0, info=INFO_NULL):
    """MPI_Comm_split_type (collective): COMM_TYPE_SHARED gives one communicator per node (the
    ranks that can share memory), ordered by (key, rank here); COMM_TYPE_HW_GUIDED and
    COMM_TYPE_RESOURCE_GUIDED the same where `info` sets mpi_hw_resource_type to
    mpi_shared_memory (else COMM_NULL); COMM_TYPE_HW_UNGUIDED COMM_NULL (shmdat.mpi knows no
    resource smaller than the node); UNDEFINED COMM_NULL. TypeError for a type or key that is
    not an int, MPI.Exception ERR_ARG for an unknown type."""
    split_type = operator.index(split_type)
    if split_type == COMM_TYPE_SHARED:
        node = NODE
    elif split_type in (COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED):
        node = NODE if _resource(split_type, info) else None
    elif split_type in (COMM_TYPE_HW_UNGUIDED, UNDEFINED):
        node = None
    else:
        raise errors.Exception(errors.ERR_ARG, f"Split_type: no split type {split_type}")
    nodes = self.allgather(node)
    return self.Split(UNDEFINED if node is None else nodes.index(node), key)


def allocate_shared(cls, size, disp_unit=1, info=INFO_NULL, comm=None):
    """MPI_Win_allocate_shared (collective over `comm`, None: COMM_SELF): a window over `size`
    new bytes per rank, every rank's part in one memory all of them map, contiguous in rank
    order; tomemory() gives this rank's part, Shared_query any rank's. MPI.Exception
    ERR_SIZE, ERR_DISP, ERR_RMA_SHARED (the ranks are not all on one node, or the memory
    could not be shared: raised on every rank alike)."""
    _check_size(size)
    _check_disp_unit(disp_unit)
    comm = cls._over(comm)
    members = comm.allgather((NODE, size, disp_unit))
    if any(node != NODE for node, _, _ in members):
        _fail(errors.ERR_RMA_SHARED, "Allocate_shared over ranks of more than one node")
    offsets = np.cumsum([0] + [n for _, n, _ in members]).tolist()
    mapping = _map_shared(comm, max(offsets[-1], 1))
    memory = mapping[offsets[comm.rank]:offsets[comm.rank + 1]]
    engine = comm._engine
    lmr = engine.ia.lmr_create(engine.pz, np.frombuffer(memory, np.uint8),
                               WINDOW_PRIVILEGES) if size else None
    win = cls._open(memory, lmr, disp_unit, comm, WIN_FLAVOR_SHARED)
    win._shared_parts = [(mapping[a:b], unit) for a, b, (_, _, unit) in zip(offsets, offsets[1:], members)]
    return win


def _map_shared(comm, length):
    """`length` bytes every member of `comm` maps (collective): a memfd of rank 0's, which
    the others open through /proc. A byte memoryview of the mapping."""
    fd = error = None
    try:
        if comm.rank == 0:
            fd = os.memfd_create("shmdat.mpi.win", os.MFD_CLOEXEC)
            os.ftruncate(fd, length)
            where = (os.getpid(), fd)
        else:
            where = None
    except OSError as e:
        where = error = str(e)          # (told to the others in place of the fd)
    where = comm.bcast(where, root=0)
    if comm.rank != 0 and not isinstance(where, str):
        try:
            fd = os.open(f"/proc/{where[0]}/fd/{where[1]}", os.O_RDWR | os.O_CLOEXEC)
        except OSError as e:
            error = str(e)
    try:
        mapping = None if error is not None or isinstance(where, str) \
            else memoryview(mmap.mmap(fd, length))
    except OSError as e:
        error = str(e)
    finally:
        failed = [e for e in comm.allgather(error) if e is not None]   # (rank 0's fd open till here)
        if fd is not None:
            os.close(fd)
    if failed or isinstance(where, str):
        _fail(errors.ERR_RMA_SHARED, f"the window's memory could not be shared: "
                                     f"{failed[0] if failed else where}")
    return mapping


def shared_query(self, rank):
    """MPI_Win_shared_query: (memory, disp_unit) of `rank`'s part of a shared window (an
    MPI.buffer, as tomemory's), which this rank reads and writes directly; PROC_NULL: the
    first part that is not empty. On a window of another flavor, whose memory is not
    shared, an empty memory (MPI 4.1). MPI.Exception ERR_WIN, ERR_RANK."""
    self._check_live()
    if rank != PROC_NULL:
        self._check_rank(rank)
    if self._shared_parts is None:
        memory, disp_unit = _EMPTY, (0 if rank == PROC_NULL else self._targets[rank][1])
    elif rank == PROC_NULL:
        rank = next((r for r, (memory, _) in enumerate(self._shared_parts) if len(memory)), None)
        memory, disp_unit = (_EMPTY, 0) if rank is None else self._shared_parts[rank]  # (0: MPICH's)
    else:
        memory, disp_unit = self._shared_parts[rank]
    return over(memory, self, None if len(memory) else 0), disp_unit


_EMPTY = memoryview(bytearray())


Comm.Split_type = split_type
Win.Allocate_shared = classmethod(allocate_shared)
Win.Shared_query = shared_query
