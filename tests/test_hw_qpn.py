"""The machine-wide QP number table (hw/qpn.py), with real processes."""

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


def test_numbers_are_unique_across_processes(spawn):
    peers = [spawn(_claim_many, 300) for _ in range(3)]
    claimed = [p.recv() for p in peers]
    flat = [n for numbers in claimed for n in numbers]
    assert len(set(flat)) == len(flat) == 900
    assert all(qpn.FIRST_QPN <= n < qpn.SLOTS for n in flat)      # never QP0 or QP1
    table = qpn.QpnTable()
    try:
        owners = {table.owner(numbers[0]) for numbers in claimed}
        assert {o[0] for o in owners} == {p.pid for p in peers}
    finally:
        table.close()
    for p in peers:
        p.send("release")
        p.join()
    assert not os.path.exists(qpn.PATH) or _table_has_live_owner()     # the last user unlinked it


def _table_has_live_owner():
    """Another test run in parallel may hold numbers: then the table stays."""
    table = qpn.QpnTable()
    try:
        return bool(qpn._live_owners(table._slots))
    finally:
        table.close()


def test_a_dead_owners_numbers_are_free(spawn):
    peer = spawn(_claim_many, 5)
    numbers = peer.recv()
    table = qpn.QpnTable()
    try:
        assert table.owner(numbers[0])[0] == peer.pid
        peer.send("hold")
        peer.kill(signal.SIGKILL)
        peer.process.join(10)
        assert all(table.owner(n) is None for n in numbers)
    finally:
        table.close()                       # with no live owner left, this unlinks it
    assert not os.path.exists(qpn.PATH) or _table_has_live_owner()


def test_a_released_number_comes_back_late():
    table = qpn.QpnTable()
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


def test_a_user_that_opened_before_the_unlink_reopens():
    early = qpn.QpnTable()                  # two handles: flock treats them as two users
    last = qpn.QpnTable()
    last.close()                            # unlinks the file under `early` (unless a parallel test holds numbers)
    n = early.claim(ME)                     # must land in a table others can see
    fresh = qpn.QpnTable()
    try:
        assert fresh.owner(n) == ME
    finally:
        early.release(n, ME)
        early.close()
        fresh.close()


def test_reclaim_unused_removes_a_table_of_dead_owners_only():
    table = qpn.QpnTable()
    n = table.claim(ME)
    assert not qpn.reclaim_unused()         # we live: it stays
    table.release(n, ME)
    table.close()                           # the last user with no live owner left unlinks it
    assert not os.path.exists(qpn.PATH) or _table_has_live_owner()


def test_shmdat_gc_removes_the_table_a_killed_process_left(spawn):
    peer = spawn(_claim_many, 2)
    peer.recv()
    peer.send("hold")
    peer.kill(signal.SIGKILL)
    peer.process.join(10)
    done = subprocess.run([sys.executable, "-m", "shmdat", "gc"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    # Gone (by this gc, or by a parallel test's cleanup that got there first),
    # unless a parallel test holds numbers in it.
    assert not os.path.exists(qpn.PATH) or _table_has_live_owner()
