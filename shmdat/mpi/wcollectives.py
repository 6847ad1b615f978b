"""The w-collectives (MPI 4.1 sections 6.8 and 8.6): Comm.Alltoallw, Ialltoallw,
Alltoallw_init and Topocomm.Neighbor_alltoallw, Ineighbor_alltoallw, Neighbor_alltoallw_init.

A w-spec is mpi4py's: `[buf, datatypes]` (one element of each at the buffer's start, as
with counts and displacements both None), `[buf, (counts, displs), datatypes]` or
`[buf, counts, displs, datatypes]`: per rank (or neighbour) a count, a displacement in BYTES
and a datatype of its own. `buf` may be MPI.BOTTOM: the displacements (and the datatypes'
own) are then absolute addresses (MPI.Get_address), as MPI says. Each block becomes a byte
view: the buffer's bytes themselves where the datatype has no gaps, else packed bytes (a send)
or packed room unpacked into the buffer once the collective has ended (a receive:
collectives.Channel.finish). The blocks then travel as Alltoallv's (pairwise exchange), an intercommunicator's in one round with every
member of the other group, a topology's as the other neighbour collectives'."""

import ctypes
import operator

import numpy as np

from . import collectives, errors
from .comm import Comm, _blocking, _in_place, _invalid, _NullComm, _nonblocking
from .datatypes import BottomType, Datatype, _contiguous_bytes, _gapless
from .errors import Exception as MPIException
from .info import INFO_NULL
from .intercomm import Intercomm
from .persistent import persistent
from .topology import Topocomm


def wvector(spec, writable, blocks, unpacks):
    """One byte view per block of the w-spec `spec` (see the module docstring), as mpi4py
    reads it: ValueError for 2 to 4 items or counts, displacements or datatypes of another
    length than `blocks` (or none with MPI.BOTTOM), TypeError for a count, displacement or
    datatype of the wrong type (a single one where a sequence is due), BufferError for a
    read-only `buf` to write.
    MPI.Exception ERR_COUNT for a negative count, ERR_TYPE for DATATYPE_NULL or a derived
    datatype not committed, ERR_ARG for a block before its buffer, ERR_COUNT for one beyond
    it. A written block with gaps has its unpack appended to `unpacks`."""
    if len(spec) == 2:
        buf, datatypes = spec
        counts = displs = None
    elif len(spec) == 3:
        buf, (counts, displs), datatypes = spec
    elif len(spec) == 4:
        buf, counts, displs, datatypes = spec
    else:
        raise ValueError("message: expecting 2 to 4 items")
    if isinstance(buf, BottomType) and (counts is None or displs is None):
        raise ValueError("message: BOTTOM requires counts and displs")
    if counts is None and displs is None:      # (one element of each at the start)
        counts, displs = [1] * blocks, [0] * blocks
    counts, displs = _ints(counts, blocks), _ints(displs, blocks)
    datatypes = _datatypes(datatypes, blocks)
    if isinstance(buf, BottomType):
        return [_absolute(count, displ, datatype, writable, unpacks)
                for count, displ, datatype in zip(counts, displs, datatypes)]
    data = np.frombuffer(_contiguous_bytes(buf, writable)[1], np.uint8)
    return [_block(data, count, displ, datatype, writable, unpacks)
            for count, displ, datatype in zip(counts, displs, datatypes)]


def _ints(values, blocks):
    """A w-spec's counts or displacements: a sequence of `blocks` ints (TypeError for one
    int or None, ValueError for another length, as mpi4py)."""
    values = [operator.index(values[i]) for i in range(len(values))]
    if len(values) != blocks:
        raise ValueError(f"expecting {blocks} items, got {len(values)}")
    return values


def _datatypes(datatypes, blocks):
    """A w-spec's datatypes: a sequence of `blocks` Datatypes (TypeError for anything else
    in it, ValueError for another length, as mpi4py)."""
    if len(datatypes) != blocks:
        raise ValueError(f"expecting {blocks} items, got {len(datatypes)}")
    for datatype in datatypes:
        if not isinstance(datatype, Datatype):
            raise TypeError(f"Cannot convert {type(datatype).__name__} to MPI.Datatype")
    return list(datatypes)


def _bounds(count, datatype):
    """(first, end): the bytes `count` elements of `datatype` reach, from their start.
    MPI.Exception ERR_COUNT for a negative count, ERR_TYPE for DATATYPE_NULL or a derived
    datatype not committed."""
    if count < 0:
        raise MPIException(errors.ERR_COUNT, f"negative count {count}")
    if not datatype or not datatype.committed:
        raise MPIException(errors.ERR_TYPE, f"datatype {datatype.Get_name() or 'derived'} "
                           "is null or not committed")
    if not count:
        return 0, 0
    tmap = datatype.typemap
    if _gapless(datatype):
        return 0, count * datatype.extent
    return tmap.true_lb, (count - 1) * tmap.extent + tmap.true_ub


def _block(data, count, displ, datatype, writable, unpacks):
    """The byte view of `count` elements of `datatype` at byte `displ` of the uint8 array
    `data` (errors: wvector's)."""
    first, end = _bounds(count, datatype)
    if not count:
        return memoryview(bytearray())
    if displ + first < 0:
        raise MPIException(errors.ERR_ARG, f"a block at byte {displ + first}, before its buffer")
    if displ + end > len(data):
        raise MPIException(errors.ERR_COUNT, f"{count} {datatype.Get_name() or 'elements'} at "
                           f"byte {displ} beyond a buffer of {len(data)} bytes")
    return _view(data, displ, count, datatype, writable, unpacks)


def _absolute(count, address, datatype, writable, unpacks):
    """The byte view of `count` elements of `datatype` at absolute `address` (an MPI.BOTTOM
    block): the memory there, as MPI's own access to it is, unchecked."""
    first, end = _bounds(count, datatype)
    if not count:
        return memoryview(bytearray())
    memory = np.ctypeslib.as_array((ctypes.c_ubyte * (end - first)).from_address(address + first))
    return _view(memory, -first, count, datatype, writable, unpacks)


def _view(data, start, count, datatype, writable, unpacks):
    """`count` elements of `datatype` from byte `start` of the uint8 array `data` (known to
    hold them): a view of its bytes, or packed bytes (an unpack appended for a written
    block)."""
    if _gapless(datatype):
        return memoryview(data[start:start + count * datatype.extent])
    index = start + datatype.typemap.byte_index(count)
    room = bytearray(data[index].tobytes())
    if writable:
        unpacks.append(lambda: _place(data, index, room))
    return memoryview(room)


def _place(data, index, packed):
    """A received block's packed bytes into the buffer bytes `data[index]`."""
    data[index] = np.frombuffer(packed, np.uint8)


# The collectives' bodies, on a channel (blocking, non-blocking or persistent: comm.py's).

def _alltoallw(self, ch, sendbuf, recvbuf):
    """MPI_Alltoallw: block i of `sendbuf` to rank i, block i of `recvbuf` from it (w-specs,
    one block per rank: of the remote group on an Intercomm); `sendbuf` may be IN_PLACE (or
    None) on an intracommunicator: each block is taken from recvbuf with its receive
    datatype. Errors: wvector's; ERR_TRUNCATE if a block does not fit."""
    size = self._remote_size
    recvs = wvector(recvbuf, True, size, ch.unpacks)
    if self._inter:
        collectives.exchange(ch, wvector(sendbuf, False, size, ch.unpacks), recvs)
        return
    sends = [memoryview(bytes(v)) for v in recvs] if _in_place(sendbuf) else \
        wvector(sendbuf, False, size, ch.unpacks)
    collectives.alltoallv(ch, sends, recvs)


def _neighbor_alltoallw(self, ch, sendbuf, recvbuf):
    """MPI_Neighbor_alltoallw: block i of sendbuf to outgoing neighbour i, block i of recvbuf
    from incoming neighbour i (w-specs; untouched for PROC_NULL). Errors as Alltoallw's."""
    n, m = self.degrees
    recvs = wvector(recvbuf, True, n, ch.unpacks)
    self._exchange(ch, wvector(sendbuf, False, m, ch.unpacks), recvs)


def Alltoallw_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Alltoallw_init: a persistent Alltoallw (a Prequest). Errors as Ialltoallw's, here."""
    return persistent(self, _alltoallw, sendbuf, recvbuf)


def Neighbor_alltoallw_init(self, sendbuf, recvbuf, info=INFO_NULL):
    """MPI_Neighbor_alltoallw_init: a persistent Neighbor_alltoallw. Errors here."""
    return persistent(self, _neighbor_alltoallw, sendbuf, recvbuf)


Comm.Alltoallw, Comm.Ialltoallw = _blocking(_alltoallw), _nonblocking(_alltoallw)
Comm.Alltoallw_init = Alltoallw_init
for _name in ("Alltoallw", "Ialltoallw", "Alltoallw_init"):     # (an Intercomm's too: decided)
    setattr(Intercomm, _name, getattr(Comm, _name))
Topocomm.Neighbor_alltoallw = _blocking(_neighbor_alltoallw)
Topocomm.Ineighbor_alltoallw = _nonblocking(_neighbor_alltoallw)
Topocomm.Neighbor_alltoallw_init = Neighbor_alltoallw_init
for _name in ("Alltoallw", "Ialltoallw", "Alltoallw_init"):
    setattr(_NullComm, _name, _invalid(_name))
