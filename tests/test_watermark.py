"""dat_ep_set_watermark: the high watermarks count the receive buffers an EP holds
(allocated to it, or completed and not yet reaped from its recv EVD)."""

import pytest

import shmdat
from shmdat import AsyncReason, DtoStatus, EpAttr, EventNumber as E, Return, WATERMARK_INFINITE

from tests.test_srq import SrqServer, client, ep_with_receives

INF = WATERMARK_INFINITE


@pytest.fixture
def server(conn_qual):
    s = SrqServer(conn_qual)
    yield s
    s.close()


def soft_events(server):
    return [e for e in server.async_events() if e.number == E.ASYNC_EP_SOFT_HIGH_WATERMARK]


def test_watermarks_default_to_infinite(spawn, server):
    assert EpAttr().srq_soft_hw == INF
    r = client(spawn)
    ep = server.connect(r)
    for slot in range(6):
        server.post(slot)
    for i in range(6):
        r.call("send", b"x")
    assert server.counts() == (0, 6)            # six buffers held by the EP, unreaped
    assert server.async_events() == []
    assert ep.state == shmdat.EpState.CONNECTED
    r.finish()


def test_soft_high_watermark_is_one_shot(spawn, server):
    r = client(spawn)
    ep = server.connect(r)
    for slot in range(6):
        server.post(slot)
    ep.set_watermark(1, INF)
    r.call("send", b"a")
    server.counts()                             # progress: the EP holds 1, not above 1
    assert soft_events(server) == []
    r.call("send", b"b")
    server.counts()                             # 2 held: above the soft mark
    (event,) = soft_events(server)
    assert event.data.handle is ep and event.data.reason == AsyncReason.SOFT_HIGH_WATERMARK
    assert event.evd is server.n.ia.async_evd
    r.call("send", b"c")
    server.counts()
    assert soft_events(server) == []            # quiet until set again
    ep.set_watermark(2, INF)                    # 3 held: above already, fires during the call
    assert [e.data.handle for e in soft_events(server)] == [ep]
    for _ in range(3):
        assert server.n.dto_done().status == DtoStatus.SUCCESS
    ep.set_watermark(0, INF)                    # all reaped: nothing held
    assert soft_events(server) == []
    assert ep.state == shmdat.EpState.CONNECTED
    r.finish()


def test_hard_high_watermark_breaks_the_connection(spawn, server):
    r = client(spawn)
    ep = server.connect(r)
    for slot in range(4):
        server.post(slot)
    ep.set_watermark(INF, 2)
    for data in (b"a", b"b", b"c"):
        r.call("send", data)
    server.n.expect(server.n.conn_evd, E.CONNECTION_EVENT_BROKEN)
    assert ep.state == shmdat.EpState.DISCONNECTED
    # Two delivered; the third would have been a third buffer held: never taken.
    assert [server.n.dto_done().user_cookie for _ in range(2)] == [0, 1]
    assert server.counts() == (2, 2)
    numbers = [e.number for e in server.async_events()]
    assert E.ASYNC_ERROR_EP_BROKEN in numbers and E.ASYNC_EP_SOFT_HIGH_WATERMARK not in numbers
    assert r.wait_conn()[0] == "CONNECTION_EVENT_BROKEN"
    r.finish()


def test_watermarks_count_posted_buffers_without_srq(ia):
    ep = ep_with_receives(ia, 3)
    ep.set_watermark(3, INF)
    with pytest.raises(shmdat.QueueEmpty):
        ia.async_evd.dequeue()
    ep.set_watermark(2, INF)
    event = ia.async_evd.dequeue()
    assert event.number == E.ASYNC_EP_SOFT_HIGH_WATERMARK and event.data.handle is ep


def test_set_watermark_errors(ia):
    pz = ia.pz_create()
    ep = ia.ep_create(pz)
    for soft, hard in ((-1, INF), (INF, INF + 1), ("1", INF), (1, 2.0)):
        with pytest.raises(shmdat.InvalidParameter) as e:
            ep.set_watermark(soft, hard)
        assert e.value.code == Return.INVALID_PARAMETER
    ep.free()
    with pytest.raises(shmdat.InvalidHandle) as e:
        ep.set_watermark(INF, INF)
    assert e.value.code == Return.INVALID_HANDLE
