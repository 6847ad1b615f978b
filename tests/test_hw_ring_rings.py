"""The ring's rings (hw/ring.py): whatever a side publishes for its peer comes with a ring of
the peer's doorbell when a waiter there has armed it, so that a sleeper wakes for it and
does not wait for its next liveness slice."""

import pytest

from shmdat.hw import ring

from tests.test_hw_ring_credits import _request, joined


@pytest.fixture
def wire():
    """Two QueuePairs joined by one connection segment: (sender, receiver, its sink, its
    HCA, armed as a sleeper arms it)."""
    for qps, sinks, hcas in joined("rings"):
        hcas[1].arm()
        yield qps[0], qps[1], sinks[1], hcas[1]


def test_a_message_rings_an_armed_receiver(wire):
    sender, _, _, receiver_hca = wire
    assert not receiver_hca.sleep(0)
    sender.post_send(_request(b"hello"))
    assert receiver_hca.sleep(0)


def test_a_message_larger_than_the_ring_rings_for_each_part_that_went_in(wire, monkeypatch):
    sender, receiver, received, receiver_hca = wire
    monkeypatch.setattr(ring, "RDV_THRESHOLD", 1 << 40)     # fragments through the ring
    size = 4 * sender.ncells * ring.CELL
    sender.post_send(_request(bytes(size)))
    assert sender.sq                            # not all of it went in
    assert receiver_hca.sleep(0)                # but the receiver was told of what did
    received.receives.append(_request(bytes(size)))
    while sender.sq:
        receiver.poll_recv()
        sender.poll_send()
        assert receiver_hca.sleep(0)            # each ring-full rings anew
    receiver.poll_recv()
    assert received.received[0].done == size
