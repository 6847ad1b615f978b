import itertools
import os

# The suite starts a few thousand Python processes (peers, ranks, launchers, CLIs). Where the
# environment says not to write bytecode (PYTHONDONTWRITEBYTECODE, as machines that keep
# their trees clean set it), each would compile shmdat's modules again, about half a second
# apiece on a slow machine: the processes the tests start write it to a cache of their own
# instead, outside the tree (PYTHONPYCACHEPREFIX), and read it from there after the first.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "shmdat", "pycache"))

# Each test process (an xdist worker) has a device instance of its own, which the peers
# it starts inherit: connection qualifiers are ports of the device's machine-wide
# rdma_cm port table, and parallel workers would otherwise take one another's. Set
# before shmdat is imported: the device reads it then.
# (Assigned, not defaulted: an xdist worker inherits its controller's environment.)
WORKER_NS = os.environ["SHMDAT_DEVICE_NS"] = f"w{os.getpid()}"

import pytest

import shmdat
from shmdat.hw import cm_ports, port, qpn, shm
from tests.peers import Peer
from tests.verbs_ends import End

_quals = itertools.count(1)
_namespaces = itertools.count(1)


class _Peers:
    """The peers a test spawned: every one is reaped after the test."""

    def __init__(self, env=None):
        self.env, self.peers = env, []

    def start(self, target, *args):
        p = Peer(target, *args, env=self.env)
        self.peers.append(p)
        return p

    def finish(self):
        killed = {p.pid for p in self.peers if p.reap()}
        # A peer that ended by itself must have cleaned up after itself; what a killed
        # peer left is reclaimed, as the next ia_open or `shmdat gc` would.
        _assert_no_leak({p.pid for p in self.peers} - killed)
        shm.reclaim_dead()
        _assert_no_leak(killed)


@pytest.fixture
def spawn():
    """spawn(target, *args) -> Peer; every peer is reaped after the test."""
    peers = _Peers()
    yield peers.start
    peers.finish()
    qpn.reclaim_unused()
    cm_ports.reclaim_unused()


class DeviceNamespace:
    """A device instance of a test's own (SHMDAT_DEVICE_NS): `name`, and `spawn(target,
    *args)` that starts a peer in it."""

    def __init__(self):
        self.name = f"t{os.getpid()}-{next(_namespaces)}"
        self._peers = _Peers({"SHMDAT_DEVICE_NS": self.name})
        self.spawn = self._peers.start


@pytest.fixture
def device_ns():
    """A fresh device namespace whose peers are reaped, and whose QP table and port state
    (down or not) are removed, after the test."""
    yield from _device_namespace()


@pytest.fixture
def other_device_ns():
    """A second one, for tests of two device instances."""
    yield from _device_namespace()


def _device_namespace():
    ns = DeviceNamespace()
    yield ns
    ns._peers.finish()
    qpn.reclaim_unused(ns.name)
    cm_ports.reclaim_unused(ns.name)
    port.reclaim_unused(ns.name, even_down=True)
    left = [o["name"] for o in shm.list_device_objects() if o["ns"] == ns.name]
    assert not left, f"device objects left behind: {left}"


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
    left = [o["name"] for o in shm.list_objects() if o["pid"] in pids]
    assert not left, f"shared-memory objects left behind: {left}"


@pytest.fixture
def conn_qual():
    """A connection qualifier (a port of this worker's device instance) unique to this test."""
    return 1000 + next(_quals)


@pytest.fixture(scope="session", autouse=True)
def _worker_device_instance():
    """Remove this worker's device instance (its QP table, port and port table) at the end."""
    yield
    shm.reclaim_dead()
    qpn.reclaim_unused(WORKER_NS)
    cm_ports.reclaim_unused(WORKER_NS)
    port.reclaim_unused(WORKER_NS, even_down=True)


@pytest.fixture
def verbs_pair():
    """Two connected RC ends (tests/verbs_ends.py) in this process, closed after the test."""
    a, b = End(), End()
    a.connect(b.qp.qp_num)
    b.connect(a.qp.qp_num)
    yield a, b
    a.close()
    b.close()
