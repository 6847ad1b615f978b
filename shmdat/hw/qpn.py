"""Machine-wide QP numbers: the device's QP table.

A verbs QP is named by its qp_num alone (peers exchange it out of band), so a
number must be unique on the machine and lead to the QP's owner. The table is
one file per user in /dev/shm, `shmdat.<uid>.qpn`, shared by every process:
slot i holds the owner of qp_num i (pid, start time, HCA number) and a word
the owner publishes with it (the verbs layer puts the QP's PD there), or zeros.
Slots 0 and 1 are never given out (QP0 and QP1 are the special QPs of verbs).

Claims and releases hold an flock on the file: the kernel drops it when its
holder dies, so a killed process never blocks the others, and a slot whose
owner is dead counts as free. The file goes when the last user closes it
finding no live owner; one left by a SIGKILLed process goes at the next close
or `shmdat gc` (reclaim_dead_table), like any other object of a dead process.
"""

import fcntl
import mmap
import os

import numpy as np

from . import shm
from .layout import (QPN_FIRST as FIRST_QPN, QPN_HEADER_WORDS as HEADER_WORDS, QPN_SIZE as SIZE,
                     QPN_SLOT_WORDS as SLOT_WORDS, QPN_SLOTS as SLOTS)


class TableFull(Exception):
    """Every QP number is in use by a live process."""


class QpnTable:
    """This process's handle on the machine's QP table (or namespace `ns`'s)."""

    def __init__(self, ns=None):
        self._path = os.path.join(shm.SHM_DIR, shm.device_object_name("qpn", ns))
        self._fd = None
        self._open()

    def _open(self):
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size < SIZE:
                os.ftruncate(fd, SIZE)          # zero-filled: every slot free
            fcntl.flock(fd, fcntl.LOCK_UN)
            self._mm = mmap.mmap(fd, SIZE)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._header = np.frombuffer(self._mm, dtype=np.uint64, count=HEADER_WORDS)
        self._slots = np.frombuffer(self._mm, dtype=np.uint64, offset=HEADER_WORDS * 8).reshape(
            SLOTS, SLOT_WORDS)

    def _lock(self):
        """Take the table's lock, first reopening it if a last user unlinked it meanwhile."""
        while True:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            if os.fstat(self._fd).st_nlink:
                return
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._close_mapping()
            self._open()

    def _unlock(self):
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def claim(self, owner):
        """A free QP number, now owned by `owner` (pid, start time, hca number, word).

        Looks on from where the last claim stopped, so that a released number
        comes back as late as possible. Raises TableFull.
        """
        self._lock()
        try:
            order = np.roll(np.arange(FIRST_QPN, SLOTS), -(max(int(self._header[0]), FIRST_QPN) - FIRST_QPN))
            free = order[self._slots[order, 0] == 0]
            qpn = int(free[0]) if len(free) else self._reclaim_one(order)
            self._slots[qpn] = owner
            self._header[0] = qpn + 1 if qpn + 1 < SLOTS else FIRST_QPN
            return qpn
        finally:
            self._unlock()

    def _reclaim_one(self, order):
        """Every slot is taken: the first whose owner died."""
        alive = {}
        for qpn in order:
            pid, begun = (int(v) for v in self._slots[qpn, :2])
            if not alive.setdefault((pid, begun), shm.is_alive(pid, begun)):
                return int(qpn)
        raise TableFull(f"all {SLOTS - FIRST_QPN} QP numbers are in use")

    def release(self, qpn, owner):
        """Give `qpn` back, if `owner` still holds it."""
        self._lock()
        try:
            if tuple(int(v) for v in self._slots[qpn]) == tuple(owner):
                self._slots[qpn] = 0
        finally:
            self._unlock()

    def owner(self, qpn):
        """(pid, start time, hca number, word) of the live owner of `qpn`, or None."""
        if not FIRST_QPN <= qpn < SLOTS:
            return None
        owner = tuple(int(v) for v in self._slots[qpn])
        if not owner[0] or not shm.is_alive(owner[0], owner[1]):
            return None
        return owner

    def linked(self):
        """Whether the table we hold is still the device's (the last user unlinks it only
        when no live process holds a number: unlinked under a holder, it was removed)."""
        return os.fstat(self._fd).st_nlink > 0

    def close(self):
        """Let go of the table; the last user (no live owner left) unlinks it.
        Returns whether it did."""
        if self._fd is None:
            return False
        self._lock()
        try:
            last = not _live_owners(self._slots)
            if last:
                os.unlink(self._path)
            return last
        finally:
            self._unlock()
            self._close_mapping()

    def _close_mapping(self):
        del self._header, self._slots           # views of the mapping: they must go first
        self._mm.close()
        os.close(self._fd)
        self._fd = None


def _live_owners(slots):
    taken = slots[slots[:, 0] != 0][:, :2]
    return [o for o in {(int(p), int(s)) for p, s in taken} if shm.is_alive(*o)]


def reclaim_unused(ns=None):
    """Unlink the table (of namespace `ns`, or this process's) if no live process owns
    a number in it (what a killed last user left); `shmdat gc` and the test suite's
    cleanup call this."""
    path = os.path.join(shm.SHM_DIR, shm.device_object_name("qpn", ns))
    return os.path.exists(path) and QpnTable(ns).close()
