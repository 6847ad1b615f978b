"""cm_state's rows for late and duplicate handshake messages, on a real IA: a second
IA in this process sends it raw CM messages (cm.encode) through its HCA, as a
peer whose handshake is over, or repeated, would. No connection is made, so no
peer process is needed; the rows of live handshakes are the connection tests'
(test_connect.py).
"""

import pytest

import shmdat
from shmdat import EpState, EventNumber as E
from shmdat.dat import cm
from shmdat.dat.cm_state import Handshake as H, Message as M, handler

from tests.nodes import Node

QUAL = 5


@pytest.fixture
def pair():
    a, b = Node(), Node()
    yield a, b
    a.close()
    b.close()


def _send(sender, receiver, kind, conn_id, **fields):
    sender.ia._hca.cm_send(receiver.address, cm.encode(kind, conn_id, sender.address, **fields))


def _quiet(node):
    """Run the node's progress (a dequeue does) and check it posted nothing anywhere."""
    for evd in (node.cr_evd, node.conn_evd, node.dto, node.ia.async_evd):
        with pytest.raises(shmdat.QueueEmpty):
            evd.dequeue()


def _inbox(node):
    """The raw CM messages waiting for `node` (its own progress has not run)."""
    return [(m.kind, m.conn_id) for m in (cm.decode(data) for data, _ in node.ia._hca.cm_receive())]


@pytest.mark.parametrize("kind", [M.REJ, M.RTU, M.CANCEL])
def test_a_message_of_a_handshake_that_is_over_is_ignored(pair, kind):
    a, b = pair
    assert handler(H.GONE, kind) == "ignore"
    _send(b, a, kind, 41, reason=cm.REASON_CONSUMER)
    _quiet(a)
    assert a.ep.query().ep_state == EpState.UNCONNECTED
    assert _inbox(b) == []                          # and nothing is answered


def test_a_late_reply_is_cancelled(pair):
    """REP for a connect we no longer wait for: CANCEL, so the passive side's accept
    fails instead of waiting for an RTU."""
    a, b = pair
    assert handler(H.GONE, M.REP) == "cancel_late_reply"
    _send(b, a, M.REP, 42)
    _quiet(a)
    assert _inbox(b) == [(M.CANCEL, 42)]


def test_duplicates_and_out_of_order_messages_of_a_pending_request(pair):
    a, b = pair
    a.listen(QUAL)
    request = dict(conn_qual=QUAL, pz=1, segment="shmdat.none", private_data=b"once")
    _send(b, a, M.REQ, 43, **request)
    cr = a.expect(a.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
    assert cr.private_data == b"once"
    _send(b, a, M.REQ, 43, **request)               # CR_PENDING: a duplicate
    _send(b, a, M.RTU, 43)                          # CR_PENDING: nothing was accepted
    _quiet(a)
    _send(b, a, M.CANCEL, 43)                       # CR_PENDING -> CR_CANCELLED
    _send(b, a, M.CANCEL, 43)                       # withdrawn already
    _send(b, a, M.REQ, 43, **request)               # CR_CANCELLED: a duplicate
    _quiet(a)
    cr.accept(a.ep)                                 # the requester gave up: the accept fails
    a.expect(a.conn_evd, E.CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR)
    assert a.ep.query().ep_state == EpState.DISCONNECTED
    assert _inbox(b) == []                          # no REP went to a requester that gave up
