"""Two ends of an RC connection on shmdat.verbs, as rdma-core's RCResources has them."""

import threading
import time

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.addr import AHAttr, GlobalRoute
from shmdat.verbs.cq import CQ, CompChannel
from shmdat.verbs.device import Context
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.qp import QP, QPAttr, QPCap, QPInitAttr
from shmdat.verbs.wr import SGE, RecvWR, SendWR

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
GID_INDEX = 3                       # ::ffff:127.0.0.1, RoCE v2
POLL_BOUND = 10.0                   # seconds: a completion that takes longer is a bug


class End:
    """One side's resources, as rdma-core's RCResources has them."""

    def __init__(self, sq_sig_all=1, channel=False, max_recv_wr=16, max_send_wr=16):
        self.ctx = Context(name="shm0")
        self.pd = PD(self.ctx)
        self.channel = CompChannel(self.ctx) if channel else None
        self.cq = CQ(self.ctx, 64, None, self.channel)
        self.mr = MR(self.pd, 1 << 16, ACCESS)
        cap = QPCap(max_send_wr=max_send_wr, max_recv_wr=max_recv_wr)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap,
                                         sq_sig_all=sq_sig_all), QPAttr())

    def connect(self, dest_qp_num, **qp_attr):
        """To RTS towards dest_qp_num; qp_attr sets more QPAttr fields (timeout, retry_cnt...)."""
        attr = QPAttr()
        attr.dest_qp_num = dest_qp_num
        for name, value in qp_attr.items():
            setattr(attr, name, value)
        attr.ah_attr = AHAttr(is_global=1, gr=GlobalRoute(self.ctx.query_gid(1, GID_INDEX),
                                                          sgid_index=GID_INDEX))
        self.qp.to_rts(attr)

    def connect_to(self, peer):
        """Connect to a spawned peer that sends its qp_num first and then takes ours."""
        self.connect(peer.recv())
        peer.send(self.qp.qp_num)

    def sge(self, offset, length):
        return SGE(self.mr.buf + offset, length, self.mr.lkey)

    def recv(self, wr_id, offset=0, length=4096):
        self.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[self.sge(offset, length)]))

    def send(self, wr_id, data, offset=0, flags=e.IBV_SEND_SIGNALED):
        self.mr.write(data, len(data), offset)
        self.qp.post_send(SendWR(wr_id=wr_id, num_sge=1, sg=[self.sge(offset, len(data))],
                                 send_flags=flags))

    def rdma(self, opcode, wr_id, offset, length, rkey, remote_addr):
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[self.sge(offset, length)])
        wr.set_wr_rdma(rkey, remote_addr)
        self.qp.post_send(wr)

    def completion(self):
        """The next WC, polling (bounded)."""
        end = time.monotonic() + POLL_BOUND
        while time.monotonic() < end:
            n, wcs = self.cq.poll()
            if n:
                return wcs[0]
        raise AssertionError("no completion came")

    def close(self):
        self.ctx.close()


def bounded(call, bound=POLL_BOUND):
    """call() in a thread, failing the test if it has not returned within `bound`
    seconds: pyverbs' blocking gets (get_async_event, get_cq_event) take no timeout."""
    outcome = []

    def run():
        try:
            outcome.append((True, call()))
        except BaseException as err:        # handed to the test below
            outcome.append((False, err))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound)
    assert outcome, f"{getattr(call, '__name__', call)} did not return within {bound} s"
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
