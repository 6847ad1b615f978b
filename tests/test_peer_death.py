"""A peer that dies (SIGKILL, exit without closing, close without disconnecting) at any
moment is seen as a broken or ended connection, never as silence."""

import os
import time

import pytest

import shmdat
from shmdat import DtoStatus, EpState, EventNumber as E, RmrTriplet

from tests.nodes import WAIT, Node

DEATH_BOUND = 5_000_000     # µs: a generous bound for noticing a death (the benchmark measures it)


def _serve(ch, conn_qual, then):
    """Accept one connection, tell the test, then do `then` until killed or finished."""
    n = Node(lmr_size=8 << 20)
    n.listen(conn_qual)
    ch.send(n.address)
    n.accept()
    if then == "idle":
        ch.send("connected")
        ch.recv(timeout=60)
    elif then == "rdma_target":
        ch.send(tuple(n.lmr.rmr_triplet(0, 1 << 20)))
        ch.send("connected")
        ch.recv(timeout=60)                # never calls shmdat again: the initiator does it all
    elif then == "rdma_write_loop" or then == "rdma_read_loop":
        target = RmrTriplet(*ch.recv())
        ch.send("connected")
        op = n.ep.post_rdma_write if then == "rdma_write_loop" else n.ep.post_rdma_read
        i = 0
        while True:                        # until killed
            op([n.lmr.triplet(0, target.segment_length)], i, target)
            n.dto_done()
            i += 1
            if i == 3:
                ch.send("copying")
    elif then == "big_send":               # SHMDAT_RDV_BYTES: the message arrives in pieces
        ch.send("connected")
        n.ep.post_send([n.lmr.triplet(0, 8 << 20)], "big")
        ch.send("sending")
        ch.recv(timeout=60)                # never progresses again: the message stays half-sent
    elif then == "exit_without_close":
        ch.send("connected")
        ch.recv(timeout=60)
        raise SystemExit(0)                # atexit closes the IA
    elif then == "os_exit":
        ch.send("connected")
        ch.recv(timeout=60)
        os._exit(0)                        # no atexit: as good as a crash
    elif then == "close_without_disconnect":
        ch.send("connected")
        ch.recv(timeout=60)
        n.ia.close()


@pytest.fixture
def node():
    n = Node(lmr_size=8 << 20)
    yield n
    n.close()


def connect(spawn, node, conn_qual, then, *extra):
    peer = spawn(_serve, conn_qual, then)
    address = peer.recv()
    node.ep.connect(address, conn_qual, WAIT)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
    for x in extra:
        peer.send(x)
    assert peer.recv() == "connected"
    return peer


def assert_broken(node, outstanding_cookies):
    """One BROKEN, every outstanding DTO flushed, the async EVD told."""
    node.expect(node.conn_evd, E.CONNECTION_EVENT_BROKEN, DEATH_BOUND)
    flushed = [node.dto_done(0) for _ in outstanding_cookies]
    assert [(d.user_cookie, d.status) for d in flushed] == \
        [(c, DtoStatus.ERR_FLUSHED) for c in outstanding_cookies]
    a = node.ia.async_evd.dequeue()
    assert a.number == E.ASYNC_ERROR_EP_BROKEN and a.data.handle is node.ep
    assert node.ep.state == EpState.DISCONNECTED
    with pytest.raises(shmdat.TimeoutExpired):
        node.conn_evd.wait(100_000)         # exactly one event


def test_sigkill_while_connected_and_idle(spawn, node, conn_qual):
    peer = connect(spawn, node, conn_qual, "idle")
    node.ep.post_recv([node.lmr.triplet(0, 64)], "r1")
    node.ep.post_recv([node.lmr.triplet(64, 64)], "r2")
    peer.kill()
    # a waiter blocked on its DTO EVD wakes with the flush
    start = time.monotonic()
    d = node.dto_done(DEATH_BOUND)
    waited = time.monotonic() - start
    assert (d.user_cookie, d.status) == ("r1", DtoStatus.ERR_FLUSHED)
    assert waited < DEATH_BOUND / 1e6
    assert_broken(node, ["r2"])


@pytest.mark.parametrize("op", ["rdma_write_loop", "rdma_read_loop"])
def test_sigkill_during_rdma(spawn, node, conn_qual, op):
    peer = connect(spawn, node, conn_qual, op, tuple(node.lmr.rmr_triplet(0, 4 << 20)))
    assert peer.recv() == "copying"
    node.ep.post_recv([node.lmr.triplet(0, 64)], "r")
    peer.kill()
    assert_broken(node, ["r"])


LIVENESS_PROMISE = 0.1      # seconds: the README's "never more than 100 ms"


@pytest.mark.parametrize("op", ["post_rdma_write", "post_rdma_read"])
def test_blind_rdma_initiator_learns_its_target_died(spawn, node, conn_qual, op):
    """An initiator that only posts RDMA and reaps completions already queued (so no
    wait ever blocks) learns of its target's SIGKILL within the promised bound."""
    peer = spawn(_serve, conn_qual, "rdma_target")
    address = peer.recv()
    node.ep.connect(address, conn_qual, WAIT)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
    target = RmrTriplet(*peer.recv())
    assert peer.recv() == "connected"
    post = getattr(node.ep, op)
    local = [node.lmr.triplet(0, target.segment_length)]

    def one(i):
        post(local, i, target)
        return node.dto_done().status

    for i in range(20):
        assert one(i) == DtoStatus.SUCCESS
    peer.kill()
    peer.process.join(peer_timeout := 10)
    assert not peer.process.is_alive(), f"the peer outlived SIGKILL by {peer_timeout} s"
    dead_at = time.monotonic()
    i = 20
    while one(i) == DtoStatus.SUCCESS:
        i += 1
        assert time.monotonic() - dead_at < 10, "the initiator never learned its target died"
    noticed = time.monotonic() - dead_at
    assert noticed <= LIVENESS_PROMISE, f"the death took {noticed * 1e3:.0f} ms to notice"
    assert one(i + 1) == DtoStatus.ERR_FLUSHED                  # later DTOs flush at once
    node.expect(node.conn_evd, E.CONNECTION_EVENT_BROKEN, 0)
    a = node.ia.async_evd.dequeue()
    assert a.number == E.ASYNC_ERROR_EP_BROKEN and a.data.handle is node.ep
    assert node.ep.state == EpState.DISCONNECTED


@pytest.mark.parametrize("call", ["dequeue", "evd_query", "ep_query"])
def test_any_call_notices_a_dead_peer(spawn, node, conn_qual, call):
    """dequeue and the queries run the liveness check too, not only waits."""
    peer = connect(spawn, node, conn_qual, "idle")
    peer.kill()
    peer.process.join(10)
    assert not peer.process.is_alive()
    dead_at = time.monotonic()
    probe = {"dequeue": lambda: _dequeue_or_none(node.conn_evd),
             "evd_query": lambda: node.conn_evd.query().evd_count or None,
             "ep_query": lambda: node.ep.query().ep_state == EpState.DISCONNECTED or None}[call]
    while probe() is None:
        assert time.monotonic() - dead_at < 10, f"{call} never noticed the dead peer"
    assert time.monotonic() - dead_at <= LIVENESS_PROMISE
    if call != "dequeue":
        node.expect(node.conn_evd, E.CONNECTION_EVENT_BROKEN, 0)


def _dequeue_or_none(evd):
    try:
        event = evd.dequeue()
    except shmdat.QueueEmpty:
        return None
    assert event.number == E.CONNECTION_EVENT_BROKEN
    return event


def test_sigkill_in_the_middle_of_a_large_message(spawn, node, conn_qual, monkeypatch):
    # The peer copies through the ring (no rendezvous), so the message arrives in pieces.
    monkeypatch.setenv("SHMDAT_RDV_BYTES", str(1 << 40))
    peer = connect(spawn, node, conn_qual, "big_send")
    node.ep.post_recv([node.lmr.triplet(0, 8 << 20)], "half")
    assert peer.recv() == "sending"
    with pytest.raises(shmdat.TimeoutExpired):
        node.dto.wait(200_000)              # the first part arrives, the rest cannot
    assert node.ep.recv_query()[0] == 1     # the receive is being filled
    peer.kill()
    assert_broken(node, ["half"])


def test_exit_without_closing_is_a_disconnect(spawn, node, conn_qual):
    peer = connect(spawn, node, conn_qual, "exit_without_close")
    peer.send("go")
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED, DEATH_BOUND)
    peer.process.join(10)


def test_close_without_disconnecting_is_a_disconnect(spawn, node, conn_qual):
    peer = connect(spawn, node, conn_qual, "close_without_disconnect")
    node.ep.post_recv([node.lmr.triplet(0, 64)], "r")
    peer.send("go")
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED, DEATH_BOUND)
    d = node.dto_done(0)
    assert (d.user_cookie, d.status) == ("r", DtoStatus.ERR_FLUSHED)
    peer.join()


def test_exit_without_atexit_is_broken(spawn, node, conn_qual):
    from shmdat.hw import shm
    peer = connect(spawn, node, conn_qual, "os_exit")
    peer.send("go")
    assert_broken(node, [])
    peer.process.join(10)
    shm.reclaim_dead()          # what it could not unlink, as the next ia_open would


def _request_then_die(ch, address, conn_qual):
    n = Node()
    n.ep.connect(address, conn_qual, WAIT)
    ch.send("requested")
    ch.recv(timeout=60)


def test_active_side_dies_during_setup(spawn, conn_qual):
    server = Node()
    try:
        server.listen(conn_qual)
        peer = spawn(_request_then_die, server.address, conn_qual)
        assert peer.recv() == "requested"
        cr = server.expect(server.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
        peer.kill()
        peer.process.join(10)
        cr.accept(server.ep)
        server.expect(server.conn_evd, E.CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, DEATH_BOUND)
        assert server.ep.state == EpState.DISCONNECTED
    finally:
        server.close()


def _listen_then_die(ch, conn_qual):
    n = Node()
    n.listen(conn_qual)
    ch.send(n.address)
    ch.recv(timeout=60)


def test_passive_side_dies_during_setup(spawn, node, conn_qual):
    peer = spawn(_listen_then_die, conn_qual)
    address = peer.recv()
    node.ep.connect(address, conn_qual)      # no timeout: only the death can end it
    peer.kill()
    node.expect(node.conn_evd, E.CONNECTION_EVENT_UNREACHABLE, DEATH_BOUND)
    assert node.ep.state == EpState.DISCONNECTED


def test_pid_reuse_is_not_mistaken_for_life():
    from shmdat.hw.shm import ProcessWatch, MY_PID, MY_START
    assert ProcessWatch(MY_PID, MY_START).alive()
    assert not ProcessWatch(MY_PID, MY_START + 1).alive()     # same pid, another start time
