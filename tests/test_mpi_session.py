"""MPI 4 sessions (shmdat/mpi/session.py): MPI.Session, its process sets and groups,
Group.Create_from_session_pset, Comm.Create_from_group, Intercomm.Create_from_groups; the same
program under mpi4py + MPICH prints the same lines."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, PIDS, SAY, launch, leftovers, pids

PROGRAM = """import os, pickle
from mpi4py import MPI
""" + SAY + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size
null = MPI.Session()
say(rank, "null", bool(null), null == MPI.SESSION_NULL,
    MPI.SESSION_NULL == MPI.Session(MPI.SESSION_NULL))
say(rank, "null calls", outcome(null.Finalize), outcome(null.Get_num_psets),
    outcome(lambda: null.Create_group("mpi://WORLD")), outcome(null.Get_errhandler))
say(rank, "pickle null", pickle.loads(pickle.dumps(MPI.SESSION_NULL)) is MPI.SESSION_NULL)
s = MPI.Session.Init()
say(rank, "init", bool(s), s == MPI.Session(s), s != MPI.SESSION_NULL,
    outcome(lambda: pickle.dumps(s))[0])
names = [s.Get_nth_pset(i) for i in range(s.Get_num_psets())]
say(rank, "psets", names, outcome(lambda: s.Get_nth_pset(len(names))),
    outcome(lambda: s.Get_nth_pset(-1)))
say(rank, "pset info", [s.Get_pset_info(n).Get("mpi_size") for n in names])
say(rank, "info", s.Get_info().Get("thread_level"))
say(rank, "unknown pset", outcome(lambda: s.Get_pset_info("mpi://nope")),
    outcome(lambda: s.Create_group("mpi://nope")))
say(rank, "case", s.Create_group("MPI://world").Get_size())
gw = s.Create_group("mpi://WORLD")
gs = MPI.Group.Create_from_session_pset(s, "mpi://SELF")
say(rank, "groups", gw.Get_rank(), gw.Get_size(), gs.Get_rank(), gs.Get_size(),
    MPI.Group.Compare(gw, world.Get_group()), MPI.Group.Compare(gs, MPI.COMM_SELF.Get_group()))
say(rank, "errhandler", s.Get_errhandler() == MPI.ERRORS_RETURN)
c = MPI.Intracomm.Create_from_group(gw, "org.test.world")
say(rank, "from group", c.Get_rank(), c.Get_size(), c.allreduce(rank + 1),
    MPI.Comm.Compare(c, world), c.Get_errhandler() == MPI.ERRORS_RETURN)
c2 = MPI.Intracomm.Create_from_group(gw, errhandler=MPI.ERRORS_ARE_FATAL)
say(rank, "with errhandler", c2.Get_errhandler() == MPI.ERRORS_ARE_FATAL)
c2.Free()
half = gw.Incl([r for r in range(size) if r % 2 == rank % 2])
c3 = MPI.Intracomm.Create_from_group(half, "org.test.half")
say(rank, "half", c3.Get_size(), c3.allreduce(rank))
say(rank, "self", MPI.Intracomm.Create_from_group(gs).Get_size())
say(rank, "bad", outcome(lambda: MPI.Intracomm.Create_from_group(MPI.GROUP_NULL)),
    outcome(lambda: MPI.Intracomm.Create_from_group(gw, 5)),
    MPI.Intracomm.Create_from_group(MPI.GROUP_EMPTY) == MPI.COMM_NULL)
if size > 1:
    even, odd = gw.Incl(list(range(0, size, 2))), gw.Incl(list(range(1, size, 2)))
    mine, other = (even, odd) if rank % 2 == 0 else (odd, even)
    ic = MPI.Intercomm.Create_from_groups(mine, 0, other, 0, "org.test.inter")
    say(rank, "inter", ic.Is_inter(), ic.Get_size(), ic.Get_remote_size(), ic.allreduce(rank))
    ic.Free()
calls = []
eh = MPI.Session.Create_errhandler(lambda sess, code: calls.append(code))
s.Set_errhandler(eh)
s.Call_errhandler(MPI.ERR_OTHER)
say(rank, "user handler", calls)
s.Set_errhandler(MPI.ERRORS_RETURN)
eh.Free()
comm_handler = MPI.Comm.Create_errhandler(lambda c, e: None)
say(rank, "comm handler", outcome(lambda: s.Set_errhandler(comm_handler)))
buf = MPI.Alloc_mem(1 << 12)
s.Attach_buffer(buf)
s.Flush_buffer()
say(rank, "buffer", outcome(lambda: s.Attach_buffer(buf)),
    s.Detach_buffer().address == buf.address)
MPI.Free_mem(buf)
c.Free()
c3.Free()
s.Finalize()
say(rank, "finalized", bool(s), outcome(s.Finalize), outcome(s.Get_num_psets))
s2 = MPI.Session.Init(errhandler=MPI.ERRORS_RETURN)
s2.free()
say(rank, "free", bool(s2))
say(rank, "init bad", outcome(lambda: MPI.Session.Init(info=None)),
    outcome(lambda: MPI.Session.Init(errhandler=5)))
"""


@pytest.mark.parametrize("n", [1, 3])
def test_sessions(tmp_path, n):
    r = mpi_launch.launch_mpi4py(tmp_path, n, PIDS + PROGRAM)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if not line.startswith("pid ")]
    assert f"0 pset info [\'{n}\', \'1\']" in lines
    assert "0 from group 0 %d %d 1 True" % (n, n * (n + 1) // 2) in lines
    assert "0 user handler [15]" in lines
    assert "0 finalized False (\'MPI\', 75) (\'MPI\', 75)" in lines
    assert leftovers(pids(r.stdout)) == []


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [1, 3])
def test_sessions_as_under_mpich(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, PROGRAM)


def test_a_user_handler_on_a_session(tmp_path):
    # The session's handler gets the error class and the call returns None (MPICH hands it
    # an error code, whose string mpi4py then fails to decode: not compared).
    r = launch(tmp_path, 1, """
from shmdat.mpi import MPI
s = MPI.Session.Init()
calls = []
s.Set_errhandler(MPI.Session.Create_errhandler(lambda sess, code: calls.append((sess == s, code))))
assert s.Get_nth_pset(99) is None
assert calls == [(True, MPI.ERR_ARG)], calls
copy = MPI.Session(s)
assert copy.Get_nth_pset(5) is None and len(calls) == 2    # a handle shares the handler
s.Set_errhandler(MPI.ERRORS_ARE_FATAL)
s.Get_nth_pset(99)
print("not reached")
""")
    assert r.returncode != 0 and "not reached" not in r.stdout
    assert "ERRORS_ARE_FATAL on a Session" in r.stderr


def test_create_from_group_with_concurrent_string_tags(tmp_path):
    # Two halves make their communicators at once under different tags, then the whole;
    # each agrees on a context with its members only, and none mixes with another's traffic.
    r = launch(tmp_path, 4, PIDS + """
from shmdat.mpi import MPI
s = MPI.Session.Init()
world = s.Create_group("mpi://WORLD")
rank = world.Get_rank()
half = world.Incl([0, 1] if rank < 2 else [2, 3])
c = MPI.Intracomm.Create_from_group(half, "half.%d" % (rank // 2))
w = MPI.Intracomm.Create_from_group(world, "whole")
assert c.allreduce(rank) == (1 if rank < 2 else 5)
assert w.allreduce(rank) == 6 and w.Get_rank() == rank
assert c.Compare(w) == MPI.UNEQUAL
c.Free(); w.Free(); s.Finalize()
os.write(1, b"ok %d\\n" % rank)
""")
    assert r.returncode == 0, r.stderr
    assert sorted(line for line in r.stdout.splitlines() if line.startswith("ok")) == \
        [f"ok {i}" for i in range(4)]
    assert leftovers(pids(r.stdout)) == []


# Comm.Create_group (MPI_Comm_create_group): collective over the group's members alone.
CREATE_GROUP = """import os
from mpi4py import MPI
""" + SAY + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size
group = world.Get_group()
evens = group.Incl(list(range(0, size, 2)))
if rank % 2 == 0:
    c = world.Create_group(evens, 5)
    say(rank, "evens", c.Get_rank(), c.Get_size(), c.allreduce(rank), MPI.Comm.Compare(c, world))
    c.Free()
else:
    say(rank, "not a member", world.Create_group(evens, 5) == MPI.COMM_NULL)
# Two groups at once, each under its own tag, then the whole.
mine = group.Incl([r for r in range(size) if r % 2 == rank % 2])
c = world.Create_group(mine, 7 + rank % 2)
w = world.Create_group(group)
say(rank, "both", c.allreduce(1), w.allreduce(rank), MPI.Comm.Compare(w, world))
say(rank, "self", MPI.COMM_SELF.Create_group(MPI.COMM_SELF.Get_group()).Get_size())
say(rank, "errors", outcome(lambda: world.Create_group(MPI.GROUP_NULL)),
    outcome(lambda: world.Create_group(group, -5)), outcome(lambda: world.Create_group(group, "x")),
    world.Create_group(MPI.GROUP_EMPTY) == MPI.COMM_NULL)
"""


@pytest.mark.parametrize("n", [1, 3])
def test_create_group(tmp_path, n):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, n, CREATE_GROUP))
    assert "0 evens 0 %d %d %d" % ((n + 1) // 2, sum(range(0, n, 2)), 1 if n == 1 else 3) in lines
    assert f"0 both {(n + 1) // 2} {n * (n - 1) // 2} 1" in lines
    assert "0 errors ('MPI', 8) ('MPI', 4) ('TypeError',) True" in lines


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [1, 3])
def test_create_group_as_under_mpich(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, CREATE_GROUP)


def test_create_group_errors_mpich_does_not_survive(tmp_path):
    # A group with a process the communicator has not (MPICH fails an assertion): ERR_GROUP;
    # on an intercommunicator, not there.
    r = launch(tmp_path, 2, """
import os
from shmdat.mpi import MPI
""" + FAILS + """
world = MPI.COMM_WORLD
fails(MPI.ERR_GROUP, MPI.COMM_SELF.Create_group, world.Get_group())
inter = world.Split(world.rank).Create_intercomm(0, world, 1 - world.rank)
try:
    inter.Create_group(inter.Get_group())
except NotImplementedError as e:
    os.write(1, f"not on an intercomm: {e}\\n".encode())
""")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("not on an intercomm: Intercomm.Create_group") == 2
