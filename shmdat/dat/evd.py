"""Event Dispatchers (dat_evd_*).

An EVD is an in-process queue of events. Progress (see progress.py) fills it;
wait and dequeue empty it. Its states, in the bands DAT gives them
(waitable/unwaitable, enabled/disabled, whether a thread owns it by waiting,
overflowed), are evd_state.py's tables: the calls check and move them there.
"""

import collections
import time

from . import aio, evd_state, seam
from .args import check_int, check_qlen, check_timeout
from .cno import CNO
from .constants import (AsyncReason, CompletionFlags, DtoOp, EventNumber, EvdFlags, TIMEOUT_INFINITE,
                        WATERMARK_INFINITE)
from .errors import (Abort, InterruptedCall, InvalidState, QueueEmpty,
                     QueueFull, TimeoutExpired, bad_arg)
from .handle import Handle, check_handle
from .values import AsyncError, DtoCompletion, Event, EvdParam, SoftwareEvent

_now = time.monotonic
_CLOCK_EVERY = 4                # wait's spin reads the clock after its first round, then every 4th

_NOTIFY_CONTROL = CompletionFlags.UNSIGNALLED | CompletionFlags.SOLICITED_WAIT
_RECEIVE = DtoOp.RECEIVE
_DTO_EVENT = EventNumber.DTO_COMPLETION_EVENT
W = evd_state.EvdEvent
_WAITER, _UNWAITABLE, _DISABLED, _OVERFLOWED = (evd_state.WAITER, evd_state.UNWAITABLE,
                                               evd_state.DISABLED, evd_state.OVERFLOWED)
# The bands wait and dequeue refuse: one test each.
_WAIT_REFUSED, _DEQUEUE_REFUSED, _WAITING_REFUSED = (evd_state.REFUSING[call]
                                                     for call in ("wait", "dequeue", "waiting"))
# An Event made by tuple.__new__: the NamedTuple's own __new__ is a Python call, once per
# completion on the hot path.
_tuple_new = tuple.__new__


def unreaped_receives(evds, match):
    """How many receive completions in `evds` (not yet dequeued) satisfy match(ep)."""
    n = 0
    for evd in evds:
        if evd is None or evd._freed:
            continue
        for e in evd._q:
            d = e.data
            if e.number == _DTO_EVENT and type(d) is DtoCompletion and d.operation == _RECEIVE \
                    and match(d.ep):
                n += 1
    return n


class EVD(Handle):
    kind = "evd"

    def __init__(self, ia, qlen, flags, cno):
        super().__init__(ia)
        self._q = collections.deque()
        self._qlen = qlen
        self._flags = flags
        self._cno = cno
        evd_state.start(self)           # _bands: waiter, unwaitable, disabled, overflowed
        self._notify_seq = 0            # counts what wakes a waiter: notification events, and
                                        # the EVD freed or made unwaitable (wait's spin tests it)
        self._streams = []              # EPs, PSPs and RSPs whose events come here
        self._notifier = None           # a private CNO for wait_async, made on first use
        self._engine = ia._engine
        self._cq = None                 # a DTO EVD's completions come through a verbs CQ
        self._channel = None            # ... and its completion channel, where the device has one
        if flags & EvdFlags.DTO:
            try:        # as large as the device allows: a CQ must never overrun (DAT drops instead)
                self._cq, self._channel = ia._engine.new_cq(ia._device_attr.max_cqe)
            except ia._dev.pyverbs_error.PyverbsError as err:
                raise seam.dat_error(err, "CQ") from None
            ia._engine.add_dto_evd(self)

    @property
    def _waiter(self):
        """Whether a thread owns the EVD by waiting: its WAITER band, or None."""
        return self._bands & _WAITER or None

    def _drain(self):
        """Move the CQ's completions (none without a CQ) into the queue, as dapl's
        dapls_evd_copy_cq: what has completed counts as queued. The device is not run
        here (a message still in the ring has not completed, and does not)."""
        if self._cq is not None:
            self._engine.drain(self)

    # Producer side (called by progress, with the IA lock held).

    def _post(self, number, data, notify=True):
        """Queue one event; if the EVD is full, an overflow (reported on the async EVD) instead."""
        q = self._q
        if len(q) >= self._qlen:
            self._overflow()
            return
        q.append(_tuple_new(Event, (number, self, data)))
        if notify:
            self._notify_seq += 1
            if self._cno is not None or self._notifier is not None:
                self._trigger()
            if self._engine.blocked:        # (wake's own test, without its call)
                self._engine.wake()

    def _trigger(self):
        """A notification event: only an enabled EVD with no waiter triggers its CNO."""
        bands = self._bands
        if not bands & _WAITER:
            if self._cno is not None and not bands & _DISABLED:
                self._cno._trigger(self)
            if self._notifier is not None:
                self._notifier._trigger(self)

    def _overflow(self):
        if not self._bands & _OVERFLOWED:       # once, until there is room again
            evd_state.fire(self, W.OVERFLOW)

    def _post_overflow(self):
        async_evd = self._ia._async_evd
        if async_evd is not None and async_evd is not self:
            async_evd._post(EventNumber.ASYNC_ERROR_EVD_OVERFLOW,
                            AsyncError(self, AsyncReason.EVD_OVERFLOW_ERROR))

    def _notification_controlled(self):
        """True if a stream feeding this EVD uses UNSIGNALLED or SOLICITED_WAIT notification."""
        for s in self._streams:
            if s._recv_evd is self and s._attr.recv_completion_flags & _NOTIFY_CONTROL:
                return True
            if s._request_evd is self and s._attr.request_completion_flags & CompletionFlags.UNSIGNALLED:
                return True
        return False

    def _take(self):
        q = self._q
        event = q.popleft()
        if self._bands & _OVERFLOWED and len(q) < self._qlen:
            evd_state.fire(self, W.ROOM)
        data = event.data
        if data.__class__ is DtoCompletion and data.operation is _RECEIVE \
                and data.ep._hard_hw != WATERMARK_INFINITE:
            data.ep._limit_takes()      # its receive buffers held went down: the hard mark's count
        return event

    # dat_evd_wait

    def wait(self, timeout=TIMEOUT_INFINITE, threshold=1):
        """dat_evd_wait: remove the first event, waiting up to `timeout` microseconds
        for `threshold` events. Returns (event, nmore).

        Raises InvalidParameter (timeout, or threshold < 1 or > qlen), InvalidState
        (another waiter, unwaitable, or threshold > 1 on a notification-controlled
        EVD), TimeoutExpired and InterruptedCall (both with .nmore), Abort (EVD
        freed or IA closed meanwhile), InvalidHandle.
        """
        prog = self._engine
        lock = prog.lock
        lock.acquire()                      # (`with` costs twice as much)
        try:
            if self._freed:
                self._check()
            # The common case (a plain int timeout, threshold 1, no band refusing) is three
            # tests; the full checks, in DAT's order of the arguments, name the error.
            if timeout.__class__ is not int or not 0 <= timeout <= TIMEOUT_INFINITE:
                check_timeout(timeout, 2)
            if threshold.__class__ is not int or threshold != 1:
                self._check_threshold(threshold)
            if self._bands & _WAIT_REFUSED:
                evd_state.check_call(self, "wait")
            self._drain()
            if len(self._q) >= threshold:       # already queued: returned whatever their notification
                if _now() >= prog.watch_at:
                    prog.watch()                # no progress round on this path
                event = self._take()
                return event, len(self._q)
            seconds = check_timeout(timeout, 2)
            # From here on only notification events wake the waiter (UNSIGNALLED and
            # unsolicited completions queue silently).
            seq = self._notify_seq
            prog.poll()
            if self._notify_seq != seq and len(self._q) >= threshold:
                event = self._take()
                return event, len(self._q)
            if seconds == 0:
                raise TimeoutExpired("no event arrived within the timeout", nmore=len(self._q))
            evd_state.fire(self, W.WAIT)
        finally:
            lock.release()

        def ready():
            return (self._freed or self._bands & _UNWAITABLE or self._ia._freed
                    or (self._notify_seq != seq and len(self._q) >= threshold))

        try:
            now = time.monotonic()
            deadline = None if seconds is None else now + seconds
            spin_end = now + prog.spin_seconds
            if deadline is not None:
                spin_end = min(spin_end, deadline)
            rounds = 0
            while True:
                lock.acquire()
                try:
                    prog.poll()
                    if self._notify_seq != seq and ready():     # (a round that woke nothing: one test)
                        return self._result(True)
                finally:
                    lock.release()
                rounds += 1
                if rounds % _CLOCK_EVERY == 1 and time.monotonic() >= spin_end:
                    break                   # (the clock read every few rounds: it costs one)
            with prog.lock:
                try:
                    ok = prog.block(ready, deadline)
                except InterruptedError:
                    raise InterruptedCall("a signal interrupted the wait",
                                          nmore=len(self._q)) from None
                return self._result(ok)
        finally:
            evd_state.fire(self, W.WAIT_DONE)

    def _check_threshold(self, threshold):
        """wait's threshold: an int from 1 to qlen, and 1 on an EVD whose notification a
        stream controls."""
        check_int(threshold, 3, "threshold", 1, self._qlen,
                  f"an int from 1 to the EVD's qlen ({self._qlen})")
        if threshold > 1 and self._notification_controlled():
            raise InvalidState("threshold must be 1 on an EVD fed by a stream with "
                               "UNSIGNALLED or SOLICITED_WAIT completions",
                               subtype="INVALID_STATE_EVD_CONFIG_THRESHOLD")

    async def wait_async(self, timeout=TIMEOUT_INFINITE, threshold=1):
        """dat_evd_wait for asyncio: `event, nmore = await evd.wait_async(timeout)`.

        The same rules and errors as wait(); the event loop runs while nothing
        has arrived. Built on a private CNO's file descriptor (see aio.py).
        """
        with self._ia._engine.lock:
            self._check()
            check_timeout(timeout, 2)
            if self._notifier is None:
                self._notifier = CNO(self._ia)
        return await aio.wait(lambda: self.wait(0, threshold), self._notifier, timeout, clear=True)

    def _result(self, ok):
        if self._freed or self._ia._freed:
            raise Abort("the EVD was freed or its IA closed during the wait")
        if self._bands & _WAITING_REFUSED:
            evd_state.check_call(self, "waiting")
        if not ok:
            raise TimeoutExpired("no event arrived within the timeout", nmore=len(self._q))
        event = self._take()
        return event, len(self._q)

    # The rest of dat_evd_*

    def dequeue(self):
        """dat_evd_dequeue: remove the first event without waiting.

        Raises QueueEmpty, InvalidState (a thread is waiting on it), InvalidHandle.
        """
        engine = self._engine
        lock = engine.lock
        lock.acquire()                      # (`with` costs twice as much)
        try:
            if self._freed:
                self._check()
            if self._bands & _DEQUEUE_REFUSED:
                evd_state.check_call(self, "dequeue")
            if not self._q and engine.pending:
                engine.collect()            # (a post may have completed at once)
            if self._q:
                if _now() >= engine.watch_at:
                    engine.watch()          # no progress round: what is queued is the answer
            else:
                engine.poll()               # (it drains every CQ that moved, this one too)
                if not self._q:
                    raise QueueEmpty("the EVD holds no event")
            return self._take()
        finally:
            lock.release()

    def post_se(self, pointer):
        """dat_evd_post_se: queue a SOFTWARE_EVENT carrying `pointer` (any object).

        Raises InvalidParameter (EVD not created with EvdFlags.SOFTWARE),
        QueueFull (no room: nothing is queued and no overflow is raised), InvalidHandle.
        """
        with self._ia._engine.lock:
            self._check()
            if not self._flags & EvdFlags.SOFTWARE:
                raise bad_arg(2, "post_se needs an EVD created with EvdFlags.SOFTWARE")
            if len(self._q) >= self._qlen:
                raise QueueFull(f"the EVD is full ({self._qlen} events)")
            self._post(EventNumber.SOFTWARE_EVENT, SoftwareEvent(pointer))

    def resize(self, qlen):
        """dat_evd_resize. Raises InvalidParameter (qlen out of range), InvalidState
        (fewer than the events queued now, or a thread is waiting), InvalidHandle."""
        with self._ia._engine.lock:
            self._check()
            check_qlen(qlen, 2)
            evd_state.check_call(self, "resize")
            if qlen < len(self._q):
                raise InvalidState(f"the EVD holds {len(self._q)} events; it cannot shrink to {qlen}")
            self._qlen = qlen
            if self._bands & _OVERFLOWED and len(self._q) < qlen:
                evd_state.fire(self, W.ROOM)

    def query(self):
        """dat_evd_query -> EvdParam."""
        with self._ia._engine.lock:
            self._check()
            self._ia._engine.watch()        # evd_count then includes a dead peer's flushes
            self._drain()
            return EvdParam(ia=self._ia, evd_qlen=self._qlen, evd_state=evd_state.query_state(self),
                            evd_flags=self._flags, cno=self._cno, evd_count=len(self._q),
                            overflowed=bool(self._bands & _OVERFLOWED))

    def set_unwaitable(self):
        """dat_evd_set_unwaitable: waits now raise InvalidState, and a blocked waiter wakes with it."""
        with self._ia._engine.lock:
            self._check()
            evd_state.fire(self, W.SET_UNWAITABLE)

    def clear_unwaitable(self):
        """dat_evd_clear_unwaitable."""
        with self._ia._engine.lock:
            self._check()
            evd_state.fire(self, W.CLEAR_UNWAITABLE)

    def enable(self):
        """dat_evd_enable: events trigger the CNO again."""
        with self._ia._engine.lock:
            self._check()
            evd_state.fire(self, W.ENABLE)

    def disable(self):
        """dat_evd_disable: events still queue but no longer trigger the CNO."""
        with self._ia._engine.lock:
            self._check()
            evd_state.fire(self, W.DISABLE)

    def modify_cno(self, cno):
        """dat_evd_modify_cno: attach to another CNO, or to none. Raises InvalidHandle."""
        with self._ia._engine.lock:
            self._check()
            self._cno = check_handle(cno, CNO, "cno", "INVALID_HANDLE_CNO", allow_none=True, ia=self._ia)

    def free(self):
        """dat_evd_free. Raises InvalidState while an EP, PSP or RSP still feeds it,
        or for the IA's async EVD; InvalidHandle."""
        ia = self._ia
        with ia._engine.lock:
            self._check()
            if self is ia._async_evd:
                raise InvalidState("the async EVD lives as long as its IA",
                                   subtype="INVALID_STATE_EVD_ASYNC")
            if self._streams:
                raise InvalidState(f"the EVD is in use by {len(self._streams)} EP/PSP/RSP "
                                   "stream(s); free those first", subtype="INVALID_STATE_EVD_IN_USE")
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        if self._notifier is not None:
            self._notifier._destroy()
        if self._cq is not None:
            self._ia._engine.forget_dto_evd(self)
            self._cq.close()
            if self._channel is not None:
                self._channel.close()
        self._ia._evds.discard(self)
        self._q.clear()
        self._notify_seq += 1           # a waiter's spin looks at ready() again
        self._ia._engine.wake()

    def _wake_waiter(self):
        self._notify_seq += 1
        self._ia._engine.wake()

    _actions = {
        "wake_waiter": _wake_waiter,
        "post_overflow": _post_overflow,
    }
