"""Queue pairs (pyverbs.qp): QPCap, QPInitAttr, QPAttr and QP (RC).

A QP is named machine-wide by its qp_num (hw/qpn.py). When an RC QP reaches
RTR with a dest_qp_num, it joins that QP on one connection segment of two
rings (hw/ring.py, as DAT's connections use): the QP with the lower number
creates the segment under its owner's name, the other maps it and unlinks the
name. Sends posted before the peer is there wait on the QP. Moving to ERR
completes every outstanding WR with IBV_WC_WR_FLUSH_ERR; moving to RESET drops
the QP's completions from its CQs. State moves follow qp_state.py.

Atomics (fetch-and-add, compare-and-swap) are done by the initiator under the
target's atomic lock (hw/hca.py), atomic with respect to every other atomic
(IBV_ATOMIC_HCA). A QP created with an SRQ takes its receives from it and
raises IBV_EVENT_QP_LAST_WQE_REACHED when it reaches ERR. While the device's
port is down nothing moves, and sends retry as on the wire (_retry). Not there yet: UD
and UC QPs, inline sends as such (they are copied like any send), RNR retries.
"""

import collections
import errno
import time

import posix_ipc

from ..hw import hca as hw_hca, ring
from ..hw.errors import NoRoom, PeerUnreachable, RingCorrupt
from ..hw.qpn import TableFull
from . import libibverbs_enums as e
from .addr import AHAttr
from .base import PyverbsCM, PyverbsObject, Unsupported, UnsupportedAttr
from .cq import CQ, WC
from .device import Context
from .mr import work_request
from .pd import PD
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError
from .qp_state import check_modify
from .srq import SRQ
from .wr import RecvWR, SendWR

RESET, INIT, RTR, RTS, SQD, ERR = (e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS,
                                    e.IBV_QPS_SQD, e.IBV_QPS_ERR)
_MOVING = (RTR, RTS, SQD)                 # states in which the QP is joined to its peer
# What pyverbs' to_init / to_rtr / to_rts pass for an RC QP.
_TO = {INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
       RTR: e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
       | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER,
       RTS: e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN
       | e.IBV_QP_MAX_QP_RD_ATOMIC}
# Hardware statuses -> ibv_wc_status.
_STATUS = {ring.OK: e.IBV_WC_SUCCESS, ring.FLUSHED: e.IBV_WC_WR_FLUSH_ERR,
           ring.LENGTH: e.IBV_WC_LOC_LEN_ERR, ring.REMOTE_ACCESS: e.IBV_WC_REM_ACCESS_ERR,
           ring.LOCAL_PROTECTION: e.IBV_WC_LOC_PROT_ERR}
# opcode -> (hardware op, WC opcode, carries immediate data)
_SEND_OPS = {e.IBV_WR_SEND: (ring.OP_SEND, e.IBV_WC_SEND, False),
             e.IBV_WR_SEND_WITH_IMM: (ring.OP_SEND, e.IBV_WC_SEND, True),
             e.IBV_WR_RDMA_WRITE: (ring.OP_RDMA_WRITE, e.IBV_WC_RDMA_WRITE, False),
             e.IBV_WR_RDMA_WRITE_WITH_IMM: (ring.OP_RDMA_WRITE, e.IBV_WC_RDMA_WRITE, True),
             e.IBV_WR_RDMA_READ: (ring.OP_RDMA_READ, e.IBV_WC_RDMA_READ, False),
             e.IBV_WR_ATOMIC_FETCH_AND_ADD: (ring.OP_FETCH_ADD, e.IBV_WC_FETCH_ADD, False),
             e.IBV_WR_ATOMIC_CMP_AND_SWP: (ring.OP_CMP_SWAP, e.IBV_WC_COMP_SWAP, False)}
_ATOMICS = (ring.OP_FETCH_ADD, ring.OP_CMP_SWAP)
_WITH_IMM = int(e.IBV_WC_WITH_IMM)
_SIGNALED = int(e.IBV_SEND_SIGNALED)
_SOLICITED = int(e.IBV_SEND_SOLICITED)
_ACK_TIMEOUT_UNIT = 4.096e-6              # seconds: the transport timer is 4.096 us * 2**timeout


class QPCap(PyverbsObject):
    """ibv_qp_cap."""

    def __init__(self, max_send_wr=1, max_recv_wr=10, max_send_sge=1, max_recv_sge=1,
                 max_inline_data=0):
        super().__init__()
        self.max_send_wr, self.max_recv_wr = max_send_wr, max_recv_wr
        self.max_send_sge, self.max_recv_sge = max_send_sge, max_recv_sge
        self.max_inline_data = max_inline_data


class QPInitAttr(PyverbsObject):
    """ibv_qp_init_attr: `QPInitAttr(qp_type, qp_context, scq, rcq, srq, cap, sq_sig_all)`."""

    def __init__(self, qp_type=e.IBV_QPT_UD, qp_context=None, scq=None, rcq=None, srq=None,
                 cap=None, sq_sig_all=1):
        super().__init__()
        for cq in (scq, rcq):
            if cq is not None and not isinstance(cq, CQ):
                raise PyverbsUserError(f"Expected CQ/CQEX, got {type(cq)}")
        self.qp_type, self.qp_context, self.srq, self.sq_sig_all = qp_type, qp_context, srq, sq_sig_all
        self.send_cq, self.recv_cq = scq, rcq
        self.cap = cap if cap is not None else QPCap()


class QPInitAttrEx(QPInitAttr):
    """ibv_qp_init_attr_ex, for `QP(ctx, attr)`: the PD comes in the attributes
    (with IBV_QP_INIT_ATTR_PD in comp_mask). Create flags, send ops, XRC and RSS
    are not in shm0 (the QP refuses them with EOPNOTSUPP)."""

    def __init__(self, qp_type=e.IBV_QPT_UD, qp_context=None, scq=None, rcq=None, srq=None,
                 cap=None, sq_sig_all=0, comp_mask=0, pd=None, xrcd=None, create_flags=0,
                 max_tso_header=0, source_qpn=0, hash_conf=None, ind_table=None, send_ops_flags=0):
        super().__init__(qp_type, qp_context, scq, rcq, srq, cap, sq_sig_all)
        self.comp_mask, self.pd, self.xrcd, self.create_flags = comp_mask, pd, xrcd, create_flags
        self.max_tso_header, self.source_qpn = max_tso_header, source_qpn
        self.hash_conf, self.ind_table, self.send_ops_flags = hash_conf, ind_table, send_ops_flags

    def unsupported(self):
        """What of these attributes shm0 does not do, or None."""
        if self.create_flags or self.send_ops_flags or self.source_qpn or self.max_tso_header:
            return "create flags, send ops, source QPN and TSO"
        if self.xrcd is not None or self.hash_conf is not None or self.ind_table is not None:
            return "XRC and RSS"
        return None


class QPAttr(PyverbsObject):
    """ibv_qp_attr, with pyverbs' defaults for the RESET -> INIT move."""

    def __init__(self, qp_state=e.IBV_QPS_INIT, cur_qp_state=e.IBV_QPS_RESET, port_num=1,
                 path_mtu=e.IBV_MTU_1024):
        super().__init__()
        self.qp_state, self.cur_qp_state, self.port_num, self.path_mtu = (
            qp_state, cur_qp_state, port_num, path_mtu)
        self.path_mig_state = e.IBV_MIG_MIGRATED
        self.qkey = self.rq_psn = self.sq_psn = self.dest_qp_num = self.qp_access_flags = 0
        self.pkey_index = self.alt_pkey_index = self.en_sqd_async_notify = self.sq_draining = 0
        self.max_rd_atomic = self.max_dest_rd_atomic = self.min_rnr_timer = 0
        self.timeout = self.retry_cnt = self.rnr_retry = self.alt_port_num = self.alt_timeout = 0
        self.rate_limit = 0
        self.cap = QPCap()
        self.ah_attr = AHAttr()
        self.alt_ah_attr = AHAttr()


# The QPAttr fields each mask bit sets (the rest of a modify's attributes are ignored).
_FIELDS = {e.IBV_QP_ACCESS_FLAGS: ("qp_access_flags",), e.IBV_QP_PKEY_INDEX: ("pkey_index",),
           e.IBV_QP_PORT: ("port_num",), e.IBV_QP_QKEY: ("qkey",), e.IBV_QP_AV: ("ah_attr",),
           e.IBV_QP_PATH_MTU: ("path_mtu",), e.IBV_QP_TIMEOUT: ("timeout",),
           e.IBV_QP_RETRY_CNT: ("retry_cnt",), e.IBV_QP_RNR_RETRY: ("rnr_retry",),
           e.IBV_QP_RQ_PSN: ("rq_psn",), e.IBV_QP_MAX_QP_RD_ATOMIC: ("max_rd_atomic",),
           e.IBV_QP_ALT_PATH: ("alt_ah_attr", "alt_pkey_index", "alt_port_num", "alt_timeout"),
           e.IBV_QP_MIN_RNR_TIMER: ("min_rnr_timer",), e.IBV_QP_SQ_PSN: ("sq_psn",),
           e.IBV_QP_MAX_DEST_RD_ATOMIC: ("max_dest_rd_atomic",),
           e.IBV_QP_PATH_MIG_STATE: ("path_mig_state",), e.IBV_QP_DEST_QPN: ("dest_qp_num",),
           e.IBV_QP_EN_SQD_ASYNC_NOTIFY: ("en_sqd_async_notify",)}


class QP(PyverbsCM):
    """ibv_create_qp: `QP(pd, init_attr, qp_attr=None)`; with qp_attr an RC QP
    is taken to INIT, as pyverbs does.

    Raises PyverbsUserError (not a PD, no CQs), PyverbsRDMAError: EOPNOTSUPP
    (a QP type shm0 does not do yet), EINVAL (caps over the device's limits, an
    SRQ of another PD), ENOMEM (no QP number left), EBADF (closed PD or CQ).
    """
    context_set = pd_set = "qps"

    def __init__(self, creator, init_attr, qp_attr=None):
        super().__init__()
        what = "Failed to create QP"
        if isinstance(creator, Context) and isinstance(init_attr, QPInitAttrEx):
            if init_attr.unsupported():
                raise PyverbsRDMAError(f"{what}: shm0 has no {init_attr.unsupported()}",
                                       errno.EOPNOTSUPP)
            if not init_attr.comp_mask & e.IBV_QP_INIT_ATTR_PD or not isinstance(init_attr.pd, PD) \
                    or init_attr.pd.ctx is not creator:
                raise PyverbsRDMAError(f"{what}: QPInitAttrEx needs a PD of this context, with "
                                       "IBV_QP_INIT_ATTR_PD in comp_mask", errno.EINVAL)
            creator = init_attr.pd
        if not isinstance(creator, PD) or not isinstance(init_attr, QPInitAttr):
            raise PyverbsUserError(f"{what}: QP(pd, QPInitAttr) or QP(ctx, QPInitAttrEx) is what "
                                   "shm0 takes")
        if init_attr.qp_type != e.IBV_QPT_RC:
            raise PyverbsRDMAError(f"{what}: shm0 has RC QPs so far", errno.EOPNOTSUPP)
        srq = init_attr.srq
        if srq is not None and (not isinstance(srq, SRQ) or srq.pd is not creator):
            raise PyverbsRDMAError(f"{what}: the SRQ must be one of the QP's PD", errno.EINVAL)
        if init_attr.send_cq is None or init_attr.recv_cq is None:
            raise PyverbsUserError(f"{what}: a QP needs a send CQ and a recv CQ")
        ctx = creator.ctx
        limits = ctx.query_device()
        cap = init_attr.cap
        for name, top in (("max_send_wr", limits.max_qp_wr), ("max_recv_wr", limits.max_qp_wr),
                          ("max_send_sge", limits.max_sge), ("max_recv_sge", limits.max_sge)):
            if not 0 <= getattr(cap, name) <= top:
                raise PyverbsRDMAError(f"{what}: cap.{name} is over the device's {top}", errno.EINVAL)
        for cq in (init_attr.send_cq, init_attr.recv_cq):
            cq._check_open(what)
        self.pd, self.context = creator, ctx
        self.qp_type, self.sq_sig_all, self.qp_context = init_attr.qp_type, init_attr.sq_sig_all, \
            init_attr.qp_context
        self.send_cq, self.recv_cq, self.srq = init_attr.send_cq, init_attr.recv_cq, srq
        self.cap = QPCap(cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge, cap.max_recv_sge,
                         cap.max_inline_data)
        self._owner = ctx.owner
        try:
            self.qp_num = ctx.qpn_table.claim(self._owner + (creator.pd_id,))
        except TableFull as err:
            raise PyverbsRDMAError(f"{what}: {err}", errno.ENOMEM) from None
        self.state = RESET
        self.attr = QPAttr(qp_state=RESET)
        self._rq = collections.deque()          # posted receives (ring WorkRequests)
        self._waiting = collections.deque()     # sends posted before the peer joined
        self._qp = None                         # ring.QueuePair once joined
        self._created = None                    # the connection segment we created, until unlinked
        self._established = False               # COMM_EST given (once per connection)
        self._retries_end = None                # while the port is down: when the sends give up
        ctx.add_ref(self)
        creator.add_ref(self)
        self.send_cq.qps.add(self)
        self.recv_cq.qps.add(self)
        if srq is not None:
            srq.qps.add(self)
            self._take_recv = srq.take      # receives come from the SRQ
        if qp_attr is not None:
            self.to_init(qp_attr)

    # State.

    @property
    def qp_state(self):
        return self.state

    def to_init(self, qp_attr):
        """RESET -> INIT with pyverbs' mask for an RC QP."""
        qp_attr.qp_state = INIT
        self._modify(qp_attr, _TO[INIT] | e.IBV_QP_STATE, "Failed to modify QP state to init")

    def to_rtr(self, qp_attr):
        """(RESET ->) INIT -> RTR."""
        if self.state != INIT:
            self.to_init(qp_attr)
        qp_attr.qp_state = RTR
        self._modify(qp_attr, _TO[RTR] | e.IBV_QP_STATE, "Failed to modify QP state to RTR")

    def to_rts(self, qp_attr):
        """(RESET -> INIT ->) RTR -> RTS."""
        if self.state != RTR:
            self.to_rtr(qp_attr)
        qp_attr.qp_state = RTS
        self._modify(qp_attr, _TO[RTS] | e.IBV_QP_STATE, "Failed to modify QP state to RTS")

    def modify(self, qp_attr, comp_mask):
        """ibv_modify_qp. Raises PyverbsRDMAError (EINVAL: not a legal move, see qp_state.py)."""
        self._modify(qp_attr, comp_mask, "Failed to modify QP")

    def query_ece(self):
        """ibv_query_ece: PyverbsRDMAError (EOPNOTSUPP), shm0 has no ECE."""
        raise PyverbsRDMAError("Failed to query ECE", errno.EOPNOTSUPP)

    def set_ece(self, ece):
        """ibv_set_ece: PyverbsRDMAError (EOPNOTSUPP), shm0 has no ECE."""
        raise PyverbsRDMAError("Failed to set ECE", errno.EOPNOTSUPP)

    def _modify(self, qp_attr, mask, what):
        if not isinstance(qp_attr, QPAttr):
            raise PyverbsUserError(f"{what}: qp_attr must be a QPAttr, not {type(qp_attr)}")
        with self.context.lock:
            self.context.check_usable(what)
            self._check_open(what)
            new = check_modify(self.qp_type, self.state, mask, qp_attr.qp_state)
            if mask & e.IBV_QP_PORT and qp_attr.port_num != 1:
                raise PyverbsRDMAError(f"{what}: shm0 has port 1 only", errno.EINVAL)
            for bit, names in _FIELDS.items():
                if mask & bit:
                    for name in names:
                        setattr(self.attr, name, getattr(qp_attr, name))
            self._enter(new)

    def _enter(self, new):
        old, self.state = self.state, new
        self.attr.qp_state = self.attr.cur_qp_state = new
        active = self.context.active_qps
        if new in _MOVING and self not in active:
            active.append(self)
            self._join()
        elif new not in _MOVING and self in active:
            active.remove(self)
        if new == ERR and old != ERR:
            self._flush()
            self._last_wqe()
        elif new == RESET and old != RESET:
            self._established = False
            self._leave()
            self._rq.clear()
            self._waiting.clear()
            self.send_cq._purge(self.qp_num)
            self.recv_cq._purge(self.qp_num)

    def query(self, attr_mask):
        """ibv_query_qp -> (QPAttr, QPInitAttr) (every field, whatever the mask)."""
        with self.context.lock:
            self._check_open("Failed to query QP")
            attr = QPAttr(qp_state=self.state, cur_qp_state=self.state)
            attr.__dict__.update({k: v for k, v in vars(self.attr).items() if k != "logger"})
            attr.cap = QPCap(**{k: v for k, v in vars(self.cap).items() if k != "logger"})
            init = QPInitAttr(self.qp_type, self.qp_context, self.send_cq, self.recv_cq, self.srq,
                              attr.cap, self.sq_sig_all)
            return attr, init

    # Joining the peer QP (the wire).

    def _join(self):
        """Join dest_qp_num's connection segment if it can be had now (progress retries)."""
        if self._qp is not None:
            return
        dest = self.attr.dest_qp_num
        table = self.context.qpn_table
        peer_owner = table.owner(dest)
        if peer_owner is None:
            return                                  # not there (yet): sends wait
        lo, hi = min(self.qp_num, dest), max(self.qp_num, dest)
        side = 0 if self.qp_num == lo else 1
        creator = self._owner if side == 0 else peer_owner[:3]
        name = f"{hw_hca.prefix_of(*creator)}.v{lo}-{hi}"
        try:
            peer = self.context.hca.peer(hw_hca.address_of(*peer_owner[:3]))
            if side == 0:
                segment = ring.create_connection_segment(name)
                self._created = segment
            else:
                segment = ring.open_connection_segment(name)
                segment.unlink()                    # both sides have it mapped: the name can go
        except (PeerUnreachable, NoRoom, RingCorrupt, posix_ipc.ExistentialError, OSError):
            return                  # the peer or its segment is not there yet: progress retries
        qp = ring.QueuePair(segment, side, peer, self, self._take_recv)
        qp.peer_pz = peer_owner[3]
        self._qp = qp                               # _progress sends what waited for it

    def _leave(self):
        qp = self._qp
        if qp is not None:
            qp.set_state(ring.S_CLOSED)
            qp.close()
            self._qp = None
        if self._created is not None:
            self._created.unlink()                  # gone already if the peer mapped it
            self._created = None

    def _progress(self):
        """Called by the Context's progress for every QP in RTR, RTS or SQD."""
        if self.context.port_down:
            self._retry()
            return
        self._retries_end = None
        qp = self._qp
        if qp is None:
            self._join()
            qp = self._qp
            if qp is None:
                return
        while self._waiting:                # posted before the join, or while the port was down
            qp.post_send(self._waiting.popleft())
        if qp.words[qp.w_peer_state] > ring.S_UP:     # CLOSED or BROKEN (INIT: not joined yet)
            self._fatal()
            return
        try:
            qp.poll_recv()
            qp.poll_send()
        except RingCorrupt:
            self._fatal()

    def _retry(self):
        """The port is down: nothing goes out or comes in. Sends outstanding are retried
        as on the wire, retry_cnt + 1 tries of the transport timer (4.096 us * 2**timeout;
        timeout 0 is infinite), then the oldest completes with IBV_WC_RETRY_EXC_ERR and
        the QP goes to ERR. Sends go on where they were if the port comes up in time."""
        qp = self._qp
        oldest = (qp.inflight or qp.sq) if qp is not None else None
        oldest = oldest or self._waiting
        if not oldest or not self.attr.timeout:
            self._retries_end = None
            return
        now = time.monotonic()
        if self._retries_end is None:
            tries = self.attr.retry_cnt + 1
            self._retries_end = now + tries * _ACK_TIMEOUT_UNIT * 2 ** self.attr.timeout
        elif now >= self._retries_end:
            wr_id, wc_op, _ = oldest.popleft().ctx
            self.send_cq._complete(WC(wr_id=wr_id, status=e.IBV_WC_RETRY_EXC_ERR, opcode=wc_op,
                                      qp_num=self.qp_num))
            self._enter(ERR)

    def _device_fatal(self):
        """The device had a fatal error (Context.check_device): to ERR, flushing."""
        if self.state != ERR:
            self._enter(ERR)

    def _check_peer(self):
        """The peer process died: the QP goes to ERR (the Context calls this every LIVENESS_SLICE)."""
        if self._qp is not None and not self._qp.peer.alive():
            self._fatal()

    def _last_wqe(self):
        """A QP of an SRQ that reaches ERR takes no more of its receives."""
        if self.srq is not None:
            self.context._async_event(e.IBV_EVENT_QP_LAST_WQE_REACHED, qp=self)

    def _fatal(self):
        """The device found the connection ended or broken: what had arrived, and what
        the peer had taken, complete first; then ERR, flushes, and IBV_EVENT_QP_FATAL."""
        if self.state == ERR or not self.context.check_device():
            return                  # a dead device's QPs get IBV_EVENT_DEVICE_FATAL instead
        qp = self._qp
        if qp is not None:
            try:
                qp.poll_recv()
                qp.poll_send()
            except RingCorrupt:
                pass
        self._enter(ERR)
        self.context._async_event(e.IBV_EVENT_QP_FATAL, qp=self)

    def _flush(self):
        qp = self._qp
        pending = []
        if qp is not None:
            try:
                qp.poll_send()                      # what the peer consumed completes first
            except RingCorrupt:
                pass
            pending, cur = qp.drain()
            if cur is not None:
                self._rq.appendleft(cur)
            qp.set_state(ring.S_BROKEN)
        for wr in [*pending, *self._waiting]:
            wr.status = ring.FLUSHED
            self.send_done(wr)
        for wr in self._rq:
            wr.status = ring.FLUSHED
            self.recv_done(wr)
        self._waiting.clear()
        self._rq.clear()

    # Posting.

    def post_recv(self, wr, bad_wr=None):
        """ibv_post_recv: the chain of RecvWRs. Raises PyverbsRDMAError (EINVAL
        in RESET, over max_recv_wr or max_recv_sge)."""
        if not isinstance(wr, RecvWR):
            raise PyverbsUserError(f"post_recv takes a RecvWR, not {type(wr)}")
        with self.context.lock:
            self._check_open("Failed to post recv")
            while wr is not None:
                if self.state == RESET or len(self._rq) >= self.cap.max_recv_wr \
                        or wr.num_sge > self.cap.max_recv_sge or self.srq is not None:
                    raise PyverbsRDMAError("Failed to post recv", errno.EINVAL)
                work = work_request(self.pd, ring.OP_SEND, wr.sg_list[:wr.num_sge], e.IBV_ACCESS_LOCAL_WRITE,
                                    (wr.wr_id, e.IBV_WC_RECV, True))
                if self.state == ERR or work.status != ring.OK:
                    work.status = work.status or ring.FLUSHED
                    self.recv_done(work)
                else:
                    self._rq.append(work)
                wr = wr.next_wr
            if self._qp is not None:
                self._progress()

    def post_send(self, wr, bad_wr=None):
        """ibv_post_send: the chain of SendWRs (SEND, RDMA_WRITE, RDMA_READ).

        Raises PyverbsRDMAError: EINVAL before RTS, over max_send_wr or
        max_send_sge; EOPNOTSUPP for an opcode shm0 does not do yet.
        """
        if not isinstance(wr, SendWR):
            raise PyverbsUserError(f"post_send takes a SendWR, not {type(wr)}")
        with self.context.lock:
            self._check_open("Failed to post send")
            while wr is not None:
                self._post_one(wr)
                wr = wr.next_wr
            if self._qp is not None:
                self._progress()

    def _post_one(self, wr):
        op = _SEND_OPS.get(wr.opcode)
        if op is None:
            raise PyverbsRDMAError(f"Failed to post send: opcode {wr.opcode} is not supported by "
                                   "shm0 yet", errno.EOPNOTSUPP)
        outstanding = len(self._waiting) + (len(self._qp.sq) + len(self._qp.inflight) if self._qp else 0)
        if self.state not in (RTS, SQD, ERR) or outstanding >= self.cap.max_send_wr \
                or wr.num_sge > self.cap.max_send_sge:
            raise PyverbsRDMAError("Failed to post send", errno.EINVAL)
        ring_op, wc_op, with_imm = op
        signaled = self.sq_sig_all or wr.send_flags & _SIGNALED
        need = e.IBV_ACCESS_LOCAL_WRITE if ring_op in (ring.OP_RDMA_READ, *_ATOMICS) else 0
        work = work_request(self.pd, ring_op, wr.sg_list[:wr.num_sge], need, (wr.wr_id, wc_op, signaled))
        work.solicited = bool(wr.send_flags & _SOLICITED)
        if with_imm:
            work.imm = wr.imm_data & 0xFFFFFFFF
        if ring_op in _ATOMICS:
            work.remote = (wr.atomic_rkey, wr.atomic_remote_addr, 8)
            work.compare_add, work.swap = wr.compare_add, wr.swap
        elif ring_op != ring.OP_SEND:
            work.remote = (wr.rdma_rkey, wr.rdma_remote_addr, work.length)
        if self.state == ERR or work.status != ring.OK:
            work.status = work.status or ring.FLUSHED
            self.send_done(work)
        elif self._qp is None or self.context.port_down:
            self._waiting.append(work)
        else:
            self._qp.post_send(work)

    # The ring's completion sink and receive source.

    def _take_recv(self):
        return self._rq.popleft() if self._rq else None

    def send_done(self, work):
        wr_id, wc_op, signaled = work.ctx
        status = _STATUS[work.status]
        if signaled or status != e.IBV_WC_SUCCESS:
            self.send_cq._complete(WC(wr_id=wr_id, status=status, opcode=wc_op, byte_len=work.length,
                                      qp_num=self.qp_num))
        if status not in (e.IBV_WC_SUCCESS, e.IBV_WC_WR_FLUSH_ERR) and self.state != ERR:
            self._enter(ERR)

    def recv_done(self, work):
        wr_id, wc_op, _ = work.ctx
        status = _STATUS[work.status]
        wc = WC(wr_id=wr_id, status=status, opcode=wc_op, byte_len=work.done, qp_num=self.qp_num,
                src_qp=self.attr.dest_qp_num)
        if work.imm is not None:
            wc.imm_data, wc.wc_flags = work.imm, _WITH_IMM
            if work.write_len is not None:
                wc.opcode, wc.byte_len = e.IBV_WC_RECV_RDMA_WITH_IMM, work.write_len
        self.recv_cq._complete(wc, solicited=work.solicited)
        if self.state == RTR and not self._established and status == e.IBV_WC_SUCCESS:
            self._established = True        # the first message at a QP that is not yet RTS
            self.context._async_event(e.IBV_EVENT_COMM_EST, qp=self)
        if status not in (e.IBV_WC_SUCCESS, e.IBV_WC_WR_FLUSH_ERR) and self.state != ERR:
            self._enter(ERR)

    def _release(self):
        """ibv_destroy_qp: waits until the events got about it are acked."""
        self.context.wait_acked(self)
        with self.context.lock:
            if self in self.context.active_qps:
                self.context.active_qps.remove(self)
            self._leave()
            self.context.qpn_table.release(self.qp_num, self._owner + (self.pd.pd_id,))
            holders = [self.context.qps, self.pd.qps, self.send_cq.qps, self.recv_cq.qps]
            if self.srq is not None:
                holders.append(self.srq.qps)
            for holder in holders:
                holder.discard(self)


class QPRateLimitAttr(UnsupportedAttr):
    """ibv_qp_rate_limit_attr."""


class QPEx(Unsupported):
    """ibv_create_qp_ex with the new post-send API (ibv_qp_ex):
    PyverbsRDMAError (EOPNOTSUPP); shm0 posts with post_send."""
