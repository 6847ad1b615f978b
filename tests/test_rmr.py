"""RMRs (memory windows): bind through a connected EP, and the peer's RDMA through them."""

import pytest

import shmdat
from shmdat import DtoStatus, EventNumber as E, MemPriv, Return, RmrTriplet

from tests.nodes import Node
from tests.remote import Remote


@pytest.fixture
def pair(spawn, conn_qual):
    node = Node()
    r = Remote(spawn)
    node.listen(conn_qual)
    r.connect(node.address, conn_qual)
    r.start("wait_conn")            # the active side runs the handshake's last step
    node.accept()
    assert r.result()[0] == "CONNECTION_EVENT_ESTABLISHED"
    yield node, r
    node.close()
    r.finish()


def _rdma_from_peer(r, triplet, data):
    """The peer writes `data` into our memory through `triplet`; returns the DTO status."""
    r.write(0, data)
    return r.call("rdma_write_to", tuple(triplet), len(data))


def test_bind_exposes_a_window_and_rebind_moves_it(pair):
    node, r = pair
    lmr = node.ia.lmr_create(node.pz, 8192, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE)
    rmr = node.pz.rmr_create()
    ctx = rmr.bind(lmr.triplet(1024, 256), MemPriv.REMOTE_WRITE, node.ep, "bound")
    d = node.expect(node.dto, E.RMR_BIND_COMPLETION_EVENT)
    assert (d.rmr, d.user_cookie, d.status) == (rmr, "bound", DtoStatus.SUCCESS)
    q = rmr.query()
    assert q.rmr_context == ctx and q.lmr_triplet == lmr.triplet(1024, 256) and q.mem_priv == MemPriv.REMOTE_WRITE
    window = RmrTriplet(ctx, lmr.registered_address + 1024, 256)
    assert _rdma_from_peer(r, window, b"through the window") == "SUCCESS"
    assert bytes(lmr.buffer[1024:1042]) == b"through the window"
    with pytest.raises(shmdat.InvalidState):
        lmr.free()                                  # an RMR is bound into it
    new = rmr.bind(lmr.triplet(4096, 64), MemPriv.REMOTE_READ, node.ep, "again", shmdat.CompletionFlags.SUPPRESS)
    assert new != ctx
    with pytest.raises(shmdat.QueueEmpty):
        node.dto.dequeue()                          # suppressed
    assert rmr.bind(lmr.triplet(0, 0), MemPriv.REMOTE_READ, node.ep, "unbind") is None
    node.expect(node.dto, E.RMR_BIND_COMPLETION_EVENT)
    rmr.free()
    lmr.free()


def test_old_context_and_privileges_are_enforced(pair, spawn):
    node, r = pair
    lmr = node.ia.lmr_create(node.pz, 4096, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE)
    rmr = node.pz.rmr_create()
    ctx = rmr.bind(lmr.triplet(0, 128), MemPriv.REMOTE_READ, node.ep, None, shmdat.CompletionFlags.SUPPRESS)
    # writing through a read-only window is a remote access error, and breaks the connection
    assert _rdma_from_peer(r, RmrTriplet(ctx, lmr.registered_address, 16), b"x" * 16) == "ERR_REMOTE_ACCESS"


def test_freed_rmr_context_stops_working(pair):
    node, r = pair
    lmr = node.ia.lmr_create(node.pz, 4096, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE)
    rmr = node.pz.rmr_create()
    ctx = rmr.bind(lmr.triplet(0, 128), MemPriv.REMOTE_WRITE, node.ep, None)
    rmr.free()
    assert _rdma_from_peer(r, RmrTriplet(ctx, lmr.registered_address, 16), b"y" * 16) == "ERR_REMOTE_ACCESS"


def test_bind_errors(pair):
    node, _ = pair
    lmr = node.ia.lmr_create(node.pz, 4096, MemPriv.LOCAL_READ)
    rmr = node.pz.rmr_create()
    with pytest.raises(shmdat.PrivilegesViolation) as e:
        rmr.bind(lmr.triplet(), MemPriv.REMOTE_WRITE, node.ep, None)     # no LOCAL_WRITE
    assert e.value.code == Return.PRIVILEGES_VIOLATION
    with pytest.raises(shmdat.InvalidParameter):
        rmr.bind(lmr.triplet(), MemPriv.LOCAL_READ, node.ep, None)       # not a remote privilege
    other_pz = node.ia.pz_create()
    with pytest.raises(shmdat.ProtectionViolation) as e:
        other_pz.rmr_create().bind(lmr.triplet(), MemPriv.REMOTE_READ, node.ep, None)
    assert e.value.code == Return.PROTECTION_VIOLATION
    idle = node.new_ep()
    with pytest.raises(shmdat.InvalidState):
        rmr.bind(lmr.triplet(), MemPriv.REMOTE_READ, idle, None)         # not connected
    with pytest.raises(shmdat.InvalidParameter):
        rmr.bind((lmr.lmr_context, lmr.registered_address + 4000, 200), MemPriv.REMOTE_READ, node.ep, None)
    with pytest.raises(shmdat.InvalidHandle):
        rmr.bind(lmr.triplet(), MemPriv.REMOTE_READ, "ep", None)
