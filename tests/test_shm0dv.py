"""shm0's direct verbs (pyverbs.providers.shm0.shm0dv), each behaviour provoked: with
real processes wherever a peer is involved; every function's refusal of another
provider's object (EOPNOTSUPP) and of a wrong type (PyverbsUserError)."""

import collections
import ctypes
import errno
import fcntl
import os
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from shmdat.verbs import cmid as cmid_module
from shmdat.verbs import libibverbs_enums as e
from shmdat.hw import qpn
from shmdat.hw.progress import LIVENESS_SLICE
from shmdat.verbs.cmid import CMID, AddrInfo, CMEvent, CMEventChannel, ConnParam
from shmdat.verbs.cq import CQ
from shmdat.verbs.device import Context
from shmdat.verbs.librdmacm_enums import RAI_PASSIVE, rdma_cm_event_type as ET
from shmdat.verbs.providers.shm0 import shm0dv
from shmdat.verbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.qp import QP, QPAttr, QPCap, QPInitAttr
from shmdat.verbs.srq import SRQ, SrqAttr, SrqInitAttr
from shmdat.verbs.wr import SGE, RecvWR, SendWR

from tests.conftest import _Peers
from tests.verbs_ends import POLL_BOUND, End, bounded, qp_attr


@pytest.fixture(autouse=True)
def _rdma_cm_context_closes():
    """rdma_cm's Context of this process closes after each test (the leak check)."""
    yield
    if cmid_module._the_agent is not None:
        cmid_module._the_agent.ctx.close()


def _until(condition, step):
    """Run step() until condition() holds (bounded)."""
    end = time.monotonic() + POLL_BOUND
    while not condition():
        assert time.monotonic() < end, "the condition did not come true"
        step()


# events_pending

def test_events_pending_moves_with_async_and_cm_events_only(verbs_pair):
    a, b = verbs_pair
    before = shm0dv.events_pending(a.ctx)
    for _ in range(3):
        a.cq.poll()
        b.cq.poll()
    assert shm0dv.events_pending(a.ctx) == before            # quiet rounds: no move
    a.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)     # b's peer leaves
    _until(lambda: shm0dv.events_pending(a.ctx) != before, b.cq.poll)
    event = bounded(b.ctx.get_async_event)
    assert event.event_type == e.IBV_EVENT_QP_FATAL
    event.ack()
    queued = shm0dv.events_pending(b.ctx)
    cmid = CMID(CMEventChannel())
    cmid.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service="1"))     # ADDR_RESOLVED queued
    assert shm0dv.events_pending(a.ctx) == queued + 1


def test_progress_and_watch_answer_events_pending(verbs_pair):
    a, b = verbs_pair
    assert shm0dv.progress(a.ctx) == shm0dv.events_pending(a.ctx)
    assert shm0dv.watch(a.ctx) == shm0dv.events_pending(a.ctx)
    before = shm0dv.events_pending(b.ctx)
    a.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)     # b's peer leaves
    _until(lambda: shm0dv.progress(b.ctx) != before, lambda: None)   # progress alone notices
    assert shm0dv.watch(b.ctx) == shm0dv.events_pending(b.ctx) != before


# completions_made

def test_completions_made_moves_with_each_completion_only(verbs_pair):
    a, b = verbs_pair
    before = shm0dv.completions_made(b.ctx)
    for _ in range(3):
        b.cq.poll()
    assert shm0dv.completions_made(b.ctx) == before           # quiet rounds: no move
    b.recv(1)
    a.send(2, b"x")
    _until(lambda: shm0dv.completions_made(b.ctx) == before + 1, b.cq.poll)
    b.cq.poll()                                               # taking it does not move it
    assert shm0dv.completions_made(b.ctx) == before + 1


# block and wake

def _sender(ch):
    """Connect, then send one message when told."""
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    ch.recv()
    end.send(1, b"wake up")
    assert end.completion().status == e.IBV_WC_SUCCESS
    ch.send("sent")
    ch.recv(timeout=60)


def test_block_returns_when_a_peers_message_makes_ready_true(spawn):
    peer = spawn(_sender)
    me = End()
    try:
        me.connect_to(peer)
        me.recv(7)
        wcs = []

        def ready():
            if not wcs:
                wcs.extend(me.cq.poll()[1])
            return bool(wcs)

        peer.send("send")           # it sends while we sleep; our block runs the device
        assert shm0dv.block(me.ctx, ready, time.monotonic() + POLL_BOUND) is True
        assert (wcs[0].wr_id, wcs[0].status) == (7, e.IBV_WC_SUCCESS)
        assert me.mr.read(7, 0) == b"wake up"
        peer.send("stop")
    finally:
        me.close()


def test_block_returns_false_at_its_deadline_without_spinning():
    ctx = Context(name="shm0")
    try:
        calls = []
        deadline = time.monotonic() + 0.3
        assert shm0dv.block(ctx, lambda: calls.append(1) and False, deadline) is False
        assert time.monotonic() >= deadline
        # It slept in slices of LIVENESS_SLICE (50 ms), looking twice a slice at most:
        # a spinning wait would have asked thousands of times.
        assert len(calls) <= 2 * (0.3 / LIVENESS_SLICE + 2)
    finally:
        ctx.close()


def test_wake_from_another_thread_ends_a_block():
    ctx = Context(name="shm0")
    try:
        asked = threading.Event()

        def ready():
            asked.set()
            return False

        blocked = threading.Thread(target=lambda: outcome.append(shm0dv.block(ctx, ready, None)))
        outcome = []
        blocked.start()
        assert asked.wait(POLL_BOUND)
        shm0dv.wake(ctx)
        blocked.join(POLL_BOUND)
        assert not blocked.is_alive() and outcome == [False]
        shm0dv.wake(ctx)                        # nobody blocked: a wake is not kept for later
        assert shm0dv.block(ctx, lambda: False, time.monotonic() + 0.1) is False
    finally:
        ctx.close()


def test_a_signal_handler_that_returns_interrupts_block_with_interrupted_error():
    ctx = Context(name="shm0")
    handled = []
    previous = signal.signal(signal.SIGALRM, lambda *_: handled.append(1))
    try:
        # Repeated, so that one lands while the thread sleeps on the doorbell.
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
        with pytest.raises(InterruptedError):
            shm0dv.block(ctx, lambda: False, time.monotonic() + POLL_BOUND)
        assert handled
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        ctx.close()


def test_block_on_a_closed_context_is_ebadf():
    ctx = Context(name="shm0")
    ctx.close()
    with pytest.raises(PyverbsRDMAError) as err:
        shm0dv.block(ctx, lambda: True, None)
    assert err.value.error_code == errno.EBADF


def test_block_refuses_a_ready_that_is_not_callable_and_a_deadline_that_is_not_a_time():
    ctx = Context(name="shm0")
    try:
        with pytest.raises(PyverbsUserError, match="ready"):
            shm0dv.block(ctx, True, None)
        with pytest.raises(PyverbsUserError, match="deadline"):
            shm0dv.block(ctx, lambda: True, "soon")
    finally:
        ctx.close()


# watch

def _connected_peer(ch):
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    ch.send("connected")
    ch.recv(timeout=60)                     # until killed


def test_watch_alone_finds_a_dead_peer_qp_fatal(spawn):
    peer = spawn(_connected_peer)
    me = End()
    try:
        me.connect_to(peer)
        assert peer.recv() == "connected"
        me.cq.poll()                        # joined the peer's QP
        peer.kill(signal.SIGKILL)
        peer.process.join(POLL_BOUND)
        _until(lambda: me.qp.qp_state == e.IBV_QPS_ERR, lambda: shm0dv.watch(me.ctx))
        assert select.select([me.ctx.async_fd], [], [], 0)[0]      # queued, no progress run
        event = bounded(me.ctx.get_async_event)
        assert (event.event_type, event.element.qp) == (e.IBV_EVENT_QP_FATAL, me.qp)
        event.ack()
    finally:
        me.close()


# cm_channel_fd

def _readable(fd):
    return bool(select.select([fd], [], [], 0)[0])


def _non_blocking(channel):
    fd = shm0dv.cm_channel_fd(channel)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    return fd


def _eagain(channel):
    with pytest.raises(PyverbsRDMAError) as err:
        CMEvent(channel)
    return err.value.error_code == errno.EAGAIN


def test_cm_channel_fd_is_readable_while_events_wait_and_non_blocking_gets_eagain():
    channel = CMEventChannel()
    fd = _non_blocking(channel)
    assert _eagain(channel) and not _readable(fd)
    cmid = CMID(channel)
    cmid.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service="1"))
    assert _readable(fd)
    assert bounded(lambda: CMEvent(channel)).event_type == ET.RDMA_CM_EVENT_ADDR_RESOLVED
    assert not _readable(fd) and _eagain(channel)
    cmid.resolve_route()
    assert bounded(lambda: CMEvent(channel)).event_type == ET.RDMA_CM_EVENT_ROUTE_RESOLVED
    assert _eagain(channel)
    channel.close()
    with pytest.raises(PyverbsRDMAError) as err:
        shm0dv.cm_channel_fd(channel)
    assert err.value.error_code == errno.EBADF


def test_cm_channel_fd_made_late_is_readable_for_events_already_queued():
    channel = CMEventChannel()
    CMID(channel).resolve_addr(AddrInfo(dst="127.0.0.1", dst_service="1"))
    assert _readable(shm0dv.cm_channel_fd(channel))
    assert shm0dv.cm_channel_fd(channel) == shm0dv.cm_channel_fd(channel)     # one fd


def _connector(ch, port):
    channel = CMEventChannel()
    cmid = CMID(channel)
    cmid.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service=str(port)))
    assert bounded(lambda: CMEvent(channel)).event_type == ET.RDMA_CM_EVENT_ADDR_RESOLVED
    cmid.resolve_route()
    assert bounded(lambda: CMEvent(channel)).event_type == ET.RDMA_CM_EVENT_ROUTE_RESOLVED
    param = ConnParam(qp_num=1)
    cmid.connect(param)
    ch.send("requested")
    ch.recv(timeout=60)


def test_a_non_blocking_get_runs_the_device_for_a_peers_request(spawn):
    channel = CMEventChannel()
    listener = CMID(channel)
    listener.bind_addr(AddrInfo(src="127.0.0.1", src_service="0", flags=RAI_PASSIVE))
    listener.listen()
    _non_blocking(channel)
    peer = spawn(_connector, listener.src_addr[1])
    assert peer.recv() == "requested"
    events = []

    def get():
        try:
            events.append(CMEvent(channel))
        except PyverbsRDMAError as err:
            assert err.error_code == errno.EAGAIN

    _until(lambda: events, get)         # only our non-blocking gets run the device here
    assert events[0].event_type == ET.RDMA_CM_EVENT_CONNECT_REQUEST
    peer.send("stop")


# cm_set_private_data_limit, and a dead peer's DISCONNECTED

LIMIT = 256


def _param(data, qp_num=1):
    param = ConnParam(qp_num=qp_num, data_len=len(data))
    param.set_private_data(data)
    return param


def _cm_event(channel, expected):
    event = bounded(lambda: CMEvent(channel))
    assert event.event_type == expected, event.event_str()
    event.ack_cm_event()
    return event


def _routed(channel, port, limit=None):
    cmid = CMID(channel)
    if limit is not None:
        shm0dv.cm_set_private_data_limit(cmid, limit)
    cmid.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service=str(port)))
    _cm_event(channel, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
    cmid.resolve_route()
    _cm_event(channel, ET.RDMA_CM_EVENT_ROUTE_RESOLVED)
    return cmid


def _large_connector(ch, port):
    """Connect with LIMIT bytes of private data (after one byte more is refused), report
    the reply's private data, then follow the test's orders."""
    channel = CMEventChannel()
    cmid = _routed(channel, port, LIMIT)
    with pytest.raises(PyverbsRDMAError) as err:
        cmid.connect(_param(bytes(LIMIT + 1)))
    ch.send(err.value.error_code)
    cmid.connect(_param(bytes(range(LIMIT))))
    ch.send(_cm_event(channel, ET.RDMA_CM_EVENT_CONNECT_RESPONSE).private_data)
    cmid.establish()
    if ch.recv() == "disconnect":
        cmid.disconnect()
    ch.recv(timeout=60)                     # until the test ends or kills us


def _listener(channel, limit=None):
    listener = CMID(channel)
    if limit is not None:
        shm0dv.cm_set_private_data_limit(listener, limit)
    listener.bind_addr(AddrInfo(src="127.0.0.1", src_service="0", flags=RAI_PASSIVE))
    listener.listen()
    return listener


def _accepted(spawn):
    """A connection from a peer process with LIMIT bytes of private data each way:
    (peer, channel, the accepted CMID)."""
    channel = CMEventChannel()
    listener = _listener(channel, LIMIT)
    peer = spawn(_large_connector, listener.src_addr[1])
    assert peer.recv() == errno.EINVAL                  # LIMIT + 1 bytes
    request = _cm_event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST)
    assert request.private_data == bytes(range(LIMIT))
    child = CMID(request, listen_id=listener)           # the listener's limit is its
    for call in (lambda data: child.accept(_param(data)), child.reject):
        with pytest.raises(PyverbsRDMAError) as err:
            call(bytes(LIMIT + 1))
        assert err.value.error_code == errno.EINVAL
    child.accept(_param(bytes(reversed(range(LIMIT)))))
    assert peer.recv() == bytes(reversed(range(LIMIT)))
    _cm_event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    return peer, channel, child


def test_256_bytes_of_private_data_each_way_and_einval_one_byte_over(spawn):
    peer, _, _ = _accepted(spawn)
    peer.send("stay")


def test_a_reject_carries_the_limits_private_data():
    channel = CMEventChannel()
    listener = _listener(channel, LIMIT)
    active = _routed(channel, listener.src_addr[1], LIMIT)
    active.connect(_param(b"knock"))
    request = _cm_event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST)
    CMID(request, listen_id=listener).reject(b"r" * LIMIT)
    rejected = _cm_event(channel, ET.RDMA_CM_EVENT_REJECTED)
    assert (rejected.status, rejected.private_data) == (28, b"r" * LIMIT)


def test_a_limit_below_ib_cms_holds_too_and_over_65000_is_einval():
    channel = CMEventChannel()
    listener = _listener(channel)
    active = _routed(channel, listener.src_addr[1], 8)
    with pytest.raises(PyverbsRDMAError) as err:
        active.connect(_param(bytes(9)))
    assert err.value.error_code == errno.EINVAL
    with pytest.raises(PyverbsRDMAError) as err:
        shm0dv.cm_set_private_data_limit(active, 65001)
    assert err.value.error_code == errno.EINVAL
    with pytest.raises(PyverbsUserError, match="nbytes"):
        shm0dv.cm_set_private_data_limit(active, "256")
    shm0dv.cm_set_private_data_limit(active, 65000)
    active.connect(_param(bytes(65000)))
    assert len(_cm_event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST).private_data) == 65000


def test_a_dead_peers_disconnected_has_status_econnreset(spawn):
    peer, channel, _ = _accepted(spawn)
    peer.kill(signal.SIGKILL)
    peer.process.join(POLL_BOUND)
    assert _cm_event(channel, ET.RDMA_CM_EVENT_DISCONNECTED).status == -errno.ECONNRESET


def test_a_peers_dreq_gives_disconnected_with_status_0(spawn):
    peer, channel, _ = _accepted(spawn)
    peer.send("disconnect")
    assert _cm_event(channel, ET.RDMA_CM_EVENT_DISCONNECTED).status == 0


# query_rq, srq_available, take_count, set_recv_credits

BIG = 1 << 20                   # a message that arrives in pieces: more than a ring holds


@pytest.fixture
def spawn_without_rendezvous():
    """spawn(target, *args) of peers whose sends are copied through the ring in records
    (SHMDAT_RDV_BYTES over BIG) of a small ring (SHMDAT_RING_KIB), never read by the
    receiver from the sender's memory in one go."""
    peers = _Peers({"SHMDAT_RDV_BYTES": str(4 * BIG), "SHMDAT_RING_KIB": "64"})
    yield peers.start
    peers.finish()
    qpn.reclaim_unused()


def _big_sender(ch):
    """Connect; when told, post one BIG send and run the device no more until told."""
    end = End()
    big = MR(end.pd, BIG, e.IBV_ACCESS_LOCAL_WRITE)
    big.write(bytes(range(256)) * (BIG // 256), BIG)
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    ch.recv()
    end.qp.post_send(SendWR(wr_id=1, num_sge=1, sg=[SGE(big.buf, BIG, big.lkey)]))
    ch.send("posted")
    ch.recv()
    assert end.completion().status == e.IBV_WC_SUCCESS       # runs the device: the rest goes
    ch.send("sent")
    ch.recv(timeout=60)


def test_query_rq_filling_while_a_large_message_arrives_in_pieces(spawn_without_rendezvous):
    peer = spawn_without_rendezvous(_big_sender)
    me = End()
    try:
        big = MR(me.pd, BIG, e.IBV_ACCESS_LOCAL_WRITE)
        me.qp.post_recv(RecvWR(wr_id=9, num_sge=1, sg=[SGE(big.buf, BIG, big.lkey)]))
        me.connect_to(peer)
        assert shm0dv.query_rq(me.qp) == (1, False, False)
        peer.send("post")
        assert peer.recv() == "posted"          # the first pieces are in the ring
        _until(lambda: shm0dv.query_rq(me.qp).filling, me.cq.poll)
        assert shm0dv.query_rq(me.qp) == (0, True, False)      # taken, being filled
        assert shm0dv.take_count(me.qp) == 1
        assert me.cq.poll() == (0, [])
        peer.send("go on")
        wcs = []
        _until(lambda: wcs, lambda: wcs.extend(me.cq.poll()[1]))
        assert (wcs[0].wr_id, wcs[0].status, wcs[0].byte_len) == (9, e.IBV_WC_SUCCESS, BIG)
        assert big.read(BIG, 0) == bytes(range(256)) * (BIG // 256)
        assert shm0dv.query_rq(me.qp) == (0, False, False)
        assert peer.recv() == "sent"
        peer.send("stop")
    finally:
        me.close()


def _two_sender(ch):
    """Connect; when told, send two messages; then wait to be stopped (its QP breaks)."""
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    ch.recv()
    end.send(1, b"one")
    end.send(2, b"two", offset=64)
    ch.send("sent")
    ch.recv(timeout=60)


class _SrqEnd:
    """An RC QP on an SRQ, with `receives` posted to the SRQ."""

    def __init__(self, receives):
        self.ctx = Context(name="shm0")
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 16)
        self.mr = MR(self.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=8)))
        for i in range(receives):
            self.srq.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(self.mr.buf + 64 * i, 64,
                                                                  self.mr.lkey)]))
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                         srq=self.srq, cap=QPCap(max_recv_wr=0)), qp_attr())


def test_credits_exhausted_is_qp_fatal_and_the_buffer_stays_on_the_srq(spawn):
    peer = spawn(_two_sender)
    me = _SrqEnd(receives=2)
    try:
        shm0dv.set_recv_credits(me.qp, 1)
        assert shm0dv.srq_available(me.srq) == 2
        End.connect(me, peer.recv())
        peer.send(me.qp.qp_num)
        peer.send("send")
        assert peer.recv() == "sent"
        wcs = []
        _until(lambda: me.qp.qp_state == e.IBV_QPS_ERR, lambda: wcs.extend(me.cq.poll()[1]))
        assert [(wc.wr_id, wc.status, wc.byte_len) for wc in wcs] == [(0, e.IBV_WC_SUCCESS, 3)]
        assert shm0dv.query_rq(me.qp) == (0, False, True)
        assert (shm0dv.take_count(me.qp), shm0dv.srq_available(me.srq)) == (1, 1)
        events = [bounded(me.ctx.get_async_event) for _ in range(2)]    # an SRQ's QP in ERR:
        assert {(ev.event_type, ev.element.qp) for ev in events} == {   # LAST_WQE_REACHED too
            (e.IBV_EVENT_QP_FATAL, me.qp), (e.IBV_EVENT_QP_LAST_WQE_REACHED, me.qp)}
        for ev in events:
            ev.ack()
        peer.send("stop")
    finally:
        me.ctx.close()


def _two_sender_reporting(ch):
    """Connect; when told, send two messages and report their completions' statuses."""
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    ch.recv()
    end.send(1, b"one")
    end.send(2, b"two", offset=64)
    ch.send(sorted((wc.wr_id, wc.status) for wc in (end.completion(), end.completion())))
    ch.recv(timeout=60)


def test_a_requester_of_another_process_completes_no_send_beyond_the_credits(spawn):
    peer = spawn(_two_sender_reporting)
    me = End()
    try:
        me.recv(1, length=64)
        me.recv(2, offset=64, length=64)
        shm0dv.set_recv_credits(me.qp, 1)   # the two receives are there, one may be taken
        me.connect_to(peer)
        peer.send("send")
        _until(lambda: me.qp.qp_state == e.IBV_QPS_ERR, me.cq.poll)
        assert shm0dv.query_rq(me.qp).credits_exhausted
        first, second = bounded(peer.recv)
        assert first == (1, e.IBV_WC_SUCCESS) and second[1] != e.IBV_WC_SUCCESS
        peer.send("stop")
    finally:
        me.close()


def test_take_count_and_credits_raised_or_lifted_between_messages(verbs_pair):
    a, b = verbs_pair
    for i in range(4):
        b.recv(i, offset=64 * i, length=64)
    assert shm0dv.query_rq(b.qp).posted == 4
    shm0dv.set_recv_credits(b.qp, 0)
    shm0dv.set_recv_credits(b.qp, 1)            # raised: one more from now
    a.send(1, b"first")
    assert b.completion().status == e.IBV_WC_SUCCESS
    assert (shm0dv.take_count(b.qp), shm0dv.query_rq(b.qp).posted) == (1, 3)
    shm0dv.set_recv_credits(b.qp, None)         # lifted
    a.send(2, b"second")
    a.send(3, b"third")
    assert [b.completion().status for _ in range(2)] == [e.IBV_WC_SUCCESS] * 2
    assert shm0dv.take_count(b.qp) == 3 and b.qp.qp_state == e.IBV_QPS_RTS
    assert shm0dv.query_rq(b.qp) == (1, False, False)
    with pytest.raises(PyverbsUserError, match="n must be"):
        shm0dv.set_recv_credits(b.qp, -1)


# context_lock

def test_context_lock_is_the_lock_block_releases_while_asleep():
    ctx = Context(name="shm0")
    try:
        lock = shm0dv.context_lock(ctx)
        entered = threading.Event()

        def other_thread():
            with lock:                      # gets in while the owner sleeps in block()
                entered.set()
                shm0dv.wake(ctx)

        with lock:
            thread = threading.Thread(target=other_thread)
            thread.start()
            assert shm0dv.block(ctx, entered.is_set, time.monotonic() + 30) is True
        thread.join(30)
        assert not thread.is_alive()
    finally:
        ctx.close()


# progress and poll_cq

def test_poll_cq_takes_what_is_there_and_progress_runs_the_device(verbs_pair):
    a, b = verbs_pair
    b.recv(1, 0, 64)
    a.send(1, b"hello")             # in the ring: b's device has not run since
    assert shm0dv.poll_cq(b.cq, 4) == (0, [])
    shm0dv.progress(b.ctx)
    n, wcs = shm0dv.poll_cq(b.cq, 4)
    assert n == 1 and (wcs[0].wr_id, wcs[0].status, wcs[0].byte_len) == (1, e.IBV_WC_SUCCESS, 5)
    with pytest.raises(PyverbsUserError, match="num_entries must be"):
        shm0dv.poll_cq(b.cq, -1)
    b.cq.close()
    with pytest.raises(PyverbsRDMAError) as err:
        shm0dv.poll_cq(b.cq, 1)
    assert err.value.error_code == errno.EBADF


def test_progress_locked_runs_the_device_under_the_lock_its_caller_holds(verbs_pair):
    a, b = verbs_pair
    b.recv(1, 0, 64)
    a.send(1, b"hello")
    with shm0dv.context_lock(b.ctx):
        assert shm0dv.progress_locked(b.ctx) == shm0dv.events_pending(b.ctx)
        assert shm0dv.poll_cq(b.cq, 4)[0] == 1
    b.ctx.close()
    with pytest.raises(PyverbsRDMAError) as err:
        shm0dv.progress_locked(b.ctx)
    assert err.value.error_code == errno.EBADF


def test_cq_sink_hands_each_completion_over_tagged_in_order_and_keeps_them_through_a_reset(verbs_pair):
    a, b = verbs_pair
    b.recv(0, 0, 64)
    a.send(0, b"before")
    _until(lambda: len(b.cq._wcs) == 1, lambda: shm0dv.progress(b.ctx))
    handed = collections.deque()
    shm0dv.cq_sink(b.cq, handed, "tag")          # what the CQ holds is handed over first
    assert [(tag, wc.wr_id, wc.byte_len) for tag, wc in handed] == [("tag", 0, 6)]
    handed.clear()
    for i in range(1, 4):
        b.recv(i, 64 * i, 64)
        a.send(i, b"x" * i)
    shm0dv.progress(b.ctx)
    assert [(tag, wc.wr_id, wc.byte_len) for tag, wc in handed] == [("tag", 1, 1), ("tag", 2, 2), ("tag", 3, 3)]
    assert b.cq.poll(4) == (0, [])               # poll_cq finds none: they were handed over
    # A QP that goes to RESET takes back nothing handed over; a flush is handed over too.
    b.recv(4, 0, 64)
    a.send(4, b"late")
    shm0dv.progress(b.ctx)
    b.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    assert [wc.wr_id for _, wc in handed][-1] == 4
    b.qp.to_init(qp_attr())
    b.recv(5, 0, 64)
    b.qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    assert (handed[-1][1].wr_id, handed[-1][1].status) == (5, e.IBV_WC_WR_FLUSH_ERR)


def test_cq_sink_none_keeps_completions_for_poll_cq_again_and_a_sunk_cq_never_overruns(verbs_pair):
    a, b = verbs_pair
    handed = []
    shm0dv.cq_sink(b.cq, handed)
    b.cq.resize(1)
    for i in range(3):                           # more than cqe: the consumer bounds its queue
        b.recv(i)
        a.send(i, b"m")
    _until(lambda: len(handed) == 3, lambda: shm0dv.progress(b.ctx))
    assert not b.cq.overrun and [tag for tag, _ in handed] == [None] * 3
    shm0dv.cq_sink(b.cq, None)
    b.recv(3)
    a.send(3, b"polled")
    _until(lambda: b.cq._wcs, lambda: shm0dv.progress(b.ctx))
    assert [wc.wr_id for wc in b.cq.poll(1)[1]] == [3] and len(handed) == 3


def test_cq_sink_direct_takes_successful_completions_with_no_wc_made(verbs_pair):
    a, b = verbs_pair
    taken, handed = [], []

    def direct(wr_id, byte_len, qp_num, solicited):
        taken.append((wr_id, byte_len, qp_num, solicited))
        return True

    shm0dv.cq_sink(a.cq, handed, "a", direct)       # a's CQ holds its send completions
    shm0dv.cq_sink(b.cq, handed, "b", direct)
    made = shm0dv.completions_made(b.ctx)
    b.recv(1, 0, 64)
    b.recv(2, 64, 64)
    a.send(11, b"plain")
    a.send(12, b"wake up", 128, e.IBV_SEND_SIGNALED | e.IBV_SEND_SOLICITED)
    _until(lambda: len(taken) == 4, lambda: shm0dv.progress(b.ctx))
    assert sorted(taken) == [(1, 5, b.qp.qp_num, False), (2, 7, b.qp.qp_num, True),
                             (11, 5, a.qp.qp_num, False), (12, 7, a.qp.qp_num, False)]
    assert handed == [] and b.cq.poll(4) == (0, []) and a.cq.poll(4) == (0, [])
    assert shm0dv.completions_made(b.ctx) == made           # no CQ holds them: none to poll


def test_cq_sink_direct_refusal_errors_immediate_data_and_an_armed_cq_go_to_the_queue(verbs_pair):
    a, b = verbs_pair
    answer, offered, handed = [False], [], collections.deque()

    def direct(wr_id, byte_len, qp_num, solicited):
        offered.append(wr_id)
        return answer[0]

    shm0dv.cq_sink(b.cq, handed, "b", direct)
    b.recv(1)                               # refused: handed over as a WC, as without direct
    a.send(1, b"refused")
    _until(lambda: handed, lambda: shm0dv.progress(b.ctx))
    assert offered == [1] and [(wc.wr_id, wc.byte_len, wc.src_qp) for _, wc in handed] == \
        [(1, 7, a.qp.qp_num)]
    answer[0] = True
    b.recv(2)                               # immediate data: never offered (a WC carries it)
    wr = SendWR(wr_id=2, opcode=e.IBV_WR_SEND_WITH_IMM, num_sge=1, sg=[a.sge(0, 4)], imm_data=7)
    a.qp.post_send(wr)
    _until(lambda: len(handed) == 2, lambda: shm0dv.progress(b.ctx))
    assert offered == [1] and handed[-1][1].imm_data == 7
    armed, sender = End(channel=True), End()    # an armed CQ: its channel must hear of it
    try:
        armed.connect(sender.qp.qp_num)
        sender.connect(armed.qp.qp_num)
        shm0dv.cq_sink(armed.cq, handed, "armed", direct)
        armed.cq.req_notify()
        armed.recv(3)
        sender.send(3, b"notify")
        _until(lambda: len(handed) == 3, lambda: shm0dv.progress(armed.ctx))
        assert offered == [1] and (handed[-1][0], handed[-1][1].wr_id) == ("armed", 3)
        assert select.select([armed.channel.fd], [], [], POLL_BOUND)[0]     # (bounded: then no wait)
        armed.channel.get_cq_event(armed.cq)
        assert armed.cq.num_events == 1
        armed.cq.ack_events(1)
    finally:
        sender.close()
        armed.close()
    b.recv(5)                               # an error is never offered: flushed into the queue
    b.qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    assert offered == [1] and (handed[-1][1].wr_id, handed[-1][1].status) == (5, e.IBV_WC_WR_FLUSH_ERR)


def test_cq_sink_refuses_what_is_not_a_queue_or_an_open_cq(verbs_pair):
    a, b = verbs_pair
    with pytest.raises(PyverbsUserError, match="queue must be"):
        shm0dv.cq_sink(b.cq, "a queue")
    with pytest.raises(PyverbsUserError, match="cq must be"):
        shm0dv.cq_sink("a CQ", [])
    with pytest.raises(PyverbsUserError, match="direct must be"):
        shm0dv.cq_sink(b.cq, [], None, "not callable")
    with pytest.raises(PyverbsUserError, match="direct must be"):
        shm0dv.cq_sink(b.cq, None, None, lambda *completion: True)    # nowhere for the rest
    b.cq.close()
    with pytest.raises(PyverbsRDMAError) as err:
        shm0dv.cq_sink(b.cq, [])
    assert err.value.error_code == errno.EBADF


# wc_solicited

def test_wc_solicited_says_which_receives_a_solicited_send_took(verbs_pair):
    a, b = verbs_pair
    b.recv(1, 0, 64)
    b.recv(2, 64, 64)
    a.send(1, b"plain")
    a.send(2, b"wake up", 128, e.IBV_SEND_SIGNALED | e.IBV_SEND_SOLICITED)
    plain, solicited = b.completion(), b.completion()
    assert (plain.wr_id, solicited.wr_id) == (1, 2)
    assert (shm0dv.wc_solicited(plain), shm0dv.wc_solicited(solicited)) == (False, True)
    with pytest.raises(PyverbsUserError, match="wc must be"):
        shm0dv.wc_solicited("a WC")


# consumer_memory_remote_ok, max_mr_size

def test_consumer_memory_remote_ok_says_what_mr_with_an_address_does():
    ctx = Context(name="shm0")
    try:
        ok, why = shm0dv.consumer_memory_remote_ok(ctx)
        assert isinstance(ok, bool) and why
        buffer = ctypes.create_string_buffer(4096)
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ
        if ok:
            MR(PD(ctx), 4096, access, address=ctypes.addressof(buffer)).close()
        else:
            with pytest.raises(PyverbsRDMAError) as err:
                MR(PD(ctx), 4096, access, address=ctypes.addressof(buffer))
            assert err.value.error_code == errno.EOPNOTSUPP and why in str(err.value)
    finally:
        ctx.close()


def test_max_mr_size_is_dev_shms_free_space():
    ctx = Context(name="shm0")
    try:
        size = ctx.query_device().max_mr_size
        st = os.statvfs("/dev/shm")
        # Free space moves as other tests run: it is a whole number of the file
        # system's blocks, and no more than /dev/shm holds (never 1 TiB, as it was).
        assert 0 < size <= st.f_blocks * st.f_frsize and size % st.f_frsize == 0
    finally:
        ctx.close()


# Every function refuses what is not shm0's.

def _foreign(kind):
    """An object of another provider's verbs class `kind` (rdma-core's pyverbs on a NIC
    has classes of the same names)."""
    return type(kind, (), {"__module__": "pyverbs.other"})()


# function -> the kind of object it takes first, and the arguments after it
FOREIGN = {
    shm0dv.events_pending: ("Context", ()),
    shm0dv.completions_made: ("Context", ()),
    shm0dv.cq_sink: ("CQ", ([],)),
    shm0dv.context_lock: ("Context", ()),
    shm0dv.progress: ("Context", ()),
    shm0dv.progress_locked: ("Context", ()),
    shm0dv.poll_cq: ("CQ", (1,)),
    shm0dv.block: ("Context", (lambda: True, None)),
    shm0dv.wake: ("Context", ()),
    shm0dv.watch: ("Context", ()),
    shm0dv.cm_channel_fd: ("CMEventChannel", ()),
    shm0dv.cm_set_private_data_limit: ("CMID", (LIMIT,)),
    shm0dv.query_rq: ("QP", ()),
    shm0dv.srq_available: ("SRQ", ()),
    shm0dv.take_count: ("QP", ()),
    shm0dv.set_recv_credits: ("QP", (1,)),
    shm0dv.consumer_memory_remote_ok: ("Context", ()),
    shm0dv.wc_solicited: ("WC", ()),
}


@pytest.mark.parametrize("function", list(FOREIGN), ids=lambda f: f.__name__)
def test_another_providers_object_is_eopnotsupp(function):
    kind, args = FOREIGN[function]
    with pytest.raises(PyverbsRDMAError) as err:
        function(_foreign(kind), *args)
    assert err.value.error_code == errno.EOPNOTSUPP
    assert function.__name__ in str(err.value)


@pytest.mark.parametrize("function", list(FOREIGN), ids=lambda f: f.__name__)
@pytest.mark.parametrize("wrong", ["shm0", None, 1, b"\0"])
def test_a_wrong_type_is_a_pyverbs_user_error(function, wrong):
    _, args = FOREIGN[function]
    with pytest.raises(PyverbsUserError, match="must be a"):
        function(wrong, *args)


def test_the_module_is_pyverbs_providers_shm0_shm0dv_under_the_shim(tmp_path):
    program = tmp_path / "app.py"
    program.write_text("import pyverbs.providers.shm0.shm0dv as dv\n"
                       "import shmdat.verbs.providers.shm0.shm0dv as real\n"
                       "print(dv is real, callable(dv.events_pending))\n")
    done = subprocess.run([sys.executable, "-m", "shmdat.verbs", str(program)],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr
