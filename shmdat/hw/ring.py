"""The hardware's data path: a connection is a shared segment holding two
single-producer, single-consumer rings (one each way), and a QueuePair moves
send/receive messages through them and RDMA straight into a peer's memory.

It knows cells, words and byte copies; nothing of DAT. Work requests are
opaque objects with a few fields; completions go to a sink the driver gives.

Memory ordering: the payload of a record is written before the head index that
publishes it, and a consumer reads the head before the payload. Each index is
one aligned 8-byte store through a ``memoryview.cast('Q')`` (``struct.pack_into``
zeroes the target before it writes, so a peer could see a transient 0). This
relies on x86-64 keeping stores in order and loads in order (TSO).

Record layout (a record is whole 64-byte cells and never wraps; a PAD record
fills the end of the ring when the next record would not fit):

    word 0: kind (bits 0-7) | flags (bits 8-15) | payload length (bits 32-63)
    word 1: aux: the whole message length (MSG, RDV; with F_IMM the immediate
            data in bits 32-63) or the cells to skip (PAD)
    bytes 16..: payload

A message is a MSG record followed by FRAG records when it is larger than a
chunk; or, when the source memory is reachable by the peer, a single RDV record
listing the source segments, which the receiver copies from directly: one copy.

When a send completes: a message copied into the ring completes as soon as it
is wholly there (eager, as MPI does for small messages: the sender need not
wait for the receiver to run); a rendezvous message completes once the
receiver has copied it, since until then the receiver reads the sender's
buffer. A message stays in the ring until a receive is posted for it, and a
full ring holds later sends back: a slow receiver slows its sender.

The driver may ask for other behaviours, per QueuePair:

- `acked` (a reliable connection): a send completes once the receiver has
  consumed it (its acknowledgement), or, when copied into the ring, once it
  is wholly there if the receiver's credits cover it. A receiver may publish
  its credits (publish_credits): the receives it has made available to this
  connection's messages, a running total; the sender numbers the messages it
  begins, and message n has a receive waiting for it once the credits reach
  n, so it needs no ack (a receiver that does not run cannot give one). The
  sender compares at the send and again in poll_send. A rendezvous message
  still waits to be consumed (the receiver reads the sender's buffer), and so
  does a message the sender has asked the receiver to drop (below): the
  receiver alone decides its fate. A side that closes or breaks the
  connection takes its credits back to the peer's messages it has begun
  taking (set_state).
  A receiver with no receive for the
  message at the head of its ring refuses it with a "not ready" NAK word in
  the header (and the delay the sender is to wait), and leaves it there; the
  sender measures time and, after `rnr_retry` delays (never when rnr_retry
  is None), asks the receiver to drop it (its abandon word). The receiver
  alone decides: it either took the message first (the send completes) or
  drops it and says so (NAK DROPPED: the send completes with NOT_READY), so
  the two sides never disagree about a message. A message longer than
  its receive, or taken by a receive that failed its local checks, is refused
  likewise (NAK INVALID or REMOTE_OP) and the receiver breaks the connection;
  the sender learns which send it was from the NAK, unless the send had
  completed on the credits: then it sees only the broken connection.
- `drops` (unreliable): a message with no receive is consumed and lost, a
  send that finds no room in the ring is lost (completing at once), and an
  RDMA the peer does not allow is lost without an error.
- `datagram_key` (datagrams, one connection per sender and receiver): each
  message begins with a DATAGRAM_HEADER (datagram_header(key)) and is lost
  unless its key is the receiver's; the receive gets what follows the header.

A side that breaks the connection because of the other's request writes why
in its fault word first (FAULT_ACCESS, FAULT_INVALID), so the other side can
tell a remote access violation from a plain break. A side may publish the
remote access it allows (publish_access); RDMA beyond it is REMOTE_INVALID.
"""

import collections
import ctypes
import os
import time

from . import cma
from .errors import LayoutMismatch, RingCorrupt
from .layout import (
    ACCESS_PUBLISHED, CELL, CHUNK, CONN_HEADER_BYTES as HEADER_BYTES, CONN_MAGIC, CONN_W_ABANDON as W_ABANDON,
    CONN_W_ACCESS as W_ACCESS, CONN_W_CAN_READ as W_CAN_READ, CONN_W_CREDITS as W_CREDITS,
    CONN_W_FAULT as W_FAULT, CONN_W_HEAD as W_HEAD, CONN_W_LAYOUT as W_LAYOUT, CONN_W_MAGIC as W_MAGIC,
    CONN_W_NAK as W_NAK, CONN_W_NAK_DELAY as W_NAK_DELAY, CONN_W_NCELLS as W_NCELLS,
    CONN_W_POSTED as W_POSTED, CONN_W_PROBE_ADDR as W_PROBE_ADDR, CONN_W_PROBE_VALUE as W_PROBE_VALUE,
    CONN_W_STATE as W_STATE, CONN_W_TAIL as W_TAIL, DATAGRAM_HEADER, F_IMM, F_SOLICITED, F_WRITE_NOTICE,
    FAULT_ACCESS, FAULT_INVALID, HDR, K_FRAG, K_MSG, K_PAD, K_RDV, K_WRITTEN, LAYOUT_VERSION, LENGTH_MASK,
    NAK_DROPPED, NAK_INVALID, NAK_NOT_READY, NAK_REMOTE_OP, POSTED_ENTRIES, PRIV_REMOTE_ATOMIC,
    PRIV_REMOTE_READ, PRIV_REMOTE_WRITE, S_BROKEN, S_CLOSED, S_UP)
from .shm import Segment

# Work-request operations.
OP_SEND, OP_RDMA_WRITE, OP_RDMA_READ, OP_FETCH_ADD, OP_CMP_SWAP = 0, 1, 2, 3, 4
UNCOVERED = 1 << 64                      # a WorkRequest.msg no credit count reaches
UNBOUNDED = 1 << 62                      # poll_recv's receives when the driver does not know them

# Completion statuses: the hardware's own numbers (WorkRequest.status), which a driver translates
# into its API's (shmdat.verbs: ibv_wc_status). OK is 0, so a status is true when the WR failed.
OK = 0
FLUSHED = 1                 # the connection went down (or the driver flushed the WR) before it was done
LENGTH = 2                  # the message is longer than the receive that took it
LOCAL_PROTECTION = 3        # a local SGE the registration table does not allow
REMOTE_ACCESS = 4           # RDMA outside the peer's registration, or the peer broke on our access
# Only on acked connections, and for published access: the receiver refused the request
# as invalid, could not carry it out, or had no receive for it until the sender gave up.
REMOTE_INVALID = 5
REMOTE_OP = 6
NOT_READY = 7
LOCAL_OPERATION = 8         # a WR its connection does not carry (the driver sets it at post)
_NAK_STATUS = {NAK_INVALID: REMOTE_INVALID, NAK_REMOTE_OP: REMOTE_OP}

RING_BYTES = int(os.environ.get("SHMDAT_RING_KIB", "256")) * 1024
RDV_THRESHOLD = int(os.environ.get("SHMDAT_RDV_BYTES", str(32 * 1024)))


class Sge:
    """A scatter/gather element: `view` (exact bytes), its virtual address, and
    where it lives: (seg_id, offset) in one of our shared segments, or seg_id 0
    for private memory."""
    __slots__ = ("view", "addr", "seg", "segoff")

    def __init__(self, view, addr, seg, segoff):
        self.view, self.addr, self.seg, self.segoff = view, addr, seg, segoff


class WorkRequest:
    """A send-queue or receive-queue entry. `ctx` belongs to the driver.

    The fields most requests leave alone have their defaults on the class, so that
    making one (once per post) sets six."""
    end = 0             # send: complete once the peer's tail reaches this (0: complete now)
    status = OK
    done = 0            # bytes placed (receive) or queued (send)
    solicited = False
    imm = None          # 32 bits of immediate data sent, or received (None: none)
    write_len = None    # receive: the length of the RDMA write its immediate data ends
    written = False     # RDMA write with immediate data: the copy is done, the notice not yet
    compare_add = swap = 0      # atomics: the operands
    start = -1          # send: the ring position of its first record
    msg = UNCOVERED     # acked send copied into the ring: its message number (1, 2...)

    def __init__(self, op, sges, length, remote=None, flags=0, ctx=None):
        self.op, self.sges, self.length, self.remote, self.flags, self.ctx = op, sges, length, remote, flags, ctx


_LOST = object()        # the ctx of a stand-in receive for a message that `drops` loses


def datagram_header(key):
    return key.to_bytes(4, "little") + bytes(4)


def connection_bytes(ring_bytes=RING_BYTES):
    return HEADER_BYTES + 2 * ring_bytes


def create_connection_segment(name, ring_bytes=RING_BYTES):
    seg = Segment.create(name, connection_bytes(ring_bytes), "a connection's rings")
    w = seg.words
    w[W_NCELLS] = ring_bytes // CELL
    w[W_STATE[0]] = S_UP
    w[W_LAYOUT] = LAYOUT_VERSION
    w[W_MAGIC] = CONN_MAGIC
    return seg


def open_connection_segment(name):
    seg = Segment.open(name)
    w = seg.words
    if (seg.size < HEADER_BYTES or w[W_MAGIC] != CONN_MAGIC
            or seg.size != connection_bytes(w[W_NCELLS] * CELL)
            or w[W_NCELLS] & (w[W_NCELLS] - 1)):
        seg.close()
        raise RingCorrupt(f"{name} is not a shmdat connection")
    version = w[W_LAYOUT]
    if version != LAYOUT_VERSION:
        seg.close()
        raise LayoutMismatch(f"{name}: layout version {version}, ours {LAYOUT_VERSION}")
    return seg


def _spans(sges, pos, n):
    """(sge, offset in it, count) pieces covering bytes [pos, pos+n) of the sges laid end to end."""
    out = []
    for s in sges:
        size = len(s.view)
        if pos >= size:
            pos -= size
            continue
        take = min(size - pos, n)
        out.append((s, pos, take))
        n -= take
        pos = 0
        if not n:
            break
    return out


def gather(sges, pos, dst, n):
    """Copy bytes [pos, pos+n) of the sges into memoryview dst[:n]."""
    if len(sges) == 1:
        dst[:n] = sges[0].view[pos:pos + n]
        return
    o = 0
    for s, off, take in _spans(sges, pos, n):
        dst[o:o + take] = s.view[off:off + take]
        o += take


def scatter(sges, pos, src, n):
    """Copy memoryview src[:n] into bytes [pos, pos+n) of the sges."""
    if len(sges) == 1:
        sges[0].view[pos:pos + n] = src[:n]
        return
    o = 0
    for s, off, take in _spans(sges, pos, n):
        s.view[off:off + take] = src[o:o + take]
        o += take


def _copy_in(sges, src, n):
    """Copy memoryview src (n bytes) to the start of the sges (scatter at 0, with the
    one-SGE case in one assignment)."""
    if len(sges) == 1:
        view = sges[0].view
        (view if n == len(view) else view[:n])[:] = src
    else:
        scatter(sges, 0, src, n)


def _address(buf):
    """The address of a bytearray's bytes (for cross-memory attach)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def address_pairs(sges, pos, n):
    """(address, length) pairs covering bytes [pos, pos+n) of the sges, for CMA."""
    return [(s.addr + off, take) for s, off, take in _spans(sges, pos, n)]


class SharedRecvQueue:
    """Receive WRs that several QueuePairs of this process take from, in posting order.

    A QueuePair gets `take` as its take_recv; `on_take(remaining)` lets the driver
    watch the level (for the low watermark) as each buffer leaves.
    """

    def __init__(self, on_take=None):
        self.q = collections.deque()
        self.on_take = on_take

    def __len__(self):
        return len(self.q)

    def post(self, wr):
        self.q.append(wr)

    def take(self):
        q = self.q
        if not q:
            return None
        wr = q.popleft()
        if self.on_take is not None:
            self.on_take(len(q))
        return wr

    def drain(self):
        out = list(self.q)
        self.q.clear()
        return out


class QueuePair:
    """One end of a connection: our send ring, our receive ring, and RDMA to the peer.

    sink.send_done(wr) and sink.recv_done(wr) are called as work completes, in
    order; take_recv() gives the next receive WR (from the EP or an SRQ) or None.
    """

    def __init__(self, segment, side, peer, sink, take_recv):
        self.segment = segment
        self.side = side
        self.peer = peer                     # RemoteHca
        self.sink = sink
        self.take_recv = take_recv
        w = self.words = segment.words
        self.buf = segment.buf
        ncells = w[W_NCELLS]
        self.mask = ncells - 1
        self.ncells = ncells
        ring_bytes = ncells * CELL
        self.tx_base = HEADER_BYTES + side * ring_bytes
        self.rx_base = HEADER_BYTES + (1 - side) * ring_bytes
        self.w_my_state, self.w_peer_state = W_STATE[side], W_STATE[1 - side]
        self.w_tx_head, self.w_tx_tail = W_HEAD[side], W_TAIL[side]
        self.w_rx_head, self.w_rx_tail = W_HEAD[1 - side], W_TAIL[1 - side]
        self.tx_head = w[self.w_tx_head]
        self.tx_tail = w[self.w_tx_tail]
        self.rx_tail = w[self.w_rx_tail]
        self.rx_head = self.rx_tail
        self.chunk = min(CHUNK, ring_bytes // 4 - HDR)
        self.sq = collections.deque()        # posted, not yet wholly in the ring (or not yet done)
        self.inflight = collections.deque()  # in the ring or done, awaiting completion in order
        self.rx_cur = None                   # receive WR being filled by a fragmented message
        self.rx_total = 0
        self.rx_discard = False              # the current message is too long for its receive
        self.msn = 0                         # messages begun from the peer (recv_query's MSN)
        self.tx_msgs = 0                     # messages we began (each takes a receive at the peer)
        self.last_large = -1                 # the msn of the last message that came by rendezvous or written
        self._probe = None
        self.acked = False                   # the driver's choices: see the module docstring
        self.drops = False
        self.rnr_retry = None                # acked sender: give a send up after this many delays
        self.rnr_delay_us = 0                # acked receiver: the delay its NOT_READY NAKs ask for
        self.datagram_key = None             # datagrams: the key a message must carry to be received
        self.w_my_nak, self.w_peer_nak = W_NAK[side], W_NAK[1 - side]
        self.w_peer_credits = W_CREDITS[1 - side]
        self.w_my_posted, self.w_peer_posted = W_POSTED[side], W_POSTED[1 - side]
        self._nak_seen = w[self.w_peer_nak]  # the peer's last NAK word looked at
        self._rnr_wr = None                  # the send a NOT_READY NAK holds, and when to give it up
        self._rnr_give_up = None
        self._not_ready_at = -1              # receiver: the ring position it last NAKed as not ready
        w[self.w_my_state] = S_UP

    # State.

    def peer_state(self):
        return self.words[self.w_peer_state]

    def set_state(self, state):
        """Tell the peer we closed (S_CLOSED) or found the connection broken (S_BROKEN).
        The credits we published go back to the messages we began: no later send of
        the peer's is taken, so none is to complete on them."""
        w = self.words
        if w[self.w_my_state] == S_UP:
            credits = W_CREDITS[self.side]
            w[credits] = min(w[credits], self.msn)
            w[self.w_my_state] = state
        self.peer.ring()

    def close(self):
        self.segment.close()

    def fault(self, why):
        """Tell the peer why we break the connection (FAULT_*), before set_state(S_BROKEN)."""
        self.words[W_FAULT[self.side]] = why

    def peer_fault(self):
        """Why the peer broke the connection (FAULT_*), or 0."""
        return self.words[W_FAULT[1 - self.side]]

    def publish_credits(self, total):
        """The receives (a running total since the connection began) this side has made
        available to the peer's messages: an acked sender completes a message they
        cover as soon as it is wholly in the ring."""
        self.words[W_CREDITS[self.side]] = total

    def publish_receive(self, number, seg, segoff, length):
        """Where the receive numbered `number` in the running total of publish_credits lies
        (`length` bytes at `segoff` of our shared segment `seg`), before the credits that
        count it go out: an acked sender may then write a message into it (send_written)."""
        w = self.words
        o = self.w_my_posted + 4 * (number % POSTED_ENTRIES)
        w[o] = 0                                # first: a reader meanwhile finds no whole entry
        w[o + 1], w[o + 2], w[o + 3] = seg, segoff, length
        w[o] = number

    def publish_access(self, priv):
        """The remote access (PRIV_* bits) the peer's RDMA may use through this connection."""
        self.words[W_ACCESS[self.side]] = ACCESS_PUBLISHED | priv

    # Cross-memory-attach probe: can this side read the peer's private memory?

    def publish_probe(self, probe_array):
        """Offer the peer an 8-byte word of our private memory to test CMA with."""
        self._probe = probe_array           # keep it alive for the peer's probe
        w = self.words
        w[W_PROBE_VALUE[self.side]] = int(probe_array[0])
        w[W_PROBE_ADDR[self.side]] = probe_array.ctypes.data

    def run_probe(self, scratch):
        """Try to read the peer's probe word; publish whether it worked."""
        w, other = self.words, 1 - self.side
        addr = w[W_PROBE_ADDR[other]]
        if not addr or w[W_CAN_READ[self.side]]:
            return
        try:
            cma.read(self.peer.pid, [(scratch.ctypes.data, 8)], [(addr, 8)])
            ok = int(scratch[0]) == w[W_PROBE_VALUE[other]]
        except cma.CmaError:
            ok = False
        w[W_CAN_READ[self.side]] = 2 if ok else 1

    def peer_can_read_me(self):
        return self.words[W_CAN_READ[1 - self.side]] == 2

    # Send side.

    def post_send(self, wr):
        """Queue a send-queue WR and start it at once if nothing is ahead of it; if it
        is then done (RDMA, an eager send, an acked one the credits cover), it
        completes now, as a NIC completes it while the program goes on."""
        sq = self.sq
        if not sq and wr.op == OP_SEND and self._push_send(wr):
            self.inflight.append(wr)            # the common case: straight into the ring
        else:
            sq.append(wr)
            if len(sq) == 1:
                self.advance_sq()
        if self.inflight:
            self._complete_done(self.tx_tail)

    def send_eager(self, view, length, solicited):
        """The driver's fast lane for the commonest send, when nothing is queued or in
        flight: a message of one record (`view`, `length` bytes), copied into the ring
        now and complete at once: in the ring, and covered by the peer's credits if
        the connection is acked. True if so; False when it would not be (more than a
        chunk, not covered, no room): the driver then posts a WorkRequest, which does
        the same and the rest."""
        if length > self.chunk or (self.acked and self.tx_msgs >= self.words[self.w_peer_credits]):
            return False
        off = self._reserve(length)
        if off < 0:
            return False
        if length:
            self.buf[off + HDR:off + HDR + length] = view
        self.tx_msgs += 1
        self._publish(off, K_MSG, F_SOLICITED if solicited else 0, length, length)
        self.peer.ring()
        return True

    def send_written(self, view, length, solicited):
        """The driver's lane for a send of RDV_THRESHOLD bytes or more, when nothing is
        queued or in flight: if the receive it will take is covered by the peer's credits
        and published (publish_receive) with room for it, the message (`view`, `length`
        bytes) is copied straight into that receive and a K_WRITTEN record tells the peer
        where: complete at once, as an eager send the credits cover. False, with nothing
        done, otherwise (the driver then sends it as a rendezvous)."""
        k = self.tx_msgs + 1
        w = self.words
        if length < RDV_THRESHOLD or not self.acked or k > w[self.w_peer_credits]:
            return False
        o = self.w_peer_posted + 4 * (k % POSTED_ENTRIES)
        if w[o] != k:                           # (the number first: the entry is whole)
            return False
        seg, where, room = w[o + 1], w[o + 2], w[o + 3]
        if room < length or w[o] != k:          # (and again: not rewritten meanwhile)
            return False
        dst = self.peer.segment_view(seg)
        if dst is None or where + length > len(dst):
            return False
        off = self._reserve(16)
        if off < 0:
            return False
        dst[where:where + length] = view
        p = (off + HDR) >> 3
        w[p], w[p + 1] = seg, where
        self.tx_msgs = k
        self._publish(off, K_WRITTEN, F_SOLICITED if solicited else 0, 16, length)
        self.peer.ring()
        return True

    def send_rendezvous(self, wr):
        """The driver's fast lane for a send of RDV_THRESHOLD bytes or more that the peer can
        read, when nothing is queued or in flight: its rendezvous record goes in now, and
        the send is in flight until the peer has read it. True if so; False, with nothing
        done, when it is not such a send or the ring has no room (the driver then posts it
        with post_send)."""
        if wr.length < RDV_THRESHOLD or not self._can_rendezvous(wr.sges) \
                or not self._push_rendezvous(wr, F_SOLICITED if wr.solicited else 0, wr.length):
            return False
        self.inflight.append(wr)
        return True

    def rdma_now(self, wr, write):
        """An RDMA write or read carried out now: the driver's fast lane, when nothing is
        queued or in flight before it (post_send does the same in order). Sets
        wr.status (and wr.done); the driver completes it."""
        self._rdma(wr, write)

    def advance_sq(self):
        """Move queued WRs into the ring (sends) or carry them out (RDMA), in order."""
        sq = self.sq
        while sq:
            wr = sq[0]
            if wr.op == OP_SEND:
                if not self._push_send(wr) and (not self.drops or wr.done):
                    return                      # (unless nothing went in and it may be lost)
            elif wr.op == OP_RDMA_WRITE:
                if wr.imm is None:
                    self._rdma(wr, write=True)
                elif not self._write_with_imm(wr):
                    return
            elif wr.op == OP_RDMA_READ:
                self._rdma(wr, write=False)
            else:
                self._atomic(wr)
            sq.popleft()
            self.inflight.append(wr)

    def poll_send(self):
        """Move queued sends on as the peer frees ring space, and complete, in order,
        the WRs that are done (RDMA, eager sends), consumed (rendezvous and acked
        sends), or covered by the peer's credits (acked sends copied into the ring)."""
        inflight = self.inflight
        if not inflight and not self.sq:
            return
        tail = self.words[self.w_tx_tail]
        if tail != self.tx_tail:
            if not 0 <= self.tx_head - tail <= self.ncells:
                raise RingCorrupt(f"the peer moved our ring's tail to {tail}, head is {self.tx_head}")
            self.tx_tail = tail
        if self.sq:
            self.advance_sq()
        self._complete_done(tail)
        if inflight and (self._rnr_wr is not None or self.words[self.w_peer_nak] != self._nak_seen):
            self._not_ready(inflight[0], tail)

    def _complete_done(self, tail):
        """Complete, in order, the in-flight WRs done by the time the peer's tail reached
        `tail` (or its credits cover)."""
        inflight = self.inflight
        credits = self.words[self.w_peer_credits]
        send_done = self.sink.send_done
        while inflight and (inflight[0].end <= tail or inflight[0].msg <= credits):
            send_done(inflight.popleft())

    def _not_ready(self, wr, tail):
        """The peer NAKed a message as not ready: give its send up once rnr_retry of the
        delays the peer asked for have passed (never if rnr_retry is None), unless the
        peer has taken it by then."""
        w = self.words
        nak = self._nak_seen = w[self.w_peer_nak]
        if nak >> 8 != wr.start + 1 or nak & 0xFF not in (NAK_NOT_READY, NAK_DROPPED) or tail > wr.start:
            self._rnr_wr = None
            return
        if nak & 0xFF == NAK_DROPPED:               # the peer dropped it as we asked
            self._rnr_wr = None
            self.inflight.popleft()
            wr.status = NOT_READY
            self.sink.send_done(wr)
            return
        now = time.monotonic()
        if self._rnr_wr is not wr:
            self._rnr_wr = wr
            delay = w[W_NAK_DELAY[1 - self.side]] / 1e6
            self._rnr_give_up = None if self.rnr_retry is None else now + self.rnr_retry * delay
        if self._rnr_give_up is not None and now >= self._rnr_give_up and w[W_ABANDON[self.side]] != wr.start + 1:
            wr.msg = UNCOVERED                          # from now on credits do not complete it:
            w[W_ABANDON[self.side]] = wr.start + 1     # the peer takes it or drops it and says which
            self.peer.ring()

    def refused_send(self):
        """The send the peer refused as invalid or could not carry out, taken off the
        in-flight queue with its status set; or None."""
        nak = self.words[self.w_peer_nak]
        status = _NAK_STATUS.get(nak & 0xFF)
        if status is None or not self.inflight or self.inflight[0].start + 1 != nak >> 8:
            return None
        wr = self.inflight.popleft()
        wr.status = status
        return wr

    def _reserve(self, payload):
        """Ring offset (bytes) for a record with `payload` bytes, or -1 if there is no room."""
        need = (HDR + payload + CELL - 1) // CELL
        head = self.tx_head
        pos = head & self.mask
        ncells = self.ncells
        if pos + need <= ncells and head + need - self.tx_tail <= ncells:
            return self.tx_base + pos * CELL    # the common case: room, and no wrap
        pad = ncells - pos if pos + need > ncells else 0
        if head + pad + need - self.tx_tail > ncells:
            self.tx_tail = self.words[self.w_tx_tail]
            if head + pad + need - self.tx_tail > ncells:
                return -1
        if pad:
            w0 = (self.tx_base + pos * CELL) >> 3
            self.words[w0] = K_PAD
            self.words[w0 + 1] = pad
            self.tx_head = head + pad
            pos = 0
        return self.tx_base + pos * CELL

    def _publish(self, off, kind, flags, payload, aux):
        w = self.words
        w0 = off >> 3
        w[w0] = kind | flags << 8 | payload << 32
        w[w0 + 1] = aux
        head = self.tx_head = self.tx_head + (HDR + payload + CELL - 1) // CELL
        w[self.w_tx_head] = head            # last: publishes the record (and any PAD)

    def _push_send(self, wr):
        """Put as much of a send into the ring as fits. True once all of it is in."""
        length = aux = wr.length
        flags = F_SOLICITED if wr.solicited else 0
        if wr.imm is not None:
            flags |= F_IMM
            aux |= wr.imm << 32
        done = entered = wr.done
        if done == 0 and length >= RDV_THRESHOLD and self._can_rendezvous(wr.sges):
            return self._push_rendezvous(wr, flags, aux)
        buf, sges, chunk = self.buf, wr.sges, self.chunk
        while True:
            n = length - done
            if n > chunk:
                n = chunk
            off = self._reserve(n)
            if off < 0:
                if done != entered:
                    self.peer.ring()    # the fragments that went in: the peer frees room for the rest
                return False
            if n:
                if len(sges) == 1:
                    view = sges[0].view
                    buf[off + HDR:off + HDR + n] = view if n == len(view) else view[done:done + n]
                else:
                    gather(sges, done, buf[off + HDR:off + HDR + n], n)
            if done == 0:
                wr.start = self.tx_head             # (_begin_message, inline on the hot path)
                self.tx_msgs += 1
                self._publish(off, K_MSG, flags, n, aux)
            else:
                self._publish(off, K_FRAG, flags, n, length)
            done += n
            wr.done = done
            if done == length:
                self._in_ring(wr)
                return True

    def _write_with_imm(self, wr):
        """The RDMA write, then an empty MSG that consumes a receive at the peer and
        carries the immediate data and the write's length. False: no room yet."""
        if not wr.written:
            self._rdma(wr, write=True)
            wr.written = True
            if wr.status != OK:
                return True
        off = self._reserve(0)
        if off < 0:
            return False
        flags = F_IMM | F_WRITE_NOTICE | (F_SOLICITED if wr.solicited else 0)
        self._begin_message(wr)
        self._publish(off, K_MSG, flags, 0, wr.length | wr.imm << 32)
        self._in_ring(wr)
        return True

    def _begin_message(self, wr):
        """A message's first record goes in at the ring's head now."""
        wr.start = self.tx_head
        self.tx_msgs += 1

    def _in_ring(self, wr):
        """A message copied into the ring is wholly there: an acked one the peer's
        credits do not cover completes once the peer has consumed it (its ack)."""
        if self.acked:
            wr.msg = self.tx_msgs               # messages go in one at a time: this is its number
            if wr.msg > self.words[self.w_peer_credits]:
                wr.end = self.tx_head
        self.peer.ring()

    def all_consumed(self):
        """Whether the peer has consumed everything we put in the ring."""
        return self.words[self.w_tx_tail] == self.tx_head

    def _can_rendezvous(self, sges):
        """Whether the peer can read the sges: all in our shared segments, or by CMA."""
        for s in sges:              # (a loop: a generator costs more for the usual one SGE)
            if not s.seg:
                return self.peer_can_read_me()
        return True

    def _push_rendezvous(self, wr, flags, aux):
        n = 32 * len(wr.sges)
        off = self._reserve(n)
        if off < 0:
            return False
        w = self.words
        o = (off + HDR) >> 3
        for s in wr.sges:
            w[o], w[o + 1], w[o + 2], w[o + 3] = s.seg, (s.segoff if s.seg else s.addr), len(s.view), 0
            o += 4
        wr.done = wr.length
        self._begin_message(wr)
        self._publish(off, K_RDV, flags, n, aux)
        wr.end = self.tx_head
        self.peer.ring()
        return True

    def _refuse_access(self, wr, status=REMOTE_ACCESS):
        """An RDMA the peer does not allow: its status, and the fault the peer will read;
        on an unreliable connection it is just lost (nobody acks, nobody tells)."""
        if self.drops:
            return
        wr.status = status
        self.fault(FAULT_ACCESS if status == REMOTE_ACCESS else FAULT_INVALID)

    def _allowed(self, wr, need):
        """Whether the peer's published access lets this RDMA through (else refused)."""
        allowed = self.words[W_ACCESS[1 - self.side]]
        if allowed and not allowed & need:
            self._refuse_access(wr, REMOTE_INVALID)
            return False
        return True

    def _rdma(self, wr, write):
        """One-sided RDMA: check the peer's registration and copy. Sets wr.status."""
        key, addr, rlen = wr.remote
        need = PRIV_REMOTE_WRITE if write else PRIV_REMOTE_READ
        if not self._allowed(wr, need):
            return
        reg = self.peer.lookup(key)
        n = wr.length
        if (reg is None or not reg.priv & need or reg.pz != self.peer_pz
                or addr < reg.base or addr + n > reg.base + reg.length or n > rlen):
            self._refuse_access(wr)
            return
        try:
            if reg.kind == 1:
                view = self.peer.segment_view(reg.seg)
                start = reg.segoff + (addr - reg.base)
                if view is None or start + n > len(view):
                    self._refuse_access(wr)
                    return
                if write:
                    gather(wr.sges, 0, view[start:start + n], n)
                else:
                    scatter(wr.sges, 0, view[start:start + n], n)
            else:
                pairs = address_pairs(wr.sges, 0, n)
                (cma.write if write else cma.read)(self.peer.pid, pairs, [(addr, n)])
        except cma.CmaError:
            self._refuse_access(wr)
            return
        wr.done = n

    def _atomic(self, wr):
        """An 8-byte fetch-and-add or compare-and-swap on an aligned word of the peer's
        memory, under the peer's atomic lock; the word's old value (little-endian,
        as the host holds it) goes to the local SGEs. Sets wr.status."""
        key, addr, _ = wr.remote
        if not self._allowed(wr, PRIV_REMOTE_ATOMIC):
            return
        reg = self.peer.lookup(key)
        if (reg is None or not reg.priv & PRIV_REMOTE_ATOMIC or reg.pz != self.peer_pz or addr % 8
                or addr < reg.base or addr + 8 > reg.base + reg.length or wr.length != 8):
            self._refuse_access(wr)
            return
        try:
            with self.peer.atomic_lock(addr):
                old = bytearray(8)
                if reg.kind == 1:
                    view = self.peer.segment_view(reg.seg)
                    start = reg.segoff + (addr - reg.base)
                    if view is None or start + 8 > len(view):
                        self._refuse_access(wr)
                        return
                    old[:] = view[start:start + 8]
                else:
                    cma.read(self.peer.pid, [(_address(old), 8)], [(addr, 8)])
                value = int.from_bytes(old, "little")
                if wr.op == OP_FETCH_ADD:
                    new = (value + wr.compare_add) & 0xFFFFFFFFFFFFFFFF
                else:
                    new = wr.swap if value == wr.compare_add else value
                if new != value:
                    data = bytearray(new.to_bytes(8, "little"))
                    if reg.kind == 1:
                        view[start:start + 8] = data
                    else:
                        cma.write(self.peer.pid, [(_address(data), 8)], [(addr, 8)])
        except cma.CmaError:
            self._refuse_access(wr)
            return
        scatter(wr.sges, 0, memoryview(old), 8)
        wr.done = 8

    peer_pz = 0        # the PZ id of the peer's EP, set by the driver at connection time

    # Receive side.

    def poll_recv(self, receives=UNBOUNDED):
        """Deliver what the peer has put in our receive ring into posted receives.

        Returns the number of records consumed. A message with no receive to go
        into waits in the ring (the peer's send stays incomplete; NAKed if acked),
        or is lost if `drops`. `receives`, when the driver knows it, is how many
        receives it holds for our messages: the look ends at a message of one
        record delivered once that many records were consumed (that many
        messages, commonly), rather than go on to one with no receive and NAK it:
        a receiver that reposts as it reaps would NAK every message of a stream.
        A look that finds no receive still NAKs.
        """
        w = self.words
        mask, ncells, base = self.mask, self.ncells, self.rx_base
        consumed = 0
        whole = None            # a message placed whole from its one record, to complete
        while True:
            tail = self.rx_tail
            if tail == self.rx_head:
                head = w[self.w_rx_head]
                if head == tail:
                    break
                if not 0 < head - tail <= ncells:
                    raise RingCorrupt(f"the peer set our receive ring's head to {head} with tail {tail}")
                self.rx_head = head
            pos = tail & mask
            off = base + pos * CELL
            w0 = w[off >> 3]
            kind = w0 & 0xFF
            length = w0 >> 32
            cells = (HDR + length + CELL - 1) // CELL
            if kind == K_PAD:
                cells = w[(off >> 3) + 1]
                if cells != ncells - pos:
                    raise RingCorrupt("a PAD record that does not end at the ring's end")
            elif pos + cells > ncells or tail + cells > self.rx_head:
                raise RingCorrupt(f"a record of {length} bytes runs past the ring or the head")
            elif kind == K_MSG or kind == K_RDV:
                if self.rx_cur is not None:
                    raise RingCorrupt("a new message began before the last one ended")
                skip = 0
                if tail == self._not_ready_at and w[W_ABANDON[1 - self.side]] == tail + 1:
                    self._nak(tail, NAK_DROPPED)        # the sender gave it up: never deliver it
                    break
                if self.datagram_key is None:
                    wr = self.take_recv()
                else:
                    key = w[(off + HDR) >> 3] & 0xFFFFFFFF if length >= DATAGRAM_HEADER and kind == K_MSG else None
                    skip = DATAGRAM_HEADER if key is not None else 0
                    wr = self.take_recv() if key == self.datagram_key else None
                if wr is not None and w0 & 0xFFFF == K_MSG and not skip and w[(off >> 3) + 1] == length \
                        and length <= wr.length and not wr.status:
                    # The commonest message (no flags, whole in this record, into a receive it
                    # fits): placed and consumed, then complete, in fewer steps than below.
                    self.msn += 1
                    if length:
                        _copy_in(wr.sges, self.buf[off + HDR:off + HDR + length], length)
                    wr.done = length
                    tail += cells
                    self.rx_tail = tail
                    w[self.w_rx_tail] = tail
                    consumed += 1
                    self.sink.recv_done(wr)
                    if consumed >= receives:
                        break
                    continue
                if wr is not None and w0 & 0xFFFF == K_RDV and not skip and not wr.status \
                        and w[(off >> 3) + 1] <= wr.length:
                    # A rendezvous with no flags into a receive it fits: read now and complete.
                    self.msn = self.last_large = self.msn + 1
                    self.rx_cur, self.rx_total, self.rx_discard = wr, w[(off >> 3) + 1], False
                    self._place_rendezvous(off + HDR, length)
                    self.rx_cur = None
                    tail += cells
                    self.rx_tail = tail
                    w[self.w_rx_tail] = tail
                    consumed += 1
                    self.sink.recv_done(wr)
                    if consumed >= receives:
                        break
                    continue
                if wr is None:
                    if not self.drops:
                        if self.acked:
                            self._nak(tail, NAK_NOT_READY)
                        break                   # receiver not ready: the message waits
                    wr = WorkRequest(OP_SEND, [], 0, ctx=_LOST)
                flags, aux = (w0 >> 8) & 0xFF, w[(off >> 3) + 1]
                total = aux & LENGTH_MASK
                if flags & (F_IMM | F_WRITE_NOTICE):
                    if flags & F_IMM:
                        wr.imm = aux >> 32
                    if flags & F_WRITE_NOTICE:
                        wr.write_len, total = total, 0      # nothing to place: the data was written already
                total -= skip                   # (a datagram's header: skip is 0 on acked rings)
                fits = total <= wr.length and not wr.status
                if self.acked and not fits:
                    self._refuse(wr, tail)
                    break
                self.msn += 1
                if flags & F_SOLICITED:
                    wr.solicited = True
                if not fits and wr.status == OK:
                    wr.status = LENGTH
                if kind == K_MSG and length - skip == total:
                    # A whole message otherwise (flags, a datagram, not fitting): complete below.
                    if total and fits:
                        _copy_in(wr.sges, self.buf[off + HDR + skip:off + HDR + length], total)
                    wr.done = total
                    whole = wr
                else:
                    wr.done = 0
                    self.rx_cur, self.rx_total, self.rx_discard = wr, total, not fits
                    if kind == K_MSG:
                        self._place(off + HDR + skip, length - skip)
                    else:
                        self.last_large = self.msn
                        self._place_rendezvous(off + HDR, length)
            elif kind == K_WRITTEN:
                # The sender wrote the message into the receive we published for it
                # (send_written): the receive it takes must be that one, with room.
                if self.rx_cur is not None or length != 16 or not self.acked:
                    raise RingCorrupt("a K_WRITTEN record out of place")
                wr = self.take_recv()
                if wr is None:
                    self._nak(tail, NAK_NOT_READY)      # (receive credits ran out: the driver breaks)
                    break
                p = (off + HDR) >> 3
                total, s = w[(off >> 3) + 1] & LENGTH_MASK, wr.sges
                if wr.status or total > wr.length or len(s) != 1 or s[0].seg != w[p] or s[0].segoff != w[p + 1]:
                    if not wr.status and total <= wr.length:
                        wr.status = LOCAL_PROTECTION    # not where it was published: re-registered since
                    self._refuse(wr, tail)
                    break
                self.msn = self.last_large = self.msn + 1
                if w0 & F_SOLICITED << 8:
                    wr.solicited = True
                wr.done = total
                whole = wr                      # consumed and completed below, as a whole message
            elif kind == K_FRAG:
                if self.rx_cur is None:
                    raise RingCorrupt("a fragment with no message")
                self._place(off + HDR, length)
            else:
                raise RingCorrupt(f"unknown record kind {kind}")
            tail += cells
            self.rx_tail = tail
            w[self.w_rx_tail] = tail
            consumed += 1
            if whole is not None:
                if whole.ctx is not _LOST:
                    self.sink.recv_done(whole)
                whole = None
            else:
                cur = self.rx_cur
                if cur is not None and cur.done == self.rx_total:
                    self._finish()
        if consumed:
            self.peer.ring()
        return consumed

    def message_waits(self):
        """Whether the peer has put a record in our receive ring that we have not consumed
        (one word read: a driver may skip its poll_recv when not)."""
        return self.rx_tail != self.words[self.w_rx_head]

    def _nak(self, pos, reason):
        """Refuse the message at `pos` of our receive ring (written once per message and reason)."""
        nak = (pos + 1) << 8 | reason
        w = self.words
        if reason == NAK_NOT_READY:
            self._not_ready_at = pos
        if w[self.w_my_nak] != nak:
            w[W_NAK_DELAY[self.side]] = self.rnr_delay_us
            w[self.w_my_nak] = nak                  # last: the delay is there when the NAK shows
            self.peer.ring()

    def _refuse(self, wr, pos):
        """An acked message longer than its receive, or taken by a receive that failed its
        local checks: the receive completes in error, the message stays unconsumed, and
        the sender learns which it was (the driver then breaks the connection)."""
        self._nak(pos, NAK_INVALID if wr.status == OK else NAK_REMOTE_OP)
        if wr.status == OK:
            wr.status = LENGTH
        wr.done = 0
        self.sink.recv_done(wr)

    def _place(self, off, n):
        wr = self.rx_cur
        done = wr.done
        if done + n > self.rx_total:
            raise RingCorrupt("a message's fragments exceed its announced length")
        if n and not self.rx_discard:
            if done == 0:
                _copy_in(wr.sges, self.buf[off:off + n], n)
            else:
                scatter(wr.sges, done, self.buf[off:off + n], n)
        wr.done = done + n

    def _place_rendezvous(self, off, n):
        """Read into the current receive the segments of the sender's that the rendezvous
        record at `off` names (`n` bytes: 32 a segment)."""
        if n % 32 or n == 0:
            raise RingCorrupt("a rendezvous record of the wrong size")
        wr, w, total, pos = self.rx_cur, self.words, self.rx_total, 0
        for o in range(off >> 3, (off + n) >> 3, 4):
            seg, where, length = w[o], w[o + 1], w[o + 2]
            if pos + length > total:
                raise RingCorrupt("rendezvous segments exceed the message length")
            if length and not self.rx_discard:
                if seg:
                    view = self.peer.segment_view(seg)
                    if view is None or where + length > len(view):
                        raise RingCorrupt(f"rendezvous from a segment {seg} the peer does not have")
                    scatter(wr.sges, pos, view[where:where + length], length)
                else:
                    try:
                        cma.read(self.peer.pid, address_pairs(wr.sges, pos, length), [(where, length)])
                    except cma.CmaError as e:
                        raise RingCorrupt(f"rendezvous read from the peer failed: {e}") from None
            pos += length
        if pos != total:
            raise RingCorrupt("rendezvous segments do not add up to the message length")
        wr.done = pos

    def _finish(self):
        wr = self.rx_cur
        self.rx_cur = None
        if wr.ctx is not _LOST:
            self.sink.recv_done(wr)

    # Teardown.

    def drain(self):
        """Everything not completed, in order, for the driver to flush: (send WRs, current receive)."""
        pending = list(self.inflight) + list(self.sq)
        self.inflight.clear()
        self.sq.clear()
        cur, self.rx_cur = self.rx_cur, None
        return pending, cur
