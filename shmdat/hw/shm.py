"""Named shared-memory segments, their owners, and reclaiming what dead owners left.

Part of the hardware layer. Every object is named ``shmdat.<uid>.<pid>.<start>.<n>.<what>``:
the uid keeps users apart, and the owner's pid with its start time (pid reuse
happens) tells whether the owner still lives, from the name alone. Objects are
created mode 0600.
"""

import errno
import mmap
import os
import re
import select

import posix_ipc

from .errors import NoRoom

SHM_DIR = "/dev/shm"
UID = os.getuid()
PREFIX = f"shmdat.{UID}."
_NAME = re.compile(r"^(sem\.)?shmdat\.(\d+)\.(\d+)\.(\d+)\.(\d+)\.(.+)$")

# The device's machine-wide objects (its QP table, and whatever else every process of the
# device shares) are `shmdat.<uid>.<what>`; SHMDAT_DEVICE_NS=<ns> gives the processes that
# share it a device instance of their own, `shmdat.<uid>.ns-<ns>.<what>`, so that a test
# can take its device's port down without touching the device of the tests beside it.
DEVICE_NS = os.environ.get("SHMDAT_DEVICE_NS", "")
_NS = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DEVICE_OBJECT = re.compile(r"^shmdat\.(\d+)\.(?:ns-([A-Za-z0-9_-]+)\.)?([a-z][a-z0-9_]*)$")


def check_ns(ns):
    """ValueError unless `ns` can name a device namespace ("" is the default device)."""
    if ns and not _NS.match(ns):
        raise ValueError(f"device namespace {ns!r}: a namespace is 1 to 64 of A-Z a-z 0-9 _ -")


check_ns(DEVICE_NS)


def device_object_name(what, ns=None):
    """The name of one of the device's machine-wide objects, in this process's device
    instance or (ns given; "" is the default one) in namespace `ns`'s."""
    ns = DEVICE_NS if ns is None else ns
    check_ns(ns)
    return f"{PREFIX}ns-{ns}.{what}" if ns else f"{PREFIX}{what}"


def list_device_objects():
    """This user's device objects, of every namespace: dicts with name, ns ("" for the
    default device), what, size."""
    out = []
    for entry in sorted(_entries()):
        m = _DEVICE_OBJECT.match(entry)
        if not m or int(m.group(1)) != UID:
            continue
        try:
            size = os.stat(os.path.join(SHM_DIR, entry)).st_size
        except OSError:
            continue
        out.append(dict(name=entry, ns=m.group(2) or "", what=m.group(3), size=size))
    return out


def process_start_time(pid):
    """The start time of a process (clock ticks since boot), or None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rindex(b")") + 2:].split()
    if fields[0] in (b"Z", b"X"):       # exited, not yet reaped: as good as dead
        return None
    return int(fields[19])


MY_PID = os.getpid()
MY_START = process_start_time(MY_PID)


def refresh_identity():
    """Re-read our pid and start time (after fork)."""
    global MY_PID, MY_START
    MY_PID = os.getpid()
    MY_START = process_start_time(MY_PID)


# A forked child is another process: the names it makes are its own. (Registered before any
# user of hw registers its own handler, since they import this module first.)
os.register_at_fork(after_in_child=refresh_identity)


def is_alive(pid, start):
    return process_start_time(pid) == start


class ProcessWatch:
    """Tells, cheaply and repeatedly, whether one process (pid + start time) still lives.

    Uses a pidfd where the kernel has them: it refers to that very process, so a
    reused pid cannot fool it, and polling it costs no /proc read.
    """

    def __init__(self, pid, start):
        self.pid, self.start = pid, start
        self._fd = None
        self._dead = False
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            fd = None
        # The pid may have been reused before we opened it: check the start time after.
        if not is_alive(pid, start):
            if fd is not None:
                os.close(fd)
            self._dead = True
            return
        self._fd = fd

    def alive(self):
        if self._dead:
            return False
        if self._fd is not None:
            poller = select.poll()          # not select(): a descriptor may be above 1023
            poller.register(self._fd, select.POLLIN)
            dead = bool(poller.poll(0))
        else:
            dead = not is_alive(self.pid, self.start)
        if dead:
            self._dead = True
            self.close()
        return not dead

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def shm_free_bytes():
    st = os.statvfs(SHM_DIR)
    return st.f_bavail * st.f_frsize


def _no_room(size, what):
    st = os.statvfs(SHM_DIR)
    return NoRoom(
        f"{SHM_DIR} cannot hold the {size} bytes that {what} needs: "
        f"{st.f_bavail * st.f_frsize} bytes are free of {st.f_blocks * st.f_frsize}. "
        f"Free some, or enlarge {SHM_DIR} (mount -o remount,size=... {SHM_DIR})", size, what)


class Segment:
    """A mapped POSIX shared-memory object."""

    def __init__(self, name, size, mm):
        self.name = name
        self.size = size
        self.mmap = mm
        self.buf = memoryview(mm)               # bytes
        # Aligned 8-byte loads and stores; an LMR of any length has its whole words here.
        self.words = self.buf[:size - size % 8].cast("Q")

    @classmethod
    def create(cls, name, size, what="this object"):
        """Create, size and map a new segment; NoRoom if /dev/shm cannot hold it.

        The pages are reserved with posix_fallocate so that a full /dev/shm is an
        error here and never a SIGBUS later.
        """
        if size > shm_free_bytes():
            raise _no_room(size, what)
        shm = posix_ipc.SharedMemory("/" + name, posix_ipc.O_CREX, mode=0o600)
        try:
            os.ftruncate(shm.fd, size)
            try:
                os.posix_fallocate(shm.fd, 0, size)
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.ENOMEM, errno.EFBIG):
                    raise _no_room(size, what) from None
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
            mm = mmap.mmap(shm.fd, size)
        except BaseException:
            shm.close_fd()
            shm.unlink()
            raise
        shm.close_fd()
        return cls(name, size, mm)

    @classmethod
    def open(cls, name):
        """Map an existing segment; raises posix_ipc.ExistentialError if there is none, or
        none yet: its creator has made the name but not yet given it its size."""
        shm = posix_ipc.SharedMemory("/" + name)
        try:
            size = os.fstat(shm.fd).st_size
            if size == 0:
                raise posix_ipc.ExistentialError(f"{name} is not sized yet")
            mm = mmap.mmap(shm.fd, size)
        finally:
            shm.close_fd()
        return cls(name, size, mm)

    def unlink(self):
        unlink_shm(self.name)

    def close(self):
        """Unmap, unless the consumer still holds views of the memory (then the GC does it)."""
        try:
            self.words.release()
            self.buf.release()
            self.mmap.close()
        except BufferError:
            pass


def unlink_shm(name):
    try:
        posix_ipc.unlink_shared_memory("/" + name)
    except posix_ipc.ExistentialError:
        pass


def unlink_sem(name):
    try:
        posix_ipc.unlink_semaphore("/" + name)
    except posix_ipc.ExistentialError:
        pass


# Listing and reclaiming (shmdat ls / gc, and every ia_open).

def list_objects(all_users=False):
    """Every shmdat object in /dev/shm: dicts with name, kind, uid, pid, start, alive, size."""
    out = []
    for entry in sorted(_entries()):
        m = _NAME.match(entry)
        if not m:
            continue
        sem, uid, pid, start, _n, what = m.groups()
        if not all_users and int(uid) != UID:
            continue
        try:
            size = os.stat(os.path.join(SHM_DIR, entry)).st_size
        except OSError:
            continue
        out.append(dict(name=entry, kind="semaphore" if sem else "segment", uid=int(uid),
                        pid=int(pid), start=int(start), what=what,
                        alive=is_alive(int(pid), int(start)), size=size))
    return out


def _entries():
    try:
        return os.listdir(SHM_DIR)
    except OSError:
        return []


def reclaim_dead():
    """Unlink this user's objects whose owner has died. Returns the names unlinked."""
    gone = []
    for obj in list_objects():
        if obj["alive"]:
            continue
        if obj["kind"] == "semaphore":
            unlink_sem(obj["name"][len("sem."):])
        else:
            unlink_shm(obj["name"])
        gone.append(obj["name"])
    return gone
