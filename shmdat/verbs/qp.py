"""Queue pairs (pyverbs.qp): QPCap, QPInitAttr, QPAttr and QP (RC, UC and UD).

A QP is named machine-wide by its qp_num (hw/qpn.py). When an RC or UC QP reaches
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
port is down nothing moves, and sends retry as on the wire (_retry).

RC is reliable (the ring is `acked`): a send completes once the responder has
taken it, or, across processes, as soon as it is in the ring if a receive is
known to wait for it: the responder (not on an SRQ) publishes how many
receives it has posted since RESET (the ring's credits), as a NIC's RQ is
there for its hardware to ack from while the process calls nothing in. With
both ends in one process every poll moves both, so the requester keeps the
responder's real ack and the errors it carries (no credits are published to
it). A responder with no receive NAKs a send as not ready and the requester
retries rnr_retry times (7: for ever), min_rnr_timer of the responder apart,
then completes it with IBV_WC_RNR_RETRY_EXC_ERR. A send the responder refuses
(longer than its receive: REM_INV_REQ_ERR; its receive failed its checks:
REM_OP_ERR), and an RDMA beyond the responder's qp_access_flags
(REM_INV_REQ_ERR) or its MR (REM_ACCESS_ERR), puts both QPs in ERR: the
responder gets its receive's error, or the async event IBV_EVENT_QP_REQ_ERR /
IBV_EVENT_QP_ACCESS_ERR. A send that had completed on the credits has no
error left to get: its requester sees the broken connection (QP_FATAL).

UC has no acks: sends complete once in the ring, a message with no receive
(or RDMA the responder refuses) is lost, RDMA read and atomics complete with
IBV_WC_LOC_QP_OP_ERR as on rxe.

A UD QP sends to the QP an AH and remote_qpn name (datagrams.py carries it):
the receive gets the 40-byte GRH (grh.py) and then the payload, with
IBV_WC_GRH and the sender's qp_num as src_qp. A message to a GID that is not
the device's, to no QP, over the port's MTU, with another Q_Key, or that finds
no receive, is lost without an error (the sender's completion is SUCCESS).
"""

import collections
import errno
import time

import posix_ipc

from ..hw import hca as hw_hca, ring
from ..hw.errors import NoRoom, PeerUnreachable, RingCorrupt
from ..hw.qpn import TableFull
from . import checks, libibverbs_enums as e
from .addr import AH, AHAttr, check_ah_attr
from .base import PyverbsCM, PyverbsObject, Unsupported, UnsupportedAttr
from .cq import CQ, new_wc
from .datagrams import Datagrams
from .device import ACTIVE_MTU, GIDS, Context
from .grh import grh
from .mr import LOCAL_WRITE, Receive, inline_request, private_sge, remote_priv, resolve_sges, work_request
from .pd import PD
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError
from .qp_state import check_modify
from .srq import SRQ
from .wr import RecvWR, SendWR, check_recv_wr, check_send_wr

RESET, INIT, RTR, RTS, SQD, ERR = (e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS,
                                    e.IBV_QPS_SQD, e.IBV_QPS_ERR)
RC, UC, UD = e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD
_MOVING = (RTR, RTS, SQD)                 # states in which the QP is joined to its peer
# What pyverbs' to_init / to_rtr / to_rts pass, per QP type.
_CONNECT = e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
_TO = {RC: {INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
            RTR: _CONNECT | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER,
            RTS: e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN
            | e.IBV_QP_MAX_QP_RD_ATOMIC},
       UC: {INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
            RTR: _CONNECT, RTS: e.IBV_QP_SQ_PSN},
       UD: {INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY, RTR: 0, RTS: e.IBV_QP_SQ_PSN}}
_UD_MTU = 128 << ACTIVE_MTU             # bytes: a UD message is at most the port's active MTU
_OWN_QKEY = 0x80000000                  # a WR's Q_Key with this bit: the QP's own is used
# Hardware statuses -> ibv_wc_status.
_STATUS = {ring.OK: e.IBV_WC_SUCCESS, ring.FLUSHED: e.IBV_WC_WR_FLUSH_ERR,
           ring.LENGTH: e.IBV_WC_LOC_LEN_ERR, ring.REMOTE_ACCESS: e.IBV_WC_REM_ACCESS_ERR,
           ring.LOCAL_PROTECTION: e.IBV_WC_LOC_PROT_ERR, ring.REMOTE_INVALID: e.IBV_WC_REM_INV_REQ_ERR,
           ring.REMOTE_OP: e.IBV_WC_REM_OP_ERR, ring.NOT_READY: e.IBV_WC_RNR_RETRY_EXC_ERR,
           ring.LOCAL_OPERATION: e.IBV_WC_LOC_QP_OP_ERR}
# Why a peer broke the connection -> the async event its responder gets.
_FAULT_EVENT = {ring.FAULT_ACCESS: e.IBV_EVENT_QP_ACCESS_ERR, ring.FAULT_INVALID: e.IBV_EVENT_QP_REQ_ERR}
# min_rnr_timer codes -> microseconds (the IB spec's RNR NAK timer field encoding).
RNR_TIMER_US = (655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
                2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
                163840, 245760, 327680, 491520)
RNR_RETRY_FOR_EVER = 7
# opcode -> (hardware op, WC opcode, carries immediate data)
_SEND_OPS = {e.IBV_WR_SEND: (ring.OP_SEND, e.IBV_WC_SEND, False),
             e.IBV_WR_SEND_WITH_IMM: (ring.OP_SEND, e.IBV_WC_SEND, True),
             e.IBV_WR_RDMA_WRITE: (ring.OP_RDMA_WRITE, e.IBV_WC_RDMA_WRITE, False),
             e.IBV_WR_RDMA_WRITE_WITH_IMM: (ring.OP_RDMA_WRITE, e.IBV_WC_RDMA_WRITE, True),
             e.IBV_WR_RDMA_READ: (ring.OP_RDMA_READ, e.IBV_WC_RDMA_READ, False),
             e.IBV_WR_ATOMIC_FETCH_AND_ADD: (ring.OP_FETCH_ADD, e.IBV_WC_FETCH_ADD, False),
             e.IBV_WR_ATOMIC_CMP_AND_SWP: (ring.OP_CMP_SWAP, e.IBV_WC_COMP_SWAP, False)}
_ATOMICS = (ring.OP_FETCH_ADD, ring.OP_CMP_SWAP)
# What each QP type does not carry (rxe's requester has no opcode for them).
_NOT_ON = {RC: (), UC: (ring.OP_RDMA_READ, *_ATOMICS),
           UD: (ring.OP_RDMA_WRITE, ring.OP_RDMA_READ, *_ATOMICS)}
_WR_SEND = int(e.IBV_WR_SEND)
_WC_SEND = int(e.IBV_WC_SEND)
_WR_RDMA_WRITE, _WC_RDMA_WRITE = int(e.IBV_WR_RDMA_WRITE), int(e.IBV_WC_RDMA_WRITE)
_WR_RDMA_READ, _WC_RDMA_READ = int(e.IBV_WR_RDMA_READ), int(e.IBV_WC_RDMA_READ)
_WC_RECV = int(e.IBV_WC_RECV)
_WITH_GRH = int(e.IBV_WC_GRH)
_WITH_IMM = int(e.IBV_WC_WITH_IMM)
_SIGNALED = int(e.IBV_SEND_SIGNALED)
_SOLICITED = int(e.IBV_SEND_SOLICITED)
_INLINE = int(e.IBV_SEND_INLINE)
_EAGER_FLAGS = _SIGNALED | _SOLICITED                  # what a send on the eager lane may ask for
_INLINE_OPS = (ring.OP_SEND, ring.OP_RDMA_WRITE)      # the man page: inline is for sends and RDMA writes
_LOCAL_WRITE_OPS = (ring.OP_RDMA_READ, *_ATOMICS)      # what writes into the requester's memory
_POSTABLE = (RTS, SQD, ERR)                           # the states post_send takes WRs in
_SGE_BYTES = 16                                       # sizeof(struct ibv_sge)
_ACK_TIMEOUT_UNIT = 4.096e-6              # seconds: the transport timer is 4.096 us * 2**timeout
_UNLIMITED = 1 << 62                      # receive credits (shm0dv.set_recv_credits) of None


class QPCap(PyverbsObject):
    """ibv_qp_cap."""

    def __init__(self, max_send_wr=1, max_recv_wr=10, max_send_sge=1, max_recv_sge=1,
                 max_inline_data=0):
        super().__init__()
        self.max_send_wr, self.max_recv_wr = max_send_wr, max_recv_wr
        self.max_send_sge, self.max_recv_sge = max_send_sge, max_recv_sge
        self.max_inline_data = max_inline_data


def _cap_field(name):
    """A property reading and setting cap.<name>."""
    return property(lambda self: getattr(self.cap, name), lambda self, value: setattr(self.cap, name, value))


class QPInitAttr(PyverbsObject):
    """ibv_qp_init_attr: `QPInitAttr(qp_type, qp_context, scq, rcq, srq, cap, sq_sig_all)`."""

    def __init__(self, qp_type=e.IBV_QPT_UD, qp_context=None, scq=None, rcq=None, srq=None,
                 cap=None, sq_sig_all=1):
        super().__init__()
        checks.instance(scq, CQ, "scq", none=True)
        checks.instance(rcq, CQ, "rcq", none=True)
        checks.instance(cap, QPCap, "cap", none=True)
        self.qp_type, self.qp_context, self.srq, self.sq_sig_all = qp_type, qp_context, srq, sq_sig_all
        self.send_cq, self.recv_cq = scq, rcq
        self.cap = cap if cap is not None else QPCap()

    # pyverbs reads and sets the capabilities through the init attributes too.
    max_send_wr, max_recv_wr = _cap_field("max_send_wr"), _cap_field("max_recv_wr")
    max_send_sge, max_recv_sge = _cap_field("max_send_sge"), _cap_field("max_recv_sge")
    max_inline_data = _cap_field("max_inline_data")


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


# The bits of the QPAttr fields narrower than 32 (the rest are 32-bit in ibv_qp_attr).
_FIELD_BITS = {"pkey_index": 16, "alt_pkey_index": 16, "port_num": 8, "alt_port_num": 8,
               "timeout": 8, "alt_timeout": 8, "retry_cnt": 8, "rnr_retry": 8, "min_rnr_timer": 8,
               "max_rd_atomic": 8, "max_dest_rd_atomic": 8, "en_sqd_async_notify": 8}


def _attr_values(qp_attr, mask):
    """The QPAttr fields `mask` sets (with qp_state under IBV_QP_STATE), each
    checked: an AHAttr for the paths, an int that fits its C field otherwise."""
    values = {}
    if mask & e.IBV_QP_STATE:
        values["qp_state"] = checks.uint(qp_attr.qp_state, "qp_attr.qp_state")
    for bit, names in _FIELDS.items():
        if mask & bit:
            for name in names:
                value = getattr(qp_attr, name)
                if name.endswith("ah_attr"):
                    check_ah_attr(checks.instance(value, AHAttr, f"qp_attr.{name}"), f"qp_attr.{name}")
                    values[name] = value
                else:
                    values[name] = checks.uint(value, f"qp_attr.{name}", _FIELD_BITS.get(name, 32))
    return values


class QP(PyverbsCM):
    """ibv_create_qp: `QP(pd, init_attr, qp_attr=None)`; with qp_attr an RC or UC
    QP is taken to INIT and a UD QP to RTS, as pyverbs does.

    Raises PyverbsUserError (an argument or attribute of the wrong type, named;
    no CQs), PyverbsRDMAError: EOPNOTSUPP
    (a QP type other than RC, UC and UD), EINVAL (caps over the device's
    limits, max_inline_data over query_device()'s, an SRQ of another PD),
    ENOMEM (no QP number left), EBADF (closed PD or CQ).
    """
    context_set = pd_set = "qps"

    def __init__(self, creator, init_attr, qp_attr=None):
        super().__init__()
        what = "Failed to create QP"
        checks.instance(creator, (PD, Context), "creator")
        checks.instance(init_attr, QPInitAttrEx if isinstance(creator, Context) else QPInitAttr,
                        "init_attr")
        checks.instance(qp_attr, QPAttr, "qp_attr", none=True)
        qp_type = checks.uint(init_attr.qp_type, "init_attr.qp_type")
        sq_sig_all = checks.boolean(init_attr.sq_sig_all, "init_attr.sq_sig_all")
        checks.instance(init_attr.srq, SRQ, "init_attr.srq", none=True)
        checks.instance(init_attr.cap, QPCap, "init_attr.cap")
        if isinstance(creator, Context):
            checks.uint(init_attr.comp_mask, "init_attr.comp_mask")
            if init_attr.unsupported():
                raise PyverbsRDMAError(f"{what}: shm0 has no {init_attr.unsupported()}",
                                       errno.EOPNOTSUPP)
            if not init_attr.comp_mask & e.IBV_QP_INIT_ATTR_PD or not isinstance(init_attr.pd, PD) \
                    or init_attr.pd.ctx is not creator:
                raise PyverbsRDMAError(f"{what}: QPInitAttrEx needs a PD of this context, with "
                                       "IBV_QP_INIT_ATTR_PD in comp_mask", errno.EINVAL)
            creator = init_attr.pd
        if qp_type not in _TO:
            raise PyverbsRDMAError(f"{what}: shm0 has RC, UC and UD QPs", errno.EOPNOTSUPP)
        srq = init_attr.srq
        if srq is not None and srq.pd is not creator:
            raise PyverbsRDMAError(f"{what}: the SRQ must be one of the QP's PD", errno.EINVAL)
        if init_attr.send_cq is None or init_attr.recv_cq is None:
            raise PyverbsUserError(f"{what}: a QP needs a send CQ and a recv CQ")
        ctx = creator.ctx
        limits = ctx.query_device()
        caps = {}
        for name, top in (("max_send_wr", limits.max_qp_wr), ("max_recv_wr", limits.max_qp_wr),
                          ("max_send_sge", limits.max_sge), ("max_recv_sge", limits.max_sge),
                          ("max_inline_data", limits.max_inline_data)):
            caps[name] = checks.uint(getattr(init_attr.cap, name), f"cap.{name}")
            if caps[name] > top:
                raise PyverbsRDMAError(f"{what}: cap.{name} is over the device's {top}", errno.EINVAL)
        for cq in (init_attr.send_cq, init_attr.recv_cq):
            cq._check_open(what)
        self.pd, self.context = creator, ctx
        self.qp_type, self.sq_sig_all, self.qp_context = qp_type, sq_sig_all, init_attr.qp_context
        self._not_on = _NOT_ON[qp_type]
        # The eager lane (_post_eager) needs room for one WR of one SGE on a connected QP.
        self._eager = qp_type != UD and caps["max_send_wr"] > 0 and caps["max_send_sge"] > 0
        self.send_cq, self.recv_cq, self.srq = init_attr.send_cq, init_attr.recv_cq, srq
        # As rxe: a send WQE holds max_send_sge SGEs or max_inline_data bytes, whichever
        # is larger, and inline data may fill it (query reports that).
        self.cap = QPCap(caps["max_send_wr"], caps["max_recv_wr"], caps["max_send_sge"],
                         caps["max_recv_sge"],
                         max(caps["max_inline_data"], _SGE_BYTES * caps["max_send_sge"]))
        self._owner = ctx.owner
        try:
            self.qp_num = ctx.qpn_table.claim(self._owner + (creator.pd_id,))
        except TableFull as err:
            raise PyverbsRDMAError(f"{what}: {err}", errno.ENOMEM) from None
        self.state = RESET
        self.attr = QPAttr(qp_state=RESET)
        self._rq = collections.deque()          # posted receives (mr.Receive)
        self._recvs_posted = 0                  # receives put in _rq since RESET (the credits)
        self._credits = False                   # publish them to the peer (_join decides)
        self._waiting = collections.deque()     # sends posted before the peer joined, or in SQD
        self._qp = None                         # ring.QueuePair once joined
        self._created = None                    # the connection segment we created, until unlinked
        self._established = False               # COMM_EST given (once per connection)
        self._drain_notify = False              # SQD with en_sqd_async_notify: SQ_DRAINED still to come
        self._datagrams = Datagrams(self) if self.qp_type == UD else None
        self._retries_end = None                # while the port is down: when the sends give up
        self._taken = 0                         # receives taken by messages (shm0dv.take_count)
        self._take_limit = _UNLIMITED           # _taken may not pass it (shm0dv.set_recv_credits)
        self._credits_exhausted = False         # a message found the limit reached
        ctx.add_ref(self)
        creator.add_ref(self)
        self.send_cq.qps.add(self)
        self.recv_cq.qps.add(self)
        if srq is not None:
            srq.qps.add(self)
        if qp_attr is not None:
            (self.to_rts if self.qp_type == UD else self.to_init)(qp_attr)     # as pyverbs

    # State.

    @property
    def qp_state(self):
        return self.state

    def to_init(self, qp_attr):
        """RESET -> INIT with pyverbs' mask for the QP's type."""
        checks.instance(qp_attr, QPAttr, "qp_attr")
        qp_attr.qp_state = INIT
        self._modify(qp_attr, _TO[self.qp_type][INIT] | e.IBV_QP_STATE, "Failed to modify QP state to init")

    def to_rtr(self, qp_attr):
        """(RESET ->) INIT -> RTR."""
        checks.instance(qp_attr, QPAttr, "qp_attr")
        if self.state != INIT:
            self.to_init(qp_attr)
        qp_attr.qp_state = RTR
        self._modify(qp_attr, _TO[self.qp_type][RTR] | e.IBV_QP_STATE, "Failed to modify QP state to RTR")

    def to_rts(self, qp_attr):
        """(RESET -> INIT ->) RTR -> RTS."""
        checks.instance(qp_attr, QPAttr, "qp_attr")
        if self.state != RTR:
            self.to_rtr(qp_attr)
        qp_attr.qp_state = RTS
        self._modify(qp_attr, _TO[self.qp_type][RTS] | e.IBV_QP_STATE, "Failed to modify QP state to RTS")

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
        checks.instance(qp_attr, QPAttr, "qp_attr")
        mask = checks.uint(mask, "comp_mask")
        values = _attr_values(qp_attr, mask)
        with self.context.lock:
            self.context.check_usable(what)
            self._check_open(what)
            new = check_modify(self.qp_type, self.state, mask, values.get("qp_state"))
            if mask & e.IBV_QP_PORT and values["port_num"] != 1:
                raise PyverbsRDMAError(f"{what}: shm0 has port 1 only", errno.EINVAL)
            for name, value in values.items():
                if name != "qp_state":
                    setattr(self.attr, name, value)
            if self._qp is not None:
                self._configure(self._qp)
            elif self._datagrams is not None:
                self._datagrams.set_key(self.attr.qkey)
            if new == SQD and self.state == RTS:
                self._drain_notify = bool(mask & e.IBV_QP_EN_SQD_ASYNC_NOTIFY
                                          and qp_attr.en_sqd_async_notify)
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
        elif new == SQD:
            self._sq_drained()
        elif new == RESET and old != RESET:
            self._established = False
            self._leave()
            self._rq.clear()
            self._recvs_posted = 0
            self._take_limit, self._credits_exhausted = _UNLIMITED, False
            self._waiting.clear()
            self.send_cq._purge(self.qp_num)
            self.recv_cq._purge(self.qp_num)

    def query(self, attr_mask):
        """ibv_query_qp -> (QPAttr, QPInitAttr) (every field, whatever the mask)."""
        checks.uint(attr_mask, "attr_mask")
        with self.context.lock:
            self._check_open("Failed to query QP")
            attr = QPAttr(qp_state=self.state, cur_qp_state=self.state)
            attr.__dict__.update({k: v for k, v in vars(self.attr).items() if k != "logger"})
            attr.cap = QPCap(**{k: v for k, v in vars(self.cap).items() if k != "logger"})
            init = QPInitAttr(self.qp_type, self.qp_context, self.send_cq, self.recv_cq, self.srq,
                              attr.cap, self.sq_sig_all)
            return attr, init

    def query_data_in_order(self, op, flags=0):
        """ibv_query_qp_data_in_order: 0, whatever the flags: shm0 copies a message
        with memcpy and CMA, which promise no order of the bytes within it (as
        libibverbs answers for a provider that does not say)."""
        self._check_open("Failed to query data in order")
        return 0

    # Joining the peer QP (the wire).

    def _join(self):
        """Join dest_qp_num's connection segment if it can be had now (progress retries)."""
        if self._qp is not None or self._datagrams is not None:
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
        qp.acked, qp.drops = self.qp_type == RC, self.qp_type == UC
        # A requester of another process may wait on a responder that calls nothing in: it
        # needs to know which sends have a receive waiting (not known of an SRQ's receives).
        self._credits = qp.acked and self.srq is None and peer_owner[:2] != self._owner[:2]
        self._configure(qp)
        self._qp = qp                               # _progress sends what waited for it
        self._publish_credits()

    def _publish_credits(self):
        """Tell the requester how many receives we have posted (see the module docstring),
        less those the receive credits will not let messages take."""
        if self._credits and self._qp is not None:
            if self._take_limit == _UNLIMITED:
                self._qp.publish_credits(self._recvs_posted)    # every receive posted counts
                return
            held = len(self._rq)
            room = self._take_limit - self._taken
            self._qp.publish_credits(self._recvs_posted - held + (held if held < room else room))

    def _publish_receive(self, sge):
        """Tell the requester where the receive just posted lies, when its one SGE is in a
        shared segment with local write (ring.publish_receive): a rendezvous-size send
        may then be written straight into it (ring.send_written). Its lkey is still
        checked when a message takes it: one re-registered elsewhere meanwhile fails then
        (LOC_PROT_ERR), as a receive that fails its checks does; one that fails them now
        is not published. post_recv publishes only while the requester's last message
        came by rendezvous or written (a peer that sends small messages is not worth the
        publishing): the next large message then takes the rendezvous, and the receives
        posted after it are published."""
        sges, _, status = resolve_sges(self.pd, (sge,), LOCAL_WRITE)
        if not status and sges[0].seg:
            self._qp.publish_receive(self._recvs_posted, sges[0].seg, sges[0].segoff, sge.length)

    def _sq_drained(self):
        """In SQD, with en_sqd_async_notify: IBV_EVENT_SQ_DRAINED once no send WR
        started before SQD is outstanding."""
        qp = self._qp
        if self._drain_notify and (qp is None or not (qp.sq or qp.inflight)):
            self._drain_notify = False
            self.context._async_event(e.IBV_EVENT_SQ_DRAINED, qp=self)

    def _configure(self, qp):
        """What the wire needs of the QP's attributes (at join, and after each modify)."""
        attr = self.attr
        qp.rnr_retry = None if attr.rnr_retry == RNR_RETRY_FOR_EVER else attr.rnr_retry
        qp.rnr_delay_us = RNR_TIMER_US[attr.min_rnr_timer & 0x1F]
        qp.publish_access(remote_priv(attr.qp_access_flags))

    def _leave(self):
        if self._datagrams is not None:
            self._datagrams.close()
        qp = self._qp
        if qp is not None:
            qp.set_state(ring.S_CLOSED)
            qp.close()
            self._qp = None
            self._credits = False               # (no requester to publish to: _join decides again)
        if self._created is not None:
            self._created.unlink()                  # gone already if the peer mapped it
            self._created = None

    def _progress(self, receives=ring.UNBOUNDED):
        """Called by the Context's progress for every QP in RTR, RTS or SQD (and by
        post_recv, which knows how many `receives` the QP holds: poll_recv's bound)."""
        qp = self._qp
        if qp is None or self._waiting or self._retries_end is not None or self.context.port_down:
            qp = self._progress_start()
            if qp is None:
                return
        if qp.words[qp.w_peer_state] > ring.S_UP:     # CLOSED or BROKEN (INIT: not joined yet)
            try:
                qp.poll_recv()      # what the peer sent before it left was delivered, as on a wire
            except RingCorrupt:
                pass
            self._fatal()
            return
        try:
            # Acks first, as on a wire, where a send's ack comes before the reply to it: the
            # ring's head is read before the acks, so the acks the peer gave before it put
            # a message there are seen, and the send completes before that message's receive.
            waits = qp.message_waits()
            if qp.inflight or qp.sq:
                qp.poll_send()
                if self._drain_notify:
                    self._sq_drained()      # (the last send WR started before SQD may be done)
            if not waits:
                return
            qp.poll_recv(receives)
        except RingCorrupt:
            self._fatal()
            return
        if self._credits_exhausted:         # (a message found the receive credits used up)
            self._fatal()

    def _progress_start(self):
        """_progress's uncommon start: the port down, a UD QP, not joined yet, sends that
        waited for the join, or retries under way. The ring to go on with, or None."""
        if self.context.port_down:
            self._retry()
            return None
        if self._datagrams is not None:
            self._datagrams.progress()
            if self._credits_exhausted:
                self._fatal()
            return None
        qp = self._qp
        if qp is None:
            self._join()
            qp = self._qp
            if qp is None:
                if self.qp_type == RC:
                    self._retry()       # no responder there (yet): retried as on the wire
                return None
        self._retries_end = None
        while self._waiting and self.state != SQD:      # posted before the join, while the port
            qp.post_send(self._waiting.popleft())       # was down, or in SQD
        return qp

    def _retry(self):
        """Nothing answers: the port is down (nothing goes out or comes in), or an RC QP's
        destination is not on the device (no QP of that number, its process dead, or not
        yet in RTR: a NIC's packets to it are dropped). Sends outstanding are retried as
        on the wire, retry_cnt + 1 tries of the transport timer (4.096 us * 2**timeout;
        timeout 0 is infinite), then the oldest completes with IBV_WC_RETRY_EXC_ERR and
        the QP goes to ERR. Sends go on where they were if an answer comes in time."""
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
            self.send_cq._complete(new_wc(wr_id, e.IBV_WC_RETRY_EXC_ERR, wc_op, 0, self.qp_num))
            self._enter(ERR)

    def _device_fatal(self):
        """The device had a fatal error (Context.check_device): to ERR, flushing."""
        if self.state != ERR:
            self._enter(ERR)

    def _check_peer(self):
        """The peer process died: the QP goes to ERR (the Context calls this every LOOK_SLICE);
        a UD QP just lets go of the dead processes' connections."""
        if self._datagrams is not None:
            self._datagrams.check_peers()
        elif self._qp is not None and not self._qp.peer.alive():
            self._fatal()

    def _last_wqe(self):
        """A QP of an SRQ that reaches ERR takes no more of its receives."""
        if self.srq is not None:
            self.context._async_event(e.IBV_EVENT_QP_LAST_WQE_REACHED, qp=self)

    def _fatal(self):
        """The device found the connection ended or broken: what had arrived, and what
        the peer had taken, complete first. A send the peer refused completes with its
        error (which puts the QP in ERR); otherwise ERR, flushes, and an async event:
        QP_ACCESS_ERR or QP_REQ_ERR when our peer's request broke the rules, QP_FATAL."""
        if self.state == ERR or not self.context.check_device():
            return                  # a dead device's QPs get IBV_EVENT_DEVICE_FATAL instead
        qp = self._qp
        event = e.IBV_EVENT_QP_FATAL
        if qp is not None:
            try:
                qp.poll_recv()
                qp.poll_send()
            except RingCorrupt:
                pass
            refused = qp.refused_send()
            if refused is not None:
                self.send_done(refused)
                return
            event = _FAULT_EVENT.get(qp.peer_fault(), event)
        self._enter(ERR)
        self.context._async_event(event, qp=self)

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
                cur.status = ring.FLUSHED
                self.recv_done(cur)
            qp.set_state(ring.S_BROKEN)
        elif self._datagrams is not None:
            pending = self._datagrams.drain()
        for wr in [*pending, *self._waiting]:
            wr.status = ring.FLUSHED
            self.send_done(wr)
        for receive in self._rq:
            self.recv_done(receive.flushed())
        self._waiting.clear()
        self._rq.clear()

    # Posting.

    def post_recv(self, wr, bad_wr=None):
        """ibv_post_recv: the chain of RecvWRs. A receive whose SGEs fail their MR
        checks is found out when a message takes it (LOC_PROT_ERR; the requester
        of an RC QP gets REM_OP_ERR). The device runs here only if a message waits
        in the ring for a receive, or the QP has not joined its peer yet. Raises PyverbsRDMAError (EINVAL in RESET, over
        max_recv_wr or max_recv_sge)."""
        if wr.__class__ is not RecvWR:
            checks.instance(wr, RecvWR, "wr")
        lock = self.context.lock
        lock.acquire()
        try:
            if self._closed:
                self._check_open("Failed to post recv")
            each = wr
            try:
                while each is not None:
                    if self.state == RESET or len(self._rq) >= self.cap.max_recv_wr \
                            or each.num_sge > self.cap.max_recv_sge or self.srq is not None:
                        raise PyverbsRDMAError("Failed to post recv", errno.EINVAL)
                    sges = each.sg_list if each.num_sge == len(each.sg_list) else each.sg_list[:each.num_sge]
                    receive = Receive(self.pd, sges, (each.wr_id, _WC_RECV, True))
                    if self.state == ERR:
                        self.recv_done(receive.flushed())
                    else:
                        self._rq.append(receive)
                        self._recvs_posted += 1
                        if self._credits and len(sges) == 1 and sges[0].length >= ring.RDV_THRESHOLD \
                                and self._qp.last_large == self._qp.msn:
                            self._publish_receive(sges[0])
                    each = each.next_wr
            except checks.WRONG_FIELD:
                while wr is not None:           # name the field
                    wr = check_recv_wr(wr).next_wr
                raise
            qp = self._qp
            if self._credits:
                if self._take_limit == _UNLIMITED:
                    qp.publish_credits(self._recvs_posted)      # (_publish_credits' commonest case)
                else:
                    self._publish_credits()
            if self.state in _MOVING and (qp is None or qp.message_waits()):
                self._progress(len(self._rq))   # not joined yet (its credits then go out), or a message waits
        finally:
            lock.release()

    def post_send(self, wr, bad_wr=None):
        """ibv_post_send: the chain of SendWRs (SEND, RDMA_WRITE, RDMA_READ, atomics;
        on UD SEND only, to the destination set_wr_ud gave).

        With IBV_SEND_INLINE (a SEND or RDMA_WRITE) the data is copied at post,
        without an lkey check: the buffer may be reused once the call returns.

        Raises PyverbsRDMAError: EINVAL before RTS, over max_send_wr,
        max_send_sge or (inline) max_inline_data, or (UD) without an AH of the
        QP's PD; EOPNOTSUPP for an opcode shm0 does not do yet.
        """
        if wr.__class__ is not SendWR:
            checks.instance(wr, SendWR, "wr")
        lock = self.context.lock
        lock.acquire()          # (acquire/release: half the cost of `with` on the hot path)
        try:
            if self._closed:
                self._check_open("Failed to post send")
            try:
                if self._eager and wr.next_wr is None and self._post_eager(wr):
                    return
                while wr is not None:
                    self._post_one(wr)
                    wr = wr.next_wr
            except checks.WRONG_FIELD:
                while wr is not None:           # name the field
                    wr = check_send_wr(wr).next_wr
                raise
            if self._qp is None and self.state in _MOVING:
                self._progress()        # not joined (or UD): the device takes the sends from here
        finally:
            lock.release()

    def _post_eager(self, wr):
        """The fast lane for the commonest posts: one SEND, RDMA_WRITE or (RC) RDMA_READ
        without immediate data, inline data or fence, of one SGE already checked (in
        the PD's cache), on a joined RC or UC QP in RTS with nothing queued or in
        flight. A SEND goes into the ring, completing at once if the ring can say so
        (ring.send_eager); an RDMA is carried out now (ring.rdma_now) and completes with
        its status. True if it went; False, with nothing done, for _post_one, which does
        the same (and everything else) through the general checks."""
        opcode = wr.opcode
        if opcode == _WR_SEND:
            wc_op = _WC_SEND
        elif opcode == _WR_RDMA_WRITE:
            wc_op = _WC_RDMA_WRITE
        elif opcode == _WR_RDMA_READ and self.qp_type == RC:
            wc_op = _WC_RDMA_READ
        else:
            return False
        qp = self._qp
        if qp is None or self.state != RTS or qp.sq or qp.inflight or self._waiting \
                or self.context.port_down or wr.num_sge != 1:
            return False
        flags = wr.send_flags
        if flags.__class__ is not int or flags & ~_EAGER_FLAGS:
            return False
        sge = wr.sg_list[0]
        length = sge.length
        hit = self.pd.sge_cache.get((sge.lkey, sge.addr, length))
        if hit is None:
            return False
        signaled = self.sq_sig_all or flags & _SIGNALED
        if wc_op == _WC_SEND:
            view, solicited = hit[0].view, flags & _SOLICITED
            if qp.send_eager(view, length, solicited) or qp.send_written(view, length, solicited):
                if signaled:
                    self.send_cq._complete_ok(wr.wr_id, _WC_SEND, length, self.qp_num)
                return True
            # Not complete at once (a rendezvous, not covered by credits, no room): the ring
            # takes it as a work request, as _post_one would after the checks made here.
            work = ring.WorkRequest(ring.OP_SEND, [hit[0]], length, None, 0, (wr.wr_id, _WC_SEND, signaled))
            if flags & _SOLICITED:
                work.solicited = True
            if not qp.send_rendezvous(work):
                qp.post_send(work)
            return True
        rkey, addr = wr.rdma_rkey, wr.rdma_remote_addr
        write = wc_op == _WC_RDMA_WRITE
        if rkey.__class__ is not int or addr.__class__ is not int or not (write or hit[1] & LOCAL_WRITE):
            return False                    # (the general path names the field, or the protection error)
        work = ring.WorkRequest(ring.OP_RDMA_WRITE if write else ring.OP_RDMA_READ, [hit[0]], length,
                                (rkey, addr, length), 0, (wr.wr_id, wc_op, signaled))
        qp.rdma_now(work, write)
        self.send_done(work)
        return True

    def _post_one(self, wr):
        op = _SEND_OPS.get(wr.opcode)
        if op is None:
            checks.uint(wr.opcode, "wr.opcode")
            raise PyverbsRDMAError(f"Failed to post send: opcode {wr.opcode} is not supported by "
                                   "shm0 yet", errno.EOPNOTSUPP)
        qp = self._qp
        outstanding = len(qp.sq) + len(qp.inflight) + len(self._waiting) if qp is not None \
            else self._outstanding()
        if self.state not in _POSTABLE or wr.num_sge > self.cap.max_send_sge \
                or outstanding >= self.cap.max_send_wr:
            raise PyverbsRDMAError("Failed to post send", errno.EINVAL)
        if self.qp_type == UD and (not isinstance(wr.ah, AH) or wr.ah.pd is not self.pd):
            raise PyverbsRDMAError("Failed to post send: a UD send needs an AH of the QP's PD "
                                   "(set_wr_ud)", errno.EINVAL)
        ring_op, wc_op, with_imm = op
        flags = wr.send_flags
        if flags.__class__ is not int:
            flags = int(flags)          # an IntFlag a program set: one conversion, not one per test
        signaled = self.sq_sig_all or flags & _SIGNALED
        if ring_op in self._not_on and self.state != ERR:
            work = ring.WorkRequest(ring_op, [], 0, None, 0, (wr.wr_id, wc_op, signaled))
            work.status = ring.LOCAL_OPERATION          # as rxe: its requester has no such opcode
            self.send_done(work)
            return
        sges = wr.sg_list if wr.num_sge == len(wr.sg_list) else wr.sg_list[:wr.num_sge]
        if flags & _INLINE and ring_op in _INLINE_OPS:
            if min((sge.length for sge in sges), default=0) < 0:
                check_send_wr(wr)           # names the length: memory is read from it below
            if sum(sge.length for sge in sges) > self.cap.max_inline_data:
                raise PyverbsRDMAError("Failed to post send: inline data over max_inline_data",
                                       errno.EINVAL)
            work = inline_request(ring_op, sges, (wr.wr_id, wc_op, signaled))
        else:
            need = LOCAL_WRITE if ring_op in _LOCAL_WRITE_OPS else 0
            work = work_request(self.pd, ring_op, sges, need, (wr.wr_id, wc_op, signaled))
        if flags & _SOLICITED:
            work.solicited = True
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
        elif self._datagrams is not None:
            self._post_datagram(wr, work)
        elif qp is None or self.context.port_down or self.state == SQD:
            self._waiting.append(work)      # until the peer joins, the port is up, or the QP leaves SQD
        else:
            qp.post_send(work)

    def _outstanding(self):
        """Send WRs posted and not completed (_post_one counts a joined QP's itself)."""
        if self._datagrams is not None:
            return self._datagrams.outstanding()
        return len(self._waiting) + (len(self._qp.sq) + len(self._qp.inflight) if self._qp else 0)

    def _post_datagram(self, wr, work):
        """A UD send: the datagram header (Q_Key) and the GRH go before the payload.
        Lost at once (SUCCESS, no error) over the MTU (IB's C10-93.1.1) or to a GID
        that is not the device's."""
        route = wr.ah.attr.gr
        dgid = route.dgid.raw
        if work.length > _UD_MTU or all(dgid != raw for raw, _ in GIDS):
            self.send_done(work)
            return
        key = self.attr.qkey if wr.remote_qkey & _OWN_QKEY else wr.remote_qkey
        header = grh(GIDS[route.sgid_index][0], dgid, work.length, work.imm is not None,
                     route.hop_limit, route.traffic_class, route.flow_label)
        work.sges.insert(0, private_sge(ring.datagram_header(key) + header))
        work.length += ring.DATAGRAM_HEADER + len(header)
        self._datagrams.send(work, wr.remote_qpn)

    # The ring's completion sink and receive source.

    def _take_recv(self):
        """The ring's take_recv: the receive (the QP's own, or its SRQ's) for a message
        that begins, or None (not ready). None too once the receive credits are used up:
        the receive stays where it is, and _progress breaks the QP."""
        if self._taken >= self._take_limit:
            self._credits_exhausted = True
            return None
        if self._rq:                        # (a QP of an SRQ has none of its own)
            self._taken += 1
            return self._rq.popleft().take()
        work = self.srq.take() if self.srq is not None else None
        if work is not None:
            self._taken += 1
        return work

    # shm0dv's receive accounting (providers/shm0/shm0dv.py).

    def _receive_state(self):
        """(receives on the QP's own queue, whether a message that has begun to arrive
        is being placed into a receive, whether the receive credits ran out)."""
        with self.context.lock:
            self._check_open("Failed to query the QP's receive queue")
            filling = self._qp is not None and self._qp.rx_cur is not None
            return len(self._rq), filling, self._credits_exhausted

    def _set_receive_credits(self, n):
        """At most `n` more receives taken (None: no limit), until RESET."""
        with self.context.lock:
            self._check_open("Failed to set the QP's receive credits")
            self._take_limit = _UNLIMITED if n is None else self._taken + n
            self._publish_credits()

    def send_done(self, work):
        wr_id, wc_op, signaled = work.ctx
        if not work.status:                 # the common case: one test
            if signaled:
                self.send_cq._complete_ok(wr_id, wc_op, work.length, self.qp_num)
            return
        status = _STATUS[work.status]
        self.send_cq._complete(new_wc(wr_id, status, wc_op, work.length, self.qp_num))
        if status != e.IBV_WC_WR_FLUSH_ERR and self.state != ERR:
            self._enter(ERR)

    def recv_done(self, work, src_qp=None):
        """A receive completes (src_qp: a UD sender's qp_num; the GRH came first)."""
        wr_id, wc_op, _ = work.ctx
        if not work.status and work.imm is None and src_qp is None and self.state != RTR:
            # the commonest (RTR's first message raises COMM_EST below)
            self.recv_cq._complete_ok(wr_id, wc_op, work.done, self.qp_num, self.attr.dest_qp_num,
                                      work.solicited)
            return
        status = _STATUS[work.status]
        wc = new_wc(wr_id, status, wc_op, work.done, self.qp_num)
        wc.src_qp = self.attr.dest_qp_num if src_qp is None else src_qp
        if work.imm is not None:
            wc.imm_data, wc.wc_flags = work.imm, _WITH_IMM
            if work.write_len is not None:
                wc.opcode, wc.byte_len = e.IBV_WC_RECV_RDMA_WITH_IMM, work.write_len
        if src_qp is not None:
            wc.wc_flags |= _WITH_GRH
        self.recv_cq._complete(wc, work.solicited)
        if self.state == RTR and not self._established and not status and src_qp is None:
            self._established = True        # the first message at a QP that is not yet RTS
            self.context._async_event(e.IBV_EVENT_COMM_EST, qp=self)
        if status and status != e.IBV_WC_WR_FLUSH_ERR and self.state != ERR:
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
