"""The machine-wide QP number table (hw/qpn.py), with real processes.

Each test uses a device instance of its own (the device_ns fixture), so whether the
table is unlinked is exact: no test running beside it holds numbers in it.
"""

import os
import signal
import subprocess
import sys

from shmdat.hw import qpn, shm

ME = (shm.MY_PID, shm.MY_START, 7, 99)


def _claim_many(ch, count):
    table = qpn.QpnTable()
    me = (shm.MY_PID, shm.MY_START, 1, 0)
    numbers = [table.claim(me) for _ in range(count)]
    ch.send(numbers)
    if ch.recv() == "release":
        for n in numbers:
            table.release(n, me)
        table.close()
    else:
        ch.recv(timeout=60)                 # hold them until killed


def _path(ns):
    return os.path.join(shm.SHM_DIR, shm.device_object_name("qpn", ns.name))


def test_numbers_are_unique_across_processes(device_ns):
    peers = [device_ns.spawn(_claim_many, 300) for _ in range(3)]
    claimed = [p.recv() for p in peers]
    flat = [n for numbers in claimed for n in numbers]
    assert len(set(flat)) == len(flat) == 900
    assert all(qpn.FIRST_QPN <= n < qpn.SLOTS for n in flat)      # never QP0 or QP1
    table = qpn.QpnTable(device_ns.name)
    try:
        owners = {table.owner(numbers[0]) for numbers in claimed}
        assert {o[0] for o in owners} == {p.pid for p in peers}
    finally:
        table.close()
    for p in peers:
        p.send("release")
        p.join()
    assert not os.path.exists(_path(device_ns))         # the last user unlinked it


def test_a_dead_owners_numbers_are_free(device_ns):
    peer = device_ns.spawn(_claim_many, 5)
    numbers = peer.recv()
    table = qpn.QpnTable(device_ns.name)
    try:
        assert table.owner(numbers[0])[0] == peer.pid
        peer.send("hold")
        peer.kill(signal.SIGKILL)
        peer.process.join(10)
        assert all(table.owner(n) is None for n in numbers)
    finally:
        table.close()                       # with no live owner left, this unlinks it
    assert not os.path.exists(_path(device_ns))


def test_a_released_number_comes_back_late(device_ns):
    table = qpn.QpnTable(device_ns.name)
    try:
        first = table.claim(ME)
        table.release(first, ME)
        second = table.claim(ME)
        assert second != first and table.owner(first) is None
        table.release(second, ME)
        table.release(second, ME)           # twice: a no-op
        assert table.owner(second) is None
    finally:
        table.close()


def test_a_user_that_opened_before_the_unlink_reopens(device_ns):
    early = qpn.QpnTable(device_ns.name)    # two handles: flock treats them as two users
    last = qpn.QpnTable(device_ns.name)
    assert last.close()                     # unlinks the file under `early`
    n = early.claim(ME)                     # must land in a table others can see
    fresh = qpn.QpnTable(device_ns.name)
    try:
        assert fresh.owner(n) == ME
    finally:
        early.release(n, ME)
        early.close()
        fresh.close()


def test_reclaim_unused_removes_a_table_of_dead_owners_only(device_ns):
    table = qpn.QpnTable(device_ns.name)
    n = table.claim(ME)
    assert not qpn.reclaim_unused(device_ns.name)       # we live: it stays
    assert os.path.exists(_path(device_ns))
    table.release(n, ME)
    table.close()                           # the last user with no live owner left unlinks it
    assert not os.path.exists(_path(device_ns))


def test_shmdat_gc_removes_the_table_a_killed_process_left(device_ns):
    peer = device_ns.spawn(_claim_many, 2)
    peer.recv()
    peer.send("hold")
    peer.kill(signal.SIGKILL)
    peer.process.join(10)
    done = subprocess.run([sys.executable, "-m", "shmdat", "gc"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert not os.path.exists(_path(device_ns))
