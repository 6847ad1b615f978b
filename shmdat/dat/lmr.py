"""Local Memory Regions (dat_lmr_*).

Two kinds of memory:
  - provider memory, ``ia.lmr_create(pz, nbytes)``: a shared segment that every
    peer can map, so a peer's RDMA is one copy by the initiator alone;
  - consumer memory, ``ia.lmr_create(pz, buffer)`` over a numpy array,
    bytearray or memoryview: sends from it and receives into it go through the
    rings; peers reach it by cross-memory attach where the kernel allows.
"""

import secrets

import numpy as np

from . import limits
from .args import check_flags, check_local_iov, check_range, expected
from .constants import MemPriv
from .errors import (InsufficientResources, InvalidState,
                     ModelNotSupported, PrivilegesViolation, ProtectionViolation, bad_arg,
                     hardware_errors)
from .handle import Handle
from ..hw import cma, hca
from ..hw.ring import Sge
from .values import LmrParam, LmrTriplet, RmrTriplet

REMOTE = MemPriv.REMOTE_READ | MemPriv.REMOTE_WRITE


def check_privileges(priv, position, name="privileges"):
    return MemPriv(check_flags(priv, position, name, int(MemPriv.ALL), "MemPriv flags"))


class LMR(Handle):
    kind = "lmr"

    def __init__(self, ia, pz, region, privileges):
        super().__init__(ia)
        self._pz = pz
        self._priv = int(privileges)          # a plain int: tested on the hot path
        self._segment = None
        self._seg_id = 0
        if isinstance(region, int) and not isinstance(region, bool):
            self._init_provider_memory(region)
        else:
            self._init_consumer_memory(region)
        self.registered_address = int(self.buffer.ctypes.data) if self.registered_size else 0
        self.lmr_context = _new_context(ia._lmrs)
        self.rmr_context = None
        if privileges & REMOTE:
            kind = hca.KIND_SEGMENT if self._seg_id else hca.KIND_PROCESS
            key = ia._hca.register(kind, int(privileges), pz._id, self.registered_address,
                                   self.registered_size, self._seg_id, 0)
            if key is None:
                self._release_memory()
                raise InsufficientResources("the IA's registration table is full "
                                            f"(max_lmrs + max_rmrs = {ia._hca.table_slots - 1})",
                                            subtype="RESOURCE_MEMORY_REGION")
            self.rmr_context = key
        self._rmrs = set()                  # RMRs bound into this LMR
        ia._lmrs[self.lmr_context] = self
        pz._users.add(self)

    def _init_provider_memory(self, nbytes):
        if nbytes <= 0:
            raise bad_arg(3, f"an LMR needs a positive length, not {nbytes}")
        if nbytes > limits.MAX_LMR_BLOCK_SIZE:
            raise bad_arg(3, f"{nbytes} bytes is over max_lmr_block_size ({limits.MAX_LMR_BLOCK_SIZE})")
        with hardware_errors():
            self._segment, self._seg_id = self._ia._hca.new_segment(nbytes)
        self._region = None
        self._view = self._segment.buf
        self.buffer = np.frombuffer(self._segment.mmap, dtype=np.uint8)
        self.registered_size = nbytes

    def _init_consumer_memory(self, region):
        try:
            view = memoryview(region)
        except TypeError:
            raise expected(3, "region", "a length in bytes or a buffer (numpy array, bytearray, "
                                        "memoryview)", region) from None
        if not view.c_contiguous:
            raise expected(3, "region", "C-contiguous memory", region)
        if view.readonly and self._priv & (MemPriv.LOCAL_WRITE | MemPriv.REMOTE_WRITE):
            raise expected(3, "region", "writable memory for write privileges", region,
                           "; register read-only memory without LOCAL_WRITE and REMOTE_WRITE")
        view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        if view.nbytes == 0:
            raise expected(3, "region", "a buffer of at least one byte", region)
        if self._priv & REMOTE:
            usable, why = cma.status()
            if not usable:
                raise ModelNotSupported("remote access to consumer memory needs cross-memory "
                                        f"attach, which this machine forbids: {why}")
            cma.allow_peers()
        self._region = region               # pinned for the LMR's life
        self._view = view
        self.buffer = np.frombuffer(view, dtype=np.uint8)
        self.registered_size = view.nbytes

    # Triplets.

    def triplet(self, offset=0, length=None):
        """An LmrTriplet for [offset, offset+length) of this LMR (default: to its end)."""
        self._check()
        offset, length = check_range(offset, length, self.registered_size)
        return LmrTriplet(self.lmr_context, self.registered_address + offset, length)

    def rmr_triplet(self, offset=0, length=None):
        """An RmrTriplet a peer may use for [offset, offset+length) of this LMR."""
        self._check()
        if self.rmr_context is None:
            raise PrivilegesViolation("this LMR was registered without remote privileges "
                                      "(MemPriv.REMOTE_READ / REMOTE_WRITE)")
        offset, length = check_range(offset, length, self.registered_size)
        return RmrTriplet(self.rmr_context, self.registered_address + offset, length)

    def _sge(self, address, length):
        """The Sge for a segment of this LMR, or None if it falls outside it."""
        off = address - self.registered_address
        if off < 0 or off + length > self.registered_size:
            return None
        return Sge(self._view[off:off + length], address, self._seg_id, off)

    # dat_lmr_query / dat_lmr_free

    def query(self):
        """dat_lmr_query -> LmrParam."""
        with self._ia._progress.lock:
            self._check()
            return LmrParam(ia=self._ia, mem_type="shared" if self._seg_id else "virtual",
                            region=self._region, length=self.registered_size, pz=self._pz,
                            mem_priv=MemPriv(self._priv), lmr_context=self.lmr_context,
                            rmr_context=self.rmr_context, registered_size=self.registered_size,
                            registered_address=self.registered_address)

    def free(self):
        """dat_lmr_free. Raises InvalidState while an RMR is bound into it; InvalidHandle.

        The rmr_context stops working at once: peers' RDMA with it fails from now on.
        """
        with self._ia._progress.lock:
            self._check()
            if self._rmrs:
                raise InvalidState(f"{len(self._rmrs)} RMR(s) are bound into this LMR",
                                   subtype="INVALID_STATE_LMR_IN_USE")
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        if self.rmr_context is not None:
            self._ia._hca.deregister(self.rmr_context)
        self._ia._lmrs.pop(self.lmr_context, None)
        self._ia._iov_cache.clear()     # no resolved iov may name this LMR any more
        self._pz._users.discard(self)
        self._release_memory()

    def _release_memory(self):
        if self._segment is not None:
            self.buffer = None
            self._view = None
            self._segment.unlink()
            self._segment.close()
            self._segment = None


def _new_context(table):
    while True:
        ctx = secrets.randbits(32)
        if ctx and ctx not in table:
            return ctx


IOV_CACHE_SIZE = 1024


def resolve_iov(ia, pz, local_iov, need, max_iov, position, owner):
    """Resolve local_iov into (sges, total bytes), checking every segment against
    the LMRs of `ia`, the PZ `pz` of the EP or SRQ (`owner`) and the `need`ed privilege.

    Consumers post the same triplets again and again: a resolved local_iov is
    remembered per IA (the sges are never modified) until any LMR is freed.
    """
    try:
        key = (pz, need, max_iov, *local_iov)
        hit = ia._iov_cache.get(key)
    except TypeError:                   # not a sequence of hashable triplets: no caching
        return _resolve_iov(ia, pz, local_iov, need, max_iov, position, owner)
    if hit is None:
        hit = _resolve_iov(ia, pz, local_iov, need, max_iov, position, owner)
        cache = ia._iov_cache
        if len(cache) >= IOV_CACHE_SIZE:
            cache.clear()
        cache[key] = hit
    return hit


def _resolve_iov(ia, pz, local_iov, need, max_iov, position, owner):
    lmrs = ia._lmrs
    sges = []
    total = 0
    segments = check_local_iov(local_iov, position)
    if len(segments) > max_iov:
        raise bad_arg(position, f"local_iov has {len(segments)} segments; the {owner} allows {max_iov}")
    for ctx, addr, n in segments:
        if not n:
            continue                        # DAT: a zero-length segment's other fields are ignored
        lmr = lmrs.get(ctx)
        if lmr is None:
            raise PrivilegesViolation(f"lmr_context {ctx:#x} names no LMR of this IA")
        if lmr._pz is not pz:
            raise ProtectionViolation(f"an LMR of local_iov is in another PZ than the {owner}")
        if not lmr._priv & need:
            raise PrivilegesViolation(f"the LMR lacks {MemPriv(need).name} privilege")
        sge = lmr._sge(addr, n)
        if sge is None:
            raise ProtectionViolation(f"segment [{addr:#x}, +{n}) lies outside its LMR")
        sges.append(sge)
        total += n
    return sges, total

