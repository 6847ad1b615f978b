"""What each hot call costs, in microseconds, at the verbs and the DAT layer.

    python benchmarks/call_costs.py [--layer verbs|dat|both] [--count 3000]

One process makes the calls; its peer (a spawned process) has posted enough
receives for every send and otherwise sleeps on a pipe, so the figures are the
caller's own work with no second busy core in the way. Measured, each over
--count calls:

    post_send       8 bytes, each complete at once (the peer's receives cover it)
    reap            taking those completions (CQ.poll / evd.dequeue that finds one)
    poll empty      a poll or dequeue that finds nothing (a progress round)
    post_recv       one receive of 64 bytes
    delivery        the peer's --count messages, taken from the ring into the posted
                    receives by polling (per message, completions included)

The ping-pong half round trip is about one side's post_send + delivery +
post_recv, plus the time the poller takes to notice (profile_hot_path.py).
"""

import argparse
import multiprocessing
import time

import shmdat
from shmdat import EpAttr, EventNumber, EvdFlags
from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.addr import GID, AHAttr, GlobalRoute
from shmdat.verbs.cq import CQ
from shmdat.verbs.device import Context
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.qp import QP, QPAttr, QPCap, QPInitAttr
from shmdat.verbs.wr import SGE, RecvWR, SendWR

TIMEOUT_US = 10_000_000
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
GID_INDEX = 3


class VerbsSide:
    """An RC QP with room for `count` sends and receives, connected out of band."""

    def __init__(self, ctrl, count):
        self.ctx = Context(name="shm0")
        pd = PD(self.ctx)
        self.send_cq, self.recv_cq = CQ(self.ctx, 2 * count), CQ(self.ctx, 2 * count)
        mr = MR(pd, 4096, ACCESS)
        cap = QPCap(max_send_wr=2 * count, max_recv_wr=2 * count)
        self.qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.send_cq, rcq=self.recv_cq,
                                    cap=cap, sq_sig_all=1))
        ctrl.send((self.qp.qp_num, self.ctx.query_gid(1, GID_INDEX).gid))
        qp_num, gid = ctrl.recv()
        attr = QPAttr()
        attr.qp_access_flags, attr.rnr_retry, attr.min_rnr_timer = ACCESS, 7, 12
        attr.dest_qp_num = qp_num
        attr.ah_attr = AHAttr(is_global=1, gr=GlobalRoute(GID(gid), sgid_index=GID_INDEX))
        self.qp.to_rts(attr)
        self.send_wr = SendWR(num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)])
        self.recv_wr = RecvWR(num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)])

    def post_send(self):
        self.qp.post_send(self.send_wr)

    def reap(self):
        return self.send_cq.poll()[0]

    def poll_empty(self):
        self.recv_cq.poll()

    def post_recv(self):
        self.qp.post_recv(self.recv_wr)

    def take(self):
        return self.recv_cq.poll()[0]

    def close(self):
        self.ctx.close()


class DatSide:
    """An EP with room for `count` requests and receives, connected through a PSP."""

    def __init__(self, ctrl, count, passive):
        self.ia = ia = shmdat.ia_open()
        pz = ia.pz_create()
        self.recv_evd = ia.evd_create(2 * count, EvdFlags.DTO)
        self.req_evd = ia.evd_create(2 * count, EvdFlags.DTO)
        conn_evd = ia.evd_create(8, EvdFlags.CONNECTION)
        lmr = ia.lmr_create(pz, 4096)
        self.ep = ia.ep_create(pz, self.recv_evd, self.req_evd, conn_evd,
                               EpAttr(max_recv_dtos=2 * count, max_request_dtos=2 * count))
        self.recv_iov, self.send_iov = [lmr.triplet(0, 64)], [lmr.triplet(0, 8)]
        if passive:
            cr_evd = ia.evd_create(8, EvdFlags.CR)
            psp = ia.psp_create_any(cr_evd)
            ctrl.send((ia.address, psp.conn_qual))
            cr_evd.wait(TIMEOUT_US)[0].data.cr.accept(self.ep)
        else:
            self.ep.connect(*ctrl.recv(), TIMEOUT_US)
        if conn_evd.wait(TIMEOUT_US)[0].number != EventNumber.CONNECTION_EVENT_ESTABLISHED:
            raise RuntimeError("not connected")

    def post_send(self):
        self.ep.post_send(self.send_iov, None)

    def reap(self):
        return self._dequeue(self.req_evd)

    def poll_empty(self):
        self._dequeue(self.recv_evd)

    def post_recv(self):
        self.ep.post_recv(self.recv_iov, None)

    def take(self):
        return self._dequeue(self.recv_evd)

    @staticmethod
    def _dequeue(evd):
        try:
            evd.dequeue()
            return 1
        except shmdat.QueueEmpty:
            return 0

    def close(self):
        self.ia.close()


def _side(layer, ctrl, count, passive):
    return VerbsSide(ctrl, count) if layer == "verbs" else DatSide(ctrl, count, passive)


def _peer(layer, ctrl, count):
    """Post a receive for every send of the measuring side, sleep; on request send `count`."""
    side = _side(layer, ctrl, count, passive=True)
    for _ in range(count + 1):
        side.post_recv()
    ctrl.send("ready")
    ctrl.recv()
    for _ in range(count):
        side.post_send()
    ctrl.send("sent")
    ctrl.recv()
    side.close()


def measure(layer, count):
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    peer = spawn.Process(target=_peer, args=(layer, theirs, count))
    peer.start()
    side = _side(layer, ours, count, passive=False)
    ours.recv()
    side.post_send()                # the first: the QP joins its peer
    while not side.reap():
        pass
    figures = {}

    def timed(name, call):
        t0 = time.perf_counter()
        for _ in range(count):
            call()
        figures[name] = (time.perf_counter() - t0) / count * 1e6

    timed("post_send", side.post_send)
    timed("reap", side.reap)
    timed("poll empty", side.poll_empty)
    timed("post_recv", side.post_recv)
    ours.send("send")
    ours.recv()
    t0 = time.perf_counter()
    taken = 0
    while taken < count:
        taken += side.take()
    figures["delivery"] = (time.perf_counter() - t0) / count * 1e6
    ours.send(None)
    peer.join(10)
    side.close()
    return figures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layer", choices=("verbs", "dat", "both"), default="both")
    p.add_argument("--count", type=int, default=3000)
    args = p.parse_args()
    for layer in ("verbs", "dat") if args.layer == "both" else (args.layer,):
        figures = measure(layer, args.count)
        print(f"{layer:<6}" + "".join(f"  {name} {us:.2f}" for name, us in figures.items()) + "  (us per call)")


if __name__ == "__main__":
    main()
