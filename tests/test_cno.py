"""CNOs: triggers, cno.wait, and a file descriptor that select, selectors and asyncio can wait on."""

import asyncio
import selectors

import pytest

import shmdat
from shmdat import EvdFlags, EventNumber as E, Return

from tests.remote import Remote
from tests.test_evd_wait import Waiter, until_waiting

WAIT = 10_000_000
SECONDS = 10.0


class CnoNode:
    """An IA whose DTO EVD is attached to a CNO, connected to a spawned peer."""

    def __init__(self, spawn, conn_qual):
        self.ia = shmdat.ia_open()
        self.cno = self.ia.cno_create()
        pz = self.ia.pz_create()
        self.dto = self.ia.evd_create(64, EvdFlags.DTO, self.cno)
        self.conn = self.ia.evd_create(8, EvdFlags.CONNECTION)
        self.ep = self.ia.ep_create(pz, self.dto, self.dto, self.conn)
        self.lmr = self.ia.lmr_create(pz, 4096)
        self.peer = Remote(spawn)
        self.peer.listen(conn_qual)
        self.ep.connect(self.peer.address, conn_qual, WAIT)
        self.peer.accept()
        assert self.conn.wait(WAIT)[0].number == E.CONNECTION_EVENT_ESTABLISHED
        assert self.peer.wait_conn()[0] == "CONNECTION_EVENT_ESTABLISHED"
        self.ep.post_recv([self.lmr.triplet(0, 4096)], "recv")

    def close(self):
        self.peer.finish()
        self.ia.close()


@pytest.fixture
def node(spawn, conn_qual):
    n = CnoNode(spawn, conn_qual)
    yield n
    if not n.ia._freed:         # a failed test leaves it open
        n.ia.close()


def test_cno_wait_returns_the_evd_that_triggered_it(ia):
    cno = ia.cno_create()
    a = ia.evd_create(4, EvdFlags.SOFTWARE, cno)
    b = ia.evd_create(4, EvdFlags.SOFTWARE, cno)
    with pytest.raises(shmdat.TimeoutExpired) as e:
        cno.wait(1_000)
    assert e.value.code == Return.TIMEOUT_EXPIRED
    b.post_se(1)
    a.post_se(2)
    assert cno.wait(WAIT) is b and cno.wait(WAIT) is a
    for evd in (a, b):
        evd.free()
    cno.free()


def test_one_waiter_per_cno_and_abort_when_freed(ia):
    cno = ia.cno_create()
    w = Waiter(lambda: cno.wait(WAIT))
    until_waiting(cno)
    with pytest.raises(shmdat.InvalidState) as e:       # a second waiter is refused
        cno.wait(0)
    assert e.value.code == Return.INVALID_STATE
    cno.free()
    assert isinstance(w.outcome(), shmdat.Abort)


def test_fileno_polls_readable_while_triggered(node):
    fd = node.cno.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        assert sel.select(0) == []
        node.peer.send(b"wake the selector")
        assert [key.fd for key, _ in sel.select(SECONDS)] == [fd]
        assert node.cno.wait(0) is node.dto
        assert sel.select(0) == []                      # the trigger was consumed
    d = node.dto.dequeue().data
    assert d.transferred_length == len(b"wake the selector")
    node.close()


def test_evd_wait_async_gets_a_peer_message(node):
    async def main():
        with pytest.raises(shmdat.TimeoutExpired):
            await node.dto.wait_async(timeout=10_000)
        node.peer.start("send", b"to asyncio")           # the peer sends while the loop waits
        event, nmore = await asyncio.wait_for(node.dto.wait_async(timeout=WAIT), SECONDS)
        node.peer.result()
        return event, nmore
    event, nmore = asyncio.run(main())
    assert event.data.transferred_length == len(b"to asyncio") and nmore == 0
    assert bytes(node.lmr.buffer[:10]) == b"to asyncio"
    node.close()


def test_cno_wait_async(node):
    async def main():
        node.peer.start("send", b"x")
        evd = await asyncio.wait_for(node.cno.wait_async(timeout=WAIT), SECONDS)
        node.peer.result()
        return evd
    assert asyncio.run(main()) is node.dto
    assert node.dto.dequeue().data.transferred_length == 1
    node.close()


def test_many_evds_wait_async_in_one_loop(ia):
    evds = [ia.evd_create(4, EvdFlags.SOFTWARE) for _ in range(5)]

    async def main():
        waits = [asyncio.ensure_future(e.wait_async(timeout=WAIT)) for e in evds]
        for i, e in enumerate(evds):
            e.post_se(i)
        return await asyncio.wait_for(asyncio.gather(*waits), SECONDS)
    results = asyncio.run(main())
    assert [event.data.pointer for event, _ in results] == list(range(5))
