"""Every consumer call the EP table refuses, provoked on a real EP in each state it
can reach: InvalidState with the subtype dat_error.h gives the state, and the EP
left where it was. The pairs are generated from ep_state.ALLOWED (itself checked
against the man pages in test_state_tables.py). A connection, or a handshake
half done, is made with a real peer process (tests/remote.py).
"""

import pytest

import shmdat
from shmdat import CloseFlags, EpState as S, EventNumber as E, MemPriv, RmrTriplet
from shmdat.dat import ep_state

from tests.nodes import WAIT, Node
from tests.remote import Remote

# Every IA of the machine has the same IP address, so the service points of the test's
# IAs and of its peer process take ports of their own: psp_create_any's, and the test's
# conn_qual (the RSP's, or the peer's PSP: no state needs both). SPARE_QUAL only appears
# in calls the state refuses: nothing binds it.
SPARE_QUAL = 4


class Bench:
    """The node under test, a second IA in this process that asks for connections (its
    requests stay unanswered), and the peer process when the state needs one."""

    def __init__(self, spawn, conn_qual):
        self.spawn = spawn
        self.qual = conn_qual
        self.node = Node()
        self.asker = Node()
        self.remote = None
        # A pending CR of a PSP of ours, for cr.accept(ep): taken before the EP moves,
        # so no wait for it runs progress while the EP is in its state.
        psp = self.node.ia.psp_create_any(self.node.cr_evd)
        self.asker.ep.connect(self.node.address, psp.conn_qual)
        self.cr = self.node.expect(self.node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
        self.ep = self.node.ep

    def start_remote(self):
        self.remote = Remote(self.spawn)
        return self.remote

    def close(self):
        self.node.close()
        self.asker.close()
        if self.remote is not None:
            self.remote.finish()


def _unconnected(b):
    pass


def _reserved(b):
    b.node.ia.rsp_create(b.qual, b.ep, b.node.cr_evd)


def _passive_connection_pending(b):
    _reserved(b)
    b.asker.new_ep().connect(b.node.address, b.qual)
    assert b.node.expect(b.node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr.query().local_ep is b.ep


def _active_connection_pending(b):
    psp = b.asker.ia.psp_create_any(b.asker.cr_evd)        # the asker never accepts
    b.ep.connect(b.asker.address, psp.conn_qual)


def _completion_pending(b):
    """Accepted; the peer process is idle in its command loop (no progress there), so it
    does not establish the connection."""
    r = b.start_remote()
    psp = b.node.ia.psp_create_any(b.node.cr_evd)
    r.connect(b.node.address, psp.conn_qual)
    b.node.expect(b.node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr.accept(b.ep)


def _connected(b):
    r = b.start_remote()
    r.listen(b.qual)
    b.ep.connect(r.address, b.qual, WAIT)
    r.accept()
    b.node.expect(b.node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)


def _disconnect_pending(b):
    """GRACEFUL with a send the peer cannot consume: it has no receive posted."""
    _connected(b)
    b.ep.post_send([b.node.lmr.triplet(0, 64)], "pending")
    b.ep.disconnect(CloseFlags.GRACEFUL)


def _disconnected(b):
    _active_connection_pending(b)
    b.ep.disconnect()
    b.node.expect(b.node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)


REACH = {
    S.UNCONNECTED: _unconnected,
    S.RESERVED: _reserved,
    S.PASSIVE_CONNECTION_PENDING: _passive_connection_pending,
    S.ACTIVE_CONNECTION_PENDING: _active_connection_pending,
    S.COMPLETION_PENDING: _completion_pending,
    S.CONNECTED: _connected,
    S.DISCONNECT_PENDING: _disconnect_pending,
    S.DISCONNECTED: _disconnected,
}

# The consumer calls on an EP: (the ALLOWED row that governs it, how to make it with
# arguments that are otherwise valid, so only the state can refuse it).
CALLS = {
    "dat_ep_connect": ("connect", lambda b: b.ep.connect(b.asker.address, SPARE_QUAL, WAIT)),
    "dat_ep_dup_connect": ("connect", lambda b: b.ep.dup_connect(b.ep, WAIT)),
    "dat_ep_post_send": ("post_send", lambda b: b.ep.post_send([], "x")),
    "dat_ep_post_rdma_write": ("post_send", lambda b: b.ep.post_rdma_write([], "x", RmrTriplet(1, 0, 0))),
    "dat_ep_post_rdma_read": ("post_send", lambda b: b.ep.post_rdma_read([], "x", RmrTriplet(1, 0, 0))),
    "dat_ep_post_recv": ("post_recv", lambda b: b.ep.post_recv([b.node.lmr.triplet(0, 8)], "r")),
    "dat_ep_disconnect": ("disconnect", lambda b: b.ep.disconnect()),
    "dat_ep_reset": ("reset", lambda b: b.ep.reset()),
    "dat_ep_free": ("free", lambda b: b.ep.free()),
    "dat_ep_modify": ("modify", lambda b: b.ep.modify()),
    "dat_cr_accept": ("accept", lambda b: b.cr.accept(b.ep)),
    "dat_rsp_create": ("reserve", lambda b: b.node.ia.rsp_create(SPARE_QUAL, b.ep, b.node.cr_evd)),
    "dat_rmr_bind": ("rmr_bind", lambda b: b.node.pz.rmr_create().bind(
        b.node.lmr.triplet(0, 8), MemPriv.REMOTE_READ, b.ep, "bind")),
}


def test_every_call_is_checked_and_every_reachable_state_reached():
    assert {key for key, _ in CALLS.values()} == set(ep_state.ALLOWED) - {"accept_reserved"}
    assert set(REACH) == set(ep_state.TRANSITIONS.values())


@pytest.mark.parametrize("state", list(REACH), ids=lambda s: s.name)
def test_calls_the_table_refuses(spawn, conn_qual, state):
    refused = [name for name, (key, _) in CALLS.items() if state not in ep_state.ALLOWED[key]]
    b = Bench(spawn, conn_qual)
    try:
        REACH[state](b)
        assert b.ep.query().ep_state == state
        for name in refused:
            with pytest.raises(shmdat.InvalidState) as e:
                CALLS[name][1](b)
            assert e.value.code == shmdat.Return.INVALID_STATE, name
            assert state.name in str(e.value), name
            assert e.value.subtype == ep_state.SUBTYPE[state], name
            assert b.ep.query().ep_state == state, name
    finally:
        b.close()


def test_a_provider_event_with_no_row_is_internal_error_and_moves_nothing(ia):
    """fire() refuses before it assigns or runs anything: the EP keeps its state and
    no connection event is posted."""
    conn_evd = ia.evd_create(4, shmdat.EvdFlags.CONNECTION)
    ep = ia.ep_create(ia.pz_create(), connect_evd=conn_evd)
    V = ep_state.EpEvent
    for event in (V.CONNECT_RESPONSE, V.ESTABLISHED, V.PEER_REJECTED, V.TIMER_EXPIRED,
                  V.CONNECT_ERROR, V.REQUESTS_DRAINED, V.PEER_DISCONNECTED, V.BROKEN, V.REQUEST):
        assert (S.UNCONNECTED, event) not in ep_state.TRANSITIONS
        with pytest.raises(shmdat.InternalError) as e:
            ep_state.fire(ep, event)
        assert f"no transition for {event.name} in UNCONNECTED" in str(e.value)
        assert ep.query().ep_state == S.UNCONNECTED
    with pytest.raises(shmdat.QueueEmpty):
        conn_evd.dequeue()
