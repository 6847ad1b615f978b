"""The max_* attributes of ia.query() are enforced (in the style of OFA's dapltest -T L):
create objects up to the limit, get the right error, clean up, leak nothing."""

import os
import re
import stat

import pytest

import shmdat
from shmdat import EvdFlags, Return
from shmdat.hw import shm

from tests.nodes import WAIT
from tests.remote import Remote


def objects_of(ia):
    """The shared-memory objects of this process (the test's one IA)."""
    return sorted(o["name"] for o in shm.list_objects() if o["pid"] == os.getpid())


def fill_to_limit(create, limit_error=shmdat.InsufficientResources):
    made = []
    with pytest.raises(limit_error) as e:
        while True:
            made.append(create())
            assert len(made) <= 100_000
    assert e.value.code == Return.INSUFFICIENT_RESOURCES
    return made


def test_evd_limit(ia):
    attr, _ = ia.query()
    evds = fill_to_limit(lambda: ia.evd_create(1))
    assert len(evds) + 1 == attr.max_evds          # the async EVD counts
    for e in evds:
        e.free()
    ia.evd_create(1).free()


def test_ep_and_pz_limits(ia):
    attr, _ = ia.query()
    pzs = fill_to_limit(ia.pz_create)
    assert len(pzs) == attr.max_pzs
    eps = fill_to_limit(lambda: ia.ep_create(pzs[0]))
    assert len(eps) == attr.max_eps
    for ep in eps:
        ep.free()
    for pz in pzs:
        pz.free()


def test_lmr_limit_and_no_leak(ia):
    attr, _ = ia.query()
    before = objects_of(ia)
    pz = ia.pz_create()
    lmrs = fill_to_limit(lambda: ia.lmr_create(pz, 4096))
    assert len(lmrs) == attr.max_lmrs
    assert len(objects_of(ia)) == len(before) + attr.max_lmrs      # one segment each
    for lmr in lmrs:
        lmr.free()
    assert objects_of(ia) == before


def test_rmr_limit(ia):
    attr, _ = ia.query()
    pz = ia.pz_create()
    rmrs = fill_to_limit(pz.rmr_create)
    assert len(rmrs) == attr.max_rmrs
    for r in rmrs:
        r.free()


def test_psp_limit(ia):
    evd = ia.evd_create(4, EvdFlags.CR)
    psps = fill_to_limit(lambda: ia.psp_create_any(evd))
    for p in psps:
        p.free()
    ia.psp_create_any(evd).free()


def test_receive_limit_per_ep(ia):
    pz = ia.pz_create()
    lmr = ia.lmr_create(pz, 64)
    ep = ia.ep_create(pz, ia.evd_create(300, shmdat.EvdFlags.DTO),
                      attr=shmdat.EpAttr(max_recv_dtos=300, max_request_dtos=0))
    posted = fill_to_limit(lambda: ep.post_recv([lmr.triplet(0, 64)], None))
    assert len(posted) == 300
    ep.free()


def test_ep_attr_above_the_ia_limits_is_invalid_parameter(ia):
    attr, _ = ia.query()
    pz = ia.pz_create()
    dto = ia.evd_create(8, shmdat.EvdFlags.DTO)
    for field, value in (("max_recv_dtos", attr.max_dto_per_ep + 1),
                         ("max_request_iov", attr.max_iov_segments_per_dto + 1),
                         ("max_message_size", attr.max_message_size + 1)):
        with pytest.raises(shmdat.InvalidParameter, match=field) as e:
            ia.ep_create(pz, dto, dto, attr=shmdat.EpAttr(**{field: value}))
        assert e.value.code == Return.INVALID_PARAMETER


def test_objects_are_private_to_the_user(ia):
    mine = [o for o in shm.list_objects() if o["pid"] == os.getpid()]
    assert mine
    for o in mine:
        assert o["name"].startswith(("shmdat.%d." % os.getuid(), "sem.shmdat.%d." % os.getuid()))
        mode = os.stat(os.path.join("/dev/shm", o["name"])).st_mode
        assert stat.S_IMODE(mode) == 0o600, o["name"]


def connection_segments(pids):
    """The named connection segments of these processes: the verbs QPs' `v<lo>-<hi>`."""
    return [o["name"] for o in shm.list_objects()
            if o["pid"] in pids and re.fullmatch(r"v\d+-\d+", o["what"])]


@pytest.mark.parametrize("first", ["our EP", "the peer's EP"])
def test_connection_segments_are_unlinked_once_both_sides_have_them(ia, spawn, first):
    pz = ia.pz_create()
    lmr = ia.lmr_create(pz, 64)
    evd = ia.evd_create(8)
    cr_evd = ia.evd_create(8, EvdFlags.CR)
    psp = ia.psp_create_any(cr_evd)
    # Which is created first decides (as QP numbers go) which side creates the segment.
    if first == "our EP":
        ep = ia.ep_create(pz, evd, evd, evd)
    peer = Remote(spawn)
    if first == "the peer's EP":
        ep = ia.ep_create(pz, evd, evd, evd)
    pids = {os.getpid(), peer.peer.pid}
    peer.connect(ia.address, psp.conn_qual)     # the request is out; the peer calls nothing more
    cr_evd.wait(WAIT)[0].data.cr.accept(ep)
    # The side with the lower qp_num creates the segment when its QP reaches RTR, the other
    # maps and unlinks it when its QP gets there or at its next progress after that: so it
    # is named from our accept until the peer takes the reply (if ours is lower), or from
    # the peer's reply until our next call (if the peer's is): seen exactly once.
    at_accept = connection_segments(pids)
    assert peer.wait_conn()[0] == "CONNECTION_EVENT_ESTABLISHED"
    at_reply = connection_segments(pids)
    assert len(at_accept + at_reply) == 1, (at_accept, at_reply)
    assert evd.wait(WAIT)[0].number == shmdat.EventNumber.CONNECTION_EVENT_ESTABLISHED
    # A message each way past the ring: both sides have mapped the segment.
    ep.post_recv([lmr.triplet(0, 64)], "ping")
    peer.send(b"ping")
    done = evd.wait(WAIT)[0].data
    assert (done.status, done.transferred_length) == (shmdat.DtoStatus.SUCCESS, 4)
    assert peer.wait_dto()[:3] == ("SUCCESS", 4, "SEND")
    assert connection_segments(pids) == []
    peer.finish()


def test_ia_open_reclaims_what_dead_owners_left():
    import subprocess
    import sys
    code = ("import os, signal, shmdat; ia = shmdat.ia_open(); pz = ia.pz_create(); "
            "ia.lmr_create(pz, 4096); print(os.getpid(), flush=True); os.kill(os.getpid(), signal.SIGKILL)")
    # Any process's ia_open (another test worker's, say) may reclaim them before ours
    # does: try until we see the dead owner's objects still there, then open an IA.
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        pid = int(out.stdout)
        if any(o["pid"] == pid for o in shm.list_objects()):
            break
    else:
        raise AssertionError("other processes reclaimed the objects first, five times")
    with shmdat.ia_open():
        assert not any(o["pid"] == pid for o in shm.list_objects())
