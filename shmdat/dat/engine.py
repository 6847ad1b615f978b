"""One IA's verbs device: its Context, the IA lock, and the engine that turns the
device's three event streams into DAT events (as dapl does, section 1 of
docs/design/dat-over-verbs.md):

  - completions: each DTO EVD's CQ, drained into the EVD's queue (evd.py);
  - rdma_cm events: the IA's CMEventChannel, each handed by the connection
    manager (cm.py) to the owner of its CMID;
  - async events: the Context's, handed to the EP, EVD or SRQ they are about.

Progress is manual on shm0: it runs inside DAT's calls (poll), and a waiter
sleeps on the device's doorbell, running it (block). Everything here runs under
the IA lock, which on shm0 is the Context's own lock, so a waiter asleep in the
device lets other threads of the IA in.
"""

import fcntl
import itertools
import os
import time

from . import seam
from .values import AsyncError

_SPIN = float(os.environ.get("SHMDAT_SPIN_US", "100")) / 1e6


class Engine:
    def __init__(self, ia, dev):
        self.ia = ia
        self.dev = dev
        self.ctx = dev.device.Context(name=dev.name)
        self.dv = dev.dv
        # shm0 runs inside calls under its Context's lock; the IA lock is that lock, so a
        # waiter asleep in the device (which releases it) lets the IA's other threads in.
        self.lock = self.dv.context_lock(self.ctx)
        self.events_seen = -1           # events_pending when the CM and async queues were last read
        self.completions_seen = -1      # completions_made when every DTO EVD's CQ was last drained
        self.spin_seconds = _SPIN
        self.dto_evds = []              # EVDs with a CQ: drained every round
        self.eps_by_qp_num = {}         # qp_num -> EP: an async event's element
        # A posted DTO's wr_id is next(wr_ids), and slots[wr_id] what its completion needs:
        # (ep, cookie, flags, op, length). Two plain statements at each post, no call.
        self.wr_ids = itertools.count(1)
        self.slots = {}
        self.next_timer = None          # monotonic deadline of the earliest connect timer
        self.cm = None                  # cm.ConnectionManager: set by the IA
        self.blocked = 0                # threads inside block()
        fd = self.ctx.async_fd
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)

    # A round of progress (under the lock).

    def poll(self):
        if self.ia._freed:
            return                      # closed: waiters are leaving
        dv, ctx = self.dv, self.ctx
        dv.progress(ctx)                # once: then each CQ's completions, the device not run again
        if dv.events_pending(ctx) != self.events_seen:     # a quiet round: this comparison only
            self._drain_events()
        made = dv.completions_made(ctx)
        if made != self.completions_seen:           # else no CQ holds a completion not yet drained
            for evd in self.dto_evds:
                evd._drain()
            self.completions_seen = made            # (last: a drain that raised is tried again)
        if self.next_timer is not None:
            now = time.monotonic()
            if now >= self.next_timer:
                self.cm.check_timers(now)

    def progress(self):
        """Run the device once (what arrived is then in the CQs, for EVD._drain)."""
        self.dv.progress(self.ctx)

    def _drain_events(self):
        """The CM and async events: called when events_pending moved since the last look."""
        self.events_seen = self.dv.events_pending(self.ctx)
        self._drain_async()             # first: a QP error is told from a disconnect (ep.py)
        self.cm.drain()

    def watch(self):
        """Notice dead peers on paths that run no progress (a post, a query, a wait that
        finds events queued): the device's look at its peers, due once a LIVENESS_SLICE
        (one clock read otherwise), and what it found (a dead peer's QP_FATAL)."""
        dv, ctx = self.dv, self.ctx
        dv.watch(ctx)
        if dv.events_pending(ctx) != self.events_seen:
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

    def _async(self, event_type, element):
        """An async event, to the DAT object its element is (seam.ASYNC_EVENT)."""
        what = seam.ASYNC_EVENT.get(event_type)
        if what is None:
            return                      # nothing for DAT (COMM_EST, PORT_ACTIVE, ...)
        ia = self.ia
        if what.handle == "ep":
            ep = self.eps_by_qp_num.get(element.qp.qp_num) if element.qp is not None else None
            if ep is not None:
                ep._qp_error(event_type == self.dev.enums.IBV_EVENT_QP_FATAL)
        elif what.handle == "evd":
            for evd in self.dto_evds:
                if evd._cq is element.cq:
                    evd._overflow()
        elif what.handle == "srq":
            for srq in ia._srqs:
                if srq._verbs_srq is element.srq:
                    srq._async(what.number, what.reason)
        else:
            ia._async_evd._post(what.number, AsyncError(ia, what.reason))

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

    def drain_waiters(self, bound=1.0):
        """With the lock held, let the threads blocked here leave (their ready() is now true).

        Only the IA's close waits here, bounded: it lets go of the lock in short turns,
        since the device's sleep has no condition of ours to wait on."""
        end = time.monotonic() + bound
        while self.blocked and time.monotonic() < end:
            self.dv.wake(self.ctx)
            self.lock.release()
            try:
                time.sleep(0.001)
            finally:
                self.lock.acquire()

    def close(self):
        self.ctx.close()
