"""The ring's credits (hw/ring.py): on an acked connection a send that the receiver's
published receive count covers completes once it is wholly in the ring, whether
the count came before the send or after it, and never once the sender has asked
the receiver to drop it (the receiver alone decides that message's fate)."""

import collections
import itertools

import pytest

from shmdat.hw import ring
from shmdat.hw.hca import Hca

_names = itertools.count(1)


class Sink:
    """A driver's completion sink and receive queue."""

    def __init__(self):
        self.sent, self.received, self.receives = [], [], collections.deque()

    def send_done(self, wr):
        self.sent.append(wr)

    def recv_done(self, wr):
        self.received.append(wr)

    def take_recv(self):
        return self.receives.popleft() if self.receives else None


def _request(data):
    view = memoryview(bytearray(data))
    return ring.WorkRequest(ring.OP_SEND, [ring.Sge(view, 0, 0, 0)], len(view))


def joined(what):
    """Two QueuePairs on two HCAs joined by one connection segment named for `what`: a
    generator for a fixture, yielding (QueuePairs, their sinks, HCAs), closing them after."""
    hcas = [Hca(listen_slots=4, table_slots=4) for _ in range(2)]
    name = f"{hcas[0].prefix}.{what}{next(_names)}"
    segments = [ring.create_connection_segment(name)]
    segments.append(ring.open_connection_segment(name))
    segments[0].unlink()
    sinks = [Sink(), Sink()]
    qps = [ring.QueuePair(segments[side], side, hcas[side].peer(hcas[1 - side].address), sinks[side],
                          sinks[side].take_recv) for side in (0, 1)]
    yield qps, sinks, hcas
    for qp in qps:
        qp.close()
    for hca in hcas:
        hca.close()


@pytest.fixture
def wire():
    """Two acked QueuePairs joined by one connection segment: (sender, its sink,
    receiver, its sink)."""
    for qps, sinks, _ in joined("credits"):
        for qp in qps:
            qp.acked = True
        yield qps[0], sinks[0], qps[1], sinks[1]


def test_a_send_the_credits_cover_completes_without_the_receiver(wire):
    sender, sent, receiver, received = wire
    received.receives.append(_request(bytes(16)))
    receiver.publish_credits(1)
    sender.post_send(_request(b"covered"))
    sender.poll_send()
    assert [wr.status for wr in sent.sent] == [ring.OK]
    receiver.poll_recv()                        # the message was waiting in the ring
    assert bytes(received.received[0].sges[0].view[:7]) == b"covered"


def test_credits_published_after_the_send_complete_it_at_the_next_poll(wire):
    sender, sent, receiver, received = wire
    sender.post_send(_request(b"first"))
    sender.post_send(_request(b"second"))
    sender.poll_send()
    assert sent.sent == []                      # no receive known: it waits for the ack
    receiver.publish_credits(1)
    sender.poll_send()
    assert len(sent.sent) == 1                  # the second is not covered
    receiver.publish_credits(2)
    sender.poll_send()
    assert len(sent.sent) == 2


def test_a_send_given_up_waits_for_the_receivers_decision_whatever_the_credits(wire):
    sender, sent, receiver, received = wire
    sender.rnr_retry = 0
    sender.post_send(_request(b"given up"))
    receiver.poll_recv()                        # no receive: NAKed as not ready
    sender.poll_send()                          # rnr_retry 0: asks the receiver to drop it
    received.receives.append(_request(bytes(16)))
    receiver.publish_credits(1)
    sender.poll_send()
    assert sent.sent == []
    receiver.poll_recv()                        # it drops the message, as asked
    sender.poll_send()
    assert [wr.status for wr in sent.sent] == [ring.NOT_READY]
    assert received.received == []
