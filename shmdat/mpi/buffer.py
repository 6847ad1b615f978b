"""mpi4py's MPI.buffer (MPI.memory before mpi4py 4): bytes of memory that MPI gave
(Alloc_mem, Win.tomemory) or that a program names (buffer(obj), frombuffer, fromaddress,
allocate), read and written by index and slice and through the buffer protocol.

Why a numpy array: a class written in Python gets the buffer protocol only from Python 3.12
(`__buffer__`), and programs read this one through it (`memoryview(mem)`,
`np.frombuffer(mem, "d")`). A one-dimensional uint8 ndarray exports it as mpi4py's does
(format "B", itemsize 1, writable unless read-only), over memory it owns, borrows from
another object or finds at an address. The subclass gives mpi4py's API over it: indexing
gives ints, a slice is a buffer (whose obj is the one sliced) and refuses a step, `==` is
identity, bool is non-empty, and it cannot be pickled or copied."""

import ctypes
import operator

import numpy as np

_NO_OBJECT = object()       # buffer() without an argument (buffer(None) is a TypeError)
_RELEASED = (1, (0,), np.dtype(np.uint8), False, b"")   # ndarray state: no bytes


class buffer(np.ndarray):  # noqa: N801 (mpi4py's name)
    """MPI.buffer. `_obj`: what `obj` gives (the object whose memory it is, None for memory
    at an address or given back); `_address`: its first byte's address (0 for none);
    `_released`: after release(), the array it viewed, kept alive for the memoryviews
    still exported (their memory must not go under them)."""

    __slots__ = ("_obj", "_address", "_released")

    def __new__(cls, buf=_NO_OBJECT):
        """mpi4py's buffer(): empty (address 0); buffer(buf): over `buf`'s memory (its obj
        is `buf`), read-only if `buf` is. TypeError if `buf` has no buffer protocol,
        BufferError if its memory is not contiguous."""
        if buf is _NO_OBJECT:
            return _wrap(np.empty(0, np.uint8), None, False, 0)
        view = _contiguous(buf)
        return _wrap(np.frombuffer(view, np.uint8), buf, view.readonly)

    def __array_finalize__(self, parent):
        # A view numpy made of `parent` (a slice, toreadonly): its memory is parent's.
        self._obj, self._released = parent, None
        self._address = self.__array_interface__["data"][0]

    @staticmethod
    def allocate(nbytes, clear=False):
        """mpi4py's buffer.allocate: `nbytes` new bytes (zeroed if `clear`), its obj the
        array that owns them. TypeError if `nbytes` is not an int, ValueError if
        negative."""
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise ValueError(f"expecting a non-negative size, got {nbytes}")
        memory = (np.zeros if clear else np.empty)(nbytes, np.uint8)
        return _wrap(memory, memory, False)

    @staticmethod
    def frombuffer(obj, readonly=False):
        """mpi4py's buffer.frombuffer: over `obj`'s memory, writable unless `readonly`.
        TypeError if `obj` has no buffer protocol, BufferError if its memory is not
        contiguous, or is read-only and `readonly` is false."""
        view = _contiguous(obj)
        if view.readonly and not readonly:
            raise BufferError("Object is not writable.")
        return _wrap(np.frombuffer(view, np.uint8), obj, readonly)

    @staticmethod
    def fromaddress(address, nbytes, readonly=False):
        """mpi4py's buffer.fromaddress: the `nbytes` bytes at `address` (obj None: nothing
        keeps them alive but the program). TypeError for a non-int, ValueError for a
        negative size or address 0 with bytes."""
        address, nbytes = operator.index(address), operator.index(nbytes)
        if nbytes < 0:
            raise ValueError(f"expecting a non-negative buffer length, got {nbytes}")
        if not address and nbytes:
            raise ValueError("expecting a non-NULL address")
        memory = np.ctypeslib.as_array((ctypes.c_ubyte * nbytes).from_address(address)) \
            if address else np.empty(0, np.uint8)
        return _wrap(memory, None, readonly, address)

    address = property(lambda self: self._address, doc="The first byte's address (0: none).")
    obj = property(lambda self: self._obj, doc="The object whose memory this is, or None.")
    readonly = property(lambda self: not self.flags.writeable)
    format = property(lambda self: "B", doc="The buffer protocol's format: bytes.")
    # nbytes, itemsize (1) and len() are the array's.

    def cast(self, format, shape=None):
        """A memoryview of these bytes as `format` items (in `shape`)."""
        view = memoryview(self)
        return view.cast(format) if shape is None else view.cast(format, shape)

    def tobytes(self, order=None):
        """The bytes, as a bytes object (`order` means nothing in one dimension)."""
        return np.ndarray.tobytes(self)

    def toreadonly(self):
        """A read-only buffer over the same memory, with the same obj."""
        return _wrap(self, self._obj, True, self._address)

    def release(self):
        """Give up the memory: the buffer is empty now, address 0, obj None (memoryviews
        taken before keep theirs alive)."""
        self._released, self._obj, self._address = self.base, None, 0
        self.__setstate__(_RELEASED)

    def __getitem__(self, item):
        """An int for an index, a buffer for a slice. IndexError out of range or for a
        slice with a step, TypeError for anything else."""
        if isinstance(item, slice):
            return super().__getitem__(_unit_slice(item, len(self)))
        return int(super().__getitem__(operator.index(item)))

    def __setitem__(self, item, value):
        """An index takes a byte value; a slice a byte value to fill it with, or a buffer of
        its length (ValueError otherwise). TypeError if read-only, OverflowError for a
        value outside 0..255; IndexError as __getitem__."""
        if not self.flags.writeable:
            raise TypeError("buffer is read-only")
        if not isinstance(item, slice):
            super().__setitem__(operator.index(item), operator.index(value))
            return
        item = _unit_slice(item, len(self))
        if not isinstance(value, int):
            value = np.frombuffer(value, np.uint8)
            if len(value) != len(range(item.start, item.stop)):
                raise ValueError("slice length does not match buffer")
        super().__setitem__(item, value)

    def __delitem__(self, item):
        raise NotImplementedError("Subscript deletion not supported by MPI.buffer")

    def __iter__(self):
        return iter(self.tolist())

    def __contains__(self, value):
        return value in self.tolist()

    def __bool__(self):
        return len(self) > 0

    __eq__, __ne__, __hash__ = object.__eq__, object.__ne__, object.__hash__
    __repr__ = __str__ = object.__repr__

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle 'MPI.buffer' object")

    def __copy__(self):
        raise TypeError("cannot copy 'MPI.buffer' object")

    def __deepcopy__(self, memo):
        raise TypeError("cannot copy 'MPI.buffer' object")


def over(view, obj, address):
    """A buffer over the byte memoryview `view` (memory MPI gave: a window's), its obj `obj`,
    its address `address` (0 for a window without memory, as MPI's WIN_BASE)."""
    return _wrap(np.frombuffer(view, np.uint8), obj, view.readonly, address)


def _wrap(memory, obj, readonly, address=None):
    """A buffer over the uint8 array `memory`, its obj `obj`, its address `address` (None:
    memory's own)."""
    buf = memory.view(buffer)
    if readonly:
        buf.flags.writeable = False
    buf._obj = obj
    if address is not None:
        buf._address = address
    return buf


def _contiguous(obj):
    """A memoryview of `obj`'s memory. TypeError without the buffer protocol, BufferError if
    not contiguous."""
    view = memoryview(obj)
    if not view.c_contiguous:
        raise BufferError("memoryview: underlying buffer is not C-contiguous")
    return view


def _unit_slice(item, length):
    """slice `item` of a buffer of `length` bytes as (start, stop), stop >= start; IndexError
    for a step other than 1."""
    start, stop, step = item.indices(length)
    if step != 1:
        raise IndexError("slice with step not supported")
    return slice(start, max(start, stop))
