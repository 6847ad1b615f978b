"""Memory regions (pyverbs.mr): MR, and the kinds shm0 lacks (memory windows,
the extended registration, device memory, DMA-BUF, driver buffers, DMA handles),
which are EOPNOTSUPP.

`MR(pd, length, access)` allocates its buffer in a shared segment of the
device, so that peers reach it by mapping (no copy through the kernel);
`MR(pd, length, access, address=addr)` registers memory the program owns,
which peers reach by cross-memory attach. `mr.buf` is a real address in this
process either way. Each MR has an entry in the Context's registration table:
its key is both the lkey and the rkey, as on Soft-RoCE and NICs, whatever the
access (a remote access the MR does not allow fails when it is tried); rereg
keeps the keys, so a peer's rkey still works after the access is widened.
"""

import ctypes
import errno

from ..hw import cma, layout, ring
from ..hw.errors import NoRoom
from . import checks, libibverbs_enums as e
from .base import PyverbsCM, Unsupported, UnsupportedAttr
from .pd import PD
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError

_REMOTE = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
_NEEDS_LOCAL_WRITE = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC
_SUPPORTED = int(e.IBV_ACCESS_LOCAL_WRITE | _REMOTE | e.IBV_ACCESS_RELAXED_ORDERING)
_HW_PRIV = ((e.IBV_ACCESS_REMOTE_READ, layout.PRIV_REMOTE_READ),
            (e.IBV_ACCESS_REMOTE_WRITE, layout.PRIV_REMOTE_WRITE),
            (e.IBV_ACCESS_REMOTE_ATOMIC, layout.PRIV_REMOTE_ATOMIC))
_REREG_FLAGS = int(e.IBV_REREG_MR_CHANGE_TRANSLATION | e.IBV_REREG_MR_CHANGE_PD
                   | e.IBV_REREG_MR_CHANGE_ACCESS)
SGE_CACHE_ENTRIES = 4096                # resolved SGEs a PD keeps (work_request)


def check_access(access, what):
    """Access flags as the kernel checks them at registration -> a plain int."""
    access = checks.uint(access, "access")
    if access & _NEEDS_LOCAL_WRITE and not access & e.IBV_ACCESS_LOCAL_WRITE:
        raise PyverbsRDMAError(f"{what}: remote write and atomic access need local write",
                               errno.EINVAL)
    if access & ~_SUPPORTED:
        raise PyverbsRDMAError(f"{what}: access flags {access & ~_SUPPORTED:#x} are not "
                               "supported by shm0", errno.EOPNOTSUPP)
    return int(access)


def remote_priv(access):
    """The hardware PRIV_* bits of the remote access in ibv_access_flags."""
    return sum(priv for flag, priv in _HW_PRIV if access & flag)


class MR(PyverbsCM):
    pd_set = "mrs"                  # the PD's set that holds it
    """ibv_reg_mr: `MR(pd, length, access, address=None)`.

    Raises PyverbsUserError (a creator that is not a PD, a bad length),
    PyverbsRDMAError: EINVAL (remote write or atomic without local write),
    EOPNOTSUPP (unsupported access flags; remote access to program memory
    where cross-memory attach is forbidden), ENOMEM (/dev/shm full, or the
    registration table), EBADF (closed PD).
    """

    def __init__(self, creator, length=0, access=0, address=None, implicit=False, **kwargs):
        super().__init__()
        what = self._failure(length, access)
        if not isinstance(creator, PD):
            raise PyverbsUserError(f"Cannot create MR from {type(creator)}")
        if implicit or kwargs.get("handle") is not None:
            raise PyverbsRDMAError(f"{what}: implicit and imported MRs are not supported",
                                   errno.EOPNOTSUPP)
        length = checks.uint(length, "length", 64)
        self.access = check_access(access, what)
        if address is not None:
            address = checks.uint(address, "address", 64)
        creator._check_open(what)
        self.pd = creator
        self._segment = None
        self._seg_id = 0
        self._place(address, length, what)
        table = creator.ctx.hca
        key = table.register(*self._entry())
        if key is None:
            self._free_buffer()
            raise PyverbsRDMAError(f"{what}: max_mr MRs are registered", errno.ENOMEM)
        self.lkey = key
        self.rkey = key
        creator.add_ref(self)
        creator.ctx.mrs_by_lkey[key] = self

    @staticmethod
    def _failure(length, access):
        """How pyverbs' message of a failed registration begins."""
        return f"Failed to register a MR. length: {length}, access flags: {access}"

    def _place(self, address, length, what):
        """Where the MR's bytes are: a new shared segment, or the program's memory."""
        self.length = length
        if address:
            self._allow_remote(self.access, what, program_memory=True)
            self.buf = int(address)
            return
        self.buf = 0
        if length:
            try:
                self._segment, self._seg_id = self.pd.ctx.hca.new_segment(length)
            except NoRoom as err:
                raise PyverbsRDMAError(f"{what}: {err}", errno.ENOMEM) from None
            self.buf = ctypes.addressof(ctypes.c_char.from_buffer(self._segment.mmap))

    @staticmethod
    def _allow_remote(access, what, program_memory):
        """Program memory that peers may reach needs cross-memory attach (EOPNOTSUPP
        where it is forbidden); shared segments need nothing."""
        if program_memory and access & _REMOTE:
            usable, why = cma.status()
            if not usable:
                raise PyverbsRDMAError(f"{what}: peers cannot reach this process's memory: {why}",
                                       errno.EOPNOTSUPP)
            cma.allow_peers()

    def _entry(self):
        """The registration table entry's fields (kind, priv, pd, base, length, seg, segoff)."""
        kind = layout.KIND_SEGMENT if self._segment is not None else layout.KIND_PROCESS
        return kind, remote_priv(self.access), self.pd.pd_id, self.buf, self.length, self._seg_id, 0

    def _free_buffer(self):
        if self._segment is not None:
            self._segment.unlink()
            self._segment.close()      # raises BufferError if a view of the buffer is alive
            self._segment = None

    def _release(self):
        """ibv_dereg_mr: peers' RDMA with the rkey fails from now on."""
        ctx = self.pd.ctx
        ctx.hca.deregister(self.lkey)
        ctx.mrs_by_lkey.pop(self.lkey, None)
        self.pd.mrs.discard(self)
        self._forget_sges()
        self._free_buffer()
        self.buf = 0

    def _forget_sges(self):
        """Drop the SGEs the PD's cache resolved within this MR (before its buffer goes:
        they hold views of it)."""
        cache = self.pd.sge_cache
        with self.pd.ctx.lock:                  # posts of other threads fill it meanwhile
            for key in [key for key in cache if key[0] == self.lkey]:
                del cache[key]

    def _check_range(self, length, offset, what):
        self._check_open(what)
        if not isinstance(offset, int) or offset < 0:
            raise PyverbsUserError(f"Invalid offset {offset}")
        if not self.buf or not isinstance(length, int) or length < 0 or offset + length > self.length:
            raise PyverbsUserError(f"The MR buffer isn't allocated or length {length} is invalid")

    def write(self, data, length, offset=0):
        """Copy `length` bytes of `data` (bytes, or a str, encoded) into the buffer at `offset`."""
        source = checks.data(data, "data", encode=True)
        self._check_range(length, offset, "Failed to write to the MR")
        if length > source.nbytes:
            raise PyverbsUserError(f"data holds {source.nbytes} bytes, fewer than length {length}")
        ctypes.memmove(self.buf + offset, bytes(source[:length]), length)

    def read(self, length, offset):
        """The `length` bytes of the buffer at `offset`."""
        self._check_range(length, offset, "Failed to read the MR")
        return ctypes.string_at(self.buf + offset, length)

    def rereg(self, flags, pd=None, addr=0, length=0, access=0):
        """ibv_rereg_mr: change the PD, the access flags, or the memory
        (`addr`, `length`: program memory from then on); lkey and rkey stay.

        Raises PyverbsRDMAError (EINVAL for bad flags or arguments, and the
        errors of registration).
        """
        what = "Failed to rereg MR"
        self._check_open(what)
        if not isinstance(flags, int) or not flags or flags & ~_REREG_FLAGS:
            raise PyverbsRDMAError(f"{what}: flags {flags!r} are not ibv_rereg_mr_flags", errno.EINVAL)
        if flags & e.IBV_REREG_MR_CHANGE_PD and not isinstance(pd, PD):
            raise PyverbsRDMAError(f"{what}: IBV_REREG_MR_CHANGE_PD needs a PD", errno.EINVAL)
        if flags & e.IBV_REREG_MR_CHANGE_PD and pd.ctx is not self.pd.ctx:
            raise PyverbsRDMAError(f"{what}: the PD is of another context", errno.EINVAL)
        new_access = check_access(access, what) if flags & e.IBV_REREG_MR_CHANGE_ACCESS else self.access
        self._forget_sges()
        if flags & e.IBV_REREG_MR_CHANGE_TRANSLATION:
            addr, length = checks.uint(addr, "addr", 64), checks.uint(length, "length", 64)
            if not addr or length <= 0:
                raise PyverbsRDMAError(f"{what}: a new translation needs an address and a length",
                                       errno.EINVAL)
            self._free_buffer()
            self.access = new_access
            self._place(addr, length, what)
        else:
            self._allow_remote(new_access, what, program_memory=self._segment is None)
        self.access = new_access
        if flags & e.IBV_REREG_MR_CHANGE_PD:
            self.pd.mrs.discard(self)
            self.pd = pd
            pd.add_ref(self)
        self.pd.ctx.hca.reregister(self.lkey, *self._entry())

    @property
    def handle(self):
        return self.lkey

    def __str__(self):
        return (f"MR\n  lkey: {self.lkey}\n  rkey: {self.rkey}\n  length: {self.length}\n"
                f"  buf: {self.buf:#x}\n")


LOCAL_WRITE = int(e.IBV_ACCESS_LOCAL_WRITE)


def work_request(pd, op, sges, need, ctx):
    """A hardware WorkRequest for the SGEs of a verbs WR, each checked against the
    MRs of `pd` (and the access `need`ed): status LOCAL_PROTECTION if one fails,
    as the device reports it in the completion."""
    hw_sges, total, status = resolve_sges(pd, sges, need)
    work = ring.WorkRequest(op, hw_sges, total, None, 0, ctx)
    if status:
        work.status = status
    return work


def resolve_sges(pd, sges, need):
    """(hardware Sges, total bytes, ring.OK or ring.LOCAL_PROTECTION) for the SGEs of a
    verbs WR, each checked against the MRs of `pd` and the access `need`ed. An SGE
    checked once is found in the PD's cache (pd.sge_cache) from then on, until its
    MR closes or is reregistered."""
    if len(sges) == 1:                  # the commonest: one SGE, checked before
        sge = sges[0]
        resolved = pd.sge_cache.get((sge.lkey, sge.addr, sge.length))
        if resolved is not None and (not need or resolved[1] & need):
            return [resolved[0]], sge.length, ring.OK
    cache, out, total = pd.sge_cache, [], 0
    for sge in sges:
        key = (sge.lkey, sge.addr, sge.length)
        resolved = cache.get(key)
        if resolved is None:
            resolved = _resolve(pd, sge, key)
        if resolved is None or (need and not resolved[1] & need):
            return out, total, ring.LOCAL_PROTECTION
        out.append(resolved[0])
        total += sge.length
    return out, total, ring.OK


def _resolve(pd, sge, key):
    """(the hardware Sge, the MR's access) of an SGE within an MR of `pd`, kept in the
    PD's cache under `key`; None if it is not within one."""
    mr = pd.ctx.mrs_by_lkey.get(sge.lkey)
    off = sge.addr - (mr.buf if mr is not None else 0)
    # (a negative length is one no uint32 holds: outside the MR, as a huge one is)
    if mr is None or mr.pd is not pd or off < 0 or sge.length < 0 or off + sge.length > mr.length:
        return None
    cache = pd.sge_cache
    if len(cache) >= SGE_CACHE_ENTRIES:         # a program whose buffers keep moving
        cache.clear()
    resolved = cache[key] = (_sge(mr, off, sge.length), int(mr.access))     # (a plain int: tested per post)
    return resolved


class Receive(ring.WorkRequest):
    """A posted receive: the hardware WorkRequest a message fills. Its SGEs are
    checked against the MRs when a message takes it, as a NIC resolves the lkeys
    then: a rereg in between (PD, translation) counts."""
    op = ring.OP_SEND
    remote = None
    flags = 0
    sges = ()               # the hardware Sges, once taken
    length = 0

    def __init__(self, pd, posted, ctx):
        self.pd, self.posted, self.ctx = pd, posted, ctx

    def take(self):
        """This receive, its SGEs resolved; status LOCAL_PROTECTION if one fails."""
        posted = self.posted
        if len(posted) == 1:        # the commonest: one SGE, found in the PD's cache (it runs per message)
            sge = posted[0]
            resolved = self.pd.sge_cache.get((sge.lkey, sge.addr, sge.length))
            if resolved is not None and resolved[1] & LOCAL_WRITE:
                self.sges, self.length = [resolved[0]], sge.length
                return self
        self.sges, self.length, status = resolve_sges(self.pd, posted, LOCAL_WRITE)
        if status:
            self.status = status
        return self

    def flushed(self):
        """This receive, to complete with FLUSHED."""
        self.status = ring.FLUSHED
        return self


def inline_request(op, sges, ctx):
    """A hardware WorkRequest carrying a copy of the SGEs' bytes, read now from
    their addresses (IBV_SEND_INLINE: the lkeys are not looked at, and the
    program may reuse its buffers as soon as the post returns)."""
    data = b"".join(ctypes.string_at(sge.addr, sge.length) for sge in sges)
    return ring.WorkRequest(op, [private_sge(data)], len(data), None, 0, ctx)


def private_sge(data):
    """A hardware Sge over a private copy of the bytes `data`."""
    copy = ctypes.create_string_buffer(data, len(data))
    return ring.Sge(memoryview(copy).cast("B"), ctypes.addressof(copy), 0, 0)


def _sge(mr, off, length):
    """The hardware's Sge for bytes [off, off+length) of `mr`."""
    if mr._segment is not None:
        return ring.Sge(mr._segment.buf[off:off + length], mr.buf + off, mr._seg_id, off)
    view = memoryview((ctypes.c_char * length).from_address(mr.buf + off)).cast("B")
    return ring.Sge(view, mr.buf + off, 0, 0)


class MWBindInfo(UnsupportedAttr):
    """ibv_mw_bind_info: (mr, addr, length, mw_access_flags)."""


class MWBind(UnsupportedAttr):
    """ibv_mw_bind: (MWBindInfo, send_flags, wr_id)."""


class MW(Unsupported):
    """ibv_alloc_mw: PyverbsRDMAError (EOPNOTSUPP)."""


class MREx(MR):
    """ibv_reg_mr_ex: `MREx(pd, length, access, address=None, iova=None, fd=None,
    fd_offset=0, dmah=None, implicit=False, buf=None)`, registered as ibv_reg_mr
    would, which is what libibverbs does for a provider without a reg_mr_ex of its own.

    Raises what MR raises, and PyverbsRDMAError: EINVAL for an fd with an
    address (or implicit) or without an iova; EOPNOTSUPP for a DMA-BUF fd, a
    DMA handle, a Buf, or an iova other than the address.
    """

    def __init__(self, pd, length=0, access=0, address=None, iova=None, fd=None, fd_offset=0,
                 dmah=None, implicit=False, buf=None, **kwargs):
        what = self._failure(length, access)
        if fd is not None:
            if address or implicit or iova is None:
                raise PyverbsRDMAError(f"{what}: an fd goes with an iova and no address",
                                       errno.EINVAL)
            raise PyverbsRDMAError(f"{what}: shm0 cannot register DMA-BUFs", errno.EOPNOTSUPP)
        if dmah is not None or buf is not None or iova not in (None, address):
            raise PyverbsRDMAError(f"{what}: DMA handles, Bufs and an iova of its own are not "
                                   "supported by shm0", errno.EOPNOTSUPP)
        super().__init__(pd, length, access, address, implicit, **kwargs)

    @staticmethod
    def _failure(length, access):
        return "Failed to register MR using extended API"


class DMMR(Unsupported):
    """ibv_reg_dm_mr: PyverbsRDMAError (EOPNOTSUPP); shm0 has no device memory."""


class DmaBufMR(Unsupported):
    """ibv_reg_dmabuf_mr: PyverbsRDMAError (EOPNOTSUPP)."""


class Buf(Unsupported):
    """A buffer from a parent domain's allocator: PyverbsRDMAError (EOPNOTSUPP)."""


class BufMR(Unsupported):
    """An MR over a Buf: PyverbsRDMAError (EOPNOTSUPP)."""


class DmaHandleInitAttr(UnsupportedAttr):
    """ibv_dmah_init_attr."""


class DMAHandle(Unsupported):
    """ibv_alloc_dmah: PyverbsRDMAError (EOPNOTSUPP)."""
