"""A file's shared file pointer (MPI 4.1 section 14.4.4): one offset, in etypes of the view,
for all the processes that opened the file together. As ROMIO keeps it: in a small hidden
file, read and updated under an fcntl lock, so that any process moves it without the others'
help (no progress needed from them). The file lies in the temporary directory (the data
file's own may be read-only); the group's rank 0 makes it at Open and removes it at Close."""

import atexit
import fcntl
import os
import struct
import tempfile
import threading

_OFFSET = struct.Struct("<q")
_made = set()       # the paths this process made and has not removed (removed at exit)


class SharedPointer:
    """The shared pointer in the file at `path` (an open descriptor of this process's)."""

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_RDWR)
        self._threads = threading.Lock()    # (fcntl's locks are the process's: its threads
        #                                      take turns here first)

    @staticmethod
    def create(offset):
        """A new shared pointer at `offset` (rank 0, at Open): its path, for all to open."""
        fd, path = tempfile.mkstemp(prefix="shmdat-shfp-")
        _made.add(path)
        try:
            os.write(fd, _OFFSET.pack(offset))
        finally:
            os.close(fd)
        return path

    def _locked(self, update):
        """update(offset) -> the new offset or None, under the lock; the old offset."""
        with self._threads:
            fcntl.lockf(self.fd, fcntl.LOCK_EX)
            try:
                old = _OFFSET.unpack(os.pread(self.fd, _OFFSET.size, 0))[0]
                new = update(old)
                if new is not None:
                    os.pwrite(self.fd, _OFFSET.pack(new), 0)
                return old
            finally:
                fcntl.lockf(self.fd, fcntl.LOCK_UN)

    def fetch_add(self, count):
        """Move the pointer by `count` etypes; where it was."""
        return self._locked(lambda old: old + count)

    def get(self):
        return self._locked(lambda old: None)

    def set(self, offset):
        self._locked(lambda old: offset)

    def close(self):
        """This process's descriptor closed (rank 0 removes the file once all have)."""
        os.close(self.fd)


def remove(path):
    """Rank 0's, at Close (or when Open failed): the file goes."""
    _made.discard(path)
    os.unlink(path)


@atexit.register
def _remove_left():
    """A program that ends with files open (MPI calls it erroneous) leaves no pointer file."""
    for path in list(_made):
        remove(path)
