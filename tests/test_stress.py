"""Several processes exchange many messages of mixed sizes all to all, with sequence
numbers and checksums: nothing lost, nothing duplicated, order kept within each EP.

CI runs a size that takes seconds; SHMDAT_SOAK=<messages per pair> runs a long soak
(for example SHMDAT_SOAK=50000 pytest tests/test_stress.py).
"""

import os
import struct
import zlib

import numpy as np

from shmdat import CloseFlags, DtoOp, DtoStatus, EventNumber as E

from tests.nodes import WAIT, Node

PROCESSES = int(os.environ.get("SHMDAT_SOAK_PROCESSES", "3"))
MESSAGES = int(os.environ.get("SHMDAT_SOAK", "150"))         # per ordered pair
SIZES = (16, 17, 100, 4000, 65536, 300_000)                   # the last is above a ring's capacity
MAX = max(SIZES)
WINDOW = 4                                                    # sends in flight per EP
RECVS = 4                                                     # receives posted per EP
HEADER = struct.Struct("<IIII")                               # src, seq, size, crc of the rest


def _pattern(src, seq, size):
    return ((np.arange(size - HEADER.size, dtype=np.uint32) * 7 + src * 13 + seq) % 251).astype(np.uint8)


def _worker(ch, index):
    n = Node(lmr_size=(PROCESSES * (WINDOW + RECVS)) * MAX, qlen=4096)
    psp = n.ia.psp_create_any(n.cr_evd)       # a port of its own: the table is machine-wide
    ch.send((n.address, psp.conn_qual))
    services = ch.recv()
    eps = {}                                   # peer index -> EP
    for j in range(index + 1, PROCESSES):
        ep = n.new_ep()
        ep.connect(*services[j], WAIT, struct.pack("<I", index))
        eps[j] = ep
    established = 0
    while established < PROCESSES - 1:
        event, _ = n.cr_evd.wait(0) if n.cr_evd.query().evd_count else (None, 0)
        if event is not None:
            (j,) = struct.unpack("<I", event.data.cr.private_data)
            eps[j] = n.new_ep()
            event.data.cr.accept(eps[j])
            continue
        try:
            event, _ = n.conn_evd.wait(10_000)
        except Exception:
            continue
        assert event.number == E.CONNECTION_EVENT_ESTABLISHED, event
        established += 1
    peer_of = {ep: j for j, ep in eps.items()}

    # Buffers: per peer, WINDOW send slots and RECVS receive slots of MAX bytes each.
    slot = {}
    k = 0
    for j in sorted(eps):
        slot[j] = (k, k + WINDOW)
        k += WINDOW + RECVS
    for j, ep in eps.items():
        for r in range(RECVS):
            ep.post_recv([n.lmr.triplet((slot[j][1] + r) * MAX, MAX)], ("recv", j, r))

    rng = np.random.default_rng(index)
    next_seq = {j: 0 for j in eps}             # next message to send to j
    in_flight = {j: 0 for j in eps}
    expect = {j: 0 for j in eps}               # next seq expected from j
    free_send = {j: list(range(WINDOW)) for j in eps}
    received = 0

    def send_more(j):
        while next_seq[j] < MESSAGES and free_send[j]:
            seq = next_seq[j]
            size = int(SIZES[rng.integers(len(SIZES))])
            s = free_send[j].pop()
            off = (slot[j][0] + s) * MAX
            body = _pattern(index, seq, size)
            n.lmr.buffer[off + HEADER.size:off + size] = body
            n.lmr.buffer[off:off + HEADER.size] = np.frombuffer(
                HEADER.pack(index, seq, size, zlib.crc32(body)), np.uint8)
            eps[j].post_send([n.lmr.triplet(off, size)], ("send", j, s, seq))
            next_seq[j] += 1
            in_flight[j] += 1

    for j in eps:
        send_more(j)
    total = MESSAGES * (PROCESSES - 1)
    while received < total or any(in_flight.values()):
        event, _ = n.dto.wait(WAIT)
        d = event.data
        assert d.status == DtoStatus.SUCCESS, d
        kind, j, s = d.user_cookie[:3]
        if d.operation == DtoOp.SEND:
            in_flight[j] -= 1
            free_send[j].append(s)
            send_more(j)
            continue
        off = (slot[j][1] + s) * MAX
        src, seq, size, crc = HEADER.unpack(bytes(n.lmr.buffer[off:off + HEADER.size]))
        assert (src, seq, size) == (j, expect[j], d.transferred_length), (src, seq, size, expect[j])
        assert zlib.crc32(n.lmr.buffer[off + HEADER.size:off + size]) == crc
        expect[j] += 1
        received += 1
        if expect[j] + RECVS <= MESSAGES:
            peer_ep = eps[j]
            peer_ep.post_recv([n.lmr.triplet(off, MAX)], ("recv", j, s))
    assert all(v == MESSAGES for v in expect.values())
    ch.send(("done", received))
    assert ch.recv(timeout=120) == "disconnect"
    for ep in eps.values():
        if ep.state.name == "CONNECTED":
            ep.disconnect(CloseFlags.ABRUPT)
    n.close()
    del peer_of


def test_all_to_all_mixed_sizes(spawn):
    workers = [spawn(_worker, i) for i in range(PROCESSES)]
    services = [w.recv() for w in workers]
    for w in workers:
        w.send(services)
    timeout = 60 + MESSAGES * 0.05
    results = [w.recv(timeout) for w in workers]
    assert results == [("done", MESSAGES * (PROCESSES - 1))] * PROCESSES
    for w in workers:
        w.send("disconnect")
    for w in workers:
        w.join()
