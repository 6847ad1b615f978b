"""The device's port table (hw/cm_ports.py), in a table file of each test's own."""

import os
import signal

import pytest

from shmdat.hw import cm_ports, shm
from shmdat.hw.cm_ports import ANY, AddressInUse

LOOPBACK, OTHER = 0x7F000001, 0x7F000002           # 127.0.0.1, 127.0.0.2
ME = (shm.MY_PID, shm.MY_START, 3)


@pytest.fixture(autouse=True)
def _own_table(tmp_path, monkeypatch):
    monkeypatch.setattr(cm_ports, "PATH", str(tmp_path / "cm_ports"))


def _listen_and_hold(ch, path):
    cm_ports.PATH = path
    owner = (shm.MY_PID, shm.MY_START, 0)
    port = cm_ports.bind(LOOPBACK, 0, owner)
    cm_ports.listen(LOOPBACK, port, owner)
    ch.send(port)
    ch.recv(timeout=60)                     # until killed


def test_a_pair_binds_once_and_the_wildcard_conflicts_with_every_address():
    port = cm_ports.bind(LOOPBACK, 0, ME)
    assert cm_ports.EPHEMERAL[0] <= port <= cm_ports.EPHEMERAL[1]
    for address in (LOOPBACK, ANY):
        with pytest.raises(AddressInUse):
            cm_ports.bind(address, port, ME)
    assert cm_ports.bind(OTHER, port, ME) == port
    assert cm_ports.bind(ANY, port + 1 if port < 60999 else port - 1, ME)


def test_only_listening_pairs_are_found_the_address_before_the_wildcard():
    port = cm_ports.bind(ANY, 0, ME)
    assert cm_ports.find_listener(LOOPBACK, port) is None           # bound, not listening
    assert cm_ports.listen(ANY, port, ME)
    assert cm_ports.find_listener(OTHER, port) == ME
    cm_ports.release(ANY, port, ME)
    assert cm_ports.find_listener(OTHER, port) is None


def test_the_table_goes_with_its_last_row():
    port = cm_ports.bind(LOOPBACK, 0, ME)
    assert os.path.exists(cm_ports.PATH)
    cm_ports.release(LOOPBACK, port, (ME[0], ME[1], ME[2] + 1))    # not that owner's: stays
    assert os.path.exists(cm_ports.PATH)
    cm_ports.release(LOOPBACK, port, ME)
    assert not os.path.exists(cm_ports.PATH)


@pytest.mark.parametrize("reclaim", ["by a look-up", "by reclaim_unused"])
def test_a_killed_owners_rows_are_free_and_its_table_is_reclaimed(spawn, reclaim):
    peer = spawn(_listen_and_hold, cm_ports.PATH)
    port = peer.recv()
    assert cm_ports.find_listener(LOOPBACK, port) == (peer.pid, shm.process_start_time(peer.pid), 0)
    peer.kill(signal.SIGKILL)
    peer.process.join(10)
    assert os.path.exists(cm_ports.PATH)                           # what the killed owner left
    if reclaim == "by a look-up":
        assert cm_ports.find_listener(LOOPBACK, port) is None
    else:
        assert cm_ports.reclaim_unused()
    assert not os.path.exists(cm_ports.PATH)
    assert cm_ports.bind(LOOPBACK, port, ME) == port
    cm_ports.release(LOOPBACK, port, ME)
