"""Buffer specs as mpi4py reads them, by real launches, line for line against mpi4py + MPICH
where it is installed: DLPack tensors (DLPack 1.x's versioned capsules, read-only tensors,
Fortran order, the checks of the device pair, the capsule and the layout), Fortran-ordered
buffers, byte order, counts given as numpy arrays, an unknown typecode, and the target
argument of one-sided calls."""

import pytest

from tests import mpi_launch

SPECS = """
import ctypes
import enum
import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_SELF


class DLPackOnly:
    \"\"\"A tensor seen through DLPack only (no buffer protocol). `versioned`: its producer
    takes max_version (DLPack 1.x), else it is a producer of DLPack 0.x.\"\"\"

    def __init__(self, array, versioned=True, device=None, capsule=False):
        self.array, self.versioned, self.device, self.capsule = array, versioned, device, capsule

    def __dlpack__(self, stream=None, **kw):
        if self.capsule is not False:
            return self.capsule
        if not self.versioned and kw:
            raise TypeError("__dlpack__() got an unexpected keyword argument")
        return self.array.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__() if self.device is None else self.device()


def exchange(send, recv):
    return outcome(lambda: comm.Sendrecv(send, 0, 0, recv, 0, 0))


for versioned in (True, False):
    sent, got = np.arange(6, dtype="i").reshape(2, 3), np.zeros((2, 3), "i")
    say("tensor", versioned, exchange(DLPackOnly(sent, versioned), DLPackOnly(got, versioned)),
        got.tolist())
    fortran = np.asfortranarray(sent + 10)
    got = np.zeros((2, 3), "i", order="F")
    say("fortran tensor", versioned, exchange(DLPackOnly(fortran, versioned),
                                              DLPackOnly(got, versioned)), got.tolist())
    say("strided tensor", versioned, exchange(DLPackOnly(np.arange(8, dtype="i")[::2], versioned),
                                              np.zeros(4, "i")))
for dtype in ("?", "u1", "i8", "f4", "c8", "c16"):
    sent = np.array([1, 0, 1], dtype)
    got = np.zeros(3, dtype)
    say("dtype", dtype, exchange(DLPackOnly(sent), DLPackOnly(got)), got.tolist())


class LongDoubles:
    \"\"\"A DLPack 0.x producer of long doubles (numpy's own refuses to export them), made
    with ctypes: a DLManagedTensor over an array's memory, in a capsule.\"\"\"

    class Tensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                    ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
                    ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

    def __init__(self, array):
        self.array, self.shape = array, (ctypes.c_int64 * 1)(len(array))
        self.tensor = self.Tensor(array.ctypes.data, 1, 0, 1, 2, 8 * array.itemsize, 1,
                                  self.shape, None, 0, None, None)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.tensor), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)


got = np.zeros(3, np.longdouble)
say("long double tensor", exchange([LongDoubles(np.array([1, 2, 3], np.longdouble)), 2], got),
    [float(v) for v in got])                # (2 of its elements: its datatype counts)
readonly = np.arange(3, dtype="i")
readonly.flags.writeable = False
got = np.zeros(3, "i")
say("read-only tensor sent", exchange(DLPackOnly(readonly), got), got.tolist())
say("read-only tensor received into", exchange(np.zeros(3, "i"), DLPackOnly(readonly)))
say("read-only tensor received into (DLPack 0.x)",
    exchange(np.zeros(3, "i"), DLPackOnly(readonly, versioned=False))[0])
say("address", MPI.Get_address(DLPackOnly(readonly)) == readonly.ctypes.data)
class DLDeviceType(enum.IntEnum):        # (as DLPack producers name the device)
    kDLCPU = 1


say("device as an IntEnum", exchange(DLPackOnly(np.ones(2, "i"), device=lambda: (DLDeviceType.kDLCPU, 0)),
                                     np.zeros(2, "i")))
for device in (lambda: None, lambda: (None, 0), lambda: (1, None), lambda: (1,),
               lambda: (1, 0, 1), None):
    tensor = DLPackOnly(np.zeros(3, "i"), device=device)
    if device is None:
        tensor.__dlpack_device__ = None
    say("device", outcome(lambda: MPI.Get_address(tensor))[0])
say("no capsule", outcome(lambda: MPI.Get_address(DLPackOnly(np.zeros(1), capsule=None))))
say("not a capsule", outcome(lambda: MPI.Get_address(DLPackOnly(np.zeros(1), capsule="a"))))

# Buffers: Fortran order, byte order.
fortran = np.asfortranarray(np.arange(6.0).reshape(2, 3))
got = np.zeros((2, 3), order="F")
say("fortran buffer", exchange(fortran, got), (got == fortran).all())
say("a strided buffer", exchange(np.arange(6.0)[::2], np.zeros(3)))
say("empty, a 0 in the shape", exchange(np.zeros((2, 0)), np.zeros((0, 3))))
for order in ("=", "<", ">"):
    sent = np.arange(3, dtype=np.dtype("i4").newbyteorder(order))
    got = np.zeros(3, sent.dtype)
    say("byte order", order, exchange(sent, got), got.tolist())
    got = np.zeros(3, sent.dtype)
    say("byte order with a datatype", order, exchange([sent, MPI.INT], [got, MPI.INT]),
        got.tolist())

# Counts and displacements given as numpy values; a typecode nobody knows.
send, recv = bytearray(b"abc"), bytearray(4)
say("numpy counts", outcome(lambda: comm.Alltoallv([send, np.array([3])],
                                                   [recv, (3, np.array([1]))])), recv)
recv = bytearray(4)
say("0-d counts", outcome(lambda: comm.Alltoallv([send, np.array(3)], [recv, np.array(3)])), recv)
say("float counts", outcome(lambda: comm.Alltoallv([send, np.array([3.1])],
                                                   [recv, (3, np.array([1.1]))])))
for typecode in ("\\0", "xx", 42, 3.5):
    say("typecode", repr(typecode), outcome(lambda: exchange([bytearray(4), 0, typecode],
                                                            [None, 0, "B"])))

# The target of a one-sided call.
win = MPI.Win.Allocate(64, 1, MPI.INFO_NULL, comm)
win.Fence()
origin = [bytearray(1), 1, MPI.BYTE]
for target in ((0, 1, MPI.BYTE, None), {1: 2, 3: 4}, "ab", 1.5, (0.5, 1, MPI.BYTE),
               (0, None, None), (0, -1, MPI.BYTE), (0, 1, "B"), [2, 1, MPI.BYTE], (3,), (4, 1)):
    say("target", repr(target) if not isinstance(target, (tuple, list)) or len(target) < 3
        else len(target), outcome(lambda: win.Put(origin, 0, target)))
win.Fence()
win.Free()
"""


def test_specs(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 1, SPECS), sort=False)
    assert "tensor True ('ok', None) [[0, 1, 2], [3, 4, 5]]" in lines
    assert "fortran tensor True ('ok', None) [[10, 11, 12], [13, 14, 15]]" in lines
    assert "strided tensor True ('BufferError',)" in lines
    assert "dtype c16 ('ok', None) [(1+0j), 0j, (1+0j)]" in lines
    assert "long double tensor ('ok', None) [1.0, 2.0, 0.0]" in lines
    assert "read-only tensor received into ('BufferError',)" in lines
    assert "read-only tensor received into (DLPack 0.x) BufferError" in lines  # (numpy's refusal)
    assert [line for line in lines if line.startswith("device ") and "IntEnum" not in line] == [
        "device TypeError", "device TypeError", "device TypeError", "device ValueError",
        "device ValueError", "device TypeError"]
    assert "device as an IntEnum ('ok', None)" in lines
    assert "no capsule ('BufferError',)" in lines and "not a capsule ('BufferError',)" in lines
    assert "fortran buffer ('ok', None) True" in lines
    assert "a strided buffer ('BufferError',)" in lines
    assert "empty, a 0 in the shape ('ok', None)" in lines
    assert "byte order > ('BufferError',) [0, 0, 0]" in lines
    assert "byte order with a datatype > ('ok', None) [0, 1, 2]" in lines
    assert "numpy counts ('ok', None) bytearray(b'\\x00abc')" in lines
    assert "0-d counts ('ok', None) bytearray(b'abc\\x00')" in lines
    assert "float counts ('TypeError',)" in lines
    assert "typecode 42 ('ok', ('KeyError',))" in lines
    assert [line[line.rindex(" (") + 1:] for line in lines if line.startswith("target ")] == [
        "('ValueError',)", "('ValueError',)", "('ValueError',)", "('ValueError',)",
        "('TypeError',)", "('TypeError',)", "('MPI', 2)", "('ok', None)", "('ok', None)",
        "('ok', None)", "('ok', None)"]          # (MPI class 2: ERR_COUNT)


def test_a_tensor_not_in_host_memory_is_refused(tmp_path):
    # (mpi4py hands its pointer to MPI, for an MPI that reads GPU memory: shmdat.mpi does not)
    r = mpi_launch.launch_mpi4py(tmp_path, 1, """
        import numpy as np
        from mpi4py import MPI


        class OnTheGPU:
            def __dlpack__(self, stream=None, **kw):
                return np.zeros(3, "i").__dlpack__(**kw)

            def __dlpack_device__(self):
                return (2, 0)               # kDLCUDA


        try:
            MPI.Get_address(OnTheGPU())
        except TypeError as e:
            print("refused:", e)
        """)
    assert mpi_launch.lines_of(r) == ["refused: a DLPack tensor on device 2, not in host memory"]


@mpi_launch.needs_mpiexec
def test_the_same_specs_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, SPECS)
