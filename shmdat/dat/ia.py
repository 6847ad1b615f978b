"""Interface Adapters (dat_ia_*): the root of every other object, and the
factory methods that create them (``dat_<obj>_create(ia, ...)`` is ``ia.<obj>_create(...)``).
"""

import atexit
import os
import threading
import weakref

from . import limits, seam, srq as _srq
from .args import check_choice, check_conn_qual, check_flags, check_qlen, expected
from .cm import ConnectionManager, RSP
from .cno import CNO
from .constants import CloseFlags, CompletionFlags, EvdFlags, PspFlags
from .ep import EP, check_ep_attr, check_evd
from .errors import ConnQualInUse, InsufficientResources, InvalidState, bad_arg
from .evd import EVD
from .handle import Handle, check_handle
from .engine import Engine
from .nic_engine import NicEngine
from .lmr import LMR, check_privileges
from .pz import PZ
from .values import IaAttr, ProviderAttr

PROVIDER_NAME = "shm0"
PROVIDER_VERSION = (1, 0)
DAT_VERSION = (1, 2)

_open_ias = weakref.WeakSet()
_CLOSE_FLAGS = (CloseFlags.ABRUPT, CloseFlags.GRACEFUL)
_EVD_FLAGS = int(EvdFlags.DEFAULT | EvdFlags.SOFTWARE)


class IA(Handle):
    kind = "ia"

    def __init__(self, name, async_evd_qlen):
        super().__init__(self)
        self._dev = seam.open_device(name)
        try:
            # shm0 runs inside DAT's calls and says more through shm0dv; a device
            # without it runs by itself (nic_engine.py).
            engine = Engine if self._dev.dv is not None else NicEngine
            self._engine = engine(self, self._dev)
        except self._dev.pyverbs_error.PyverbsError as err:
            raise seam.dat_error(err, "device.Context") from None
        self._device_attr = self._engine.ctx.query_device()
        self._pzs, self._evds, self._eps, self._cnos, self._srqs, self._rmrs = (set() for _ in range(6))
        self._lmrs = {}                 # lmr_context -> LMR
        self._iov_cache = {}            # resolved local_iovs (ep.resolve_iov); cleared when an LMR goes
        self._cm = ConnectionManager(self)
        self._engine.cm = self._cm
        # The CQ of an EP without a recv or request EVD (dapl's trick): nothing completes there.
        self._null_cq = self._dev.cq.CQ(self._engine.ctx, 1)
        self._async_evd = None
        self._async_evd = EVD(self, async_evd_qlen, EvdFlags.ASYNC, None)
        self._evds.add(self._async_evd)
        self._owner_thread = threading.get_ident()
        _open_ias.add(self)

    # Attributes.

    @property
    def address(self):
        """This IA's address: what a peer passes to ep.connect()."""
        self._check()
        return self._dev.address

    @property
    def async_evd(self):
        """The async EVD that ia_open created."""
        self._check()
        return self._async_evd

    def query(self):
        """dat_ia_query -> (IaAttr, ProviderAttr)."""
        self._check()
        ia_attr = IaAttr(
            adapter_name=self._dev.name, vendor_name="shmdat",
            hardware_version_major=1, hardware_version_minor=0,
            firmware_version_major=PROVIDER_VERSION[0], firmware_version_minor=PROVIDER_VERSION[1],
            ia_address=self._dev.address, max_eps=limits.MAX_EPS,
            max_dto_per_ep=limits.MAX_DTO_PER_EP,
            max_rdma_read_per_ep_in=limits.MAX_RDMA_READ_PER_EP,
            max_rdma_read_per_ep_out=limits.MAX_RDMA_READ_PER_EP,
            max_evds=limits.MAX_EVDS, max_evd_qlen=limits.MAX_EVD_QLEN,
            max_iov_segments_per_dto=limits.MAX_IOV_SEGMENTS_PER_DTO, max_lmrs=limits.MAX_LMRS,
            max_lmr_block_size=min(limits.MAX_LMR_BLOCK_SIZE, self._device_attr.max_mr_size),
            max_lmr_virtual_address=(1 << 64) - 1, max_pzs=limits.MAX_PZS,
            max_message_size=limits.MAX_MESSAGE_SIZE, max_rdma_size=limits.MAX_RDMA_SIZE,
            max_rmrs=limits.MAX_RMRS, max_rmr_target_address=(1 << 64) - 1,
            max_srqs=limits.MAX_SRQS, max_ep_per_srq=limits.MAX_EP_PER_SRQ,
            max_recv_per_srq=limits.MAX_RECV_PER_SRQ,
            max_iov_segments_per_rdma_read=limits.MAX_IOV_SEGMENTS_PER_DTO,
            max_iov_segments_per_rdma_write=limits.MAX_IOV_SEGMENTS_PER_DTO)
        provider_attr = ProviderAttr(
            provider_name=self._dev.provider, provider_version_major=PROVIDER_VERSION[0],
            provider_version_minor=PROVIDER_VERSION[1], dapl_version_major=DAT_VERSION[0],
            dapl_version_minor=DAT_VERSION[1],
            lmr_mem_types_supported=(("virtual", "shared")
                                     if self._engine.consumer_memory_remote_ok()[0]
                                     else ("shared",)),
            max_private_data_size=self._engine.max_private_data_size, is_thread_safe=True,
            completion_flags_supported=(CompletionFlags.SUPPRESS | CompletionFlags.SOLICITED_WAIT
                                        | CompletionFlags.UNSIGNALLED | CompletionFlags.BARRIER_FENCE
                                        | CompletionFlags.EVD_THRESHOLD),
            ep_creator="consumer", max_rdma_read_per_ep_in_guaranteed=True,
            max_rdma_read_per_ep_out_guaranteed=True,
            srq_supported=True, srq_watermarks_supported=self._engine.hard_watermark_supported,
            srq_info_supported=self._engine.receives_visible,
            ep_recv_info_supported=self._engine.receives_visible,
            optimal_buffer_alignment=limits.OPTIMAL_BUFFER_ALIGNMENT,
            iov_ownership_on_return="consumer", dto_async_return_guaranteed=False,
            rdma_write_for_rdma_read_req=False, lmr_sync_req=False)
        return ia_attr, provider_attr

    # Creators.

    def pz_create(self):
        """dat_pz_create -> PZ. Raises InsufficientResources (max_pzs), InvalidHandle."""
        with self._engine.lock:
            self._check()
            if len(self._pzs) >= limits.MAX_PZS:
                raise InsufficientResources(f"the IA has max_pzs ({limits.MAX_PZS}) PZs",
                                            subtype="RESOURCE_PROTECTION_DOMAIN")
            pz = PZ(self)
            self._pzs.add(pz)
            return pz

    def evd_create(self, qlen, flags=EvdFlags.DEFAULT, cno=None):
        """dat_evd_create -> EVD. Raises InvalidParameter (qlen, flags),
        InsufficientResources (max_evds), InvalidHandle (cno)."""
        with self._engine.lock:
            self._check()
            check_qlen(qlen, 2)
            if not check_flags(flags, 4, "flags", _EVD_FLAGS, "a combination of EvdFlags"):
                raise expected(4, "flags", "a non-empty combination of EvdFlags", flags)
            check_handle(cno, CNO, "cno", "INVALID_HANDLE_CNO", allow_none=True, ia=self)
            if len(self._evds) >= limits.MAX_EVDS:
                raise InsufficientResources(f"the IA has max_evds ({limits.MAX_EVDS}) EVDs",
                                            subtype="RESOURCE_TEVD")
            evd = EVD(self, qlen, EvdFlags(flags), cno)
            self._evds.add(evd)
            return evd

    def cno_create(self):
        """dat_cno_create -> CNO. Raises InsufficientResources, InvalidHandle."""
        with self._engine.lock:
            self._check()
            if len(self._cnos) >= limits.MAX_CNOS:
                raise InsufficientResources(f"the IA has {limits.MAX_CNOS} CNOs")
            cno = CNO(self)
            self._cnos.add(cno)
            return cno

    def lmr_create(self, pz, region, privileges=0x33):
        """dat_lmr_create -> LMR over `region`: a length in bytes (provider memory every
        peer can reach) or a writable buffer (the consumer's own memory).

        Raises InvalidParameter (zero or negative length, not a buffer, read-only buffer
        with write privileges, bad privileges), InsufficientResources (max_lmrs, or
        /dev/shm too small: the message gives the sizes), ModelNotSupported (remote
        privileges on consumer memory where cross-memory attach is forbidden), InvalidHandle.
        """
        with self._engine.lock:
            self._check()
            check_handle(pz, PZ, "pz", "INVALID_HANDLE_PZ", ia=self)
            priv = check_privileges(privileges, 5)
            if len(self._lmrs) >= limits.MAX_LMRS:
                raise InsufficientResources(f"the IA has max_lmrs ({limits.MAX_LMRS}) LMRs",
                                            subtype="RESOURCE_MEMORY_REGION")
            return LMR(self, pz, region, priv)

    def psp_create(self, conn_qual, evd, flags=PspFlags.CONSUMER):
        """dat_psp_create -> PSP listening on conn_qual; CRs arrive on `evd`.

        Raises ConnQualInUse, InvalidParameter, ModelNotSupported (PspFlags.PROVIDER),
        InvalidHandle (evd missing or without EvdFlags.CR)."""
        with self._engine.lock:
            self._check()
            check_conn_qual(conn_qual, 2)
            self._check_cr_evd(evd, 3, "PSP's connection requests")
            return self._cm.psp_create(conn_qual, evd, flags)

    def psp_create_any(self, evd, flags=PspFlags.CONSUMER):
        """dat_psp_create_any -> PSP on a free conn_qual (psp.conn_qual says which).

        Raises ConnQualUnavailable and the errors of psp_create."""
        with self._engine.lock:
            self._check()
            self._check_cr_evd(evd, 3, "PSP's connection requests")
            return self._cm.psp_create_any(evd, flags)

    def rsp_create(self, conn_qual, ep, evd):
        """dat_rsp_create -> RSP: `ep` (UNCONNECTED, now RESERVED) takes the one request
        that arrives on conn_qual. Raises ConnQualInUse, InvalidState, InvalidParameter,
        InvalidHandle."""
        with self._engine.lock:
            self._check()
            check_conn_qual(conn_qual, 2)
            check_handle(ep, EP, "ep", "INVALID_HANDLE_EP", ia=self)
            self._check_cr_evd(evd, 4, "RSP's connection request")
            ep._require("reserve", "rsp_create")
            return RSP(self, conn_qual, ep, evd)

    def _check_cr_evd(self, evd, position, what):
        """The CR EVD a PSP or RSP needs: a live CR EVD of this IA, not None."""
        check_evd(evd, EvdFlags.CR, "evd", "INVALID_HANDLE_EVD_CR", self)
        if evd is None:
            raise expected(position, "evd", f"an EVD for the {what}", evd)

    def ep_create(self, pz, recv_evd=None, request_evd=None, connect_evd=None, attr=None):
        """dat_ep_create -> EP (UNCONNECTED).

        A NULL (None) recv or request EVD goes with max_recv_dtos or max_request_dtos
        0; attr=None takes the defaults, with 0 for a NULL EVD's queue.

        Raises InvalidHandle (pz missing or freed; an EVD without the DTO or CONNECTION
        flag), InvalidParameter (attr: a field out of range, an EVD with a zero queue
        or a NULL EVD with a non-zero one), InsufficientResources (max_eps)."""
        return self._ep_create(pz, recv_evd, request_evd, connect_evd, None, attr)

    def ep_create_with_srq(self, pz, recv_evd, request_evd, connect_evd, srq, attr=None):
        """dat_ep_create_with_srq -> EP (UNCONNECTED) that takes its receives from `srq`.

        Raises InvalidHandle (srq missing, freed or of another IA, and as ep_create),
        InvalidParameter (pz is not the SRQ's PZ: shmdat does not support EPs in
        another PZ than their SRQ; attr), InsufficientResources (max_eps, or
        max_ep_per_srq EPs on the SRQ)."""
        with self._engine.lock:
            self._check()
            check_handle(srq, _srq.SRQ, "srq", "INVALID_HANDLE_SRQ", ia=self)
            if pz is not srq._pz and isinstance(pz, PZ):
                raise bad_arg(2, "pz must be the SRQ's PZ (srq_ep_pz_difference_support is false)")
            if len(srq._eps) >= limits.MAX_EP_PER_SRQ:
                raise InsufficientResources(f"the SRQ has max_ep_per_srq ({limits.MAX_EP_PER_SRQ}) EPs",
                                            subtype="RESOURCE_SRQ")
            return self._ep_create(pz, recv_evd, request_evd, connect_evd, srq, attr)

    def srq_create(self, pz, max_recv_dtos, max_recv_iov=1, low_watermark=0):
        """dat_srq_create -> SRQ in `pz` holding up to max_recv_dtos receives of up to
        max_recv_iov segments. A low_watermark above 0 arms the low-watermark event,
        which then fires at once (the SRQ starts empty); 0 is DAT_SRQ_LW_DEFAULT.

        Raises InvalidParameter (max_recv_dtos not 1..max_recv_per_srq, max_recv_iov
        not 1..max_iov_segments_per_dto, low_watermark not 0..max_recv_dtos),
        InsufficientResources (max_srqs), InvalidHandle (pz)."""
        with self._engine.lock:
            self._check()
            check_handle(pz, PZ, "pz", "INVALID_HANDLE_PZ", ia=self)
            return _srq.create(self, pz, max_recv_dtos, max_recv_iov, low_watermark)

    def _ep_create(self, pz, recv_evd, request_evd, connect_evd, srq, attr):
        with self._engine.lock:
            self._check()
            check_handle(pz, PZ, "pz", "INVALID_HANDLE_PZ", ia=self)
            check_evd(recv_evd, EvdFlags.DTO, "recv_evd", "INVALID_HANDLE_EVD_RECV", self)
            check_evd(request_evd, EvdFlags.DTO, "request_evd", "INVALID_HANDLE_EVD_REQUEST", self)
            check_evd(connect_evd, EvdFlags.CONNECTION, "connect_evd", "INVALID_HANDLE_EVD_CONN", self)
            attr = check_ep_attr(attr, recv_evd, request_evd, srq)
            if len(self._eps) >= limits.MAX_EPS:
                raise InsufficientResources(f"the IA has max_eps ({limits.MAX_EPS}) EPs",
                                            subtype="RESOURCE_TEP")
            return EP(self, pz, recv_evd, request_evd, connect_evd, attr, srq)

    # Closing.

    def close(self, flags=CloseFlags.ABRUPT):
        """dat_ia_close. ABRUPT destroys every object of the IA (its connections end,
        waiters get Abort). GRACEFUL raises InvalidState while consumer objects remain."""
        with self._engine.lock:
            self._check()
            if check_choice(flags, 2, "flags", _CLOSE_FLAGS) == CloseFlags.GRACEFUL:
                left = self._objects()
                if left:
                    kinds = sorted({o.kind.upper() for o in left})
                    raise InvalidState(f"{len(left)} object(s) remain ({', '.join(kinds)}); "
                                       "free them or close ABRUPT", subtype="INVALID_STATE_IA_IN_USE")
            self._destroy()

    def _objects(self):
        return ([*self._eps, *self._cm.crs, *self._cm.sps.values(), *self._rmrs,
                 *self._lmrs.values(), *self._srqs, *(self._evds - {self._async_evd}),
                 *self._cnos, *self._pzs])

    def _destroy(self):
        for obj in self._objects():
            if not obj._freed:
                obj._destroy()
        self._async_evd._destroy()
        self._mark_freed()
        self._cm.close()
        # Threads blocked in this IA (another thread's wait, a CNO's progress thread)
        # still touch the device as they leave: close it only after they are gone.
        self._engine.drain_waiters()
        self._engine.close()
        _open_ias.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self._freed:
            self.close(CloseFlags.ABRUPT)


def _forget_parent_ias():
    """In a child made by fork(): the parent's IAs are not ours to use or close
    (their Contexts are forgotten by the device's own fork handler)."""
    _open_ias.clear()


os.register_at_fork(after_in_child=_forget_parent_ias)


@atexit.register
def _close_all():
    """A process that exits without closing its IAs still tells its peers (DISCONNECTED)."""
    for ia in list(_open_ias):
        try:
            ia.close(CloseFlags.ABRUPT)
        except Exception:
            pass
