"""Behaviours that mpi4py's own unit tests found wrong or missing in shmdat.mpi (see
tools/mpi4py_suite.py), each checked here by a program of our own written from what mpi4py
+ MPICH do. The program runs unchanged under `shmdat run --mpi4py` and, when both are
installed, under MPICH's mpiexec with the real mpi4py: the same checks pass on both."""

import pytest

from tests import mpi_launch

PROGRAM = mpi_launch.FAILS.replace("def fails", "from mpi4py import MPI\n\n\ndef fails") + """
import os
import pickle
import sys
import warnings

import mpi4py
import numpy as np

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = 0

# MPI.DATATYPE_NULL: false, named, no size or extent.
null = MPI.DATATYPE_NULL
assert not null and null == MPI.DATATYPE_NULL and null != MPI.INT and MPI.INT != null
assert null.Get_name() == "MPI_DATATYPE_NULL"
checks += fails(MPI.ERR_TYPE, null.Get_size) + fails(MPI.ERR_TYPE, null.Get_extent)
checks += fails(MPI.ERR_TYPE, lambda: null.size) + fails(MPI.ERR_TYPE, lambda: null.extent)

# MPI.BOTTOM: address 0, not IN_PLACE.
assert MPI.BOTTOM == 0 and MPI.BOTTOM != MPI.IN_PLACE and isinstance(MPI.BOTTOM, MPI.BottomType)

# A DLPack tensor without the buffer protocol is a buffer too (sent from, received into).


class DLPackOnly:
    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


sent, got = np.arange(6, dtype="i").reshape(2, 3) + rank, np.zeros((2, 3), "i")
comm.Sendrecv(DLPackOnly(sent), rank, 21, [DLPackOnly(got), MPI.INT], rank, 21)
assert (got == sent).all(), got
flags = np.zeros(3, "?")
comm.Sendrecv([DLPackOnly(np.array([True, False, True])), MPI.C_BOOL], rank, 22,
              DLPackOnly(flags), rank, 22)
assert flags.tolist() == [True, False, True]

# A collective's buffer None where MPI takes IN_PLACE is IN_PLACE, as mpi4py reads it.
blocks = np.full((size, 2), -1, "i")
blocks[rank] = rank
comm.Allgather(None, blocks)
assert blocks.tolist() == [[r, r] for r in range(size)]
total = np.full(3, rank + 1, "i")
comm.Allreduce(None, total)
assert total.tolist() == [size * (size + 1) // 2] * 3
for root in range(size):
    gathered = np.full((size, 2), -1, "i") if rank == root else None
    if rank == root:
        gathered[root] = root
    comm.Gather(None if rank == root else np.full(2, rank, "i"), gathered, root)
    assert rank != root or gathered.tolist() == [[r, r] for r in range(size)]
    scattered = np.arange(size, dtype="i") * 5 if rank == root else np.zeros(1, "i")
    comm.Scatter(scattered if rank == root else None, None if rank == root else scattered,
                 root)
    assert scattered[rank if rank == root else 0] == 5 * rank
    reduced = np.full(2, rank + 1, "i")
    comm.Reduce(None if rank == root else reduced, reduced if rank == root else None,
                MPI.SUM, root)
    assert rank != root or reduced.tolist() == [size * (size + 1) // 2] * 2
swapped = np.arange(size, dtype="i") + 10 * rank
comm.Alltoall(None, swapped)
assert swapped.tolist() == [10 * r + rank for r in range(size)]
prefix = np.full(1, rank + 1, "i")
comm.Scan(None, prefix)
assert prefix[0] == (rank + 1) * (rank + 2) // 2

# mpi4py's other names of the named datatypes, its `name` property, KEYVAL_INVALID.
assert MPI.UNSIGNED_INT == MPI.UNSIGNED and MPI.SIGNED_INT == MPI.INT
assert MPI.SINT64_T == MPI.INT64_T and MPI.INT_INT == MPI.TWOINT and MPI.BOOL == MPI.C_BOOL
assert MPI.INT.name == MPI.INT.Get_name() == "MPI_INT"
assert MPI.C_LONG_DOUBLE_COMPLEX.Get_size() == 32
assert MPI.APPNUM != MPI.KEYVAL_INVALID
checks += fails(MPI.ERR_KEYVAL, comm.Get_attr, MPI.KEYVAL_INVALID)
# Datatype.fromcode: buffer formats and numpy's kind + size.
for code, name in (("i", "MPI_INT"), ("d", "MPI_DOUBLE"), ("Zd", "MPI_C_DOUBLE_COMPLEX"),
                   ("i4", "MPI_INT32_T"), ("u8", "MPI_UINT64_T"), ("f8", "MPI_DOUBLE"),
                   ("?", "MPI_C_BOOL"), ("b1", "MPI_C_BOOL"), ("G", "MPI_C_LONG_DOUBLE_COMPLEX")):
    assert MPI.Datatype.fromcode(code).Get_name() == name, code
checks += fails(ValueError, MPI.Datatype.fromcode, "abc@xyz")

# Object receives: an empty message is None; a given buffer (deprecated in recv: a
# UserWarning) receives the pickle, and a longer one is ERR_TRUNCATE.
other = (rank + 1) % size
comm.Isend([None, 0, "B"], rank)
assert comm.irecv(None, rank).wait() is None
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert comm.recv(bytearray(0), MPI.PROC_NULL) is None
    comm.send("x" * 300, rank, 1)
    checks += fails(MPI.ERR_TRUNCATE, comm.recv, bytearray(100), rank, 1)
    comm.send({"k": 1}, rank, 2)
    assert comm.recv(128, rank, 2) == {"k": 1}
    assert comm.sendrecv(5, rank, 3, bytearray(64), rank, 3) == 5
assert [str(w.message) for w in caught] == ["the 'buf' argument is deprecated"] * 4
assert all(w.category is UserWarning for w in caught)
request = comm.irecv(bytearray(1 << 20), other, 4)      # a rendezvous into the buffer
comm.send(b"y" * 200000, (rank - 1) % size, 4)
assert request.wait() == b"y" * 200000

# Communicator handles: Comm() is null, Comm(comm) another handle to comm (equal, not the
# same object); unhashable; only the predefined ones pickle.
dup = comm.Dup()
assert MPI.Comm(dup) == dup and not MPI.Comm(dup) != dup and MPI.Comm(dup) is not dup
assert dup != comm and MPI.Comm() == MPI.COMM_NULL and MPI.Comm() is not MPI.COMM_NULL
assert not MPI.Comm() and MPI.Intracomm() == MPI.COMM_NULL and MPI.Comm(dup) != MPI.COMM_NULL
try:
    hash(comm)
except TypeError:
    checks += 1
assert pickle.loads(pickle.dumps(comm)) is comm
assert pickle.loads(pickle.dumps(MPI.COMM_NULL)) is MPI.COMM_NULL
copy = pickle.loads(pickle.dumps(MPI.Comm(MPI.COMM_SELF)))
assert copy == MPI.COMM_SELF and copy is not MPI.COMM_SELF
checks += fails(ValueError, pickle.dumps, dup) + fails(TypeError, MPI.Comm, (1, 2, 3))
dup.Free()

# Status(status) copies; Request() is null.
status = MPI.Status()
status.source, status.tag = 1, 2
assert (MPI.Status(status).source, MPI.Status(status).tag) == (1, 2)
checks += fails(TypeError, MPI.Status, 123)
null = MPI.Request()
assert null == MPI.REQUEST_NULL and null is not MPI.REQUEST_NULL and not null
assert null.Wait() is True and null.test() == (True, None) and null.Get_status()

# Request(request) and Prequest(prequest): other handles to the same request, equal to it.
persistent = comm.Send_init(b"", MPI.PROC_NULL, 0)
handle = MPI.Prequest(persistent)
assert type(handle) is MPI.Prequest and handle == persistent and not handle != persistent
assert handle != MPI.REQUEST_NULL
handle.Start()
handle.Wait()
assert handle == persistent
persistent.Free()
request = comm.Irecv(bytearray(1), MPI.PROC_NULL)
handle = MPI.Request(request)
assert handle == request
request.Wait()
assert request == MPI.REQUEST_NULL and handle != request

# Groups: Translate_ranks without a group translates to COMM_WORLD's; no pickle.
group = comm.group
assert group.Translate_ranks([size - 1, 0]) == [size - 1, 0]
assert MPI.Group.Translate_ranks(group) == list(range(size))
checks += fails(ValueError, pickle.dumps, group)
# A predefined op pickles as itself.
assert pickle.loads(pickle.dumps(MPI.SUM)) is MPI.SUM
assert pickle.loads(pickle.dumps(MPI.MAXLOC)) is MPI.MAXLOC

# Cancel: a receive nobody matched is cancelled (its status says so); a send may or may not
# be (MPICH cancels one to itself, shmdat.mpi never a send).
request = comm.irecv(None, rank, 31)
request.cancel()
status = MPI.Status()
assert request.Get_status(status) and status.Is_cancelled() and status.cancelled
request.Wait(status)
assert status.Is_cancelled() and not request
request = comm.issend("x", rank, 33)
request.Cancel()
status = MPI.Status()
request.Get_status(status)
if status.Is_cancelled():
    request.Free()
else:
    assert comm.recv(None, rank, 33) == "x"
    request.Wait(status)
    assert not status.Is_cancelled()
# Status's setters and elements.
status = MPI.Status()
status.Set_elements(MPI.DOUBLE, 3)
assert (status.Get_count(MPI.DOUBLE), status.Get_elements(MPI.DOUBLE), status.count) == (3, 3, 24)
status.Set_source(3)
status.Set_tag(4)
status.Set_error(MPI.ERR_ARG)
status.Set_cancelled(True)
assert (status.source, status.tag, status.error, status.cancelled) == (3, 4, MPI.ERR_ARG, True)
assert MPI.Status(status).Is_cancelled()

# Waitsome, Testsome, testall, Get_status: indices of the done requests, statuses in their
# order, objects; a short tuple of statuses is filled as far as it goes.
assert MPI.Request.Waitsome([MPI.Request()]) is None and MPI.Request.testsome([]) == (None, None)
requests = [comm.irecv(None, other, 11), comm.irecv(None, other, 12),
            comm.Irecv(bytearray(3), other, 13)]
assert MPI.Request.Testsome(requests) == [] and MPI.Request.testall(requests) == (False, None)
assert not requests[0].Get_status()
comm.Barrier()                  # (every rank has looked before any sends)
back = (rank - 1) % size
comm.send("b", back, 12)
comm.Send(b"xyz", back, 13)
done = []
while len(done) < 2:
    statuses = []
    indices, objects = MPI.Request.waitsome(requests, statuses)
    assert len(statuses) == len(indices)
    done += [(i, obj, s.Get_tag()) for i, obj, s in zip(indices, objects, statuses)]
assert sorted(done) == [(1, "b", 12), (2, None, 13)], done
assert not requests[1] and not requests[2] and requests[0]
comm.send("a", back, 11)
status = MPI.Status()
while not requests[0].Get_status(status):
    pass
assert status.Get_tag() == 11 and requests[0]    # not finished by Get_status
assert MPI.Request.testall(requests) == (True, ["a", None, None]) and not requests[0]
statuses = (MPI.Status(),)
assert MPI.Request.Waitall([comm.isend(1, back, 14), comm.irecv(None, other, 14)], statuses)
assert statuses[0].Get_tag() == MPI.ANY_TAG    # (the send's status: no source or tag)

# `import mpi4py.rc` is mpi4py.rc; its class takes the options.
assert sys.modules["mpi4py.rc"] is mpi4py.rc and type(mpi4py.rc)(threads=False).threads is False

# A Sendrecv whose send or receive buffer is refused posts nothing: the next one is not
# matched by a receive or message the refused one left behind.
self_comm = MPI.COMM_SELF
good, got = bytearray(b"abcd"), bytearray(4)
checks += fails(ValueError, self_comm.Sendrecv, [good, -1], 0, 0, got, 0, 0)       # send: bad count
checks += fails(ValueError, self_comm.Sendrecv, good, 0, 0, [got, -1], 0, 0)       # receive: bad count
checks += fails(MPI.ERR_RANK, self_comm.Sendrecv, good, 7, 0, got, 0, 0)
self_comm.Sendrecv(good, 0, 0, got, 0, 0)
assert got == good, got

os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # one write: the ranks share the pipe
"""


def test_under_shmdat(tmp_path):
    r = mpi_launch.launch(tmp_path, 2, PROGRAM, launcher=("--mpi4py", "--"))
    mpi_launch.check_every_rank_agrees(r, 2)


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpi4py(tmp_path):
    """The checks are MPI's and mpi4py's, not shmdat's: mpi4py + MPICH passes them too."""
    r = mpi_launch.launch_mpiexec(tmp_path, 2, PROGRAM)
    mpi_launch.check_every_rank_agrees(r, 2)


SHMDAT_ONLY = """
from mpi4py import MPI
from shmdat.mpi.unimplemented import NotImplementedCall


class CudaOnly:                   # an array offering the CUDA array interface only
    __cuda_array_interface__ = {"version": 0, "data": (0, False), "typestr": "<i4",
                                "shape": (1,)}


for buf in ([MPI.BOTTOM, 1, MPI.INT], CudaOnly()):   # mpi4py takes them, shmdat.mpi not
    try:
        MPI.COMM_WORLD.Send(buf, MPI.PROC_NULL)
    except NotImplementedCall as e:
        assert "not implemented by shmdat.mpi" in str(e), e
    else:
        raise AssertionError(buf)
try:
    MPI.COMM_WORLD.Send(object(), MPI.PROC_NULL)
except TypeError as e:
    assert not isinstance(e, NotImplementedError), e
else:
    raise AssertionError("object() is no buffer")
# A receive a message has matched is not cancelled (MPICH's send to itself may still be
# unmatched there, so shmdat only).
request = MPI.COMM_WORLD.Irecv(bytearray(4), 0, 32)
MPI.COMM_WORLD.Send(b"ab", 0, 32)
request.Cancel()
status = MPI.Status()
request.Wait(status)
assert not status.Is_cancelled() and status.Get_count() == 2
# Free_mem of memory Alloc_mem did not give, or gave back already, and a negative size (MPI
# leaves them erroneous, MPICH undefined: shmdat only).
memory = MPI.Alloc_mem(4)
MPI.Free_mem(memory)
for call, arg in ((MPI.Free_mem, memory), (MPI.Free_mem, bytearray(4)), (MPI.Alloc_mem, -1)):
    try:
        call(arg)
    except MPI.Exception as e:
        assert e.Get_error_class() == MPI.ERR_ARG, e
    else:
        raise AssertionError((call, arg))
print("ok")
"""


def test_what_shmdat_does_not_take_is_named(tmp_path):
    """What mpi4py takes as a buffer and shmdat.mpi does not raises NotImplementedCall."""
    r = mpi_launch.launch(tmp_path, 1, SHMDAT_ONLY, launcher=("--mpi4py", "--"))
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr


# Groups as mpi4py's handles: GROUP_NULL, GROUP_EMPTY, Dup, Union, Intersection, Difference,
# Range_incl/Range_excl, Free, pickling (mpi4py's own group tests stopped at GROUP_EMPTY).
GROUPS = """
import os
import pickle
from mpi4py import MPI
c = MPI.COMM_WORLD
g = c.Get_group()
assert MPI.Group.Compare(MPI.Group.Union(MPI.GROUP_EMPTY, g), g) == MPI.IDENT
assert MPI.Group.Compare(MPI.Group.Difference(g, g), MPI.GROUP_EMPTY) == MPI.IDENT
assert MPI.Group.Compare(MPI.Group.Intersection(g, MPI.GROUP_EMPTY), MPI.GROUP_EMPTY) == MPI.IDENT
assert MPI.Group.Compare(g.Range_incl([(0, g.size - 1, 1)]), g) == MPI.IDENT
assert MPI.Group.Compare(g.Range_excl([(0, g.size - 1, 1)]), MPI.GROUP_EMPTY) == MPI.IDENT
assert g.Range_incl([(g.size - 1, 0, -1)]).Translate_ranks([0], g) == [g.size - 1]
assert MPI.Group() == MPI.GROUP_NULL and not MPI.GROUP_NULL and MPI.GROUP_EMPTY
assert MPI.Group() is not MPI.GROUP_NULL
assert pickle.loads(pickle.dumps(MPI.GROUP_NULL)) is MPI.GROUP_NULL
assert pickle.loads(pickle.dumps(MPI.GROUP_EMPTY)) is MPI.GROUP_EMPTY
x = pickle.loads(pickle.dumps(MPI.Group(MPI.GROUP_EMPTY)))
assert x == MPI.GROUP_EMPTY and x is not MPI.GROUP_EMPTY
assert MPI.GROUP_EMPTY.Get_rank() == MPI.UNDEFINED and MPI.GROUP_EMPTY.Get_size() == 0
d = g.Dup(); assert MPI.Group.Compare(d, g) == MPI.IDENT and d != g
d.Free(); assert d == MPI.GROUP_NULL
try:
    d.Get_size()
except MPI.Exception as e:
    assert e.Get_error_class() == MPI.ERR_GROUP
else:
    raise AssertionError("a freed group has a size")
try:
    g.Range_incl([(0, 0, 0)])
except MPI.Exception as e:
    assert e.Get_error_class() in (MPI.ERR_ARG, MPI.ERR_RANK), e.Get_error_class()
else:
    raise AssertionError("stride 0")
try:
    pickle.dumps(g)
except ValueError:
    pass
os.write(1, f"rank {c.rank}: ok\\n".encode())    # one write: the ranks share the pipe
"""


# Ops as mpi4py's handles: OP_NULL and Op() (false; calling it TypeError or ValueError),
# Op(op), is_predefined, pickling, Free; REPLACE and NO_OP called on objects.
OPS = """
import os
import pickle
from mpi4py import MPI
checks = 0
op = MPI.Op()
assert not op and op == MPI.OP_NULL and op is not MPI.OP_NULL and MPI.OP_NULL.is_predefined
for args, error in (((), TypeError), ((None,), TypeError), ((None, None), ValueError)):
    try:
        MPI.OP_NULL(*args)
    except error:
        checks += 1
    else:
        raise AssertionError(args)
for predefined in (MPI.SUM, MPI.MAX, MPI.MINLOC, MPI.OP_NULL, MPI.NO_OP):
    assert predefined.is_predefined
    assert pickle.loads(pickle.dumps(predefined)) is predefined
    other = pickle.loads(pickle.dumps(MPI.Op(predefined)))
    assert other is not predefined and other == predefined
    checks += 1
assert MPI.Op(MPI.MAX)(2, 3) == 3 and MPI.MIN(2, 3) == 2
assert MPI.REPLACE(2, 3) == 3 and MPI.NO_OP(2, 3) == 2
mine = MPI.Op.Create(lambda a, b, t: b, commute=True)
assert not mine.is_predefined and MPI.Op(mine) == mine
copy = pickle.loads(pickle.dumps(MPI.Op.Create(max, commute=True)))
assert copy != mine and copy.Is_commutative()
mine.Free()
assert mine == MPI.OP_NULL and not mine
os.write(1, f"rank {MPI.COMM_WORLD.rank}: {checks} checks\\n".encode())    # one write
"""


# mpi4py's buffer specs with a count alone, a datatype of None, and a displacement, sending
# and receiving.
SPECS = """
import os

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, other = comm.rank, 1 - comm.rank
checks = 0
data = np.arange(6, dtype="d")
for send, recv_len, expect in (([data, None], 6, data),                    # T None: the buffer's
                               ([data, 2], 2, data[:2]),                   # a count alone
                               ([data, (2, 1), MPI.DOUBLE], 2, data[1:3]),  # (count, displ), T
                               ([data, 3, 2, MPI.DOUBLE], 3, data[2:5]),     # count, displ, T
                               ([data, (4, 2)], 4, data[2:6])):            # (count, displ)
    out = np.zeros(recv_len)
    if rank == 0:
        comm.Send(send, other, 5)
        comm.Recv([out, recv_len, MPI.DOUBLE], other, 5)
    else:
        comm.Recv(out, other, 5)
        comm.Send(out, other, 5)
    assert (out == expect).all(), (send, out)
    checks += 1
inbox = np.zeros(4)
if rank == 1:                     # a receive spec with a displacement fills from there
    comm.Recv([inbox, (2, 2), MPI.DOUBLE], 0, 6)
    assert list(inbox) == [0, 0, 7, 8]
    checks += 1
elif rank == 0:
    comm.Send(np.array([7.0, 8.0]), 1, 6)
    checks += 1
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # one write
"""


# Alloc_mem and Free_mem: memory of the size asked for, zeroed with mem[:] = 0, a window's
# memory and a receive buffer.
MEMORY = """
import os

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
checks = 0
for n in (0, 1, 100, 9000):
    memory = MPI.Alloc_mem(n, MPI.INFO_NULL) if n else MPI.Alloc_mem(n)
    assert len(memory) == n
    memory[:] = 0
    MPI.Free_mem(memory)
    checks += 1
memory = MPI.Alloc_mem(8 * size)             # a window over it; each rank puts its rank there
memory[:] = 0
win = MPI.Win.Create(memory, 1, MPI.INFO_NULL, comm)
win.Fence()
win.Put(np.array([rank + 1], np.int64), (rank + 1) % size, target=(8 * rank, 1, MPI.INT64_T))
win.Fence()
win.Free()
left = (rank - 1) % size
assert np.frombuffer(memory, np.int64)[left] == left + 1, np.frombuffer(memory, np.int64)
checks += 1
out = MPI.Alloc_mem(8)                      # and a receive into it
comm.Sendrecv(np.array([rank], np.int64), (rank + 1) % size, recvbuf=[out, MPI.INT64_T],
              source=left)
assert np.frombuffer(out, np.int64)[0] == left
MPI.Free_mem(out)
MPI.Free_mem(memory)
os.write(1, f"rank {rank}: {checks + 1} checks\\n".encode())    # one write
"""


# Each program above, with the ranks it runs on: the same checks under shmdat and MPICH.
PROGRAMS = {"groups": (GROUPS, 3), "groups-alone": (GROUPS, 1), "ops": (OPS, 2),
            "specs": (SPECS, 2), "alloc_mem": (MEMORY, 3)}


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_under_shmdat(tmp_path, name):
    program, n = PROGRAMS[name]
    r = mpi_launch.launch(tmp_path, n, program, launcher=("--mpi4py", "--"))
    mpi_launch.check_every_rank_agrees(r, n)


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_under_mpi4py(tmp_path, name):
    program, n = PROGRAMS[name]
    mpi_launch.check_every_rank_agrees(mpi_launch.launch_mpiexec(tmp_path, n, program), n)
