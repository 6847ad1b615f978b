"""Memory shared by the ranks of one node: Comm.Split_type and the shared windows
(Win.Allocate_shared, Shared_query), real launches; the programs' output compared line for
line with mpi4py + MPICH under mpiexec where it is installed."""

import pytest

from tests import mpi_launch

# What MPICH and shmdat.mpi both print: the split's ranks (keys that reverse them), parts of
# different sizes read by every rank through loads, their contiguous layout, a Put seen by
# loads, PROC_NULL's query, an empty window.
PARTS = """
import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r = world.rank
node = world.Split_type(MPI.COMM_TYPE_SHARED, key=-r)
say(r, "node", node.rank, node.size)
win = MPI.Win.Allocate_shared(8 * (r + 1), 8, comm=world)
say(r, "flavor", win.flavor == MPI.WIN_FLAVOR_SHARED, win.model == MPI.WIN_UNIFIED,
    len(win.tomemory()))
for q in list(range(world.size)) + [MPI.PROC_NULL]:
    memory, disp_unit = win.Shared_query(q)
    say(r, "query", q, len(memory), disp_unit)
np.frombuffer(win.tomemory(), "i8")[:] = r + 1
win.Fence()
parts = [np.frombuffer(win.Shared_query(q)[0], "i8") for q in range(world.size)]
say(r, "loads", [p.tolist() for p in parts])
base = MPI.Get_address(win.Shared_query(0)[0])
say(r, "offsets", [MPI.Get_address(win.Shared_query(q)[0]) - base for q in range(world.size)])
win.Fence()
win.Put(np.array([100 + r], "i8"), (r + 1) % world.size, target=(0, 1, MPI.INT64_T))
win.Fence()
say(r, "after Put", [p.tolist() for p in parts])
del parts
win.Free()
node.Free()
win = MPI.Win.Allocate_shared(0, 4, comm=world)
memory, disp_unit = win.Shared_query(MPI.PROC_NULL)
say(r, "empty", len(memory), disp_unit, len(win.tomemory()))
win.Free()
"""


@pytest.mark.parametrize("n", [1, 2, 4])
def test_every_rank_reads_every_part(tmp_path, n):
    r = mpi_launch.launch_mpi4py(tmp_path, n, mpi_launch.PIDS + PARTS)
    lines = [line for line in mpi_launch.lines_of(r) if not line.startswith("pid ")]
    total = [[q + 1] * (q + 1) for q in range(n)]
    for rank in range(n):
        mine = [line.split(" ", 1)[1] for line in lines if line.startswith(f"{rank} ")]
        assert f"node {n - 1 - rank} {n}" in mine
        assert f"flavor True True {8 * (rank + 1)}" in mine
        assert f"loads {total}" in mine
        assert f"offsets {[4 * q * (q + 1) for q in range(n)]}" in mine
        put = [[q + 1] * (q + 1) for q in range(n)]
        for q in range(n):
            put[q][0] = 100 + (q - 1) % n
        assert f"after Put {put}" in mine
        assert "empty 0 0 0" in mine
    assert mpi_launch.leftovers(mpi_launch.pids(r.stdout)) == []   # a memfd has no name


@mpi_launch.needs_mpiexec
def test_the_same_parts_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 3, PARTS)


# The idiom of mpi4py programs: rank 0 allocates the whole array, the others nothing, and
# every rank makes a numpy array over rank 0's part.
WHOLE_ARRAY = """
import os
import numpy as np
from mpi4py import MPI
node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
rank, size = node.rank, node.size
n = 1000
itemsize = MPI.DOUBLE.Get_size()
win = MPI.Win.Allocate_shared(n * size * itemsize if rank == 0 else 0, itemsize, comm=node)
memory, unit = win.Shared_query(0)
assert unit == itemsize
a = np.ndarray(buffer=memory, dtype="d", shape=(size, n))
a[rank] = np.arange(n) * (rank + 1)
node.Barrier()
total = a.sum()
expected = sum(np.arange(n).sum() * (q + 1) for q in range(size))
node.Barrier()
del a, memory
win.Free()
os.write(1, f"rank {rank}: {total == expected}\\n".encode())
"""


@pytest.mark.parametrize("n", [2, 3])
def test_one_array_on_the_first_rank(tmp_path, n):
    r = mpi_launch.launch_mpi4py(tmp_path, n, WHOLE_ARRAY)
    mpi_launch.check_every_rank_agrees(r, n)
    assert ": True" in r.stdout


SPLITS = """
import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r, n = world.rank, world.size
say(r, "undefined", world.Split_type(MPI.UNDEFINED) == MPI.COMM_NULL)
for root in range(n):                       # one rank asks, the others give UNDEFINED
    comm = world.Split_type(MPI.COMM_TYPE_SHARED if r == root else MPI.UNDEFINED)
    say(r, "alone", root, comm == MPI.COMM_NULL or (comm.rank, comm.size))
    if comm != MPI.COMM_NULL:
        comm.Free()
for split_type in (MPI.COMM_TYPE_HW_GUIDED, MPI.COMM_TYPE_RESOURCE_GUIDED):
    info = MPI.Info.Create()
    got = [world.Split_type(split_type) == MPI.COMM_NULL,
           world.Split_type(split_type, info=info) == MPI.COMM_NULL]
    info.Set("mpi_hw_resource_type", "mpi_shared_memory")
    comm = world.Split_type(split_type, key=r % 2, info=info)
    say(r, "guided", got, comm.size, comm.rank, info.Get("mpi_hw_resource_type"))
    comm.Free()
    info.Free()
half = world.Split(r % 2)
comm = half.Split_type(MPI.COMM_TYPE_SHARED)
say(r, "of a split", comm.size, comm.rank, comm.Get_group().Translate_ranks([0], world.Get_group()))
say(r, "bad type", outcome(lambda: world.Split_type(99)))
say(r, "not an int", outcome(lambda: world.Split_type("shared")))
"""


def test_split_type(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 3, SPLITS))
    assert "0 guided [True, True] 3 0 mpi_shared_memory" in lines
    assert "1 guided [True, True] 3 2 mpi_shared_memory" in lines      # key 1 after rank 2's 0
    assert "2 alone 2 (0, 1)" in lines and "1 alone 2 True" in lines
    assert "1 of a split 1 0 [1]" in lines and "2 of a split 2 1 [0]" in lines
    assert "0 bad type ('MPI', 12)" in lines                            # ERR_ARG
    assert "0 not an int ('TypeError',)" in lines


@mpi_launch.needs_mpiexec
def test_the_same_splits_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 3, SPLITS)


ERRORS = """
import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.FAILS + """
world = MPI.COMM_WORLD
checks = fails(MPI.ERR_SIZE, MPI.Win.Allocate_shared, -1, 1, comm=world)
checks += fails(MPI.ERR_DISP, MPI.Win.Allocate_shared, 8, 0, comm=world)
win = MPI.Win.Allocate_shared(8, 1, comm=world)
checks += fails(MPI.ERR_RANK, win.Shared_query, world.size)
checks += fails(MPI.ERR_RANK, win.Shared_query, -5)
win.Free()
checks += fails(MPI.ERR_WIN, win.Shared_query, 0)
checks += fails(MPI.ERR_WIN, MPI.WIN_NULL.Shared_query, 0)
checks += fails(MPI.ERR_ARG, world.Split_type, -7)
# The memory of a window of another flavor is not shared: an empty part (MPI 4.1).
win = MPI.Win.Allocate(8, 4, comm=world)
memory, unit = win.Shared_query(0)
assert (len(memory), unit) == (0, 4)
win.Free()
os.write(1, f"rank {world.rank}: {checks} checks\\n".encode())
"""


def test_the_errors(tmp_path):
    r = mpi_launch.launch_mpi4py(tmp_path, 2, ERRORS)
    mpi_launch.check_every_rank_agrees(r, 2)
    assert ": 7 checks" in r.stdout
