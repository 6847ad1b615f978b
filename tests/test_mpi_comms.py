"""shmdat.mpi communicators and persistent requests, by real launches at N = 1, 2, 3, 4:
Split by parity and by an odd color set (UNDEFINED too) with keys that reorder, Split of a
split, Dup, Clone and Create from a group; point to point (eager and rendezvous, ANY_SOURCE
statuses and Probe in the communicator's ranks) and collectives on each, while the parent's
own traffic with the same tags is under way; persistent requests started several times;
Free; COMM_SELF; the errors. PROGRAM runs unchanged under mpi4py + MPICH too (the import
aside)."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, launch

PROGRAM = FAILS + """
import sys
import numpy as np
from shmdat.mpi import MPI

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
wright, wleft = (rank + 1) % size, (rank - 1) % size
LARGE = 5000        # float64 elements: 40000 bytes, above the eager limit (rendezvous)


def members_of(color_of, key_of, parent):
    # The world ranks of this rank's color, in the new communicator's order: by key, then
    # by rank in `parent` (a list of world ranks).
    mine = color_of(rank)
    return sorted((r for r in parent if color_of(r) == mine),
                  key=lambda r: (key_of(r), parent.index(r)))


def expected_compare(members):
    if members == list(range(size)):
        return MPI.CONGRUENT
    return MPI.SIMILAR if sorted(members) == list(range(size)) else MPI.UNEQUAL


# A world receive from ANY_SOURCE with tag 9, posted before everything: no message of
# another communicator with that tag may match it (the world's last message does).
early = world.irecv(source=MPI.ANY_SOURCE, tag=9)


def exercise(comm, members):
    # Point to point and collectives on `comm` (its ranks are the world ranks `members`;
    # COMM_NULL: none here) while a world ring with tag 5 is under way.
    wreq = world.irecv(source=wleft, tag=5)
    wsend = world.isend(("world", rank), dest=wright, tag=5)
    if comm != MPI.COMM_NULL:
        on(comm, members)
    assert wreq.wait() == ("world", wleft)
    wsend.wait()


def on(comm, members):
    n, me = comm.Get_size(), comm.Get_rank()
    assert (n, me, comm.size, comm.rank) == (len(members), members.index(rank), n, me)
    assert not comm.Is_inter() and comm.Is_intra()
    right, left = (me + 1) % n, (me - 1) % n
    for tag in (5, 9):
        got = comm.sendrecv(("sub", rank, tag), dest=right, sendtag=tag, source=left,
                            recvtag=tag)
        assert got == ("sub", members[left], tag), (got, members)
    for count in (3, LARGE):
        buf = np.zeros(count)
        st = MPI.Status()
        req = comm.Irecv([buf, MPI.DOUBLE], source=MPI.ANY_SOURCE, tag=5)
        comm.Send([np.full(count, float(rank)), MPI.DOUBLE], dest=right, tag=5)
        req.Wait(st)
        assert (st.Get_source(), st.Get_tag(), st.Get_count(MPI.DOUBLE)) == (left, 5, count)
        assert (buf == members[left]).all()
    st = MPI.Status()
    sreq = comm.isend(rank, dest=right, tag=9)
    comm.Probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
    assert (st.Get_source(), st.Get_tag()) == (left, 9)
    obj = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
    assert (obj, st.Get_source()) == (members[left], left)
    sreq.wait()
    assert comm.allgather(rank) == members
    assert comm.allreduce(rank) == sum(members)
    assert comm.bcast(rank, root=n - 1) == members[-1]
    assert comm.gather(rank, root=0) == (members if me == 0 else None)
    assert comm.scatter([r * 10 for r in members] if me == n - 1 else None, root=n - 1) \\
        == rank * 10
    assert comm.alltoall([(rank, r) for r in members]) == [(r, rank) for r in members]
    big = np.full(LARGE, float(rank))
    comm.Bcast(big, root=n - 1)
    assert (big == members[-1]).all()
    out = np.zeros((n, 2))
    comm.Allgather(np.array([rank, me], dtype=np.float64), out)
    assert (out == [[r, i] for i, r in enumerate(members)]).all()
    total = np.zeros(LARGE)
    comm.Allreduce(np.full(LARGE, float(rank)), total, op=MPI.SUM)
    assert (total == sum(members)).all()
    comm.Barrier()


parity_members = members_of(lambda r: r % 2, lambda r: -(r // 2), list(range(size)))
parity = world.Split(rank % 2, -(rank // 2))
assert parity != MPI.COMM_NULL and parity.Get_name() == ""
assert parity.Compare(world) == world.Compare(parity) == expected_compare(parity_members)
exercise(parity, parity_members)

# An odd set of colors, rank 1 in none; keys reorder.
def color_of(r):
    return MPI.UNDEFINED if r == 1 else (7 if r % 3 == 0 else 3)

odd_members = members_of(color_of, lambda r: -(r // 2), list(range(size)))
odd = world.Split(color_of(rank), -(rank // 2))
assert (odd == MPI.COMM_NULL) == (rank == 1) and bool(odd) == (rank != 1)
exercise(odd, odd_members)

reverse = world.Split(0, -rank)                 # every rank, in reverse: SIMILAR
assert reverse.Compare(world) == expected_compare(list(range(size))[::-1])
exercise(reverse, list(range(size))[::-1])

# A split of a split: equal keys keep the parent's order (not the world's).
again = parity.Split(0, 0)
assert again.Compare(parity) == MPI.CONGRUENT
exercise(again, parity_members)

dup = world.Dup()
assert dup.Compare(world) == MPI.CONGRUENT and world.Compare(world) == MPI.IDENT
assert dup.Get_name() == "" and world.Get_name() == "MPI_COMM_WORLD"
dup.Set_name("mine")
assert (dup.Get_name(), dup.name, world.name) == ("mine", "mine", "MPI_COMM_WORLD")
exercise(dup, list(range(size)))
clone = parity.Clone()
assert clone.Compare(parity) == MPI.CONGRUENT
exercise(clone, parity_members)

# Groups, and a communicator made of one (reversed evens).
group = world.Get_group()
assert (group.size, group.rank, world.group.Compare(group)) == (size, rank, MPI.IDENT)
evens = list(range(0, size, 2))
reversed_evens = group.Incl(evens[::-1])
assert reversed_evens.rank == (evens[::-1].index(rank) if rank % 2 == 0 else MPI.UNDEFINED)
assert group.Excl(evens).Get_size() == size - len(evens)
assert group.Translate_ranks(None, reversed_evens) == \
    [evens[::-1].index(r) if r % 2 == 0 else MPI.UNDEFINED for r in range(size)]
assert reversed_evens.Compare(group.Incl(evens)) == \
    (MPI.IDENT if len(evens) == 1 else MPI.SIMILAR)
created = world.Create(reversed_evens)
assert (created == MPI.COMM_NULL) == (rank % 2 == 1)
exercise(created, evens[::-1])
for g in (group, reversed_evens):
    g.Free()

# COMM_SELF: this rank alone; its traffic never meets the world's sends to self.
me = MPI.COMM_SELF
assert (me.Get_rank(), me.Get_size(), me.Get_name()) == (0, 1, "MPI_COMM_SELF")
to_world = world.irecv(source=rank, tag=3)
world.send("world", dest=rank, tag=3)
to_self = me.irecv(source=0, tag=3)
me.send("self", dest=0, tag=3)
assert (to_self.wait(), to_world.wait()) == ("self", "world")
assert me.allreduce(rank) == rank and me.Dup().bcast(rank) == rank

# Persistent requests, started several times, on the reordered parity communicator.
n, prank = parity.size, parity.rank
right, left = (prank + 1) % n, (prank - 1) % n
out, into = np.zeros(LARGE), np.zeros(LARGE)
small_out, small_in = np.zeros(4), np.zeros(4)
send = parity.Send_init([out, MPI.DOUBLE], dest=right, tag=2)
recv = parity.Recv_init([into, MPI.DOUBLE], source=MPI.ANY_SOURCE, tag=2)
ssend = parity.Ssend_init(small_out, dest=right, tag=4)
srecv = parity.Recv_init(small_in, source=left, tag=4)
st = MPI.Status()
assert recv.Wait(st) and (st.Get_source(), st.Get_tag()) == (MPI.ANY_SOURCE, MPI.ANY_TAG)
assert recv.Test() and recv != MPI.REQUEST_NULL and recv
for i in range(4):
    out[:] = rank * 100 + i             # each Start sends the buffer as it is then
    small_out[:] = -i
    recv.Start()
    MPI.Prequest.Startall([send, srecv, ssend])
    statuses = []
    MPI.Request.Waitall([recv, send, srecv, ssend], statuses)
    assert (into == parity_members[left] * 100 + i).all() and (small_in == -i).all()
    assert statuses[0].Get_source() == left and statuses[0].Get_count(MPI.DOUBLE) == LARGE
    assert recv != MPI.REQUEST_NULL and recv.Wait(st) and st.Get_source() == MPI.ANY_SOURCE
recv.Start()
fails(MPI.ERR_REQUEST, recv.Start)              # active already
send.Start()
assert MPI.Request.Waitany([recv, send]) in (0, 1)
MPI.Request.Waitall([recv, send])
for r in (send, recv, ssend, srecv):
    r.Free()
    assert r == MPI.REQUEST_NULL and not r
fails(MPI.ERR_REQUEST, send.Start)              # freed
null = world.Send_init(out, dest=MPI.PROC_NULL)
null.Start()
null.Wait()
assert MPI.REQUEST_NULL.Wait() and MPI.REQUEST_NULL == MPI.REQUEST_NULL

# Free: the handle becomes COMM_NULL; what was under way still completes.
pending = dup.irecv(source=wleft, tag=1)
dup.send(("last on dup", rank), dest=wright, tag=1)
dup.Free()
assert dup == MPI.COMM_NULL and not dup and dup.Get_name() == "MPI_COMM_NULL"
assert pending.wait() == ("last on dup", wleft)
fails(MPI.ERR_COMM, dup.Get_rank)
fails(MPI.ERR_COMM, dup.send, 1, 0)
fails(MPI.ERR_COMM, dup.Free)
fails(MPI.ERR_COMM, dup.Barrier)
fails(MPI.ERR_COMM, MPI.COMM_NULL.Get_size)
fails(MPI.ERR_COMM, world.Free)
fails(MPI.ERR_COMM, MPI.COMM_SELF.Free)
fails(MPI.ERR_COMM, world.Compare, MPI.COMM_NULL)
fails(MPI.ERR_RANK, parity.send, 1, parity.size)      # the communicator's size counts
fails(MPI.ERR_RANK, parity.Recv_init, small_in, parity.size)
try:
    world.Set_name(5)
except TypeError:
    pass
else:
    raise AssertionError("Set_name(5) did not raise")
for comm in (parity, reverse, again, clone) + ((created,) if rank % 2 == 0 else ()):
    comm.Free()
    assert comm == MPI.COMM_NULL

world.send(("last", rank), dest=wright, tag=9)
st = MPI.Status()
assert early.wait(st) == ("last", wleft) and st.Get_source() == wleft
assert MPI.Is_initialized() and not MPI.Is_finalized()
MPI.Finalize()
assert MPI.Is_finalized()
sys.stdout.write(f"ok {rank}\\n")
"""


SHMDAT_ONLY = FAILS + """
import sys, threading
import shmdat
from shmdat.mpi import MPI

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
wright, wleft = (rank + 1) % size, (rank - 1) % size


assert MPI.Get_version() == (3, 1)
assert MPI.get_vendor() == ("shmdat", tuple(int(p) for p in shmdat.__version__.split(".")))
assert shmdat.__version__ in MPI.Get_library_version()
assert (MPI.THREAD_SINGLE, MPI.THREAD_FUNNELED, MPI.THREAD_SERIALIZED,
        MPI.THREAD_MULTIPLE) == (0, 1, 2, 3)
assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
assert MPI.Init_thread() == MPI.Init_thread(MPI.THREAD_MULTIPLE) == MPI.THREAD_MULTIPLE
assert MPI.Init_thread(MPI.THREAD_FUNNELED) == MPI.THREAD_FUNNELED
assert MPI.Init() is None and MPI.Is_initialized() and not MPI.Is_finalized()

# Split's arguments are checked once every rank has given its own: all raise alike (MPICH
# takes a negative color; MPI says it is erroneous).
fails(MPI.ERR_ARG, world.Split, -5 if rank == 0 else 0)
try:
    world.Split(0, "first" if rank == size - 1 else 0)
except TypeError as e:
    assert f"rank {size - 1}" in str(e), e
else:
    raise AssertionError("a str key did not raise")
assert world.Split(0, 0).allreduce(1) == size

group = world.group
fails(MPI.ERR_RANK, group.Incl, [0, 0])
fails(MPI.ERR_RANK, group.Excl, [size])
fails(MPI.ERR_GROUP, world.Split(rank % 2, 0).Create, group)   # not all in the split
# Without a group, Translate_ranks translates to COMM_WORLD's (mpi4py's default).
assert group.Incl([size - 1]).Translate_ranks([0]) == [size - 1]

# Another thread's calls work (tests/test_mpi_threads.py: threads calling at once).
got = []
thread = threading.Thread(target=lambda: got.append(world.sendrecv(rank, dest=wright,
                                                                   source=wleft)))
thread.start()
thread.join(30)
assert not thread.is_alive() and got == [wleft], got

# A freed communicator's context id is never reused: its late message matches nothing new.
old = world.Dup()
if rank == 0:
    old.send("old", dest=1, tag=1)
old.Free()
new = world.Dup()
if rank == 0:
    new.send("new", dest=1, tag=1)
elif rank == 1:
    assert new.recv(source=0, tag=1) == "new"
    assert not new.Iprobe(source=0, tag=1)
new.Barrier()

MPI.Finalize()
assert MPI.Is_finalized()
fails(MPI.ERR_OTHER, MPI.Finalize)
fails(MPI.ERR_OTHER, MPI.Init)
fails(MPI.ERR_OTHER, MPI.Init_thread)
sys.stdout.write(f"ok {rank}\\n")
"""


def run_ok(tmp_path, n, body):
    r = launch(tmp_path, n, body)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return r.stdout


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_communicators_and_persistent_requests(tmp_path, n):
    out = run_ok(tmp_path, n, PROGRAM)
    assert sorted(out.split("\n")[:-1]) == [f"ok {r}" for r in range(n)]


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpi4py(tmp_path):
    """The checks are MPI's, not shmdat's: mpi4py + MPICH passes them too."""
    r = mpi_launch.launch_mpiexec(tmp_path, 3, mpi_launch.as_mpi4py(PROGRAM))
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(r.stdout.split("\n")[:-1]) == [f"ok {r}" for r in range(3)]


def test_namespace_split_errors_threads_and_finalize(tmp_path):
    """shmdat's own answers (MPICH's differ or are not MPI's to give): Get_version,
    get_vendor, the thread level (THREAD_MULTIPLE, and a second thread's calls work), Init
    as a no-op, Split's checks on every rank, group errors, context ids not reused,
    Finalize."""
    out = run_ok(tmp_path, 3, SHMDAT_ONLY)
    assert sorted(out.split("\n")[:-1]) == [f"ok {r}" for r in range(3)]
