"""Receiver not ready on RC QPs: a send that finds no receive is NAKed by the
responder; the requester retries rnr_retry times (7: for ever), the responder's
min_rnr_timer apart, then completes it with IBV_WC_RNR_RETRY_EXC_ERR."""

import pytest

from shmdat.hw import ring
from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.qp import RNR_TIMER_US

from tests.verbs_ends import End, POLL_BOUND, bounded


def _pair(rnr_retry, min_rnr_timer=1):
    """a (the requester) retries rnr_retry times; b (the responder) asks for min_rnr_timer."""
    a, b = End(), End()
    a.connect(b.qp.qp_num, rnr_retry=rnr_retry)
    b.connect(a.qp.qp_num, min_rnr_timer=min_rnr_timer)
    return a, b


def test_the_rnr_timer_table():
    assert len(RNR_TIMER_US) == 32
    assert (RNR_TIMER_US[0], RNR_TIMER_US[1], RNR_TIMER_US[12], RNR_TIMER_US[31]) == (655360, 10, 640, 491520)


@pytest.mark.parametrize("rnr_retry", [0, 2])
def test_no_receive_ends_in_rnr_retry_exceeded_and_flushes_after_it(rnr_retry):
    a, b = _pair(rnr_retry)
    try:
        a.send(1, b"nobody listens")
        a.send(2, b"behind it", offset=100)
        wc = a.completion()
        assert (wc.wr_id, wc.status, wc.opcode) == (1, e.IBV_WC_RNR_RETRY_EXC_ERR, e.IBV_WC_SEND)
        wc = a.completion()
        assert (wc.wr_id, wc.status) == (2, e.IBV_WC_WR_FLUSH_ERR)
        assert a.qp.qp_state == e.IBV_QPS_ERR
    finally:
        a.close()
        b.close()


def test_rnr_retry_7_waits_until_a_receive_comes():
    a, b = _pair(7)
    try:
        a.send(1, b"patience")
        for _ in range(50):                     # the device runs in each poll: NAK after NAK
            assert a.cq.poll() == (0, [])
        assert a.qp.qp_state == e.IBV_QPS_RTS
        b.recv(9)
        wc = b.completion()
        assert (wc.wr_id, wc.status, b.mr.read(8, 0)) == (9, e.IBV_WC_SUCCESS, b"patience")
        wc = a.completion()
        assert (wc.wr_id, wc.status) == (1, e.IBV_WC_SUCCESS)
    finally:
        a.close()
        b.close()


def test_a_send_completes_only_once_the_responder_took_it(verbs_pair):
    a, b = verbs_pair                           # RC: the completion is the responder's ack
    a.send(1, b"acked")
    assert a.cq.poll() == (0, [])
    b.recv(2)
    assert b.completion().wr_id == 2
    assert a.completion().wr_id == 1


def _requester(ch, rnr_retry):
    """A spawned requester: one send to the test's QP, whose completion it reports."""
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv(), rnr_retry=rnr_retry)
    end.send(1, b"across")
    ch.send(end.completion().status)
    ch.recv(timeout=60)
    end.close()


def test_rnr_across_processes(spawn):
    peer = spawn(_requester, 3)
    me = End()
    try:
        me.connect(peer.recv(), min_rnr_timer=1)
        peer.send(me.qp.qp_num)
        while not peer.ready(0.01):        # our device NAKs while we poll with no receive
            me.cq.poll()
        assert peer.recv() == e.IBV_WC_RNR_RETRY_EXC_ERR
        peer.send("end")
        peer.join(POLL_BOUND)
    finally:
        me.close()


def _gives_up(ch):
    """A spawned requester with rnr_retry 0: one send, whose status it reports."""
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv(), rnr_retry=0)
    end.send(1, b"given up")
    ch.send(end.completion().status)
    ch.recv(timeout=60)
    end.close()


def test_the_requester_and_the_responder_agree_on_a_send_given_up(spawn):
    """The responder NAKs, then gets a receive while the requester gives up: either
    the send succeeded and the message arrived, or it failed and never arrives."""
    peer = spawn(_gives_up)
    me = End()
    try:
        me.connect(peer.recv())
        peer.send(me.qp.qp_num)
        wire = bounded(lambda: _joined(me))
        nak = ring.W_NAK[wire.side]
        bounded(lambda: _poll_until(me, lambda: wire.words[nak] & 0xFF == ring.NAK_NOT_READY))
        peer.ready(1.0)                          # room for the requester to decide alone (it must not)
        me.recv(2)
        wc = me.completion()
        status = peer.recv()
        delivered = wc.status == e.IBV_WC_SUCCESS and me.mr.read(8, 0) == b"given up"
        assert (status == e.IBV_WC_SUCCESS) == delivered, (status, wc.status)
        assert status in (e.IBV_WC_SUCCESS, e.IBV_WC_RNR_RETRY_EXC_ERR)
        peer.send("end")
        peer.join()
    finally:
        me.close()


def _joined(end):
    """The QP's hardware connection, once the device has joined it to its peer."""
    while end.qp._qp is None:
        end.cq.poll()
    return end.qp._qp


def _poll_until(end, condition):
    while not condition():
        end.cq.poll()
