"""Shared Receive Queues (dat_srq_*).

A DAT SRQ is a verbs SRQ of its PZ's PD: receive buffers posted to it go to
whichever of its EPs' QPs needs one first. The SRQ counts, as dat_srq_query
defines them:

- available: buffers still on the SRQ;
- outstanding: buffers posted and not yet reaped, i.e. posted - completed +
  completions still sitting in a recv EVD.

Completions are not tracked as they are dequeued (the EVD knows nothing of
SRQs); the SRQ counts them by one scan of its EPs' recv EVDs when it needs the
exact figure (query, resize, and post_recv near the limit). The low watermark
is the verbs SRQ's limit (IBV_EVENT_SRQ_LIMIT_REACHED, one-shot as DAT's).
"""

from . import limits, seam
from .args import check_int
from .constants import AsyncReason, DtoOp, EventNumber, MemPriv, SrqState
from .errors import InsufficientResources, InvalidState
from .evd import unreaped_receives
from .handle import Handle
from .lmr import resolve_iov
from .values import AsyncError, SrqParam

_RECEIVE = DtoOp.RECEIVE
_LOCAL_WRITE = int(MemPriv.LOCAL_WRITE)     # a plain int: an IntFlag operation is a Python call


class SRQ(Handle):
    kind = "srq"

    def __init__(self, ia, pz, max_recv_dtos, max_recv_iov, low_watermark):
        super().__init__(ia)
        self._pz = pz
        self._max_recv_dtos = max_recv_dtos
        self._max_recv_iov = max_recv_iov
        dev = ia._dev
        try:
            self._verbs_srq = dev.srq.SRQ(pz._pd, dev.srq.SrqInitAttr(
                dev.srq.SrqAttr(max_wr=max_recv_dtos, max_sge=max_recv_iov)))
        except dev.pyverbs_error.PyverbsError as err:
            raise seam.dat_error(err, "SRQ") from None
        self._eps = set()               # EPs created with this SRQ (until they are freed)
        self._evds = set()              # every recv EVD those EPs have used: completions wait there
        self._posted = 0                # buffers posted, ever
        self._completed = 0             # their completions drained from the CQs, ever
        self._lw = 0
        pz._users.add(self)
        ia._srqs.add(self)
        # dat_srq_create: a non-default low watermark arms the event; with no buffers
        # posted yet it fires at once (why the man page asks for DAT_SRQ_LW_DEFAULT).
        self._arm_lw(low_watermark)

    # Counts.

    def _at_eps(self):
        """Buffers taken by EPs for messages still arriving."""
        filling = self._ia._engine.receives_filling
        return sum(filling(ep._qp) for ep in self._eps)

    def _available(self):
        return self._posted - self._completed - self._at_eps()

    def _outstanding(self):
        unreaped = unreaped_receives(self._evds, lambda ep: ep._srq is self)
        return self._posted - self._completed + unreaped

    # The low watermark.

    def _arm_lw(self, low_watermark):
        """The verbs SRQ's limit; DAT fires at once if the SRQ is below it already
        (verbs would wait for the next buffer to go)."""
        self._lw = low_watermark
        dev = self._ia._dev
        if low_watermark and self._available() < low_watermark:
            self._limit_reached()
            return
        self._verbs_srq.modify(dev.srq.SrqAttr(srq_limit=low_watermark), dev.enums.IBV_SRQ_LIMIT)

    def _limit_reached(self):
        """The low watermark fires (one-shot: quiet until set_lw again)."""
        self._async(EventNumber.ASYNC_SRQ_LOW_WATERMARK, AsyncReason.SRQ_LOW_WATERMARK)

    def _async(self, number, reason):
        """An async event about this SRQ (IBV_EVENT_SRQ_LIMIT_REACHED, SRQ_ERR)."""
        self._ia._async_evd._post(number, AsyncError(self, reason))

    # DAT calls.

    def post_recv(self, local_iov, user_cookie):
        """dat_srq_post_recv: a receive buffer for the next message on any EP of this SRQ.

        Raises InsufficientResources (max_recv_dtos buffers outstanding: on the SRQ,
        at EPs, or completed but not yet reaped), InvalidParameter (local_iov),
        ProtectionViolation (an LMR of another PZ than the SRQ's, or a segment outside
        its LMR), PrivilegesViolation (unknown lmr_context or no LOCAL_WRITE),
        InvalidHandle.
        """
        ia = self._ia
        with ia._engine.lock:
            self._check()
            iov = resolve_iov(ia, self._pz, local_iov, _LOCAL_WRITE, self._max_recv_iov, 3, "SRQ")
            # Exact count only near the limit: the scan of the recv EVDs is not free.
            if self._posted - self._completed >= self._max_recv_dtos \
                    and self._outstanding() >= self._max_recv_dtos:
                raise InsufficientResources(f"the SRQ has max_recv_dtos ({self._max_recv_dtos}) "
                                            "buffers outstanding; reap completions or resize it",
                                            subtype="RESOURCE_SRQ")
            engine = ia._engine
            wr_id = next(engine.wr_ids)
            engine.slots[wr_id] = (None, user_cookie, 0, _RECEIVE, iov.total)
            wr = iov.recv_wr
            wr.wr_id = wr_id
            try:
                self._verbs_srq.post_recv(wr)
            except ia._dev.pyverbs_error.PyverbsError as err:
                engine.slots.pop(wr_id, None)
                raise seam.dat_error(err, "SRQ.post_recv") from None
            self._posted += 1

    def query(self):
        """dat_srq_query -> SrqParam, with available_dto_count (buffers on the SRQ)
        and outstanding_dto_count (posted and not yet reaped). Runs progress first,
        so messages that have arrived are counted. Raises InvalidHandle."""
        ia = self._ia
        with ia._engine.lock:
            self._check()
            ia._engine.poll()
            return SrqParam(ia=ia, srq_state=SrqState.OPERATIONAL, pz=self._pz,
                            max_recv_dtos=self._max_recv_dtos, max_recv_iov=self._max_recv_iov,
                            low_watermark=self._lw, available_dto_count=self._available(),
                            outstanding_dto_count=self._outstanding())

    def resize(self, max_recv_dtos):
        """dat_srq_resize: change max_recv_dtos without losing a buffer.

        Raises InvalidState (below the outstanding buffers, or below the low
        watermark), InvalidParameter (not an int from 1 to max_recv_per_srq),
        InvalidHandle.
        """
        ia = self._ia
        with ia._engine.lock:
            self._check()
            check_int(max_recv_dtos, 2, "max_recv_dtos", 1, limits.MAX_RECV_PER_SRQ)
            ia._engine.poll()
            outstanding = self._outstanding()
            if max_recv_dtos < outstanding:
                raise InvalidState(f"{outstanding} receive buffers are outstanding on the SRQ; "
                                   f"it cannot shrink to {max_recv_dtos}",
                                   subtype="INVALID_STATE_SRQ_OPERATIONAL")
            if max_recv_dtos < self._lw:
                raise InvalidState(f"max_recv_dtos {max_recv_dtos} is below the low watermark "
                                   f"({self._lw})", subtype="INVALID_STATE_SRQ_OPERATIONAL")
            if max_recv_dtos > self._max_recv_dtos:
                dev = ia._dev
                try:
                    self._verbs_srq.modify(dev.srq.SrqAttr(max_wr=max_recv_dtos), dev.enums.IBV_SRQ_MAX_WR)
                except dev.pyverbs_error.PyverbsError as err:
                    raise seam.dat_error(err, "SRQ.modify") from None
            self._max_recv_dtos = max_recv_dtos

    def set_lw(self, low_watermark):
        """dat_srq_set_lw: arm a one-shot ASYNC_SRQ_LOW_WATERMARK event (on the async
        EVD, handle = this SRQ) for the first time the buffers on the SRQ drop below
        low_watermark; fires at once if they already are. 0 disarms.

        Raises InvalidParameter (negative, or above max_recv_dtos), InvalidHandle.
        """
        ia = self._ia
        with ia._engine.lock:
            self._check()
            check_int(low_watermark, 2, "low_watermark", 0, self._max_recv_dtos)
            self._arm_lw(low_watermark)

    def free(self):
        """dat_srq_free. Raises InvalidState (INVALID_STATE_SRQ_IN_USE: an EP still uses
        the SRQ; free the EPs first), InvalidHandle."""
        with self._ia._engine.lock:
            self._check()
            if self._eps:
                raise InvalidState(f"{len(self._eps)} EP(s) still use this SRQ; free them first",
                                   subtype="INVALID_STATE_SRQ_IN_USE")
            self._destroy()

    def _destroy(self):
        # No EP is left to complete the buffers to, so they go with the SRQ.
        self._verbs_srq.close()
        self._pz._users.discard(self)
        self._ia._srqs.discard(self)
        self._mark_freed()


def create(ia, pz, max_recv_dtos, max_recv_iov, low_watermark):
    """The checks of dat_srq_create (the IA holds the lock and checked pz)."""
    check_int(max_recv_dtos, 3, "max_recv_dtos", 1, limits.MAX_RECV_PER_SRQ)
    check_int(max_recv_iov, 3, "max_recv_iov", 1, limits.MAX_IOV_SEGMENTS_PER_DTO)
    check_int(low_watermark, 3, "low_watermark", 0, max_recv_dtos)
    if len(ia._srqs) >= limits.MAX_SRQS:
        raise InsufficientResources(f"the IA has max_srqs ({limits.MAX_SRQS}) SRQs",
                                    subtype="RESOURCE_SRQ")
    return SRQ(ia, pz, max_recv_dtos, max_recv_iov, low_watermark)
