"""The event fds rdma-core's pyverbs keeps to itself: a CMEventChannel's and a
Context's async events'. The NIC engine makes them non-blocking and waits for them in
poll(), as dapl's CM thread does in C: pyverbs' CMEvent and get_async_event call C
without releasing the GIL, so a thread blocked there would stop every thread of the
process, and with O_NONBLOCK on the fd they return at once (EAGAIN) when nothing
waits (rdma_get_cm_event(3) and ibv_get_async_event(3) say to make them so).

pyverbs has no attribute for either fd, so they are found in /proc/self/fd: the one fd
the object's constructor opened whose link is the name the kernel gives it. A verbs
module may say where its fds are itself, with a function `event_fd(obj)` (the test
stand-in of pyverbs has one); rdma-core's pyverbs has none.
"""

import os
import threading

from .errors import InternalError

# The links in /proc/self/fd: librdmacm opens the rdma_cm device for each event channel;
# the kernel's uverbs names a Context's async event file so.
CM_CHANNEL_LINK = "/dev/infiniband/rdma_cm"
ASYNC_EVENT_LINK = "anon_inode:[infinibandevent]"

_finding = threading.Lock()         # one constructor watched at a time in this process


class EventFdNotFound(InternalError):
    """DAT_INTERNAL_ERROR: the fd is not where the kernel's name says it is."""


def made_with_fd(make, event_fd, link):
    """(obj, its event fd, non-blocking): obj = make(), and its fd from the verbs module's
    event_fd(obj) if it has one (not None), else the one fd make() opened whose
    /proc/self/fd link is `link`. Raises EventFdNotFound (obj closed) when there is not
    exactly one such fd, and what make() raises."""
    if event_fd is not None:
        obj = make()
        fd = event_fd(obj)
    else:
        with _finding:
            before = _open_fds()
            obj = make()
            found = [fd for fd, file in _open_fds().items()
                     if before.get(fd) != file and _link(fd) == link]
        if len(found) != 1:
            obj.close()
            raise EventFdNotFound(f"{type(obj).__name__}() opened {len(found)} fds linked to "
                                  f"{link} in /proc/self/fd, not one")
        fd = found[0]
    os.set_blocking(fd, False)
    return obj, fd


def _open_fds():
    """fd -> the (device, inode) it is open on, for the process's open fds: those closed
    by the time they are looked at (the listing's own) are left out, and a number that
    now stands for another file counts as new."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(name))
        except OSError:
            continue
        fds[int(name)] = (st.st_dev, st.st_ino)
    return fds


def _link(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None                 # closed meanwhile (another thread's)
