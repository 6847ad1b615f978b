"""DLPack tensors in host memory as buffers, as mpi4py takes them (an object with
`__dlpack__` and no buffer protocol): a writable numpy array over the tensor's own memory,
which holds the tensor's capsule, so the memory lives as long as the array."""

import ctypes
import math

import numpy as np

DEVICE_CPU = 1
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c"}   # DLPack's type codes (and 6: bool)
_FLOAT, _COMPLEX, _BOOL = 2, 5, 6


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    """DLPack's DLTensor (the first member of the DLManagedTensor a capsule points to)."""
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def as_array(obj):
    """A numpy array over the memory of DLPack tensor `obj`. TypeError if it is not in host
    memory, not C-contiguous or of a type numpy lacks."""
    device_type, _ = obj.__dlpack_device__()
    if device_type != DEVICE_CPU:
        raise TypeError(f"a DLPack tensor on device {device_type}, not in host memory")
    capsule = obj.__dlpack__()
    tensor = _Tensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    if lanes == 2 and code == _FLOAT:     # (a complex long double: two lanes of floats)
        code, bits, lanes = _COMPLEX, 2 * bits, 1
    if lanes != 1 or (code not in _KINDS and code != _BOOL):
        raise TypeError(f"a DLPack tensor of type code {code}, {bits} bits, {lanes} lanes")
    dtype = np.dtype("?" if code == _BOOL else f"{_KINDS[code]}{bits // 8}")
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    if tensor.strides and any(tensor.strides[i] != math.prod(shape[i + 1:])
                              for i in range(tensor.ndim) if shape[i] > 1):
        raise TypeError("a DLPack tensor that is not C-contiguous")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return np.zeros(shape, dtype)
    memory = (ctypes.c_char * nbytes).from_address(tensor.data + tensor.byte_offset)
    memory.capsule = capsule        # the tensor's memory lives as long as its capsule
    return np.frombuffer(memory, dtype).reshape(shape)
