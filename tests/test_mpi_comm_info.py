"""shmdat.mpi's communicator hints (Comm.Set_info, Get_info, info, Dup_with_info, Dup and
Idup with an info), by real launches: MPI's assertions kept per communicator and shared by
its handles, their values read as MPICH reads them, Set_info merging, what Dup, Split and
Create keep (nothing, as MPICH), hints nothing knows left out, and the errors. The program
runs unchanged under mpi4py + MPICH too (the import aside), which is where its expectations
come from; MPICH's own hints (vci, ...) are not there, so the checks look at MPI's."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, check_every_rank_agrees, launch

COMM_INFO = FAILS + """
import os
from shmdat.mpi import MPI

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
OURS = MPI.get_vendor()[0] == "shmdat"
ASSERTIONS = ("mpi_assert_no_any_tag", "mpi_assert_no_any_source", "mpi_assert_exact_length",
              "mpi_assert_allow_overtaking", "mpi_assert_strict_persistent_collective_ordering")
checks = 0


def hints(comm):
    info = comm.Get_info()
    assert type(info) is MPI.Info
    got = tuple(info.Get(key) for key in ASSERTIONS)
    if OURS:                            # (MPICH adds hints of its own)
        assert sorted(info.keys()) == sorted(ASSERTIONS), info.items()
    assert info.Get("foo") is None      # a hint nothing knows is not kept
    info.Free()
    return got


NONE = ("false",) * 5
made = [world.Dup()]                # (all freed at the end: MPICH warns of any left)
for comm in (world, MPI.COMM_SELF, made[0]):
    assert hints(comm) == NONE

given = MPI.Info.Create({"mpi_assert_no_any_tag": "true", "mpi_assert_exact_length": "1",
                         "mpi_assert_no_any_source": "yes", "foo": "bar"})
SOME = ("true", "false", "true", "false", "false")
idups = [world.Idup(given), world.Idup_with_info(given)]
MPI.Request.Waitall([request for _, request in idups])
made += [world.Dup_with_info(given), world.Dup(given), *(comm for comm, _ in idups),
         MPI.COMM_SELF.Dup_with_info(given)]
for comm in made[1:]:
    assert hints(comm) == SOME
    assert hints(MPI.Comm(comm)) == SOME            # another handle: the same hints
checks += 1
dup = made[1]
# Dup, Split, Create and INFO_NULL or INFO_ENV give none.
made += [dup.Dup(), dup.Clone(), dup.Split(0, rank), dup.Create(dup.Get_group()),
         dup.Dup(MPI.INFO_NULL), dup.Dup_with_info(MPI.INFO_ENV)]
for comm in made[-6:]:
    assert hints(comm) == NONE
checks += 1

# Set_info replaces the assertions it names ("true" or "1" true, any other value false) and
# keeps the others; Get_info gives a new Info each time, not the communicator's.
comm = world.Dup()
made.append(comm)
comm.Set_info(MPI.Info.Create({"mpi_assert_allow_overtaking": "true"}))
comm.Set_info(MPI.Info.Create({"mpi_assert_no_any_tag": "1"}))
assert hints(comm) == ("true", "false", "false", "true", "false")
comm.Set_info(MPI.Info.Create({"mpi_assert_no_any_tag": "TRUE"}))
comm.Set_info(MPI.Info.Create())
comm.Set_info(MPI.INFO_ENV)
assert hints(comm) == ("false", "false", "false", "true", "false")
got = comm.Get_info()
assert got != comm.Get_info()
got.Set("mpi_assert_exact_length", "true")
assert hints(comm)[2] == "false"
comm.info = MPI.Info.Create({"mpi_assert_exact_length": "true"})
assert comm.info.Get("mpi_assert_exact_length") == "true"
checks += 1

# Errors.
freed = MPI.Info.Create()
freed.Free()
for call, arg, error in ((comm.Set_info, None, TypeError), (comm.Set_info, "x", TypeError),
                         (comm.Set_info, {"a": "b"}, TypeError),
                         (comm.Set_info, MPI.INFO_NULL, MPI.ERR_ARG),
                         (comm.Set_info, freed, MPI.ERR_ARG),
                         (world.Dup_with_info, None, TypeError), (world.Dup, 1, TypeError),
                         (world.Dup_with_info, 1, TypeError),
                         (MPI.COMM_NULL.Set_info, given, MPI.ERR_COMM)):
    checks += fails(error, call, arg)
checks += fails(MPI.ERR_COMM, MPI.COMM_NULL.Get_info)
assert hints(comm) == ("false", "false", "true", "true", "false")

for comm in made:
    comm.Free()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # (one write: ranks share the pipe)
"""


@pytest.mark.parametrize("n", [1, 3])
def test_comm_info(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, COMM_INFO), n)


@mpi_launch.needs_mpiexec
def test_comm_info_under_mpi4py(tmp_path):
    r = mpi_launch.launch_mpiexec(tmp_path, 3, mpi_launch.as_mpi4py(COMM_INFO))
    check_every_rank_agrees(r, 3)
