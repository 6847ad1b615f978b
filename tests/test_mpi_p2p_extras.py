"""shmdat.mpi matched probes and buffered sends, by real launches. Matched probes
(Comm.Mprobe/Improbe/mprobe/improbe, MPI.Message): handles (MESSAGE_NULL, MESSAGE_NO_PROC,
copies, pickle, toint/fromint), PROC_NULL, wildcards and statuses, eager and rendezvous sizes,
a matched message that no other receive can take (also with threads), truncation, errors.
Buffered sends (Attach_buffer/Detach_buffer/Flush_buffer of the process and of a
communicator, BUFFER_AUTOMATIC, Bsend/Ibsend/Bsend_init/bsend/ibsend): the data copied, the
room a send holds until it has left, ERR_BUFFER without it, the errors. And the small calls
of the namespace: Get_address, Aint_add/Aint_diff, Compute_dims, Comm.Ireduce_scatter. The
programs run
unchanged under mpi4py + MPICH too (the import aside), which is where their expectations
come from."""

import pytest

from shmdat.mpi.memory import BOUNCE_LIMIT
from tests import mpi_launch
from tests.mpi_launch import FAILS, PIDS, check_every_rank_agrees, launch, leftovers, pids

HEAD = FAILS + """
import os
import pickle
import threading
import numpy as np
from shmdat.mpi import MPI

comm = MPI.COMM_WORLD.Dup()
rank, size = comm.rank, comm.size
right, left = (rank + 1) % size, (rank - 1) % size
LARGE = 300_000              # bytes: above shmdat's eager limit (a rendezvous)
checks = 0
""" + f"BOUNCE_LIMIT = {BOUNCE_LIMIT}\n"

TAIL = """
comm.Barrier()
comm.Free()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # (one write: ranks share the pipe)
"""

MATCHED = HEAD + """
# Handles.
null, noproc = MPI.MESSAGE_NULL, MPI.MESSAGE_NO_PROC
assert not null and noproc and null != noproc
assert MPI.Message() == null and MPI.Message(null) == null and MPI.Message(noproc) == noproc
for message in (null, noproc):
    assert pickle.loads(pickle.dumps(message)) is message
    copy = pickle.loads(pickle.dumps(MPI.Message(message)))
    assert copy == message and copy is not message
    assert MPI.Message.fromint(message.toint()) == message
checks += fails(TypeError, MPI.Message, 5)
checks += fails(TypeError, hash, noproc)

# PROC_NULL: MESSAGE_NO_PROC, which receives nothing; a handle to it becomes MESSAGE_NULL,
# the constant stays.
status = MPI.Status()
m = comm.Mprobe(MPI.PROC_NULL, 3, status)
assert m == noproc and (status.source, status.tag, status.Get_count()) == (MPI.PROC_NULL,
                                                                           MPI.ANY_TAG, 0)
assert comm.Improbe(MPI.PROC_NULL) == noproc and comm.improbe(MPI.PROC_NULL) == noproc
m.Recv(None, status)
assert m == null and status.source == MPI.PROC_NULL
noproc.Recv(None)
noproc.Irecv(None).Wait()
assert noproc.recv() is None and noproc.irecv().wait() is None and noproc
request = comm.mprobe(MPI.PROC_NULL).irecv()
assert request != MPI.REQUEST_NULL and request.wait() is None and request == MPI.REQUEST_NULL

# Receives through a null handle or a message received already are ERR_REQUEST.
for call in (null.Recv, null.Irecv):
    checks += fails(MPI.ERR_REQUEST, call, bytearray(1))
for call in (null.recv, null.irecv):
    checks += fails(MPI.ERR_REQUEST, call)
checks += fails(MPI.ERR_RANK, comm.Mprobe, size + 3)
checks += fails(MPI.ERR_TAG, comm.Improbe, MPI.ANY_SOURCE, -5)

# Nothing has come: Improbe is None and leaves the status as it was.
status = MPI.Status()
assert comm.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status) is None
assert (status.source, status.tag, status.error) == (MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.SUCCESS)
assert MPI.Message.Iprobe(comm) is None and MPI.Message.iprobe(comm) is None
comm.Barrier()           # (nobody sends before every rank has looked)

# Eager and rendezvous arrays, objects, with wildcards: the status says what came; the
# message is out of the queue once matched.
small, large = np.arange(10, dtype="i4") + rank, np.full(LARGE // 8, float(rank))
sends = [comm.Isend(small, right, 1), comm.Isend(large, right, 2),
         comm.isend({"from": rank}, right, 3), comm.isend(list(range(LARGE // 4)), right, 4)]
status = MPI.Status()
m = comm.Mprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
assert m and (status.source, status.tag, status.Get_count(MPI.INT)) == (left, 1, 10)
got = np.zeros(10, "i4")
m.Recv(got, status)
assert not m and (got == np.arange(10) + left).all() and status.tag == 1
m = MPI.Message.Probe(comm, left, 2, status)
assert status.Get_count(MPI.DOUBLE) == LARGE // 8
assert not comm.Iprobe(left, 2)                 # taken: no other receive can match it
got = np.zeros(LARGE // 8)
request = m.Irecv(got)
assert not m
request.Wait(status)
assert (got == left).all() and (status.source, status.tag) == (left, 2)
while (m := comm.improbe(left, 3)) is None:
    pass
assert m.recv() == {"from": left}
m = comm.mprobe(left, MPI.ANY_TAG, status)
assert status.tag == 4 and m.irecv().wait() == list(range(LARGE // 4))
MPI.Request.Waitall(sends)

# A matched message is no other receive's: the second one sent goes to the receive after it.
comm.send("first", right, 5)
comm.send("second", right, 5)
m = comm.mprobe(left, 5)
second = MPI.Message(m)                         # another handle to the same message
assert comm.recv(source=left, tag=5) == "second" and m.recv() == "first"
if MPI.get_vendor()[0] == "shmdat":    # (MPI leaves it undefined; MPICH's is ERR_ARG by chance)
    checks += fails(MPI.ERR_REQUEST, second.recv)

# A synchronous send completes once a matched probe's receive has taken it.
request = comm.Issend(b"sync", right, 6)
buf = bytearray(4)
comm.Mprobe(left, 6).Recv(buf)
request.Wait()
assert buf == b"sync"

# Truncation, as Recv's: ERR_TRUNCATE (the eager and the rendezvous sender still complete).
sends = [comm.Isend(b"0123456789", right, 7), comm.Isend(bytes(LARGE), right, 8)]
checks += fails(MPI.ERR_TRUNCATE, comm.Mprobe(left, 7).Recv, bytearray(4))
checks += fails(MPI.ERR_TRUNCATE, comm.Mprobe(left, 8).Irecv(bytearray(10)).Wait)
MPI.Request.Waitall(sends)

# Threads: each takes whole messages, so the count its matched probe saw is the one it
# receives (with Probe and then Recv, another thread's receive could take it first).
K = 20
sends = [comm.Isend(bytes([i]) * (i + 1), right, 9) for i in range(2 * K)]
taken = []
def take():
    for _ in range(K):
        status = MPI.Status()
        m = comm.Mprobe(left, 9, status)
        n = status.Get_count()
        buf = bytearray(n)
        m.Recv(buf)
        assert buf == bytes([n - 1]) * n, (n, buf[:4])
        taken.append(n)
threads = [threading.Thread(target=take) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join(30)
    assert not t.is_alive()
assert sorted(taken) == list(range(1, 2 * K + 1)), taken
MPI.Request.Waitall(sends)
""" + TAIL


BUFFERED = HEAD + """
OVERHEAD = MPI.BSEND_OVERHEAD
assert OVERHEAD > 0 and repr(MPI.BUFFER_AUTOMATIC) == "BUFFER_AUTOMATIC"
assert MPI.BUFFER_AUTOMATIC and int(MPI.BUFFER_AUTOMATIC) == -2 and MPI.BUFFER_AUTOMATIC == -2
assert pickle.loads(pickle.dumps(MPI.BUFFER_AUTOMATIC)) is MPI.BUFFER_AUTOMATIC
assert len(MPI.Detach_buffer()) == 0            # none attached: an empty buffer

# No buffer attached: ERR_BUFFER (at Start for Bsend_init); PROC_NULL needs none.
checks += fails(MPI.ERR_BUFFER, comm.Bsend, b"x", right)
checks += fails(MPI.ERR_BUFFER, comm.Ibsend, b"x", right)
checks += fails(MPI.ERR_BUFFER, comm.bsend, "x", right)
checks += fails(MPI.ERR_BUFFER, comm.Bsend_init(b"x", right).Start)
comm.Bsend(b"x", MPI.PROC_NULL)
checks += fails(MPI.ERR_RANK, comm.Bsend, b"x", size + 3)
checks += fails(MPI.ERR_TAG, comm.Ibsend, b"x", right, -3)
checks += fails(BufferError, MPI.Attach_buffer, b"read-only")
checks += fails(MPI.ERR_BUFFER, MPI.Attach_buffer, bytearray(OVERHEAD - 1))
MPI.Detach_buffer()             # (MPICH keeps the buffer it refused attached; shmdat does not)

# Buffer, array, object, persistent: the data is copied at the call.
buf = bytearray(4 * (100 + OVERHEAD))
MPI.Attach_buffer(buf)
checks += fails(MPI.ERR_OTHER, MPI.Attach_buffer, bytearray(1000))   # one at a time
a = np.arange(25, dtype="i4") + rank
comm.Bsend(a, right, 1)
request = comm.Ibsend(a * 2, right, 2)
a[:] = -1                                       # (the copies went)
comm.bsend({"from": rank}, right, 3)
request.Wait()
assert comm.ibsend([rank], right, 4).Test()     # (done at once: the data is copied)
b = np.zeros(25, "i4")
persistent = comm.Bsend_init(b, right, 5)
for i in range(2):
    b[:] = i
    persistent.Start()
    persistent.Wait()
persistent.Free()
got = np.zeros(25, "i4")
comm.Recv(got, left, 1)
assert (got == np.arange(25) + left).all()
comm.Recv(got, left, 2)
assert (got == 2 * (np.arange(25) + left)).all()
assert comm.recv(source=left, tag=3) == {"from": left} and comm.recv(source=left, tag=4) == [left]
for i in range(2):
    comm.Recv(got, left, 5)
    assert (got == i).all()
assert MPI.Detach_buffer() is buf               # once every buffered send has left
assert len(MPI.Detach_buffer()) == 0

# A send holds its room until it has left: one too large for shmdat's bounce arena (read
# from its copy by the receiver) until its receive took it.
if size > 1:
    huge = BOUNCE_LIMIT + 1
    buf = np.zeros(huge + OVERHEAD, "u1")
    MPI.Attach_buffer(buf)
    comm.Bsend(np.full(huge, rank % 256, "u1"), right, 6)
    checks += fails(MPI.ERR_BUFFER, comm.Bsend, b"x", right, 7)   # no room while it is out
    comm.Barrier()       # (no rank receives before every rank has looked)
    got = np.zeros(huge, "u1")
    comm.Recv(got, left, 6)
    assert (got == left % 256).all()
    assert MPI.Detach_buffer() is buf
    comm.Barrier()       # (every rank's large message has left: its room is free)

# BUFFER_AUTOMATIC (and None): no limit.
MPI.Attach_buffer(None)
for tag in range(3):
    comm.Bsend(np.full(LARGE, tag, "u1"), right, tag)
for tag in range(3):
    comm.Recv(got := np.zeros(LARGE, "u1"), left, tag)
    assert (got == tag).all()
MPI.Flush_buffer()
assert MPI.Detach_buffer() is MPI.BUFFER_AUTOMATIC

# A communicator's own buffer: its sends use it, other communicators' do not.
assert len(comm.Detach_buffer()) == 0
mine = bytearray(100 + OVERHEAD)
comm.Attach_buffer(mine)
checks += fails(MPI.ERR_BUFFER, MPI.COMM_WORLD.Bsend, b"x", right)
comm.Bsend(bytes(100), right, 8)
comm.Recv(bytearray(100), left, 8)
comm.Flush_buffer()
assert comm.Detach_buffer() is mine
""" + TAIL


SMALL_CALLS = HEAD + """
# Addresses: an int, the buffer's first byte (BOTTOM's and None's 0); MPI_Aint arithmetic.
a = np.arange(10, dtype="f8")
assert MPI.Get_address(a) == a.ctypes.data and MPI.Get_address(a[3:]) - MPI.Get_address(a) == 24
b = bytearray(b"xyz")
assert MPI.Get_address(memoryview(b)[1:]) == MPI.Get_address(b) + 1
assert MPI.Get_address(MPI.BOTTOM) == 0 and MPI.Get_address(None) == 0
assert MPI.Aint_add(MPI.Get_address(a), 8) == MPI.Get_address(a[1:])
assert MPI.Aint_diff(MPI.Get_address(a[4:]), MPI.Get_address(a)) == 32
assert MPI.Aint_diff(28, 100) == -72 and MPI.Aint_add(2**63 - 1, 1) == -2**63
checks += fails(TypeError, MPI.Get_address, [1, 2])
checks += fails(BufferError, MPI.Get_address, a[::2])
checks += fails(TypeError, MPI.Aint_add, "a", 1)
try:
    MPI.Aint_add(2**63, 1)
    raise AssertionError("Aint_add beyond 64 bits")
except OverflowError:
    checks += 1

# Compute_dims: the most balanced grid, non-increasing (what MPICH answers for these).
for nnodes, dims, want in ((6, 2, [3, 2]), (7, 2, [7, 1]), (12, 3, [3, 2, 2]), (16, 3, [4, 2, 2]),
                           (20, 4, [5, 2, 2, 1]), (72, 2, [9, 8]), (1, 3, [1, 1, 1]),
                           (12, [0, 3, 0], [2, 3, 2]), (12, [2, 0, 0], [2, 3, 2]),
                           (6, (0, 3), [2, 3]), (6, [3, 2], [3, 2]), (5, 0, []), (0, [2], [2]),
                           (240, 2, [16, 15]), (1000, 3, [10, 10, 10])):
    assert MPI.Compute_dims(nnodes, dims) == want, (nnodes, dims, MPI.Compute_dims(nnodes, dims))
checks += fails(MPI.ERR_DIMS, MPI.Compute_dims, 12, [5, 0])
checks += fails(MPI.ERR_DIMS, MPI.Compute_dims, 6, [2, 2])
checks += fails(MPI.ERR_DIMS, MPI.Compute_dims, 12, [0, -1])
checks += fails(MPI.ERR_ARG, MPI.Compute_dims, -1, 2)
checks += fails(ValueError, MPI.Compute_dims, 4, -1)

# Ireduce_scatter: counts given (block i: i + 1 elements), gathered (None), IN_PLACE.
counts = [i + 1 for i in range(size)]
send = np.arange(sum(counts), dtype="i8") * (rank + 1)
out = np.zeros(rank + 1, "i8")
request = comm.Ireduce_scatter(send, out, counts, MPI.SUM)
assert isinstance(request, MPI.Request)
request.Wait()
first = sum(counts[:rank])
total = size * (size + 1) // 2
assert (out == np.arange(first, first + rank + 1) * total).all(), out
out[:] = 0
comm.Ireduce_scatter(send, out, None, MPI.MAX).Wait()
assert (out == np.arange(first, first + rank + 1) * size).all(), out
buf = np.arange(2 * size, dtype="f8") + rank
comm.Ireduce_scatter(MPI.IN_PLACE, buf, [2] * size).Wait()
assert (buf[:2] == np.arange(2 * rank, 2 * rank + 2) * size + total - size).all(), buf
checks += fails(ValueError, comm.Ireduce_scatter, send, out, [size + 5] * size)
checks += fails(TypeError, comm.Ireduce_scatter, MPI.IN_PLACE, buf)
""" + TAIL


def _agrees_under_mpi4py(tmp_path, n, program):
    """The same program, importing mpi4py instead, passes under MPICH's mpiexec."""
    r = mpi_launch.launch_mpiexec(tmp_path, n, mpi_launch.as_mpi4py(program))
    check_every_rank_agrees(r, n)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_addresses_dims_and_ireduce_scatter(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, SMALL_CALLS), n)


@mpi_launch.needs_mpiexec
def test_addresses_dims_and_ireduce_scatter_under_mpi4py(tmp_path):
    _agrees_under_mpi4py(tmp_path, 3, SMALL_CALLS)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_buffered_sends(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, BUFFERED), n)


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [2, 3])
def test_buffered_sends_under_mpi4py(tmp_path, n):
    _agrees_under_mpi4py(tmp_path, n, BUFFERED)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_matched_probes(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, MATCHED), n)


@mpi_launch.needs_mpiexec
def test_matched_probes_under_mpi4py(tmp_path):
    _agrees_under_mpi4py(tmp_path, 3, MATCHED)


def test_a_matched_probe_of_a_rank_gone_raises(tmp_path):
    r = launch(tmp_path, 2, PIDS + FAILS + """
        import os
        from shmdat.mpi import MPI
        comm = MPI.COMM_WORLD
        comm.Barrier()
        if comm.rank == 1:
            os._exit(0)
        fails(MPI.ERR_PROC_FAILED, comm.Mprobe, 1)     # (gone without finalizing: failed)
        print("raised")
    """.replace("\n        ", "\n"))
    assert r.returncode == 0 and "raised" in r.stdout, r.stdout + r.stderr
    assert leftovers(pids(r.stdout)) == []


def test_every_mpi4py_message_name_is_implemented_or_listed(tmp_path):
    """mpi4py 4.1.2's Message: each public name is here or in unimplemented.MESSAGE."""
    pytest.importorskip("mpi4py")
    r = launch(tmp_path, 1, """
        import sys
        from mpi4py import MPI as real
        from shmdat.mpi import MPI, unimplemented
        if sys.modules["mpi4py"].__version__ == "4.1.2":
            for name in dir(real.Message):
                if not name.startswith("_"):
                    assert hasattr(MPI.MESSAGE_NULL, name) != (name in unimplemented.MESSAGE), name
        print("ok")
    """.replace("\n        ", "\n"))
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr
