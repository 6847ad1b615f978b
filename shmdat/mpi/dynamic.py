"""Dynamic windows (MPI 4.1 section 12.2.4): Win.Create_dynamic, Win.Attach, Win.Detach.

A dynamic window has no memory of its own (WIN_BASE and WIN_SIZE are 0); each member
attaches regions of its memory to it, and a target displacement is an absolute address
(MPI.Get_address of the memory at the target; disp_unit 1). Attach registers the region
(an LMR with remote access), so Put and Get stay one RDMA write or read, as on the other
windows, and accumulates are the same window messages, applied at the address.

An origin learns a target's regions (address, length and RMR triplet) by asking it: a window
message the target answers from its progress engine, as an accumulate. It asks once, then
again only when an access falls outside the regions it knows (the target may have attached
more since); an access that falls outside them all is MPI.Exception ERR_RMA_RANGE at the
origin. A region detached while an origin still knows it is MPI's erroneous case: the
target applies nothing there."""

import struct

import numpy as np

from shmdat import RmrTriplet

from . import errors
from .engine import WIN_ACC, WIN_BODY_LIMIT
from .info import INFO_NULL
from .win import (ACC_BODY, WIN_FLAVOR_DYNAMIC, WINDOW_PRIVILEGES, Win, _COMPARE_AND_SWAP,
                  _fail)

_REGIONS = _COMPARE_AND_SWAP + 1     # a WIN_ACC message's op: "which regions are attached?"
REGION = struct.Struct("<QQQQ")      # a region's address, length, RMR context, target address
COUNT = struct.Struct("<q")
MAX_REGIONS = (WIN_BODY_LIMIT - ACC_BODY.size - COUNT.size) // REGION.size  # in one answer


class _Region:
    """Attached memory: its address, its bytes (a uint8 array over them) and its LMR."""

    def __init__(self, address, memory, lmr):
        self.address, self.memory, self.lmr = address, memory, lmr


class DynamicWin(Win):
    """A window of Create_dynamic: `_attached`, this rank's regions in the order attached;
    `_known`, per target rank, the (address, length, RmrTriplet) of its regions as it last
    answered (None before the first question)."""

    @classmethod
    def Create_dynamic(cls, info=INFO_NULL, comm=None):
        """MPI_Win_create_dynamic: a window without memory, to which each member attaches
        its own (Attach); collective over `comm` (None: COMM_SELF)."""
        comm = cls._over(comm)
        self = cls._open(memoryview(bytearray()), None, 1, comm, WIN_FLAVOR_DYNAMIC, info)
        self._attached = []
        self._known = [None] * len(self._ranks)
        return self

    def Attach(self, memory):
        """MPI_Win_attach: `memory` (a writable contiguous buffer) may be accessed by the
        window's members, at its address, until Detach. Local. BufferError (read-only, not
        contiguous), MPI.Exception ERR_WIN."""
        self._check_live()
        view = np.frombuffer(memoryview(memory).cast("B"), np.uint8)
        if not view.flags.writeable:
            raise BufferError("Object is not writable.")
        lmr = self._engine.ia.lmr_create(self._engine.pz, view, WINDOW_PRIVILEGES) \
            if len(view) else None
        self._attached.append(_Region(view.ctypes.data, view, lmr))

    def Detach(self, memory):
        """MPI_Win_detach: the region attached last at `memory`'s address is no longer
        accessible (nothing if none is: MPICH does not check either). Local. MPI.Exception
        ERR_WIN."""
        self._check_live()
        view = np.frombuffer(memoryview(memory).cast("B"), np.uint8)
        for i in reversed(range(len(self._attached))):
            region = self._attached[i]
            if region.address == view.ctypes.data:
                del self._attached[i]
                if region.lmr is not None:
                    region.lmr.free()
                return

    def Free(self):
        """MPI_Win_free, as a window's; the regions still attached are released too."""
        attached = self._attached
        super().Free()
        for region in attached:
            if region.lmr is not None:
                region.lmr.free()
        attached.clear()

    # The origin's side: where an access goes.

    def _offset(self, target_rank, disp, length):
        """`disp` itself (an address), once a region of target_rank holds the `length` bytes
        there. MPI.Exception ERR_RMA_RANGE if none does."""
        if self._region_of(target_rank, disp, length) is None:
            _fail(errors.ERR_RMA_RANGE, f"bytes {disp:#x} to {disp + length:#x} of rank "
                                        f"{target_rank}: no region attached holds them")
        return disp

    def _rmr(self, target_rank, offset, length):
        address, _, rmr = self._region_of(target_rank, offset, length)
        return RmrTriplet(rmr.rmr_context, rmr.target_address + offset - address, length)

    def _region_of(self, target_rank, address, length):
        """(address, length, RmrTriplet) of target_rank's region that holds the bytes, or
        None; target_rank asked again if the regions known do not hold them (this rank's
        own are always the ones attached now)."""
        region = None if target_rank == self._rank else \
            _holding(self._known[target_rank] or (), address, length)
        if region is None:
            self._known[target_rank] = self._regions_at(target_rank)
            region = _holding(self._known[target_rank], address, length)
        return region

    def _regions_at(self, target_rank):
        """target_rank's regions: this rank's own, or what it answers to the question."""
        if target_rank == self._rank:
            return [(r.address, len(r.memory), None) for r in self._attached]
        answer = memoryview(bytearray(COUNT.size + MAX_REGIONS * REGION.size))
        self._engine.wait([self._engine.window_message(
            self._ranks[target_rank], WIN_ACC, self._id, ACC_BODY.pack(0, _REGIONS, 0, True),
            answer)])
        count = COUNT.unpack_from(answer)[0]
        regions = (REGION.unpack_from(answer, COUNT.size + i * REGION.size) for i in range(count))
        return [(address, length, RmrTriplet(context, target, length))
                for address, length, context, target in regions]

    # The target's side.

    def _local(self, offset, length):
        """The bytes at address `offset` of a region attached here; None if none holds them
        (detached while an origin still knew it)."""
        for region in reversed(self._attached):
            start = offset - region.address
            if 0 <= start and start + length <= len(region.memory):
                return memoryview(region.memory[start:start + length])
        return None

    def on_message(self, kind, source, request_id, body):
        """A window message, as a window's; also the question of the regions attached (the
        answer: their count, then each region, the last MAX_REGIONS attached at most), and
        an accumulate where no region is attached any more: not applied."""
        if kind == WIN_ACC:
            offset, op, datatype, _ = ACC_BODY.unpack_from(body)
            if op == _REGIONS:
                regions = [r for r in self._attached if r.lmr is not None][-MAX_REGIONS:]
                self._engine.answer(source, request_id, COUNT.pack(len(regions)) + b"".join(
                    REGION.pack(r.address, len(r.memory), *r.lmr.rmr_triplet()[:2])
                    for r in regions))
                return
            nbytes = len(body) - ACC_BODY.size      # (Compare_and_swap's: two elements)
            if self._local(offset, nbytes // 2 if op == _COMPARE_AND_SWAP else nbytes) is None:
                self._engine.answer(source, request_id)
                return
        super().on_message(kind, source, request_id, body)


def _holding(regions, address, length):
    """The region of `regions` ((address, length, ...) each) that holds the `length` bytes at
    `address`, or None."""
    for region in regions:
        if region[0] <= address and address + length <= region[0] + region[1]:
            return region
    return None


Win.Create_dynamic = DynamicWin.Create_dynamic
