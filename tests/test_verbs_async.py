"""ibv_get_async_event(3) on shm0, sentence by sentence: the events the device
raises, their elements, ack, destroy waiting for acks, async_fd in non-blocking
mode (the man page's example), and one event per thread."""

import errno
import fcntl
import os
import select
import signal
import threading
import time

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.pyverbs_error import PyverbsRDMAError
from shmdat.verbs.qp import QP, QPAttr, QPInitAttr
from shmdat.verbs.wr import SendWR

from tests.verbs_ends import End, bounded

BOUND = 10.0            # seconds for anything that must happen


def _peer(ch):
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    ch.send("connected")
    ch.recv(timeout=60)                          # until killed


def test_a_dead_peer_is_qp_fatal_with_its_qp(spawn):
    peer = spawn(_peer)
    me = End()
    try:
        me.connect_to(peer)
        assert peer.recv() == "connected"
        peer.kill(signal.SIGKILL)
        peer.process.join(10)
        event = bounded(me.ctx.get_async_event)  # blocks, running the device, until it comes
        assert event.event_type == e.IBV_EVENT_QP_FATAL and event.element.qp is me.qp
        assert me.qp.qp_state == e.IBV_QPS_ERR
        event.ack()
    finally:
        me.close()


def test_the_man_pages_non_blocking_example(verbs_pair):
    a, b = verbs_pair
    # 1. Set the async events queue work mode to be non-blocked
    flags = fcntl.fcntl(a.ctx.async_fd, fcntl.F_GETFL)
    fcntl.fcntl(a.ctx.async_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    with pytest.raises(PyverbsRDMAError) as err:
        a.ctx.get_async_event()                  # nothing queued
    assert err.value.error_code == errno.EAGAIN
    b.close()                                    # the peer goes away: a's QP will fail
    # 2. Poll the queue until it has an async event (the device runs in our polls)
    poller = select.poll()
    poller.register(a.ctx.async_fd, select.POLLIN)
    for _ in range(int(BOUND / 0.01)):
        a.cq.poll()
        if poller.poll(10):
            break
    # 3. Get the async event and ack it
    event = bounded(a.ctx.get_async_event)
    assert event.event_type == e.IBV_EVENT_QP_FATAL
    event.ack()
    assert not poller.poll(0)


def test_comm_est_for_the_first_message_at_a_qp_in_rtr():
    a, b = End(), End()
    try:
        attr = QPAttr()
        attr.dest_qp_num = a.qp.qp_num
        b.qp.to_rtr(attr)                        # RTR, not RTS
        b.recv(1)
        a.connect(b.qp.qp_num)
        a.send(1, b"first")
        assert b.completion().wr_id == 1
        event = bounded(b.ctx.get_async_event)
        assert event.event_type == e.IBV_EVENT_COMM_EST and event.element.qp is b.qp
        event.ack()
    finally:
        a.close()
        b.close()


def test_cq_overrun_is_cq_err_and_its_qps_fail(verbs_pair):
    a, b = verbs_pair
    b.cq.resize(1)
    b.recv(1)
    b.recv(2)
    a.send(1, b"one")
    a.send(2, b"two")
    with pytest.raises(PyverbsRDMAError) as err:
        for _ in range(1000):
            b.cq.poll(0)                         # moves the device, takes nothing
    assert err.value.error_code == errno.EOVERFLOW
    events = [bounded(b.ctx.get_async_event) for _ in range(2)]
    assert {ev.event_type for ev in events} == {e.IBV_EVENT_CQ_ERR, e.IBV_EVENT_QP_FATAL}
    assert b.qp.qp_state == e.IBV_QPS_ERR
    for ev in events:
        ev.ack()                                 # else closing the CQ and QP would wait for ever


def test_destroy_waits_until_the_event_is_acked(verbs_pair):
    a, b = verbs_pair
    a.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)    # b's peer leaves
    for _ in range(1000):
        b.cq.poll()
        if select.select([b.ctx.async_fd], [], [], 0)[0]:
            break
    event = bounded(b.ctx.get_async_event)
    assert event.element.qp is b.qp
    closer = threading.Thread(target=b.qp.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive() and not b.qp._closed       # held by the event we have not acked
    event.ack()
    closer.join(BOUND)
    assert not closer.is_alive() and b.qp._closed


def test_each_event_goes_to_one_thread():
    a, b, c = End(), End(), End()
    second = QP(a.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=a.cq, rcq=a.cq), QPAttr())
    try:
        a.connect(b.qp.qp_num)
        b.connect(a.qp.qp_num)
        attr = QPAttr()
        attr.dest_qp_num = c.qp.qp_num
        second.to_rts(attr)
        c.connect(second.qp_num)
        # A message on each of a's connections: both have joined their peers before the
        # peers leave (a QP that never reached its peer learns nothing of its leaving: with
        # no send outstanding there is nothing to fail, as on a wire; CI saw that race).
        b.recv(1)
        a.send(1, b"b")
        c.recv(2)
        second.post_send(SendWR(wr_id=2, num_sge=1, sg=[a.sge(0, 1)]))
        assert (b.completion().wr_id, c.completion().wr_id) == (1, 2)
        got = []
        threads = [threading.Thread(target=lambda: got.append(a.ctx.get_async_event()))
                   for _ in range(2)]
        for t in threads:
            t.start()
        b.close()                                # each of a's QPs loses its peer:
        c.close()                                # two events, one for each waiting thread
        for t in threads:
            t.join(BOUND)
        assert not any(t.is_alive() for t in threads)
        assert sorted(id(ev.element.qp) for ev in got) == sorted([id(a.qp), id(second)])
        for ev in got:
            ev.ack()
    finally:
        for end in (a, b, c):
            end.close()


def test_closing_the_context_releases_a_thread_blocked_in_get_async_event():
    end = End()
    outcome = []

    def wait():
        try:
            end.ctx.get_async_event()
        except PyverbsRDMAError as err:
            outcome.append(err.error_code)

    waiter = threading.Thread(target=wait)
    waiter.start()
    bounded(lambda: _wait_until(lambda: end.ctx._progress.blocked == 1))
    end.close()
    # close() returned only once the thread had left the device it unmapped.
    assert end.ctx._progress.blocked == 0
    waiter.join(BOUND)
    assert not waiter.is_alive() and outcome == [errno.EBADF]


def _wait_until(condition):
    """Poll `condition` (run under bounded(): a bug fails the test, not hangs it)."""
    while not condition():
        time.sleep(0.001)
