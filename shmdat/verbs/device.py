"""The device (pyverbs.device): get_device_list, Context and the attributes it reports.

shmdat has one device, `shm0`, shaped like Soft-RoCE: a CA with one ACTIVE
Ethernet port whose GIDs are RoCE ones (verbs/link.py takes it down and up). Every Context opened on it, in any
process of the machine, is a window on the same device. A Context owns a
hardware HCA (hw/hca.py): the registration table peers check their RDMA
against, and the doorbell its waiters sleep on.
"""

import atexit
import collections
import errno
import hashlib
import ipaddress
import os
import socket
import threading
import time
import weakref

from ..hw import cm_ports, shm
from ..hw.errors import NoRoom
from ..hw.hca import Hca
from ..hw.layout import HCA_W_CM_PENDING, PORT_W_GENERATION
from ..hw.port import Port
from ..hw.progress import LIVENESS_SLICE, LOOK_SLICE, SPIN_SECONDS, Progress, SignalError
from ..hw.qpn import QpnTable
from . import checks, libibverbs_enums as e
from .datagrams import parse_notice
from .gid import GID, gid_raw
from .base import PyverbsCM, PyverbsObject, Unsupported, UnsupportedAttr, close_children
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError

DEVICE_NAME = "shm0"
PORT = 1
PKEY_DEFAULT = 0xFFFF
ACTIVE_MTU = e.IBV_MTU_1024
VENDOR_ID = 0x5348      # "SH": not a PCI vendor; rxe uses 0xFFFFFF the same way


def _machine_guid():
    """A GUID stable for this machine (a NIC's is burnt in), from its machine id."""
    try:
        with open("/etc/machine-id", "rb") as f:
            seed = f.read().strip()
    except OSError:
        seed = socket.gethostname().encode()
    return int.from_bytes(hashlib.sha256(b"shmdat" + seed).digest()[:8], "little")


NODE_GUID = _machine_guid()


class _EventCount:
    """How many async and rdma_cm events the device has queued in this process
    (shm0dv.events_pending). The Contexts that queue them hold different locks, so
    the count has one of its own; a reader needs none (an int is read whole)."""
    __slots__ = ("value", "_lock")

    def __init__(self):
        self.value = 0
        self._lock = threading.Lock()

    def bump(self):
        with self._lock:
            self.value += 1


events_queued = _EventCount()
_now = time.monotonic
CLOCK_EVERY = 4                 # a spin reads the clock after its first round, then every 4th

# This process's open Contexts (one device moves them all): id -> weak reference, and
# its references as a tuple, rebuilt at each change, that the progress round reads as is.
_contexts = {}
_context_refs = ()


def _add_context(ctx):
    global _context_refs
    key = id(ctx)
    _contexts[key] = weakref.ref(ctx, lambda _, key=key: _drop_context(key))
    _context_refs = tuple(_contexts.values())


def _drop_context(key):
    global _context_refs
    _contexts.pop(key, None)
    _context_refs = tuple(_contexts.values())


def _open_contexts():
    return [ctx for ctx in (ref() for ref in list(_contexts.values())) if ctx is not None]
_dropped = []                   # Contexts that became garbage unclosed, to close at the next Context()

# What the device can do: at least Soft-RoCE's where the issue names it, and
# what the shared-memory hardware can hold.
LIMITS = dict(
    page_size_cap=0xFFFFF000, max_qp=4096, max_qp_wr=16384,
    max_sge=32, max_sge_rd=32, max_cq=4096, max_cqe=65535, max_mr=16383, max_pd=65536,
    max_qp_rd_atom=128, max_ee_rd_atom=0, max_res_rd_atom=4096 * 128, max_qp_init_rd_atom=128,
    max_ee_init_rd_atom=0, max_ee=0, max_rdd=0, max_mw=0, max_raw_ipv6_qp=0, max_raw_ethy_qp=0,
    max_mcast_grp=0, max_mcast_qp_attach=0, max_total_mcast_qp_attach=0, max_ah=65536,
    max_fmr=0, max_map_per_fmr=0, max_srq=4096, max_srq_wr=16384, max_srq_sge=32,
    max_pkeys=1, local_ca_ack_delay=15,
    max_inline_data=400)        # shm0's addition (ibv_device_attr has none): rxe's inline limit
DEVICE_CAP_FLAGS = (e.IBV_DEVICE_BAD_PKEY_CNTR | e.IBV_DEVICE_BAD_QKEY_CNTR
                    | e.IBV_DEVICE_SYS_IMAGE_GUID | e.IBV_DEVICE_RC_RNR_NAK_GEN
                    | e.IBV_DEVICE_SRQ_RESIZE | e.IBV_DEVICE_PORT_ACTIVE_EVENT)
# The port's GID table, as rxe fills it for `lo`: each address as RoCE v1 and v2.
GID_TABLE_LEN = 16
_ADDRESSES = (str(ipaddress.IPv6Address(0xFE80 << 112 | NODE_GUID)), "127.0.0.1")
GIDS = [(gid_raw(address), sysfs_type) for address in _ADDRESSES
        for sysfs_type in (e.IBV_GID_TYPE_SYSFS_IB_ROCE_V1, e.IBV_GID_TYPE_SYSFS_ROCE_V2)]
_GID_TYPE = {e.IBV_GID_TYPE_SYSFS_IB_ROCE_V1: e.IBV_GID_TYPE_ROCE_V1,
             e.IBV_GID_TYPE_SYSFS_ROCE_V2: e.IBV_GID_TYPE_ROCE_V2}
LOOPBACK_IFINDEX = 1


class Device(PyverbsObject):
    """ibv_device as get_device_list() returns it."""

    def __init__(self, name, guid, node_type, transport_type, index):
        super().__init__()
        self.name, self.guid, self.index = name.encode(), guid, index
        self.node_type, self.transport_type = node_type, transport_type

    def __str__(self):
        return (f"Device {self.name.decode()}, node type {self.node_type.name}, "
                f"transport type {self.transport_type.name}, guid {self.guid:#x}")


def get_device_list():
    """ibv_get_device_list: the one shared-memory device."""
    return [Device(DEVICE_NAME, NODE_GUID, e.ibv_node_type.IBV_NODE_CA,
                   e.ibv_transport_type.IBV_TRANSPORT_IB, 0)]


class _Attributes(PyverbsObject):
    """Attributes read as fields (pyverbs shows them as properties)."""

    def __init__(self, **fields):
        super().__init__()
        self.__dict__.update(fields)

    def __str__(self):
        return "".join(f"{k:<28}: {v}\n" for k, v in vars(self).items() if k != "logger")


class DeviceAttr(_Attributes):
    """ibv_device_attr."""


class DeviceAttrEx(_Attributes):
    """ibv_device_attr_ex: `orig_attr` is the DeviceAttr."""


class ODPCaps(_Attributes):
    """ibv_odp_caps (on-demand paging: none on shm0)."""


class TSOCaps(_Attributes):
    """ibv_tso_caps (segmentation offload: none on shm0)."""


class RSSCaps(_Attributes):
    """ibv_rss_caps (receive-side scaling: none on shm0)."""


class PacketPacingCaps(_Attributes):
    """ibv_packet_pacing_caps (rate limits: none on shm0)."""


class TMCaps(_Attributes):
    """ibv_tm_caps (tag matching: none on shm0)."""


class CQModerationCaps(_Attributes):
    """ibv_cq_moderation_caps (none on shm0)."""


class PCIAtomicCaps(_Attributes):
    """ibv_pci_atomic_caps (no PCIe atomics on shm0)."""


class PortAttr(_Attributes):
    """ibv_port_attr."""


class GIDEntry(_Attributes):
    """ibv_gid_entry."""

    def gid_str(self):
        return self.gid.gid


class AsyncElement:
    """What an async event is about: one of qp, cq, srq, port_num (the C union)."""
    __slots__ = ("qp", "cq", "srq", "port_num")

    def __init__(self, qp=None, cq=None, srq=None, port_num=0):
        self.qp, self.cq, self.srq, self.port_num = qp, cq, srq, port_num


class AsyncEvent(PyverbsObject):
    """ibv_async_event as get_async_event() returns it: `event_type`, `element`
    (pyverbs lacks it; the C struct has it) and ack()."""

    def __init__(self, event_type=0, element=None, context=None):
        super().__init__()
        self.event_type, self.element = event_type, element or AsyncElement()
        self._context = context

    def ack(self):
        """ibv_ack_async_event (once; later calls do nothing)."""
        if self._context is not None:
            self._context._ack(self)
            self._context = None

    def __str__(self):
        return f"{'Event Type':<24}: {e.ibv_event_type(self.event_type).name}\n"


class Context(PyverbsCM):
    """ibv_context: `Context(name='shm0')`, closed by close() or a `with` block.

    Raises PyverbsUserError without a name, PyverbsRDMAError (ENODEV) for a
    device that does not exist, (ENOMEM) when /dev/shm cannot hold the device.
    """

    def __init__(self, **kwargs):
        super().__init__()
        _close_dropped()
        self.name = kwargs.get("name")
        if kwargs.get("cmid") is not None or kwargs.get("cmd_fd") is not None:
            raise PyverbsUserError("shm0 cannot import a context from a CMID or a command fd")
        if self.name is None:
            raise PyverbsUserError("Device name must be provided")
        self.name = checks.text(self.name, "name")
        if self.name != DEVICE_NAME:
            raise PyverbsRDMAError(f"Failed to find device {self.name}")
        shm.reclaim_dead()              # what killed processes left, as every ia_open does
        cm_ports.reclaim_unused()
        try:
            self.hca = Hca(listen_slots=64, table_slots=LIMITS["max_mr"] + 1)
        except NoRoom as err:
            raise PyverbsRDMAError(f"Failed to open device {self.name}: {err}", 12) from None
        self._port = Port()
        if not self._port.intact():
            self._port.close()
            self.hca.close()
            raise PyverbsRDMAError(f"Failed to open device {self.name}: its port state "
                                   f"{self._port.path} is not shm0's (`shmdat gc` removes it)",
                                   errno.EIO)
        self._port_generation, self.port_down = self._port.generation, self._port.down
        # The two words every progress round reads, read as the device's registers are.
        self._hca_words, self._port_words = self.hca.words, self._port.words
        self._fatal = False             # IBV_EVENT_DEVICE_FATAL was raised: calls fail with EIO
        self.pds, self.cqs, self.ccs, self.qps = (set(), set(), set(), set())
        self.mrs_by_lkey = {}           # lkey -> MR: what a local SGE names
        self.active_qps = []            # QPs with work the device must move (progress visits them)
        self.owner = (shm.MY_PID, shm.MY_START, self.hca.n)
        self._next_liveness = 0.0
        self._wakes = 0                 # wake() calls: each ends the wait() calls under way
        self._closing = False
        self._refs_seen = None          # the _context_refs that _other_refs was made from
        self._other_refs = ()
        self._async_events = collections.deque()
        self._unacked = collections.Counter()       # element object -> events got, not acked
        self._async_r, self._async_w = os.pipe()    # a byte per queued event: async_fd polls readable
        self._qpn_table = None
        self.cm = None                  # the rdma_cm agent on this context (cmid.py), if any
        self._progress = Progress(self.hca, self._poll, self._others)
        self.lock = self._progress.lock     # the context's lock: every call that moves the device holds it
        self.completions_made = 0           # WCs put in this Context's CQs so far (shm0dv.completions_made)
        self._ours = True               # False in a forked child: the parent's to close
        _add_context(self)              # last: another thread's poll may move it from now on

    def __del__(self):
        # pyverbs frees a Context nobody holds (rdma-core's tests drop many unclosed).
        # Closing here could run inside another Context's call, so it waits for the next Context().
        if getattr(self, "_ours", False) and not self._closed:
            _dropped.append(self)

    def _release(self):
        """ibv_close_device: its QPs, channels, CQs and PDs (and what they hold) first.
        Destroying them waits for no async event's ack: the whole device goes."""
        with self._progress.lock:
            self._closing = True
            _drop_context(id(self))
            if self.cm is not None:
                self.cm.close_all()     # its CMIDs: connections end, ports are freed
            close_children([self.qps, self.ccs, self.cqs, self.pds])
            if self._qpn_table is not None:
                self._qpn_table.close()
            self._progress.wake_local()
            self._progress.drain_waiters()
            self._port.close()
            self.hca.close()
            os.close(self._async_r)
            os.close(self._async_w)
        cm_ports.reclaim_unused()       # a port table that only killed processes' rows keep

    def add_ref(self, obj):
        """Keep `obj` (a PD, CQ, CompChannel or QP) to close it with the context."""
        self.check_usable(f"Failed to create {type(obj).__name__}")
        getattr(self, obj.context_set).add(obj)

    # The device's engine: progress runs in the caller's poll, post and wait.

    def _poll(self):
        """Progress for this context and, as hardware would run by itself, for the other
        contexts of this process (rdma-core's tests run both ends in one process, and
        one side's poll must move the other). Another context whose lock is busy is
        being moved by its holder: it is skipped, so no two locks are ever waited on.
        The others come first: what this context's round completes is then the caller's
        with nothing after it. The clock is read once a round (a read costs as much as
        ten lines here)."""
        now = _now()
        if self._refs_seen is not _context_refs:        # a Context came or went
            self._refs_seen = refs = _context_refs
            self._other_refs = tuple(ref for ref in refs if ref() is not self)
        for ref in self._other_refs:
            other = ref()
            # A quiet Context (rdma_cm's agent, with no QPs, most of the time) is looked
            # at without its lock; one with work is moved if its lock is free.
            try:
                busy = other is not None and (other.active_qps or other._hca_words[HCA_W_CM_PENDING]
                                              or now >= other._next_liveness)
            except ValueError:      # its HCA was closed meanwhile by another thread (closing)
                continue
            if busy and other.lock.acquire(False):     # (only tried)
                try:
                    if not other._closing:  # (under its lock: not closed meanwhile)
                        other._poll_own(now)
                finally:
                    other.lock.release()
        self._poll_own(now)

    def _others(self):
        """The engines of this process's other Contexts: a waiter here sleeps for them too."""
        return [other._progress for other in _open_contexts() if other is not self]

    def _poll_own(self, now):
        if self._closed:
            return
        if self._port_words[PORT_W_GENERATION] != self._port_generation:
            self._port_changed()
        if self._hca_words[HCA_W_CM_PENDING]:
            self._inbox()
        active = self.active_qps
        for qp in active[:] if len(active) > 1 else active:     # (a QP may leave meanwhile)
            qp._progress()
        if now >= self._next_liveness:      # a dead peer is seen within a slice
            self._liveness()

    def _liveness(self):
        """The look at the peers (under the lock): QPs whose peer process died go to
        ERR, rdma_cm's handshakes and connections with one end; and at the device."""
        self._next_liveness = time.monotonic() + LOOK_SLICE
        for qp in self.active_qps[:]:
            qp._check_peer()
        if self.cm is not None:
            self.cm.check_peers()
        self.check_device()

    def watch(self):
        """shm0dv.watch: the look at the peers if LOOK_SLICE has passed since the last,
        for paths that run no progress; one clock read otherwise."""
        if time.monotonic() >= self._next_liveness:
            with self._progress.lock:
                if not self._closed:
                    self._liveness()

    def _inbox(self):
        """The messages in the HCA's inbox (hw/hca.py): a UD sender's new connection goes
        to the QP it names, rdma_cm's messages to the context's agent."""
        for data, pid in self.hca.cm_receive():
            notice = parse_notice(data)
            if notice is not None:
                self._attach_datagrams(*notice)
            elif self.cm is not None:
                self.cm.take(data, pid)

    # The port and the device (machine-wide: hw/port.py).

    def _port_changed(self):
        """The port went down or came up (`shmdat link set`): IBV_EVENT_PORT_ERR or
        PORT_ACTIVE, one for each change since the last look."""
        generation, down = self._port.generation, self._port.down
        changes = generation - self._port_generation
        self._port_generation, self.port_down = generation, down
        for i in range(min(changes, 2), 0, -1):         # the last two changes: where it is now
            went_down = down if i == 1 else not down
            self._async_event(e.IBV_EVENT_PORT_ERR if went_down else e.IBV_EVENT_PORT_ACTIVE,
                              port_num=PORT)

    def check_device(self):
        """Whether the device is still there; if its machine-wide state was removed or
        corrupted under this Context (the port file, hw/port.py: intact; the QP table
        while this Context holds numbers in it), the Context takes it as a NIC's
        catastrophic error, once: IBV_EVENT_DEVICE_FATAL, every QP to ERR (flushing),
        and calls that would reach the kernel fail with EIO from then on."""
        if self._fatal:
            return False
        if self._port.intact() and not (self.qps and not self._qpn_table.linked()):
            return True
        self._fatal = True
        for qp in list(self.qps):
            qp._device_fatal()
        self._async_event(e.IBV_EVENT_DEVICE_FATAL)
        return False

    def check_usable(self, what):
        """Raise PyverbsRDMAError: EBADF if closed, EIO after IBV_EVENT_DEVICE_FATAL
        (as libibverbs' commands fail once the kernel has disassociated the device)."""
        self._check_open(what)
        if self._fatal:
            raise PyverbsRDMAError(f"{what}: the device had a fatal error", errno.EIO)

    def _attach_datagrams(self, address, src, dst):
        for qp in self.qps:
            if qp.qp_num == dst and qp._datagrams is not None:
                qp._datagrams.attach(address, src)

    def progress(self):
        """Move every QP of the context along (under the context's lock)."""
        lock = self.lock
        lock.acquire()          # (acquire/release: half the cost of `with` on the hot path)
        try:
            self._poll()
        finally:
            lock.release()

    def block(self, ready):
        """Run progress until ready() (checked under the lock): spinning for SPIN_SECONDS
        (SHMDAT_SPIN_US) first, the lock let go between rounds, as a NIC's completion
        often comes within microseconds and a sleep and wake-up costs tens; then
        asleep on the doorbell."""
        lock = self._progress.lock
        end = time.monotonic() + SPIN_SECONDS
        rounds = 0
        while True:
            with lock:
                self._poll()
                if ready():
                    return
            rounds += 1
            if rounds % CLOCK_EVERY == 1 and time.monotonic() >= end:
                break                       # (the clock read every few rounds: it costs one)
        with lock:
            self._progress.block(ready, None)       # with no deadline it returns once ready()

    def wake_waiters(self):
        with self._progress.lock:
            self._progress.wake_local()

    def wait(self, ready, deadline):
        """shm0dv.block: run progress and sleep on the doorbell until ready() (checked
        under the lock), the monotonic `deadline` (None: none) or another thread's
        wake(); ready()'s value then. Raises InterruptedError when a signal handler
        returns during the sleep, PyverbsRDMAError (EBADF) when the Context is or gets
        closed."""
        with self._progress.lock:
            self._check_open("Failed to wait on the device")
            wakes = self._wakes
            try:
                self._progress.block(lambda: self._wakes != wakes or self._closing or ready(),
                                     deadline)
            except SignalError:
                raise InterruptedError(errno.EINTR, "a signal interrupted the wait") from None
            if self._closing:
                raise PyverbsRDMAError("Failed to wait on the device: the Context is closed",
                                       errno.EBADF)
            return bool(ready())

    def wake(self):
        """shm0dv.wake: the threads in wait() look at ready() once more and return."""
        with self._progress.lock:
            self._wakes += 1
            self._progress.wake_local()

    # Async events (ibv_get_async_event(3)).

    @property
    def async_fd(self):
        """Polls readable while an async event waits. With O_NONBLOCK set on it,
        get_async_event raises EAGAIN instead of waiting."""
        return self._async_r

    def get_async_event(self):
        """ibv_get_async_event: the next async event, waiting for it (progress runs
        meanwhile). Each event goes to exactly one caller. Raises PyverbsRDMAError
        (EAGAIN: nothing queued and async_fd is non-blocking; EBADF: closed)."""
        with self._progress.lock:
            self._check_open("Failed to get async event")
            if self._closing:               # (closed by another thread: _closed comes after)
                raise PyverbsRDMAError("Failed to get async event: the Context is closed",
                                       errno.EBADF)
            if not self._async_events and not os.get_blocking(self._async_r):
                self._poll()
                if not self._async_events:
                    raise PyverbsRDMAError("Failed to get async event", errno.EAGAIN)
            # _closing, not _closed: close() waits for this thread to leave before it sets _closed
            self._progress.block(lambda: bool(self._async_events) or self._closing, None)
            if self._closing:
                raise PyverbsRDMAError("Failed to get async event: the Context is closed", errno.EBADF)
            event = self._async_events.popleft()
            os.read(self._async_r, 1)
            self._unacked[_element_object(event.element)] += 1
            return event

    def _async_event(self, event_type, **element):
        """The device raises an async event (under the lock)."""
        self._async_events.append(AsyncEvent(event_type, AsyncElement(**element), self))
        events_queued.bump()
        os.write(self._async_w, b"\1")
        self._progress.wake_local()

    def _ack(self, event):
        with self._progress.lock:
            self._unacked[_element_object(event.element)] -= 1
            self._progress.cond.notify_all()

    def wait_acked(self, obj):
        """Before destroying `obj` (QP, CQ, SRQ): wait until every event about it that
        was got has been acked, as the man page says; drop those not got yet."""
        with self._progress.lock:
            kept = collections.deque(ev for ev in self._async_events
                                     if _element_object(ev.element) is not obj)
            dropped = len(self._async_events) - len(kept)
            if dropped:
                self._async_events = kept
                os.read(self._async_r, dropped)
            while self._unacked[obj] > 0 and not self._closing:
                self._progress.cond.wait(LIVENESS_SLICE)
            self._unacked.pop(obj, None)

    @property
    def qpn_table(self):
        """The machine's QP number table, opened with the first QP."""
        if self._qpn_table is None:
            self._qpn_table = QpnTable()
        return self._qpn_table

    @property
    def num_comp_vectors(self):
        return 1

    def query_device(self):
        """ibv_query_device -> DeviceAttr; max_mr_size is what /dev/shm has free now
        (an MR's memory is a shared segment there)."""
        self.check_usable(f"Failed to query device {self.name}")
        return DeviceAttr(fw_version="1.0.0", node_guid=NODE_GUID, sys_image_guid=NODE_GUID,
                          vendor_id=VENDOR_ID, vendor_part_id=0, hw_ver=1,
                          device_cap_flags=int(DEVICE_CAP_FLAGS), atomic_caps=e.IBV_ATOMIC_HCA,
                          phys_port_cnt=1, max_mr_size=shm.shm_free_bytes(), **LIMITS)

    def query_device_ex(self, ex_input=None):
        """ibv_query_device_ex -> DeviceAttrEx (its orig_attr is query_device()'s)."""
        return DeviceAttrEx(orig_attr=self.query_device(), comp_mask=0, max_dm_size=0,
                            raw_packet_caps=0, device_cap_flags_ex=int(DEVICE_CAP_FLAGS),
                            phys_port_cnt_ex=1, completion_timestamp_mask=0, hca_core_clock=0,
                            max_wq_type_rq=0,
                            odp_caps=ODPCaps(general_caps=0, rc_odp_caps=0, uc_odp_caps=0,
                                             ud_odp_caps=0, xrc_odp_caps=0),
                            tso_caps=TSOCaps(max_tso=0, supported_qpts=0),
                            rss_caps=RSSCaps(supported_qpts=0, max_rwq_indirection_tables=0,
                                             rx_hash_fields_mask=0, rx_hash_function=0,
                                             max_rwq_indirection_table_size=0),
                            packet_pacing_caps=PacketPacingCaps(qp_rate_limit_min=0,
                                                                qp_rate_limit_max=0,
                                                                supported_qpts=0),
                            tm_caps=TMCaps(max_rndv_hdr_size=0, max_num_tags=0, flags=0,
                                           max_ops=0, max_sge=0),
                            cq_mod_caps=CQModerationCaps(max_cq_count=0, max_cq_period=0),
                            pci_atomic_caps=PCIAtomicCaps(fetch_add=0, swap=0, compare_swap=0))

    def _check_port(self, port_num, what):
        checks.uint(port_num, "port_num")
        self.check_usable(what)
        if port_num != PORT:
            raise PyverbsRDMAError(f"{what}: the device has port {PORT} only", 22)     # EINVAL

    def query_port(self, port_num):
        """ibv_query_port -> PortAttr of port 1 (the device's only one)."""
        self._check_port(port_num, f"Failed to query port {port_num}")
        # A down port reads as rxe's over a netdev set down: DOWN, physically DISABLED.
        state, phys_state = (e.IBV_PORT_DOWN, 3) if self._port.down else (e.IBV_PORT_ACTIVE, 5)
        return PortAttr(state=state, max_mtu=e.IBV_MTU_4096, active_mtu=ACTIVE_MTU,
                        gid_tbl_len=GID_TABLE_LEN, port_cap_flags=0, max_msg_sz=1 << 31,
                        bad_pkey_cntr=0, qkey_viol_cntr=0, pkey_tbl_len=1, lid=0, sm_lid=0,
                        lmc=0, max_vl_num=1, sm_sl=0, subnet_timeout=0, init_type_reply=0,
                        active_width=1, active_speed=32, phys_state=phys_state,
                        link_layer=e.IBV_LINK_LAYER_ETHERNET, flags=0, port_cap_flags2=0,
                        active_speed_ex=0)

    def query_port_speed(self, port_num):
        """ibv_query_port_speed: port 1's bandwidth in 100 Mb/s units, what
        query_port's width (1X) and speed (25 Gb/s) make: 250. EINVAL for another port."""
        self._check_port(port_num, f"Failed to query port speed for port {port_num}")
        return 250

    def query_rt_values_ex(self, comp_mask=e.IBV_VALUES_MASK_RAW_CLOCK):
        """ibv_query_rt_values_ex: PyverbsRDMAError (EOPNOTSUPP): shm0 has no
        hardware clock (its hca_core_clock is 0), as Soft-RoCE has none."""
        self.check_usable("Failed to query real time values")
        raise PyverbsRDMAError("Failed to query real time values", errno.EOPNOTSUPP)

    def query_pkey(self, port_num, index):
        """ibv_query_pkey: the default P_Key at index 0."""
        self._check_port(port_num, f"Failed to query pkey {index} of port {port_num}")
        if checks.uint(index, "index") != 0:
            raise PyverbsRDMAError(f"Failed to query pkey {index} of port {port_num}", 22)
        return PKEY_DEFAULT

    def get_pkey_index(self, port_num, pkey):
        self._check_port(port_num, f"Failed to get pkey index of pkey = {pkey} of port {port_num}")
        if checks.uint(pkey, "pkey") != PKEY_DEFAULT:
            raise PyverbsRDMAError(f"Failed to get pkey index of pkey = {pkey} of port {port_num}")
        return 0

    def _gid_entry(self, port_num, index, what, name="index"):
        self._check_port(port_num, what)
        index = checks.uint(index, name)
        if index >= GID_TABLE_LEN:
            raise PyverbsRDMAError(what, 22)
        return GIDS[index] if index < len(GIDS) else None

    def query_gid(self, port_num, index):
        """ibv_query_gid: a GID of the table (zero past its used entries)."""
        entry = self._gid_entry(port_num, index, f"Failed to query gid {index} of port {port_num}")
        return GID.from_raw(entry[0] if entry is not None else bytes(16))

    def query_gid_type(self, port_num, index):
        """ibv_query_gid_type -> ibv_gid_type_sysfs of a used entry."""
        what = f"Failed to query gid type of port {port_num} and gid index {index}"
        entry = self._gid_entry(port_num, index, what)
        if entry is None:
            raise PyverbsRDMAError(what, 61)        # ENODATA, as for an empty sysfs entry
        return entry[1]

    def query_gid_ex(self, port_num, gid_index, flags=0):
        """ibv_query_gid_ex -> GIDEntry of a used entry."""
        what = f"Failed to query gid table of port {port_num} in index {gid_index}"
        gid_index = checks.uint(gid_index, "gid_index")
        if checks.uint(flags, "flags"):
            raise PyverbsRDMAError(what, 22)
        entry = self._gid_entry(port_num, gid_index, what, "gid_index")
        if entry is None:
            raise PyverbsRDMAError(what, 61)
        return self._make_gid_entry(gid_index)

    def query_gid_table(self, max_entries, flags=0):
        """ibv_query_gid_table -> the used GIDEntry-s (EINVAL if they do not fit)."""
        self.check_usable("Failed to query gid tables of the device")
        if checks.uint(flags, "flags") or checks.uint(max_entries, "max_entries", 64) < len(GIDS):
            # pyverbs passes on ibv_query_gid_table's return, a negative errno.
            raise PyverbsRDMAError("Failed to query gid tables of the device", -errno.EINVAL)
        return [self._make_gid_entry(i) for i in range(len(GIDS))]

    @staticmethod
    def _make_gid_entry(index):
        raw, sysfs_type = GIDS[index]
        return GIDEntry(gid=GID.from_raw(raw), gid_subnet_prefix=int.from_bytes(raw[:8], "little"),
                        gid_interface_id=int.from_bytes(raw[8:], "little"), gid_index=index,
                        port_num=PORT, gid_type=_GID_TYPE[sysfs_type], ndev_ifindex=LOOPBACK_IFINDEX)


def _element_object(element):
    """The object an event is about (None for a port or device event)."""
    return element.qp or element.cq or element.srq


def _close_dropped():
    while _dropped:
        _dropped.pop().close()


def _forget_parent_contexts():
    """In a child made by fork(): the parent's Contexts are not ours to move or close
    (hw/shm.py has refreshed the process identity by then)."""
    for ctx in _open_contexts() + _dropped:
        ctx._ours = False
        ctx.hca.forget_inherited()
    for key in list(_contexts):
        _drop_context(key)
    _dropped.clear()


os.register_at_fork(after_in_child=_forget_parent_contexts)


@atexit.register
def _close_all():
    """A process that exits without closing its Contexts gives their QP numbers and
    memory back all the same (as ia_open's IAs are closed at exit)."""
    _close_dropped()
    for ctx in _open_contexts():
        ctx.close()


class AllocDmAttr(UnsupportedAttr):
    """ibv_alloc_dm_attr: (length, log_align_req, comp_mask)."""


class DM(Unsupported):
    """ibv_alloc_dm: PyverbsRDMAError (EOPNOTSUPP); shm0 has no device memory
    (its max_dm_size is 0)."""


class FdArr(PyverbsObject):
    """ibv_fd_arr: `count` file descriptors of `arr`."""

    def __init__(self, arr=(), count=0):
        super().__init__()
        self.arr, self.count = list(arr[:count]), count


def _described(table, value, invalid):
    return f"{table[value]} ({value})" if value in table else invalid


def phys_state_to_str(phys):
    """A port's phys_state as text, e.g. 'Link up (5)'."""
    return _described({1: "Sleep", 2: "Polling", 3: "Disabled", 4: "Port configuration training",
                       5: "Link up", 6: "Link error recovery", 7: "Phy test"},
                      phys, "Invalid physical state")


def width_to_str(width):
    """A port's active_width as text, e.g. '1X (1)'."""
    return _described({1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}, width, "Invalid width")


def speed_to_str(active_speed, active_speed_ex=0):
    """A port's speed (active_speed_ex when set; older pyverbs, v44, took active_speed
    alone) as text, e.g. '25.0 Gbps (32)'."""
    gbps = {0: 0.0, 1: 2.5, 2: 5.0, 4: 5.0, 8: 10.0, 16: 14.0, 32: 25.0, 64: 50.0, 128: 100.0,
            256: 200.0}
    speed = active_speed_ex or active_speed
    return f"{gbps[speed]} Gbps ({speed})" if speed in gbps else "Invalid speed"


def translate_mtu(mtu):
    """An ibv_mtu as text, e.g. '1024 (3)'."""
    return _described({1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}, mtu, f"Invalid MTU ({mtu})")


def translate_link_layer(ll):
    """A link layer as text: 'Unspecified', 'InfiniBand' or 'Ethernet'."""
    names = {0: "Unspecified", 1: "InfiniBand", 2: "Ethernet"}
    return names.get(ll, f"Invalid link layer ({ll})")
