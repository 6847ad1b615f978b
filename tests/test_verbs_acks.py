"""RC acks across processes: a send to a receive the responder has posted completes
even while the responder's process calls nothing in verbs (its NIC would ack by
itself); other sends wait for the responder to take them."""

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.pd import PD
from shmdat.verbs.qp import QP, QPAttr, QPInitAttr
from shmdat.verbs.srq import SRQ, SrqAttr, SrqInitAttr
from shmdat.verbs.wr import RecvWR

from tests.verbs_ends import End, POLL_BOUND, bounded

IDLE_POLLS = 50         # polls of the requester while the responder calls nothing in


def _connected(ch, qp, connect):
    """Swap QP numbers with the test, which connects first, and connect(dest): our QP
    has joined the connection when this returns."""
    ch.send(qp.qp_num)
    connect(ch.recv())
    assert qp._qp is not None


def _responder(ch, receives, fault):
    """A spawned responder: posts receives of the `receives` lengths (wr_id 7, 8...),
    reports, then waits on the pipe without calling verbs; told to go on, it polls
    its first completion."""
    end = End()
    _connected(ch, end.qp, end.connect)
    for wr_id, length in enumerate(receives, 7):
        end.recv(wr_id, offset=length * (wr_id - 7), length=length)
    if fault == "rereg":
        end.mr.rereg(e.IBV_REREG_MR_CHANGE_PD, pd=PD(end.ctx))
    ch.send("waiting")
    while ch.recv(timeout=60) == "post":             # blocks: nothing in verbs runs here
        end.recv(7)
        ch.send("posted")
    wc = end.completion()
    ch.send((wc.wr_id, wc.status, end.mr.read(wc.byte_len, 0), end.qp.qp_state))
    ch.recv(timeout=60)
    end.close()


def _meet(spawn, *args):
    peer = spawn(_responder, *args)
    me = End()
    me.connect(peer.recv())
    peer.send(me.qp.qp_num)
    assert peer.recv() == "waiting"
    return peer, me


def _no_completion(end):
    for _ in range(IDLE_POLLS):
        assert end.cq.poll() == (0, [])


def test_a_send_to_a_posted_receive_completes_while_the_responder_calls_nothing(spawn):
    peer, me = _meet(spawn, (4096,), None)
    try:
        me.send(1, b"no need to wait")
        wc = me.completion()                    # bounded: today's ack would never come
        assert (wc.wr_id, wc.status) == (1, e.IBV_WC_SUCCESS)
        peer.send("go")
        assert peer.recv(POLL_BOUND) == (7, e.IBV_WC_SUCCESS, b"no need to wait", e.IBV_QPS_RTS)
        peer.send("end")
        peer.join()
    finally:
        me.close()


def test_a_send_no_receive_is_known_to_wait_for_waits_until_the_responder_takes_it(spawn):
    peer, me = _meet(spawn, (), None)
    try:
        me.send(1, b"wait for me")
        _no_completion(me)
        peer.send("post")                        # the responder's post_recv takes the message
        assert peer.recv() == "posted"
        wc = me.completion()
        assert (wc.wr_id, wc.status) == (1, e.IBV_WC_SUCCESS)
        peer.send("go")
        assert peer.recv(POLL_BOUND) == (7, e.IBV_WC_SUCCESS, b"wait for me", e.IBV_QPS_RTS)
        peer.send("end")
        peer.join()
    finally:
        me.close()


@pytest.mark.parametrize("receives, fault, status", [((8, 64), None, e.IBV_WC_LOC_LEN_ERR),
                                                     ((64, 64), "rereg", e.IBV_WC_LOC_PROT_ERR)])
def test_an_error_found_after_the_send_completed_breaks_the_connection(spawn, receives, fault, status):
    """The send completed as its receive was known to wait; the responder finds the
    receive too short or failing its MR check when it takes the message: its receive
    fails, and the requester learns of it as a broken connection. The responder's
    other receive no longer waits: a send after the break flushes."""
    peer, me = _meet(spawn, receives, fault)
    try:
        me.send(1, b"longer than eight bytes")
        wc = me.completion()
        assert (wc.wr_id, wc.status, me.qp.qp_state) == (1, e.IBV_WC_SUCCESS, e.IBV_QPS_RTS)
        peer.send("go")
        wr_id, got, _, state = peer.recv(POLL_BOUND)
        assert (wr_id, got, state) == (7, status, e.IBV_QPS_ERR)
        me.send(2, b"next")
        wc = me.completion()
        assert (wc.wr_id, wc.status) == (2, e.IBV_WC_WR_FLUSH_ERR)
        event = bounded(me.ctx.get_async_event)
        assert (event.event_type, event.element.qp is me.qp) == (e.IBV_EVENT_QP_FATAL, True)
        event.ack()
        assert me.qp.qp_state == e.IBV_QPS_ERR
        peer.send("end")
        peer.join()
    finally:
        me.close()


def _srq_responder(ch):
    """A spawned responder whose QP takes its receives from an SRQ."""
    end = End()
    srq = SRQ(end.pd, SrqInitAttr(SrqAttr(max_wr=8)))
    qp = QP(end.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=end.cq, rcq=end.cq, srq=srq), QPAttr())
    _connected(ch, qp, lambda dest: qp.to_rts(_towards(dest)))
    srq.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[end.sge(0, 64)]))
    ch.send("waiting")
    ch.recv(timeout=60)
    wc = end.completion()
    ch.send((wc.wr_id, wc.status, end.mr.read(wc.byte_len, 0)))
    ch.recv(timeout=60)
    end.close()


def _towards(dest_qp_num):
    attr = QPAttr()
    attr.dest_qp_num = dest_qp_num
    return attr


def test_a_qp_on_an_srq_acks_only_what_it_took(spawn):
    """An SRQ's receives go to whichever of its QPs a message reaches first, so none
    is known to wait for a given connection: the send waits for the responder."""
    peer = spawn(_srq_responder)
    me = End()
    try:
        me.connect(peer.recv())
        peer.send(me.qp.qp_num)
        assert peer.recv() == "waiting"
        me.send(1, b"shared")
        _no_completion(me)
        peer.send("go")
        assert peer.recv(POLL_BOUND) == (7, e.IBV_WC_SUCCESS, b"shared")
        wc = me.completion()
        assert (wc.wr_id, wc.status) == (1, e.IBV_WC_SUCCESS)
        peer.send("end")
        peer.join()
    finally:
        me.close()
