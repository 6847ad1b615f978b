"""DAT on a verbs module without shm0dv: the NIC engine (shmdat/dat/nic_engine.py),
run on tests/nic_verbs.py, a stand-in with rdma-core's pyverbs' gaps whose device runs
by itself. The stand-in is chosen by SHMDAT_DAT_VERBS (or, shaped as rdma-core's
package, by SHMDAT_PYVERBS), which spawned peers inherit. .ci/run runs most of the DAT
suite this way too; these are the checks of what differs on a NIC."""

import os
import threading

import pytest

import shmdat
from shmdat import DtoStatus, EventNumber as E, EvdFlags, WATERMARK_INFINITE
from shmdat.dat import seam
from shmdat.dat.nic_engine import NicEngine
from tests.nodes import WAIT, Node
from tests.remote import Remote, connect_to_remote

NIC_LIMIT = 56 - 6          # rdma_cm's REQ private data on IB/RoCE, less DAT's header


@pytest.fixture
def nic(monkeypatch):
    """DAT's device is the stand-in from here on, in this process and its peers."""
    monkeypatch.setenv(seam.VERBS_ENV, "tests.nic_verbs")


@pytest.fixture
def node(nic):
    n = Node()
    yield n
    n.close()


def test_without_shm0dv_dat_takes_the_nic_engine_and_says_what_it_lacks(node):
    assert isinstance(node.ia._engine, NicEngine)
    ia_attr, provider = node.ia.query()
    assert provider.max_private_data_size == NIC_LIMIT
    assert provider.srq_watermarks_supported is False
    assert provider.srq_info_supported is False and provider.ep_recv_info_supported is False
    assert "virtual" in provider.lmr_mem_types_supported        # a NIC reaches any MR
    assert ia_attr.ia_address == "127.0.0.1"


def test_private_data_is_rdma_cms_less_dats_header(spawn, node, conn_qual):
    r = Remote(spawn)
    r.listen(conn_qual)
    with pytest.raises(shmdat.InvalidParameter):
        node.ep.connect(r.address, conn_qual, WAIT, b"x" * (NIC_LIMIT + 1))
    node.ep.connect(r.address, conn_qual, WAIT, b"q" * NIC_LIMIT)
    assert r.reject(b"r" * NIC_LIMIT) == b"q" * NIC_LIMIT
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_PEER_REJECTED).private_data \
        == b"r" * NIC_LIMIT
    ep = node.new_ep()
    ep.connect(r.address, conn_qual, WAIT, b"again")
    assert r.accept(b"a" * NIC_LIMIT) == b"again"
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED).private_data \
        == b"a" * NIC_LIMIT
    r.finish()


def test_send_recv_and_rdma_with_the_device_running_by_itself(spawn, node, conn_qual):
    r = connect_to_remote(spawn, node, conn_qual)
    node.ep.post_recv([node.lmr.triplet(0, 64)], "in")
    r.send(b"hello")
    d = node.dto_done()
    assert (d.user_cookie, d.status, d.transferred_length) == ("in", DtoStatus.SUCCESS, 5)
    assert bytes(node.lmr.buffer[:5]) == b"hello"
    node.lmr.buffer[100:105] = memoryview(b"world")
    node.ep.post_rdma_write([node.lmr.triplet(100, 5)], "w", r.rmr_triplet(0, 64))
    # (the peer's buffer now holds "world" over the "hello" it sent from there)
    assert node.dto_done().status == DtoStatus.SUCCESS
    assert r.read(0, 5) == b"world"
    node.ep.disconnect()
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    assert r.wait_conn()[0] == "CONNECTION_EVENT_DISCONNECTED"
    r.finish()


def test_events_are_waited_for_in_poll_on_non_blocking_fds_by_one_thread(spawn, nic, conn_qual):
    # pyverbs' CMEvent and get_async_event hold the GIL: DAT never blocks in them.
    before = {t for t in threading.enumerate() if t.name == "shmdat-nic-events"}
    node = Node()
    engine = node.ia._engine
    try:
        r = connect_to_remote(spawn, node, conn_qual)
        assert os.get_blocking(engine.async_fd) is False
        channels = set(engine.channels.values())
        assert channels and all(os.get_blocking(ch.fd) is False for ch in channels)
        assert {t for t in threading.enumerate() if t.name == "shmdat-nic-events"} \
            == before | {engine.events_thread}
        node.ep.disconnect()
        node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
        r.finish()
    finally:
        node.close()
    engine.events_thread.join(WAIT / 1e6)
    assert not engine.events_thread.is_alive()


def test_a_killed_peer_is_disconnected_as_its_kernel_would_say(spawn, node, conn_qual):
    # On a NIC a killed process's kernel sends its DREQ: DISCONNECTED, not shm0's BROKEN.
    r = connect_to_remote(spawn, node, conn_qual)
    node.ep.post_recv([node.lmr.triplet(0, 64)], "r1")
    r.peer.kill()
    d = node.dto_done()
    assert (d.user_cookie, d.status) == ("r1", DtoStatus.ERR_FLUSHED)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)


def test_the_hard_watermark_of_an_srq_ep_is_not_supported(node):
    srq = node.ia.srq_create(node.pz, 8, 1)
    ep = node.ia.ep_create_with_srq(node.pz, node.dto, node.dto, node.conn_evd, srq)
    with pytest.raises(shmdat.ModelNotSupported):
        ep.set_watermark(WATERMARK_INFINITE, 4)
    ep.set_watermark(4, WATERMARK_INFINITE)                 # the soft one counts completions
    ep.free()
    srq.free()


def test_two_connections_through_one_psp_get_their_own_events(spawn, node, conn_qual):
    # pyverbs' CMEvent names no CMID: events about a PSP's requests go to the oldest
    # request in a state that takes them (cm.py), right while they come in that order.
    node.listen(conn_qual)
    peers = [Remote(spawn) for _ in range(2)]
    eps = [node.new_ep() for _ in peers]
    for r, ep in zip(peers, eps):
        r.start("connect", node.address, conn_qual, b"")
        cr = node.expect(node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
        cr.accept(ep)
        assert node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED).ep is ep
        r.result()
    for r, ep in zip(peers, eps):
        r.disconnect()
        assert node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED).ep is ep
        r.finish()


def test_ofa_v2_names_open_through_rdma_cores_pyverbs_path(monkeypatch):
    monkeypatch.setenv(seam.PYVERBS_ENV, "tests.nic_pyverbs")
    name = seam.nic_name("shm0", 1)
    assert name in [p.ia_name for p in shmdat.registry_list_providers()]
    with shmdat.ia_open(name) as a, shmdat.ia_open(name) as b:
        assert isinstance(a._engine, NicEngine) and a.query()[1].provider_name == name
        pz_a, pz_b = a.pz_create(), b.pz_create()
        evd_a = a.evd_create(16, EvdFlags.DEFAULT)
        evd_b = b.evd_create(16, EvdFlags.DEFAULT)
        psp = b.psp_create_any(evd_b)
        ep_a = a.ep_create(pz_a, evd_a, evd_a, evd_a)
        ep_b = b.ep_create(pz_b, evd_b, evd_b, evd_b)
        ep_a.connect(b.address, psp.conn_qual, WAIT, b"hi")
        event, _ = evd_b.wait(WAIT)
        assert event.data.cr.private_data == b"hi"
        event.data.cr.accept(ep_b)
        assert evd_a.wait(WAIT)[0].number == E.CONNECTION_EVENT_ESTABLISHED
        assert evd_b.wait(WAIT)[0].number == E.CONNECTION_EVENT_ESTABLISHED
