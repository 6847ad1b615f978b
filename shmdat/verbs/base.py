"""What every verbs object shares (pyverbs' base): close() that is idempotent,
the context manager, parents that close their children, and PyverbsRDMAErrno.
"""

import errno
import logging

from .pyverbs_error import PyverbsRDMAError


class PyverbsObject:
    """A verbs object; `logger` as pyverbs gives one."""

    def __init__(self):
        self.logger = logging.getLogger(type(self).__name__)


class PyverbsCM(PyverbsObject):
    """A verbs object with a close() and a `with` block that calls it."""

    def __init__(self):
        super().__init__()
        self._closed = False

    def close(self):
        """Release the object (its children first). Idempotent."""
        if not self._closed:
            self._release()
            self._closed = True

    def _release(self):
        raise NotImplementedError

    def _check_open(self, what):
        """Raise PyverbsRDMAError (EBADF) naming `what` if the object is closed."""
        if self._closed:
            raise PyverbsRDMAError(f"{what}: the {type(self).__name__} is closed", errno.EBADF)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def close_children(groups):
    """Close every object of each set in `groups`, in order (children first).

    Parents hold their children strongly (pyverbs holds them weakly and frees a
    dropped object's C resources in __dealloc__): a dropped QP or MR keeps its
    QP number and memory until its parent closes, never leaks them for good."""
    for group in groups:
        for obj in list(group):
            obj.close()


def PyverbsRDMAErrno(msg, error_code=-1):          # noqa: N802 - pyverbs' name
    """The PyverbsRDMAError of a failed verbs call (pyverbs reads C's errno; a
    Python device has none to read, so the code is given or left out)."""
    return PyverbsRDMAError(msg, error_code)


def inc_rkey(rkey):
    """ibv_inc_rkey: the same key with its low 8 bits (the tag) advanced by one."""
    return (rkey & ~0xFF & 0xFFFFFFFF) | ((rkey + 1) & 0xFF)


class Unsupported(PyverbsObject):
    """A pyverbs object of a feature shm0 does not have (memory windows, XRC,
    device memory, vendor extensions, ...): creating one raises
    PyverbsRDMAError with EOPNOTSUPP, as pyverbs does on a device without it,
    and rdma-core's tests take that for a skip."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        raise PyverbsRDMAError(f"Failed to create {type(self).__name__}: shm0 does not support it",
                               errno.EOPNOTSUPP)


class UnsupportedAttr(PyverbsObject):
    """The attributes of a feature shm0 does not have: they keep what they are
    given (`args`, and each keyword as an attribute), so that it is creating
    the object they describe that fails, with EOPNOTSUPP."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.args = args
        for name, value in kwargs.items():
            setattr(self, name, value)
