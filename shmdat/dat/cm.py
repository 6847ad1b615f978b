"""Connection management over rdma_cm: Public and Reserved Service Points, Connection
Requests, and the handshake that connects two EPs' QPs (as dapl's openib_cma).

The engine says where the events come from (engine.py: the IA's one channel on shm0,
whose events name their CMID; nic_engine.py: a channel per CMID); an event goes to
the owner of the CMID it is about (an EP, a CR, a PSP or RSP), through cm_state's
table (the CMID's state, what the event becomes, late ones ignored). The EP's QP exists
from ep_create; a connection only attaches a CMID to it by qp_num (rdma_cm's
external-QP flow), and DAT moves the QP itself:

    active                                   passive
    connect: resolve_addr, resolve_route,
             connect(qp_num, header + data) ->   CONNECT_REQUEST: a CR on the PSP's EVD
                                                accept: QP to RTR and RTS,
                                    <- accept(qp_num, header + data)
    CONNECT_RESPONSE: QP to RTR and RTS,
    establish(), ESTABLISHED                    ESTABLISHED

    reject:               <- reject(header + data)    REJECTED with the header: PEER_REJECTED
    nobody listens:       <- REJECTED without it      NON_PEER_REJECTED

Private data always starts with DAT's 6-byte header (magic, length, port), so the
consumer's bytes survive rdma_cm's zero padding and a consumer's reject is told
from any other (dapl does the same for the same reasons). The port is the active
side's own, which the passive side reports as the CR's remote_port_qual.
"""

import secrets
import time

from . import cm_state, ep_state, limits, seam
from .args import check_choice, check_conn_qual, check_private_data
from .constants import EventNumber, PspFlags
from .ep import EP, S
from .errors import (ConnQualInUse, ConnQualUnavailable, InsufficientResources, InvalidHandle,
                     InvalidState, ModelNotSupported, bad_arg)
from .handle import Handle, check_handle
from .private_data import split_header, with_header
from .values import CrArrival, CrParam, PspParam, RspParam

E = EventNumber
V = ep_state.EpEvent
T = cm_state.CmidState
_REQUEST = seam.CmEvent.REQUEST
EPHEMERAL = range(32768, 61000)         # where psp_create_any looks (Linux's ephemeral ports)


class PSP(Handle):
    """A Public Service Point (dat_psp_*): a listening CMID on port conn_qual."""
    kind = "psp"
    _recv_evd = _request_evd = None

    def __init__(self, ia, conn_qual, evd, flags):
        super().__init__(ia)
        self.conn_qual = conn_qual
        self._evd = evd
        self._flags = flags
        self._cmid = ia._cm.listen(self, conn_qual)
        evd._streams.append(self)
        ia._cm.sps[conn_qual] = self

    def _cm_request(self, event):
        """A request for this PSP: a CR on its EVD."""
        request = self._ia._cm.request(event, self._cmid)
        if request is not None:
            cmid, private_data, port = request
            cr = CR(self._ia, self, self.conn_qual, cmid, port, private_data, None)
            self._evd._post(E.CONNECTION_REQUEST_EVENT,
                            CrArrival(self, self._ia._dev.address, self.conn_qual, cr))

    _cm_actions = {"request": _cm_request}

    def query(self):
        """dat_psp_query -> PspParam."""
        with self._ia._engine.lock:
            self._check()
            return PspParam(ia=self._ia, conn_qual=self.conn_qual, evd=self._evd, psp_flags=self._flags)

    def free(self):
        """dat_psp_free: stop listening. Pending CRs stay valid."""
        with self._ia._engine.lock:
            self._check()
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        self._evd._streams.remove(self)
        self._ia._cm.stop_listening(self)


class RSP(Handle):
    """A Reserved Service Point (dat_rsp_*): one connection qualifier for one EP."""
    kind = "rsp"
    _recv_evd = _request_evd = None

    def __init__(self, ia, conn_qual, ep, evd):
        super().__init__(ia)
        self.conn_qual = conn_qual
        self._ep = ep
        self._evd = evd
        self._cmid = ia._cm.listen(self, conn_qual)
        ep_state.fire(ep, V.RESERVE)
        ep.local_port_qual = conn_qual
        evd._streams.append(self)
        ia._cm.sps[conn_qual] = self

    def _cm_request(self, event):
        """The one request this RSP takes: its EP goes PASSIVE_CONNECTION_PENDING."""
        request = self._ia._cm.request(event, self._cmid)
        if request is None:
            return
        cmid, private_data, port = request
        ep = self._ep
        self._destroy()                 # DAT: a reserved SP is used up by its request
        ep_state.fire(ep, V.REQUEST)
        cr = CR(self._ia, None, self.conn_qual, cmid, port, private_data, ep)
        ep.remote_ia_address = cr.remote_ia_address
        self._evd._post(E.CONNECTION_REQUEST_EVENT,
                        CrArrival(None, self._ia._dev.address, self.conn_qual, cr))

    _cm_actions = {"request": _cm_request}

    def query(self):
        """dat_rsp_query -> RspParam."""
        with self._ia._engine.lock:
            self._check()
            return RspParam(ia=self._ia, conn_qual=self.conn_qual, evd=self._evd, ep=self._ep)

    def free(self):
        """dat_rsp_free: the EP goes back to UNCONNECTED."""
        with self._ia._engine.lock:
            self._check()
            if self._ep._state == S.RESERVED:
                ep_state.fire(self._ep, V.UNRESERVE)
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        self._evd._streams.remove(self)
        self._ia._cm.stop_listening(self)


class CR(Handle):
    """A Connection Request (dat_cr_*): a CONNECT_REQUEST's CMID, not yet accepted or rejected."""
    kind = "cr"

    def __init__(self, ia, sp, conn_qual, cmid, remote_port, private_data, local_ep):
        super().__init__(ia)
        self._sp = sp
        self.conn_qual = conn_qual
        self._cmid = cmid
        self.remote_ia_address = seam.peer_address(cmid) if cmid is not None else None
        self.remote_port_qual = remote_port
        self.private_data = private_data
        self._local_ep = local_ep
        ia._cm.crs.add(self)
        if cmid is None:                # the requester withdrew before the request was taken
            cm_state.end(self)
        else:
            cm_state.begin(self, T.REQUEST)
            ia._cm.owners[cmid] = self

    @property
    def _withdrawn(self):
        """The requester gave up, or died (its CMID's handshake is DONE): an accept can only fail."""
        return self._cm_state is T.DONE

    def query(self):
        """dat_cr_query -> CrParam."""
        with self._ia._engine.lock:
            self._check()
            return CrParam(remote_ia_address=self.remote_ia_address,
                           remote_port_qual=self.remote_port_qual,
                           private_data=self.private_data, local_ep=self._local_ep)

    def accept(self, ep=None, private_data=b""):
        """dat_cr_accept: accept with `ep` (None for an RSP's CR, whose EP is reserved).

        The EP goes COMPLETION_PENDING, then CONNECTED with an ESTABLISHED event, or
        DISCONNECTED with ACCEPT_COMPLETION_ERROR if the requester has gone.
        Raises InvalidHandle (ep missing, or another EP than the RSP's), InvalidState
        (EP not UNCONNECTED, or without a connect EVD), InvalidParameter (private data
        over max_private_data_size).
        """
        ia = self._ia
        with ia._engine.lock:
            self._check()
            if self._local_ep is not None:
                if ep is not None and ep is not self._local_ep:
                    raise InvalidHandle("this CR came to an RSP: accept it with its own EP (ep=None)",
                                        subtype="INVALID_HANDLE_EP")
                ep = self._local_ep
                ep._require("accept_reserved", "accept")
            else:
                if ep is None:
                    raise InvalidHandle("accept needs an EP", subtype="INVALID_HANDLE_EP")
                check_handle(ep, EP, "ep", "INVALID_HANDLE_EP")
                ep._require("accept")
            private_data = check_private_data(private_data, 4, ia._engine.max_private_data_size)
            if ep._connect_evd is None:
                raise InvalidState("the EP has no connect EVD", subtype="INVALID_STATE_EP_EVD_CONNECT")
            self._forget()
            ep._accept(self._cmid, self.remote_ia_address, self.remote_port_qual, self.conn_qual,
                       private_data, self._withdrawn)

    def reject(self, private_data=b""):
        """dat_cr_reject: refuse; the requester gets PEER_REJECTED carrying `private_data`."""
        ia = self._ia
        with ia._engine.lock:
            self._check()
            private_data = check_private_data(private_data, 2, ia._engine.max_private_data_size)
            self._forget()
            if self._local_ep is not None:
                ep_state.fire(self._local_ep, V.REJECT)
            self._refuse(with_header(private_data))

    def handoff(self, conn_qual):
        """dat_cr_handoff: pass the request to this IA's PSP on `conn_qual`, whose EVD
        gets a new CONNECTION_REQUEST_EVENT. Raises InvalidParameter if no PSP listens there."""
        ia = self._ia
        with ia._engine.lock:
            self._check()
            sp = ia._cm.sps.get(check_conn_qual(conn_qual, 2))
            if not isinstance(sp, PSP):
                raise bad_arg(2, f"no PSP of this IA listens on conn_qual {conn_qual!r}")
            if self._local_ep is not None:
                raise InvalidState("a CR that came to an RSP cannot be handed off")
            self._forget()
            cr = CR(ia, sp, conn_qual, self._cmid, self.remote_port_qual, self.private_data, None)
            if self._withdrawn:
                cm_state.end(cr)
            sp._evd._post(E.CONNECTION_REQUEST_EVENT, CrArrival(sp, ia._dev.address, conn_qual, cr))

    def _forget(self):
        self._mark_freed()
        self._ia._cm.crs.discard(self)
        self._ia._cm.owners.pop(self._cmid, None)

    def _refuse(self, private_data):
        if self._cmid is None:
            return
        if not self._withdrawn:
            try:
                self._cmid.reject(private_data)
            except self._ia._dev.pyverbs_error.PyverbsError:
                pass                # withdrawn meanwhile: nobody to tell
        self._ia._cm.close_cmid(self._cmid)

    def _destroy(self):
        """The IA closes: refuse the request."""
        self._forget()
        self._refuse(with_header(b""))


class ConnectionManager:
    """One IA's rdma_cm: its CMIDs and who owns each, its service points, connection
    requests and connect timers."""

    def __init__(self, ia):
        self.ia = ia
        self.dev = ia._dev
        self.engine = ia._engine
        self.owners = {}            # CMID -> the PSP, RSP, CR or EP its events go to
        self.sps = {}               # conn_qual -> PSP or RSP
        self.crs = set()            # CRs not yet accepted or rejected
        self.timers = {}            # EP -> connect deadline

    # The events.

    def drain(self):
        """Hand every queued CM event to the owner of its CMID."""
        next_event = self.engine.next_cm_event
        while True:
            event = next_event()
            if event is None:
                return
            try:
                kind = seam.cm_event(event.event_type, event.status)
                owner = self.owners.get(event.listen_id if kind is _REQUEST else event.id)
                if event.id is None and kind not in (None, _REQUEST):
                    owner = self._request_owner(event.requests, kind)
                if kind is None:
                    pass                # one rdma_cm delivers unasked (seam.CM_EVENT)
                elif owner is not None:
                    cm_state.fire(owner, kind, event)
                elif kind is _REQUEST:
                    self._refuse(event)     # its service point went meanwhile
            finally:
                event.ack_cm_event()

    def request(self, event, listen_cmid):
        """A CONNECT_REQUEST's (CMID, consumer private data, requester's port); None
        (and the request refused) if it lacks DAT's header. The CMID is None when the
        requester withdrew before the request was taken (its CR can only fail)."""
        header = split_header(event.private_data)
        if header is None:
            self._refuse(event)
            return None
        try:
            cmid = self.engine.request_cmid(event, listen_cmid)
        except self.dev.pyverbs_error.PyverbsError:
            cmid = None
        return cmid, header[0], header[1]

    def _refuse(self, event):
        cmid = self.engine.request_cmid(event, event.listen_id)
        if cmid is None:
            return                      # the requester withdrew: nobody to tell
        try:
            cmid.reject()
        finally:
            self.engine.close_cmid(cmid)

    def _request_owner(self, requests, kind):
        """The owner an event about one of a listener's requests is for, when the event
        does not name its CMID (real pyverbs' CMEvent has no `id`, and a request's CMID
        reports on its listener's channel): the oldest of them (the CMIDs in `requests`,
        oldest first) whose state takes this kind of event. Right whenever one
        connection through the listener is in that state; a guess between several."""
        for cmid in requests:
            owner = self.owners.get(cmid)
            if owner is not None and owner._cm_state is not T.DONE \
                    and (owner._cm_state, kind) in cm_state.TRANSITIONS:
                return owner
        return None

    # CMIDs.

    def new_cmid(self, owner, listening=False):
        cmid = self.engine.new_cmid(listening)
        self.owners[cmid] = owner
        return cmid

    def close_cmid(self, cmid):
        self.owners.pop(cmid, None)
        self.engine.close_cmid(cmid)

    def listen(self, sp, conn_qual):
        """A CMID listening on the IA's address and port conn_qual, owned by `sp`."""
        if conn_qual in self.sps:
            raise ConnQualInUse(f"conn_qual {conn_qual} is already in use on this IA")
        if len(self.sps) >= limits.MAX_PSPS:
            raise InsufficientResources(f"the IA has {limits.MAX_PSPS} service points already")
        dev = self.dev
        cmid = self.new_cmid(sp, listening=True)
        cm_state.begin(sp, cm_state.CmidState.LISTENING)
        try:
            cmid.bind_addr(dev.cmid.AddrInfo(src=dev.address, src_service=str(conn_qual),
                                             port_space=dev.cm_enums.RDMA_PS_TCP,
                                             flags=dev.cm_enums.RAI_PASSIVE))
            cmid.listen()
        except dev.pyverbs_error.PyverbsError as err:
            self.close_cmid(cmid)
            raise seam.dat_error(err, "CMID.bind_addr") from None
        return cmid

    def stop_listening(self, sp):
        self.sps.pop(sp.conn_qual, None)
        self.close_cmid(sp._cmid)

    def psp_create(self, conn_qual, evd, flags):
        flags = check_choice(flags, 4, "flags", (PspFlags.CONSUMER, PspFlags.PROVIDER))
        if flags == PspFlags.PROVIDER:
            raise ModelNotSupported("PspFlags.PROVIDER (provider-created EPs) is not supported; "
                                    "use PspFlags.CONSUMER and accept with your own EP")
        return PSP(self.ia, conn_qual, evd, PspFlags(flags))

    def psp_create_any(self, evd, flags):
        """A PSP on a free port of the ephemeral range (a bind to port 0 would not tell
        which port it got through pyverbs)."""
        for _ in range(64):
            try:
                return self.psp_create(EPHEMERAL[secrets.randbelow(len(EPHEMERAL))], evd, flags)
            except ConnQualInUse:
                continue
        raise ConnQualUnavailable("no free connection qualifier was found")

    # Connect timers (rdma_cm has no consumer deadline).

    def start_timer(self, ep, seconds):
        if seconds is not None:
            self.timers[ep] = time.monotonic() + seconds
            self._update_timer()

    def stop_timer(self, ep):
        if self.timers.pop(ep, None) is not None:
            self._update_timer()

    def check_timers(self, now):
        for ep in [ep for ep, deadline in self.timers.items() if deadline <= now]:
            ep._timed_out()

    def _update_timer(self):
        self.ia._engine.next_timer = min(self.timers.values()) if self.timers else None

    def close(self):
        for cmid in list(self.owners):
            self.close_cmid(cmid)
