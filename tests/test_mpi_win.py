"""shmdat.mpi's one-sided Win by real launches at N = 1, 2, 3, 4: Put, Get, Accumulate and
Get_accumulate in Fence epochs (small and large, datatypes, target specs, each target's
disp_unit), Allocate, a COMM_SELF window, exclusive and shared locks with contending origins
(counters that are exact only if the locks exclude and accumulates are atomic), a target
blocked in a receive serving lock requests, and the errors. The same program, its import
aside, runs under mpi4py + MPICH and must print the same lines (where MPICH checks nothing,
the checks are shmdat's only)."""

import shutil
import subprocess
import sys

import pytest

from tests.mpi_launch import FAILS, TIMEOUT, check_every_rank_agrees, env, launch, write

# Each program runs on shmdat.mpi, or with the argument "mpi4py" on mpi4py (under mpiexec).
HEAD = FAILS + """
import os, sys
import numpy as np
if sys.argv[1:] == ["mpi4py"]:
    from mpi4py import MPI
else:
    from shmdat.mpi import MPI
SHMDAT = MPI.__name__.startswith("shmdat")
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
"""

PROGRAM = HEAD + """
right, left = (rank + 1) % size, (rank - 1) % size
checks = 0
# An origin buffer must live until its operation completes (Fence, Flush, Unlock): MPICH
# reads it only then, so every origin here is named until its epoch ends.


# Fence epochs on a Create window of int64, disp_unit 8: Put, Get, Accumulate.
mem = np.zeros(4 * size, np.int64)
win = MPI.Win.Create(mem, disp_unit=8, comm=comm)
win.Fence()
mine = np.arange(4, dtype=np.int64) + 10 * rank
win.Put(mine, right, 4 * rank)
win.Fence()
assert mem[4 * left:4 * left + 4].tolist() == [10 * left + i for i in range(4)], mem
got = np.zeros(2, np.int64)
win.Get(got, right, (4 * rank + 1, 2, MPI.INT64_T))     # what this rank put there
win.Fence()
assert got.tolist() == [10 * rank + 1, 10 * rank + 2], got
ones, hundreds = np.full(4 * size, rank + 1, np.int64), np.full(2, 100, np.int64)
win.Accumulate(ones, 0, op=MPI.SUM)
win.Accumulate([hundreds, MPI.INT64_T], right, [1])   # (disp,): the origin's count and type
win.Fence()
want = np.zeros(4 * size, np.int64)
want[4 * left:4 * left + 4] = np.arange(4) + 10 * left
want[1:3] += 100
if rank == 0:
    want += size * (size + 1) // 2
assert (mem == want).all(), (mem, want)
checks += 4

# Large: a Put and a Get of 3 MB, an Accumulate of many window messages; MAX and REPLACE.
n = 3 << 17
big = np.zeros(n, np.float64)
bwin = MPI.Win.Create(big, comm=comm, disp_unit=8)
bwin.Fence()
mine = np.arange(n, dtype=np.float64) * (rank + 1)
bwin.Put(mine, right)
bwin.Fence()
assert (big == np.arange(n) * (left + 1)).all()
back = np.zeros(n, np.float64)
bwin.Get(back, left)
bwin.Fence()
assert (back == np.arange(n) * (((left - 1) % size) + 1)).all()
bwin.Fence()
k = 40000        # about 20 window messages
mine = (k - np.arange(k)) * (rank + 1.0) * size
bwin.Accumulate(mine, 0, (7, k, MPI.DOUBLE), op=MPI.MAX)
bwin.Fence()
if rank == 0:       # the origins win the first half, the window the second
    assert (big[7:7 + k] == np.maximum(np.arange(7, 7 + k), (k - np.arange(k)) * size) * size).all()
mine = np.full(3, -1.0)
bwin.Accumulate(mine, right, 2, op=MPI.REPLACE)
bwin.Fence()
assert big[2:5].tolist() == [-1.0] * 3
bwin.Free()
checks += 5

# Datatypes and each target's disp_unit: 4 bytes on even ranks, 8 on odd ones.
f32 = np.zeros(8, np.float32)
unit = 4 if rank % 2 == 0 else 8
fwin = MPI.Win.Create(f32, disp_unit=unit, comm=comm)
fwin.Fence()
mine = np.array([rank + 0.5], np.float32)
fwin.Put([mine, MPI.FLOAT], right, 1)
fwin.Fence()
where, at = unit // 4, 3 * unit // 4       # disp 1 and disp 3 here
assert f32[where] == left + 0.5, f32      # (the next epoch's accumulates may land already)
mine = np.full(2, 2.0, np.float32)
fwin.Accumulate([mine, 2, MPI.FLOAT], right, (3, 2, MPI.FLOAT))
fwin.Fence()
assert f32[at:at + 2].tolist() == [2.0, 2.0] and f32.sum() == left + 4.5, f32
fwin.Free()
checks += 2

# Get_accumulate: the old values come back; NO_OP only fetches.
fwin = MPI.Win.Allocate(8 * (size + 3), disp_unit=8, comm=comm)
here = np.frombuffer(fwin.tomemory(), np.int64)
here[:] = 0
fwin.Fence()
old = np.zeros(1, np.int64)
mine = np.array([rank + 1], np.int64)
fwin.Get_accumulate(mine, old, 0, 0, op=MPI.SUM)
fwin.Fence()
olds = sorted(comm.allgather(int(old[0])))    # the sums before each: 0 first, all differ
assert olds[0] == 0 and len(set(olds)) == size, olds
assert rank != 0 or here[0] == size * (size + 1) // 2, here
fetched = np.zeros(1, np.int64)
mine = np.zeros(1, np.int64)
fwin.Get_accumulate(mine, fetched, 0, 0, op=MPI.NO_OP)
fwin.Fence()
assert fetched[0] == size * (size + 1) // 2, fetched
checks += 2

# Exclusive locks with contending origins: a read-modify-write by Get, Flush, Put is exact
# only if the lock excludes; then Accumulate under Lock_all (shared) is exact only if
# accumulates are atomic. The target, rank 0, contends too.
ROUNDS = 10
fwin.Fence(MPI.MODE_NOSUCCEED)
for _ in range(ROUNDS):
    fwin.Lock(0, MPI.LOCK_EXCLUSIVE)
    value = np.zeros(1, np.int64)
    fwin.Get(value, 0, 1)
    fwin.Flush(0)
    value += 1
    fwin.Put(value, 0, 1)
    fwin.Unlock(0)
for _ in range(ROUNDS):
    fwin.Lock_all()
    one = np.ones(1, np.int64)
    fwin.Accumulate(one, 0, 2)
    fwin.Unlock_all()
comm.Barrier()
fwin.Lock(0, MPI.LOCK_SHARED)          # every rank at once: shared
counters = np.zeros(2, np.int64)
fwin.Get(counters, 0, 1)
fwin.Unlock(0)
assert counters.tolist() == [size * ROUNDS] * 2, counters
checks += 1

# A target blocked in a receive serves lock requests: rank 0 waits for a message from every
# other rank, each of which locks rank 0's window, puts, unlocks, and only then sends.
comm.Barrier()
if rank == 0:
    for _ in range(size - 1):
        comm.recv(source=MPI.ANY_SOURCE, tag=7)
    fwin.Lock(0)
    assert here[1:size].tolist() == [r * 11 for r in range(1, size)], here
    fwin.Unlock(0)
else:
    fwin.Lock(0)
    mine = np.array([rank * 11], np.int64)
    fwin.Put(mine, 0, rank)
    fwin.Unlock(0)
    comm.send(None, dest=0, tag=7)
checks += 1

# A window over COMM_SELF (mpi4py's default comm): this rank alone.
alone = np.zeros(3, np.int32)
swin = MPI.Win.Create(alone)
assert MPI.Win.Create(np.zeros(1), comm=MPI.COMM_SELF).Free() is None
swin.Fence()
mine = np.array([1, 2], np.int32)
swin.Put(mine, 0, 4)
swin.Fence()
mine = np.array([5], np.int32)
swin.Accumulate(mine, 0, 4, op=MPI.SUM)
swin.Fence()
assert alone.tolist() == [0, 6, 2], alone
checks += 1 + fails(MPI.ERR_RANK, swin.Put, np.zeros(1, np.int32), 1)
swin.Free()

# Errors MPICH reports as well.
checks += fails(MPI.ERR_RANK, fwin.Put, np.zeros(1, np.int64), size)
checks += fails(MPI.ERR_RMA_SYNC, fwin.Put, np.zeros(1, np.int64), 0)     # no epoch open
checks += fails(MPI.ERR_RMA_SYNC, fwin.Unlock, 0)
checks += fails(MPI.ERR_ARG, fwin.Lock, 0, 99)
fwin.Lock(right, MPI.LOCK_SHARED)
checks += fails(MPI.ERR_RMA_SYNC, fwin.Lock, right)
checks += fails(MPI.ERR_DISP, fwin.Get, np.zeros(1, np.int64), right, -1)
fwin.Put(np.zeros(1, np.int64), MPI.PROC_NULL)                      # PROC_NULL: nothing
if SHMDAT:    # MPICH does not check these (an access out of the window is undefined there)
    fails(MPI.ERR_RMA_RANGE, fwin.Put, np.zeros(2, np.int64), right, size + 2)
    fails(MPI.ERR_RMA_RANGE, fwin.Get, np.zeros(1, np.int64), right, (size + 3, 1, MPI.INT64_T))
    fails(MPI.ERR_TYPE, fwin.Put, np.zeros(2, np.int64), right, (0, 1, MPI.INT64_T))
    fails(MPI.ERR_TYPE, fwin.Accumulate, np.zeros(2, np.int64), right, (0, 4, MPI.INT))
    fails(MPI.ERR_OP, fwin.Accumulate, np.zeros(1), right, 0, op=MPI.BAND)
    fails(MPI.ERR_RMA_SYNC, fwin.Free)                                # a lock is held
    fails(BufferError, MPI.Win.Create, b"read-only", comm=comm)
    fails(MPI.ERR_SIZE, MPI.Win.Allocate, -1, comm=comm)
    fails(MPI.ERR_DISP, MPI.Win.Allocate, 8, 0, comm=comm)
fwin.Unlock(right)
fwin.Free()
checks += fails(MPI.ERR_WIN, fwin.Put, np.zeros(1, np.int64), 0)
checks += fails(MPI.ERR_WIN, fwin.Fence)
checks += fails(MPI.ERR_WIN, fwin.Free)
win.Free()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())     # shmdat's own checks not counted
"""


def _lines(stdout):
    return sorted(stdout.splitlines())


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_win_under_shmdat_run(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, PROGRAM, timeout=100), n)


MPIEXEC = shutil.which("mpiexec")


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (mpi4py + MPICH) installed")
def test_the_same_program_under_mpi4py_and_mpich(tmp_path):
    pytest.importorskip("mpi4py")
    _same_under_mpich(tmp_path, PROGRAM)


# Attributes, group, name, WIN_NULL and handles; the lines printed (one write per rank, so
# that ranks' lines do not interleave) are compared with MPICH's.
ATTRIBUTES = HEAD + """
import pickle
out = []
mem = np.zeros(5 + rank, np.int32)
win = MPI.Win.Create(mem, 4, comm=comm)
assert win.Get_attr(MPI.WIN_BASE) == mem.ctypes.data and win.attrs[0] == mem.ctypes.data
assert win.attrs[1:] == (4 * (5 + rank), 4) == (win.Get_attr(MPI.WIN_SIZE),
                                                win.Get_attr(MPI.WIN_DISP_UNIT))
out.append(("create", win.flavor == win.Get_attr(MPI.WIN_CREATE_FLAVOR) == MPI.WIN_FLAVOR_CREATE,
            win.model == win.Get_attr(MPI.WIN_MODEL) == MPI.WIN_UNIFIED))
group = win.Get_group()
assert MPI.Group.Compare(group, comm.Get_group()) == MPI.IDENT
assert (group.size, group.rank) == (size, rank) == (win.group_size, win.group_rank)
group.Free()
out.append(("name", win.Get_name(), MPI.WIN_NULL.Get_name()))
win.name = "mine"
out.append(("named", win.name))
out.append(("null", bool(MPI.WIN_NULL), MPI.Win() == MPI.WIN_NULL, MPI.Win() is MPI.WIN_NULL,
            bool(win), win == MPI.WIN_NULL, win != MPI.WIN_NULL, MPI.Win(win) == win))
out.append(("pickle", pickle.loads(pickle.dumps(MPI.WIN_NULL)) is MPI.WIN_NULL))
fails(ValueError, pickle.dumps, win)
fails(TypeError, MPI.Win, 3)
fails(MPI.ERR_KEYVAL, win.Get_attr, MPI.TAG_UB)
alloc = MPI.Win.Allocate(8 * (rank + 1), 8, comm=MPI.COMM_SELF)
out.append(("allocate", alloc.flavor == MPI.WIN_FLAVOR_ALLOCATE, alloc.attrs[1:],
            alloc.group_size, alloc.group_rank))
assert alloc.attrs[0] == np.frombuffer(alloc.tomemory(), np.uint8).ctypes.data
alloc.Free()
bottom = MPI.Win.Create(MPI.BOTTOM, 1, MPI.INFO_NULL, MPI.COMM_SELF)
out.append(("bottom", bottom.attrs))
bottom.Free()
win.Free()
out.append(("freed", win == MPI.WIN_NULL, bool(win), win.Get_name()))
for call in (win.Fence, win.Free, win.Get_group, MPI.WIN_NULL.Get_group):
    fails(MPI.ERR_WIN, call)
fails(MPI.ERR_WIN, win.Get_attr, MPI.WIN_SIZE)
if SHMDAT:    # mpi4py's copy keeps the freed C handle; here it names the window's state
    copy = MPI.Win.Create(np.zeros(1), comm=comm)
    other = MPI.Win(copy)
    copy.Free()
    assert other == MPI.WIN_NULL and not other
os.write(1, "".join(" ".join(map(str, (rank, *line))) + "\\n" for line in out).encode())
"""


@pytest.mark.parametrize("n", [1, 3])
def test_attributes_group_name_and_win_null(tmp_path, n):
    r = launch(tmp_path, n, ATTRIBUTES)
    assert r.returncode == 0, r.stderr
    assert len(_lines(r.stdout)) == 8 * n and r.stderr == ""


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (mpi4py + MPICH) installed")
def test_attributes_the_same_under_mpi4py_and_mpich(tmp_path):
    pytest.importorskip("mpi4py")
    _same_under_mpich(tmp_path, ATTRIBUTES)


def _same_under_mpich(tmp_path, program):
    ours = launch(tmp_path, 3, program, timeout=100)
    theirs = subprocess.run([MPIEXEC, "-n", "3", sys.executable, write(tmp_path, program),
                             "mpi4py"], capture_output=True, text=True, timeout=TIMEOUT,
                            env=env())
    assert theirs.returncode == 0, theirs.stderr
    assert ours.returncode == 0, ours.stderr
    assert _lines(ours.stdout) != [] and _lines(ours.stdout) == _lines(theirs.stdout)


# Fetch_and_op, Compare_and_swap, the request-based calls, Flush_local, Sync: results that
# are exact only if each operation is atomic at the target, checked against numpy.
ATOMICS = HEAD + """
right = (rank + 1) % size
ROUNDS = 20
win = MPI.Win.Allocate(8 * 16, 8, comm=comm)
here = np.frombuffer(win.tomemory(), np.int64)
here[:] = 0
here[5] = 1000
comm.Barrier()

# Fetch_and_op SUM on rank 0's counter from every rank at once: the old values are the
# numbers 0 .. size * ROUNDS - 1, each once, only if every fetch-and-add is atomic.
win.Lock_all()
olds, one = [], np.ones(1, np.int64)
for _ in range(ROUNDS):
    old = np.zeros(1, np.int64)
    win.Fetch_and_op(one, old, 0, 0)
    win.Flush_local(0)
    olds.append(int(old[0]))
every = sorted(sum(comm.allgather(olds), []))
assert every == list(range(size * ROUNDS)), every
# MAX, REPLACE, NO_OP (a fetch): rank 0's element 5 ends as numpy says.
old = np.zeros(1, np.int64)
win.Fetch_and_op(np.array([1000 + rank], np.int64), old, 0, 5, op=MPI.MAX)
win.Flush_all()
comm.Barrier()
win.Fetch_and_op(np.zeros(1, np.int64), old, 0, 5, op=MPI.NO_OP)
win.Flush_local_all()
assert old[0] == np.max(1000 + np.arange(size)), old
comm.Barrier()
# Compare_and_swap: every rank tries to put rank + 1 where 0 is; exactly one wins.
seen = np.full(1, -1, np.int64)
win.Compare_and_swap(np.array([rank + 1], np.int64), np.zeros(1, np.int64), seen, 0, 1)
win.Flush(0)
seen = comm.allgather(int(seen[0]))
winner = [r for r in range(size) if seen[r] == 0]
assert len(winner) == 1 and all(s in (0, winner[0] + 1) for s in seen), seen
win.Sync()
win.Unlock_all()
comm.Barrier()
if rank == 0:
    assert here[0] == size * ROUNDS and here[1] == winner[0] + 1, here
comm.Barrier()

# Requests: Rput and Rget to the right neighbour under an exclusive lock, Raccumulate and
# Rget_accumulate on rank 0 under shared locks; Wait, Waitall, Test after Flush.
win.Lock(right)
mine = np.arange(3, dtype=np.int64) + 10 * rank
request = win.Rput(mine, right, 8)
request.Wait()
back = np.zeros(3, np.int64)
MPI.Request.Waitall([win.Rget(back, right, (8, 3, MPI.INT64_T))])
assert back.tolist() == mine.tolist(), back
request = win.Rput(np.array([rank], np.int64), right, 11)
win.Flush(right)
assert request.Test()
win.Unlock(right)
comm.Barrier()
left = (rank - 1) % size
assert here[8:12].tolist() == [10 * left, 10 * left + 1, 10 * left + 2, left], here
comm.Barrier()
win.Lock(0, MPI.LOCK_SHARED)
adds = np.full(2, rank + 1, np.int64)
request = win.Raccumulate(adds, 0, 12)
olds = np.zeros(2, np.int64)
fetch = win.Rget_accumulate(np.zeros(2, np.int64), olds, 0, (14, 2), op=MPI.NO_OP)
MPI.Request.Waitall([request, fetch])
null = win.Rput(None, MPI.PROC_NULL)
null.Wait()
win.Unlock(0)
comm.Barrier()
if rank == 0:
    assert here[12:14].tolist() == [size * (size + 1) // 2] * 2 and olds.tolist() == [0, 0]

# Errors, as MPICH: no passive epoch open for the request-based calls, flushes and Sync.
checks = 0
zero = np.zeros(1, np.int64)
checks += fails(MPI.ERR_RMA_SYNC, win.Rput, zero, 0)
checks += fails(MPI.ERR_RMA_SYNC, win.Rget_accumulate, zero, zero, 0)
checks += fails(MPI.ERR_RMA_SYNC, win.Fetch_and_op, zero, zero, 0)
for call, *args in ((win.Flush_local, 0), (win.Flush_local_all,), (win.Sync,)):
    checks += fails(MPI.ERR_RMA_SYNC, call, *args)
win.Fence()
checks += fails(MPI.ERR_RMA_SYNC, win.Flush, 0)      # a Fence epoch is no lock's
checks += fails(MPI.ERR_RMA_SYNC, win.Flush_local_all)
win.Fetch_and_op(zero, np.zeros(1, np.int64), 0)     # atomics in a Fence epoch too
win.Fence()
if SHMDAT:     # (MPICH lets them run in a Fence epoch; MPI does not): not counted
    fails(MPI.ERR_RMA_SYNC, win.Rget, zero, 0)
    fails(MPI.ERR_RMA_SYNC, win.Raccumulate, zero, 0)
win.Fence(MPI.MODE_NOSUCCEED)
win.Lock(0)
checks += fails(ValueError, win.Fetch_and_op, np.zeros(2, np.int64), zero, 0)
checks += fails(ValueError, win.Fetch_and_op, zero, np.zeros(1, np.int32), 0)
checks += fails(ValueError, win.Compare_and_swap, zero, zero, np.zeros(2, np.int64), 0)
checks += fails(ValueError, win.Compare_and_swap, zero, np.zeros(1, np.int32), zero, 0)
checks += fails(MPI.ERR_TYPE, win.Compare_and_swap, np.zeros(1), np.zeros(1), np.zeros(1), 0)
checks += fails(MPI.ERR_OP, win.Fetch_and_op, zero, zero, 0, 0, MPI.Op.Create(lambda a, b, t: None))
win.Unlock(0)
win.Free()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atomics_and_requests(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, ATOMICS, timeout=100), n)


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (mpi4py + MPICH) installed")
def test_atomics_the_same_under_mpi4py_and_mpich(tmp_path):
    pytest.importorskip("mpi4py")
    _same_under_mpich(tmp_path, ATOMICS)


# General active target (Post, Start, Complete, Wait, Test) with groups: a ring of epochs,
# every rank's accumulates on rank 0 in one epoch, Test before and after the origins'
# Complete, and the errors.
PSCW = HEAD + """
right, left = (rank + 1) % size, (rank - 1) % size
win = MPI.Win.Allocate(8 * (size + 2), 8, comm=comm)
here = np.frombuffer(win.tomemory(), np.int64)
here[:] = 0
group = win.Get_group()
comm.Barrier()
checks = 0

# A ring: each rank exposes its window to its left neighbour and puts into its right one's.
for step in range(5):
    win.Post(group.Incl([left]))
    win.Start(group.Incl([right]))
    mine = np.array([100 * rank + step], np.int64)
    win.Put(mine, right, rank)
    win.Complete()
    win.Wait()
    assert here[left] == 100 * left + step, (here, step)      # in place once Wait returns
checks += 1

# Every rank accumulates into rank 0, which exposes its window to all of them at once.
if rank == 0:
    win.Post(group)
win.Start(group.Incl([0]))
mine = np.array([rank + 1], np.int64)
win.Accumulate(mine, 0, size)
win.Complete()
if rank == 0:
    win.Wait()
    assert here[size] == size * (size + 1) // 2, here
checks += 1

# Test: False while the origin has not called Complete (it waits in the Barrier); Wait ends
# the epoch once it has.
if size > 1:
    if rank == 0:
        win.Start(group.Excl([0]))
        comm.Barrier()
        win.Complete()
        comm.Barrier()
    else:
        win.Post(group.Incl([0]))
        assert win.Test() is False
        comm.Barrier()
        comm.Barrier()
        win.Wait()
checks += 1

# Empty groups open and close epochs with nothing to wait for.
win.Start(MPI.GROUP_EMPTY)
win.Complete()
win.Post(MPI.GROUP_EMPTY)
assert win.Test() is True
checks += 1

# Errors, as MPICH.
checks += fails(MPI.ERR_RMA_SYNC, win.Complete)
checks += fails(MPI.ERR_RMA_SYNC, win.Wait)
checks += fails(MPI.ERR_RMA_SYNC, win.Test)
checks += fails(MPI.ERR_GROUP, win.Start, MPI.GROUP_NULL)
checks += fails(TypeError, win.Post, 3)
me = group.Incl([rank])
win.Post(me)
checks += fails(MPI.ERR_RMA_SYNC, win.Post, me)
win.Start(me)
checks += fails(MPI.ERR_RMA_SYNC, win.Start, me)
checks += fails(MPI.ERR_RMA_SYNC, win.Lock, rank)
if size > 1:
    checks += fails(MPI.ERR_RMA_SYNC, win.Put, np.zeros(1, np.int64), right)  # not started
mine = np.array([7], np.int64)
win.Put(mine, rank, size + 1)
if SHMDAT:     # (not counted: MPICH's failed Free leaves the window unusable)
    fails(MPI.ERR_RMA_SYNC, win.Free)
win.Complete()
win.Wait()
assert here[size + 1] == 7, here
win.Lock(rank)
checks += fails(MPI.ERR_RMA_SYNC, win.Start, me)
win.Unlock(rank)
if SHMDAT and size > 1:     # a process outside the window: ERR_GROUP
    alone = MPI.Win.Allocate(8, comm=MPI.COMM_SELF)
    fails(MPI.ERR_GROUP, alone.Post, comm.Get_group())
    alone.Free()
win.Free()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_post_start_complete_wait(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, PSCW, timeout=100), n)


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (mpi4py + MPICH) installed")
def test_post_start_the_same_under_mpi4py_and_mpich(tmp_path):
    pytest.importorskip("mpi4py")
    _same_under_mpich(tmp_path, PSCW)


# A window outlives the communicator it was made over (MPI lets a program free that one
# first, as mpi4py's own tests do in their tearDown): the window has a communicator of its own.
OUTLIVES = HEAD + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size
checks = 0
for make in (lambda c: MPI.Win.Allocate(8, 8, comm=c),
             lambda c: MPI.Win.Create(np.zeros(1, np.int64), 8, comm=c),
             lambda c: MPI.Win.Allocate_shared(8, 8, comm=c)):
    comm = world.Dup()
    win = make(comm)
    comm.Free()
    win.Fence()
    win.Put(np.array([rank + 1], np.int64), (rank + 1) % size)
    win.Fence()
    got = np.frombuffer(win.tomemory(), np.int64)[0]
    assert got == (rank - 1) % size + 1, got
    assert win.Get_group().Get_size() == size
    win.Free()
    checks += 1
os.write(1, f"rank {rank}: {checks} checks\\n".encode())
"""


@pytest.mark.parametrize("n", [1, 3])
def test_a_window_outlives_its_communicator(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, OUTLIVES), n)


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (mpi4py + MPICH) installed")
def test_a_window_outlives_its_communicator_under_mpi4py_and_mpich(tmp_path):
    pytest.importorskip("mpi4py")
    _same_under_mpich(tmp_path, OUTLIVES)
