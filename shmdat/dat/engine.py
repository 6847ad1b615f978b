"""One IA's verbs device: its Context, the IA lock, and the engine that turns the
device's three event streams into DAT events (as dapl does, section 1 of
docs/design/dat-over-verbs.md):

  - completions: each DTO EVD's CQ, drained into the EVD's queue (evd.py); on shm0
    every CQ hands its completions over as they are made (shm0dv.cq_sink) into one
    queue, drained once a round, a successful one straight into its EVD when it can
    be (_complete_now);
  - rdma_cm events: handed by the connection manager (cm.py) to the owner of
    their CMID;
  - async events: the Context's, handed to the EP, EVD or SRQ they are about.

Two engines with one interface (the calls DAT's objects make): `Engine` here, for
shm0 with its extension shm0dv, and `NicEngine` (nic_engine.py) for a verbs module
without it, such as rdma-core's pyverbs. Two classes rather than one with tests of
the device inside: shm0's hot path (poll, the drains) stays as it was, and each
engine reads as one device's story.

On shm0 progress is manual: it runs inside DAT's calls (poll), and a waiter
sleeps on the device's doorbell, running it (block). Everything here runs under
the IA lock, which on shm0 is the Context's own lock, so a waiter asleep in the
device lets other threads of the IA in. The IA's one CMEventChannel is drained
without waiting (shm0dv.cm_channel_fd), its events naming their CMID.
"""

import collections
import fcntl
import functools
import itertools
import os
import time

from . import limits, seam
from .constants import DtoOp, EpState
from .private_data import HEADER_BYTES
from .values import AsyncError

_SPIN = float(os.environ.get("SHMDAT_SPIN_US", "100")) / 1e6
_now = time.monotonic
_WATCH_SLICE = 0.005            # seconds: the hot paths' watch() is due at most this often
_RECEIVE = DtoOp.RECEIVE
_DISCONNECT_PENDING = EpState.DISCONNECT_PENDING


class EngineBase:
    """What both engines share: the Context, the IA's DTO bookkeeping (EVDs with a CQ,
    QPs by number, the wr_id slots), the connect timer, and the async events' dispatch
    to the DAT objects they are about. Each engine adds the device's own part: how
    progress runs, how a thread waits, where CM and async events come from, and the
    fills of what shm0dv says and real pyverbs does not (nic_engine.py)."""

    # Whether the device lets DAT cap the receives an SRQ's EP may take (the hard
    # high watermark) and shows a receive being filled (recv_query, srq.query counts).
    hard_watermark_supported = True
    receives_visible = True

    def __init__(self, ia, dev):
        self.ia = ia
        self.dev = dev
        self.ctx = self._open_context()
        self.spin_seconds = _SPIN
        self.dto_evds = []              # EVDs with a CQ: drained every round
        self.eps_by_qp_num = {}         # qp_num -> EP: an async event's element
        # A posted DTO's wr_id is next(wr_ids), and slots[wr_id] what its completion needs:
        # (ep, cookie, flags, op, length). Two plain statements at each post, no call.
        self.wr_ids = itertools.count(1)
        self.slots = {}
        self.send_wr, self.recv_wr = dev.wr.SendWR, dev.wr.RecvWR     # the WR classes posted
        # Completions the device handed over as it made them (shm0dv.cq_sink), as
        # (EVD, WC), not yet in an EVD: a NIC's engine polls its CQs instead.
        self.pending = collections.deque()
        self.next_timer = None          # monotonic deadline of the earliest connect timer
        self.cm = None                  # cm.ConnectionManager: set by the IA
        self.blocked = 0                # threads inside block()
        # The hot paths (a post, a wait that finds events queued) call watch() once this
        # monotonic time has passed: `if monotonic() >= engine.watch_at: engine.watch()`.
        self.watch_at = 0.0

    def _open_context(self):
        return self.dev.device.Context(name=self.dev.name)

    def add_dto_evd(self, evd):
        """A DTO EVD with its CQ made (evd._cq): its completions reach it from now on."""
        self.dto_evds.append(evd)

    def forget_dto_evd(self, evd):
        """A DTO EVD being freed (before its CQ closes)."""
        self.dto_evds.remove(evd)

    def _check_timers(self):
        if self.next_timer is not None:
            now = time.monotonic()
            if now >= self.next_timer:
                self.cm.check_timers(now)

    def _async(self, event_type, element):
        """An async event, to the DAT object its element is (seam.ASYNC_EVENT)."""
        what = seam.ASYNC_EVENT.get(event_type)
        if what is None:
            return                      # nothing for DAT (COMM_EST, PORT_ACTIVE, ...)
        ia = self.ia
        if what.handle == "ep":
            fatal = event_type == self.dev.enums.IBV_EVENT_QP_FATAL
            for ep in self._event_eps(element):
                ep._qp_error(fatal)
        elif what.handle == "evd":
            for evd in self._event_evds(element):
                evd._overflow()
        elif what.handle == "srq":
            for srq in self._event_srqs(element, what.number):
                srq._async(what.number, what.reason)
        else:
            ia._async_evd._post(what.number, AsyncError(ia, what.reason))

    def _event_eps(self, element):
        ep = self.eps_by_qp_num.get(element.qp.qp_num) if element.qp is not None else None
        return () if ep is None else (ep,)

    def _event_evds(self, element):
        return [evd for evd in self.dto_evds if evd._cq is element.cq]

    def _event_srqs(self, element, number):
        return [srq for srq in self.ia._srqs if srq._verbs_srq is element.srq]

    def drain_waiters(self, bound=1.0):
        """With the lock held, let the threads blocked here leave (their ready() is now true).

        Only the IA's close waits here, bounded: it lets go of the lock in short turns,
        since the device's sleep has no condition of ours to wait on."""
        end = time.monotonic() + bound
        while self.blocked and time.monotonic() < end:
            self._wake_all()
            self.lock.release()
            try:
                time.sleep(0.001)
            finally:
                self.lock.acquire()


class Engine(EngineBase):
    """shm0's engine: the device runs inside DAT's calls, shm0dv says the rest."""

    def __init__(self, ia, dev):
        super().__init__(ia, dev)
        self.dv = dev.dv
        # shm0 runs inside calls under its Context's lock; the IA lock is that lock, so a
        # waiter asleep in the device (which releases it) lets the IA's other threads in.
        self.lock = self.dv.context_lock(self.ctx)
        self.events_seen = -1           # events_pending when the CM and async queues were last read
        self.max_private_data_size = limits.MAX_PRIVATE_DATA_SIZE
        fd = self.ctx.async_fd
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        # One CM channel for the IA, drained without waiting: events name their CMID.
        self.cm_channel = dev.cmid.CMEventChannel()
        fd = self.dv.cm_channel_fd(self.cm_channel)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)

    # A round of progress (under the lock).

    def poll(self):
        if self.ia._freed:
            return                      # closed: waiters are leaving
        # Once, answering events_pending: a quiet round is this comparison and the next.
        if self.dv.progress_locked(self.ctx) != self.events_seen:
            self._drain_events()
        if self.pending:
            self._drain_pending()
        if self.next_timer is not None:
            self._check_timers()

    def collect(self):
        """The completions handed over (self.pending), with the events queued before them,
        without running the device: a post that completed at once (an RDMA, a send the
        ring took) is then an EVD's answer with no progress round."""
        if not self.ia._freed:
            if self.dv.events_pending(self.ctx) != self.events_seen:
                self._drain_events()
            self._drain_pending()

    def drain(self, evd):
        """EVD._drain: every completion handed over, into its EVD (all EVDs at once)."""
        if self.pending:
            self._drain_pending()

    def _drain_pending(self):
        """Each completion handed over to its EP's _completed, with its EVD, in the order the
        device made them (as dapl's dapls_evd_copy_cq, for every CQ in one queue)."""
        pending, slots = self.pending, self.slots
        take = pending.popleft
        while pending:
            evd, wc = take()
            ep, cookie, flags, op, length = slots.pop(wc.wr_id)
            (ep or self.eps_by_qp_num[wc.qp_num])._completed(evd, wc, cookie, flags, op, length)

    def _complete_now(self, evd, wr_id, byte_len, qp_num, solicited):
        """shm0dv.cq_sink's `direct`: a successful completion into its EVD as the device
        makes it, unless completions handed over before it wait in self.pending (their
        order holds) or its EP is DISCONNECT_PENDING (the last request's completion
        moves the EP's state, which calls the device: not from inside its progress)."""
        if self.pending:
            return False
        ep, cookie, flags, op, length = slot = self.slots.pop(wr_id)
        if ep is None:
            ep = self.eps_by_qp_num[qp_num]
        if ep._state is _DISCONNECT_PENDING:
            self.slots[wr_id] = slot
            return False
        ep._succeeded(evd, cookie, flags, op, byte_len if op is _RECEIVE else length, solicited)
        return True

    def add_dto_evd(self, evd):
        super().add_dto_evd(evd)
        self.dv.cq_sink(evd._cq, self.pending, evd, functools.partial(self._complete_now, evd))

    def forget_dto_evd(self, evd):
        """What was handed over for it goes, as the events it holds do."""
        super().forget_dto_evd(evd)
        kept = collections.deque()
        for to, wc in self.pending:
            if to is evd:
                self.slots.pop(wc.wr_id, None)
            else:
                kept.append((to, wc))
        self.pending.clear()
        self.pending.extend(kept)

    def progress(self):
        """Run the device once (what completed is then in self.pending, for EVD._drain)."""
        self.dv.progress(self.ctx)

    def _drain_events(self):
        """The CM and async events: called when events_pending moved since the last look."""
        self.events_seen = self.dv.events_pending(self.ctx)
        self._drain_async()             # first: a QP error is told from a disconnect (ep.py)
        self.cm.drain()

    def watch(self):
        """Notice dead peers on paths that run no progress (a post, a query, a wait that
        finds events queued): the device's look at its peers, due once a LOOK_SLICE
        (one clock read otherwise), and what it found (a dead peer's QP_FATAL). The hot
        paths call it once a _WATCH_SLICE (watch_at): a dead peer is still seen within
        the device's slice and this one."""
        self.watch_at = time.monotonic() + _WATCH_SLICE
        if self.dv.watch(self.ctx) != self.events_seen:     # (it answers events_pending)
            self._drain_events()

    def _drain_async(self):
        ctx = self.ctx
        err = self.dev.pyverbs_error.PyverbsRDMAError
        while True:
            try:
                event = ctx.get_async_event()
            except err:
                return                  # EAGAIN: none queued
            event_type, element = event.event_type, event.element
            event.ack()
            self._async(event_type, element)

    # Waiting.

    def block(self, ready, deadline):
        """Run progress and sleep on the device until ready() or the monotonic deadline
        (None: none); ready()'s last value. InterruptedError when a signal interrupts."""
        self.blocked += 1
        try:
            while not self.dv.block(self.ctx, lambda: self._round(ready), deadline):
                if deadline is not None and time.monotonic() >= deadline:
                    return False        # else a wake() for another waiter: sleep again
            return True
        finally:
            self.blocked -= 1

    def _round(self, ready):
        self.poll()
        return ready()

    def wake(self):
        """Blocked threads of this IA look at their ready() again (lock held)."""
        if self.blocked:
            self.dv.wake(self.ctx)

    def _wake_all(self):
        self.dv.wake(self.ctx)

    # The rdma_cm events (cm.py's ConnectionManager asks).

    def new_cmid(self, listening):
        """A CMID on the IA's channel, with room for DAT's private data and its header
        (more than rdma_cm's RoCE limits: shm0 allows it)."""
        cmid = self.dev.cmid.CMID(self.cm_channel)
        self.dv.cm_set_private_data_limit(cmid, self.max_private_data_size + HEADER_BYTES)
        return cmid

    def next_cm_event(self):
        """The channel's next event (its `id` names its CMID), or None."""
        try:
            return self.dev.cmid.CMEvent(self.cm_channel)
        except self.dev.pyverbs_error.PyverbsRDMAError:
            return None                 # EAGAIN: none queued (the channel's fd is non-blocking)

    def request_cmid(self, event, listen_cmid):
        """The CMID of a CONNECT_REQUEST event (made while the event is held)."""
        return self.dev.cmid.CMID(creator=event, listen_id=listen_cmid)

    def close_cmid(self, cmid):
        cmid.close()

    # What shm0dv says (nic_engine.py has the fills of a device without it).

    def new_cq(self, cqe):
        """(CQ, None): a shm0 waiter sleeps on the device, not on a completion channel."""
        return self.dev.cq.CQ(self.ctx, cqe), None

    def wc_solicited(self, wc):
        return self.dv.wc_solicited(wc)

    def receives_filling(self, qp):
        """Receives the QP holds for messages that have begun to arrive (from its SRQ)."""
        return self.dv.query_rq(qp).filling

    def set_recv_credits(self, qp, n):
        self.dv.set_recv_credits(qp, n)

    def consumer_memory_remote_ok(self):
        """(bool, why): whether consumer memory registered with remote access works here."""
        return self.dv.consumer_memory_remote_ok(self.ctx)

    def close(self):
        self.cm_channel.close()
        self.ctx.close()
