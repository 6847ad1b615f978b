"""shmdat.verbs as a benchmark transport: one RC QP pair, as perftest drives it.

The same loops (timing.py) as the DAT transport, so its rows sit beside DAT's:
send_lat is ib_send_lat's 8-byte ping-pong, each side polling its receive CQ;
rdma_write_lat and rdma_read_lat are one RDMA post and its signalled
completion, polled at the initiator (not ib_write_lat's write-both-ways
ping-pong: this is what DAT's rows measure too); the bandwidth cells post
WINDOW at most outstanding, as ib_*_bw do with their tx depth.

Polling cells poll the CQ in a loop, as perftest does. Blocking cells wait as
a pyverbs program does with a completion channel (one per CQ, so that an event
is always the expected CQ's): poll, and when nothing is there arm the CQ
(`req_notify`), poll again (a completion that came before the arming raises no
event), then `get_cq_event` with no timeout, `ack_events(1)`, and poll. A hang
is bounded by the runner's CELL_TIMEOUT, which stops both processes.
"""

from ..verbs import libibverbs_enums as e
from ..verbs.addr import GID, AHAttr, GlobalRoute
from ..verbs.cq import CQ, CompChannel
from ..verbs.device import Context
from ..verbs.mr import MR
from ..verbs.pd import PD
from ..verbs.qp import QP, QPAttr, QPCap, QPInitAttr
from ..verbs.wr import SGE, RecvWR, SendWR
from .plan import WINDOW

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
GID_INDEX = 3                   # ::ffff:127.0.0.1, RoCE v2, as ib_*_lat -x 3 on Soft-RoCE
OPCODES = {"send": e.IBV_WR_SEND, "rdma_write": e.IBV_WR_RDMA_WRITE, "rdma_read": e.IBV_WR_RDMA_READ}


class VerbsEndpoint:
    def __init__(self, role, ctrl, max_size):
        self.ctx = Context(name="shm0")
        try:
            self._connect(ctrl, max_size)
        except BaseException:
            self.ctx.close()    # at once: its MRs may be large
            raise
        self.outstanding = 0
        # The cell's wait, as its last recv or finish said: a full send window is reaped the same way.
        self.polling = True
        self.wrs = {}           # (op, size) -> its SendWR, built once and posted again, as perftest does

    def _connect(self, ctrl, max_size):
        ctx = self.ctx
        pd = PD(ctx)
        self.send_channel = CompChannel(ctx)
        self.recv_channel = CompChannel(ctx)
        self.send_cq = CQ(ctx, 4 * WINDOW, channel=self.send_channel)
        self.recv_cq = CQ(ctx, 4 * WINDOW, channel=self.recv_channel)
        self.src = MR(pd, max_size, ACCESS)
        self.dst = MR(pd, max_size, ACCESS)
        cap = QPCap(max_send_wr=WINDOW, max_recv_wr=WINDOW)
        self.qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.send_cq, rcq=self.recv_cq, cap=cap,
                                    sq_sig_all=1), self._qp_attr())
        gid = ctx.query_gid(1, GID_INDEX)
        # Out of band, as perftest's TCP exchange: QP number, GID, and the buffer RDMA targets.
        ctrl.send((self.qp.qp_num, gid.gid, self.dst.buf, self.dst.rkey))
        qp_num, remote_gid, self.remote_addr, self.remote_rkey = ctrl.recv()
        attr = self._qp_attr()
        attr.dest_qp_num = qp_num
        attr.ah_attr = AHAttr(is_global=1, gr=GlobalRoute(GID(remote_gid), sgid_index=GID_INDEX))
        self.qp.to_rts(attr)
        # Every receive over the same buffer: the bytes are not checked.
        self.recv_wr = RecvWR(num_sge=1, sg=[SGE(self.dst.buf, max_size, self.dst.lkey)])
        for _ in range(WINDOW):
            self.qp.post_recv(self.recv_wr)

    @staticmethod
    def _qp_attr():
        """As perftest: remote access for RDMA, and RNR retries for ever (a send may
        reach the responder before it has reposted its receive)."""
        attr = QPAttr()
        attr.qp_access_flags = ACCESS
        attr.rnr_retry, attr.min_rnr_timer = 7, 12
        return attr

    def _wr(self, op, size):
        wr = self.wrs.get((op, size))
        if wr is None:
            local = self.dst if op == "rdma_read" else self.src
            wr = SendWR(opcode=OPCODES[op], num_sge=1, sg=[SGE(local.buf, size, local.lkey)])
            if op != "send":
                wr.set_wr_rdma(self.remote_rkey, self.remote_addr)
            self.wrs[(op, size)] = wr
        return wr

    def _reap(self, keep, poll):
        """Reap the send CQ until at most `keep` requests are outstanding."""
        cq, channel = self.send_cq, self.send_channel
        while self.outstanding > keep:
            n, wcs = cq.poll(WINDOW) if poll else _wait(cq, channel, WINDOW)
            for wc in wcs:
                _check(wc)
            self.outstanding -= n

    def _post(self, op, size):
        if self.outstanding >= WINDOW:
            self._reap(WINDOW - 1, self.polling)
        self.qp.post_send(self._wr(op, size))
        self.outstanding += 1

    def send(self, size):
        self._post("send", size)

    def recv(self, poll):
        """The next receive completion: the CQ polled in a loop, or waited for on its channel."""
        self.polling = poll
        if poll:
            cq_poll = self.recv_cq.poll
            while True:
                n, wcs = cq_poll()
                if n:
                    break
        else:
            _, wcs = _wait(self.recv_cq, self.recv_channel, 1)
        _check(wcs[0])
        self.qp.post_recv(self.recv_wr)
        return wcs[0].byte_len

    def rdma(self, op, size):
        self._post(op, size)

    def finish(self, poll):
        self.polling = poll
        self._reap(0, poll)

    def close(self):
        self.ctx.close()


def _wait(cq, channel, num_entries):
    """(n, wcs) of at least one completion from `cq`, sleeping on its channel until there is one."""
    n, wcs = cq.poll(num_entries)
    while not n:
        cq.req_notify()
        n, wcs = cq.poll(num_entries)
        if n:
            break
        channel.get_cq_event(cq)
        cq.ack_events(1)
        n, wcs = cq.poll(num_entries)
    return n, wcs


def _check(wc):
    if wc.status != e.IBV_WC_SUCCESS:
        raise RuntimeError(f"work request {wc.wr_id} completed with status {wc.status}")
