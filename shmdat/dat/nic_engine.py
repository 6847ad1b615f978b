"""The engine of a verbs device without shm0's extension: rdma-core's pyverbs on a NIC
(docs/design/dat-over-verbs.md, section 3.3). The same interface as engine.Engine,
the calls DAT's objects make.

The device runs by itself, so DAT's lock is its own (an RLock) and nothing here
runs the device. A round of progress (poll) hands on the CM and async events the
event thread queued and not yet handed on, then drains every DTO EVD's CQ (every round: no shm0dv
cq_sink hands the completions over as they are made). A waiter spins (evd.py), then block() arms
every DTO EVD's CQ, polls once more (a completion that came before the arm raises
no event), and sleeps in select() on the CQs' completion channels and its own wake
pipe, in slices of _SLICE; a channel that fired has its event taken (get_cq_event)
and acked at once. wake() writes a byte on the pipe of each blocked thread (one
pipe each: a shared one lets a thread take the byte meant for another that has
not reached select() yet). The IA's event thread, as dapl's CM thread, sleeps in
poll() on the Context's async event fd, every CM channel's fd and a wake pipe, takes
what is readable without blocking (the fds are non-blocking) and hands it on itself,
under the lock (queue()), so the handshake goes on while the consumer waits elsewhere.

pyverbs' gaps, filled here and in cm.py's _request_owner:

  - CMEvent(channel) and get_async_event() block, holding the GIL, and neither the
    CMEventChannel's fd nor the Context's async_fd is exposed: event_fds.py finds them
    in /proc/self/fd and makes them non-blocking; the event thread takes a channel's
    events when its fd is readable, copies each, makes a CONNECT_REQUEST's CMID while
    the event is held, acks it and queues it;
  - CMEvent has no `id`: each CMID has its own channel, which names it. A request's CMID reports on
    its listener's channel (rdma_cm), so such events name none: cm.py gives them to
    the oldest of the listener's requests in a state that takes them;
  - CMEvent has no `status`: 0. PEER vs NON_PEER rejects are told by DAT's header;
    a dead peer's kernel sends its DREQ, so the survivor sees DISCONNECTED;
  - AsyncEvent has no element: a QP event goes to the EPs whose QP is in ERR while
    their connection is up; CQ_ERR to the EVDs whose CQ fails to poll; SRQ_LIMIT
    to the SRQs armed whose limit fell to 0 (it is one-shot); SRQ_ERR to all SRQs;
  - no solicited bit in a WC: every receive completion notifies (a waiter on an
    EVD fed with SOLICITED_WAIT wakes for unsolicited ones too; dapl, which arms
    solicited-only, likewise returns whatever the CQ holds when it polls);
  - no receive counts (shm0dv.query_rq): recv_query and srq.query count only what
    DAT posted and drained (ep_recv_info_supported and srq_info_supported False);
  - no receive credits: the hard high watermark on an SRQ's EP is ModelNotSupported;
  - rdma_cm's private data limits (REQ 56 bytes on IB and RoCE, REP 196, REJ 148):
    DAT's 6-byte header leaves 50 for the consumer, the max_private_data_size.

Real pyverbs' CMEvent, get_async_event and get_cq_event call C without releasing the
GIL (rdma-core's pyx, checked): nothing here calls them unless poll() found their fd
readable, and then they do not block. Untested on a NIC: README "DAT on a real NIC".
"""

import collections
import errno
import os
import select
import threading
import time
from typing import Any, NamedTuple

from . import event_fds, seam
from .constants import EventNumber
from .engine import EngineBase

_BATCH = 64                     # WCs taken by one cq.poll (pyverbs allocates that many)
_SLICE = 0.05                   # a sleeper looks again at least this often (seconds)
_MAX_PRIVATE_DATA = 56 - 6      # rdma_cm's REQ private data on IB/RoCE, less DAT's header
_JOIN_BOUND = 1.0               # seconds an IA's close waits for its event thread to leave


class CmEventCopy(NamedTuple):
    """An rdma_cm event as its channel's thread copied it before acking it."""
    event_type: Any
    private_data: bytes
    id: Any                     # its CMID; None: one of the listener's requests' (cm.py says whose)
    listen_id: Any              # a CONNECT_REQUEST's listener
    requests: list              # the listener's requests' CMIDs, oldest first
    status: int = 0             # pyverbs says none

    def ack_cm_event(self):
        """Acked by the thread that took it."""


class _Channel:
    """One CMID's event channel (its fd non-blocking) and the CMIDs reporting there (the
    CMID, and a listener's requests)."""

    def __init__(self, engine, listening):
        dev = engine.dev
        self.engine = engine
        self.channel, self.fd = event_fds.made_with_fd(dev.cmid.CMEventChannel, dev.event_fd,
                                                       event_fds.CM_CHANNEL_LINK)
        try:
            self.cmid = dev.cmid.CMID(self.channel)
        except dev.pyverbs_error.PyverbsError:
            self.channel.close()
            raise
        self.listening = listening
        self.requests = []          # CMIDs of the listener's CONNECT_REQUESTs, oldest first
        self.open_ids = 1           # CMIDs on the channel not yet closed: it closes after them
        self.taking = threading.Lock()      # taking events and closing the channel exclude each other
        self.closed = False
        self.watched = True         # by the event thread: until the channel fails or closes

    def take_events(self):
        """Hand on the events queued on the channel (its fd polled readable). False when
        the channel failed or closed: it is watched no more."""
        engine, dev = self.engine, self.engine.dev
        while True:
            with self.taking:
                if self.closed:
                    return False
                try:
                    event = dev.cmid.CMEvent(self.channel)
                except dev.pyverbs_error.PyverbsError as err:
                    return getattr(err, "error_code", None) == errno.EAGAIN     # none left
                event_type = event.event_type
                cmid, listen_id = (None if self.listening else self.cmid), None
                if seam.CM_EVENT.get(event_type) is seam.CmEvent.REQUEST:
                    cmid, listen_id = self._request(event), self.cmid
                copy = CmEventCopy(event_type, event.private_data, cmid, listen_id, self.requests)
                event.ack_cm_event()
            engine.queue(engine.cm_events, copy)

    def _request(self, event):
        """The CMID of a CONNECT_REQUEST, made while the event is held (None if the
        listener is gone meanwhile); it reports on this channel from now on."""
        engine, dev = self.engine, self.engine.dev
        try:
            cmid = dev.cmid.CMID(creator=event, listen_id=self.cmid)
        except dev.pyverbs_error.PyverbsError:
            return None
        with engine.channels_lock:
            self.requests.append(cmid)
            self.open_ids += 1
            engine.channels[cmid] = self
        return cmid

    def close(self):
        with self.taking:
            if not self.closed:
                self.closed = True
                self.channel.close()


class NicEngine(EngineBase):
    """The engine of a device that runs by itself and has no shm0dv (module docstring)."""

    hard_watermark_supported = False
    receives_visible = False
    max_private_data_size = _MAX_PRIVATE_DATA

    def __init__(self, ia, dev):
        self.async_fd = None        # the Context's async event fd (_open_context finds it)
        super().__init__(ia, dev)
        self.lock = threading.RLock()
        self.cm_events = collections.deque()        # CmEventCopy, queued by the event thread
        self.async_events = collections.deque()     # event types, queued by the event thread
        self.channels = {}          # CMID -> the _Channel it reports on
        self.channels_lock = threading.Lock()       # channels, counts: the event thread adds requests
        self.waiting = []           # the wake pipes of the threads in block(): wake() writes each
        self.free_pipes = []        # wake pipes of threads that left block(), for the next
        self.closing = False
        self.events_wake = _pipe()  # written when the event thread must look again (channels, close)
        self.events_thread = threading.Thread(target=self._run_events, daemon=True,
                                              name="shmdat-nic-events")
        self.events_thread.start()

    def _open_context(self):
        ctx, self.async_fd = event_fds.made_with_fd(
            lambda: self.dev.device.Context(name=self.dev.name), self.dev.event_fd,
            event_fds.ASYNC_EVENT_LINK)
        return ctx

    def queue(self, events, event):
        """The event thread's event, handed on at once under the lock, as dapl's CM and
        async threads do: a connection's handshake goes on while the consumer is in
        no call of this IA (on shm0 the device waits for the next call). What the
        event posts wakes a waiter (EVD._post). An IA closing holds the lock: the event
        goes with it."""
        events.append(event)        # (deque.append is atomic: a DAT call may drain it first)
        lock = self.lock
        while not lock.acquire(timeout=_SLICE):
            if self.closing:
                return
        try:
            if not self.ia._freed:
                try:
                    self._drain_events()
                except Exception:   # (a DAT bug: the consumer's next call meets the rest)
                    pass
        finally:
            lock.release()

    def _run_events(self):
        """The IA's event thread: asleep in poll() (the GIL released) on the async event
        fd, every CM channel's fd and its wake pipe; what is readable is taken without
        blocking and handed on. A channel that fails or an async fd that polls readable
        with no event is watched no more (rather than polled in a loop)."""
        wake = self.events_wake[0]
        while not self.closing:
            with self.channels_lock:
                channels = {ch.fd: ch for ch in self.channels.values() if ch.watched and not ch.closed}
            poller = select.poll()
            for fd in (wake, self.async_fd, *channels):
                if fd is not None:
                    poller.register(fd, select.POLLIN)
            for fd, _ in poller.poll():
                if self.closing:
                    return
                if fd == wake:
                    _empty(wake)
                elif fd == self.async_fd:
                    if not self._take_async_events():
                        self.async_fd = None
                elif not channels[fd].take_events():
                    channels[fd].watched = False    # (its CMIDs still hold it: close_cmid closes it)

    def _take_async_events(self):
        """Hand on the async events queued (the fd polled readable); False if none was."""
        ctx, error = self.ctx, self.dev.pyverbs_error.PyverbsError
        taken = False
        while True:
            try:
                event = ctx.get_async_event()
            except error:
                return taken        # EAGAIN (pyverbs says -1): none left
            event_type = event.event_type
            event.ack()
            taken = True
            self.queue(self.async_events, event_type)

    # A round of progress (under the lock).

    def poll(self):
        if self.ia._freed:
            return                      # closed: waiters are leaving
        if self.async_events or self.cm_events:
            self._drain_events()
        for evd in self.dto_evds:       # no count says which CQs moved: each, every round
            evd._drain()
        if self.next_timer is not None:
            self._check_timers()

    def progress(self):
        """Nothing: the device runs by itself."""

    def watch(self):
        """What the event thread has queued (a NIC notices dead peers on the wire)."""
        if self.async_events or self.cm_events:
            self._drain_events()

    def _drain_events(self):
        async_events = self.async_events
        while async_events:             # first: a QP error is told from a disconnect (ep.py)
            self._async(async_events.popleft(), None)
        self.cm.drain()

    # The async events' elements, which pyverbs' AsyncEvent lacks: recovered.

    def _event_eps(self, element):
        """The EPs whose QP the device put in ERR (those not connected ignore it)."""
        err, state = self.dev.enums.IBV_QPS_ERR, self.dev.enums.IBV_QP_STATE
        return [ep for ep in list(self.eps_by_qp_num.values())
                if ep._qp.query(state)[0].qp_state == err]

    def _event_evds(self, element):
        broken = []
        for evd in list(self.dto_evds):
            try:
                evd._drain()
            except self.dev.pyverbs_error.PyverbsError:
                broken.append(evd)
        return broken

    def _event_srqs(self, element, number):
        srqs = list(self.ia._srqs)
        if number == EventNumber.ASYNC_SRQ_LOW_WATERMARK:
            return [srq for srq in srqs if srq._lw and srq._verbs_srq.query().srq_limit == 0]
        return srqs

    # The rdma_cm events (cm.py's ConnectionManager asks).

    def new_cmid(self, listening):
        """A CMID on a channel of its own (its events then name it), watched by the event
        thread from now on."""
        channel = _Channel(self, listening)
        with self.channels_lock:
            self.channels[channel.cmid] = channel
        _poke(self.events_wake[1])
        return channel.cmid

    def next_cm_event(self):
        cm_events = self.cm_events
        return cm_events.popleft() if cm_events else None

    def request_cmid(self, event, listen_cmid):
        """A CONNECT_REQUEST's CMID: its channel's thread made it (None: it could not)."""
        return event.id

    def close_cmid(self, cmid):
        """The CMID, then its channel once no CMID reports there (rdma_cm's order)."""
        cmid.close()
        with self.channels_lock:
            channel = self.channels.pop(cmid)
            if cmid in channel.requests:
                channel.requests.remove(cmid)
            channel.open_ids -= 1
            last = channel.open_ids == 0
        if last:
            channel.close()
            _poke(self.events_wake[1])  # the event thread forgets its fd

    # Completions.

    def new_cq(self, cqe):
        """(CQ, its completion channel): a waiter sleeps on the channel's fd."""
        cq_module = self.dev.cq
        channel = cq_module.CompChannel(self.ctx)
        try:
            return cq_module.CQ(self.ctx, cqe, None, channel, 0), channel
        except self.dev.pyverbs_error.PyverbsError:
            channel.close()
            raise

    def drain(self, evd):
        """EVD._drain: the EVD's CQ polled empty, in batches (pyverbs allocates each), each
        completion to its EP's _completed (dapl's dapls_evd_copy_cq)."""
        cq, slots = evd._cq, self.slots
        got = _BATCH
        while got == _BATCH:
            got, wcs = cq.poll(_BATCH)
            for wc in wcs:
                ep, cookie, flags, op, length = slots.pop(wc.wr_id)
                (ep or self.eps_by_qp_num[wc.qp_num])._completed(evd, wc, cookie, flags, op, length)

    @staticmethod
    def wc_solicited(wc):
        return True                     # unknown: every receive notifies (module docstring)

    @staticmethod
    def receives_filling(qp):
        return 0                        # in the NIC, unseen

    @staticmethod
    def set_recv_credits(qp, n):
        """Only None (no hard mark) reaches here: ep.set_watermark refuses a finite one."""

    @staticmethod
    def consumer_memory_remote_ok():
        return True, ""                 # a NIC reaches any registered memory

    # Waiting.

    def block(self, ready, deadline):
        """Sleep until ready() or the monotonic deadline (None: none), polling whenever a
        completion channel or this thread's wake pipe fires, and at least once a
        _SLICE; ready()'s last value. Called with the lock held once."""
        lock = self.lock
        pipe = self.free_pipes.pop() if self.free_pipes else _pipe()
        self.waiting.append(pipe)
        self.blocked += 1
        try:
            while True:
                self._arm()
                self.poll()             # what completed before the arm raises no event
                if ready():
                    return True
                timeout = _SLICE
                if deadline is not None:
                    timeout = min(deadline - time.monotonic(), _SLICE)
                    if timeout <= 0:
                        return False
                channels = {evd._channel.fd: evd for evd in self.dto_evds}
                lock.release()
                try:
                    readable = _readable_fds([pipe[0], *channels], timeout)
                finally:
                    lock.acquire()
                self._take_wakeups(readable, channels)
        finally:
            self.blocked -= 1
            self.waiting.remove(pipe)
            _empty(pipe[0])
            self.free_pipes.append(pipe)

    def _arm(self):
        for evd in self.dto_evds:
            evd._cq.req_notify()

    def _take_wakeups(self, readable, channels):
        for fd in readable:
            evd = channels.get(fd)
            if evd is None:
                _empty(fd)              # this thread's wake pipe
            elif not evd._freed and _readable_fds([fd], 0):
                # (another waiter may have taken it: get_cq_event would block)
                evd._channel.get_cq_event(evd._cq)
                evd._cq.ack_events(1)

    def wake(self):
        """Blocked threads of this IA look at their ready() again (lock held)."""
        for _, w in self.waiting:
            _poke(w)

    _wake_all = wake

    def close(self):
        """The event thread (it leaves at once, or within _SLICE if it waits for the lock
        this close holds), then the CMIDs nobody took (requests queued unread), every
        channel, the Context and the pipes."""
        self.closing = True
        _poke(self.events_wake[1])
        self.events_thread.join(_JOIN_BOUND)
        with self.channels_lock:
            channels = dict(self.channels)
            self.channels.clear()
        for cmid in channels:
            cmid.close()
        for channel in set(channels.values()):
            channel.close()
        self.ctx.close()
        for r, w in self.free_pipes + self.waiting + [self.events_wake]:
            os.close(r)
            os.close(w)


def _readable_fds(fds, timeout):
    """The fds of `fds` that poll readable within `timeout` seconds (poll(), not
    select(): an IA with many CMIDs has fds past select's 1024); a closed one is
    none of them (its EVD went meanwhile: the caller looks again)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, events in poller.poll(timeout * 1000) if events & select.POLLIN]


def _pipe():
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    return r, w


def _poke(fd):
    try:
        os.write(fd, b"\1")
    except BlockingIOError:
        pass                            # full: its reader wakes anyway


def _empty(fd):
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
