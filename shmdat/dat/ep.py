"""Endpoints (dat_ep_*): the EP state machine, DTO posting and completions.

An EP is an RC QP of the verbs device from ep_create to ep_free (as dapl's): in
INIT while unconnected, moved to RTR and RTS by the handshake (over rdma_cm, whose
CM events come here), to ERR when the connection ends. DTOs are verbs work
requests; their completions come back through the EVDs' CQs (evd.py's drain).

Its states are ep_state.py's tables: consumer calls are checked there, every move is
ep_state.fire, and the verbs side effects of each move are the methods bound in
EP._actions. The rdma_cm events about its CMID come through cm_state.fire, whose
actions (EP._cm_actions) fire the EP's events.
"""

import dataclasses
import ipaddress
import time

from . import cm_state, ep_state, limits, seam
from .args import (check_choice, check_conn_qual, check_flags, check_int, check_private_data,
                   check_rmr_triplet, check_timeout, expected)
from .constants import (AsyncReason, CloseFlags, CompletionFlags, ConnectFlags, DtoOp, DtoStatus,
                        EpState, EventNumber, EvdFlags, MemPriv, Qos, ServiceType, TIMEOUT_INFINITE,
                        WATERMARK_INFINITE)
from .errors import (InsufficientResources, InvalidAddress, InvalidHandle, InvalidState,
                     LengthError, ModelNotSupported, bad_arg)
from .evd import EVD, unreaped_receives
from .handle import Handle, check_handle
from .lmr import ResolvedIov, resolve_iov
from .private_data import split_header, with_header
from .values import AsyncError, ConnectionEvent, DtoCompletion, EpAttr, EpParam

_now = time.monotonic

S = EpState

V = ep_state.EpEvent
_POST_SEND = ep_state.ALLOWED["post_send"]
_DTO_EVENT = EventNumber.DTO_COMPLETION_EVENT
_DTO_STATUS = seam.DTO_STATUS
_SUCCESS = DtoStatus.SUCCESS
_ERR_FLUSHED = DtoStatus.ERR_FLUSHED
_ERR_TRANSPORT = DtoStatus.ERR_TRANSPORT
# Enum members as module constants: reading one off its class is a Python call.
_RECEIVE, _SEND, _RDMA_WRITE, _RDMA_READ = DtoOp.RECEIVE, DtoOp.SEND, DtoOp.RDMA_WRITE, DtoOp.RDMA_READ
_DISCONNECT_PENDING = S.DISCONNECT_PENDING
# A DtoCompletion made by tuple.__new__: the NamedTuple's own __new__ is a Python call.
_tuple_new = tuple.__new__
_UP = (S.CONNECTED, S.DISCONNECT_PENDING, S.COMPLETION_PENDING)    # a connection that can break
_RESOLVE_MS = 2000
_CM = seam.CmEvent
_vrb = seam.libibverbs_enums
_WR_SEND, _WR_RDMA_WRITE, _WR_RDMA_READ = _vrb.IBV_WR_SEND, _vrb.IBV_WR_RDMA_WRITE, _vrb.IBV_WR_RDMA_READ
_SIGNALED, _SEND_SOLICITED, _SEND_FENCE = (int(_vrb.IBV_SEND_SIGNALED), int(_vrb.IBV_SEND_SOLICITED),
                                           int(_vrb.IBV_SEND_FENCE))
_NOTIFY_OFF = CompletionFlags.SUPPRESS | CompletionFlags.UNSIGNALLED
_REQUEST_FLAGS = int(CompletionFlags.SUPPRESS | CompletionFlags.SOLICITED_WAIT
                     | CompletionFlags.UNSIGNALLED | CompletionFlags.BARRIER_FENCE)
_RECV_FLAGS = int(CompletionFlags.SUPPRESS | CompletionFlags.UNSIGNALLED)
# The hot path tests flags as plain ints: an IntFlag operation costs a Python call.
_SUPPRESS = int(CompletionFlags.SUPPRESS)
_UNSIGNALLED = int(CompletionFlags.UNSIGNALLED)
_SOLICITED = int(CompletionFlags.SOLICITED_WAIT)
_FENCE = int(CompletionFlags.BARRIER_FENCE)
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
        self._service = None                # (address, conn_qual) connected to, for dup_connect
        self._timeout = None                # the connect's timeout in seconds (None: infinite)
        self._private_data = b""            # the consumer's, for the connect or accept in flight
        self._cmid = None                   # the CMID of the connection being made or made
        cm_state.end(self)                  # ... and its state: none yet
        self._requests = 0                  # requests posted and not yet completed
        self._recvs = 0                     # receives posted to the EP and not yet completed
        self._engine = ia._engine
        self.remote_ia_address = None
        self.remote_port_qual = None
        self.local_port_qual = None
        self._soft_hw = attr.srq_soft_hw        # armed unless WATERMARK_INFINITE (one-shot)
        self._hard_hw = WATERMARK_INFINITE
        self._set_flags()
        self._qp = None
        self._create_qp()
        self._link()

    def _set_flags(self):
        attr = self._attr
        self._recv_solicited_only = bool(attr.recv_completion_flags & CompletionFlags.SOLICITED_WAIT)
        self._recv_unsignalled = bool(attr.recv_completion_flags & CompletionFlags.UNSIGNALLED)
        # The completion flag bits a post refuses, as plain ints: a post whose flags are an
        # int with none of them is checked by one test (the full checks name the error).
        unsignalled_requests = attr.request_completion_flags & _UNSIGNALLED
        self._request_refused = ~(_REQUEST_FLAGS if unsignalled_requests else _REQUEST_FLAGS & ~_UNSIGNALLED)
        self._recv_refused = ~(_RECV_FLAGS if self._recv_unsignalled else _RECV_FLAGS & ~_UNSIGNALLED)

    # The EP's QP: an RC QP from ep_create to ep_free, in INIT while unconnected
    # (so receives can be posted in any DAT state).

    def _create_qp(self):
        ia, attr, dev = self._ia, self._attr, self._ia._dev
        null_cq = ia._null_cq
        cap = dev.qp.QPCap(max_send_wr=max(attr.max_request_dtos, 1),
                           max_recv_wr=max(attr.max_recv_dtos, 1),
                           max_send_sge=attr.max_request_iov, max_recv_sge=attr.max_recv_iov)
        init = dev.qp.QPInitAttr(
            qp_type=dev.enums.IBV_QPT_RC,
            scq=self._request_evd._cq if self._request_evd is not None else null_cq,
            rcq=self._recv_evd._cq if self._recv_evd is not None else null_cq,
            srq=self._srq._verbs_srq if self._srq is not None else None, cap=cap, sq_sig_all=0)
        try:
            self._qp = dev.qp.QP(self._pz._pd, init)
            self._to_init()
        except dev.pyverbs_error.PyverbsError as err:
            if self._qp is not None:
                self._qp.close()
                self._qp = None
            raise seam.dat_error(err, "QP") from None
        ia._engine.eps_by_qp_num[self._qp.qp_num] = self

    def _to_init(self):
        dev = self._ia._dev
        e = dev.enums
        attr = dev.qp.QPAttr(port_num=dev.port)
        attr.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ
                                | e.IBV_ACCESS_REMOTE_WRITE)
        self._qp.to_init(attr)

    def _destroy_qp(self):
        self._drain()
        self._ia._engine.eps_by_qp_num.pop(self._qp.qp_num, None)
        self._qp.close()
        self._qp = None

    def _to_error(self):
        """The QP to ERR: what is outstanding completes with ERR_FLUSHED through the
        CQs, drained at once so it comes before the connection event."""
        e = self._ia._dev.enums
        if self._qp.qp_state != e.IBV_QPS_ERR:
            self._qp.modify(self._ia._dev.qp.QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
        self._drain()

    def _drain(self):
        """What completed (and, the device run first, what has just arrived) to the EVDs."""
        self._ia._engine.progress()
        for evd in {self._recv_evd, self._request_evd} - {None}:
            evd._drain()

    def _conn_param(self, private_data):
        """The ConnParam of a connect or accept: the EP's QP, retries for ever (a message
        that finds no receive waits, as DAT promises), and the private data."""
        param = self._ia._dev.cmid.ConnParam(retry=7, rnr_retry=7, qp_num=self._qp.qp_num,
                                             data_len=len(private_data))
        param.set_private_data(private_data)
        return param

    def _to_rts(self, cmid):
        """The QP to RTR and RTS with the attributes rdma_cm has for this connection
        (the external-QP flow: rdma_init_qp_attr, then ibv_modify_qp)."""
        e = self._ia._dev.enums
        for state in (e.IBV_QPS_RTR, e.IBV_QPS_RTS):
            attr, mask = cmid.init_qp_attr(state)
            self._qp.modify(attr, mask)

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

    # The state machine.

    def _require(self, call, what=None):
        ep_state.check_call(self._state, call, what)

    def _post_connection_event(self, number, private_data):
        if self._connect_evd is not None:
            self._connect_evd._post(number, ConnectionEvent(self, private_data))

    @property
    def state(self):
        """The EP's EpState (a shortcut for query().ep_state)."""
        with self._ia._engine.lock:
            self._check()
            self._ia._engine.poll()
            return self._state

    # Connection establishment: the active side.

    def connect(self, remote_ia_address, remote_conn_qual, timeout=TIMEOUT_INFINITE,
                private_data=b"", qos=Qos.BEST_EFFORT, flags=ConnectFlags.DEFAULT):
        """dat_ep_connect: ask the PSP or RSP at (remote_ia_address, remote_conn_qual)
        for a connection. The outcome arrives on the connect EVD: ESTABLISHED (with the
        peer's private data), PEER_REJECTED, NON_PEER_REJECTED, TIMED_OUT or UNREACHABLE.

        Raises InvalidParameter (private data over max_private_data_size, bad timeout,
        qos or flags), InvalidAddress (not an IP address), InvalidState (EP not
        UNCONNECTED, or no connect EVD), ModelNotSupported (multipath required),
        InsufficientResources, InvalidHandle.
        """
        ia = self._ia
        with ia._engine.lock:
            self._check()
            seconds, private_data = self._check_connectable(timeout, private_data, qos, (4, 6, 7))
            check_conn_qual(remote_conn_qual, 3, "remote_conn_qual")
            if check_flags(flags, 8, "flags", _CONNECT_FLAGS, "ConnectFlags") & ConnectFlags.MULTIPATH_REQUIRED:
                raise ModelNotSupported("shared memory has one path; MULTIPATH_REQUIRED cannot be met")
            self._connect(remote_ia_address, remote_conn_qual, seconds, private_data)

    def dup_connect(self, dup_ep, timeout=TIMEOUT_INFINITE, private_data=b"", qos=Qos.BEST_EFFORT):
        """dat_ep_dup_connect: connect to the same remote service point as the connected
        `dup_ep`. Errors as for connect(); InvalidParameter if dup_ep is not connected."""
        ia = self._ia
        with ia._engine.lock:
            self._check()
            check_handle(dup_ep, EP, "dup_ep", "INVALID_HANDLE_EP")
            seconds, private_data = self._check_connectable(timeout, private_data, qos, (3, 5, 6))
            if dup_ep._state != S.CONNECTED or dup_ep._service is None:
                raise expected(2, "dup_ep", "a connected EP", dup_ep, f" in state {dup_ep._state.name}")
            self._connect(*dup_ep._service, seconds, private_data)

    def _check_connectable(self, timeout, private_data, qos, positions):
        """The checks connect and dup_connect share -> (seconds, private data as bytes).
        `positions`: the DAT argument positions of timeout, private_data and qos."""
        self._require("connect")
        seconds = check_timeout(timeout, positions[0])
        private_data = check_private_data(private_data, positions[1],
                                          self._engine.max_private_data_size)
        check_flags(qos, positions[2], "qos", _QOS, "Qos flags")
        if self._connect_evd is None:
            raise InvalidState("the EP has no connect EVD to report the connection on",
                               subtype="INVALID_STATE_EP_EVD_CONNECT")
        return seconds, private_data

    def _connect(self, address, conn_qual, seconds, private_data):
        try:
            if not isinstance(address, str):
                raise ValueError(address)
            ipaddress.IPv4Address(address)
        except ValueError:
            raise InvalidAddress(f"{address!r} is not an IA address (an IPv4 address in "
                                 "dotted-quad form, as ia.address)",
                                 subtype="INVALID_ADDRESS_MALFORMED") from None
        self.remote_ia_address, self.remote_port_qual = address, conn_qual
        self._service = (address, conn_qual)
        self._timeout, self._private_data = seconds, private_data
        ep_state.fire(self, V.CONNECT)
        # Resolution and the request go on now, as a NIC's CM would without us: the
        # consumer may wait for the peer's answer in a call that runs no progress here.
        self._ia._cm.drain()

    # The actions of the active side (ep_state.ACTIONS).

    def _resolve_addr(self):
        """CONNECT: a CMID on the IA's channel, the connect timer, resolve_addr."""
        ia, dev = self._ia, self._ia._dev
        self._cmid = ia._cm.new_cmid(self)
        cm_state.begin(self, cm_state.CmidState.RESOLVING_ADDR)
        ia._cm.start_timer(self, self._timeout)
        address, conn_qual = self._service
        try:
            self._cmid.resolve_addr(dev.cmid.AddrInfo(dst=address, dst_service=str(conn_qual)),
                                    _RESOLVE_MS)
        except dev.pyverbs_error.PyverbsError:
            ep_state.fire(self, V.UNREACHABLE)

    def _resolve_route(self):
        self._cmid.resolve_route(_RESOLVE_MS)

    def _send_request(self):
        """ROUTE_RESOLVED: connect(qp_num, DAT's header + the consumer's private data)."""
        dev = self._ia._dev
        cmid = self._cmid
        self.local_port_qual = seam.local_port(cmid)
        param = self._conn_param(with_header(self._private_data, self.local_port_qual))
        try:
            cmid.connect(param)
        except dev.pyverbs_error.PyverbsError:
            ep_state.fire(self, V.UNREACHABLE)

    # The rdma_cm events about the EP's CMID (cm_state.TRANSITIONS' actions).

    def _cm_addr_resolved(self, event):
        ep_state.fire(self, V.ADDR_RESOLVED)

    def _cm_route_resolved(self, event):
        ep_state.fire(self, V.ROUTE_RESOLVED)

    def _cm_connect_response(self, event):
        """The peer accepted: our QP to RTR and RTS and the CMID established first (the
        connection exists only if they succeed), then CONNECT_RESPONSE with its private data."""
        dev = self._ia._dev
        header = split_header(event.private_data)
        try:
            self._to_rts(self._cmid)
            self._cmid.establish()
        except dev.pyverbs_error.PyverbsError:
            ep_state.fire(self, V.UNREACHABLE)
            return
        ep_state.fire(self, V.CONNECT_RESPONSE, header[0] if header else b"")

    def _cm_rejected(self, event):
        """PEER_REJECTED with the consumer's private data if DAT's header is there, else
        NON_PEER_REJECTED (nobody listens, or rdma_cm itself refused)."""
        header = split_header(event.private_data)
        if header is None:
            ep_state.fire(self, V.NON_PEER_REJECTED)
        else:
            ep_state.fire(self, V.PEER_REJECTED, header[0])

    def _cm_unreachable(self, event):
        ep_state.fire(self, V.UNREACHABLE)

    def _cm_established(self, event):
        ep_state.fire(self, V.ESTABLISHED)

    def _cm_connect_error(self, event):
        ep_state.fire(self, V.CONNECT_ERROR)

    def _cm_peer_disconnected(self, event):
        ep_state.fire(self, V.PEER_DISCONNECTED)

    def _cm_qp_fatal(self, event):
        ep_state.fire(self, V.BROKEN)           # the peer process died

    _cm_actions = {
        "addr_resolved": _cm_addr_resolved,
        "route_resolved": _cm_route_resolved,
        "connect_response": _cm_connect_response,
        "rejected": _cm_rejected,
        "unreachable": _cm_unreachable,
        "established": _cm_established,
        "connect_error": _cm_connect_error,
        "peer_disconnected": _cm_peer_disconnected,
        "qp_fatal": _cm_qp_fatal,
    }

    def _timed_out(self):
        ep_state.fire(self, V.TIMER_EXPIRED)

    # The passive side (cm.py's CR calls it).

    def _accept(self, cmid, address, port, conn_qual, private_data, withdrawn):
        self.remote_ia_address, self.remote_port_qual, self.local_port_qual = address, port, conn_qual
        self._cmid = cmid
        self._private_data = private_data
        if withdrawn:
            cm_state.end(self)
        else:
            self._ia._cm.owners[cmid] = self
            cm_state.begin(self, cm_state.CmidState.ACCEPTED)
        ep_state.fire(self, V.ACCEPT)

    def _accept_request(self):
        """ACCEPT: the QP to RTR and RTS by the request's CMID, then accept(qp_num, DAT's
        header + the consumer's private data). A request withdrawn before or meanwhile is
        an ACCEPT_COMPLETION_ERROR event, not the consumer's error."""
        dev = self._ia._dev
        cmid = self._cmid
        if self._cm_state is cm_state.CmidState.DONE:
            ep_state.fire(self, V.CONNECT_ERROR)
            return
        param = self._conn_param(with_header(self._private_data))
        try:
            self._to_rts(cmid)
            cmid.accept(param)
        except dev.pyverbs_error.PyverbsError:
            ep_state.fire(self, V.CONNECT_ERROR)

    # Disconnection.

    def disconnect(self, flags=CloseFlags.ABRUPT):
        """dat_ep_disconnect. ABRUPT: flush every outstanding DTO now. GRACEFUL: the EP is
        DISCONNECT_PENDING until its requests complete. A DISCONNECTED event follows
        on the connect EVD, and on the peer's.

        Raises InvalidParameter (flags), InvalidState (nothing to disconnect), InvalidHandle.
        """
        with self._ia._engine.lock:
            self._check()
            flags = check_choice(flags, 2, "flags", (CloseFlags.ABRUPT, CloseFlags.GRACEFUL))
            self._require("disconnect")
            ep_state.fire(self, V.DISCONNECT_GRACEFUL if flags == CloseFlags.GRACEFUL else V.DISCONNECT)

    def _qp_error(self, fatal):
        """The device put the QP in error: QP_FATAL (the peer died or left, a corrupt
        ring), or an access or request error found here as the responder. A QP_FATAL
        that follows the peer's orderly disconnect is that disconnect: the CM events
        are looked at first (its DREQ was sent before its QP left)."""
        if fatal and self._state in _UP:
            self._ia._cm.drain()
        if self._state in _UP:
            ep_state.fire(self, V.BROKEN)

    # The actions of teardown (ep_state.ACTIONS).

    def _stop_timer(self):
        self._ia._cm.stop_timer(self)

    def _close_cmid(self):
        """Our own end: DREQ (if connected) before the QP leaves, so the peer sees a
        disconnect (R3); the CMID closed, its late events dropped."""
        cmid = self._cmid
        cm_state.end(self)
        if cmid is not None:
            self._cmid = None
            try:
                cmid.disconnect()
            except self._ia._dev.pyverbs_error.PyverbsError:
                pass                    # not connected (yet, or any more)
            self._ia._cm.close_cmid(cmid)

    def _retire_cmid(self):
        """A broken connection keeps its CMID (no DREQ: the peer sees its QP fail, BROKEN
        there too) until reset or free; its late events are ignored."""
        cm_state.end(self)

    def _check_requests_drained(self):
        """A graceful disconnect completes once every request has completed (an RC send
        completes once the peer took it): now, or at the completion of the last."""
        if self._requests == 0:
            ep_state.fire(self, V.REQUESTS_DRAINED)

    def _post_ep_broken(self):
        self._ia._async_evd._post(EventNumber.ASYNC_ERROR_EP_BROKEN,
                                  AsyncError(self, AsyncReason.EP_TRANSFER_TO_ERROR))

    def _reset_qp(self):
        """The QP (in ERR) through RESET back to INIT, ready for the next connection."""
        e = self._ia._dev.enums
        self._qp.modify(self._ia._dev.qp.QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
        self._to_init()

    def _clear_addresses(self):
        self.remote_ia_address = self.remote_port_qual = self.local_port_qual = None

    # Completions: the engine hands over each of the EP's, as a WC (_completed), or on
    # shm0 a successful one as the device makes it (Engine._complete_now: _succeeded).

    def _completed(self, evd, wc, cookie, flags, op, length):
        status = _DTO_STATUS.get(wc.status, _ERR_TRANSPORT)
        if op is _RECEIVE:
            if status is _SUCCESS:
                self._succeeded(evd, cookie, flags, op, wc.byte_len,
                                self._recv_solicited_only and self._engine.wc_solicited(wc))
            else:
                self._failed(evd, cookie, status, wc.byte_len, op)
            return
        if status is _SUCCESS:
            self._succeeded(evd, cookie, flags, op, length, False)
        else:
            self._failed(evd, cookie, status, 0, op)
        if self._state is _DISCONNECT_PENDING and self._requests == 0:
            ep_state.fire(self, V.REQUESTS_DRAINED)

    def _succeeded(self, evd, cookie, flags, op, length, solicited):
        """A DTO that completed successfully: its count, and its event unless suppressed.
        Nothing here moves a state or calls the device (it may run inside the device's
        progress); `solicited`: the sender asked for a solicited event (receives)."""
        if op is _RECEIVE:
            if self._srq is None:
                self._recvs -= 1
            else:
                self._srq._completed += 1
            if not flags & _SUPPRESS:
                evd._post(_DTO_EVENT, _tuple_new(DtoCompletion, (self, cookie, _SUCCESS, length, op)),
                          not (flags & _UNSIGNALLED or (self._recv_solicited_only and not solicited)))
            if self._soft_hw != WATERMARK_INFINITE and self._held() > self._soft_hw:
                self._soft_exceeded()
            return
        self._requests -= 1
        if not flags & _SUPPRESS:
            evd._post(_DTO_EVENT, _tuple_new(DtoCompletion, (self, cookie, _SUCCESS, length, op)),
                      not flags & _UNSIGNALLED)

    def _failed(self, evd, cookie, status, transferred, op):
        """A DTO completed in error: its count, its event whatever the flags, and an error
        other than a flush breaks the connection, as dapl's."""
        if op is not _RECEIVE:
            self._requests -= 1
        elif self._srq is None:
            self._recvs -= 1
        else:
            self._srq._completed += 1
        evd._post(_DTO_EVENT, DtoCompletion(self, cookie, status, transferred, op))
        if status != _ERR_FLUSHED and self._state in _UP:
            ep_state.fire(self, V.BROKEN)

    # Receive buffers held (the watermarks and recv_query).

    def _allocated(self):
        """recv_query's nbufs_allocated: buffers posted to the EP, or taken from its SRQ,
        not yet completed."""
        if self._srq is None:
            return self._recvs
        return self._engine.receives_filling(self._qp)

    def _held(self):
        """What the high watermarks count: receive buffers the EP holds, i.e. allocated
        ones and completed ones whose completion is still in the recv EVD."""
        return self._allocated() + unreaped_receives((self._recv_evd,), lambda ep: ep is self)

    def _soft_exceeded(self):
        self._soft_hw = WATERMARK_INFINITE          # one-shot: quiet until set again
        self._ia._async_evd._post(EventNumber.ASYNC_EP_SOFT_HIGH_WATERMARK,
                                  AsyncError(self, AsyncReason.SOFT_HIGH_WATERMARK))

    # DTOs.

    def _request_room(self, flags, position):
        """Check a request's flags (returned as a plain int) and that the queue has room."""
        if self._requests >= self._attr.max_request_dtos:
            if self._request_evd is not None:
                self._ia._engine.progress()         # the device runs (as a NIC would have meanwhile),
                self._request_evd._drain()          # and what completed frees its slot
            if self._requests >= self._attr.max_request_dtos:
                raise InsufficientResources(f"the EP's request queue is full ({self._attr.max_request_dtos} "
                                            "max_request_dtos); reap completions first",
                                            subtype="RESOURCE_TEP")
        if flags.__class__ is int and not flags & self._request_refused:
            return flags                            # the common case
        flags = check_flags(flags, position, "completion_flags", _REQUEST_FLAGS,
                            "CompletionFlags of a request (SUPPRESS, SOLICITED_WAIT, UNSIGNALLED, "
                            "BARRIER_FENCE)")
        if flags & _UNSIGNALLED and not self._attr.request_completion_flags & _UNSIGNALLED:
            raise bad_arg(position, "UNSIGNALLED needs an EP whose request_completion_flags allow it")
        return flags

    def _post_request(self, opcode, iov, flags, cookie, op, remote=None):
        """Hand a request to the QP (on a DISCONNECTED EP the QP is in ERR: it flushes),
        then look at the peers if that is due (engine.watch)."""
        engine = self._engine
        wr_id = next(engine.wr_ids)
        engine.slots[wr_id] = (self, cookie, flags, op, iov.total)
        send_flags = _SIGNALED
        if flags:
            if flags & _SOLICITED:
                send_flags |= _SEND_SOLICITED
            if flags & _FENCE:
                send_flags |= _SEND_FENCE
        wr = iov.send_wr
        wr.wr_id, wr.opcode, wr.send_flags = wr_id, opcode, send_flags
        if remote is not None:
            wr.set_wr_rdma(remote.rmr_context, remote.target_address)
        self._requests += 1
        try:
            self._qp.post_send(wr)
        except self._ia._dev.pyverbs_error.PyverbsError as err:
            self._requests -= 1
            engine.slots.pop(wr_id, None)
            raise seam.dat_error(err, "QP.post_send") from None
        if _now() >= engine.watch_at:
            engine.watch()      # after the request went out, off its way to the peer: a dead
                                # peer seen here breaks the connection, flushing what is left

    def post_send(self, local_iov, user_cookie, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_send: send the bytes of local_iov (gathered in order) to the peer.

        Raises InvalidState (EP neither CONNECTED nor DISCONNECTED), InvalidParameter,
        LengthError (over max_message_size), ProtectionViolation (an LMR of another PZ,
        or a segment outside its LMR), PrivilegesViolation (unknown lmr_context or no
        LOCAL_READ), InsufficientResources (request queue full), InvalidHandle.
        """
        lock = self._engine.lock
        lock.acquire()                      # (`with` costs twice as much)
        try:
            if self._freed:
                self._check()
            if self._state not in _POST_SEND:
                raise ep_state.refusal(self._state, "post_send")
            completion_flags = self._request_room(completion_flags, 5)
            iov = resolve_iov(self._ia, self._pz, local_iov, _LOCAL_READ,
                              self._attr.max_request_iov, 3, "EP")
            if iov.total > self._attr.max_message_size:
                raise LengthError(f"{iov.total} bytes is over the EP's max_message_size "
                                  f"({self._attr.max_message_size})")
            self._post_request(_WR_SEND, iov, completion_flags, user_cookie, _SEND)
        finally:
            lock.release()

    def post_recv(self, local_iov, user_cookie, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_recv: a buffer for the next incoming message (front segments filled first).

        Valid in every state; on a DISCONNECTED EP the receive is flushed at once.
        Raises InvalidParameter (flags; UNSIGNALLED without the EP attribute; the EP
        uses an SRQ), ProtectionViolation, PrivilegesViolation
        (no LOCAL_WRITE), InsufficientResources (max_recv_dtos), InvalidHandle.
        """
        engine = self._engine
        lock = engine.lock
        lock.acquire()                      # (`with` costs twice as much)
        try:
            if self._freed:
                self._check()
            if self._srq is not None:
                # dat_ep_post_recv lists no INVALID_STATE (it is "valid for all states");
                # the EP handle is the invalid parameter here.
                raise bad_arg(1, "this EP takes its receives from an SRQ: post them to the SRQ")
            if completion_flags.__class__ is not int or completion_flags & self._recv_refused:
                completion_flags = self._recv_flags(completion_flags)
            if self._recvs >= self._attr.max_recv_dtos:
                if self._recv_evd is not None:
                    self._recv_evd._drain()     # what completed frees its slot
                if self._recvs >= self._attr.max_recv_dtos:
                    raise InsufficientResources(f"the EP already has max_recv_dtos "
                                                f"({self._attr.max_recv_dtos}) receives posted",
                                                subtype="RESOURCE_TEP")
            iov = resolve_iov(self._ia, self._pz, local_iov, _LOCAL_WRITE,
                              self._attr.max_recv_iov, 3, "EP")
            wr_id = next(engine.wr_ids)
            engine.slots[wr_id] = (self, user_cookie, completion_flags, _RECEIVE, iov.total)
            self._recvs += 1
            wr = iov.recv_wr
            wr.wr_id = wr_id
            try:
                self._qp.post_recv(wr)
            except self._ia._dev.pyverbs_error.PyverbsError as err:
                self._recvs -= 1
                engine.slots.pop(wr_id, None)
                raise seam.dat_error(err, "QP.post_recv") from None
        finally:
            lock.release()

    def _recv_flags(self, flags):
        """A receive's completion flags, fully checked (-> a plain int)."""
        flags = check_flags(flags, 5, "completion_flags", _RECV_FLAGS,
                            "CompletionFlags of a receive (SUPPRESS, UNSIGNALLED)")
        if flags & _UNSIGNALLED and not self._recv_unsignalled:
            raise bad_arg(5, "UNSIGNALLED needs an EP whose recv_completion_flags allow it")
        return flags

    def post_rdma_write(self, local_iov, user_cookie, remote_iov, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_rdma_write: write local_iov into the peer's memory at remote_iov,
        done by this process alone.

        A remote_iov the peer's registration does not allow (context, bounds,
        privileges, PZ) completes with ERR_REMOTE_ACCESS and breaks the connection.
        Raises LengthError (more bytes than remote_iov or max_rdma_size) and the errors
        of post_send.
        """
        self._post_rdma(True, local_iov, user_cookie, remote_iov, completion_flags)

    def post_rdma_read(self, local_iov, user_cookie, remote_iov, completion_flags=DEFAULT_FLAGS):
        """dat_ep_post_rdma_read: read the peer's memory at remote_iov into local_iov.

        Raises LengthError (local_iov smaller than remote_iov, or over max_rdma_size)
        and the errors of post_rdma_write.
        """
        self._post_rdma(False, local_iov, user_cookie, remote_iov, completion_flags)

    def _post_rdma(self, write, local_iov, user_cookie, remote_iov, completion_flags):
        lock = self._engine.lock
        lock.acquire()                      # (`with` costs twice as much)
        try:
            if self._freed:
                self._check()
            if self._state not in _POST_SEND:
                raise ep_state.refusal(self._state, "post_rdma_write" if write else "post_rdma_read")
            completion_flags = self._request_room(completion_flags, 6)
            remote = check_rmr_triplet(remote_iov, 5)
            need = _LOCAL_READ if write else _LOCAL_WRITE
            iov = resolve_iov(self._ia, self._pz, local_iov, need, self._attr.max_request_iov, 3, "EP")
            total = iov.total
            if write:
                if total > remote.segment_length:
                    raise LengthError(f"local_iov holds {total} bytes but remote_iov only "
                                      f"{remote.segment_length}")
            else:
                if remote.segment_length > total:
                    raise LengthError(f"local_iov holds {total} bytes, too few for the "
                                      f"{remote.segment_length} bytes of remote_iov")
                if remote.segment_length < total:       # a read moves the remote length
                    total = remote.segment_length
                    iov = ResolvedIov(self._pz, _trim(self._ia._dev.wr.SGE, iov.sges, total), total,
                                      self._engine)
            if total > self._attr.max_rdma_size:
                raise LengthError(f"{total} bytes is over the EP's max_rdma_size ({self._attr.max_rdma_size})")
            self._post_request(_WR_RDMA_WRITE if write else _WR_RDMA_READ, iov,
                               completion_flags, user_cookie,
                               _RDMA_WRITE if write else _RDMA_READ, remote)
        finally:
            lock.release()

    # Queries and the rest.

    def get_status(self):
        """dat_ep_get_status -> (EpState, recv_idle, request_idle)."""
        with self._ia._engine.lock:
            self._check()
            self._ia._engine.poll()
            return self._state, self._allocated() == 0, self._requests == 0

    def recv_query(self):
        """dat_ep_recv_query -> (nbufs_allocated, bufs_alloc_span). Raises InvalidHandle.

        Runs progress, then takes both numbers from one snapshot under the IA lock.
        Without an SRQ a buffer is allocated once posted; with one, once the EP takes
        it for a message that has begun to arrive. A connection delivers messages in
        order and allocates a buffer only for the message at its head, so message
        sequence numbers of allocated buffers have no gaps: the span equals the count.
        """
        with self._ia._engine.lock:
            self._check()
            self._ia._engine.poll()
            nbufs = self._allocated()
            return nbufs, nbufs

    def set_watermark(self, soft_high_watermark, hard_high_watermark):
        """dat_ep_set_watermark: when the receive buffers the EP holds (allocated to it,
        or completed and not yet reaped from its recv EVD) exceed soft_high_watermark,
        one ASYNC_EP_SOFT_HIGH_WATERMARK event on the async EVD (set it again for
        another); when they would exceed hard_high_watermark, the connection breaks
        (CONNECTION_EVENT_BROKEN). Checked now and each time the EP takes a buffer.
        WATERMARK_INFINITE (the default) turns a mark off.

        Raises InvalidParameter (not an int from 0 to WATERMARK_INFINITE), ModelNotSupported
        (a finite hard mark on an SRQ's EP where the device cannot cap the buffers it
        takes: srq_watermarks_supported False), InvalidHandle.
        """
        with self._ia._engine.lock:
            self._check()
            check_int(soft_high_watermark, 2, "soft_high_watermark", 0, WATERMARK_INFINITE)
            check_int(hard_high_watermark, 3, "hard_high_watermark", 0, WATERMARK_INFINITE)
            if hard_high_watermark != WATERMARK_INFINITE and self._srq is not None \
                    and not self._engine.hard_watermark_supported:
                raise ModelNotSupported("this device cannot keep an SRQ's buffer from an EP "
                                        "past its hard high watermark (srq_watermarks_supported "
                                        "is False)")
            self._soft_hw, self._hard_hw = soft_high_watermark, hard_high_watermark
            held = self._held()
            if held > soft_high_watermark:
                self._soft_exceeded()
            if held > hard_high_watermark and self._state in _UP:
                ep_state.fire(self, V.BROKEN)       # past its hard high watermark of receive buffers
            self._limit_takes()

    def _limit_takes(self):
        """The hard mark on an SRQ's EP: the device lets the QP take only the buffers
        that keep it at or below the mark; the one past it is not taken (it stays on
        the SRQ) and the QP fails (QP_FATAL: BROKEN). Recounted as receives are reaped
        (EVD._take calls it for an EP with a hard mark)."""
        if self._srq is None:
            return
        hard = self._hard_hw
        n = None if hard == WATERMARK_INFINITE else max(hard - self._held(), 0)
        self._engine.set_recv_credits(self._qp, n)

    def query(self):
        """dat_ep_query -> EpParam."""
        with self._ia._engine.lock:
            self._check()
            self._ia._engine.watch()
            return EpParam(ia=self._ia, ep_state=self._state, local_ia_address=self._ia._dev.address,
                           local_port_qual=self.local_port_qual,
                           remote_ia_address=self.remote_ia_address,
                           remote_port_qual=self.remote_port_qual, pz=self._pz,
                           recv_evd=self._recv_evd, request_evd=self._request_evd,
                           connect_evd=self._connect_evd, srq=self._srq,
                           ep_attr=dataclasses.replace(self._attr))

    def modify(self, **fields):
        """dat_ep_modify: change pz, recv_evd, request_evd, connect_evd or EpAttr fields
        (by name) of an UNCONNECTED EP. Its QP is made anew (verbs fixes a QP's PD, CQs
        and queues at creation): receives posted before are flushed.

        Raises InvalidParameter (unknown or read-only field, bad value), InvalidState,
        InvalidHandle.
        """
        with self._ia._engine.lock:
            self._check()
            self._require("modify")
            attr_names = {f.name for f in dataclasses.fields(EpAttr)}
            handles = {"pz", "recv_evd", "request_evd", "connect_evd"}
            for name in fields:
                if name not in attr_names | handles or name in _NOT_IN_ATTR_MODIFY:
                    raise bad_arg(2, f"{name!r} is not a field dat_ep_modify can change")
            # (a PZ is of its class: ep.py does not import pz.py, which imports rmr.py, which imports this)
            pz = check_handle(fields.get("pz", self._pz), type(self._pz), "pz", "INVALID_HANDLE_PZ",
                              ia=self._ia)
            recv = check_evd(fields.get("recv_evd", self._recv_evd), EvdFlags.DTO, "recv_evd",
                             "INVALID_HANDLE_EVD_RECV", self._ia)
            req = check_evd(fields.get("request_evd", self._request_evd), EvdFlags.DTO,
                            "request_evd", "INVALID_HANDLE_EVD_REQUEST", self._ia)
            conn = check_evd(fields.get("connect_evd", self._connect_evd), EvdFlags.CONNECTION,
                             "connect_evd", "INVALID_HANDLE_EVD_CONN", self._ia)
            attr = check_ep_attr(dataclasses.replace(
                self._attr, **{k: v for k, v in fields.items() if k in attr_names}), recv, req, self._srq)
            self._to_error()
            self._destroy_qp()
            self._unlink()
            self._pz, self._recv_evd, self._request_evd, self._connect_evd = pz, recv, req, conn
            self._attr = attr
            self._set_flags()
            self._create_qp()
            self._link()

    def reset(self):
        """dat_ep_reset: a DISCONNECTED EP back to UNCONNECTED, ready for a new connection."""
        with self._ia._engine.lock:
            self._check()
            self._require("reset")
            ep_state.fire(self, V.RESET)

    def free(self):
        """dat_ep_free: disconnect abruptly (outstanding DTOs flush) and destroy.

        Raises InvalidState in RESERVED, PASSIVE_ or TENTATIVE_CONNECTION_PENDING; InvalidHandle.
        """
        with self._ia._engine.lock:
            self._check()
            self._require("free")
            self._destroy()

    def _destroy(self):
        ep_state.fire(self, V.FREE)
        self._unlink()
        self._mark_freed()

    # ep_state.ACTIONS' names, bound ("post_*" ones are ep_state.POSTS: _post_connection_event).
    _actions = {
        "resolve_addr": _resolve_addr,
        "resolve_route": _resolve_route,
        "send_request": _send_request,
        "accept_request": _accept_request,
        "stop_timer": _stop_timer,
        "close_cmid": _close_cmid,
        "retire_cmid": _retire_cmid,
        "qp_to_error": _to_error,
        "drain_completions": _drain,
        "check_requests_drained": _check_requests_drained,
        "post_ep_broken": _post_ep_broken,
        "qp_to_init": _reset_qp,
        "clear_addresses": _clear_addresses,
        "destroy_qp": _destroy_qp,
    }


def _trim(sge_class, sges, length):
    """The first `length` bytes of an SGE list."""
    out = []
    for sge in sges:
        if length <= 0:
            break
        out.append(sge if sge.length <= length else sge_class(sge.addr, length, sge.lkey))
        length -= sge.length
    return out
