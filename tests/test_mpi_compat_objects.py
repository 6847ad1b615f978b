"""What mpi4py's own suite found missing at stop 26 (docs/design/mpi.md, "stop 26: mpi4py's
suite"): MPI._sizeof/_handleof/_addressof, Status.tomemory, the communicator locks and
contexts (_comm_lock, _comm_lock_table, _commctx_intra/inter) and mpi4py.util.pkl5 on them,
Pickle.dumps_oob/loads_oob, Iflush_buffer (MPI, Comm, Session), an Intercomm's
v-collectives and Split, Session's integer handles, handles' == and hash, lowercase scatter
and alltoall of None and of iterables, subclasses of the handle classes. The same program
under mpi4py + MPICH prints the same lines."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import PIDS, SAY, launch_mpi4py, leftovers, pids

PROGRAM = """import ctypes, os, pickle
import numpy as np
from mpi4py import MPI
from mpi4py.util import pkl5
""" + SAY + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size

# The handles' sizes and values (MPICH's: C ints; MPI_File a pointer; MPI_Status 5 ints).
dup = world.Dup()
say(rank, "sizeof", [MPI._sizeof(x) for x in (MPI.Status, MPI.Status(), MPI.Comm, dup, MPI.INT,
    MPI.SUM, MPI.GROUP_EMPTY, MPI.INFO_ENV, MPI.ERRORS_RETURN, MPI.REQUEST_NULL, MPI.WIN_NULL,
    MPI.MESSAGE_NO_PROC, MPI.SESSION_NULL, MPI.FILE_NULL, MPI.Prequest)])
say(rank, "handleof", [hex(MPI._handleof(x)) for x in (world, MPI.COMM_SELF, MPI.COMM_NULL,
    MPI.INT, MPI.DOUBLE, MPI.SUM, MPI.GROUP_EMPTY, MPI.INFO_NULL, MPI.INFO_ENV,
    MPI.ERRORS_RETURN, MPI.REQUEST_NULL, MPI.WIN_NULL, MPI.MESSAGE_NO_PROC,
    MPI.SESSION_NULL, MPI.FILE_NULL)])
say(rank, "not MPI", [outcome(lambda: f(x)) for f in (MPI._sizeof, MPI._handleof,
    MPI._addressof) for x in (None, 1, MPI.BOTTOM)], outcome(lambda: MPI._sizeof(int)))

# A status is its memory: MPICH's five ints, written through tomemory or its address.
status = MPI.Status()
status.source, status.tag = 1, 7
status.Set_elements(MPI.INT, 3)
memory = status.tomemory()
say(rank, "tomemory", memory.format, memory.itemsize, len(memory), memory.readonly,
    memory.tolist())
memory[3] = 42
ctypes.c_int.from_address(MPI._addressof(status) + 16).value = MPI.ERR_TAG
say(rank, "written", status.tag, status.error, status.Get_count(MPI.INT),
    MPI._addressof(status) == MPI._handleof(status))
status.cancelled = True
copy = pickle.loads(pickle.dumps(status))
say(rank, "pickled", copy == status, copy.tag, copy.Is_cancelled(), copy.Get_count(MPI.INT))
say(rank, "overflow", outcome(lambda: setattr(status, "tag", 2**31)))

# The communicator locks: one table per communicator (its handles share it), none copied.
table = MPI._comm_lock_table(dup)
lock = MPI._comm_lock(dup)
say(rank, "locks", type(lock) is type(__import__("threading").Lock()),
    lock is MPI._comm_lock(MPI.Comm(dup), None), lock is not MPI._comm_lock(dup, "x"),
    sorted(map(str, table)), MPI._comm_lock_table(MPI.Comm(dup)) is table)
# Object collectives hold the lock of their name, as mpi4py's (a receive takes none: mpi4py
# receives an object by a matched probe).
dup.bcast(None, 0), dup.gather(rank, 0), dup.scatter(None, 0), dup.allgather(rank), dup.alltoall(None)
say(rank, "named locks", sorted(map(str, table)),
    all(type(table[k]) is type(lock) for k in ("bcast", "gather", "scatter", "allgather", "alltoall")))
dup2 = dup.Dup()
say(rank, "dup locks", MPI._comm_lock_table(dup2), outcome(lambda: MPI._comm_lock(MPI.COMM_NULL)),
    outcome(lambda: MPI._comm_lock(MPI.INT)), outcome(lambda: MPI._comm_lock(dup, [])),
    outcome(lambda: MPI._comm_lock_table(MPI.COMM_NULL)))
dup2.Free()

# Contexts: a duplicate and a counter of tags; an intercommunicator's local group.
ctx, tag = MPI._commctx_intra(dup)
ctx2, tag2 = MPI._commctx_intra(dup)
say(rank, "commctx", ctx == dup, ctx == ctx2, tag, tag2, ctx.Get_size(),
    MPI.Comm.Compare(ctx, dup) == MPI.CONGRUENT, outcome(lambda: MPI._commctx_intra(MPI.INT)),
    outcome(lambda: MPI._commctx_inter(dup)))
if size > 1:
    color = int(rank >= size // 2)
    local = world.Split(color)
    inter = local.Create_intercomm(0, world, size // 2 if color == 0 else 0)
    a = MPI._commctx_inter(inter)
    b = MPI._commctx_inter(inter)
    say(rank, "commctx inter", a[1], b[1], a[0] == inter, a[2].Get_size(), a[3],
        a[2] == b[2], outcome(lambda: MPI._commctx_intra(inter)),
        MPI.Comm.Compare(inter, a[0]) == MPI.CONGRUENT, MPI.Comm.Compare(inter, local))
    inter.Free()
    local.Free()

# mpi4py.util.pkl5 on them: out-of-band buffers of the pickles.
pk = pkl5.Intracomm(dup)
big = np.arange(1 << 17, dtype="i") + rank
got = pk.sendrecv(big, (rank + 1) % size, 0, None, (rank - 1) % size, 0)
bcast = pk.bcast(big if rank == 0 else None, 0)
say(rank, "pkl5", int(got[0]), len(got), bcast.sum() == big.sum() - rank * len(big),
    pk.scatter([i * 10 for i in range(size)] if rank == 0 else None, 0),
    pk.alltoall([rank] * size), pk.allgather(rank))
pickler = MPI.Pickle()
pickler.THRESHOLD = 16
data, buffers = pickler.dumps_oob([np.arange(10), np.arange(2), b"x" * 40])
say(rank, "dumps_oob", [type(b).__name__ for b in buffers], [b.nbytes for b in buffers],
    [list(x) if hasattr(x, "tolist") else x for x in pickler.loads_oob(data, buffers)][:2])
MPI.Comm.Free(dup)

# Lowercase scatter and alltoall: None is size Nones, any iterable is taken.
say(rank, "scatter", world.scatter(None, 0), world.scatter(iter(range(size)), 0),
    outcome(lambda: world.scatter([1] * (size + 1), 0)) if size == 1 else "-",
    world.alltoall(None), world.alltoall(iter(range(size))))

# Nonblocking buffer flushes (MPI 4.1): at once with nothing attached or under way; else once
# the buffered sends have left. (MPICH leaves the status unfilled: not printed.)
flushes = [MPI.Iflush_buffer()]
buf = MPI.Alloc_mem(1 << 16)
MPI.Attach_buffer(buf)
if rank == 0:
    world.Bsend(np.arange(1000, dtype="d"), size - 1, 5)
flush = MPI.Iflush_buffer()
if rank == size - 1:
    got = np.empty(1000)
    world.Recv(got, 0, 5)
flushes += [flush, world.Iflush_buffer()]
say(rank, "iflush", [type(r).__name__ for r in flushes], MPI.Request.Waitall(flushes),
    [bool(r) for r in flushes], outcome(MPI.COMM_NULL.Iflush_buffer),
    outcome(MPI.SESSION_NULL.Iflush_buffer))
MPI.Detach_buffer()
MPI.Free_mem(buf)

# Session's integer handles.
session = MPI.Session.Init()
sbuf = MPI.Alloc_mem(1 << 12)
session.Attach_buffer(sbuf)
say(rank, "session iflush", session.Iflush_buffer().Wait())
session.Detach_buffer()
number = session.toint()
say(rank, "session", hex(MPI.SESSION_NULL.handle), MPI.SESSION_NULL.toint(), hex(number % 2**32),
    MPI.Session.fromint(number) == session, MPI.Session.fromhandle(session.handle) == session)
session.Finalize()

# Handles: == with another type is NotImplemented; none is hashable.
nulls = [MPI.DATATYPE_NULL, MPI.REQUEST_NULL, MPI.INFO_NULL, MPI.ERRHANDLER_NULL,
         MPI.SESSION_NULL, MPI.GROUP_NULL, MPI.WIN_NULL, MPI.OP_NULL, MPI.FILE_NULL,
         MPI.MESSAGE_NULL, MPI.COMM_NULL, MPI.Status()]
say(rank, "eq", [x.__eq__("1") is NotImplemented and x.__ne__("1") is NotImplemented
                 for x in nulls], [x == y for x in nulls for y in nulls].count(True))
kept = []
for i, obj in enumerate(nulls):
    cls = type(f"Sub{i}", (type(obj),), {})
    globals()[cls.__name__] = cls           # (pickle finds it in __main__)
    kept.append(type(pickle.loads(pickle.dumps(cls(obj)))) is cls)
say(rank, "subclass pickled", kept)
say(rank, "hash", [outcome(lambda: hash(x))[0] for x in nulls + [MPI.INT, MPI.SUM, world,
                                                                  MPI.ERRORS_RETURN]])

# Null handles' errors (test_exceptions): ERR_TYPE, ERR_REQUEST as MPICH's.
status = MPI.Status()
done = MPI.COMM_SELF.Isend(bytearray(1), 0, 0)
MPI.COMM_SELF.Recv(bytearray(1), 0, 0)
done.Wait()
say(rank, "null errors", outcome(lambda: status.Get_count(MPI.DATATYPE_NULL)),
    outcome(lambda: status.Get_elements(MPI.DATATYPE_NULL)),
    outcome(lambda: status.Set_elements(MPI.DATATYPE_NULL, 0)), outcome(MPI.DATATYPE_NULL.Commit),
    outcome(MPI.REQUEST_NULL.Free), outcome(MPI.REQUEST_NULL.Cancel), outcome(done.Free),
    outcome(done.Cancel), outcome(MPI.Prequest(MPI.REQUEST_NULL).Free),
    outcome(MPI.Grequest(MPI.REQUEST_NULL).Cancel))
greq = MPI.Grequest.Start()
say(rank, "prequest of", outcome(lambda: MPI.Prequest(greq)), bool(MPI.Prequest(MPI.REQUEST_NULL)))
greq.Complete()
greq.Wait()

# Subclasses.
class MyComm(MPI.Intracomm):
    def __new__(cls, comm=None):
        if comm is not None and comm != MPI.COMM_NULL:
            comm = comm.Dup()
        return super().__new__(cls, comm)
class MyInfo(MPI.Info):
    def __new__(cls, info=None):
        return MPI.Info.__new__(cls, info)
class MyRequest(MPI.Request):
    def __new__(cls, request=None):
        return super().__new__(cls, request)
    def test(self):
        return super(type(self), self).Test()
class MyWin(MPI.Win):
    def __new__(cls, win=None):
        return MPI.Win.__new__(cls, win)
mine = MyComm(world)
clone = mine.Clone()
null = MyComm()
say(rank, "subclass comm", type(mine).__name__, MPI.Comm.Compare(mine, world), mine != world,
    type(clone).__name__, type(mine.Dup()).__name__, isinstance(null, MyComm), bool(null),
    null == MPI.COMM_NULL, outcome(null.Get_size))
clone.Free()
mine.Free()
info = MyInfo(MPI.Info.Create())
info.Set("a", "1")
say(rank, "subclass info", type(info.Dup()).__name__, type(MyInfo.Create()).__name__,
    type(pickle.loads(pickle.dumps(info))).__name__)
request = MyRequest(MPI.COMM_SELF.Isend([bytearray(0), 0, MPI.BYTE], MPI.PROC_NULL))
say(rank, "subclass request", type(request).__name__, request.test(), request.Test(),
    request.Wait())
win = MyWin(MPI.Win.Create(MPI.BOTTOM, comm=MPI.COMM_SELF))
say(rank, "subclass win", type(win).__name__, bool(win))
win.Free()
say(rank, "subclass win freed", bool(win))
"""


@pytest.mark.parametrize("n", [1, 2])
def test_compat_objects(tmp_path, n):
    pytest.importorskip("mpi4py")       # the program takes mpi4py.util.pkl5 from a real mpi4py
    r = launch_mpi4py(tmp_path, n, PIDS + PROGRAM)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "0 written 42 4 3 True" in lines
    assert "0 named locks ['None', 'allgather', 'alltoall', 'bcast', 'gather', 'scatter', 'x'] True" in lines
    assert leftovers(pids(r.stdout)) == []


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [1, 2])
def test_compat_objects_as_under_mpich(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, PROGRAM)


SHMDAT_ONLY = """import types
from shmdat.mpi import MPI
from shmdat.mpi.unimplemented import NotImplementedCall
for obj in (MPI.COMM_WORLD, MPI.INT, MPI.SUM, MPI.INFO_NULL):
    try:
        MPI._addressof(obj)
    except NotImplementedCall as e:
        assert "MPI._addressof" in str(e), e
    else:
        raise AssertionError(obj)
assert not [k for k, v in vars(MPI).items() if isinstance(v, types.ModuleType)]
import mpi4py.MPI
assert not [k for k, v in vars(mpi4py.MPI).items() if isinstance(v, types.ModuleType)]
assert mpi4py.MPI._sizeof(MPI.INT) == 4 and mpi4py.MPI.COMM_WORLD is MPI.COMM_WORLD
print("ok")
"""


def test_what_shmdat_mpi_does_not_do(tmp_path):
    """_addressof of a handle other than a Status: NotImplementedCall (the handle is a Python
    object, no memory a write could change). No module in the MPI namespace, nor the shim's."""
    r = launch_mpi4py(tmp_path, 1, SHMDAT_ONLY)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["ok"]


# An Intercomm of unequal groups (N = 3: one rank and two); ERRORS (set in front): the calls
# MPICH ends the job on.
INTERCOMM_V = """import os
import numpy as np
from mpi4py import MPI
""" + SAY + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size
color = int(rank >= size // 2)
local = world.Split(color)
inter = local.Create_intercomm(0, world, size // 2 if color == 0 else 0)
n, me = inter.remote_size, inter.rank
counts = [i + 1 for i in range(n)]
displs = [sum(counts[:i]) for i in range(n)]
mine = np.full(me + 1, 10 * rank, dtype="i")
got = np.full(sum(counts), -1, dtype="i")
inter.Allgatherv(mine, [got, (counts, displs), MPI.INT])
say(rank, "allgatherv", got.tolist())
sends = np.arange(sum(counts), dtype="i") + 100 * rank
recvd = np.full(n * (me + 1), -1, dtype="i")
inter.Alltoallv([sends, (counts, displs), MPI.INT], [recvd, [me + 1] * n, MPI.INT])
say(rank, "alltoallv", recvd.tolist())
for root_color in (0, 1):
    if color == root_color:
        root = MPI.ROOT if me == 0 else MPI.PROC_NULL
    else:
        root = 0
    out = np.full(sum(counts), -1, dtype="i")
    inter.Gatherv(mine, [out, (counts, displs), MPI.INT] if root == MPI.ROOT else None, root)
    say(rank, "gatherv", root_color, out.tolist() if root == MPI.ROOT else "-")
    mine_out = np.full(me + 1, -1, dtype="i")
    inter.Scatterv([sends, (counts, displs), MPI.INT] if root == MPI.ROOT else None,
                   mine_out if root == 0 else None, root)
    say(rank, "scatterv", root_color, mine_out.tolist() if root == 0 else "-")
for color, key in ((rank % 2, -rank), (0, 0), (MPI.UNDEFINED if rank == 0 else 1, rank)):
    part = inter.Split(color, key)
    say(rank, "split", color, part == MPI.COMM_NULL, *([] if part == MPI.COMM_NULL else
        [part.Is_inter(), part.rank, part.size, part.remote_size, part.allreduce(rank)]))
    if part != MPI.COMM_NULL:
        part.Free()
if ERRORS:     # (MPICH ends the job on them)
    say(rank, "errors", outcome(lambda: inter.Gatherv(mine, None, n + 5)),
        outcome(lambda: inter.Allgatherv(MPI.IN_PLACE, [got, (counts, displs), MPI.INT])),
        outcome(lambda: inter.Split(-5 if rank == 0 else 0)))
inter.Free()
local.Free()
"""


@pytest.mark.parametrize("n", [2, 3])
def test_intercomm_v_collectives(tmp_path, n):
    """Gatherv, Scatterv (both groups as the root's), Allgatherv, Alltoallv, Split on an
    Intercomm of unequal groups; a bad root ERR_ROOT, IN_PLACE ERR_BUFFER, a negative color
    ERR_ARG on every rank."""
    r = launch_mpi4py(tmp_path, n, "ERRORS = True\n" + INTERCOMM_V)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert f"{n - 1} errors ('MPI', 7) ('MPI', 1) ('MPI', 12)" in lines
    if n == 3:
        assert "0 allgatherv [10, 20, 20]" in lines and "2 allgatherv [0]" in lines


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [2, 3])
def test_intercomm_v_collectives_as_under_mpich(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, "ERRORS = False\n" + INTERCOMM_V)
