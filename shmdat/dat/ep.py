"""Endpoints (dat_ep_*): DTO posting and completions, and the side effects of the
EP state machine, whose tables are in ep_state.py.

The EP drives a hardware QueuePair (hw/ring.py) once connected; cm.py runs the
connection handshake and fires the EP's events through ep_state.fire.
"""

import collections
import dataclasses

from . import ep_state, limits
from .args import (check_choice, check_conn_qual, check_flags, check_int, check_private_data,
                   check_rmr_triplet, check_timeout, expected)
from .constants import (AsyncReason, CloseFlags, CompletionFlags, ConnectFlags, DtoOp, DtoStatus,
                        EpState, EventNumber, EvdFlags, MemPriv, Qos, ServiceType, TIMEOUT_INFINITE,
                        WATERMARK_INFINITE)
from .errors import (InsufficientResources, InvalidHandle, InvalidState, LengthError,
                     ModelNotSupported, bad_arg)
from .evd import EVD
from .handle import Handle, check_handle
from ..hw import ring
from .lmr import resolve_iov
from .pz import PZ
from .values import AsyncError, ConnectionEvent, DtoCompletion, EpAttr, EpParam

S = EpState
V = ep_state.EpEvent
_POST_SEND_STATES = ep_state.ALLOWED["post_send"]     # bound once: post_send checks it every call

_DTO_EVENT = EventNumber.DTO_COMPLETION_EVENT
_STATUS = tuple(DtoStatus(i) for i in range(12))
_FLUSHED = ring.FLUSHED
_NOTIFY_OFF = CompletionFlags.SUPPRESS | CompletionFlags.UNSIGNALLED
_REQUEST_FLAGS = int(CompletionFlags.SUPPRESS | CompletionFlags.SOLICITED_WAIT
                     | CompletionFlags.UNSIGNALLED | CompletionFlags.BARRIER_FENCE)
_RECV_FLAGS = int(CompletionFlags.SUPPRESS | CompletionFlags.UNSIGNALLED)
# The hot path tests flags as plain ints: an IntFlag operation costs a Python call.
_SUPPRESS = int(CompletionFlags.SUPPRESS)
_UNSIGNALLED = int(CompletionFlags.UNSIGNALLED)
_SOLICITED = int(CompletionFlags.SOLICITED_WAIT)
_LOCAL_READ = int(MemPriv.LOCAL_READ)
_LOCAL_WRITE = int(MemPriv.LOCAL_WRITE)
_NOT_IN_ATTR_MODIFY = {"service_type"}
CF = CompletionFlags
DEFAULT_FLAGS = int(CF.DEFAULT)     # a plain int default: the flag check's fast path takes it
_QOS = int(Qos.BEST_EFFORT | Qos.HIGH_THROUGHPUT | Qos.LOW_LATENCY | Qos.ECONOMY | Qos.PREMIUM)
_CONNECT_FLAGS = int(ConnectFlags.DEFAULT | ConnectFlags.MULTIPATH_REQUESTED
                     | ConnectFlags.MULTIPATH_REQUIRED)


def check_ep_attr(attr, recv_evd, request_evd, srq=None):
    """The EpAttr an EP gets (a copy), checked against its EVDs.

    As DAT (and OFA's dapl) rule: a NULL request EVD goes with max_request_dtos 0,
    a NULL recv EVD with max_recv_dtos 0 (unless an SRQ supplies the receives),
    and an EVD with a queue of at least 1. attr=None takes the defaults, with 0
    for the queue of a NULL EVD.
    """
    recv_dtos_free = srq is not None       # the SRQ holds the receives: max_recv_dtos is moot
    if attr is None:
        attr = EpAttr()
        if request_evd is None:
            attr.max_request_dtos = 0
        if recv_evd is None and not recv_dtos_free:
            attr.max_recv_dtos = 0
    if not isinstance(attr, EpAttr):
        raise expected(6, "attr", "an EpAttr or None", attr)
    a = dataclasses.replace(attr)
    check_choice(a.service_type, 6, "EpAttr.service_type", (ServiceType.RC,))
    for name, top in (("max_message_size", limits.MAX_MESSAGE_SIZE),
                      ("max_rdma_size", limits.MAX_RDMA_SIZE),
                      ("max_recv_dtos", limits.MAX_DTO_PER_EP),
                      ("max_request_dtos", limits.MAX_DTO_PER_EP),
                      ("max_recv_iov", limits.MAX_IOV_SEGMENTS_PER_DTO),
                      ("max_request_iov", limits.MAX_IOV_SEGMENTS_PER_DTO),
                      ("max_rdma_read_in", limits.MAX_RDMA_READ_PER_EP),
                      ("max_rdma_read_out", limits.MAX_RDMA_READ_PER_EP)):
        low = 0 if name.startswith("max_rdma_read") or name.endswith("_dtos") else 1
        check_int(getattr(a, name), 6, f"EpAttr.{name}", low, top)
    for name, evd, exempt in (("max_request_dtos", request_evd, False),
                              ("max_recv_dtos", recv_evd, recv_dtos_free)):
        v = getattr(a, name)
        if not exempt and (evd is None) != (v == 0):
            which = name[4:-5]
            raise bad_arg(6, f"EpAttr.{name} is {v}, but the {which} EVD is "
                             f"{'NULL' if evd is None else 'not NULL'}: a NULL {which} EVD goes "
                             f"with {name} 0, an EVD with a queue of at least 1")
    rf = check_flags(a.recv_completion_flags, 6, "EpAttr.recv_completion_flags",
                     int(CF.UNSIGNALLED | CF.SOLICITED_WAIT | CF.EVD_THRESHOLD),
                     "DEFAULT, UNSIGNALLED, SOLICITED_WAIT or EVD_THRESHOLD")
    if rf & CF.EVD_THRESHOLD and rf & CF.UNSIGNALLED:
        raise bad_arg(6, "EVD_THRESHOLD and UNSIGNALLED exclude each other in recv_completion_flags")
    qf = check_flags(a.request_completion_flags, 6, "EpAttr.request_completion_flags",
                     int(CF.UNSIGNALLED | CF.EVD_THRESHOLD), "DEFAULT, UNSIGNALLED or EVD_THRESHOLD")
    check_flags(a.qos, 6, "EpAttr.qos", _QOS, "Qos flags")
    check_int(a.srq_soft_hw, 6, "EpAttr.srq_soft_hw", 0, WATERMARK_INFINITE)
    a.recv_completion_flags = CompletionFlags(rf)
    a.request_completion_flags = CompletionFlags(qf)
    return a


def check_evd(evd, flag, what, subtype, ia):
    """None, or a live EVD of `ia` created with `flag`."""
    check_handle(evd, EVD, what, subtype, allow_none=True, ia=ia)
    if evd is not None and not evd._flags & flag:
        raise InvalidHandle(f"{what} was not created with EvdFlags.{flag.name}", subtype=subtype)
    return evd


class EP(Handle):
    kind = "ep"

    def __init__(self, ia, pz, recv_evd, request_evd, connect_evd, attr, srq=None):
        super().__init__(ia)
        self._pz = pz
        self._recv_evd = recv_evd
        self._request_evd = request_evd
        self._connect_evd = connect_evd
        self._srq = srq
        self._attr = attr
        ep_state.start(self)
        self._recvq = collections.deque()   # posted receives not yet taken by a message
        self._qp = None                     # ring.QueuePair while connected
        self._peer = None                   # hca.RemoteHca of the peer
        self._conn = None                   # cm.Connection: the handshake's bookkeeping
        self.remote_ia_address = None
        self.remote_port_qual = None
        self.local_port_qual = None
        self._soft_hw = attr.srq_soft_hw        # armed unless WATERMARK_INFINITE (one-shot)
        self._hard_hw = WATERMARK_INFINITE
        self._hw_exceeded = False               # the hard watermark was passed: break at the next chance
        self._recv_solicited_only = bool(attr.recv_completion_flags & CompletionFlags.SOLICITED_WAIT)
        self._recv_unsignalled = bool(attr.recv_completion_flags & CompletionFlags.UNSIGNALLED)
        self._link()

    def _link(self):
        for evd in {self._recv_evd, self._request_evd, self._connect_evd} - {None}:
            evd._streams.append(self)
        self._pz._users.add(self)
        self._ia._eps.add(self)
        if self._srq is not None:
            self._srq._eps.add(self)
            self._srq._evds.add(self._recv_evd)

    def _unlink(self):
        for evd in {self._recv_evd, self._request_evd, self._connect_evd} - {None}:
            evd._streams.remove(self)
        self._pz._users.discard(self)
        self._ia._eps.discard(self)
        if self._srq is not None:
            self._srq._eps.discard(self)

    # The state machine (ep_state.py): consumer calls are checked, events fired, there.

    def _require(self, call, what=None):
        """InvalidState unless the consumer call `call` (a key of ep_state.ALLOWED) is
        legal in the EP's state; `what` names the call in the message."""
        ep_state.check_call(self._state, call, what)

    @property
    def state(self):
        """The EP's EpState (a shortcut for query().ep_state)."""
        with self._ia._progress.lock:
            self._check()
            self._ia._progress.poll()
            return self._state

    # Connection establishment (the handshake itself is in cm.py).

    def connect(self, remote_ia_address, remote_conn_qual, timeout=TIMEOUT_INFINITE,
                private_data=b"", qos=Qos.BEST_EFFORT, flags=ConnectFlags.DEFAULT):
        """dat_ep_connect: ask the PSP or RSP at (remote_ia_address, remote_conn_qual)
        for a connection. The outcome arrives on the connect EVD: ESTABLISHED (with the
        peer's private data), PEER_REJECTED, NON_PEER_REJECTED, TIMED_OUT or UNREACHABLE.

        Raises InvalidParameter (private data over max_private_data_size, bad timeout,
        qos or flags), InvalidAddress (not an IA address), InvalidState (EP not
        UNCONNECTED, or no connect EVD), ModelNotSupported (multipath required),
        InsufficientResources, InvalidHandle.
        """
        ia = self._ia
        with ia._progress.lock:
            self._check()
            seconds, private_data = self._check_connectable(timeout, private_data, qos, (4, 6, 7))
            check_conn_qual(remote_conn_qual, 3, "remote_conn_qual")
            if check_flags(flags, 8, "flags", _CONNECT_FLAGS, "ConnectFlags") & ConnectFlags.MULTIPATH_REQUIRED:
                raise ModelNotSupported("shared memory has one path; MULTIPATH_REQUIRED cannot be met")
            ia._cm.connect(self, remote_ia_address, remote_conn_qual, seconds, private_data)

    def dup_connect(self, dup_ep, timeout=TIMEOUT_INFINITE, private_data=b"", qos=Qos.BEST_EFFORT):
        """dat_ep_dup_connect: connect to the same remote service point as the connected
        `dup_ep`. Errors as for connect(); InvalidParameter if dup_ep is not connected."""
        ia = self._ia
        with ia._progress.lock:
            self._check()
            check_handle(dup_ep, EP, "dup_ep", "INVALID_HANDLE_EP")
            seconds, private_data = self._check_connectable(timeout, private_data, qos, (3, 5, 6))
            if dup_ep._state != S.CONNECTED or dup_ep.remote_port_qual is None:
                raise expected(2, "dup_ep", "a connected EP", dup_ep, f" in state {dup_ep._state.name}")
            ia._cm.connect(self, dup_ep.remote_ia_address, dup_ep.remote_port_qual, seconds, private_data)

    def _check_connectable(self, timeout, private_data, qos, positions):
        """The checks connect and dup_connect share -> (seconds, private data as bytes).
        `positions`: the DAT argument positions of timeout, private_data and qos."""
        self._require("connect")
        seconds = check_timeout(timeout, positions[0])
        private_data = check_private_data(private_data, positions[1])
        check_flags(qos, positions[2], "qos", _QOS, "Qos flags")
        if self._connect_evd is None:
            raise InvalidState("the EP has no connect EVD to report the connection on",
                               subtype="INVALID_STATE_EP_EVD_CONNECT")
        return seconds, private_data

    def _attach(self, qp, peer):
        """The handshake made a QueuePair: the EP now moves data."""
        self._qp = qp
        self._peer = peer
        qp.peer_pz = self._conn.peer_pz
        self._ia._active_eps.append(self)
        qp.advance_sq()

    # Disconnection.

    def disconnect(self, flags=CloseFlags.ABRUPT):
        """dat_ep_disconnect. ABRUPT: flush every outstanding DTO now. GRACEFUL: the EP is
        DISCONNECT_PENDING until its requests complete. A DISCONNECTED event follows
        on the connect EVD, and on the peer's.

        Raises InvalidParameter (flags), InvalidState (nothing to disconnect), InvalidHandle.
        """
        with self._ia._progress.lock:
            self._check()
            flags = check_choice(flags, 2, "flags", (CloseFlags.ABRUPT, CloseFlags.GRACEFUL))
            self._require("disconnect")
            ep_state.fire(self, V.DISCONNECT_GRACEFUL if flags == CloseFlags.GRACEFUL else V.DISCONNECT)

    def _break(self, why):
        """The connection is broken (peer died, corrupt ring, protection error, hard
        watermark); `why` is for the reader of the call."""
        ep_state.fire(self, V.BROKEN)

    # The side effects of the state machine's moves (ep_state.ACTIONS names them;
    # step 4 makes them verbs calls). Each tolerates an EP without a QueuePair.

    def _abandon_handshake(self):
        """Tell the passive side we give up a connection attempt still in flight."""
        self._ia._cm.abandon(self)

    def _send_disconnect(self):
        """Tell the peer we closed the connection."""
        if self._qp is not None:
            self._qp.set_state(ring.S_CLOSED)

    def _send_broken(self):
        """Tell the peer we found the connection broken."""
        if self._qp is not None:
            self._qp.set_state(ring.S_BROKEN)

    def _complete_received(self):
        """What the peer sent before it closed goes to the posted receives."""
        if self._qp is not None:
            try:
                self._qp.poll_recv()
            except ring.RingCorrupt:
                pass

    def _complete_sent(self):
        """What the peer consumed completes with success."""
        if self._qp is not None:
            try:
                self._qp.poll_send()
            except ring.RingCorrupt:
                pass

    def _flush_queue_pair(self):
        """Requests not consumed and the receive in progress complete FLUSHED; the
        QueuePair goes."""
        qp = self._qp
        if qp is None:
            return
        pending, cur = qp.drain()
        for wr in pending:
            if wr.status == ring.OK:
                wr.status = _FLUSHED
            self.send_done(wr)
        if cur is not None:
            cur.status = _FLUSHED
            self.recv_done(cur)
        qp.close()
        self._qp = None
        self._ia._active_eps.remove(self)

    def _flush_recvs(self):
        """Posted receives not taken by a message complete FLUSHED."""
        q = self._recvq
        while q:
            wr = q.popleft()
            wr.status = _FLUSHED
            self.recv_done(wr)

    def _forget_handshake(self):
        self._ia._cm.forget(self)

    def _clear_hard_watermark(self):
        self._hw_exceeded = False

    def _check_requests_drained(self):
        """A graceful disconnect completes once the peer has consumed all we sent."""
        qp = self._qp
        if qp is not None and not qp.sq and not qp.inflight and qp.all_consumed():
            ep_state.fire(self, V.REQUESTS_DRAINED)

    def _probe_peer_memory(self):
        if self._qp is not None:
            self._ia._cm.probe(self)

    def _post_ep_broken(self):
        self._ia._async_evd._post(EventNumber.ASYNC_ERROR_EP_BROKEN,
                                  AsyncError(self, AsyncReason.EP_TRANSFER_TO_ERROR))

    def _clear_addresses(self):
        self.remote_ia_address = self.remote_port_qual = self.local_port_qual = None

    def _post_connection_event(self, number, private_data):
        if self._connect_evd is not None:
            self._connect_evd._post(number, ConnectionEvent(self, private_data))

    _actions = {
        "abandon_handshake": _abandon_handshake,
        "send_disconnect": _send_disconnect,
        "send_broken": _send_broken,
        "complete_received": _complete_received,
        "complete_sent": _complete_sent,
        "flush_queue_pair": _flush_queue_pair,
        "flush_receives": _flush_recvs,
        "forget_handshake": _forget_handshake,
        "clear_hard_watermark": _clear_hard_watermark,
        "check_requests_drained": _check_requests_drained,
        "probe_peer_memory": _probe_peer_memory,
        "post_ep_broken": _post_ep_broken,
        "clear_addresses": _clear_addresses,
    }

    # Progress (called by the IA's poll for every EP with a QueuePair).

    def _progress(self):
        qp = self._qp
        peer_state = qp.words[qp.w_peer_state]     # qp.peer_state(), inlined: runs every poll
        if peer_state != ring.S_UP:
            if peer_state == ring.S_CLOSED:
                ep_state.fire(self, V.PEER_DISCONNECTED)
            else:
                self._break("the peer reported the connection broken")
            return
        try:
            qp.poll_recv()
            qp.poll_send()
        except ring.RingCorrupt as e:
            self._break(str(e))
            return
        if self._hw_exceeded:
            self._break("the EP went past its hard high watermark of receive buffers")
            return
        if self._state == S.DISCONNECT_PENDING:
            self._check_requests_drained()

    # Completion sink for the QueuePair.

    def send_done(self, wr):
        cookie, flags, op = wr.ctx
        evd = self._request_evd
        status = wr.status
        if status == ring.OK:
            if flags & _SUPPRESS or evd is None:
                return
            evd._post(_DTO_EVENT, DtoCompletion(self, cookie, _STATUS[0], wr.done, op),
                      not flags & _UNSIGNALLED)
        elif evd is not None:
            evd._post(_DTO_EVENT, DtoCompletion(self, cookie, _STATUS[status], wr.done, op))

    def recv_done(self, wr):
        if self._srq is not None:
            self._srq._completed += 1
        cookie, flags, op = wr.ctx
        evd = self._recv_evd
        status = wr.status
        if status == ring.OK:
            if flags & _SUPPRESS or evd is None:
                return
            notify = not (flags & _UNSIGNALLED
                          or (self._recv_solicited_only and not wr.solicited))
            evd._post(_DTO_EVENT, DtoCompletion(self, cookie, _STATUS[0], wr.done, op), notify)
        elif evd is not None:
            evd._post(_DTO_EVENT, DtoCompletion(self, cookie, _STATUS[status], wr.done, op))

    def _take_recv(self):
        """The QueuePair's take_recv: the buffer for a message that begins to arrive,
        from the EP's own queue or its SRQ; None makes the message wait in the ring."""
        if self._hw_exceeded:
            return None
        srq = self._srq
        if srq is None:
            q = self._recvq
            if not q:
                return None
            held = 0            # the buffer was already counted while posted
        elif not len(srq._hw):
            return None
        else:
            held = 1            # the buffer now becomes the EP's
        if self._soft_hw != WATERMARK_INFINITE or self._hard_hw != WATERMARK_INFINITE:
            held += self._held()
            if held > self._hard_hw:
                # Leave the buffer where it is: the message is not delivered, the connection breaks.
                self._hw_exceeded = True
                return None
            if held > self._soft_hw:
                self._soft_exceeded()
        return self._recvq.popleft() if srq is None else srq._hw.take()

    def _take_recv_source(self):
        """Where the QueuePair takes receives from."""
        return self._take_recv

    def _allocated(self):
        """recv_query's nbufs_allocated: buffers posted to the EP, or taken from its SRQ,
        not yet completed (one taken buffer at most: a connection delivers in order)."""
        qp = self._qp
        return len(self._recvq) + (qp is not None and qp.rx_cur is not None)

    def _held(self):
        """What the high watermarks count: receive buffers the EP holds, i.e. allocated
        ones and completed ones whose completion is still in the recv EVD."""
        from .srq import unreaped_receives
        return self._allocated() + unreaped_receives((self._recv_evd,), lambda ep: ep is self)

    def _soft_exceeded(self):
        self._soft_hw = WATERMARK_INFINITE          # one-shot: quiet until set again
        self._ia._async_evd._post(EventNumber.ASYNC_EP_SOFT_HIGH_WATERMARK,
                                  AsyncError(self, AsyncReason.SOFT_HIGH_WATERMARK))

    # DTOs.

    def _request_room(self, flags, position):
        """Check a request's flags (returned as a plain int) and that the queue has room."""
        qp = self._qp
        if qp is not None and len(qp.sq) + len(qp.inflight) >= self._attr.max_request_dtos:
            raise InsufficientResources(f"the EP's request queue is full ({self._attr.max_request_dtos} "
                                        "max_request_dtos); reap completions first",
                                        subtype="RESOURCE_TEP")
        flags = check_flags(flags, position, "completion_flags", _REQUEST_FLAGS,
                            "CompletionFlags of a request (SUPPRESS, SOLICITED_WAIT, UNSIGNALLED, "
                            "BARRIER_FENCE)")
        if flags & _UNSIGNALLED and not self._attr.request_completion_flags & _UNSIGNALLED:
            raise bad_arg(position, "UNSIGNALLED needs an EP whose request_completion_flags allow it")
        return flags

    def _post_request(self, wr):
        """Hand a request to the QP, or flush it at once on a DISCONNECTED EP."""
        self._ia._watch_peers()         # may break the connection: the request then flushes
        if self._state == S.DISCONNECTED:
            wr.status = _FLUSHED
            self.send_done(wr)
            return
        qp = self._qp
        qp.post_send(wr)
        if wr.status == ring.REMOTE_ACCESS:
            self._break("an RDMA failed the peer's access checks")
            return
        try:
            qp.poll_send()
        except ring.RingCorrupt as e:
            self._break(str(e))

    def post_send(self, local_iov, user_cookie, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_send: send the bytes of local_iov (gathered in order) to the peer.

        Raises InvalidState (EP neither CONNECTED nor DISCONNECTED), InvalidParameter,
        LengthError (over max_message_size), ProtectionViolation (an LMR of another PZ,
        or a segment outside its LMR), PrivilegesViolation (unknown lmr_context or no
        LOCAL_READ), InsufficientResources (request queue full), InvalidHandle.
        """
        with self._ia._progress.lock:
            if self._freed:
                self._check()
            if self._state not in _POST_SEND_STATES:
                raise ep_state.refusal(self._state, "post_send")
            completion_flags = self._request_room(completion_flags, 5)
            sges, total = resolve_iov(self._ia, self._pz, local_iov, _LOCAL_READ,
                                      self._attr.max_request_iov, 3, "EP")
            if total > self._attr.max_message_size:
                raise LengthError(f"{total} bytes is over the EP's max_message_size "
                                  f"({self._attr.max_message_size})")
            wr = ring.WorkRequest(ring.OP_SEND, sges, total, None, completion_flags,
                                  (user_cookie, completion_flags, DtoOp.SEND))
            wr.solicited = bool(completion_flags & _SOLICITED)
            self._post_request(wr)

    def post_recv(self, local_iov, user_cookie, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_recv: a buffer for the next incoming message (front segments filled first).

        Valid in every state; on a DISCONNECTED EP the receive is flushed at once.
        Raises InvalidParameter (flags; UNSIGNALLED without the EP attribute; the EP
        uses an SRQ), ProtectionViolation, PrivilegesViolation
        (no LOCAL_WRITE), InsufficientResources (max_recv_dtos), InvalidHandle.
        """
        with self._ia._progress.lock:
            if self._freed:
                self._check()
            if self._srq is not None:
                # dat_ep_post_recv lists no INVALID_STATE (it is "valid for all states");
                # the EP handle is the invalid parameter here.
                raise bad_arg(1, "this EP takes its receives from an SRQ: post them to the SRQ")
            completion_flags = check_flags(completion_flags, 5, "completion_flags", _RECV_FLAGS,
                                           "CompletionFlags of a receive (SUPPRESS, UNSIGNALLED)")
            if completion_flags & _UNSIGNALLED and not self._recv_unsignalled:
                raise bad_arg(5, "UNSIGNALLED needs an EP whose recv_completion_flags allow it")
            outstanding = len(self._recvq) + (self._qp is not None and self._qp.rx_cur is not None)
            if outstanding >= self._attr.max_recv_dtos:
                raise InsufficientResources(f"the EP already has max_recv_dtos "
                                            f"({self._attr.max_recv_dtos}) receives posted",
                                            subtype="RESOURCE_TEP")
            sges, total = resolve_iov(self._ia, self._pz, local_iov, _LOCAL_WRITE,
                                      self._attr.max_recv_iov, 3, "EP")
            wr = ring.WorkRequest(ring.OP_SEND, sges, total, None, completion_flags,
                                  (user_cookie, completion_flags, DtoOp.RECEIVE))
            if self._state == S.DISCONNECTED:
                wr.status = _FLUSHED
                self.recv_done(wr)
                return
            self._recvq.append(wr)
            qp = self._qp
            if qp is not None and qp.rx_tail != qp.words[qp.w_rx_head]:
                self._ia._progress.poll()       # a message waits in the ring for this very buffer

    def post_rdma_write(self, local_iov, user_cookie, remote_iov, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_rdma_write: write local_iov into the peer's memory at remote_iov,
        done by this process alone.

        A remote_iov the peer's registration does not allow (context, bounds,
        privileges, PZ) completes with ERR_REMOTE_ACCESS and breaks the connection.
        Raises LengthError (more bytes than remote_iov or max_rdma_size) and the errors
        of post_send.
        """
        self._post_rdma(ring.OP_RDMA_WRITE, local_iov, user_cookie, remote_iov, completion_flags)

    def post_rdma_read(self, local_iov, user_cookie, remote_iov, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_rdma_read: read the peer's memory at remote_iov into local_iov.

        Raises LengthError (local_iov smaller than remote_iov, or over max_rdma_size)
        and the errors of post_rdma_write.
        """
        self._post_rdma(ring.OP_RDMA_READ, local_iov, user_cookie, remote_iov, completion_flags)

    def _post_rdma(self, op, local_iov, user_cookie, remote_iov, completion_flags):
        write = op == ring.OP_RDMA_WRITE
        with self._ia._progress.lock:
            if self._freed:
                self._check()
            if self._state not in _POST_SEND_STATES:
                raise ep_state.refusal(self._state, "post_rdma_write" if write else "post_rdma_read")
            completion_flags = self._request_room(completion_flags, 6)
            remote = check_rmr_triplet(remote_iov, 5)
            need = _LOCAL_READ if write else _LOCAL_WRITE
            sges, total = resolve_iov(self._ia, self._pz, local_iov, need,
                                      self._attr.max_request_iov, 3, "EP")
            if write:
                if total > remote.segment_length:
                    raise LengthError(f"local_iov holds {total} bytes but remote_iov only "
                                      f"{remote.segment_length}")
            else:
                if remote.segment_length > total:
                    raise LengthError(f"local_iov holds {total} bytes, too few for the "
                                      f"{remote.segment_length} bytes of remote_iov")
                total = remote.segment_length
            if total > self._attr.max_rdma_size:
                raise LengthError(f"{total} bytes is over the EP's max_rdma_size ({self._attr.max_rdma_size})")
            wr = ring.WorkRequest(op, sges, total, remote, completion_flags,
                                  (user_cookie, completion_flags, DtoOp.RDMA_WRITE if write else DtoOp.RDMA_READ))
            self._post_request(wr)

    # Queries and the rest.

    def get_status(self):
        """dat_ep_get_status -> (EpState, recv_idle, request_idle)."""
        with self._ia._progress.lock:
            self._check()
            self._ia._progress.poll()
            qp = self._qp
            recv_idle = not self._recvq and (qp is None or qp.rx_cur is None)
            request_idle = qp is None or (not qp.sq and not qp.inflight)
            return self._state, recv_idle, request_idle

    def recv_query(self):
        """dat_ep_recv_query -> (nbufs_allocated, bufs_alloc_span). Raises InvalidHandle.

        Runs progress, then takes both numbers from one snapshot under the IA lock.
        Without an SRQ a buffer is allocated once posted; with one, once the EP takes
        it for a message that has begun to arrive. A connection delivers messages in
        order and allocates a buffer only for the message at the head of its ring, so
        message sequence numbers of allocated buffers have no gaps: the span equals
        the count.
        """
        with self._ia._progress.lock:
            self._check()
            self._ia._progress.poll()
            nbufs = self._allocated()
            return nbufs, nbufs

    def set_watermark(self, soft_high_watermark, hard_high_watermark):
        """dat_ep_set_watermark: when the receive buffers the EP holds (allocated to it,
        or completed and not yet reaped from its recv EVD) exceed soft_high_watermark,
        one ASYNC_EP_SOFT_HIGH_WATERMARK event on the async EVD (set it again for
        another); when they would exceed hard_high_watermark, the connection breaks
        (CONNECTION_EVENT_BROKEN). Checked now and each time the EP takes a buffer.
        WATERMARK_INFINITE (the default) turns a mark off.

        Raises InvalidParameter (not an int from 0 to WATERMARK_INFINITE), InvalidHandle.
        """
        with self._ia._progress.lock:
            self._check()
            check_int(soft_high_watermark, 2, "soft_high_watermark", 0, WATERMARK_INFINITE)
            check_int(hard_high_watermark, 3, "hard_high_watermark", 0, WATERMARK_INFINITE)
            self._soft_hw, self._hard_hw = soft_high_watermark, hard_high_watermark
            held = self._held()
            if held > soft_high_watermark:
                self._soft_exceeded()
            if held > hard_high_watermark and self._qp is not None:
                self._break("the EP is past its hard high watermark of receive buffers")

    def query(self):
        """dat_ep_query -> EpParam."""
        with self._ia._progress.lock:
            self._check()
            self._ia._watch_peers()
            return EpParam(ia=self._ia, ep_state=self._state, local_ia_address=self._ia._hca.address,
                           local_port_qual=self.local_port_qual,
                           remote_ia_address=self.remote_ia_address,
                           remote_port_qual=self.remote_port_qual, pz=self._pz,
                           recv_evd=self._recv_evd, request_evd=self._request_evd,
                           connect_evd=self._connect_evd, srq=self._srq,
                           ep_attr=dataclasses.replace(self._attr))

    def modify(self, **fields):
        """dat_ep_modify: change pz, recv_evd, request_evd, connect_evd or EpAttr fields
        (by name) of an UNCONNECTED EP.

        Raises InvalidParameter (unknown or read-only field, bad value), InvalidState,
        InvalidHandle.
        """
        with self._ia._progress.lock:
            self._check()
            self._require("modify")
            attr_names = {f.name for f in dataclasses.fields(EpAttr)}
            handles = {"pz", "recv_evd", "request_evd", "connect_evd"}
            for name in fields:
                if name not in attr_names | handles or name in _NOT_IN_ATTR_MODIFY:
                    raise bad_arg(2, f"{name!r} is not a field dat_ep_modify can change")
            pz = check_handle(fields.get("pz", self._pz), PZ, "pz", "INVALID_HANDLE_PZ", ia=self._ia)
            recv = check_evd(fields.get("recv_evd", self._recv_evd), EvdFlags.DTO, "recv_evd",
                             "INVALID_HANDLE_EVD_RECV", self._ia)
            req = check_evd(fields.get("request_evd", self._request_evd), EvdFlags.DTO,
                            "request_evd", "INVALID_HANDLE_EVD_REQUEST", self._ia)
            conn = check_evd(fields.get("connect_evd", self._connect_evd), EvdFlags.CONNECTION,
                             "connect_evd", "INVALID_HANDLE_EVD_CONN", self._ia)
            attr = check_ep_attr(dataclasses.replace(
                self._attr, **{k: v for k, v in fields.items() if k in attr_names}), recv, req, self._srq)
            self._unlink()
            self._pz, self._recv_evd, self._request_evd, self._connect_evd = pz, recv, req, conn
            self._attr = attr
            self._recv_solicited_only = bool(attr.recv_completion_flags & CompletionFlags.SOLICITED_WAIT)
            self._recv_unsignalled = bool(attr.recv_completion_flags & CompletionFlags.UNSIGNALLED)
            self._link()

    def reset(self):
        """dat_ep_reset: a DISCONNECTED EP back to UNCONNECTED, ready for a new connection."""
        with self._ia._progress.lock:
            self._check()
            self._require("reset")
            ep_state.fire(self, V.RESET)

    def free(self):
        """dat_ep_free: disconnect abruptly (outstanding DTOs flush) and destroy.

        Raises InvalidState in RESERVED, PASSIVE_ or TENTATIVE_CONNECTION_PENDING; InvalidHandle.
        """
        with self._ia._progress.lock:
            self._check()
            self._require("free")
            self._destroy()

    def _destroy(self):
        ep_state.fire(self, V.FREE)         # dat_ep_free, or the IA's close in any state
        self._unlink()
        self._mark_freed()
