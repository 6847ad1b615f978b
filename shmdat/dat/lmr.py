"""Local Memory Regions (dat_lmr_*): each is a verbs memory region (MR) of its PZ's PD.

Two kinds of memory:
  - provider memory, ``ia.lmr_create(pz, nbytes)``: the MR's own buffer, which
    on shm0 is a shared segment every peer can map, so a peer's RDMA is one copy;
  - consumer memory, ``ia.lmr_create(pz, buffer)`` over a numpy array,
    bytearray or memoryview: an MR over the consumer's memory (on shm0 peers
    reach it by cross-memory attach where the kernel allows).

lmr_context is the MR's lkey and rmr_context its rkey, as dapl has them.
"""

import ctypes

import numpy as np

from . import limits, seam
from .args import check_flags, check_local_iov, check_range, expected
from .constants import MemPriv
from .errors import InvalidState, PrivilegesViolation, ProtectionViolation, bad_arg
from .handle import Handle
from .values import LmrParam, LmrTriplet, RmrTriplet

REMOTE = MemPriv.REMOTE_READ | MemPriv.REMOTE_WRITE


def check_privileges(priv, position, name="privileges"):
    return MemPriv(check_flags(priv, position, name, int(MemPriv.ALL), "MemPriv flags"))


def verbs_access(enums, priv):
    """DAT privileges as ibv_access_flags (dapl's conversion): LOCAL_READ needs no bit,
    and remote write needs local write in verbs."""
    access = 0
    if priv & (MemPriv.LOCAL_WRITE | MemPriv.REMOTE_WRITE):
        access |= enums.IBV_ACCESS_LOCAL_WRITE
    if priv & MemPriv.REMOTE_READ:
        access |= enums.IBV_ACCESS_REMOTE_READ
    if priv & MemPriv.REMOTE_WRITE:
        access |= enums.IBV_ACCESS_REMOTE_WRITE
    return access


def register(ia, pz, length, priv, address=None):
    """A verbs MR in pz's PD, its errors as DAT's."""
    dev = ia._dev
    try:
        if address is None:
            return dev.mr.MR(pz._pd, length, verbs_access(dev.enums, priv))
        return dev.mr.MR(pz._pd, length, verbs_access(dev.enums, priv), address=address)
    except dev.pyverbs_error.PyverbsError as err:
        raise seam.dat_error(err, "MR") from None


class LMR(Handle):
    kind = "lmr"

    def __init__(self, ia, pz, region, privileges):
        super().__init__(ia)
        self._pz = pz
        self._priv = int(privileges)          # a plain int: tested on the hot path
        if isinstance(region, int) and not isinstance(region, bool):
            self._init_provider_memory(region)
        else:
            self._init_consumer_memory(region)
        self.lmr_context = self._mr.lkey
        self.rmr_context = self._mr.rkey if privileges & REMOTE else None
        self._sge_class = ia._dev.wr.SGE
        self._rmrs = set()                  # RMRs bound into this LMR
        ia._lmrs[self.lmr_context] = self
        pz._users.add(self)

    def _init_provider_memory(self, nbytes):
        if nbytes <= 0:
            raise bad_arg(3, f"an LMR needs a positive length, not {nbytes}")
        if nbytes > limits.MAX_LMR_BLOCK_SIZE:
            raise bad_arg(3, f"{nbytes} bytes is over max_lmr_block_size ({limits.MAX_LMR_BLOCK_SIZE})")
        self._mr = register(self._ia, self._pz, nbytes, self._priv)
        self._region = None
        self._shared = True
        self.registered_address = self._mr.buf
        self.registered_size = nbytes
        self.buffer = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(self._mr.buf))

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
        buffer = np.frombuffer(view, dtype=np.uint8)
        self._mr = register(self._ia, self._pz, view.nbytes, self._priv, address=buffer.ctypes.data)
        self._region = region               # pinned for the LMR's life
        self._shared = False
        self.buffer = buffer
        self.registered_address = int(buffer.ctypes.data)
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
        """The verbs SGE for a segment of this LMR, or None if it falls outside it."""
        off = address - self.registered_address
        if off < 0 or off + length > self.registered_size:
            return None
        return self._sge_class(address, length, self.lmr_context)

    # dat_lmr_query / dat_lmr_free

    def query(self):
        """dat_lmr_query -> LmrParam."""
        with self._ia._engine.lock:
            self._check()
            return LmrParam(ia=self._ia, mem_type="shared" if self._shared else "virtual",
                            region=self._region, length=self.registered_size, pz=self._pz,
                            mem_priv=MemPriv(self._priv), lmr_context=self.lmr_context,
                            rmr_context=self.rmr_context, registered_size=self.registered_size,
                            registered_address=self.registered_address)

    def free(self):
        """dat_lmr_free. Raises InvalidState while an RMR is bound into it; InvalidHandle.

        The rmr_context stops working at once: peers' RDMA with it fails from now on.
        """
        with self._ia._engine.lock:
            self._check()
            if self._rmrs:
                raise InvalidState(f"{len(self._rmrs)} RMR(s) are bound into this LMR",
                                   subtype="INVALID_STATE_LMR_IN_USE")
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        self._ia._lmrs.pop(self.lmr_context, None)
        self._ia._iov_cache.clear()     # no resolved iov may name this LMR any more
        self._pz._users.discard(self)
        if self._shared:
            self.buffer = None          # the MR's buffer goes with it
        self._mr.close()


IOV_CACHE_SIZE = 1024


class ResolvedIov:
    """A local_iov resolved against the LMRs: its verbs SGEs, its length in bytes, and a
    SendWR and a RecvWR over them (over the PZ's empty SGE when there are none: a verbs
    WR needs one). Every post of this iov posts one of them again with its wr_id set (a
    post copies its WR; the IA lock is held from setting the wr_id to the post, so EPs
    may share them)."""

    __slots__ = ("pz", "sges", "total", "send_wr", "recv_wr")

    def __init__(self, pz, sges, total, engine):
        self.pz, self.sges, self.total = pz, sges, total
        posted = sges or pz._empty_sges()
        self.send_wr = engine.send_wr(num_sge=len(posted), sg=posted)
        self.recv_wr = engine.recv_wr(num_sge=len(posted), sg=posted)


def resolve_iov(ia, pz, local_iov, need, max_iov, position, owner):
    """Resolve local_iov into a ResolvedIov, checking every segment against the
    LMRs of `ia`, the PZ `pz` of the EP or SRQ (`owner`) and the `need`ed privilege.

    Consumers post the same triplets again and again: a resolved local_iov is
    remembered per IA (its sges are never modified) until any LMR is freed.
    """
    try:
        key = (pz, need, max_iov, *local_iov)
        hit = ia._iov_cache.get(key)
    except TypeError:                   # not a sequence of hashable triplets: no caching
        return _resolve_iov(ia, pz, local_iov, need, max_iov, position, owner)
    if hit is not None:
        for ctx, addr, n in local_iov:  # True == 1 and 8.0 == 8 would find an int triplet's entry
            if ctx.__class__ is not int or addr.__class__ is not int or n.__class__ is not int:
                hit = None
                break
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
    return ResolvedIov(pz, sges, total, ia._engine)

