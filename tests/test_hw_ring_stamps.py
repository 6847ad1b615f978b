"""The stamp (hw/hca.py RemoteHca.ring, layout.HCA_W_STAMP): whatever a side publishes for
its peer (a record, the room it freed) comes with a new stamp in the peer's HCA, which a
poller compares with the last it saw to know whether any QP can have work. A publish that
wrote no new stamp would leave an idle poller blind to it."""

import itertools
import os

import pytest

from shmdat.hw import hca as hw_hca
from shmdat.hw import ring
from shmdat.hw.layout import HCA_W_STAMP

from tests.test_hw_ring_credits import Sink, _request

_names = itertools.count(1)


@pytest.fixture
def wire():
    """Two QueuePairs joined by one connection segment: (sender, its HCA's words,
    receiver, its sink, its HCA's words)."""
    hcas = [hw_hca.Hca(listen_slots=4, table_slots=4) for _ in range(2)]
    name = f"{hcas[0].prefix}.stamps{next(_names)}"
    segments = [ring.create_connection_segment(name)]
    segments.append(ring.open_connection_segment(name))
    segments[0].unlink()
    sinks = [Sink(), Sink()]
    qps = [ring.QueuePair(segments[side], side, hcas[side].peer(hcas[1 - side].address), sinks[side],
                          sinks[side].take_recv) for side in (0, 1)]
    yield qps[0], hcas[0].words, qps[1], sinks[1], hcas[1].words
    for qp in qps:
        qp.close()
    for hca in hcas:
        hca.close()


def test_a_message_and_its_consumption_each_stamp_the_other_side(wire):
    sender, sender_words, receiver, received, receiver_words = wire
    before = receiver_words[HCA_W_STAMP], sender_words[HCA_W_STAMP]
    sender.post_send(_request(b"hello"))
    assert receiver_words[HCA_W_STAMP] != before[0]
    assert sender_words[HCA_W_STAMP] == before[1]
    received.receives.append(_request(bytes(16)))
    receiver.poll_recv()
    assert sender_words[HCA_W_STAMP] != before[1]       # the room it freed


def test_a_message_larger_than_the_ring_stamps_for_the_part_that_went_in(wire, monkeypatch):
    sender, _, receiver, received, receiver_words = wire
    monkeypatch.setattr(ring, "RDV_THRESHOLD", 1 << 40)     # fragments through the ring
    size = 4 * sender.ncells * ring.CELL
    before = receiver_words[HCA_W_STAMP]
    sender.post_send(_request(bytes(size)))
    assert sender.sq                            # not all of it went in
    assert receiver_words[HCA_W_STAMP] != before
    received.receives.append(_request(bytes(size)))
    while sender.sq:                            # each ring-full stamps the receiver anew
        seen = receiver_words[HCA_W_STAMP]
        receiver.poll_recv()
        sender.poll_send()
        assert receiver_words[HCA_W_STAMP] != seen
    receiver.poll_recv()
    assert received.received[0].done == size


def test_a_forked_child_writes_stamps_of_its_own():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, next(hw_hca._stamps).to_bytes(8, "little"))
        os._exit(0)
    os.close(write)
    try:
        child = int.from_bytes(os.read(read, 8), "little")
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    ours = [next(hw_hca._stamps) for _ in range(1000)]
    assert child not in ours
