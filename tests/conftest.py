import itertools
import os

import pytest

import shmdat
from shmdat.hw import cm_ports, qpn, shm
from tests.peers import Peer
from tests.verbs_ends import End

_quals = itertools.count(1)


@pytest.fixture
def spawn():
    """spawn(target, *args) -> Peer; every peer is reaped after the test."""
    peers = []

    def start(target, *args):
        p = Peer(target, *args)
        peers.append(p)
        return p

    yield start
    killed = {p.pid for p in peers if p.reap()}
    # A peer that ended by itself must have cleaned up after itself; what a killed
    # peer left is reclaimed, as the next ia_open or `shmdat gc` would.
    _assert_no_leak({p.pid for p in peers} - killed)
    shm.reclaim_dead()
    qpn.reclaim_unused()
    cm_ports.reclaim_unused()
    _assert_no_leak(killed)


@pytest.fixture
def ia():
    """An IA closed after the test."""
    with shmdat.ia_open() as ia:
        yield ia


@pytest.fixture(autouse=True)
def _no_leak_from_this_process():
    yield
    _assert_no_leak({os.getpid()})


def _assert_no_leak(pids):
    open_here = {f"{shm.PREFIX}{ia._hca.address}" for ia in _live_ias()}
    left = [o["name"] for o in shm.list_objects()
            if o["pid"] in pids and not any(p in o["name"] for p in open_here)]
    assert not left, f"shared-memory objects left behind: {left}"


def _live_ias():
    from shmdat.ia import _open_ias
    return list(_open_ias)


@pytest.fixture
def conn_qual():
    """A connection qualifier unique to this test (IAs differ per process anyway)."""
    return 1000 + next(_quals)


@pytest.fixture
def verbs_pair():
    """Two connected RC ends (tests/verbs_ends.py) in this process, closed after the test."""
    a, b = End(), End()
    a.connect(b.qp.qp_num)
    b.connect(a.qp.qp_num)
    yield a, b
    a.close()
    b.close()
