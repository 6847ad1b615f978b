"""Data transfer operations between two real processes: send/recv, RDMA, flags, statuses."""

import zlib

import numpy as np
import pytest

import shmdat
from shmdat.hw import cma
from shmdat import (CompletionFlags as CF, DtoOp, DtoStatus, EpAttr, EpState, EventNumber as E,
                    MemPriv, Return, RmrTriplet)

from tests.nodes import WAIT, Node
from tests.remote import Remote, connect_to_remote


@pytest.fixture
def pair(spawn, conn_qual, request):
    """(node, remote): this process connected to a scriptable peer."""
    attr, remote_attr = getattr(request, "param", (None, None))
    node = Node(lmr_size=4 << 20, attr=attr)
    r = connect_to_remote(spawn, node, conn_qual, lmr_size=4 << 20, attr=remote_attr)
    yield node, r
    node.close()
    r.finish()


def fill(node, offset, data):
    node.lmr.buffer[offset:offset + len(data)] = np.frombuffer(data, np.uint8)
    return node.lmr.triplet(offset, len(data))


def test_send_gathers_and_recv_scatters_front_first(pair):
    node, r = pair
    r.post_recv_iov([(0, 4), (100, 4), (200, 100)], "scatter")
    iov = [fill(node, 0, b"ab"), fill(node, 50, b"cdef"), fill(node, 90, b"ghij")]
    node.ep.post_send(iov, "gather")
    event, _ = node.dto.wait(WAIT)
    assert event.number is E.DTO_COMPLETION_EVENT        # the enum, not a bare int
    d = event.data
    assert (d.user_cookie, d.status, d.transferred_length, d.operation) == \
        ("gather", DtoStatus.SUCCESS, 10, DtoOp.SEND)
    assert r.wait_dto() == ("SUCCESS", 10, "RECEIVE", "scatter")
    assert r.read(0, 4) == b"abcd" and r.read(100, 4) == b"efgh" and r.read(200, 2) == b"ij"
    assert r.read(202, 2) == b"\x00\x00"


def test_zero_byte_message(pair):
    node, r = pair
    r.post_recv(1, 64)
    node.ep.post_send([], "empty")
    assert node.dto_done().transferred_length == 0
    assert r.wait_dto() == ("SUCCESS", 0, "RECEIVE", ("recv", 0))


def test_rdma_write_then_read_by_the_initiator_alone(pair):
    node, r = pair
    target = r.rmr_triplet(1000, 5000)
    data = bytes(range(256)) * 16
    node.ep.post_rdma_write([fill(node, 0, data)], "w", RmrTriplet(target.rmr_context, target.target_address, len(data)))
    d = node.dto_done()
    assert (d.user_cookie, d.status, d.transferred_length, d.operation) == \
        ("w", DtoStatus.SUCCESS, len(data), DtoOp.RDMA_WRITE)
    assert r.read(1000, len(data)) == data          # the peer did not call into shmdat for this
    r.write(3000, b"remote bytes")
    src = RmrTriplet(target.rmr_context, target.target_address + 2000, 12)
    node.ep.post_rdma_read([node.lmr.triplet(10000, 6), node.lmr.triplet(20000, 6)], "r", src)
    d = node.dto_done()
    assert (d.status, d.transferred_length, d.operation) == (DtoStatus.SUCCESS, 12, DtoOp.RDMA_READ)
    assert bytes(node.lmr.buffer[10000:10006]) + bytes(node.lmr.buffer[20000:20006]) == b"remote bytes"


def test_rdma_into_consumer_memory_of_the_peer_by_cma(pair):
    node, r = pair
    if not cma.status()[0]:
        pytest.skip("cross-memory attach is forbidden here")
    target = RmrTriplet(*r.call("expose_consumer", 4096))
    node.ep.post_rdma_write([fill(node, 0, b"via cma")], "w", RmrTriplet(target.rmr_context, target.target_address + 10, 7))
    assert node.dto_done().status == DtoStatus.SUCCESS
    assert r.call("read_consumer", 10, 7) == b"via cma"


def test_suppress_hides_successful_completions(pair):
    node, r = pair
    r.post_recv(2, 64)
    node.ep.post_send([fill(node, 0, b"1")], "quiet", CF.SUPPRESS)
    node.ep.post_send([fill(node, 0, b"2")], "loud")
    assert node.dto_done().user_cookie == "loud"
    assert [x[0] for x in r.wait_dtos(2)] == ["SUCCESS", "SUCCESS"]


def test_unsignalled_needs_the_ep_attribute(pair):
    node, _ = pair
    with pytest.raises(shmdat.InvalidParameter) as e:
        node.ep.post_send([], "x", CF.UNSIGNALLED)
    assert e.value.code == Return.INVALID_PARAMETER
    with pytest.raises(shmdat.InvalidParameter):
        node.ep.post_recv([], "x", CF.UNSIGNALLED)


@pytest.mark.parametrize("pair", [(EpAttr(request_completion_flags=CF.UNSIGNALLED,
                                          recv_completion_flags=CF.UNSIGNALLED), None)], indirect=True)
def test_unsignalled_completion_is_queued_but_wakes_nobody(pair):
    node, r = pair
    node.ep.post_recv([node.lmr.triplet(0, 64)], "silent", CF.UNSIGNALLED)
    r.send(b"hello")                        # in our ring before we wait
    with pytest.raises(shmdat.TimeoutExpired) as e:
        node.dto.wait(300_000)              # it completes during the wait, without waking it
    assert e.value.nmore == 1
    d = node.dto.dequeue().data
    assert (d.user_cookie, d.status, d.transferred_length) == ("silent", DtoStatus.SUCCESS, 5)
    with pytest.raises(shmdat.InvalidState):           # threshold > 1 is refused on such an EVD
        node.dto.wait(0, threshold=2)
    r.post_recv(1, 64)
    node.ep.post_send([fill(node, 0, b"x")], "unsignalled send", CF.UNSIGNALLED)
    assert node.dto.wait(0)[0].data.user_cookie == "unsignalled send"   # queued all the same


@pytest.mark.parametrize("pair", [(None, EpAttr(recv_completion_flags=CF.SOLICITED_WAIT))], indirect=True)
def test_solicited_wait_wakes_only_for_solicited_sends(pair):
    node, r = pair
    r.post_recv(2, 64)
    node.ep.post_send([fill(node, 0, b"plain")], "plain")
    node.dto_done()
    assert r.call("wait_timeout", 300_000) == 1            # completion queued, nobody woken
    node.ep.post_send([fill(node, 0, b"wake up")], "solicited", CF.SOLICITED_WAIT)
    assert r.wait_dto() == ("SUCCESS", 5, "RECEIVE", ("recv", 0))
    assert r.wait_dto() == ("SUCCESS", 7, "RECEIVE", ("recv", 1))


def test_barrier_fence_is_accepted_and_ordered(pair):
    node, r = pair
    t = r.rmr_triplet(0, 64)
    r.write(0, b"fenced")
    node.ep.post_rdma_read([node.lmr.triplet(0, 6)], "read", RmrTriplet(t.rmr_context, t.target_address, 6))
    node.ep.post_rdma_write([node.lmr.triplet(0, 6)], "write", RmrTriplet(t.rmr_context, t.target_address + 32, 6),
                            CF.BARRIER_FENCE)
    assert [node.dto_done().user_cookie for _ in range(2)] == ["read", "write"]
    assert r.read(32, 6) == b"fenced"


def test_large_sends_arrive_whole_by_rendezvous_and_then_written_into_published_receives(pair):
    """The first 64 KiB message goes by rendezvous; the receives posted after it are
    published and the next ones are written by the sender straight into them: every
    one arrives whole, each over the last one's bytes."""
    node, r = pair
    size = 64 << 10
    for i in range(1, 7):
        r.post_recv(1, size)
        data = bytes([i]) * (size - i) + bytes(range(i))
        node.ep.post_send([fill(node, 0, data)], i)
        assert r.wait_dto()[:3] == ("SUCCESS", size, "RECEIVE")     # (a rendezvous completes once read)
        assert node.dto_done().status == DtoStatus.SUCCESS
        assert r.read(0, size) == data


def test_a_shared_evd_gets_completions_in_the_order_the_device_made_them(spawn, conn_qual):
    """One device round takes a failed receive of one EP (handed over as a WC, to drain)
    and then a good one of another EP: the good one's event, which the device could make
    at once, waits behind the failed one (Engine._complete_now)."""
    node = Node(lmr_size=1 << 16)
    first, second = node.ep, node.new_ep()
    r1 = connect_to_remote(spawn, node, conn_qual)          # first's QP moves first
    r2 = Remote(spawn, lmr_size=1 << 16)
    try:
        r2.listen(conn_qual + 1)
        second.connect(r2.address, conn_qual + 1, WAIT)
        r2.accept()
        node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
        assert r2.wait_conn()[0] == "CONNECTION_EVENT_ESTABLISHED"
        first.post_recv([node.lmr.triplet(0, 8)], "too short")
        second.post_recv([node.lmr.triplet(100, 64)], "fits")
        r1.send(b"x" * 40)
        r2.send(b"y" * 40)
        # Both messages are in their rings once both senders' sends completed; this
        # process has run no device round since.
        assert r1.wait_dto()[:3] == ("SUCCESS", 40, "SEND") and r2.wait_dto()[:3] == ("SUCCESS", 40, "SEND")
        got = [node.dto_done() for _ in range(2)]
        assert [(d.user_cookie, d.status) for d in got] == \
            [("too short", DtoStatus.LENGTH_ERROR), ("fits", DtoStatus.SUCCESS)]
    finally:
        node.close()
        r1.finish()
        r2.finish()


def test_message_longer_than_its_receive_is_length_error(pair):
    node, r = pair
    r.post_recv(2, 8)
    node.ep.post_send([fill(node, 0, b"x" * 100)], "long")
    node.ep.post_send([fill(node, 200, b"short")], "short")
    assert r.wait_dto()[0] == "LENGTH_ERROR"
    # As on every RC NIC, the receiver's QP goes to error: the connection breaks, the rest
    # flushes, and the sender learns it too.
    assert r.wait_dto()[:2] == ("ERR_FLUSHED", 0)
    assert r.wait_conn()[0] == "CONNECTION_EVENT_BROKEN"
    node.expect(node.conn_evd, E.CONNECTION_EVENT_BROKEN)


def test_disconnect_flushes_everything_outstanding(pair):
    node, r = pair
    r.post_recv(3, 64)
    node.ep.post_recv([node.lmr.triplet(0, 64)], "mine")
    node.ep.disconnect()
    d = node.dto_done()
    assert (d.user_cookie, d.status, d.operation) == ("mine", DtoStatus.ERR_FLUSHED, DtoOp.RECEIVE)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    assert [x[0] for x in r.wait_dtos(3)] == ["ERR_FLUSHED"] * 3
    assert r.wait_conn()[0] == "CONNECTION_EVENT_DISCONNECTED"
    node.ep.post_recv([node.lmr.triplet(0, 64)], "after")        # flushed at once
    d = node.dto_done(0)
    assert (d.user_cookie, d.status) == ("after", DtoStatus.ERR_FLUSHED)


def test_unconsumed_sends_flush_when_the_peer_disconnects(pair):
    node, r = pair
    for i in range(3):
        # Rendezvous sends (large, from provider memory) complete only when the peer
        # has copied them; the peer has no receive posted.
        node.ep.post_send([node.lmr.triplet(0, 1 << 20)], i)
    r.disconnect()
    got = [node.dto_done() for _ in range(3)]
    assert [(d.user_cookie, d.status) for d in got] == [(i, DtoStatus.ERR_FLUSHED) for i in range(3)]
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)


@pytest.mark.parametrize("problem", ["context", "bounds", "privileges", "pz"])
def test_bad_rdma_is_remote_access_error_and_breaks_the_connection(pair, problem):
    node, r = pair
    if problem == "pz":
        t = RmrTriplet(*r.expose(4096, other_pz=True))
    elif problem == "privileges":
        t = RmrTriplet(*r.expose(4096, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE | MemPriv.REMOTE_READ))
    else:
        t = r.rmr_triplet(0, 4096)
    if problem == "context":
        t = t._replace(rmr_context=t.rmr_context ^ 0xFFFF0000)
    if problem == "bounds":
        t = t._replace(target_address=t.target_address + (4 << 20) - 10, segment_length=100)
    node.ep.post_rdma_write([fill(node, 0, b"z" * 100)], "bad", t._replace(segment_length=100))
    d = node.dto_done()
    assert (d.user_cookie, d.status) == ("bad", DtoStatus.ERR_REMOTE_ACCESS)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_BROKEN)
    assert node.ia.async_evd.dequeue().number == E.ASYNC_ERROR_EP_BROKEN
    assert node.ep.state == EpState.DISCONNECTED
    assert r.wait_conn()[0] == "CONNECTION_EVENT_BROKEN"


def test_freed_lmr_stops_rdma_at_once(pair):
    node, r = pair
    t = RmrTriplet(*r.expose(4096))
    node.ep.post_rdma_write([fill(node, 0, b"ok")], "first", t._replace(segment_length=2))
    assert node.dto_done().status == DtoStatus.SUCCESS
    r.call("free_extra", 0)
    node.ep.post_rdma_write([fill(node, 0, b"ok")], "second", t._replace(segment_length=2))
    assert node.dto_done().status == DtoStatus.ERR_REMOTE_ACCESS


BIG_RECV_QUEUE = EpAttr(max_recv_dtos=512)


@pytest.mark.parametrize("pair", [(None, BIG_RECV_QUEUE)], indirect=True)
def test_order_is_kept_within_an_ep(pair):
    node, r = pair
    n = 200
    r.post_recv(n, 16)
    for i in range(n):
        node.ep.post_send([fill(node, 16 * i, i.to_bytes(4, "little"))], i)
    assert [node.dto_done().user_cookie for _ in range(n)] == list(range(n))
    got = r.wait_dtos(n)
    assert [c for *_, c in got] == [("recv", i) for i in range(n)]
    assert all(int.from_bytes(r.read(16 * i, 4), "little") == i for i in (0, 1, 99, 199))


@pytest.mark.parametrize("source", ["provider", "consumer", "consumer-no-rendezvous"])
def test_large_messages_cross_the_ring_whole(pair, source, monkeypatch):
    node, r = pair
    from shmdat.hw import ring
    if source == "consumer-no-rendezvous":
        monkeypatch.setattr(ring, "RDV_THRESHOLD", 1 << 40)     # force fragments through the ring
    size = 3 << 20
    data = np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8)
    if source == "provider":
        node.lmr.buffer[:size] = data
        iov = [node.lmr.triplet(0, size)]
    else:
        own = data.copy()
        lmr = node.ia.lmr_create(node.pz, own, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE)
        iov = [lmr.triplet(0, size)]
    r.post_recv(1, 4 << 20)
    node.ep.post_send(iov, "big")
    r.start("wait_dto")                     # both sides wait at once: fragments need both
    d = node.dto_done()
    assert r.result()[:2] == ("SUCCESS", size)
    assert (d.status, d.transferred_length) == (DtoStatus.SUCCESS, size)
    assert r.call("crc", 0, size) == zlib.crc32(data.tobytes())


def test_many_messages_wrap_the_ring(pair):
    node, r = pair
    n, size = 1500, 1000            # well past the ring's capacity, so it wraps many times
    r.post_recv(64, size)
    sent = []
    for i in range(n):
        payload = bytes([i % 251]) * (size - (i % 7))
        node.ep.post_send([fill(node, (i % 64) * size, payload)], i, CF.SUPPRESS)
        sent.append(zlib.crc32(payload))
        if i % 64 == 63:
            assert r.call("check_batch", 64, size, sent[-64:])
    assert r.call("check_batch", n % 64, size, sent[-(n % 64):]) if n % 64 else True


@pytest.mark.parametrize("pair", [(EpAttr(max_request_dtos=240), BIG_RECV_QUEUE)], indirect=True)
def test_message_waits_for_its_receive_and_a_full_ring_slows_the_sender(pair):
    node, r = pair
    n, size = 230, 1200                     # more than the ring holds, fewer than the EVD does
    for i in range(n):
        node.ep.post_send([fill(node, size * i, bytes([i % 256]) * size)], i)
    # A reliable connection: a send completes once the peer has taken it or had a receive
    # posted for it. None has: nothing completes, nothing is delivered, nothing is lost.
    with pytest.raises(shmdat.TimeoutExpired):
        node.dto_done(200_000)
    assert r.wait_timeout(100_000) == 0
    assert r.call("check_batch", 0, size, []) is True
    r.post_recv(n, size)
    r.start("wait_dtos", n)                 # our sends move as the peer drains the ring
    done = [node.dto_done().user_cookie for _ in range(n)]
    assert [x[0] for x in r.result()] == ["SUCCESS"] * n
    assert done == list(range(n))
    assert r.read(size * (n - 1), size) == bytes([(n - 1) % 256]) * size


@pytest.mark.parametrize("pair", [(EpAttr(max_request_dtos=2, max_message_size=1 << 20), None)],
                         indirect=True)
def test_request_limits(pair):
    node, _ = pair
    with pytest.raises(shmdat.LengthError) as e:
        node.ep.post_send([node.lmr.triplet(0, (1 << 20) + 1)], 0)
    assert e.value.code == Return.LENGTH_ERROR
    big = [node.lmr.triplet(0, 1 << 20)]      # rendezvous: outstanding until the peer copies it
    node.ep.post_send(big, 1)
    node.ep.post_send(big, 2)
    with pytest.raises(shmdat.InsufficientResources) as e:
        node.ep.post_send(big, 3)
    assert e.value.code == Return.INSUFFICIENT_RESOURCES


def test_local_iov_checks(pair):
    node, r = pair
    ep, lmr = node.ep, node.lmr
    with pytest.raises(shmdat.InvalidParameter):
        ep.post_send([lmr.triplet(0, 1)] * 5, "too many segments")       # max_request_iov is 4
    with pytest.raises(shmdat.PrivilegesViolation) as e:
        ep.post_send([(12345, lmr.registered_address, 4)], "unknown context")
    assert e.value.code == Return.PRIVILEGES_VIOLATION
    other = node.ia.lmr_create(node.ia.pz_create(), 64)
    with pytest.raises(shmdat.ProtectionViolation) as e:
        ep.post_send([other.triplet()], "other pz")
    assert e.value.code == Return.PROTECTION_VIOLATION
    with pytest.raises(shmdat.ProtectionViolation):
        ep.post_send([(lmr.lmr_context, lmr.registered_address + lmr.registered_size - 2, 4)], "outside")
    ro = node.ia.lmr_create(node.pz, 64, MemPriv.LOCAL_READ)
    with pytest.raises(shmdat.PrivilegesViolation):
        ep.post_recv([ro.triplet()], "cannot receive into read-only memory")
    wo = node.ia.lmr_create(node.pz, 64, MemPriv.LOCAL_WRITE)
    with pytest.raises(shmdat.PrivilegesViolation):
        ep.post_send([wo.triplet()], "cannot send from memory without LOCAL_READ")
    t = r.rmr_triplet(0, 8)
    with pytest.raises(shmdat.LengthError):
        ep.post_rdma_write([lmr.triplet(0, 16)], "more than the remote segment", t)
    with pytest.raises(shmdat.LengthError):
        ep.post_rdma_read([lmr.triplet(0, 4)], "less than the remote segment", t)
    with pytest.raises(shmdat.InvalidParameter):
        ep.post_send([lmr.triplet(0, 1)], "bad flags", 0x40)
    with pytest.raises(shmdat.InvalidParameter):
        ep.post_rdma_read([lmr.triplet(0, 8)], "bad remote", "nonsense")


@pytest.mark.parametrize("pair", [(EpAttr(max_recv_dtos=2), None)], indirect=True)
def test_recv_queue_limit(pair):
    node, _ = pair
    node.ep.post_recv([node.lmr.triplet(0, 8)], 1)
    node.ep.post_recv([node.lmr.triplet(8, 8)], 2)
    with pytest.raises(shmdat.InsufficientResources):
        node.ep.post_recv([node.lmr.triplet(16, 8)], 3)


def test_get_status_and_recv_query(pair):
    node, r = pair
    assert node.ep.get_status() == (EpState.CONNECTED, True, True)
    node.ep.post_recv([node.lmr.triplet(0, 8)], 1)
    node.ep.post_recv([node.lmr.triplet(8, 8)], 2)
    assert node.ep.get_status() == (EpState.CONNECTED, False, True)
    assert node.ep.recv_query() == (2, 2)
