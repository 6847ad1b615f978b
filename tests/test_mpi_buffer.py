"""shmdat.mpi's MPI.buffer (mpi4py's), by real launches: an empty buffer, buffers over an
object's memory, at an address and newly allocated; the buffer protocol (memoryview, numpy);
indexing, slicing and assignment with every error mpi4py raises; cast, toreadonly, release;
Alloc_mem/Free_mem and Win.tomemory giving one, and buffers as messages (sends, receives,
a window's memory, a buffered send's buffer). The program runs unchanged under mpi4py +
MPICH too (the import aside), which is where its expectations come from; the few checks of
what shmdat alone promises are marked OURS."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, check_every_rank_agrees, launch

BUFFER = FAILS + """
import array
import copy
import os
import pickle
import numpy as np
from shmdat.mpi import MPI

comm = MPI.COMM_WORLD.Dup()
rank, size = comm.rank, comm.size
right, left = (rank + 1) % size, (rank - 1) % size
OURS = MPI.get_vendor()[0] == "shmdat"
checks = 0


def raises(error, call, *args):
    try:
        call(*args)
    except error:
        return 1
    raise AssertionError(f"{call}{args} did not raise {error.__name__}")


def view_of(buf):
    m = memoryview(buf)
    return m.format, m.itemsize, m.ndim, m.readonly, m.shape, m.strides, m.tobytes()


# An empty buffer.
empty = MPI.buffer()
assert (empty.address, empty.obj, empty.nbytes, empty.readonly) == (0, None, 0, False)
assert (empty.format, empty.itemsize, len(empty), bool(empty)) == ("B", 1, 0, False)
assert view_of(empty) == ("B", 1, 1, False, (0,), (1,), b"")
empty[:] = 0
empty[:] = MPI.buffer()
assert MPI.memory is MPI.buffer

# Over an object's memory: its obj is the object, read-only if the object is.
data = bytearray(b"abcdef")
buf = MPI.buffer(data)
assert buf.obj is data and buf.nbytes == len(buf) == 6 and not buf.readonly and buf
assert buf.address == MPI.Get_address(data) != 0
assert view_of(buf) == ("B", 1, 1, False, (6,), (1,), b"abcdef")
ro = MPI.buffer(b"xyz")
assert ro.readonly and view_of(ro)[3] and ro.tobytes() == b"xyz"
checks += raises(TypeError, ro.__setitem__, 0, 1)
checks += raises(TypeError, ro.__setitem__, slice(0, 1), b"a")
assert MPI.buffer(array.array("i", [1, 2, 3])).nbytes == 12
assert MPI.buffer(buf).obj is buf
for bad in (None, 0, 0.5, [], (), "abc"):
    checks += raises(TypeError, MPI.buffer, bad)
checks += raises(BufferError, MPI.buffer, memoryview(bytearray(4))[::2])

# Indexing gives ints; a slice is a buffer over those bytes (its obj the buffer sliced).
assert buf[0] == ord("a") and buf[-1] == ord("f") and type(buf[0]) is int
part = buf[1:4]
assert type(part) is MPI.buffer and part.obj is buf and part.address == buf.address + 1
assert part.tobytes() == b"bcd" and buf[4:2].nbytes == 0 and buf[3:100].tobytes() == b"def"
assert list(buf) == list(b"abcdef") and ord("c") in buf and 7 not in buf
buf[0] = 65
buf[1:3] = b"BC"
buf[4:] = 0
assert data == bytearray(b"ABCd\\0\\0")
buf[:] = 255
assert data == bytearray(b"\\xff" * 6)
buf[1:5] = array.array("B", [1, 2, 3, 4])
buf[0:2] = buf[1:3]                           # overlapping
assert data == bytearray([1, 2, 2, 3, 4, 255])
wide = MPI.buffer.allocate(8)
wide[:] = array.array("i", [7, 8])            # the raw bytes of any buffer
assert np.frombuffer(wide, np.int32).tolist() == [7, 8]
for index in (6, -7):
    checks += raises(IndexError, buf.__getitem__, index)
    checks += raises(IndexError, buf.__setitem__, index, 0)
checks += raises(IndexError, buf.__getitem__, slice(None, None, 2))
checks += raises(IndexError, buf.__setitem__, slice(None, None, 2), 0)
for index in (None, "a", (0, 1)):
    checks += raises(TypeError, buf.__getitem__, index)
checks += raises(TypeError, buf.__setitem__, None, 0)
checks += raises(TypeError, buf.__setitem__, 0, b"a")
for value in ("ab", [1, 2], 1.5):
    checks += raises(TypeError, buf.__setitem__, slice(0, 2), value)
for value in (256, -1):
    checks += raises(OverflowError, buf.__setitem__, 0, value)
    checks += raises(OverflowError, buf.__setitem__, slice(0, 2), value)
checks += raises(ValueError, buf.__setitem__, slice(0, 2), b"xyz")
checks += raises(ValueError, buf.__setitem__, slice(0, 1), buf[1:3])
checks += raises(ValueError, buf.__setitem__, slice(4, 10), b"abcd")
checks += raises(NotImplementedError, buf.__delitem__, 0)

# Identity, not contents; neither pickled nor copied.
assert buf == buf and buf != MPI.buffer(data) and hash(buf) == hash(buf)
for call in (pickle.dumps, copy.copy, copy.deepcopy):
    checks += raises(TypeError, call, buf)

# cast, toreadonly.
mem = MPI.buffer.allocate(2 * 3 * 4)
ints = mem.cast("i")
for i in range(6):
    ints[i] = i
assert mem.cast("i", (2, 3)).tolist() == [[0, 1, 2], [3, 4, 5]]
assert mem.cast("i", [3, 2])[2, 1] == 5
checks += raises(TypeError, mem.cast, "i", (4,))
frozen = mem.toreadonly()
assert frozen.readonly and not mem.readonly and frozen.address == mem.address
assert frozen.obj is mem.obj and frozen.nbytes == mem.nbytes and frozen.cast("i").readonly

# frombuffer, fromaddress, allocate.
assert MPI.buffer.frombuffer(b"abc", readonly=True).obj == b"abc"
checks += raises(BufferError, MPI.buffer.frombuffer, b"abc")
checks += raises(BufferError, MPI.buffer.frombuffer, b"abc", False)
writable = MPI.buffer.frombuffer(array.array("B", [1, 2, 3]))
assert not writable.readonly and view_of(writable)[-1] == b"\\1\\2\\3"
for bad in (None, 0, 0.5, []):
    checks += raises(TypeError, MPI.buffer.frombuffer, bad)
target = array.array("B", [1, 2, 3])
address, count = target.buffer_info()
at = MPI.buffer.fromaddress(address, count)
assert at.obj is None and at.address == address and at.nbytes == 3 and not at.readonly
at[:] = 1
at[1:] = array.array("B", [7, 7])
assert target == array.array("B", [1, 7, 7])
assert MPI.buffer.fromaddress(address, count, readonly=True).readonly
assert MPI.buffer.fromaddress(0, 0).address == 0
checks += raises(ValueError, MPI.buffer.fromaddress, address, -1)
checks += raises(ValueError, MPI.buffer.fromaddress, 0, 1)
checks += raises(TypeError, MPI.buffer.fromaddress, None, 1)
for n in (0, 1, 2, 1024):
    new = MPI.buffer.allocate(n, True)
    assert new.nbytes == n and new.address != 0 and memoryview(new.obj).nbytes == n
    assert new.tobytes() == bytes(n)
checks += raises(TypeError, MPI.buffer.allocate, None)
checks += raises(ValueError, MPI.buffer.allocate, -1)

# release: empty, address 0, obj None.
data = bytearray(b"xyz")
gone = MPI.buffer.frombuffer(data)
before = memoryview(gone)
gone.release()
assert (gone.address, gone.nbytes, len(gone), gone.readonly, gone.obj) == (0, 0, 0, False, None)
assert gone.tobytes() == b"" and memoryview(gone).nbytes == 0 and not gone
checks += raises(IndexError, gone.__getitem__, 0)
gone.release()
if OURS:                # a memoryview taken before still reads live memory
    assert before.tobytes() == b"xyz"

# Alloc_mem's memory is a buffer; Free_mem releases it.
for n in (0, 16, 100_000):
    mem = MPI.Alloc_mem(n)
    assert type(mem) is MPI.buffer and mem.address != 0 and len(mem) == n and not mem.readonly
    mem[:] = 7
    assert (np.frombuffer(mem, np.uint8) == 7).all()
    MPI.Free_mem(mem)
    assert (mem.address, mem.nbytes, mem.readonly) == (0, 0, False)

# A window's memory: a new buffer at each call, over the window's bytes.
win = MPI.Win.Allocate(8 * size, 8, comm=comm)
mem = win.tomemory()
assert type(mem) is MPI.buffer and mem.obj == win and mem.format == "B"
assert mem.address == win.Get_attr(MPI.WIN_BASE) == MPI.Get_address(mem) != 0
assert len(mem) == win.Get_attr(MPI.WIN_SIZE) == 8 * size
again = win.tomemory()
assert again is not mem and again != mem and again.address == mem.address
mem[:] = 0
win.Fence()
win.Put(np.array([rank + 10], np.int64), right, target=rank)
win.Fence()
assert np.frombuffer(win.tomemory(), np.int64)[left] == left + 10
win.Free()
checks += fails(MPI.ERR_WIN, win.tomemory)
bottom = MPI.Win.Create(MPI.BOTTOM, comm=comm)
assert (bottom.tomemory().address, len(bottom.tomemory())) == (0, 0)
bottom.Free()
memory = MPI.Alloc_mem(16)
created = MPI.Win.Create(memory, comm=comm)
assert created.tomemory().address == memory.address and created.tomemory().nbytes == 16
created.Free()
MPI.Free_mem(memory)

# Buffers as messages: eager and rendezvous, into a buffer; a buffered send's buffer.
for n in (5, 300_000):
    out = MPI.buffer.allocate(n, True)
    out[:] = rank + 1
    into = MPI.Alloc_mem(n)
    comm.Sendrecv(out, right, recvbuf=into, source=left)
    assert into[0] == into[n - 1] == left + 1 and into.tobytes() == bytes([left + 1]) * n
    MPI.Free_mem(into)
attached = MPI.Alloc_mem((1 << 16) + MPI.BSEND_OVERHEAD)
MPI.Attach_buffer(attached)
comm.Bsend(MPI.buffer(b"bsent"), right, 3)
got = bytearray(5)
comm.Recv(got, left, 3)
assert got == b"bsent"
detached = MPI.Detach_buffer()
assert detached.address == attached.address and detached.nbytes == attached.nbytes
MPI.Free_mem(attached)
checks += raises(BufferError, MPI.Attach_buffer, MPI.buffer(b"abc"))

comm.Barrier()
comm.Free()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # (one write: ranks share the pipe)
"""


@pytest.mark.parametrize("n", [1, 3])
def test_buffer(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, BUFFER), n)


@mpi_launch.needs_mpiexec
def test_buffer_under_mpi4py(tmp_path):
    r = mpi_launch.launch_mpiexec(tmp_path, 3, mpi_launch.as_mpi4py(BUFFER))
    check_every_rank_agrees(r, 3)


def test_every_mpi4py_buffer_name_is_implemented(tmp_path):
    """mpi4py 4.1.2's buffer: each public name is here."""
    pytest.importorskip("mpi4py")
    r = launch(tmp_path, 1, """
        import sys
        from mpi4py import MPI as real
        from shmdat.mpi import MPI
        if sys.modules["mpi4py"].__version__ == "4.1.2":
            for name in dir(real.buffer):
                if not name.startswith("_"):
                    assert hasattr(MPI.buffer(), name), name
        print("ok")
    """.replace("\n        ", "\n"))
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr
