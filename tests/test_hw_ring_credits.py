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


@pytest.mark.parametrize("receives, second", [(1, ring.OK), (ring.UNBOUNDED, ring.NOT_READY)])
def test_a_look_bounded_by_the_receives_held_does_not_nak_the_message_after_them(wire, receives, second):
    # rnr_retry 0: a NAKed message is given up at once, so a NAK shows in its status.
    sender, sent, receiver, received = wire
    sender.rnr_retry = 0
    sender.post_send(_request(b"first"))
    sender.post_send(_request(b"second"))
    received.receives.append(_request(bytes(16)))
    receiver.poll_recv(receives)                # bounded: the second is not looked at
    sender.poll_send()
    received.receives.append(_request(bytes(16)))
    receiver.poll_recv()
    sender.poll_send()
    assert [wr.status for wr in sent.sent] == [ring.OK, second]
    assert len(received.received) == (2 if second == ring.OK else 1)


@pytest.fixture
def written():
    """Two acked QueuePairs and a shared segment of the receiver's HCA for its receives:
    (sender, its sink, receiver, its sink, the segment, its seg_id)."""
    for qps, sinks, hcas in joined("written"):
        for qp in qps:
            qp.acked = True
        segment, seg_id = hcas[1].new_segment(1 << 16)
        yield qps[0], sinks[0], qps[1], sinks[1], segment, seg_id
        for sink in sinks:
            sink.received.clear()
            sink.receives.clear()
        segment.unlink()
        segment.close()


def _receive_at(segment, seg_id, offset, length):
    """A receive over `length` bytes at `offset` of the segment."""
    return ring.WorkRequest(ring.OP_SEND, [ring.Sge(segment.buf[offset:offset + length], 0, seg_id, offset)],
                            length)


SMALL = ring.RDV_THRESHOLD - 1            # below it a send is never written, whatever is published
LARGE = ring.RDV_THRESHOLD + 100


def test_a_send_written_into_a_published_receive_completes_at_once_uncopied_by_the_receiver(written):
    sender, sent, receiver, received, segment, seg_id = written
    receive = _receive_at(segment, seg_id, 0, LARGE + 1000)
    received.receives.append(receive)
    receiver.publish_receive(1, seg_id, 0, LARGE + 1000)       # before the credits that count it
    receiver.publish_credits(1)
    data = bytes(range(256)) * (LARGE // 256) + bytes(LARGE % 256)
    assert sender.send_written(memoryview(data), LARGE, True)
    assert bytes(segment.buf[:LARGE]) == data           # there before the receiver ran at all
    receiver.poll_recv()
    assert received.received == [receive]
    assert (receive.status, receive.done, receive.solicited) == (ring.OK, LARGE, True)


def test_a_send_is_written_only_into_its_own_receive_covered_published_and_long_enough(written):
    sender, sent, receiver, received, segment, seg_id = written
    data = memoryview(bytes(LARGE))
    receiver.publish_receive(1, seg_id, 0, LARGE)
    assert not sender.send_written(data, LARGE, False)      # not covered by credits yet
    receiver.publish_credits(1)
    assert not sender.send_written(data[:SMALL], SMALL, False)     # below RDV_THRESHOLD
    receiver.publish_receive(1 + 32, seg_id, 0, LARGE)      # its entry now holds a later receive's
    assert not sender.send_written(data, LARGE, False)
    receiver.publish_receive(1, seg_id, 0, LARGE - 1)       # its own, but too short
    assert not sender.send_written(data, LARGE, False)
    receiver.publish_receive(1, seg_id, len(segment.buf) - LARGE + 1, LARGE)   # beyond the segment
    assert not sender.send_written(data, LARGE, False)
    assert sender.tx_msgs == 0 and not sent.sent            # nothing went
    receiver.publish_receive(1, seg_id, 0, LARGE)
    assert sender.send_written(data, LARGE, False) and sender.tx_msgs == 1


def test_a_written_message_whose_receive_lies_elsewhere_now_fails_it_and_is_refused(written):
    sender, sent, receiver, received, segment, seg_id = written
    receiver.publish_receive(1, seg_id, 0, LARGE)
    receiver.publish_credits(1)
    moved = _receive_at(segment, seg_id, 4096, LARGE)       # re-registered elsewhere since
    received.receives.append(moved)
    assert sender.send_written(memoryview(bytes(LARGE)), LARGE, False)
    receiver.poll_recv()
    assert received.received == [moved] and moved.status == ring.LOCAL_PROTECTION
    assert receiver.message_waits()                         # refused: left in the ring, NAKed
