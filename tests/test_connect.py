"""Connection establishment and teardown between two real processes."""

import pytest

import shmdat
from shmdat import CloseFlags, EpState, EventNumber as E, EvdFlags, PspFlags, Return

from tests.nodes import WAIT, Node
from tests.remote import Remote, connect_to_remote

MAX_PD = 256


@pytest.fixture
def node():
    n = Node()
    yield n
    n.close()


def test_private_data_both_ways(spawn, node, conn_qual):
    r = Remote(spawn)
    r.listen(conn_qual)
    pd = bytes(range(256))[:MAX_PD]
    node.ep.connect(r.address, conn_qual, WAIT, pd)
    assert r.accept(b"\x00reply\xff") == pd
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED).private_data == b"\x00reply\xff"
    assert r.wait_conn() == ("CONNECTION_EVENT_ESTABLISHED", b"")
    assert node.ep.state == EpState.CONNECTED
    p = node.ep.query()
    assert p.remote_ia_address == r.address and p.remote_port_qual == conn_qual
    node.ep.disconnect()
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED).ep is node.ep
    assert r.wait_conn()[0] == "CONNECTION_EVENT_DISCONNECTED"
    r.finish()


def test_empty_private_data(spawn, node, conn_qual):
    r = Remote(spawn)
    r.listen(conn_qual)
    node.ep.connect(r.address, conn_qual, WAIT)
    assert r.accept() == b""
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED).private_data == b""
    r.finish()


def test_private_data_over_the_limit_is_invalid_parameter(node, spawn, conn_qual):
    _, prov = node.ia.query()
    assert prov.max_private_data_size == MAX_PD
    with pytest.raises(shmdat.InvalidParameter) as e:
        node.ep.connect(node.address, conn_qual, WAIT, bytes(MAX_PD + 1))
    assert e.value.code == Return.INVALID_PARAMETER
    assert node.ep.state == EpState.UNCONNECTED
    # accept and reject check it too
    r = Remote(spawn)
    node.listen(conn_qual)
    r.connect(node.address, conn_qual)
    cr = node.expect(node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
    with pytest.raises(shmdat.InvalidParameter):
        cr.accept(node.ep, bytes(MAX_PD + 1))
    with pytest.raises(shmdat.InvalidParameter):
        cr.reject(bytes(MAX_PD + 1))
    cr.reject()
    assert r.wait_conn()[0] == "CONNECTION_EVENT_PEER_REJECTED"
    r.finish()


def test_reject_carries_private_data(spawn, node, conn_qual):
    r = Remote(spawn)
    r.listen(conn_qual)
    node.ep.connect(r.address, conn_qual, WAIT, b"let me in")
    assert r.reject(b"no: full") == b"let me in"
    d = node.expect(node.conn_evd, E.CONNECTION_EVENT_PEER_REJECTED)
    assert d.ep is node.ep and d.private_data == b"no: full"
    assert node.ep.state == EpState.DISCONNECTED
    node.ep.reset()
    assert node.ep.state == EpState.UNCONNECTED
    r.finish()


def test_unused_conn_qual_is_non_peer_rejected(spawn, node, conn_qual):
    r = Remote(spawn)
    node.ep.connect(r.address, conn_qual, WAIT)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_NON_PEER_REJECTED)
    assert node.ep.state == EpState.DISCONNECTED
    r.finish()


def test_unknown_address_is_unreachable(node, conn_qual):
    # An address the device does not reach (shm0 has 127.0.0.0/8; an IA's address is an
    # IP address, the same for every IA of the machine).
    node.ep.connect("192.0.2.1", conn_qual, WAIT)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_UNREACHABLE)
    assert node.ep.state == EpState.DISCONNECTED


@pytest.mark.parametrize("address", ["nonsense", "1.2", 42, "a.b.c"])
def test_malformed_address_is_invalid_address(node, address):
    with pytest.raises(shmdat.InvalidAddress) as e:
        node.ep.connect(address, 1, WAIT)
    assert e.value.code == Return.INVALID_ADDRESS
    assert node.ep.state == EpState.UNCONNECTED


def test_connect_times_out_and_late_accept_fails(spawn, node, conn_qual):
    r = Remote(spawn)
    r.listen(conn_qual)
    node.ep.connect(r.address, conn_qual, 50_000)      # 50 ms, and the peer does not accept
    node.expect(node.conn_evd, E.CONNECTION_EVENT_TIMED_OUT)
    assert node.ep.state == EpState.DISCONNECTED
    r.next_cr()
    r.accept_only()
    assert r.wait_conn()[0] == "CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR"
    assert r.state() == "DISCONNECTED"
    r.finish()


def test_psp_conn_qual_in_use_and_any(node, conn_qual):
    psp = node.listen(conn_qual)
    with pytest.raises(shmdat.ConnQualInUse) as e:
        node.listen(conn_qual)
    assert e.value.code == Return.CONN_QUAL_IN_USE
    anyp = node.ia.psp_create_any(node.cr_evd)
    assert anyp.conn_qual != conn_qual and anyp.query().conn_qual == anyp.conn_qual
    p = psp.query()
    assert (p.conn_qual, p.evd, p.psp_flags) == (conn_qual, node.cr_evd, PspFlags.CONSUMER)
    psp.free()
    node.listen(conn_qual).free()       # free released the qualifier
    with pytest.raises(shmdat.InvalidHandle):
        psp.free()


def test_psp_provider_flag_is_model_not_supported(node, conn_qual):
    with pytest.raises(shmdat.ModelNotSupported) as e:
        node.ia.psp_create(conn_qual, node.cr_evd, PspFlags.PROVIDER)
    assert e.value.code == Return.MODEL_NOT_SUPPORTED


def test_psp_needs_a_cr_evd(node, conn_qual):
    with pytest.raises(shmdat.InvalidHandle):
        node.ia.psp_create(conn_qual, node.dto)


def test_rsp_reserves_one_ep(spawn, conn_qual):
    server = Node()
    try:
        rsp = server.ia.rsp_create(conn_qual, server.ep, server.cr_evd)
        assert server.ep.state == EpState.RESERVED
        assert rsp.query().ep is server.ep
        with pytest.raises(shmdat.ConnQualInUse):
            server.listen(conn_qual)
        peer = spawn(_connect_to, server.address, conn_qual, b"rsp!")
        d = server.expect(server.cr_evd, E.CONNECTION_REQUEST_EVENT)
        assert d.sp is None and d.conn_qual == conn_qual        # the RSP is used up
        assert server.ep.state == EpState.PASSIVE_CONNECTION_PENDING
        assert d.cr.query().local_ep is server.ep
        with pytest.raises(shmdat.InvalidHandle):
            rsp.query()
        with pytest.raises(shmdat.InvalidState):
            server.ep.free()
        d.cr.accept(None, b"ok")
        server.expect(server.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
        assert peer.recv() == ("CONNECTION_EVENT_ESTABLISHED", b"ok")
        peer.send("done")
        server.expect(server.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
        peer.join()
    finally:
        server.close()


def test_rsp_free_unreserves(node, conn_qual):
    rsp = node.ia.rsp_create(conn_qual, node.ep, node.cr_evd)
    with pytest.raises(shmdat.InvalidState):
        node.ia.rsp_create(conn_qual + 1, node.ep, node.cr_evd)
    rsp.free()
    assert node.ep.state == EpState.UNCONNECTED


def _connect_to(ch, address, conn_qual, private_data):
    n = Node()
    n.ep.connect(address, conn_qual, WAIT, private_data)
    event, _ = n.conn_evd.wait(WAIT)
    ch.send((event.number.name, event.data.private_data))
    assert ch.recv() == "done"
    n.ep.disconnect()
    n.expect(n.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    n.close()


def test_handoff_moves_the_request(spawn, conn_qual):
    server = Node()
    try:
        server.listen(conn_qual)
        other_evd = server.ia.evd_create(4, EvdFlags.CR)
        other = server.ia.psp_create(conn_qual + 1, other_evd)
        peer = spawn(_connect_to, server.address, conn_qual, b"handed")
        cr = server.expect(server.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
        with pytest.raises(shmdat.InvalidParameter):
            cr.handoff(conn_qual + 99)
        cr.handoff(conn_qual + 1)
        with pytest.raises(shmdat.InvalidHandle):
            cr.accept(server.ep)
        d = server.expect(other_evd, E.CONNECTION_REQUEST_EVENT)
        assert d.sp is other and d.conn_qual == conn_qual + 1 and d.cr.private_data == b"handed"
        d.cr.accept(server.ep)
        server.expect(server.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
        assert peer.recv()[0] == "CONNECTION_EVENT_ESTABLISHED"
        peer.send("done")
        server.expect(server.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
        peer.join()
    finally:
        server.close()


def test_dup_connect_reaches_the_same_service_point(spawn, node, conn_qual):
    r = connect_to_remote(spawn, node, conn_qual)
    ep2 = node.new_ep()
    with pytest.raises(shmdat.InvalidParameter):
        ep2.dup_connect(node.new_ep(), WAIT)
    ep2.dup_connect(node.ep, WAIT, b"dup")
    assert r.next_cr() == b"dup"
    assert ep2.query().remote_port_qual == conn_qual
    r.reject_only()
    node.expect(node.conn_evd, E.CONNECTION_EVENT_PEER_REJECTED)
    r.finish()


@pytest.mark.parametrize("who", ["active", "passive"])
@pytest.mark.parametrize("flags", [CloseFlags.ABRUPT, CloseFlags.GRACEFUL])
def test_disconnect_gives_one_event_each_side(spawn, node, conn_qual, who, flags):
    r = connect_to_remote(spawn, node, conn_qual)       # ESTABLISHED on both sides
    if who == "active":
        node.ep.disconnect(flags)
    else:
        r.disconnect(graceful=flags == CloseFlags.GRACEFUL)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    assert r.wait_conn()[0] == "CONNECTION_EVENT_DISCONNECTED"
    assert node.ep.state == EpState.DISCONNECTED and r.state() == "DISCONNECTED"
    node.ep.disconnect()        # a second disconnect is a no-op, not another event
    with pytest.raises(shmdat.TimeoutExpired):
        node.conn_evd.wait(100_000)
    assert r.no_conn_event(100_000)
    r.finish()


def test_graceful_disconnect_waits_for_requests(spawn, node, conn_qual):
    r = Remote(spawn)
    r.listen(conn_qual)
    node.ep.connect(r.address, conn_qual, WAIT)
    r.accept()
    node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED)
    node.ep.post_send([node.lmr.triplet(0, 100)], "pending")    # the peer has no receive posted
    node.ep.disconnect(CloseFlags.GRACEFUL)
    assert node.ep.state == EpState.DISCONNECT_PENDING          # until the peer has consumed it
    r.post_recv(1, 4096)
    d = node.dto_done()
    assert (d.user_cookie, d.status) == ("pending", shmdat.DtoStatus.SUCCESS)
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    assert r.wait_dto()[0] == "SUCCESS"
    assert r.wait_conn()[0] == "CONNECTION_EVENT_ESTABLISHED"
    assert r.wait_conn()[0] == "CONNECTION_EVENT_DISCONNECTED"
    r.finish()


def test_illegal_calls_name_the_state(node, conn_qual):
    ep = node.ep
    with pytest.raises(shmdat.InvalidState) as e:
        ep.post_send([], "x")
    assert "UNCONNECTED" in str(e.value) and e.value.subtype == "INVALID_STATE_EP_UNCONNECTED"
    with pytest.raises(shmdat.InvalidState) as e:
        ep.disconnect()
    assert e.value.code == Return.INVALID_STATE
    node.listen(conn_qual)                                    # our own IA; nobody accepts
    ep.connect(node.address, conn_qual, WAIT)
    assert ep.state == EpState.ACTIVE_CONNECTION_PENDING
    for call in (lambda: ep.connect(node.address, conn_qual, WAIT),
                 lambda: ep.post_send([], "x"),
                 lambda: ep.post_rdma_write([], "x", (1, 2, 0)),
                 ep.reset):
        with pytest.raises(shmdat.InvalidState) as e:
            call()
        assert e.value.subtype == "INVALID_STATE_EP_ACTCONNPENDING"
        assert "ACTIVE_CONNECTION_PENDING" in str(e.value)
    ep.disconnect()
    node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED)
    # On a DISCONNECTED EP a request is accepted and flushed at once.
    ep.post_send([], "late")
    d = node.dto_done()
    assert (d.user_cookie, d.status) == ("late", shmdat.DtoStatus.ERR_FLUSHED)
    cr = node.expect(node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
    cr.accept(node.new_ep())                                  # the requester gave up
    node.expect(node.conn_evd, E.CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR)


def test_connect_needs_connect_evd(node):
    ep = node.ia.ep_create(node.pz, node.dto, node.dto, None)
    with pytest.raises(shmdat.InvalidState):
        ep.connect(node.address, 1, WAIT)


def test_loopback_in_one_process(node, conn_qual):
    """Both ends in one IA: the provider makes progress for both."""
    node.listen(conn_qual)
    server_ep = node.new_ep()
    node.ep.connect(node.address, conn_qual, WAIT, b"self")
    cr = node.expect(node.cr_evd, E.CONNECTION_REQUEST_EVENT).cr
    cr.accept(server_ep, b"me")
    numbers = {node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED).ep for _ in range(2)}
    assert numbers == {node.ep, server_ep}
    server_ep.post_recv([node.lmr.triplet(0, 64)], "r")
    node.lmr.buffer[100:105] = list(b"hello")
    node.ep.post_send([node.lmr.triplet(100, 5)], "s")
    got = {node.dto_done().user_cookie for _ in range(2)}
    assert got == {"r", "s"}
    assert bytes(node.lmr.buffer[:5]) == b"hello"


def test_an_ep_with_null_dto_evds_connects_and_disconnects(spawn, node, conn_qual):
    """dat_ep_create with NULL recv and request EVDs and both queues 0: an EP made
    only to connect and disconnect, a common consumer pattern."""
    ep = node.ia.ep_create(node.pz, None, None, node.conn_evd,
                           shmdat.EpAttr(max_recv_dtos=0, max_request_dtos=0))
    r = Remote(spawn)
    r.listen(conn_qual)
    ep.connect(r.address, conn_qual, WAIT, b"only to connect")
    assert r.accept() == b"only to connect"
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_ESTABLISHED).ep is ep
    ep.disconnect()
    assert node.expect(node.conn_evd, E.CONNECTION_EVENT_DISCONNECTED).ep is ep
    assert r.wait_conn()[0] == "CONNECTION_EVENT_ESTABLISHED"
    assert r.wait_conn()[0] == "CONNECTION_EVENT_DISCONNECTED"
    r.finish()


def test_null_evd_queue_defaults_to_zero(node):
    attr = node.ia.ep_create(node.pz, None, None, node.conn_evd).query().ep_attr
    assert (attr.max_recv_dtos, attr.max_request_dtos) == (0, 0)
    attr = node.ia.ep_create(node.pz, node.dto, None, None).query().ep_attr
    assert attr.max_recv_dtos > 0 and attr.max_request_dtos == 0


@pytest.mark.parametrize("recv, req, max_recv_dtos, max_request_dtos, field", [
    (True, True, 0, 8, "max_recv_dtos"),        # an EVD with a zero queue
    (True, True, 8, 0, "max_request_dtos"),
    (False, True, 8, 8, "max_recv_dtos"),       # a NULL EVD with a queue
    (True, False, 8, 8, "max_request_dtos"),
])
def test_evd_and_queue_must_agree(node, recv, req, max_recv_dtos, max_request_dtos, field):
    attr = shmdat.EpAttr(max_recv_dtos=max_recv_dtos, max_request_dtos=max_request_dtos)
    with pytest.raises(shmdat.InvalidParameter, match=field) as e:
        node.ia.ep_create(node.pz, node.dto if recv else None, node.dto if req else None,
                          node.conn_evd, attr)
    assert e.value.code == Return.INVALID_PARAMETER and e.value.subtype == "INVALID_ARG6"
    ep = node.ia.ep_create(node.pz, node.dto, node.dto, node.conn_evd)
    with pytest.raises(shmdat.InvalidParameter, match="max_request_dtos"):
        ep.modify(request_evd=None)             # dat_ep_modify keeps the same rule
    ep.modify(request_evd=None, max_request_dtos=0)
    assert ep.query().request_evd is None
