"""Shared Receive Queues: the dat_srq_* calls, EPs sharing one SRQ across peer
processes, receive accounting (srq.query, ep.recv_query), the low watermark,
and receivers that are not ready."""

import struct
import zlib

import numpy as np
import pytest

import shmdat
from shmdat import DtoOp, DtoStatus, EpAttr, EvdFlags, EventNumber as E, MemPriv, Return
from shmdat.dat import limits

from tests.nodes import Node
from tests.remote import Remote

SLOT = 16 * 1024        # receive buffer size in the server's LMR


class SrqServer:
    """This process: an IA whose EPs all take their receives from one SRQ."""

    def __init__(self, conn_qual, max_recv_dtos=16, lmr_size=4 << 20, low_watermark=0):
        self.n = Node(lmr_size=lmr_size, ep=False)
        self.srq = self.n.ia.srq_create(self.n.pz, max_recv_dtos, 1, low_watermark)
        self.conn_qual = conn_qual
        self.n.listen(conn_qual)

    def new_ep(self, attr=None):
        n = self.n
        return n.ia.ep_create_with_srq(n.pz, n.dto, n.dto, n.conn_evd, self.srq, attr)

    def connect(self, r, attr=None):
        """Accept a connection from the scriptable peer `r` on a new SRQ EP."""
        ep = self.new_ep(attr)
        r.call("connect", self.n.address, self.conn_qual)      # returns once the request is sent
        r.start("wait_conn")
        self.n.expect(self.n.cr_evd, E.CONNECTION_REQUEST_EVENT).cr.accept(ep)
        self.n.expect(self.n.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
        assert r.result()[0] == "CONNECTION_EVENT_ESTABLISHED"
        return ep

    def post(self, slot, size=SLOT):
        self.srq.post_recv([self.n.lmr.triplet(slot * size, size)], slot)

    def counts(self):
        p = self.srq.query()
        return p.available_dto_count, p.outstanding_dto_count

    def read(self, slot, n, size=SLOT):
        return bytes(self.n.lmr.buffer[slot * size:slot * size + n])

    def async_events(self):
        out = []
        while True:
            try:
                out.append(self.n.ia.async_evd.dequeue())
            except shmdat.QueueEmpty:
                return out

    def close(self):
        self.n.close()


@pytest.fixture
def server(conn_qual):
    s = SrqServer(conn_qual)
    yield s
    s.close()


def client(spawn, lmr_size=4 << 20):
    return Remote(spawn, lmr_size=lmr_size)


def message(who, seq, size=64):
    head = struct.pack("<II", who, seq)
    return head + bytes((who * 31 + seq + i) & 0xFF for i in range(size - len(head)))


# Attributes.

def test_provider_attr_tells_srq_support(ia):
    ia_attr, attr = ia.query()
    assert attr.srq_supported and attr.srq_watermarks_supported and attr.srq_info_supported
    assert attr.ep_recv_info_supported
    assert ia_attr.max_srqs == limits.MAX_SRQS
    assert ia_attr.max_recv_per_srq == limits.MAX_RECV_PER_SRQ
    assert ia_attr.max_ep_per_srq == limits.MAX_EP_PER_SRQ


# Counts: the worked example of dat_srq_query.

def test_counts_follow_the_worked_example(spawn, server):
    r = client(spawn)
    ep = server.connect(r)
    for slot in range(3):
        server.post(slot)
    assert server.counts() == (3, 3)
    assert server.srq.query().max_recv_dtos == 16
    assert ep.recv_query() == (0, 0)            # SRQ buffers are not the EP's until it takes one
    r.call("send", b"one message")              # eager: in the server's ring on return
    assert server.counts() == (2, 3)            # taken and completed, completion not reaped
    d = server.n.dto_done()
    assert (d.ep, d.user_cookie, d.status, d.transferred_length, d.operation) == \
        (ep, 0, DtoStatus.SUCCESS, 11, DtoOp.RECEIVE)
    assert server.read(0, 11) == b"one message"
    assert server.counts() == (2, 2)
    assert ep.recv_query() == (0, 0)
    ep.disconnect()
    r.finish()


def test_disconnect_leaves_srq_buffers_on_the_srq(spawn, server):
    r = client(spawn)
    ep = server.connect(r)
    server.post(0)
    server.post(1)
    ep.disconnect()
    server.n.expect(server.n.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    assert server.counts() == (2, 2)            # not the EP's: nothing flushed
    ep.free()
    server.srq.free()
    r.finish()


# Three client processes, one server SRQ.

def test_three_clients_share_one_server_srq(spawn, server):
    clients = [client(spawn) for _ in range(3)]
    eps = [server.connect(r) for r in clients]
    for slot in range(8):
        server.post(slot)
    count = 10
    for who, r in enumerate(clients):
        for seq in range(count):
            r.call("send", message(who, seq), 64 * seq)
    for r in clients:
        r.start("wait_dtos", count)
    got = {ep: [] for ep in eps}
    for _ in range(3 * count):
        d = server.n.dto_done()
        assert d.status == DtoStatus.SUCCESS and d.transferred_length == 64
        data = server.read(d.user_cookie, 64)
        who, seq = struct.unpack("<II", data[:8])
        assert data == message(who, seq)
        assert eps.index(d.ep) == who               # each connection's messages on its own EP
        got[d.ep].append(seq)
        server.post(d.user_cookie)
    assert all(seqs == list(range(count)) for seqs in got.values())
    for r in clients:
        assert all(s[0] == "SUCCESS" for s in r.result())
    assert server.counts() == (8, 8)
    for ep in eps:
        with pytest.raises(shmdat.InvalidState) as e:
            server.srq.free()
        assert e.value.code == Return.INVALID_STATE and e.value.subtype == "INVALID_STATE_SRQ_IN_USE"
        ep.free()
    server.srq.free()
    for r in clients:
        r.finish()


# Receiver not ready.

def test_late_receives_and_an_underprovisioned_srq_lose_nothing(spawn, server):
    """Three senders, two buffers: messages wait in the rings, senders are held back
    by full rings, and every message arrives once, in order per connection."""
    clients = [client(spawn) for _ in range(3)]
    eps = [server.connect(r) for r in clients]
    count = 24
    size = 15 * 1024            # eager (below the rendezvous size): about 16 fill a ring
    for who, r in enumerate(clients):
        for seq in range(count):
            r.call("send", message(who, seq, size), size * seq)
    # Nothing posted yet: every message waits, none is lost or failed.
    assert server.counts() == (0, 0)
    assert [ep.recv_query() for ep in eps] == [(0, 0)] * 3
    assert all(ep.get_status()[0] == shmdat.EpState.CONNECTED for ep in eps)
    # A reliable connection: no send completes before the receiver has taken it (an SRQ's
    # buffers are the receiver's to give out), and full rings hold the rest back.
    assert [r.call("ready_dtos") for r in clients] == [[]] * 3
    for r in clients:
        r.start("wait_dtos", count)
    server.post(0)
    server.post(1)
    got = {ep: [] for ep in eps}
    for _ in range(3 * count):
        d = server.n.dto_done()
        assert d.status == DtoStatus.SUCCESS and d.transferred_length == size
        data = server.read(d.user_cookie, size)
        who, seq = struct.unpack("<II", data[:8])
        assert data == message(who, seq, size) and eps.index(d.ep) == who
        got[d.ep].append(seq)
        server.post(d.user_cookie)
    assert all(seqs == list(range(count)) for seqs in got.values())
    for r in clients:
        assert [s[0] for s in r.result()] == ["SUCCESS"] * count
    assert server.counts() == (2, 2)
    for r in clients:
        r.finish()


# recv_query in the middle of a message.

def test_a_buffer_taken_for_a_message_still_arriving_is_allocated(spawn, server, monkeypatch):
    # The peer sends by copying through the ring (no rendezvous), so a message four
    # rings long arrives in pieces: the receiver can only take what is in the ring,
    # and the sender adds no more until it calls into shmdat again.
    monkeypatch.setenv("SHMDAT_RDV_BYTES", str(1 << 40))
    size = 1 << 20                              # four rings of the default 256 KiB
    r = client(spawn, lmr_size=size)
    ep = server.connect(r)
    server.post(0, size)
    server.post(1, size)
    data = bytes(np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8))
    r.call("send", data)
    assert ep.recv_query() == (1, 1)            # buffer 0 is the EP's, partly filled
    assert server.counts() == (1, 2)
    assert ep.get_status()[1] is False          # recv not idle
    r.start("wait_dto")                         # the sender moves the rest as room appears
    d = server.n.dto_done()
    assert (d.user_cookie, d.status, d.transferred_length) == (0, DtoStatus.SUCCESS, size)
    assert r.result()[0] == "SUCCESS"
    assert zlib.crc32(server.read(0, size, size)) == zlib.crc32(data)
    assert ep.recv_query() == (0, 0)
    assert server.counts() == (1, 1)
    r.finish()


def ep_with_receives(ia, count):
    """An unconnected EP (no SRQ) with `count` receives of 64 bytes posted."""
    pz = ia.pz_create()
    ep = ia.ep_create(pz, ia.evd_create(count, EvdFlags.DTO))
    lmr = ia.lmr_create(pz, 64 * count)
    for i in range(count):
        ep.post_recv([lmr.triplet(i * 64, 64)], i)
    return ep


def test_recv_query_without_srq_counts_posted_buffers(ia):
    ep = ep_with_receives(ia, 3)
    n, span = ep.recv_query()
    assert n == 3 and span >= n
    ep.free()
    with pytest.raises(shmdat.InvalidHandle) as e:
        ep.recv_query()
    assert e.value.code == Return.INVALID_HANDLE


# The low watermark.

def test_low_watermark_is_one_shot(spawn, server):
    r = client(spawn)
    server.connect(r)
    srq = server.srq
    srq.set_lw(2)                               # 0 on the SRQ: already below, fires at once
    (event,) = server.async_events()
    assert event.number == E.ASYNC_SRQ_LOW_WATERMARK
    assert event.data.handle is srq and event.data.reason == shmdat.AsyncReason.SRQ_LOW_WATERMARK
    assert event.evd is server.n.ia.async_evd
    for slot in range(4):
        server.post(slot)
    assert server.async_events() == []         # quiet after firing
    srq.set_lw(3)                               # 4 available: not below
    assert server.async_events() == [] and srq.query().low_watermark == 3
    r.call("send", b"a")
    assert server.counts()[0] == 3 and server.async_events() == []
    r.call("send", b"b")
    assert server.counts()[0] == 2
    events = server.async_events()
    assert [e.number for e in events] == [E.ASYNC_SRQ_LOW_WATERMARK] and events[0].data.handle is srq
    r.call("send", b"c")
    assert server.counts()[0] == 1 and server.async_events() == []
    srq.set_lw(0)
    assert server.async_events() == []
    r.finish()


def test_low_watermark_at_create_fires_at_once(ia):
    pz = ia.pz_create()
    srq = ia.srq_create(pz, 4, low_watermark=1)
    event = ia.async_evd.dequeue()
    assert event.number == E.ASYNC_SRQ_LOW_WATERMARK and event.data.handle is srq
    assert srq.query().low_watermark == 1


# Resize.

def test_resize_never_loses_a_buffer(spawn, server):
    r = client(spawn)
    ep = server.connect(r)
    for slot in range(4):
        server.post(slot)
    r.call("send", message(0, 0))
    assert server.counts() == (3, 4)
    with pytest.raises(shmdat.InvalidState) as e:
        server.srq.resize(3)                    # the unreaped completion still counts
    assert e.value.code == Return.INVALID_STATE
    server.srq.resize(4)
    assert server.n.dto_done().user_cookie == 0
    server.srq.resize(3)
    assert server.srq.query().max_recv_dtos == 3
    with pytest.raises(shmdat.InsufficientResources) as e:
        server.post(9)
    assert e.value.code == Return.INSUFFICIENT_RESOURCES
    server.srq.set_lw(2)
    with pytest.raises(shmdat.InvalidState) as e:
        server.srq.resize(1)                    # below the low watermark
    assert e.value.code == Return.INVALID_STATE
    server.srq.resize(8)
    for seq in range(1, 4):
        r.call("send", message(0, seq))
    assert [server.n.dto_done().user_cookie for _ in range(3)] == [1, 2, 3]
    assert ep.recv_query() == (0, 0)
    r.finish()


# Errors of the SRQ calls, each checked by its code.

def test_post_recv_on_an_srq_ep_is_refused(ia):
    pz = ia.pz_create()
    srq = ia.srq_create(pz, 4)
    ep = ia.ep_create_with_srq(pz, None, None, None, srq, EpAttr(max_request_dtos=0))
    lmr = ia.lmr_create(pz, 4096)
    with pytest.raises(shmdat.InvalidParameter) as e:
        ep.post_recv([lmr.triplet(0, 64)], "no")
    assert e.value.code == Return.INVALID_PARAMETER
    assert ep.query().srq is srq


def test_srq_post_recv_errors(ia):
    pz, other = ia.pz_create(), ia.pz_create()
    srq = ia.srq_create(pz, 2, max_recv_iov=2)
    theirs = ia.lmr_create(other, 4096)
    ours = ia.lmr_create(pz, 4096)
    read_only = ia.lmr_create(pz, 4096, MemPriv.LOCAL_READ)
    for iov, error, code in (
            ([theirs.triplet(0, 64)], shmdat.ProtectionViolation, Return.PROTECTION_VIOLATION),
            ([ours.triplet(4000, 96)._replace(segment_length=200)], shmdat.ProtectionViolation, Return.PROTECTION_VIOLATION),
            ([read_only.triplet(0, 64)], shmdat.PrivilegesViolation, Return.PRIVILEGES_VIOLATION),
            ([(0xDEAD, 0, 64)], shmdat.PrivilegesViolation, Return.PRIVILEGES_VIOLATION),
            ([ours.triplet(0, 8)] * 3, shmdat.InvalidParameter, Return.INVALID_PARAMETER),
            (42, shmdat.InvalidParameter, Return.INVALID_PARAMETER)):
        with pytest.raises(error) as e:
            srq.post_recv(iov, "bad")
        assert e.value.code == code
    assert srq.query().available_dto_count == 0
    srq.post_recv([ours.triplet(0, 8), ours.triplet(8, 8)], 1)
    srq.post_recv([], 2)                        # a zero-byte receive
    with pytest.raises(shmdat.InsufficientResources) as e:
        srq.post_recv([ours.triplet(0, 8)], 3)
    assert e.value.code == Return.INSUFFICIENT_RESOURCES


def test_srq_create_and_set_lw_errors(ia):
    pz = ia.pz_create()
    for args in ((0,), (limits.MAX_RECV_PER_SRQ + 1,), ("4",), (4, 0), (4, limits.MAX_IOV_SEGMENTS_PER_DTO + 1),
                 (4, 1, 5), (4, 1, -1)):
        with pytest.raises(shmdat.InvalidParameter) as e:
            ia.srq_create(pz, *args)
        assert e.value.code == Return.INVALID_PARAMETER
    with pytest.raises(shmdat.InvalidHandle) as e:
        ia.srq_create(None, 4)
    assert e.value.code == Return.INVALID_HANDLE
    srq = ia.srq_create(pz, 4)
    for bad in (5, -1, 1.5):
        with pytest.raises(shmdat.InvalidParameter) as e:
            srq.set_lw(bad)
        assert e.value.code == Return.INVALID_PARAMETER
    for bad in (0, -3, limits.MAX_RECV_PER_SRQ + 1):
        with pytest.raises(shmdat.InvalidParameter) as e:
            srq.resize(bad)
        assert e.value.code == Return.INVALID_PARAMETER
    with pytest.raises(shmdat.InvalidState) as e:
        pz.free()                               # the SRQ uses the PZ
    assert e.value.code == Return.INVALID_STATE
    srq.free()
    for call in (srq.query, srq.free, lambda: srq.post_recv([], 0), lambda: srq.resize(4),
                 lambda: srq.set_lw(0)):
        with pytest.raises(shmdat.InvalidHandle) as e:
            call()
        assert e.value.code == Return.INVALID_HANDLE
    pz.free()


def test_ep_create_with_srq_errors(ia):
    pz, other = ia.pz_create(), ia.pz_create()
    srq = ia.srq_create(pz, 4)
    with pytest.raises(shmdat.InvalidParameter) as e:
        ia.ep_create_with_srq(other, None, None, None, srq, EpAttr(max_request_dtos=0))
    assert e.value.code == Return.INVALID_PARAMETER
    for bad in (None, pz):
        with pytest.raises(shmdat.InvalidHandle) as e:
            ia.ep_create_with_srq(pz, None, None, None, bad, EpAttr(max_request_dtos=0))
        assert e.value.code == Return.INVALID_HANDLE
    with shmdat.ia_open() as ia2:
        srq2 = ia2.srq_create(ia2.pz_create(), 4)
        with pytest.raises(shmdat.InvalidHandle) as e:
            ia.ep_create_with_srq(pz, None, None, None, srq2, EpAttr(max_request_dtos=0))
        assert e.value.code == Return.INVALID_HANDLE
    ep = ia.ep_create_with_srq(pz, None, None, None, srq, EpAttr(max_recv_dtos=0, max_request_dtos=0))
    with pytest.raises(shmdat.InvalidState) as e:
        srq.free()
    assert e.value.code == Return.INVALID_STATE
    ep.free()
    srq.free()


def test_srq_limits(ia):
    attr, _ = ia.query()
    pz = ia.pz_create()
    srqs = []
    with pytest.raises(shmdat.InsufficientResources) as e:
        while len(srqs) <= attr.max_srqs:
            srqs.append(ia.srq_create(pz, 1))
    assert e.value.code == Return.INSUFFICIENT_RESOURCES and len(srqs) == attr.max_srqs
    for s in srqs[1:]:
        s.free()
    srq = srqs[0]
    eps = []
    with pytest.raises(shmdat.InsufficientResources) as e:
        while len(eps) <= attr.max_ep_per_srq:
            eps.append(ia.ep_create_with_srq(pz, None, None, None, srq, EpAttr(max_request_dtos=0)))
    assert e.value.code == Return.INSUFFICIENT_RESOURCES and len(eps) == attr.max_ep_per_srq
    for ep in eps:
        ep.free()
    srq.free()
    big = ia.srq_create(pz, attr.max_recv_per_srq)
    lmr = ia.lmr_create(pz, 64)
    iov = [lmr.triplet(0, 64)]
    for i in range(attr.max_recv_per_srq):
        big.post_recv(iov, i)
    with pytest.raises(shmdat.InsufficientResources) as e:
        big.post_recv(iov, "one too many")
    assert e.value.code == Return.INSUFFICIENT_RESOURCES
    assert big.query().available_dto_count == attr.max_recv_per_srq
