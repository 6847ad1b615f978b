"""A stand-in for rdma-core's pyverbs on a NIC, built on shmdat.verbs: the proof that
DAT runs on a verbs module without shm0dv (docs/design/dat-over-verbs.md, step 8).

With SHMDAT_DAT_VERBS=tests.nic_verbs the seam loads this module for shm0 (spawned
peers inherit it); with SHMDAT_PYVERBS=tests.nic_pyverbs it is "rdma-core's pyverbs"
and the device is listed as ofa-v2-shm0-1. Either way Device.dv is None and DAT
takes its NIC engine (shmdat/dat/nic_engine.py). What differs from shmdat.verbs is
what real pyverbs lacks:

  - no shm0dv;
  - CMEvent(channel) blocks (no channel fd to make it non-blocking) and has
    neither `id`, `listen_id` nor `status`;
  - Context.get_async_event() blocks, there is no async_fd, and an AsyncEvent has
    no `element`;

and the device runs by itself, as a NIC does: each Context has a daemon thread
asleep on the device's doorbell (shm0dv.block), which runs its progress whenever a
peer rings. That thread is this stand-in's "NIC"; DAT never runs the device. As on
a NIC, a peer that goes away is a DISCONNECTED (its kernel sends the DREQ; shm0's
status -ECONNRESET is not seen), never a QP_FATAL after its DREQ (get_async_event
drops shm0's).
Everything else is shmdat.verbs' own (subclasses, so its isinstance checks hold).
"""

import errno
import os
import select
import threading
import types
import weakref

from shmdat.verbs import (cmid as _cmid, cq, device as _device, libibverbs_enums,
                          librdmacm_enums, mr, pd, pyverbs_error, qp, srq, wr)
from shmdat.verbs.providers.shm0 import shm0dv as _shm0dv

_CM_SLICE = 0.05                # seconds between two looks at whether a CM channel closed


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
        threading.Thread(target=self._run_device, daemon=True, name="nic-stand-in").start()

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
        """Whether the connection of `qp` ended by the peer's DREQ. The peer sends it
        before its QP leaves, so it is in the CM agent's inbox once our QP has noticed:
        a round of this device (which moves the process's other Contexts, the agent's
        too) takes it in first."""
        cmid = _cmids_by_qp_num.get(qp.qp_num)
        if cmid is None:
            return False
        _shm0dv.progress(self)
        return cmid.state in (_cmid.DISCONNECTED, _cmid.DONE)


def _never():
    return False


class CMEvent:
    """pyverbs' CMEvent: blocks for the channel's next event; event_type,
    private_data, ack_cm_event(); no id, listen_id or status.

    It waits in select() on the channel's fd and takes the event only once one is
    queued: the CM agent's device is moved by the Contexts' NIC threads (a shm0
    round moves the process's other Contexts), never by this thread, since shm0
    closes that device with the process's last CMID, which DAT closes before the
    channel (rdma_cm's order). The fd is looked up again each _CM_SLICE: that is how
    a closed channel is noticed (EBADF)."""
    __slots__ = ("event_type", "private_data", "_event")

    def __init__(self, channel):
        while True:
            fd = _shm0dv.cm_channel_fd(channel)        # EBADF once the channel is closed
            try:
                readable = select.select([fd], [], [], _CM_SLICE)[0]
            except OSError:
                continue                # closed meanwhile
            if readable:
                try:
                    os.set_blocking(fd, False)
                    self._event = _cmid.CMEvent(channel)
                    break
                except pyverbs_error.PyverbsRDMAError as err:
                    if err.error_code != errno.EAGAIN:
                        raise           # EBADF: the channel closed
                except OSError:
                    continue            # closed meanwhile (cm_channel_fd says EBADF next)
        self.event_type, self.private_data = self._event.event_type, self._event.private_data

    def ack_cm_event(self):
        self._event.ack_cm_event()

    def event_str(self):
        return self._event.event_str()


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


# The attributes the seam reads from a stand-in (seam.MODULES and shm0dv).
device = _module(_device, Context=Context, AsyncEvent=AsyncEvent)
cmid = _module(_cmid, CMEvent=CMEvent, CMID=CMID)
shm0dv = None
__all__ = ["device", "pd", "mr", "cq", "qp", "srq", "wr", "cmid", "libibverbs_enums",
           "librdmacm_enums", "pyverbs_error", "shm0dv"]
