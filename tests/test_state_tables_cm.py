"""cm_state's rows on real connections: the rdma_cm events each CMID of the test's IA
receives, in which of its states, and what DAT made of them. The peer is a real
process (tests/remote.py); every event DAT takes goes through cm_state.fire, which
the test wraps to record (owner, CMID state before, event) and then runs.
The table itself against the design: test_state_tables.py.
"""

import time

import pytest

import shmdat
from shmdat import EpState, EventNumber as E
from shmdat.dat import cm_state
from shmdat.dat.seam import CmEvent as C

from tests.nodes import WAIT, Node
from tests.remote import Remote, connect_to_remote

T = cm_state.CmidState
BOUND = 10.0            # seconds: how long a test waits for an event of a peer's doing


@pytest.fixture
def node():
    n = Node()
    yield n
    n.close()


@pytest.fixture
def fired(monkeypatch):
    """Every cm_state.fire of this process, as (owner, state before, event kind)."""
    log = []
    real = cm_state.fire

    def fire(owner, kind, event):
        log.append((owner, owner._cm_state, kind))
        real(owner, kind, event)

    monkeypatch.setattr(cm_state, "fire", fire)
    return log


def _of(log, owner):
    return [(state, kind) for o, state, kind in log if o is owner]


def _progress_until(node, done):
    """Run node's progress (a dequeue of its CR EVD, empty here, does) until done(),
    within BOUND seconds."""
    end = time.monotonic() + BOUND
    while not done():
        assert time.monotonic() < end, "the event did not come"
        with pytest.raises(shmdat.QueueEmpty):
            node.cr_evd.dequeue()


def test_active_side_rows_of_a_connection_and_its_peer_disconnect(spawn, node, conn_qual, fired):
    r = connect_to_remote(spawn, node, conn_qual)
    assert _of(fired, node.ep) == [(T.RESOLVING_ADDR, C.ADDR_RESOLVED),
                                   (T.RESOLVING_ROUTE, C.ROUTE_RESOLVED),
                                   (T.CONNECTING, C.CONNECT_RESPONSE)]
    assert node.ep._cm_state is T.CONNECTED
    r.disconnect()
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    assert _of(fired, node.ep)[3:] == [(T.CONNECTED, C.PEER_DISCONNECTED)]
    assert node.ep._cm_state is T.DONE
    r.finish()


def test_passive_side_rows_of_a_connection(spawn, node, conn_qual, fired):
    psp = node.listen(conn_qual)
    r = Remote(spawn)
    r.connect(node.address, conn_qual, b"hello")
    cr = node.expect(node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
    assert cr._cm_state is T.REQUEST
    cr.accept(node.ep)
    assert node.ep._cm_state is T.ACCEPTED
    r.start("wait_conn")                            # the requester's progress establishes it
    node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
    assert r.result()[0] == "CONNECTION_EVENT_ESTABLISHED"
    assert _of(fired, psp) == [(T.LISTENING, C.REQUEST)]
    assert psp._cm_state is T.LISTENING            # still listening for the next
    assert _of(fired, node.ep) == [(T.ACCEPTED, C.ESTABLISHED)]
    assert node.ep._cm_state is T.CONNECTED
    node.ep.disconnect()
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    assert node.ep._cm_state is T.DONE             # our own close ends it too
    r.finish()


def test_peer_rejected_and_non_peer_rejected_are_rejected_in_connecting(spawn, node, conn_qual, fired):
    r = Remote(spawn)
    r.listen(conn_qual)
    node.ep.connect(r.address, conn_qual, WAIT)
    r.reject(b"no")
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_PEER_REJECTED).private_data == b"no"
    node.ep.reset()
    node.ep.connect(r.address, conn_qual + 1, WAIT)     # nobody listens there
    node.expect(node.conn_evd, E.CONNECTION_EVENT_NON_PEER_REJECTED)
    rows = _of(fired, node.ep)
    assert rows[2] == rows[5] == (T.CONNECTING, C.REJECTED)
    assert len(rows) == 6
    r.finish()


def test_an_address_nobody_reaches_is_unreachable_in_resolving_addr(node, conn_qual, fired):
    node.ep.connect("192.0.2.1", conn_qual, WAIT)       # TEST-NET-1: off shm0's 127.0.0.0/8
    node.expect(node.conn_evd, E.CONNECTION_EVENT_UNREACHABLE)
    assert _of(fired, node.ep) == [(T.RESOLVING_ADDR, C.UNREACHABLE)]
    assert node.ep.state == EpState.DISCONNECTED


def test_a_request_withdrawn_before_its_accept_fails_the_accept(spawn, node, conn_qual, fired):
    """REQUEST + REJECTED (the requester gave up): DONE, so the accept is an
    ACCEPT_COMPLETION_ERROR event and nothing is sent to the requester."""
    node.listen(conn_qual)
    r = Remote(spawn)
    r.connect(node.address, conn_qual)
    cr = node.expect(node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
    r.disconnect()                                  # its connect is abandoned: REJ to us
    assert r.wait_conn()[0] == "CONNECTION_EVENT_DISCONNECTED"
    _progress_until(node, lambda: cr._withdrawn)
    assert _of(fired, cr) == [(T.REQUEST, C.REJECTED)]
    cr.accept(node.ep)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR)
    assert node.ep.state == EpState.DISCONNECTED
    assert r.no_conn_event(100_000)
    r.finish()


def test_a_late_event_at_a_broken_connection_is_ignored(spawn, node, conn_qual, fired):
    """A broken connection keeps its CMID (DONE) until reset: the peer's death, told
    after the break, is ignored by the DONE row; the EP reported BROKEN once."""
    r = connect_to_remote(spawn, node, conn_qual)
    node.ep.post_recv([node.lmr.triplet(0, 64)], "r")
    node.ep.set_watermark(shmdat.WATERMARK_INFINITE, 0)     # one buffer held: past the hard mark
    node.expect(node.conn_evd, E.CONNECTION_EVENT_BROKEN)
    assert node.ep._cm_state is T.DONE and node.ep._cmid is not None
    r.peer.kill()
    _progress_until(node, lambda: (T.DONE, C.QP_FATAL) in _of(fired, node.ep))
    with pytest.raises(shmdat.TimeoutExpired):
        node.conn_evd.wait(100_000)
    assert node.ep.state == EpState.DISCONNECTED
    node.ep.reset()                                 # the CMID goes now
    assert node.ep._cmid is None
