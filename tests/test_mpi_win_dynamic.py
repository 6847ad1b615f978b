"""Dynamic windows and windows' hints by real launches: Win.Create_dynamic, Attach, Detach
(Put, Get, Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap at absolute addresses,
in fence and lock epochs, to other ranks and to this one, eager and rendezvous sizes, regions
attached after an origin first asked, several regions at once), Win.Get_info, Set_info and
info; the errors. Each rank checks against NumPy; the same program runs under mpi4py + MPICH
and prints the same lines."""

import pytest

from tests.mpi_launch import (FAILS, PIDS, SAY, as_mpi4py, assert_same_as_mpiexec,
                              check_every_rank_agrees, launch, leftovers, needs_mpiexec, pids)

PROGRAM = PIDS + FAILS + """
import os
import numpy as np
from shmdat.mpi import MPI
from shmdat.mpi.engine import EAGER_LIMIT
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
right, left = (rank + 1) % size, (rank - 1) % size
LARGE = EAGER_LIMIT // 8 + 5           # doubles: an RDMA larger than an eager message
checks = 0

win = MPI.Win.Create_dynamic(MPI.INFO_NULL, comm)
assert win.attrs == (0, 0, 1) and win.flavor == MPI.WIN_FLAVOR_DYNAMIC
small = np.full(8, float(rank))
win.Attach(small)
addresses = comm.allgather(MPI.Get_address(small))

# Fence epochs: Put, Get, Accumulate at the right neighbour's addresses.
win.Fence()
win.Put(np.array([100.0 + rank]), right, addresses[right] + 8)
win.Fence()
assert small[1] == 100.0 + left and small[0] == rank
got = np.zeros(3)
win.Get(got, right, [addresses[right], 3, MPI.DOUBLE])
win.Fence()
assert got.tolist() == [right, 100.0 + rank, right]
win.Accumulate(np.array([1.0, 2.0]), right, addresses[right] + 16, MPI.SUM)
win.Fence(MPI.MODE_NOSUCCEED)
assert small[2:4].tolist() == [rank + 1.0, rank + 2.0]
checks += 3

# A region attached after the origins first asked, larger than an eager message; Lock epochs.
large = np.zeros(LARGE)
win.Attach(large)
where = comm.allgather(MPI.Get_address(large))
comm.Barrier()
win.Lock(right, MPI.LOCK_SHARED)
win.Put(np.arange(LARGE, dtype=float) + rank, right, where[right])
win.Unlock(right)
comm.Barrier()
assert (large == np.arange(LARGE) + left).all()
back = np.zeros(LARGE)
win.Lock(left)
win.Get(back, left, where[left])
win.Flush(left)
assert (back == np.arange(LARGE) + (left - 1) % size).all()
old = np.zeros(1)
win.Fetch_and_op(np.array([5.0]), old, left, where[left] + 8 * 3, MPI.SUM)
win.Unlock(left)
assert old[0] == 3 + (left - 1) % size
checks += 3

# Integers: Compare_and_swap, Get_accumulate, every rank on rank 0's counter.
counter = np.zeros(2, np.int64)
win.Attach(counter)
zero = comm.bcast(MPI.Get_address(counter))
comm.Barrier()
win.Lock(0)
mine = np.zeros(1, np.int64)
win.Get_accumulate(np.array([1], np.int64), mine, 0, zero, MPI.SUM)
win.Unlock(0)
win.Lock(0)
swapped = np.zeros(1, np.int64)
win.Compare_and_swap(np.array([rank + 1], np.int64), np.array([0], np.int64), swapped, 0, zero + 8)
win.Unlock(0)
firsts = comm.gather((int(mine[0]), int(swapped[0])))
comm.Barrier()
if rank == 0:
    assert sorted(m for m, _ in firsts) == list(range(size)) and counter[0] == size
    seen = [s for _, s in firsts]       # one rank swapped (saw 0); the others saw its value
    winner = seen.index(0)
    assert counter[1] == winner + 1 and sorted(seen) == [0] + [winner + 1] * (size - 1)
checks += 1

# Errors: an address no region holds (ERR_RMA_RANGE, also past a region's end), Attach on
# another flavor (ERR_RMA_FLAVOR), a read-only region (BufferError), Set_info of INFO_NULL.
win.Lock(right)
checks += fails(MPI.ERR_RMA_RANGE, win.Put, np.zeros(1), right, 8)
checks += fails(MPI.ERR_RMA_RANGE, win.Get, np.zeros(9), right, addresses[right])
checks += fails(MPI.ERR_RMA_RANGE, win.Accumulate, np.zeros(2), right, addresses[right] + 56)
win.Unlock(right)
checks += fails(BufferError, win.Attach, b"read-only")
checks += fails(MPI.ERR_ARG, win.Set_info, MPI.INFO_NULL)
static = MPI.Win.Allocate(8, comm=comm)
checks += fails(MPI.ERR_RMA_FLAVOR, static.Attach, small)
checks += fails(MPI.ERR_RMA_FLAVOR, static.Detach, small)
static.Free()

# Detach: the region is gone (this rank's own accesses see it at once; another origin that
# knew it must not access it any more, as MPI says: the target cannot refuse an RDMA).
comm.Barrier()
win.Detach(small)
win.Lock(rank)
checks += fails(MPI.ERR_RMA_RANGE, win.Put, np.zeros(1), rank, addresses[rank])
win.Unlock(rank)
handle = MPI.Win(win)                  # another handle: the same dynamic window
handle.Detach(large)
win.Detach(counter)
win.Free()
assert handle == MPI.WIN_NULL
checks += fails(MPI.ERR_WIN, handle.Attach, small)
os.write(1, f"rank {rank}: {checks} checks\\n".encode())
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_dynamic_window_against_numpy(tmp_path, n):
    r = launch(tmp_path, n, PROGRAM, timeout=110)
    lines = r.stdout.splitlines()
    r.stdout = "\n".join(line for line in lines if not line.startswith("pid ")) + "\n"
    check_every_rank_agrees(r, n)
    assert leftovers(pids("\n".join(lines))) == []


# What mpi4py + MPICH print too: results at addresses, the hints MPI names (MPICH has more
# keys of its own), MPICH's leniency with Attach and Detach.
COMPARED = """
import os
import numpy as np
from shmdat.mpi import MPI
""" + SAY + """
c = MPI.COMM_WORLD
r, n = c.rank, c.size
KEYS = ("no_locks", "accumulate_ordering", "accumulate_ops", "alloc_shared_noncontig",
        "same_size", "same_disp_unit")

def hints(win):
    info = win.Get_info()
    items = [(k, v) for k, v in info.items() if k in KEYS]
    info.Free()
    return items

given = MPI.Info.Create()
given.Set("accumulate_ordering", "none")
for name, w in [("create", MPI.Win.Create(np.zeros(4), comm=c, info=given)),
                ("allocate", MPI.Win.Allocate(8, comm=c)),
                ("dynamic", MPI.Win.Create_dynamic(given, comm=c))]:
    say(r, name, hints(w))
    info = MPI.Info.Create()
    info.Set("no_locks", "true")
    info.Set("not_a_hint", "kept?")
    w.Set_info(info)
    info.Free()
    say(r, name, "after", hints(w), "not_a_hint" in w.info)
    w.info = MPI.Info.Create()
    say(r, name, "empty", hints(w))
    say(r, name, "INFO_NULL", outcome(lambda: w.Set_info(MPI.INFO_NULL)))
    say(r, name, "Attach", outcome(lambda: w.Attach(bytearray(8))))
    w.Free()
given.Free()
w = MPI.Win.Create_dynamic(MPI.INFO_NULL, c)
m = w.tomemory()
say(r, "attrs", w.attrs, w.flavor, len(m), MPI.Get_address(m))
mem = np.zeros(4) + r
say(r, "detach not attached", outcome(lambda: w.Detach(mem)))
w.Attach(mem)
say(r, "attach twice", outcome(lambda: w.Attach(mem)))
say(r, "attach overlapping", outcome(lambda: w.Attach(mem[1:])))
say(r, "attach read-only", outcome(lambda: w.Attach(b"1234")))
say(r, "attach empty", outcome(lambda: w.Attach(bytearray())))
addr = c.allgather(MPI.Get_address(mem))
w.Fence()
w.Put(np.array([10.0 + r]), (r + 1) % n, addr[(r + 1) % n] + 8)
w.Fence()
say(r, "put", mem.tolist())
got = np.zeros(2)
w.Get(got, (r + 1) % n, [addr[(r + 1) % n], 2, MPI.DOUBLE])
w.Fence()
say(r, "get", got.tolist())
w.Accumulate(np.array([1.0, 2.0]), (r + 1) % n, addr[(r + 1) % n] + 16)
w.Fence()
say(r, "accumulate", mem.tolist())
c.Barrier()                 # (no Fetch_and_op before every rank has printed)
w.Lock((r + 1) % n)
res = np.zeros(1)
w.Fetch_and_op(np.array([5.0]), res, (r + 1) % n, addr[(r + 1) % n] + 24)
w.Unlock((r + 1) % n)
c.Barrier()
say(r, "fetch_and_op", res.tolist(), mem.tolist())
say(r, "detach a part", outcome(lambda: w.Detach(mem[1:])))
w.Detach(mem)
say(r, "detach again", outcome(lambda: w.Detach(mem)))
w.Free()
"""


@needs_mpiexec
@pytest.mark.parametrize("n", [1, 2, 3])
def test_dynamic_window_and_hints_as_mpi4py_with_mpich(tmp_path, n):
    assert_same_as_mpiexec(tmp_path, n, as_mpi4py(COMPARED))
