"""A stand-in for rdma-core's pyverbs on a NIC, built on shmdat.verbs: the proof that
DAT runs on a verbs module without shm0dv (docs/design/dat-over-verbs.md, step 8).

With SHMDAT_DAT_VERBS=tests.nic_verbs the seam loads this module for shm0 (spawned
peers inherit it); with SHMDAT_PYVERBS=tests.nic_pyverbs it is "rdma-core's pyverbs"
and the device is listed as ofa-v2-shm0-1. Either way Device.dv is None and DAT
takes its NIC engine (shmdat/dat/nic_engine.py). What differs from shmdat.verbs is
what real pyverbs lacks:

  - no shm0dv;
  - CMEvent(channel) blocks unless the channel's fd is non-blocking (then EAGAIN when
    no event waits), and has neither `id`, `listen_id` nor `status`;
  - Context.get_async_event() blocks unless the async fd is non-blocking, and an
    AsyncEvent has no `element`;
  - neither fd is an attribute: DAT finds rdma-core's in /proc/self/fd by the kernel's
    names (shmdat/dat/event_fds.py), which shm0's fds do not have, so this stand-in
    says where they are with `event_fd(obj)`, the hook event_fds.py takes instead;

and the device runs by itself, as a NIC does: each Context has a daemon thread
asleep on the device's doorbell (shm0dv.block), which runs its progress whenever a
peer rings. That thread is this stand-in's "NIC"; DAT never runs the device. As on
a NIC, a peer that goes away is a DISCONNECTED (its kernel sends the DREQ; shm0's
status -ECONNRESET is not seen), never a QP_FATAL after its DISCONNECTED
(get_async_event drops shm0's). Where shm0 is fragile under threads it never had
(a channel or the CM agent's device closed while another thread takes an event),
the stand-in keeps them apart (CMEventChannel.taking, _AgentKeeper).
Everything else is shmdat.verbs' own (subclasses, so its isinstance checks hold).
"""

import errno
import os
import select
import threading
import time
import types
import weakref

from shmdat.verbs import (cmid as _cmid, cq, device as _device, libibverbs_enums,
                          librdmacm_enums, mr, pd, pyverbs_error, qp, srq, wr)
from shmdat.verbs.providers.shm0 import shm0dv as _shm0dv

_CM_SLICE = 0.05                # seconds between two looks at whether a CM channel closed
_PEER_GONE_BOUND = 0.25         # seconds a QP_FATAL waits for its connection's DISCONNECTED


class AsyncEvent:
    """pyverbs' AsyncEvent as DAT may use it on a NIC: the type, ack(); no element."""
    __slots__ = ("event_type", "_event")

    def __init__(self, event):
        self.event_type, self._event = event.event_type, event

    def ack(self):
        self._event.ack()


class Context(_device.Context):
    """shm0's Context, run by a thread of its own (the NIC), without async_fd."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _cm_agent_keeper.hold()
        threading.Thread(target=self._run_device, daemon=True, name="nic-stand-in").start()

    def close(self):
        was_open = not self._closed
        super().close()
        if was_open:
            _cm_agent_keeper.release()

    def _run_device(self):
        try:
            while True:
                _shm0dv.block(self, _never, None)
        except pyverbs_error.PyverbsRDMAError:
            return              # the Context closed (EBADF)

    @property
    def async_fd(self):
        raise AttributeError("real pyverbs' Context has no async_fd")

    def get_async_event(self):
        """The next async event, but not the QP_FATAL shm0 raises when the peer's QP
        leaves after its DREQ (a NIC's QP does not fail when its peer's does)."""
        while True:
            event = super().get_async_event()
            if event.event_type != libibverbs_enums.IBV_EVENT_QP_FATAL \
                    or not self._peer_disconnected(event.element.qp):
                return AsyncEvent(event)
            event.ack()

    def _peer_disconnected(self, qp):
        """Whether the connection of `qp` ended by a DISCONNECTED: the peer's DREQ (sent
        before its QP left, so already in the CM agent's inbox), or shm0's for a dead
        peer, which comes at the agent's next look at its peers (within its liveness
        slice). The device runs meanwhile (its rounds move the agent's Context too)."""
        cmid = _cmids_by_qp_num.get(qp.qp_num)
        if cmid is None:
            return False
        end = time.monotonic() + _PEER_GONE_BOUND
        while not self._gone(cmid) and time.monotonic() < end:
            _shm0dv.block(self, lambda: self._gone(cmid), end)
        return self._gone(cmid)

    @staticmethod
    def _gone(cmid):
        return cmid.state in (_cmid.DISCONNECTED, _cmid.DONE)


def _never():
    return False


class _AgentKeeper:
    """A CMID of no use, open while a Context of this stand-in is: shm0 closes its CM
    agent's device with the process's last CMID, under DAT's threads that may be
    taking an event (a NIC's rdma_cm has no device of its own to close)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.contexts = 0
        self.cmid = self.channel = None

    def hold(self):
        with self.lock:
            self.contexts += 1
            if self.cmid is None:
                self.channel = _cmid.CMEventChannel()
                self.cmid = _cmid.CMID(self.channel)

    def release(self):
        with self.lock:
            self.contexts -= 1
            if self.contexts == 0 and self.cmid is not None:
                self.cmid.close()
                self.channel.close()
                self.cmid = self.channel = None

    def forget(self):
        """In a forked child: the parent's CMID is not ours."""
        self.__init__()


_cm_agent_keeper = _AgentKeeper()
os.register_at_fork(after_in_child=_cm_agent_keeper.forget)


class CMEvent:
    """pyverbs' CMEvent: the channel's next event, waited for unless the channel's fd is
    non-blocking (then PyverbsRDMAError EAGAIN if none waits, as rdma_get_cm_event on a
    non-blocking channel); event_type, private_data, ack_cm_event(); no id, listen_id
    or status.

    A blocking one waits in poll() on the channel's fd, then takes the event: the CM
    agent's device is moved by the Contexts' NIC threads (a shm0 round moves the
    process's other Contexts). The fd is looked up again each _CM_SLICE: that is how a
    closed channel is noticed (EBADF)."""
    __slots__ = ("event_type", "private_data", "_event")

    def __init__(self, channel):
        while True:
            fd = _shm0dv.cm_channel_fd(channel)        # EBADF once the channel is closed
            if os.get_blocking(fd):
                poller = select.poll()      # (not select(): fds past 1024 with many CMIDs)
                poller.register(fd, select.POLLIN)
                if not poller.poll(_CM_SLICE * 1000):
                    continue
            with channel.taking:            # (shm0 reads a channel closed meanwhile badly)
                try:
                    self._event = _take_event(channel)
                    break
                except pyverbs_error.PyverbsRDMAError as err:
                    if err.error_code != errno.EAGAIN or not os.get_blocking(fd):
                        raise
        self.event_type, self.private_data = self._event.event_type, self._event.private_data

    def ack_cm_event(self):
        self._event.ack_cm_event()

    def event_str(self):
        return self._event.event_str()


def _take_event(channel):
    """shm0's CMEvent, taken without waiting (EAGAIN if none), the fd's mode kept."""
    fd = _shm0dv.cm_channel_fd(channel)
    blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    try:
        return _cmid.CMEvent(channel)
    finally:
        os.set_blocking(fd, blocking)


class CMEventChannel(_cmid.CMEventChannel):
    """shm0's channel, closed only while no CMEvent is taking an event from it."""

    def __init__(self):
        super().__init__()
        self.taking = threading.Lock()

    def close(self):
        with self.taking:
            super().close()


class CMID(_cmid.CMID):
    """shm0's CMID, made from this stand-in's CMEvent as pyverbs makes one from its C
    event; it remembers which QP its connect or accept joined (for get_async_event)."""

    def __init__(self, creator=None, *args, **kwargs):
        if isinstance(creator, CMEvent):
            creator = creator._event
        super().__init__(creator, *args, **kwargs)

    def connect(self, param=None):
        _cmids_by_qp_num[param.qp_num] = self
        return super().connect(param)

    def accept(self, param=None):
        _cmids_by_qp_num[param.qp_num] = self
        return super().accept(param)


_cmids_by_qp_num = weakref.WeakValueDictionary()    # qp_num -> the CMID that connected it


def _module(base, **replaced):
    """A copy of the verbs module `base` with some names replaced."""
    module = types.ModuleType(base.__name__)
    module.__dict__.update({k: v for k, v in vars(base).items() if not k.startswith("__")})
    module.__dict__.update(replaced)
    return module


def event_fd(obj):
    """Where the fds rdma-core's pyverbs keeps to itself are (DAT finds those in
    /proc/self/fd): a CMEventChannel's, a Context's async events'."""
    if isinstance(obj, _device.Context):
        return _device.Context.async_fd.fget(obj)
    return _shm0dv.cm_channel_fd(obj)


# The attributes the seam reads from a stand-in (seam.MODULES, shm0dv and event_fd).
device = _module(_device, Context=Context, AsyncEvent=AsyncEvent)
cmid = _module(_cmid, CMEventChannel=CMEventChannel, CMEvent=CMEvent, CMID=CMID)
shm0dv = None
__all__ = ["device", "pd", "mr", "cq", "qp", "srq", "wr", "cmid", "libibverbs_enums",
           "librdmacm_enums", "pyverbs_error", "shm0dv", "event_fd"]
