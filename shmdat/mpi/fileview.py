"""A file view (MPI 4.1 section 14.3): where the data a process sees of a file lies. The
filetype, tiled from byte `disp` on (copy k at disp + k * extent), selects runs of bytes; the
view's data is those runs in order, a stream of etypes. Offsets and file pointers count
etypes of that stream; `segments` maps a span of it to the file's bytes, `byte_offset` one
offset, `end` the file's end to the offset just past the data before it."""

import bisect
import itertools

import numpy as np

from . import errors
from .errors import Exception as MPIException


class View:
    """The view (disp, etype, filetype, datarep): the datatypes are handles of the view's
    own (the program may free its own handles), their type maps fixed."""

    def __init__(self, disp, etype, filetype, datarep):
        self.disp, self.etype, self.filetype, self.datarep = disp, etype, filetype, datarep
        tmap = filetype.typemap
        self.esize, self.size, self.extent = etype.size, filetype.size, tmap.extent
        self.runs = tmap.runs
        self.starts = list(itertools.accumulate((n for _, n in self.runs), initial=0))
        self.run_starts = np.array([start for start, _ in self.runs], np.int64)
        self.run_lengths = np.array([length for _, length in self.runs], np.int64)
        self.stream_starts = np.array(self.starts[:-1], np.int64)
        # One run from the tile's start, tiles back to back: the stream is the file's bytes.
        self.contiguous = self.runs == ((0, self.size),) and self.extent == self.size

    def segments(self, offset, nbytes):
        """The pieces of `nbytes` bytes of the stream from etype `offset`, in the stream's
        order, adjacent ones merged: two int64 arrays, their file bytes and lengths. (numpy
        over every run of every tile the span crosses: no loop per piece.)"""
        position = offset * self.esize
        if nbytes == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if self.contiguous:
            return np.array([self.disp + position]), np.array([nbytes])
        end = position + nbytes
        tiles = np.arange(position // self.size, (end - 1) // self.size + 1, dtype=np.int64)
        where = (self.disp + np.add.outer(tiles * self.extent, self.run_starts)).ravel()
        stream = np.add.outer(tiles * self.size, self.stream_starts).ravel()
        lengths = np.tile(self.run_lengths, len(tiles))
        low, high = np.maximum(stream, position), np.minimum(stream + lengths, end)
        kept = high > low               # (the first and last tiles' runs outside the span)
        where, lengths = (where + low - stream)[kept], (high - low)[kept]
        apart = where[1:] != where[:-1] + lengths[:-1]
        firsts = np.flatnonzero(np.concatenate(([True], apart)))
        return where[firsts], np.add.reduceat(lengths, firsts)

    def byte_offset(self, offset):
        """MPI_File_get_byte_offset: the file byte where etype `offset` of the stream lies."""
        tile, within = divmod(offset * self.esize, self.size)
        run = bisect.bisect_right(self.starts, within) - 1
        if run == len(self.runs):           # (the end of a tile: the next one's start)
            tile, run, within = tile + 1, 0, 0
        return self.disp + tile * self.extent + self.runs[run][0] + within - self.starts[run]

    def end(self, file_size):
        """The etype offset just past the stream's bytes that lie before byte `file_size`
        (a partial etype counts whole, as ROMIO's end of file). Copies of a filetype whose
        data reaches past its extent overlap (MPICH allows it): the tiles before the last
        that lies whole below the end are counted, then each one that reaches it."""
        reach = max((start + length for start, length in self.runs), default=0)
        limit = file_size - self.disp
        tile = max(0, (limit - reach) // self.extent + 1) if self.extent > 0 else 0
        below = tile * self.size
        while tile * self.extent < limit:
            base = tile * self.extent
            below += sum(max(0, min(length, limit - base - start))
                         for start, length in self.runs)
            tile += 1
        return -(-below // self.esize)


def check(etype, filetype):
    """MPI_File_set_view's checks of its datatypes: MPI.Exception ERR_TYPE for DATATYPE_NULL
    or one not committed; ERR_ARG for a filetype that is not made of whole etypes (its size
    not a multiple of the etype's), or an etype or filetype without data or extent (MPICH
    takes them; no data access could use them); ERR_IO (ROMIO's class) for a filetype whose
    displacements are negative or decrease, which MPI forbids."""
    for datatype in (etype, filetype):
        if not datatype or not datatype.committed:
            raise MPIException(errors.ERR_TYPE, f"Set_view: the datatype {datatype!r} is null "
                                                "or not committed")
    if etype.size == 0 or filetype.size == 0 or filetype.size % etype.size \
            or filetype.extent <= 0:
        raise MPIException(errors.ERR_ARG, "Set_view: the filetype must be made of etypes "
                           f"(sizes {filetype.size} and {etype.size}, extent "
                           f"{filetype.extent})")
    starts = [start for start, _ in filetype.typemap.runs]
    if starts[0] < 0 or starts != sorted(starts):
        raise MPIException(errors.ERR_IO, "Set_view: a filetype's displacements must be "
                           f"non-negative and non-decreasing (they are {starts})")


def gather_index(where, lengths, base):
    """The offsets from file byte `base` of every byte of the pieces (where, lengths), in
    order: what a read of the span they lie in takes them at."""
    firsts = np.cumsum(lengths) - lengths           # each piece's first byte in the stream
    return np.repeat(where - base - firsts, lengths) + np.arange(int(lengths.sum()))
