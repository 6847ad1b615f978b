"""MPI's portable data representation "external32" (MPI 4.0 section 13.5.2), for
Datatype.Pack_external and Unpack_external: every element big endian, in MPI's sizes (table
13.2: a C long and a wchar_t take 4 and 2 bytes, as MPICH's; a value beyond them is cut, as
MPICH's), a MAXLOC/MINLOC pair's value and int packed, and a long double as an IEEE quad
(16 bytes): this machine's x87 extended doubles (64-bit significand, the same 15-bit exponent)
widened to it exactly, and narrowed back by dropping the low 49 bits of the quad's fraction.

A Form is how one named datatype's elements (its numpy dtype) look there: a numpy dtype
with a field per native field, a long double field as two big-endian 64-bit words (the
quad's high and low halves) per real part."""

import numpy as np

from . import unimplemented

# external32's sizes where they are not this machine's (by MPI's name of the datatype).
SIZES = {"LONG": 4, "UNSIGNED_LONG": 4, "WCHAR": 2, "LONG_INT": 4}
# Whether numpy's long double is x87's extended double in 16 bytes (x86-64 Linux).
_X87 = np.finfo(np.longdouble).nmant == 63 and np.dtype(np.longdouble).itemsize == 16
_FRACTION = 0x7fffffffffffffff          # an x87 significand without its integer bit


def _long_double_parts(dtype):
    """How many long doubles one element of `dtype` is: 0, 1 (real) or 2 (complex)."""
    if dtype.kind == "f" and dtype.itemsize == 16:
        return 1
    return 2 if dtype.kind == "c" and dtype.itemsize == 32 else 0


class Form:
    """The external32 form of elements of numpy dtype `native` (a named datatype's, called
    `name`): `dtype` and `itemsize` there, `pack` and `unpack`. NotImplementedCall for
    opaque types (INTEGER16, REAL2, COMPLEX4) and for long doubles that are not x87's."""

    def __init__(self, native, name):
        self.native = native
        self.fields = [None] if native.names is None else list(native.names)
        parts = []
        for i, field in enumerate(self.fields):
            dtype = native if field is None else native.fields[field][0]
            parts.append((f"f{i}", _external(dtype, SIZES.get(name) if i == 0 else None, name)))
        self.dtype = np.dtype(parts)
        self.itemsize = self.dtype.itemsize

    def pack(self, data, count):
        """The external32 bytes of the first `count` elements of the bytes `data`."""
        values = np.frombuffer(data, self.native, count)
        packed = np.empty(count, self.dtype)
        for i, field in enumerate(self.fields):
            column = values if field is None else values[field]
            packed[f"f{i}"] = _to_quads(column) if _long_double_parts(column.dtype) else column
        return packed.tobytes()

    def unpack(self, data, out, count):
        """Place `count` elements of external32 bytes `data` into the writable bytes `out`."""
        values = np.frombuffer(out, self.native, count)
        packed = np.frombuffer(data, self.dtype, count)
        for i, field in enumerate(self.fields):
            target = values if field is None else values[field]
            column = packed[f"f{i}"]
            target[...] = _from_quads(column, target.dtype) \
                if _long_double_parts(target.dtype) else column


def _external(dtype, size, name):
    """The external32 dtype of one native field."""
    parts = _long_double_parts(dtype)
    if dtype.kind == "V" and dtype.itemsize > 1 or parts and not _X87:
        raise unimplemented.NotImplementedCall(f"external32 of MPI_{name} is not implemented "
                                               "by shmdat.mpi")
    if parts:
        return np.dtype((">u8", 2 * parts))
    return dtype.newbyteorder(">") if size is None else np.dtype(f">{dtype.kind}{size}")


def _to_quads(column):
    """x87 long doubles (n elements of 1 or 2 parts) as IEEE quads: (n, 2 * parts) words,
    each part's high then low half."""
    n = len(column)
    raw = np.ascontiguousarray(column).view(np.uint8).reshape(n, -1, 16)
    significand = raw[..., :8].copy().view("<u8")[..., 0]
    sign_exponent = raw[..., 8:10].copy().view("<u2")[..., 0].astype(np.uint64)
    fraction = significand & np.uint64(_FRACTION)
    high = (sign_exponent << np.uint64(48)) | (fraction >> np.uint64(15))
    low = (fraction & np.uint64(0x7fff)) << np.uint64(49)
    return np.stack([high, low], axis=-1).reshape(n, -1)


def _from_quads(column, dtype):
    """IEEE quads ((n, 2 * parts) words) as x87 long doubles of numpy dtype `dtype`."""
    n = len(column)
    words = np.asarray(column, np.uint64).reshape(n, -1, 2)
    high, low = words[..., 0], words[..., 1]
    sign_exponent = high >> np.uint64(48)
    fraction = ((high & np.uint64(0xffffffffffff)) << np.uint64(15)) | (low >> np.uint64(49))
    integer_bit = np.where(sign_exponent & np.uint64(0x7fff), np.uint64(1 << 63), np.uint64(0))
    raw = np.zeros(words.shape[:2] + (16,), np.uint8)
    raw[..., :8] = (fraction | integer_bit).astype("<u8")[..., None].view(np.uint8)
    raw[..., 8:10] = sign_exponent.astype("<u2")[..., None].view(np.uint8)
    return raw.reshape(n, -1).view(dtype).reshape(n)
