"""The progress engine of one rank: its IA, one DTO EVD for every EP, eager slots,
rendezvous by one RDMA read (of the bounce arena or the user's buffer: memory.py), and
finalize. Only shmdat's public DAT API.

Every message starts with HEADER {kind, comm, tag, seq, length}; its source is the EP it
came on. EAGER carries its payload; SYNC (a synchronous send's eager message) carries the
sender's request id, then its payload, and is answered by FIN once matched; RTS carries
an RmrTriplet of the data and the sender's request id (the receiver RDMA-reads the data,
then sends FIN with that id); FIN completes a rendezvous or synchronous send, or frees its
bounce block; BYE says the sender has begun to finalize; REVOKE revokes a communicator
(its context ids, then the ranks to pass the word to: shmdat/mpi/ulfm.py). A window's messages (WIN_ACC,
WIN_LOCK, WIN_UNLOCK; comm: the window's id) carry a request id, then the window's own body,
and are answered by FIN with that id and the answer's data (shmdat/mpi/win.py); a window's
Put and Get are one RDMA write or read. docs/design/mpi.md has the whole protocol."""

import collections
import functools
import os
import struct
import threading
import time

import shmdat
from shmdat import (CompletionFlags, DtoOp, DtoStatus, EpAttr, EventNumber, EvdFlags, LmrTriplet,
                    MemPriv, RmrTriplet)

from . import errors
from .errors import Exception as MPIException
from .matching import ANY_SOURCE, Matcher, Message
from .memory import BOUNCE_LIMIT, BounceArena, RegistrationCache

SLOT = 65536                        # one eager slot: header and payload
HEADER = struct.Struct("<BxxxiiIq")  # kind, comm, tag, seq, length
EAGER_LIMIT = SLOT - HEADER.size     # larger messages go by rendezvous
RTS_BODY = struct.Struct(f"<{RmrTriplet.SIZE}sq")  # the sender's buffer, its request id
FIN_BODY = struct.Struct("<q")       # the sender's request id (also a SYNC's prefix)
_SUPPRESS = int(CompletionFlags.SUPPRESS)   # (a plain int: the post's fast path)
_tuple_new = tuple.__new__          # LmrTriplet(...) without namedtuple's Python-level __new__
EAGER, RTS, FIN, SYNC = 0, 1, 2, 3
BYE = 7                             # the sender has begun to close: nothing new will come
REVOKE = 8                          # a communicator is revoked (ULFM: shmdat/mpi/ulfm.py)
REVOKE_HEAD = struct.Struct("<ii")   # REVOKE's body: the first context id and how many, then
#                                      the ranks (int32s) of the communicator
WIN_ACC, WIN_LOCK, WIN_UNLOCK = 4, 5, 6  # a window's messages, handled by the window
WIN_BODY_LIMIT = EAGER_LIMIT - FIN_BODY.size  # a window message's body (after its request id)
SYNC_LIMIT = EAGER_LIMIT - FIN_BODY.size  # larger synchronous sends go by rendezvous
RECV_SLOTS = 8                      # receives kept posted per peer
SEND_SLOTS = 8                      # eager sends outstanding per peer
MAX_READS = 8                       # rendezvous RDMA reads outstanding per peer
MAX_RMA = 8                         # a window's RDMA writes and reads outstanding per peer
FLAG_WRITES = 4                     # a collective's flag writes (flags.py) in the request queue
WAIT_SLICE_US = 50_000              # a blocked call re-checks for dead peers this often
WAKE_EVENTS = 16                    # room in the EVD for wake()'s software events
POLL_SECONDS = 0.002                # a waiting rank polls this long before it sleeps
CLOCK_EVERY = 16                    # empty polls between two looks at the clock
PEER_EVENTS = RECV_SLOTS + SEND_SLOTS + MAX_READS + MAX_RMA + FLAG_WRITES  # one peer's, at most
_EP_ATTR = EpAttr(max_recv_dtos=RECV_SLOTS,
                  max_request_dtos=SEND_SLOTS + MAX_READS + MAX_RMA + FLAG_WRITES,
                  max_recv_iov=1, max_request_iov=1)
SEND_PRIVILEGES = MemPriv.LOCAL_READ | MemPriv.REMOTE_READ
RECV_PRIVILEGES = MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE


class SendOp:
    """A send in progress: `done` once the user's buffer may be reused and nothing more is
    owed to the receiver. A rendezvous send holds its data in `registration` (the user
    buffer's LMR) or at `bounce` (its block of the bounce arena: start, length) until its FIN."""
    __slots__ = ("dest", "done", "error", "registration", "bounce")

    def __init__(self, dest, done=False):
        self.dest, self.done, self.error, self.registration, self.bounce = dest, done, 0, None, None


class RmaOp(SendOp):
    """A window's operation on rank `dest`: an RDMA write or read (`registration`: the origin
    buffer's LMR until it completes), or a window message waiting for its answer, whose data
    goes into `result`."""
    __slots__ = ("result",)

    def __init__(self, dest, result=None):
        super().__init__(dest)
        self.result = result


class RecvOp:
    """A receive: comm, source, tag to match; `buf` (a writable byte memoryview) or None
    (then `data` gets the payload's bytes). Once done: `source`, `tag`, `nbytes`, `error`."""
    __slots__ = ("comm", "source", "tag", "buf", "data", "nbytes", "done", "error")

    def __init__(self, comm, source, tag, buf):
        self.comm, self.source, self.tag, self.buf = comm, source, tag, buf
        self.data, self.nbytes, self.done, self.error = None, 0, False, 0


class Peer:
    """Everything this rank keeps for one other rank: its EP, receive and send slots, the
    control messages waiting for a slot, the matched RTSs waiting for room for their read."""

    def __init__(self, rank, ep, recv_lmr, send_lmr):
        self.rank, self.ep = rank, ep
        self.recv_lmr, self.send_lmr = recv_lmr, send_lmr
        self.recv_mv = memoryview(recv_lmr.buffer)
        self.send_mv = memoryview(send_lmr.buffer)
        self.recv_cookies = [(self, slot) for slot in range(RECV_SLOTS)]
        self.send_cookies = [(self, slot) for slot in range(SEND_SLOTS)]
        # Each slot's receive iov, made once; a send's triplet is made from the LMR's
        # start at each post (its length varies), without triplet()'s checks: it lies in the LMR.
        self.recv_iovs = [[recv_lmr.triplet(slot * SLOT, SLOT)] for slot in range(RECV_SLOTS)]
        self.send_context, self.send_address = send_lmr.triplet(0, 0)[:2]
        self.free_slots = list(range(SEND_SLOTS))
        self.backlog = collections.deque()   # control messages (kind, body) waiting for a slot
        self.reads = collections.deque()     # (Message, RecvOp) waiting for a read's room
        self.reads_in_flight = 0
        self.bounced = 0                     # rendezvous sends in the bounce arena, unread
        self.rma_in_flight = 0               # a window's RDMA writes and reads
        self.seq_out = self.seq_in = 0
        self.gone = None                     # why the connection ended, once it has
        self.closing = False                 # it has sent BYE


def _check_live(peer):
    if peer.gone:
        raise MPIException(errors.ERR_PROC_FAILED, f"rank {peer.rank} has gone ({peer.gone})")


def _threads():
    """Whether other threads run, one of which may still send to this rank itself."""
    return threading.active_count() > 1


def _entry(method):
    """An entry point of the engine: it runs holding the engine's lock, so that threads may
    call MPI at once (THREAD_MULTIPLE); a waiter lets the lock go while it sleeps."""
    @functools.wraps(method)
    def entry(self, *args):
        self.lock.acquire()
        try:
            return method(self, *args)
        finally:
            self.lock.release()
    return entry


class Engine:
    """One per process. `open(rank, size)`, then `connect` (shmdat/mpi/wireup.py) fills
    `peers`; `send` and `post_recv` start operations, `wait` drives progress until they end."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size
        self.lock = threading.RLock()   # (re-entered: a window's on_message calls entry points)
        self.turns = threading.Condition(self.lock)     # the EVD's waiter has handled an event
        self.waiting = False            # a thread is in evd.wait: DAT allows one per EVD
        self.sleepers = 0               # threads asleep on `turns` meanwhile
        # More ranks than cores (Open MPI's rule for yield_when_idle): a waiting rank yields its
        # core between its polls, as the rank it waits for may need that core.
        self.yield_when_idle = size > len(os.sched_getaffinity(0))
        self.ia = shmdat.ia_open()
        self.pz = self.ia.pz_create()
        self.evd = self.ia.evd_create((size - 1) * PEER_EVENTS + WAKE_EVENTS,
                                      EvdFlags.DTO | EvdFlags.SOFTWARE)  # (software events: wake)
        # Connection requests and connection events share one EVD: the wire-up waits on one.
        self.cm_evd = self.ia.evd_create(4 * size + 8, EvdFlags.CR | EvdFlags.CONNECTION)
        self.psp = self.ia.psp_create_any(self.cm_evd)
        self.peers = [None] * size
        self.matcher = Matcher()
        self.cache = RegistrationCache(self.ia, self.pz)
        self.bounce = BounceArena(self.ia, self.pz, SEND_PRIVILEGES)
        self.closing = False       # close() has begun: no receive will be posted now
        self.rendezvous = {}       # request id -> SendOp waiting for its FIN
        self.next_id = 0
        self.windows = {}          # window id -> its Win (shmdat/mpi/win.py): on_message()
        self.schedules = []        # non-blocking collectives under way (collectives.Schedule)
        self.advancing = False     # (their rounds' sends may wait, handling events meanwhile)
        self.next_window = 0       # the lowest window id this rank has not used
        # Fault tolerance (ULFM, shmdat/mpi/ulfm.py): the ranks whose connection broke before
        # they finalized, in the order noticed; per context, the engine ranks its ANY_SOURCE
        # receives may match (a communicator registers them) and those of the failed that
        # its Ack_failed acknowledged; the contexts revoked.
        self.failed = []
        self.members = {}
        self.acked = {}
        self.revoked = set()
        for r in range(size):
            if r != rank:
                self.peers[r] = self._new_peer(r)

    def _new_peer(self, r):
        """Rank r's Peer: its EP (not connected yet), its slots, its receives posted."""
        ep = self.ia.ep_create(self.pz, self.evd, self.evd, self.cm_evd, _EP_ATTR)
        peer = Peer(r, ep, self.ia.lmr_create(self.pz, RECV_SLOTS * SLOT),
                    self.ia.lmr_create(self.pz, SEND_SLOTS * SLOT))
        for slot in range(RECV_SLOTS):
            self._repost(peer, slot)
        return peer

    @_entry
    def add_peer(self):
        """A process beyond this job's ranks (shmdat/mpi/dynproc.py: Spawn, Accept,
        Connect): a new Peer, whose EP the caller connects; returns its engine rank (past
        every rank here so far). The EVDs grow by what one peer may queue."""
        self.evd.resize(self.evd.query().evd_qlen + PEER_EVENTS)
        self.cm_evd.resize(self.cm_evd.query().evd_qlen + 4)
        self.peers.append(self._new_peer(len(self.peers)))
        self.yield_when_idle = len(self.peers) > len(os.sched_getaffinity(0))   # (as at init)
        return len(self.peers) - 1

    @_entry
    def close(self):
        """At exit (MPI_Finalize): tell every peer (BYE), and answer every rendezvous and
        synchronous send no receive will match now, so that no peer's exit waits on this
        one (and a receive a peer posts for this rank then fails instead of hanging); then wait
        until every eager send has reached its peer and every peer has read the sends held
        in the bounce arena (or has gone), and close the IA."""
        self.closing = True
        live = [p for p in self.peers if p is not None]
        for peer in live:
            self._post_control(peer, BYE, b"")
        unexpected = self.matcher.unexpected
        for msg in [m for m in unexpected if m.rts is not None or m.ack is not None]:
            unexpected.remove(msg)
            self.answer(msg.source, msg.ack if msg.rts is None else msg.rts[1])
        self._wait_until(lambda: all(p.gone or len(p.free_slots) == SEND_SLOTS and not p.backlog
                                     and not p.bounced for p in live), [])
        self.ia.close()

    # Starting operations.

    @_entry
    def send(self, dest, comm, tag, view, sync=False):
        """Start sending the byte memoryview `view` to rank `dest`; returns its SendOp. A
        `sync` send is done only once a receive has matched it (MPI's synchronous mode).
        MPI.Exception ERR_REVOKED on a revoked communicator, ERR_PROC_FAILED if `dest` has
        failed."""
        peer = self.peers[dest]
        # The commonest send, tested first: eager, to another rank (this rank's peer is None)
        # that has a slot free, while no communicator is revoked.
        if not sync and len(view) <= EAGER_LIMIT and peer is not None and not self.revoked:
            if peer.free_slots and not peer.gone:
                self._post(peer, EAGER, comm, tag, len(view), view)
                return SendOp(dest, done=True)
        self.check_revoked(comm)
        if dest == self.rank:
            op = SendOp(dest, done=not sync)
            self._arrive(dest, comm, tag, len(view), view, None,
                         self._await_fin(op) if sync else None)
            self.wake()
            return op
        peer = self._peer_with_slot(dest)
        if len(view) <= (SYNC_LIMIT if sync else EAGER_LIMIT):
            if not sync:
                self._post(peer, EAGER, comm, tag, len(view), view)
                return SendOp(dest, done=True)
            op = SendOp(dest)
            self._post(peer, SYNC, comm, tag, len(view),
                       FIN_BODY.pack(self._await_fin(op)) + bytes(view))
            return op
        # Rendezvous: the receiver reads the data once matched, then sends FIN. Copied into
        # the bounce arena, the send is done at once (a synchronous one at its FIN), and the
        # read is a copy from memory the receiver maps; read from the user's buffer (too
        # large, or the arena full), the send is done at the FIN.
        nbytes = len(view)
        op = SendOp(dest)
        start = self.bounce.alloc(nbytes) if nbytes <= BOUNCE_LIMIT else None
        if start is None:
            op.registration = self.cache.get(view, SEND_PRIVILEGES)
            rmr = op.registration.rmr_triplet(0, nbytes)
        else:
            self.bounce.view[start:start + nbytes] = view
            op.bounce, op.done = (start, nbytes), not sync
            peer.bounced += 1
            rmr = self.bounce.lmr.rmr_triplet(start, nbytes)
        self._post(peer, RTS, comm, tag, nbytes, RTS_BODY.pack(rmr.pack(), self._await_fin(op)))
        return op

    def _await_fin(self, op):
        """A new request id under which `op` waits for its FIN."""
        self.next_id += 1
        self.rendezvous[self.next_id] = op
        return self.next_id

    def _peer_with_slot(self, dest):
        """The Peer of rank `dest` once it has a free send slot (progress runs meanwhile);
        MPI.Exception ERR_OTHER if it has gone."""
        peer = self.peers[dest]
        if not peer.free_slots:
            self._wait_until(lambda: peer.free_slots or peer.gone, [])
        _check_live(peer)
        return peer

    def _on_fin(self, request_id, data=b""):
        op = self.rendezvous.pop(request_id)
        if op.registration is not None:
            self.cache.release(op.registration)
            op.registration = None
        elif op.bounce is not None:
            self.bounce.free(*op.bounce)
            op.bounce = None
            self.peers[op.dest].bounced -= 1
        if data:                   # a window message's answer (Get_accumulate's old values)
            op.result[:len(data)] = data
        op.done = True

    @_entry
    def answer(self, source, request_id, data=b""):
        """FIN with `request_id` (and `data`) to rank `source`: its synchronous send has been
        matched, or its window message handled."""
        if source == self.rank:
            self._on_fin(request_id, data)
            self.wake()
        else:
            self._post_control(self.peers[source], FIN, FIN_BODY.pack(request_id) + data)

    @_entry
    def post_recv(self, comm, source, tag, buf):
        """Start a receive into the writable byte memoryview `buf` (None: into new bytes).
        MPI.Exception ERR_REVOKED on a revoked communicator."""
        self.check_revoked(comm)
        op = RecvOp(comm, source, tag, buf)
        msg = self.matcher.take_message(comm, source, tag)
        if msg is None:
            self.matcher.posted.append(op)
        elif msg.rts is None:
            self._deliver(op, msg.source, msg.tag, msg.length, msg.data)
            if msg.ack is not None:
                self.answer(msg.source, msg.ack)
        else:
            self._start_read(self.peers[msg.source], msg, op)
        return op

    @_entry
    def cancel(self, op):
        """Cancel the receive `op` if no message has matched it yet: it leaves the posted
        queue and is done. Whether it was cancelled."""
        if op.done or op not in self.matcher.posted:
            return False
        self.matcher.posted.remove(op)
        op.done = True
        return True

    @_entry
    def probe(self, comm, source, tag):
        """The oldest unexpected message a receive (comm, source, tag) would match, left in
        the queue; None if there is none yet."""
        return self.matcher.find_unexpected(comm, source, tag)

    @_entry
    def wait_probe(self, comm, source, tag):
        """Drive progress until probe(comm, source, tag) finds a message; return it. A
        blocking call: ERR_PROC_FAILED where a receive would be ERR_PROC_FAILED_PENDING."""
        self.check_revoked(comm)
        try:
            self._wait_until(lambda: self.probe(comm, source, tag) is not None,
                             [RecvOp(comm, source, tag, None)])
        except MPIException as e:
            if e.error_code != errors.ERR_PROC_FAILED_PENDING:
                raise
            raise MPIException(errors.ERR_PROC_FAILED, e.detail) from None
        return self.probe(comm, source, tag)

    @_entry
    def wait_any(self, ops):
        """Drive progress until one of `ops` is done; MPI.Exception only if none of them
        can ever complete."""
        self._wait_until(lambda: any(op.done for op in ops), ops, any_of=True)

    @_entry
    def matched_probe(self, comm, source, tag, block):
        """MPI_Mprobe (`block`: progress runs until there is one) or MPI_Improbe: the oldest
        unexpected message a receive (comm, source, tag) would match, taken out of the queue
        so that no other receive can match it; None if there is none (not blocking)."""
        if block:
            self.wait_probe(comm, source, tag)
        else:
            self.progress()
        return self.matcher.take_message(comm, source, tag)

    @_entry
    def receive_matched(self, msg, buf):
        """Start the receive of `msg`, a message matched_probe took, into the writable byte
        memoryview `buf` (None: into new bytes); returns its RecvOp. An eager message is
        delivered now, a synchronous one answered, a rendezvous one read from now on."""
        # Back at the head of the queue, where the receive post_recv starts takes it at once
        # (nothing comes between: the engine's lock is held): one path for every receive.
        self.matcher.unexpected.insert(0, msg)
        return self.post_recv(msg.comm, msg.source, msg.tag, buf)

    # One-sided: a window's RDMA and messages (shmdat/mpi/win.py).

    @_entry
    def rdma(self, dest, write, view, rmr):
        """Start an RDMA write of the byte memoryview `view` to `rmr` (an RmrTriplet) at rank
        `dest`, or a read of `rmr` into `view`; returns its RmaOp, done once complete.
        MPI.Exception ERR_OTHER if `dest` has gone."""
        peer = self.peers[dest]
        self._wait_until(lambda: peer.rma_in_flight < MAX_RMA or peer.gone, [])
        _check_live(peer)
        op = RmaOp(dest)
        op.registration = self.cache.get(view, SEND_PRIVILEGES if write else RECV_PRIVILEGES)
        local = [op.registration.triplet(0, len(view))]
        peer.rma_in_flight += 1
        if write:
            peer.ep.post_rdma_write(local, (peer, op), rmr)
        else:
            peer.ep.post_rdma_read(local, (peer, op), rmr)
        return op

    @_entry
    def write_flag(self, dest, local_iov, rmr):
        """An RDMA write of `local_iov` to `rmr` at rank `dest`, completion suppressed (a
        collective's flag slot: flags.py); MPI.Exception ERR_OTHER if `dest` has gone."""
        peer = self.peers[dest]
        _check_live(peer)
        peer.ep.post_rdma_write(local_iov, (peer, None), rmr, _SUPPRESS)

    @_entry
    def nap(self, timeout_us):
        """Wait up to `timeout_us` for an event and handle it (at once if another thread
        waits on the EVD): the wait of something no event announces (flags.py's slots)."""
        if not self.waiting:
            self._wait_event(timeout_us)

    def _end_rma(self, peer, op):
        peer.rma_in_flight -= 1
        self.cache.release(op.registration)
        op.registration = None

    @_entry
    def window_message(self, dest, kind, window, body, result=None):
        """Send the window message `kind` (WIN_ACC, WIN_LOCK, WIN_UNLOCK; `body` at most
        WIN_BODY_LIMIT bytes) for window id `window` to rank `dest`, this rank included;
        returns its RmaOp, done once answered (the answer's data into `result`).
        MPI.Exception ERR_OTHER if `dest` has gone."""
        op = RmaOp(dest, result)
        if dest == self.rank:
            self.windows[window].on_message(kind, dest, self._await_fin(op), body)
        else:
            peer = self._peer_with_slot(dest)
            self._post(peer, kind, window, 0, len(body), FIN_BODY.pack(self._await_fin(op)) + body)
        return op

    # Non-blocking collectives.

    @_entry
    def start(self, schedule):
        """Start a non-blocking collective (collectives.Schedule): its first rounds now, the
        others whenever progress is made (a round's ops done: advanced after each event
        handled, and by progress()); returns it."""
        self.schedules.append(schedule)
        self._advance_schedules()
        return schedule

    def _advance_schedules(self):
        if self.advancing:          # (a round's send waiting for a slot: not re-entered)
            return
        self.advancing = True
        try:
            self.schedules = [s for s in self.schedules if not s.advance()]
        finally:
            self.advancing = False

    # Waiting.

    @_entry
    def wait(self, ops):
        """Drive progress until every op is done; MPI.Exception if one waits on a rank that
        has gone (or on itself), which would otherwise block for ever."""
        for op in ops:
            if not op.done:
                self._wait_until((lambda: op.done) if len(ops) == 1
                                 else (lambda: all(op.done for op in ops)), ops)
                return

    def _wait_until(self, ready, ops, any_of=False):
        # evd.wait runs the provider's progress and returns a queued event at once: one
        # event handled per turn, and `ready` looked at before anything else.
        if self._poll_first(ready):
            return
        while not ready():
            self._check_reachable(ops, any_of)
            if self.waiting:        # another thread waits on the EVD: it handles what comes
                self.sleepers += 1
                try:
                    self.turns.wait(WAIT_SLICE_US / 1e6)
                finally:
                    self.sleepers -= 1
                continue
            self._wait_event(WAIT_SLICE_US)

    def _wait_event(self, timeout_us):
        """Be the EVD's waiter for up to `timeout_us` (the lock let go meanwhile) and handle
        the event that comes, if one does."""
        self.waiting = True
        saved = self.lock._release_save()   # (held once per entry point on the stack)
        try:
            event, _ = self.evd.wait(timeout_us)
        except shmdat.TimeoutExpired:
            return
        finally:
            self.lock._acquire_restore(saved)
            self.waiting = False
            if self.sleepers:
                self.turns.notify_all()
        if event.number != EventNumber.SOFTWARE_EVENT:
            self._handle(event.data)

    def wake(self):
        """Operations have completed outside the EVD's events (a message from this rank to
        itself, a generalized request's Complete): the threads waiting look again, the EVD's waiter woken by a software
        event (a full EVD wakes it anyway)."""
        if self.waiting:
            try:
                self.evd.post_se(None)
            except shmdat.QueueFull:
                pass
        if self.sleepers:
            self.turns.notify_all()

    def _poll_first(self, ready):
        """Handle the EVD's events as they come until ready() (-> True) or for POLL_SECONDS
        (-> False), as MPI libraries busy-poll: DAT's wait spins SHMDAT_SPIN_US (100 us)
        and then sleeps, and a wait here (a rendezvous's read, a peer's compute between
        messages) often outlasts that, when a sleep and its wake-up cost tens of
        microseconds. ready() is looked at after each event; with other threads, each empty
        poll lets the lock go (their calls may move ready() too), and oversubscribed, it
        yields the core."""
        if ready():
            return True
        end, empties = None, 0
        evd, yield_when_idle = self.evd, self.yield_when_idle
        # Looked at once: a thread started meanwhile gets the lock within POLL_SECONDS.
        let_go = yield_when_idle or _threads()
        while not self.waiting:         # (another thread is the EVD's waiter: wait for it)
            try:
                event = evd.dequeue()
            except shmdat.QueueEmpty:
                empties += 1
                if not empties % CLOCK_EVERY:   # (a clock read costs a dozen lines: not each time)
                    if end is None:
                        end = time.monotonic() + POLL_SECONDS
                    elif time.monotonic() >= end:
                        return False
                if let_go:
                    saved = self.lock._release_save()   # other threads' calls come in here
                    try:
                        if yield_when_idle:
                            os.sched_yield()
                    finally:
                        self.lock._acquire_restore(saved)
                    if ready():
                        return True
                continue
            if event.number != EventNumber.SOFTWARE_EVENT:
                self._handle(event.data)
            if ready():
                return True
        return False

    def _check_reachable(self, ops, any_of=False):
        """MPI.Exception for the first op that can never complete; with `any_of`, only if
        none of them can."""
        stuck = None
        for op in ops:
            why = None if op.done else self._why_stuck(op)
            if why is None:
                if any_of:
                    return
            elif stuck is None:
                stuck = why
                if not any_of:
                    break
        if stuck is not None:
            raise MPIException(*stuck)

    def _why_stuck(self, op):
        """(error class, why) the pending `op` can never complete, or None if it still may:
        ERR_REVOKED on a revoked communicator, ERR_PROC_FAILED if it needs a failed rank,
        ERR_PROC_FAILED_PENDING for an ANY_SOURCE receive while a rank it could match has
        failed unacknowledged, ERR_OTHER if it needs a rank that has finalized (or itself)."""
        if not isinstance(op, (SendOp, RecvOp)):    # a non-blocking collective: its round's
            return next(filter(None, map(self._why_stuck, [o for o in op.ops if not o.done])),
                        None)
        if isinstance(op, SendOp):
            if op.dest == self.rank:     # (a window's lock here may wait for a release)
                return None if type(op) is RmaOp or _threads() else (errors.ERR_OTHER,
                    "a synchronous send to this rank itself that no receive matched: it would "
                    "never complete")
            peer = self.peers[op.dest]
            return (errors.ERR_PROC_FAILED, f"rank {op.dest} has gone ({peer.gone})") \
                if peer.gone else None
        if op.comm in self.revoked:
            return errors.ERR_REVOKED, "the communicator has been revoked"
        if op.source == self.rank:
            return None if _threads() else (errors.ERR_OTHER,
                "a receive from this rank itself that no send posted before it can match: it "
                "would never complete")
        if op.source == ANY_SOURCE:
            pending = self._failed_unacknowledged(op.comm)
            if pending:
                return (errors.ERR_PROC_FAILED_PENDING, f"a receive from ANY_SOURCE, and rank "
                        f"{pending[0]} has failed")
            if all(p is None or p.gone or p.closing for p in self.peers):
                return (errors.ERR_OTHER, "a receive from ANY_SOURCE, and every other rank "
                        "has gone or finalized")
            return None
        peer = self.peers[op.source]
        if peer.closing and op in self.matcher.posted:    # (matched: its read is under way)
            return (errors.ERR_OTHER, f"rank {op.source} has finalized and sent no message "
                    "this receive matches: it would never complete")
        return (errors.ERR_PROC_FAILED, f"rank {op.source} has gone ({peer.gone})") \
            if peer.gone else None

    def _failed_unacknowledged(self, context):
        """The failed engine ranks an ANY_SOURCE receive on `context` could match (every
        failed rank if no communicator registered the context) that it has not acknowledged."""
        if not self.failed:
            return []
        members, acked = self.members.get(context), self.acked.get(context, ())
        return [r for r in self.failed if r not in acked and (members is None or r in members)]

    # Revoking a communicator (ULFM): every rank of it is told, and tells the others.

    def check_revoked(self, context):
        """MPI.Exception ERR_REVOKED if `context` is a revoked communicator's."""
        if self.revoked and context in self.revoked:
            raise MPIException(errors.ERR_REVOKED, "the communicator has been revoked")

    @_entry
    def revoke(self, context, ids, ranks):
        """Revoke the communicator of context ids `context` .. `context + ids - 1` whose
        engine ranks are `ranks`: the first time, REVOKE goes to every other live rank of it
        (each passes it on in turn, so that a rank failing midway cannot leave some untold),
        its posted receives fail with ERR_REVOKED and the messages for it that no receive
        took are dropped (a rendezvous or synchronous sender answered, so that its send
        ends)."""
        contexts = range(context, context + ids)
        if context in self.revoked:
            return
        self.revoked.update(contexts)
        body = REVOKE_HEAD.pack(context, ids) + struct.pack(f"<{len(ranks)}i", *ranks)
        for r in ranks:
            peer = self.peers[r]
            if peer is not None and not peer.gone:
                self._post_control(peer, REVOKE, body)
        self.matcher.posted = [op for op in self.matcher.posted if op.comm not in contexts]
        for msg in [m for m in self.matcher.unexpected if m.comm in contexts]:
            self.matcher.unexpected.remove(msg)
            if msg.rts is not None or msg.ack is not None:
                self.answer(msg.source, msg.ack if msg.rts is None else msg.rts[1])
        self.wake()

    # Progress.

    @_entry
    def progress(self):
        """Handle every DTO completion queued now (unless a thread waits on the EVD: it
        handles them, one at a time)."""
        if self.waiting:
            return
        evd = self.evd
        while True:
            try:
                event = evd.dequeue()
            except shmdat.QueueEmpty:
                break
            if event.number != EventNumber.SOFTWARE_EVENT:    # (a wake nobody waited for)
                self._handle(event.data)
        if self.schedules:
            self._advance_schedules()

    def _handle(self, done):
        peer, what = done.user_cookie      # what: a slot, a read's (RecvOp, LMR, request id)
        #                                    or a window's RmaOp
        if done.status != DtoStatus.SUCCESS:
            if peer.gone is None:
                peer.gone = f"{done.operation.name} completed {done.status.name}"
                if not peer.closing:        # (one that finalized has not failed)
                    self.failed.append(peer.rank)
                self._free_bounces(peer)
                if self.schedules:          # (an agreement goes on without it: ulfm.py)
                    self._advance_schedules()
            if type(what) is RmaOp:
                self._end_rma(peer, what)  # never done: its waiter learns the peer has gone
            elif done.operation == DtoOp.RDMA_READ:
                peer.reads_in_flight -= 1
            return
        if done.operation == DtoOp.RECEIVE:
            self._on_receive(peer, what, done.transferred_length)
        elif done.operation == DtoOp.SEND:
            self._on_send_done(peer, what)
        elif type(what) is RmaOp:
            self._end_rma(peer, what)
            what.done = True
        else:
            self._on_read_done(peer, what)
        if self.schedules:
            self._advance_schedules()

    def _free_bounces(self, peer):
        """`peer` has gone: the sends to it in the bounce arena will never be read (else
        their blocks would stay taken for ever)."""
        for op in self.rendezvous.values():
            if op.dest == peer.rank and op.bounce is not None:
                self.bounce.free(*op.bounce)
                op.bounce = None
        peer.bounced = 0

    def _on_receive(self, peer, slot, length):
        base = slot * SLOT
        kind, comm, tag, seq, nbytes = HEADER.unpack_from(peer.recv_mv, base)
        if seq != peer.seq_in:
            raise MPIException(errors.ERR_INTERN, f"message {seq} from rank {peer.rank} where "
                               f"{peer.seq_in} was due")
        peer.seq_in += 1
        body = peer.recv_mv[base + HEADER.size:base + length]
        if kind == EAGER:
            self._arrive(peer.rank, comm, tag, nbytes, body, None)
        elif kind == RTS:
            rmr, request_id = RTS_BODY.unpack(body)
            self._arrive(peer.rank, comm, tag, nbytes, None, (RmrTriplet.unpack(rmr), request_id))
        elif kind == SYNC:
            self._arrive(peer.rank, comm, tag, nbytes, body[FIN_BODY.size:], None,
                         FIN_BODY.unpack_from(body)[0])
        elif kind == FIN:
            self._on_fin(FIN_BODY.unpack_from(body)[0], body[FIN_BODY.size:])
        elif kind == BYE:
            peer.closing = True
        elif kind == REVOKE:
            context, ids = REVOKE_HEAD.unpack_from(body)
            self.revoke(context, ids, struct.unpack_from(
                f"<{(len(body) - REVOKE_HEAD.size) // 4}i", body, REVOKE_HEAD.size))
        else:                      # a window's message: its request id, then the window's body
            self.windows[comm].on_message(kind, peer.rank, FIN_BODY.unpack_from(body)[0],
                                          body[FIN_BODY.size:])
        self._repost(peer, slot)

    def _arrive(self, source, comm, tag, nbytes, payload, rts, ack=None):
        """A message has come: to the oldest matching posted receive, else unexpected (an
        eager payload copied out of its slot). `ack`: a synchronous send's request id."""
        op = self.matcher.take_posted(comm, source, tag)
        if op is None:
            if comm in self.revoked or self.closing and (rts is not None or ack is not None):
                # Nothing will match it: dropped, its sender told if it waits on it.
                if rts is not None or ack is not None:
                    self.answer(source, ack if rts is None else rts[1])
                return
            self.matcher.unexpected.append(
                Message(source, comm, tag, nbytes, None if rts else bytes(payload), rts, ack))
        elif rts is None:
            self._deliver(op, source, tag, nbytes, payload)
            if ack is not None:
                self.answer(source, ack)
        else:
            self._start_read(self.peers[source], Message(source, comm, tag, nbytes, rts=rts), op)

    def _deliver(self, op, source, tag, nbytes, payload):
        op.source, op.tag, op.nbytes = source, tag, nbytes
        if op.buf is None:
            op.data = bytes(payload)
        elif nbytes > len(op.buf):
            op.error = errors.ERR_TRUNCATE
            op.buf[:] = payload[:len(op.buf)]
        else:
            op.buf[:nbytes] = payload
        op.done = True

    def _start_read(self, peer, msg, op):
        """A matched RTS: read the data once the peer has room for another RDMA read."""
        op.source, op.tag, op.nbytes = msg.source, msg.tag, msg.length
        if op.buf is None:
            op.data = bytearray(msg.length)       # an object receive: its pickle
            op.buf = memoryview(op.data)
        peer.reads.append((msg, op))
        self._post_reads(peer)

    def _post_reads(self, peer):
        while peer.reads and peer.reads_in_flight < MAX_READS and not peer.gone:
            msg, op = peer.reads.popleft()
            rmr, request_id = msg.rts
            if msg.length > len(op.buf):
                # Truncated: the data is not read, but the sender must still hear FIN.
                op.error, op.done = errors.ERR_TRUNCATE, True
                self._post_control(peer, FIN, FIN_BODY.pack(request_id))
                continue
            lmr = self.cache.get(op.buf[:msg.length], RECV_PRIVILEGES)
            peer.reads_in_flight += 1
            peer.ep.post_rdma_read([lmr.triplet(0, msg.length)], (peer, (op, lmr, request_id)),
                                   rmr)

    def _on_read_done(self, peer, read):
        op, lmr, request_id = read
        self.cache.release(lmr)
        op.done = True
        peer.reads_in_flight -= 1
        self._post_control(peer, FIN, FIN_BODY.pack(request_id))
        self._post_reads(peer)

    def _on_send_done(self, peer, slot):
        peer.free_slots.append(slot)
        if peer.backlog:
            self._post(peer, *peer.backlog.popleft())

    def _post_control(self, peer, kind, body):
        """A FIN or BYE: posted now if a slot is free, else when one frees (progress never
        blocks)."""
        if peer.free_slots:
            self._post(peer, kind, 0, 0, 0, body)
        else:
            peer.backlog.append((kind, 0, 0, 0, body))

    def _post(self, peer, kind, comm, tag, nbytes, body):
        if peer.gone:
            return
        slot = peer.free_slots.pop()
        base = slot * SLOT
        HEADER.pack_into(peer.send_mv, base, kind, comm, tag, peer.seq_out, nbytes)
        peer.seq_out += 1
        end = base + HEADER.size + len(body)
        peer.send_mv[base + HEADER.size:end] = body
        peer.ep.post_send([_tuple_new(LmrTriplet, (peer.send_context, peer.send_address + base, end - base))],
                          peer.send_cookies[slot])

    def _repost(self, peer, slot):
        if peer.gone is None:
            peer.ep.post_recv(peer.recv_iovs[slot], peer.recv_cookies[slot])
