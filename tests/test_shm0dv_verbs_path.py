"""shm0.verbs' post path made cheaper for DAT (docs/design/dat-over-verbs.md 7.2, items
2 and 3): SGEs resolved once per PD and kept until their MR closes or is reregistered
(every change is seen by the next post), and post_recv running the device only when a
message waits for a receive (one is then delivered at once, a real peer's)."""

import ctypes
import select

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.wr import SGE, SendWR

from tests.verbs_ends import End

LOCAL = e.IBV_ACCESS_LOCAL_WRITE


def _send(end, sge, wr_id):
    end.qp.post_send(SendWR(wr_id=wr_id, num_sge=1, sg=[sge]))
    return end.completion()


def test_a_closed_mrs_sge_resolved_before_is_refused_after(verbs_pair):
    a, b = verbs_pair
    b.recv(1)
    mr = MR(a.pd, 64, LOCAL)
    mr.write(b"cached", 6)
    sge = SGE(mr.buf, 6, mr.lkey)
    assert _send(a, sge, 1).status == e.IBV_WC_SUCCESS       # resolved, kept
    assert b.completion().status == e.IBV_WC_SUCCESS
    mr.close()
    assert _send(a, sge, 2).status == e.IBV_WC_LOC_PROT_ERR


def test_rereg_to_other_memory_refuses_the_old_range_and_sends_the_new(verbs_pair):
    a, b = verbs_pair
    for wr_id in (1, 2):
        b.recv(wr_id, offset=64 * wr_id, length=64)
    mr = MR(a.pd, 64, LOCAL)
    mr.write(b"before", 6)
    old = SGE(mr.buf, 6, mr.lkey)
    assert _send(a, old, 1).status == e.IBV_WC_SUCCESS
    assert b.completion().status == e.IBV_WC_SUCCESS
    mine = ctypes.create_string_buffer(b"after!", 64)
    mr.rereg(e.IBV_REREG_MR_CHANGE_TRANSLATION, addr=ctypes.addressof(mine), length=64)
    assert _send(a, SGE(ctypes.addressof(mine), 6, mr.lkey), 2).status == e.IBV_WC_SUCCESS
    assert b.completion().status == e.IBV_WC_SUCCESS and b.mr.read(6, 128) == b"after!"
    assert _send(a, old, 3).status == e.IBV_WC_LOC_PROT_ERR
    mr.close()


def test_rereg_to_another_pd_refuses_the_sge_on_the_old_pds_qp(verbs_pair):
    a, b = verbs_pair
    b.recv(1)
    mr = MR(a.pd, 64, LOCAL)
    sge = SGE(mr.buf, 8, mr.lkey)
    assert _send(a, sge, 1).status == e.IBV_WC_SUCCESS
    assert b.completion().status == e.IBV_WC_SUCCESS
    mr.rereg(e.IBV_REREG_MR_CHANGE_PD, pd=PD(a.ctx))
    assert _send(a, sge, 2).status == e.IBV_WC_LOC_PROT_ERR


def test_rereg_dropping_local_write_refuses_an_rdma_read_into_it(verbs_pair):
    a, b = verbs_pair
    mr = MR(a.pd, 64, LOCAL)
    sge = SGE(mr.buf, 8, mr.lkey)
    a.qp.post_send(_read(sge, 1, b))
    assert a.completion().status == e.IBV_WC_SUCCESS
    mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, access=0)
    a.qp.post_send(_read(sge, 2, b))
    assert a.completion().status == e.IBV_WC_LOC_PROT_ERR


def _read(sge, wr_id, target):
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_READ, num_sge=1, sg=[sge])
    wr.set_wr_rdma(target.mr.rkey, target.mr.buf)
    return wr


def _early_sender(ch):
    """Connect, send one message at once (before the test has a receive), report."""
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    end.send(1, b"early")
    ch.send("sent")
    assert end.completion().status == e.IBV_WC_SUCCESS
    ch.recv(timeout=60)


def test_post_recv_delivers_a_message_that_waits_for_it(spawn):
    peer = spawn(_early_sender)
    me = End(channel=True)
    try:
        me.connect_to(peer)
        assert peer.recv() == "sent"        # in our ring; no receive for it yet
        assert me.cq.poll() == (0, [])      # the device runs: it joins, the message waits
        me.cq.req_notify()
        me.recv(5)                          # and nothing else runs the device here
        assert select.select([me.channel.fd], [], [], 0)[0]
        assert me.cq.poll()[1][0].wr_id == 5 and me.mr.read(5, 0) == b"early"
        peer.send("stop")
    finally:
        me.close()
