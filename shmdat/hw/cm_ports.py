"""The device's port space: a machine-wide table of bound (address, port) pairs.

A connection manager that connects to (address, port) must find who listens
there without asking every process, and two processes must not both bind the
same pair. The table is one file in /dev/shm, named by
shm.device_object_name("cm_ports") (`shmdat.<uid>.cm_ports`, or
`shmdat.<uid>.ns-<ns>.cm_ports` in a device instance): one row per bound pair
with its state (bound, listening) and its owner (pid, start time, HCA number:
the address of the HCA whose CM inbox takes the connection requests).

Every operation opens the file, takes its flock (the kernel drops it if the
holder dies), reads the rows, drops those whose owner is dead (a killed
process frees its ports at the next operation of anyone), does its work, writes
the rows back and, if no row is left, unlinks the file: the table exists only
while some live process has a port bound. One a killed last owner left is
removed by the next operation, by reclaim_unused (each verbs Context open and
close calls it; `shmdat gc` may). The flock is per open file, so threads of one
process exclude each other too.

Addresses are IPv4 addresses as ints; 0 is the wildcard (INADDR_ANY), which
conflicts with every address on the same port, as in the kernel's port space.
"""

import contextlib
import fcntl
import os
import random

import numpy as np

from . import shm
from .errors import HwError
from .layout import (CM_PORTS_BOUND as BOUND, CM_PORTS_FREE as FREE, CM_PORTS_LISTENING as LISTENING,
                     CM_PORTS_SIZE as SIZE, CM_PORTS_SLOT_WORDS as SLOT_WORDS, CM_PORTS_SLOTS as SLOTS,
                     CM_PORTS_W_ADDRESS as W_ADDRESS, CM_PORTS_W_HCA as W_HCA, CM_PORTS_W_PID as W_PID,
                     CM_PORTS_W_PORT as W_PORT, CM_PORTS_W_START as W_START, CM_PORTS_W_STATE as W_STATE)

ANY = 0
EPHEMERAL = (32768, 60999)              # Linux's default ip_local_port_range
NAME = shm.device_object_name("cm_ports")
PATH = os.path.join(shm.SHM_DIR, NAME)


class AddressInUse(HwError):
    """Another live owner has that (address, port) bound (or the wildcard on that port)."""


class PortsExhausted(HwError):
    """No row or no ephemeral port is free."""


@contextlib.contextmanager
def _rows(create, path=None):
    """The table's rows (a copy, written back), under its lock; None when there is no
    table and `create` is false. `path`: another device instance's table."""
    path = PATH if path is None else path
    while True:
        try:
            fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
        except FileNotFoundError:
            yield None
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not os.fstat(fd).st_nlink:
                continue                    # the last user unlinked it meanwhile: open anew
            data = os.pread(fd, SIZE, 0)
            rows = np.zeros((SLOTS, SLOT_WORDS), dtype=np.uint64)
            rows.reshape(-1)[:len(data) // 8] = np.frombuffer(data, dtype=np.uint64, count=len(data) // 8)
            _drop_dead(rows)
            try:
                yield rows
            finally:
                if rows[:, W_STATE].any():
                    os.pwrite(fd, rows.tobytes(), 0)
                else:
                    os.unlink(path)         # under the lock: nobody is inside meanwhile
            return
        finally:
            os.close(fd)                    # drops the flock


def _drop_dead(rows):
    """Free the rows of dead owners: one look per owner (a process may hold thousands)."""
    taken = rows[:, W_STATE] != 0
    owners = np.unique(rows[taken][:, [W_PID, W_START]], axis=0)
    for pid, start in owners:
        if not shm.is_alive(int(pid), int(start)):
            rows[taken & (rows[:, W_PID] == pid) & (rows[:, W_START] == start)] = 0


def _conflicts(rows, address, port):
    used = (rows[:, W_STATE] != FREE) & (rows[:, W_PORT] == port)
    if address != ANY:
        used &= (rows[:, W_ADDRESS] == address) | (rows[:, W_ADDRESS] == ANY)
    return used


def bind(address, port, owner):
    """Bind (address, port) for `owner` (pid, start time, HCA number); port 0 takes a
    free ephemeral port. Returns the port. Raises AddressInUse, PortsExhausted."""
    with _rows(create=True) as rows:
        free = np.flatnonzero(rows[:, W_STATE] == FREE)
        if not len(free):
            raise PortsExhausted(f"all {SLOTS} rows of the port table are in use")
        if port == 0:
            port = _ephemeral(rows, address)
        elif _conflicts(rows, address, port).any():
            raise AddressInUse(f"port {port} is bound on that address")
        rows[free[0]] = (address, port, BOUND, *owner)
        return port


def _ephemeral(rows, address):
    low, high = EPHEMERAL
    start = random.randint(low, high)
    for port in (*range(start, high + 1), *range(low, start)):
        if not _conflicts(rows, address, port).any():
            return port
    raise PortsExhausted("no ephemeral port is free")


def _row(rows, address, port, owner):
    mine = ((rows[:, W_STATE] != FREE) & (rows[:, W_ADDRESS] == address) & (rows[:, W_PORT] == port)
            & (rows[:, W_PID] == owner[0]) & (rows[:, W_START] == owner[1])
            & (rows[:, W_HCA] == owner[2]))
    found = np.flatnonzero(mine)
    return found[0] if len(found) else None


def listen(address, port, owner):
    """Mark `owner`'s bound (address, port) as listening. False if it holds no such row."""
    with _rows(create=False) as rows:
        i = None if rows is None else _row(rows, address, port, owner)
        if i is None:
            return False
        rows[i, W_STATE] = LISTENING
        return True


def release(address, port, owner):
    """Unbind `owner`'s (address, port), if it holds it."""
    with _rows(create=False) as rows:
        i = None if rows is None else _row(rows, address, port, owner)
        if i is not None:
            rows[i] = 0


def find_listener(address, port):
    """The live owner (pid, start time, HCA number) listening on (address, port), the
    address itself first, then the wildcard; None if nobody listens there."""
    with _rows(create=False) as rows:
        if rows is None:
            return None
        listening = (rows[:, W_STATE] == LISTENING) & (rows[:, W_PORT] == port)
        for wanted in (address, ANY):
            found = np.flatnonzero(listening & (rows[:, W_ADDRESS] == wanted))
            if len(found):
                return tuple(int(v) for v in rows[found[0], W_PID:W_HCA + 1])
        return None


def reclaim_unused(ns=None):
    """Drop the rows of dead owners from the table (of namespace `ns`, or this
    process's) and unlink it if none is left (what a killed last owner left);
    opening and closing a verbs Context and the test suite's cleanup call this,
    `shmdat gc` may. Returns whether it unlinked it."""
    path = PATH if ns is None else os.path.join(shm.SHM_DIR, shm.device_object_name("cm_ports", ns))
    existed = os.path.exists(path)
    with _rows(create=False, path=path):
        pass
    return existed and not os.path.exists(path)
