"""Comm.Create_group by real launches: collective over the group's members only (the other
ranks do not call it, or call it with another group at the same time), the members in the
group's order, COMM_NULL off the group, a tag per call, the communicator usable (point to
point and collectives) and congruent or not as MPI says; the errors. The same program runs
under mpi4py + MPICH and prints the same lines."""

import pytest

from tests.mpi_launch import SAY, as_mpi4py, assert_same_as_mpiexec, launch, lines_of, needs_mpiexec

PROGRAM = """
import os
from shmdat.mpi import MPI
""" + SAY + """
c = MPI.COMM_WORLD
r, n = c.rank, c.size
g = c.Get_group()
# Only the even ranks call it; the odd ones make their own at the same time.
evens, odds = g.Incl(list(range(0, n, 2))), g.Incl(list(range(1, n, 2)))
part = c.Create_group(evens if r % 2 == 0 else odds, tag=5 + r % 2)
say(r, "parity", part.Get_rank(), part.Get_size(), MPI.Comm.Compare(part, c), part.allgather(r))
part.Barrier()
if part.size > 1:
    got = part.sendrecv(r, (part.rank + 1) % part.size, source=(part.rank - 1) % part.size)
    say(r, "ring", got)
part.Free()
reverse = c.Create_group(g.Incl(list(range(n))[::-1]), tag=MPI.COMM_WORLD.Get_attr(MPI.TAG_UB))
say(r, "reverse", reverse.rank, reverse.size, MPI.Comm.Compare(reverse, c), reverse.allreduce(r))
reverse.Free()
whole = c.Create_group(g)
say(r, "whole", MPI.Comm.Compare(whole, c))
whole.Free()
say(r, "self", MPI.Comm.Compare(MPI.COMM_SELF.Create_group(MPI.COMM_SELF.group), MPI.COMM_SELF))
say(r, "empty", c.Create_group(MPI.GROUP_EMPTY) == MPI.COMM_NULL)
if r == 0:      # a caller outside the group (an erroneous program: MPICH returns COMM_NULL)
    say(r, "outside", c.Create_group(g.Incl([n - 1])) == MPI.COMM_NULL if n > 1 else True)
say(r, "negative tag", outcome(lambda: c.Create_group(g, -1)))
say(r, "GROUP_NULL", outcome(lambda: c.Create_group(MPI.GROUP_NULL)))
say(r, "no group", outcome(lambda: c.Create_group(None)))
say(r, "on an Intercomm", hasattr(MPI.Intercomm, "Create_group"))
"""


@pytest.mark.parametrize("n", [1, 3, 4])
def test_create_group(tmp_path, n):
    lines = lines_of(launch(tmp_path, n, PROGRAM))
    assert [line for line in lines if " whole " in line] == [f"{i} whole 1" for i in range(n)]
    assert f"0 parity 0 {(n + 1) // 2} {3 if n > 1 else 1} {list(range(0, n, 2))}" in lines


@needs_mpiexec
@pytest.mark.parametrize("n", [1, 3])
def test_create_group_as_mpi4py_with_mpich(tmp_path, n):
    assert_same_as_mpiexec(tmp_path, n, as_mpi4py(PROGRAM))
