"""The software HCA behind one IA: its doorbell, its connection-management
channel, its memory-registration table, and its view of peer HCAs.

Part of the hardware layer: it knows segments, words and semaphores, nothing of DAT.

One IA owns:
  - a segment ``<prefix>.ia`` (its words: layout.py): a header (owner, layout
    version, doorbell-armed word, CM-pending word), the table of connection
    qualifiers it listens on (so that a connect to an unused one is refused
    without the owner's help, as a kernel CM would), and the registration
    table that peers read to check their RDMA;
  - a semaphore ``<prefix>.db``: the doorbell a sleeping waiter blocks on;
  - a Unix datagram socket in the abstract namespace (no file, gone with the
    process): the CM inbox. Any number of peers may send to it at once and the
    kernel keeps each message whole, which shared memory cannot do without a
    lock that a dying peer could hold forever.
"""

import contextlib
import fcntl
import itertools
import os
import secrets
import socket
import struct
import threading

import numpy as np
import posix_ipc

from . import shm
from .errors import LayoutMismatch, PeerUnreachable
from .layout import (
    ARMED_FOR, ARMED_SELF, ATOMIC_LOCK_SLOTS, E_BASE, E_KEY, E_KIND, E_LENGTH, E_PRIV, E_PZ, E_SEG, E_SEGOFF,
    ENTRY_WORDS, HCA_MAGIC as MAGIC, HCA_W_ARMED as W_ARMED, HCA_W_CLOSED as W_CLOSED,
    HCA_W_CM_PENDING as W_CM_PENDING, HCA_W_LAYOUT as W_LAYOUT, HCA_W_LISTEN_SLOTS as W_LISTEN_SLOTS,
    HCA_W_MAGIC as W_MAGIC, HCA_W_PID as W_PID, HCA_W_START as W_START, HCA_W_TABLE_SLOTS as W_TABLE_SLOTS,
    INDEX_BITS, LAYOUT_VERSION, LISTEN_ENTRY_BYTES, LISTEN_OFFSET, SLOT_MASK, TAG_BITS, WORD)
from .shm import Segment, ProcessWatch

_atomic_threads = threading.Lock()


class Registration:
    """One entry of a registration table, as read by an RDMA initiator."""
    __slots__ = ("key", "kind", "priv", "pz", "base", "length", "seg", "segoff")


def _layout(listen_slots, table_slots):
    """(byte offset of the registration table, total segment size)."""
    table = LISTEN_OFFSET + listen_slots * LISTEN_ENTRY_BYTES
    return table, table + table_slots * ENTRY_WORDS * WORD


def _listen_view(segment, listen_slots):
    return np.frombuffer(segment.mmap, dtype=np.uint64, count=2 * listen_slots,
                         offset=LISTEN_OFFSET).reshape(listen_slots, 2)


class Hca:
    def __init__(self, listen_slots, table_slots):
        self.n = next(_ia_numbers)
        self.address = address_of(shm.MY_PID, shm.MY_START, self.n)
        self.prefix = prefix_of(shm.MY_PID, shm.MY_START, self.n)
        self.table_slots = table_slots
        self.table_offset, size = _layout(listen_slots, table_slots)
        self.segment = Segment.create(self.prefix + ".ia", size, "the IA's registration table")
        try:
            self.doorbell = posix_ipc.Semaphore("/" + self.prefix + ".db", posix_ipc.O_CREX,
                                                mode=0o600, initial_value=0)
            self.cm_socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.cm_socket.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            self.cm_socket.bind(cm_socket_name(self.address))
            self.cm_socket.setblocking(False)
            _inboxes.add(self.cm_socket)
        except BaseException:
            self._unlink()
            raise
        w = self.segment.words
        w[W_PID], w[W_START], w[W_TABLE_SLOTS] = shm.MY_PID, shm.MY_START, table_slots
        w[W_LISTEN_SLOTS], w[W_LAYOUT] = listen_slots, LAYOUT_VERSION
        self._listening = _listen_view(self.segment, listen_slots)
        w[W_MAGIC] = MAGIC                      # last: the header is complete when it shows
        self.words = w
        self._free_slots = list(range(table_slots - 1, 0, -1))     # slot 0 unused: key 0 is "none"
        self._slot_uses = {}
        self._tag_start = secrets.randbits(TAG_BITS)
        self._tag_step = (1 << (TAG_BITS - 2)) + 2 * secrets.randbits(TAG_BITS - 3) + 1     # odd: full period
        self._seg_ids = itertools.count(1)
        self.peers = {}                         # address -> RemoteHca
        self.closed = False

    # Doorbell. A waiter arms, re-checks for work, then sleeps; a producer rings
    # only an armed doorbell, so a busy receiver costs its peers no system call.
    # A waiter of another HCA of this process may arm this one for itself: its
    # peers then ring that HCA's doorbell (the waiter moves both).

    def arm(self, for_n=None):
        self.words[W_ARMED] = ARMED_SELF if for_n is None else ARMED_FOR + for_n

    def disarm(self):
        self.words[W_ARMED] = 0

    def disarm_for(self, n):
        """Disarm, if armed for HCA n of this process."""
        if self.words[W_ARMED] == ARMED_FOR + n:
            self.words[W_ARMED] = 0

    def sleep(self, seconds):
        """Block on the doorbell for at most `seconds`. True if it rang.

        Raises posix_ipc.SignalError if a signal interrupted the wait.
        """
        try:
            self.doorbell.acquire(seconds)
            return True
        except posix_ipc.BusyError:
            return False

    def ring_self(self):
        """Wake this IA's own sleeper (a local event it must see)."""
        self.doorbell.release()

    # Connection management channel.

    def cm_pending(self):
        return self.words[W_CM_PENDING] != 0

    def cm_receive(self):
        """All waiting CM messages as (bytes, sender pid), from senders of our uid only."""
        self.words[W_CM_PENDING] = 0        # clear first: a message sent after this sets it again
        out = []
        creds = socket.CMSG_SPACE(struct.calcsize("3i"))
        while True:
            try:
                data, anc, _flags, _addr = self.cm_socket.recvmsg(65536, creds)
            except (BlockingIOError, InterruptedError):
                return out
            pid = uid = None
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid, uid, _gid = struct.unpack("3i", payload[:12])
            if uid == shm.UID:
                out.append((data, pid))

    def cm_send(self, address, data):
        """Send one CM message to the HCA at `address` and ring its doorbell."""
        peer = self.peer(address)
        try:
            self.cm_socket.sendto(data, cm_socket_name(address))
        except (ConnectionRefusedError, FileNotFoundError):
            raise PeerUnreachable(address) from None
        peer.words[W_CM_PENDING] = 1
        peer.ring()

    # Listening.

    def listen(self, conn_qual, on):
        """Publish (or withdraw) that this IA listens on conn_qual."""
        table = self._listening
        if on:
            free = np.flatnonzero(table[:, 1] == 0)
            if not len(free):
                return False
            row = table[free[0]]
            row[0] = conn_qual
            row[1] = 1              # last: the entry is whole when it shows
        else:
            for i in np.flatnonzero((table[:, 0] == conn_qual) & (table[:, 1] == 1)):
                table[i, 1] = 0
        return True

    # Memory.

    def new_segment(self, nbytes):
        """A fresh shared segment for an LMR: (segment, seg_id)."""
        seg_id = next(self._seg_ids)
        return Segment.create(f"{self.prefix}.m{seg_id}", nbytes, "this LMR"), seg_id

    def register(self, kind, priv, pz, base, length, seg=0, segoff=0):
        """Publish a registration that peers may use; returns its key (the rmr_context)."""
        if not self._free_slots:
            return None
        slot = self._free_slots.pop()
        # The tag above the slot walks a random full-period sequence: unguessable
        # from the slot, and a freed key comes back only after 2**15 reuses of it.
        n = self._slot_uses[slot] = self._slot_uses.get(slot, 0) + 1
        tag = (self._tag_step * n + self._tag_start) % (1 << TAG_BITS)
        key = tag << INDEX_BITS | slot
        self._write_entry(key, kind, priv, pz, base, length, seg, segoff)
        return key

    def reregister(self, key, kind, priv, pz, base, length, seg=0, segoff=0):
        """Change a registration in place; the key stays the same (verbs' rereg)."""
        self._write_entry(key, kind, priv, pz, base, length, seg, segoff)

    def _write_entry(self, key, kind, priv, pz, base, length, seg, segoff):
        w, o = self.words, self._entry(key & SLOT_MASK)
        w[o + E_KEY] = 0        # first: a peer reading meanwhile finds no entry, never half of one
        w[o + E_KIND], w[o + E_PRIV], w[o + E_PZ] = kind, priv, pz
        w[o + E_BASE], w[o + E_LENGTH], w[o + E_SEG], w[o + E_SEGOFF] = base, length, seg, segoff
        w[o + E_KEY] = key      # last (x86-64 keeps stores in order): the entry is whole when the key shows

    def deregister(self, key):
        """Withdraw a registration: peers' RDMA with that key fails from now on."""
        slot = key & SLOT_MASK
        o = self._entry(slot)
        if self.words[o + E_KEY] == key:
            self.words[o + E_KEY] = 0
            self._free_slots.append(slot)

    def _entry(self, slot):
        return self.table_offset // 8 + slot * ENTRY_WORDS

    # Peers.

    def peer(self, address):
        """The RemoteHca at `address` (cached). Raises PeerUnreachable."""
        p = self.peers.get(address)
        if p is None or not p.alive():
            # A dead peer's mapping stays with whoever still holds it (its connections
            # flush through it); the cache just forgets it.
            self.peers.pop(address, None)
            p = self.peers[address] = RemoteHca(address)
        return p

    def close(self):
        self.closed = True
        self.words[W_CLOSED] = 1
        self._listening = None
        for p in self.peers.values():
            p.close()
        self.peers.clear()
        self._unlink()

    def forget_inherited(self):
        """In a child made by fork(): close the child's copy of the HCA's socket (the
        parent keeps its own; nothing is unlinked), so dropping the parent's HCA in the
        child neither warns nor holds the descriptor."""
        _inboxes.discard(self.cm_socket)
        self.cm_socket.close()

    def _unlink(self):
        try:
            _inboxes.discard(self.cm_socket)
            self.cm_socket.close()
        except AttributeError:
            pass
        doorbell = getattr(self, "doorbell", None)
        if doorbell is not None:
            doorbell.unlink()
            doorbell.close()
        self.segment.unlink()
        self.segment.close()


_ia_numbers = itertools.count()
# The inboxes of this process's open HCAs. Held here so that an HCA dropped in a reference
# cycle (a verbs Context nobody holds, which the next Context() closes) keeps its inbox
# until it is closed, instead of the collector closing it early with a ResourceWarning.
_inboxes = set()


def address_of(pid, start, n):
    """The address of HCA number n of process (pid, start)."""
    return f"{pid}.{start}.{n}"


def prefix_of(pid, start, n):
    """The prefix of that HCA's shared objects' names."""
    return f"{shm.PREFIX}{address_of(pid, start, n)}"


def ring_all():
    """Ring the armed doorbell of every live HCA of this user: a device-wide change (the
    port's state) that sleeping waiters must see now, not at their next slice."""
    for obj in shm.list_objects():
        if obj["what"] != "ia" or not obj["alive"]:
            continue
        try:
            peer = RemoteHca(obj["name"][len(shm.PREFIX):-len(".ia")])
        except PeerUnreachable:
            continue                    # closed meanwhile
        peer.ring()
        peer.close()


def cm_socket_name(address):
    return f"\0{shm.PREFIX}{address}"


def parse_address(address):
    """(pid, start, n) from an IA address, or None if it is not one."""
    if not isinstance(address, str):
        return None
    parts = address.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


class RemoteHca:
    """A peer HCA as this process sees it: its header, table, doorbell, memory and liveness."""

    def __init__(self, address):
        parsed = parse_address(address)
        if parsed is None:
            raise PeerUnreachable(address)
        pid, start, _n = parsed
        prefix = f"{shm.PREFIX}{address}"
        self.address = address
        try:
            self.segment = Segment.open(prefix + ".ia")
        except (posix_ipc.ExistentialError, OSError):
            raise PeerUnreachable(address) from None
        w = self.words = self.segment.words
        if w[W_MAGIC] != MAGIC or w[W_PID] != pid or w[W_START] != start or w[W_CLOSED]:
            self.segment.close()
            raise PeerUnreachable(address)
        version = w[W_LAYOUT]
        if version != LAYOUT_VERSION:
            self.segment.close()
            raise LayoutMismatch(f"{address}: layout version {version}, ours {LAYOUT_VERSION}")
        self.table_slots = w[W_TABLE_SLOTS]
        self._table_word, size = _layout(w[W_LISTEN_SLOTS], self.table_slots)
        self._table_word //= 8
        if size != self.segment.size:
            self.segment.close()
            raise PeerUnreachable(address)
        self._listening = _listen_view(self.segment, w[W_LISTEN_SLOTS])
        try:
            self.doorbell = posix_ipc.Semaphore("/" + prefix + ".db")
        except posix_ipc.ExistentialError:
            self.segment.close()
            raise PeerUnreachable(address) from None
        self.pid = pid
        self.watch = ProcessWatch(pid, start)
        if not self.watch.alive():          # its objects outlived it (killed): not a peer
            self.close()
            raise PeerUnreachable(address)
        self.start = start
        self._segments = {}             # seg_id -> Segment, for RDMA into the peer's LMRs
        self._siblings = {}             # n -> the doorbell of the peer process's HCA n
        self._lock_fd = None            # the peer's table file, opened for atomics' record locks

    def ring(self):
        """Ring the peer's doorbell if a waiter there has armed it (or the doorbell of
        the peer process's HCA whose waiter armed it)."""
        armed = self.words[W_ARMED]
        if armed == ARMED_SELF:
            self.doorbell.release()
        elif armed:
            doorbell = self._sibling(int(armed) - ARMED_FOR)
            if doorbell is not None:
                doorbell.release()

    def _sibling(self, n):
        """The doorbell of the peer process's HCA n, or None if it is gone (its waiter
        left; it sees our work at its next look)."""
        doorbell = self._siblings.get(n)
        if doorbell is None:
            try:
                doorbell = posix_ipc.Semaphore(f"/{prefix_of(self.pid, self.start, n)}.db")
            except posix_ipc.ExistentialError:
                return None
            self._siblings[n] = doorbell
        return doorbell

    def alive(self):
        return self.watch.alive() and not self.words[W_CLOSED]

    def listens(self, conn_qual):
        """Whether the peer listens on conn_qual (a snapshot)."""
        t = self._listening
        return bool(np.any((t[:, 0] == conn_qual) & (t[:, 1] == 1)))

    def lookup(self, key):
        """The peer's registration under `key`, or None (a consistent snapshot)."""
        slot = key & SLOT_MASK
        if not 0 < slot < self.table_slots:
            return None
        w, o = self.words, self._table_word + slot * ENTRY_WORDS
        if w[o + E_KEY] != key:
            return None
        r = Registration()
        r.key = key
        r.kind, r.priv, r.pz = w[o + E_KIND], w[o + E_PRIV], w[o + E_PZ]
        r.base, r.length, r.seg, r.segoff = w[o + E_BASE], w[o + E_LENGTH], w[o + E_SEG], w[o + E_SEGOFF]
        if w[o + E_KEY] != key:     # changed while we read it
            return None
        return r

    def segment_view(self, seg_id):
        """The bytes of the peer's shared segment `seg_id`, or None if it is gone."""
        seg = self._segments.get(seg_id)
        if seg is None:
            try:
                seg = Segment.open(f"{shm.PREFIX}{self.address}.m{seg_id}")
            except (posix_ipc.ExistentialError, OSError, ValueError):
                return None
            if len(self._segments) >= 256:      # bound the mappings kept for freed LMRs
                self._segments.pop(next(iter(self._segments))).close()
            self._segments[seg_id] = seg
        return seg.buf

    @contextlib.contextmanager
    def atomic_lock(self, addr):
        """Hold the peer's lock for the 8-byte word at `addr`, so that atomics from any
        number of initiators never interleave. A record lock on the peer's table file
        (the kernel drops it if we die) plus a lock for the threads of this process
        (record locks belong to processes)."""
        if self._lock_fd is None:
            self._lock_fd = os.open(os.path.join(shm.SHM_DIR, self.segment.name), os.O_RDWR)
        slot = (addr >> 3) % ATOMIC_LOCK_SLOTS
        with _atomic_threads:
            fcntl.lockf(self._lock_fd, fcntl.LOCK_EX, 1, slot)
            try:
                yield
            finally:
                fcntl.lockf(self._lock_fd, fcntl.LOCK_UN, 1, slot)

    def close(self):
        if getattr(self, "_lock_fd", None) is not None:     # close() may come from __init__
            os.close(self._lock_fd)
            self._lock_fd = None
        for seg in getattr(self, "_segments", {}).values():
            seg.close()
        self._segments = {}
        for doorbell in getattr(self, "_siblings", {}).values():
            doorbell.close()
        self._siblings = {}
        self.watch.close()
        self.doorbell.close()
        self._listening = None
        self.segment.close()

