"""Shared receive queues (pyverbs.srq): SrqAttr, SrqInitAttr, SrqInitAttrEx, SRQ.

Receives posted to an SRQ go to whichever of its QPs a message reaches first,
in posting order. `srq_limit` arms IBV_EVENT_SRQ_LIMIT_REACHED: once, when the
receives on the SRQ drop below it (ibv_modify_srq(3)).
"""

import collections
import errno

from . import checks, libibverbs_enums as e
from .base import PyverbsCM, PyverbsObject, UnsupportedAttr, close_children
from .mr import Receive
from .pd import PD
from .pyverbs_error import PyverbsRDMAError
from .wr import RecvWR, check_recv_wr


class SrqAttr(PyverbsObject):
    """ibv_srq_attr."""

    def __init__(self, max_wr=100, max_sge=1, srq_limit=0):
        super().__init__()
        self.max_wr, self.max_sge, self.srq_limit = max_wr, max_sge, srq_limit


class SrqInitAttr(PyverbsObject):
    """ibv_srq_init_attr (srq_limit is ignored at creation, as the man page says)."""

    def __init__(self, attr=None):
        super().__init__()
        self.attr = attr if attr is not None else SrqAttr(0, 0, 0)

    @property
    def max_wr(self):
        return self.attr.max_wr

    @property
    def max_sge(self):
        return self.attr.max_sge

    @property
    def srq_limit(self):
        return self.attr.srq_limit


class SrqInitAttrEx(SrqInitAttr):
    """ibv_srq_init_attr_ex: SrqInitAttrEx(max_wr, max_sge, srq_limit), then
    comp_mask, srq_type, pd, xrcd, cq, max_num_tags and max_ops as attributes."""

    def __init__(self, max_wr=100, max_sge=1, srq_limit=0):
        super().__init__(SrqAttr(max_wr, max_sge, srq_limit))
        self.comp_mask = 0
        self.srq_type = e.IBV_SRQT_BASIC
        self.pd = self.xrcd = self.cq = None
        self.max_num_tags = self.max_ops = 0


class OpsWr(UnsupportedAttr):
    """ibv_ops_wr, the tag-matching operations of an SRQ of type
    IBV_SRQT_TM, which shm0 does not have."""

class SRQ(PyverbsCM):
    """ibv_create_srq: `SRQ(pd, SrqInitAttr(SrqAttr(max_wr, max_sge)))`.

    Raises PyverbsUserError (not a PD), PyverbsRDMAError (EINVAL: max_wr or
    max_sge outside the device's limits; EBADF: closed PD).
    """
    pd_set = "srqs"

    def __init__(self, creator, attr):
        super().__init__()
        what = "Failed to create SRQ"
        checks.instance(creator, PD, "creator")
        checks.instance(attr, SrqInitAttr, "attr")
        checks.instance(attr.attr, SrqAttr, "attr.attr")
        max_wr, max_sge = checks.uint(attr.max_wr, "attr.max_wr"), checks.uint(attr.max_sge, "attr.max_sge")
        limits = creator.ctx.query_device()
        _check(1 <= max_wr <= limits.max_srq_wr and max_sge <= limits.max_srq_sge,
               f"{what}: max_wr must be 1 to {limits.max_srq_wr}, max_sge up to {limits.max_srq_sge}")
        self.pd, self.context = creator, creator.ctx
        self.max_wr, self.max_sge, self.srq_limit = max_wr, max(max_sge, 1), 0
        self._q = collections.deque()
        self.qps = set()
        creator.add_ref(self)

    def post_recv(self, wr, bad_wr=None):
        """ibv_post_srq_recv: the chain of RecvWRs. ENOMEM over max_wr, EINVAL over max_sge."""
        if wr.__class__ is not RecvWR:
            checks.instance(wr, RecvWR, "wr")
        with self.context.lock:
            self._check_open("Failed to post recv to SRQ")
            try:
                self._post_recvs(wr)
            except checks.WRONG_FIELD:
                while wr is not None:           # name the field of the wrong type
                    wr = check_recv_wr(wr).next_wr
                raise
            self.context._poll()            # a message may wait in a ring for this very buffer

    def _post_recvs(self, wr):
        while wr is not None:
            if len(self._q) >= self.max_wr:
                raise PyverbsRDMAError("Failed to post recv to SRQ: it holds max_wr receives",
                                       errno.ENOMEM)
            _check(wr.num_sge <= self.max_sge, "Failed to post recv to SRQ: too many SGEs")
            self._q.append(Receive(self.pd, wr.sg_list[:wr.num_sge], (wr.wr_id, e.IBV_WC_RECV, True)))
            wr = wr.next_wr

    def take(self):
        """The next receive for a QP of this SRQ (the QPs' take_recv), or None."""
        if not self._q:
            return None
        work = self._q.popleft().take()
        if self.srq_limit and len(self._q) < self.srq_limit:
            self.srq_limit = 0              # one-shot: armed again by modify
            self.context._async_event(e.IBV_EVENT_SRQ_LIMIT_REACHED, srq=self)
        return work

    def modify(self, attr, comp_mask):
        """ibv_modify_srq: IBV_SRQ_MAX_WR resizes (not below the receives it holds),
        IBV_SRQ_LIMIT arms the limit event (not above max_wr). EINVAL otherwise."""
        checks.instance(attr, SrqAttr, "attr")
        comp_mask = checks.uint(comp_mask, "comp_mask")
        with self.context.lock:
            self._check_open("Failed to modify SRQ")
            limits = self.context.query_device()
            _check(comp_mask and not comp_mask & ~int(e.IBV_SRQ_MAX_WR | e.IBV_SRQ_LIMIT),
                   "Failed to modify SRQ: comp_mask must be IBV_SRQ_MAX_WR and/or IBV_SRQ_LIMIT")
            max_wr = checks.uint(attr.max_wr, "attr.max_wr") if comp_mask & e.IBV_SRQ_MAX_WR else self.max_wr
            _check(len(self._q) <= max_wr <= limits.max_srq_wr and max_wr >= 1,
                   f"Failed to modify SRQ: max_wr {max_wr} is below the {len(self._q)} receives "
                   f"held or over {limits.max_srq_wr}")
            if comp_mask & e.IBV_SRQ_LIMIT:
                _check(checks.uint(attr.srq_limit, "attr.srq_limit") <= max_wr,
                       "Failed to modify SRQ: srq_limit over max_wr")
                self.srq_limit = attr.srq_limit
            self.max_wr = max_wr

    def _available(self):
        """shm0dv.srq_available: the receives on the SRQ."""
        with self.context.lock:
            self._check_open("Failed to query SRQ")
            return len(self._q)

    def query(self):
        """ibv_query_srq -> SrqAttr(max_wr, max_sge, srq_limit)."""
        self._check_open("Failed to query SRQ")
        return SrqAttr(self.max_wr, self.max_sge, self.srq_limit)

    def _release(self):
        """ibv_destroy_srq: its QPs first; waits for the acks of its events."""
        close_children([self.qps])
        self.context.wait_acked(self)
        self._q.clear()
        self.pd.srqs.discard(self)


def _check(ok, message):
    if not ok:
        raise PyverbsRDMAError(message, errno.EINVAL)
