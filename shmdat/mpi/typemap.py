"""The type maps of derived datatypes, as plain data: where an element's bytes lie (runs of
contiguous bytes, in the type map's order, offsets from the element's start), its bounds
(lb, ub: the extent between them is the stride of consecutive elements) and its true
bounds (where its bytes really are), and the alignment a struct pads its extent to. The
constructors follow MPI 4.1 section 5.1; pack and unpack move `count` elements between a
buffer and their packed bytes (what goes on the wire) with one numpy gather or scatter."""

import numpy as np


class Typemap:
    """An element's byte runs, bounds, true bounds and alignment (see the module docstring)."""

    __slots__ = ("runs", "lb", "ub", "true_lb", "true_ub", "align", "_index")

    def __init__(self, runs, lb, ub, true_lb, true_ub, align):
        self.runs, self.lb, self.ub = runs, lb, ub
        self.true_lb, self.true_ub, self.align = true_lb, true_ub, align
        self._index = None

    @property
    def size(self):
        return sum(length for _, length in self.runs)

    @property
    def extent(self):
        return self.ub - self.lb

    def contiguous(self):
        """Whether `count` elements are one run of bytes from the buffer's start (no pack)."""
        return self.lb == 0 and self.extent == self.size and \
            (not self.runs or self.runs == ((0, self.size),))

    def byte_index(self, count):
        """The buffer offsets of the packed bytes of `count` elements, in order."""
        if self._index is None:
            self._index = np.concatenate([np.arange(o, o + n) for o, n in self.runs]
                                         or [np.zeros(0, np.int64)])
        return np.add.outer(np.arange(count) * self.extent, self._index).ravel()


def named(size, extent, runs, align):
    """A named datatype's: one run (or the pair types' two), bounds 0 and extent; `align`, its
    C type's alignment (a struct's extent is padded to its members' largest)."""
    runs = tuple(runs or ((0, size),))
    return Typemap(runs, 0, extent, 0, max(o + n for o, n in runs), align)


def _merged(runs):
    """Adjacent runs joined (the order kept): fewer pieces, the same bytes."""
    out = []
    for o, n in runs:
        if n == 0:
            continue
        if out and out[-1][0] + out[-1][1] == o:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((o, n))
    return tuple(out)


def blocks(parts, pad=False):
    """The type map of blocks (child Typemap, blocklength, byte displacement): block i holds
    blocklength consecutive children (each child's extent apart) from its displacement.
    `pad`: the upper bound rounded up to the largest alignment (a struct's epsilon)."""
    runs, lbs, ubs, true_lbs, true_ubs, align = [], [], [], [], [], 1
    for child, length, disp in parts:
        align = max(align, child.align)
        if length <= 0:
            continue
        if child.contiguous():          # a block of them is one run (a vector of doubles)
            runs.append((disp, length * child.extent))
        else:
            for j in range(length):
                base = disp + j * child.extent
                runs.extend((base + o, n) for o, n in child.runs)
        lbs.append(disp + child.lb)
        ubs.append(disp + (length - 1) * child.extent + child.ub)
        true_lbs.append(disp + child.true_lb)
        true_ubs.append(disp + (length - 1) * child.extent + child.true_ub)
    if not lbs:
        return Typemap((), 0, 0, 0, 0, align)
    lb, ub = min(lbs), max(ubs)
    if pad and (ub - lb) % align:
        ub += align - (ub - lb) % align
    return Typemap(_merged(runs), lb, ub, min(true_lbs), max(true_ubs), align)


def resized(child, lb, extent):
    """MPI_Type_create_resized: the same bytes, new bounds."""
    return Typemap(child.runs, lb, lb + extent, child.true_lb, child.true_ub, child.align)


def subarray(child, sizes, subsizes, starts, c_order):
    """MPI_Type_create_subarray: the subsizes block at starts of a sizes array of children
    (row-major if c_order, else column-major); bounds 0 and the whole array."""
    if not c_order:                                 # column-major: the first index varies fastest
        sizes, subsizes, starts = sizes[::-1], subsizes[::-1], starts[::-1]
    stride, strides = child.extent, []
    for size in reversed(sizes):
        strides.append(stride)
        stride *= size
    strides.reverse()                               # bytes between consecutive indices, per dim
    whole = stride
    rows = np.zeros(1, np.int64)
    for dim in range(len(sizes) - 1):
        rows = np.add.outer(rows, (starts[dim] + np.arange(subsizes[dim])) * strides[dim]).ravel()
    inner = starts[-1] * strides[-1]
    parts = [(child, subsizes[-1], int(row) + inner) for row in rows]
    if not all(subsizes):
        parts = []
    return resized(blocks(parts), 0, whole)


def darray(child, gsizes, held, c_order):
    """MPI_Type_create_darray: the elements this rank holds of a gsizes array of children
    (row-major if c_order, else column-major), held[d] being the (start, length) runs of
    indices it holds in dimension d; bounds 0 and the whole array. Built outwards from the
    fastest dimension, each a block of the one inside it, as MPICH builds it."""
    dims = range(len(gsizes) - 1, -1, -1) if c_order else range(len(gsizes))
    whole = child.extent
    for size in gsizes:
        whole *= size
    if not all(held):                       # a dimension where this rank holds nothing
        return resized(Typemap((), 0, 0, 0, 0, child.align), 0, whole)
    tmap, stride = child, child.extent
    for dim in dims:
        tmap = resized(blocks([(tmap, length, start * stride) for start, length in held[dim]]),
                       0, stride * gsizes[dim])
        stride = tmap.extent
    return tmap


def pack(typemap, data, count):
    """The packed bytes (a bytearray) of `count` elements in the byte memoryview `data`."""
    return bytearray(np.frombuffer(data, np.uint8)[typemap.byte_index(count)].tobytes())


def unpack(typemap, packed, data, count, nbytes):
    """Place the first `nbytes` packed bytes of (up to) `count` elements into the writable
    byte memoryview `data`."""
    index = typemap.byte_index(count)[:nbytes]
    np.frombuffer(data, np.uint8)[index] = np.frombuffer(packed, np.uint8, len(index))
