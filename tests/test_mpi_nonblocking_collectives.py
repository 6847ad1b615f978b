"""Non-blocking collectives (Ibarrier, Ibcast, Ireduce, Iallreduce, Igather(v), Iscatter(v),
Iallgather(v), Ialltoall(v), Ireduce_scatter_block, Iscan, Iexscan): the same answers as the
blocking calls, several under way at once with a blocking one between, and progress while a
rank waits on something else (a rank blocked in a receive does not hold up the others'
Wait). The program runs unchanged under `shmdat run --mpi4py` and under MPICH's mpiexec."""

import pytest

from tests import mpi_launch

PROGRAM = mpi_launch.FAILS.replace("def fails", "from mpi4py import MPI\n\n\ndef fails") + """
import os

import numpy as np

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = 0

comm.Ibarrier().Wait()
for root in range(size):
    buf = np.arange(5.0) if rank == root else np.zeros(5)
    comm.Ibcast(buf, root).Wait()
    assert buf.tolist() == list(range(5)), buf
    out = np.zeros(3, "i")
    comm.Ireduce(np.full(3, rank + 1, "i"), out, MPI.SUM, root).Wait()
    assert rank != root or out.tolist() == [size * (size + 1) // 2] * 3, out
    gathered = np.zeros(size, "i") if rank == root else None
    comm.Igather(np.array([rank * 3], "i"), gathered, root).Wait()
    assert rank != root or gathered.tolist() == [r * 3 for r in range(size)]
    got = np.zeros(2)
    comm.Iscatter(np.arange(2.0 * size) if rank == root else None, got, root).Wait()
    assert got.tolist() == [2.0 * rank, 2.0 * rank + 1], got
    # v-variants: rank r's block has r + 1 elements.
    counts = [r + 1 for r in range(size)]
    whole = np.zeros(sum(counts), "i") if rank == root else None
    comm.Igatherv(np.full(rank + 1, rank, "i"), [whole, counts] if rank == root else None,
                  root).Wait()
    assert rank != root or whole.tolist() == [r for r in range(size) for _ in range(r + 1)]
    mine = np.zeros(rank + 1, "i")
    comm.Iscatterv([np.repeat(np.arange(size, dtype="i"), counts), counts]
                   if rank == root else None, mine, root).Wait()
    assert mine.tolist() == [rank] * (rank + 1), mine

out = np.zeros(4)
request = comm.Iallreduce(np.full(4, rank + 1.0), out, MPI.MAX)
while not request.Test():
    pass
assert out.tolist() == [float(size)] * 4
everyone = np.zeros(size, "i")
comm.Iallgather(np.array([rank], "i"), everyone).Wait()
assert everyone.tolist() == list(range(size))
counts = [r + 1 for r in range(size)]
vector = np.zeros(sum(counts), "i")
comm.Iallgatherv(np.full(rank + 1, rank, "i"), [vector, counts]).Wait()
assert vector.tolist() == [r for r in range(size) for _ in range(r + 1)]
exchanged = np.zeros(size, "i")
comm.Ialltoall(np.arange(size, dtype="i") + 100 * rank, exchanged).Wait()
assert exchanged.tolist() == [100 * r + rank for r in range(size)]
sendcounts = [1] * size
received = np.zeros(size, "i")
comm.Ialltoallv([np.full(size, rank, "i"), sendcounts], [received, sendcounts]).Wait()
assert received.tolist() == list(range(size))
block = np.zeros(2, "i")
comm.Ireduce_scatter_block(np.ones(2 * size, "i"), block).Wait()
assert block.tolist() == [size, size]
prefix, before = np.zeros(1, "i"), np.full(1, -1, "i")
MPI.Request.Waitall([comm.Iscan(np.array([rank + 1], "i"), prefix),
                     comm.Iexscan(np.array([rank + 1], "i"), before)])
assert prefix[0] == (rank + 1) * (rank + 2) // 2
assert rank == 0 or before[0] == rank * (rank + 1) // 2

# Several under way at once, a blocking collective between, completed in another order.
product, ring = np.zeros(2), np.zeros(size, "i")
first = comm.Iallreduce(np.full(2, rank + 1.0), product, MPI.PROD)
second = comm.Iallgather(np.array([rank * 10], "i"), ring)
total = comm.allreduce(rank)
third = comm.Ibarrier()
MPI.Request.Waitall([third, second, first])
assert product.tolist() == [float(np.prod(range(1, size + 1)))] * 2
assert ring.tolist() == [r * 10 for r in range(size)] and total == size * (size - 1) // 2

# Progress while waiting on something else: the last rank's Wait needs rank 0's later
# rounds, while rank 0 is blocked in a receive that the last rank sends only after its Wait.
barrier = comm.Ibarrier()
if size > 1 and rank == 0:
    assert comm.recv(source=size - 1, tag=7) == "after the barrier"
elif size > 1 and rank == size - 1:
    barrier.Wait()
    comm.send("after the barrier", 0, tag=7)
barrier.Wait()
status = MPI.Status()
comm.Ibarrier().Wait(status)
assert status.Get_error() == MPI.SUCCESS

# Arguments are checked at the call.
checks += fails(MPI.ERR_ROOT, comm.Ibcast, np.zeros(1), size)
checks += fails(MPI.ERR_OP, comm.Iallreduce, np.zeros(1), np.zeros(1), MPI.BAND)
comm.Barrier()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # one write: the ranks share the pipe
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_under_shmdat(tmp_path, n):
    r = mpi_launch.launch(tmp_path, n, PROGRAM, launcher=("--mpi4py", "--"))
    mpi_launch.check_every_rank_agrees(r, n)


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpi4py(tmp_path):
    """The checks are MPI's and mpi4py's, not shmdat's: mpi4py + MPICH passes them too."""
    r = mpi_launch.launch_mpiexec(tmp_path, 3, PROGRAM)
    mpi_launch.check_every_rank_agrees(r, 3)


TRUNCATED = """
import os

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
request = comm.Ibcast(np.zeros(3 if comm.rank == 0 else 2), 0)
if comm.rank == 0:
    request.Wait()
else:
    try:
        request.Wait()
    except MPI.Exception as e:
        assert e.Get_error_class() == MPI.ERR_TRUNCATE, e
    else:
        raise AssertionError("a longer message did not fail the wait")
    assert not request and request.Wait()       # completed: REQUEST_NULL from then on
comm.Barrier()
os.write(1, f"ok {comm.rank}\\n".encode())     # one write: the ranks share the pipe
"""


def test_a_collective_error_is_raised_by_the_wait(tmp_path):
    """A rank whose buffer is shorter than root's: its Wait raises ERR_TRUNCATE (MPICH
    aborts the job there, so shmdat only)."""
    r = mpi_launch.launch(tmp_path, 2, TRUNCATED, launcher=("--mpi4py", "--"))
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == ["0", "1", "ok", "ok"]
