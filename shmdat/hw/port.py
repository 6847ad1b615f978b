"""The device's port state, machine-wide: one small file per device instance.

`shmdat.<uid>.port` in /dev/shm (`shmdat.<uid>.ns-<ns>.port` in a namespace,
shm.device_object_name) holds a version word, the port's state (up or down)
and a generation that counts the changes. Every open device handle (a verbs
Context) maps it and reads the generation in its progress, so a change is seen
by every process at its next poll, and at once by a sleeping waiter, whose
doorbell the changer rings.

Each handle holds a shared flock on the file while open; the kernel drops it
when its holder dies. Whoever closes the last handle with the port up unlinks
the file (an up port is what no file means); a down port's file stays until
the port comes up again, as a link stays down with nobody using it. State
changes are made under a record lock (fcntl), which never conflicts with the
flocks.

The file vanishing under an open handle (no closer unlinks it while a handle
holds its flock) or its version word changing means the device is gone for
that handle: intact() says so.
"""

import contextlib
import fcntl
import mmap
import os
import struct
import threading

from . import shm
from .layout import (PORT_MAGIC as MAGIC, PORT_SIZE as SIZE, PORT_W_DOWN as W_DOWN,
                     PORT_W_GENERATION as W_GENERATION, PORT_W_MAGIC as W_MAGIC)

_threads = threading.Lock()     # record locks belong to processes: this one covers threads


class Port:
    """One handle on the port state of a device instance (namespace `ns`, or this process's)."""

    def __init__(self, ns=None):
        self.path = _path(ns)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_SH)
            if os.fstat(fd).st_nlink:
                break
            os.close(fd)            # a last user unlinked it meanwhile: open the new one
        try:
            with _changing(fd):
                if os.fstat(fd).st_size < SIZE:
                    os.ftruncate(fd, SIZE)              # zero-filled: the port up
                    os.pwrite(fd, struct.pack("Q", MAGIC), W_MAGIC * 8)
            self._mm = mmap.mmap(fd, SIZE)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.words = memoryview(self._mm).cast("Q")

    @property
    def generation(self):
        return self.words[W_GENERATION]

    @property
    def down(self):
        return bool(self.words[W_DOWN])

    def set_down(self, down):
        """Take the port down or bring it up; True if that changed its state."""
        with _changing(self._fd):
            if self.down == bool(down):
                return False
            self.words[W_DOWN] = int(bool(down))
            self.words[W_GENERATION] = self.generation + 1
            return True

    def intact(self):
        """Whether the file is still the device's: linked, and its version word ours."""
        return self.words[W_MAGIC] == MAGIC and os.fstat(self._fd).st_nlink > 0

    def close(self):
        """Let go; the last handle, with the port up, unlinks the file. Returns whether it did."""
        if self._fd is None:
            return False
        last = False
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            last = not self.down and os.fstat(self._fd).st_nlink > 0
            if last:
                os.unlink(self.path)
        except BlockingIOError:
            pass                    # others hold it
        self.words.release()
        self._mm.close()
        os.close(self._fd)
        self._fd = None
        return last


@contextlib.contextmanager
def _changing(fd):
    """The record lock under which the file is initialised or its state changed."""
    with _threads:
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)


def _path(ns):
    return os.path.join(shm.SHM_DIR, shm.device_object_name("port", ns))


def _read_word(fd, word):
    return struct.unpack("Q", os.pread(fd, 8, word * 8).ljust(8, b"\0"))[0]


def is_down(ns=None):
    """Whether the port (of namespace `ns`, or this process's) is down; no file is up."""
    try:
        fd = os.open(_path(ns), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        return bool(_read_word(fd, W_DOWN))
    finally:
        os.close(fd)


def reclaim_unused(ns=None, even_down=False):
    """Unlink the port file (of namespace `ns`, or this process's) if no live process
    holds it open and the port is up, or the file is not a port's (corrupted), or
    even_down (a namespace nobody uses is gone). Returns whether it did."""
    path = _path(ns)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        down, magic = _read_word(fd, W_DOWN), _read_word(fd, W_MAGIC)
        gone = os.fstat(fd).st_nlink > 0 and (even_down or not down or magic != MAGIC)
        if gone:
            os.unlink(path)
        return gone
    except BlockingIOError:
        return False                # in use
    finally:
        os.close(fd)
