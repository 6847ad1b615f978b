"""DLPack tensors in host memory as buffers, as mpi4py takes them (an object with
`__dlpack__` and no buffer protocol): DLPack 1.x's versioned capsule when the producer
gives one (`__dlpack__(max_version=(1, 0), copy=False)`), else the older unversioned one;
a numpy array over the tensor's own memory, which holds the tensor's capsule, so the
memory lives as long as the array. What mpi4py checks is checked here, with the same
errors: the device pair (TypeError, ValueError), the capsule and its version, the shape
and strides (BufferError), contiguity in C or Fortran order, read-only tensors (a
read-only array, which a receive refuses)."""

import ctypes
import math
import operator

import numpy as np

DEVICE_CPU = 1
READ_ONLY = 1                               # DLPACK_FLAG_BITMASK_READ_ONLY
_VERSIONED, _UNVERSIONED = b"dltensor_versioned", b"dltensor"
_INT, _UINT, _FLOAT, _COMPLEX, _BOOL = 0, 1, 2, 5, 6
_KINDS = {_INT: "i", _UINT: "u", _FLOAT: "f", _COMPLEX: "c"}
_BITS = {_INT: (8, 16, 32, 64), _UINT: (8, 16, 32, 64), _FLOAT: (16, 32, 64, 128),
         _COMPLEX: (64, 128, 256), _BOOL: (8,)}     # (128/256: long double and its complex)


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    """DLPack's DLTensor (the first member of the unversioned DLManagedTensor)."""
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Versioned(ctypes.Structure):
    """DLPack 1.x's DLManagedTensorVersioned."""
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _device(obj):
    """The device type of the (device_type, device_id) pair __dlpack_device__ gives (ints,
    or an IntEnum such as DLPack's DLDeviceType): TypeError unless both are integers,
    ValueError for another number of items, as mpi4py unpacks it."""
    device_type, device_id = obj.__dlpack_device__()
    operator.index(device_id)
    return operator.index(device_type)


def _capsule(obj):
    """(capsule, versioned): the versioned one if the producer takes max_version."""
    try:
        return obj.__dlpack__(max_version=(1, 0), copy=False), True
    except TypeError:           # a producer of DLPack 0.x
        return obj.__dlpack__(), False


def _tensor(capsule, versioned):
    """(DLTensor, read-only) of a capsule. BufferError for what is not a live capsule of the
    kind asked (one consumed already is renamed), or a version before 1."""
    name = _VERSIONED if versioned else _UNVERSIONED
    if not _capsule_valid(capsule, name):
        raise BufferError("dlpack: invalid capsule object")
    pointer = _capsule_pointer(capsule, name)
    if not versioned:
        return _Tensor.from_address(pointer), False
    managed = _Versioned.from_address(pointer)
    if managed.major < 1:
        raise BufferError("dlpack: unexpected version")
    return managed.dl_tensor, bool(managed.flags & READ_ONLY)


def _contiguous(shape, strides, order):
    """Whether strides (None: C order) lay shape out contiguously in `order` ("C" or
    "F"); a dimension of 1 may have any stride."""
    if strides is None:
        return order == "C" or len(shape) <= 1
    size = 1
    for dim, stride in (zip(shape, strides) if order == "F" else
                        zip(reversed(shape), reversed(strides))):
        if dim > 1 and stride != size:
            return False
        size *= dim
    return True


def _layout(tensor):
    """(shape, strides or None) of a tensor. BufferError for a negative number of
    dimensions, a missing shape, a negative extent or stride, or a layout contiguous in
    neither order."""
    ndim = tensor.ndim
    if ndim < 0:
        raise BufferError("dlpack: number of dimensions is negative")
    if ndim > 0 and not tensor.shape:
        raise BufferError("dlpack: shape is NULL")
    shape = [tensor.shape[i] for i in range(ndim)]
    strides = [tensor.strides[i] for i in range(ndim)] if tensor.strides else None
    if any(dim < 0 for dim in shape):
        raise BufferError("dlpack: shape item is negative")
    if strides is not None and any(stride < 0 for stride in strides):
        raise BufferError("dlpack: strides item is negative")
    if not (_contiguous(shape, strides, "C") or _contiguous(shape, strides, "F")):
        raise BufferError("dlpack: buffer is not contiguous")
    return shape, strides


def _dtype(data_type):
    """The numpy dtype of a DLPack type, or None: bytes (a type numpy lacks, several lanes
    other than a complex number's two, an opaque handle), as mpi4py takes it."""
    code, bits, lanes = data_type.code, data_type.bits, data_type.lanes
    if lanes == 2 and code == _FLOAT and bits in (32, 64, 128):
        code, bits, lanes = _COMPLEX, 2 * bits, 1      # a complex number as two lanes of floats
    if lanes != 1 or bits not in _BITS.get(code, ()):
        return None
    try:
        return np.dtype("?" if code == _BOOL else f"{_KINDS[code]}{bits // 8}")
    except TypeError:           # (a long double numpy lacks on this machine: bytes)
        return None


def as_array(obj):
    """A numpy array over the memory of DLPack tensor `obj` (read-only if the tensor is),
    1-D in memory order. TypeError if it is not in host memory or its device pair is not
    two ints, ValueError if that is not a pair; BufferError as _tensor and _layout say."""
    device_type = _device(obj)
    if device_type != DEVICE_CPU:
        raise TypeError(f"a DLPack tensor on device {device_type}, not in host memory")
    capsule, versioned = _capsule(obj)
    tensor, readonly = _tensor(capsule, versioned)
    shape, _ = _layout(tensor)
    dtype = _dtype(tensor.dtype)
    width = (tensor.dtype.bits * tensor.dtype.lanes + 7) // 8
    nbytes = math.prod(shape) * width
    if nbytes == 0:
        array = np.zeros(0, dtype or np.uint8)
    else:
        memory = (ctypes.c_char * nbytes).from_address(tensor.data + tensor.byte_offset)
        memory.capsule = capsule    # the tensor's memory lives as long as its capsule
        array = np.frombuffer(memory, dtype if dtype is not None and dtype.itemsize == width
                              else np.uint8)
    if readonly:
        array.flags.writeable = False
    return array
