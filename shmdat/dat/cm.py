"""Connection management: Public and Reserved Service Points, Connection Requests,
and the handshake that turns two EPs into a connection.

The handshake, after IB CM (messages travel through the IA's CM channel):

    active                                     passive
    connect: create the connection segment
             REQ(conn_id, conn_qual, pz, segment, private data) ->
                                               CR on the PSP's EVD (or the RSP's EP)
                                               accept: map the segment, EP COMPLETION_PENDING
                              <- REP(conn_id, pz, private data)
    unlink the segment's name, EP CONNECTED,
    ESTABLISHED (with the private data)
             RTU(conn_id) ->                   EP CONNECTED, ESTABLISHED

    reject:                   <- REJ(conn_id, CONSUMER, private data)  -> PEER_REJECTED
    no service point:         <- REJ(conn_id, NON_PEER)                -> NON_PEER_REJECTED
    active gives up (timeout, disconnect, REP too late):
             CANCEL(conn_id) ->                a later accept gets ACCEPT_COMPLETION_ERROR

The active side names the segment and unlinks it as soon as the passive side
has it mapped (REP) or will never map it (REJ, timeout), so nothing stays in
/dev/shm however the processes end.

Which message is legal in which state of a handshake is cm_state.py's table; the
EP's moves are fired through ep_state.py.
"""

import collections
import itertools
import secrets
import struct
import time

import numpy as np
import posix_ipc

from . import cm_state, ep_state, limits
from .args import check_choice, check_conn_qual, check_private_data
from .cm_state import Handshake as H, Message
from .constants import CONN_QUAL_MAX, EventNumber, PspFlags
from .errors import (ConnQualInUse, ConnQualUnavailable, InsufficientResources, InvalidAddress,
                     InvalidHandle, InvalidState, ModelNotSupported, bad_arg, hardware_errors)
from ..hw import ring
from ..hw.errors import PeerUnreachable
from ..hw.hca import parse_address
from .handle import Handle, check_handle
from .values import CrArrival, CrParam, PspParam, RspParam

REQ, REP, REJ, RTU, CANCEL = Message.REQ, Message.REP, Message.REJ, Message.RTU, Message.CANCEL
REASON_CONSUMER, REASON_NON_PEER = 0, 1
_MSG = struct.Struct("<BBHH2xQQQ")      # type, reason, address len, segment-name len, conn_id, conn_qual, pz
CONN_QUAL_ANY_BASE = 1 << 48            # psp_create_any picks from here up

E = EventNumber
V = ep_state.EpEvent
Received = collections.namedtuple("Received", "kind reason conn_id conn_qual pz address segment private_data")


def encode(kind, conn_id, address, reason=0, conn_qual=0, pz=0, segment="", private_data=b""):
    a, s = address.encode(), segment.encode()
    return _MSG.pack(kind, reason, len(a), len(s), conn_id, conn_qual, pz) + a + s + bytes(private_data)


def decode(data):
    """A Received message; ValueError if malformed (or of no Message kind)."""
    try:
        kind, reason, alen, slen, conn_id, conn_qual, pz = _MSG.unpack_from(data)
    except struct.error:
        raise ValueError("short CM message") from None
    o = _MSG.size
    if o + alen + slen > len(data):
        raise ValueError("truncated CM message")
    address = data[o:o + alen].decode("ascii", "replace")
    segment = data[o + alen:o + alen + slen].decode("ascii", "replace")
    return Received(Message(kind), reason, conn_id, conn_qual, pz, address, segment,
                    bytes(data[o + alen + slen:]))


class Connection:
    """The handshake's bookkeeping for one EP."""
    __slots__ = ("ep", "conn_id", "peer_address", "peer", "segment", "deadline", "peer_pz", "active")

    def __init__(self, ep, conn_id, peer_address, peer, active):
        self.ep, self.conn_id, self.peer_address, self.peer, self.active = ep, conn_id, peer_address, peer, active
        self.segment = None
        self.deadline = None
        self.peer_pz = 0


class PSP(Handle):
    """A Public Service Point (dat_psp_*): listens on a connection qualifier."""
    kind = "psp"
    _recv_evd = _request_evd = None

    def __init__(self, ia, conn_qual, evd, flags):
        super().__init__(ia)
        self.conn_qual = conn_qual
        self._evd = evd
        self._flags = flags
        evd._streams.append(self)
        ia._cm.add_sp(conn_qual, self)

    def query(self):
        """dat_psp_query -> PspParam."""
        with self._ia._progress.lock:
            self._check()
            return PspParam(ia=self._ia, conn_qual=self.conn_qual, evd=self._evd, psp_flags=self._flags)

    def free(self):
        """dat_psp_free: stop listening. Pending CRs stay valid."""
        with self._ia._progress.lock:
            self._check()
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        self._evd._streams.remove(self)
        self._ia._cm.remove_sp(self.conn_qual)


class RSP(Handle):
    """A Reserved Service Point (dat_rsp_*): one connection qualifier for one EP."""
    kind = "rsp"
    _recv_evd = _request_evd = None

    def __init__(self, ia, conn_qual, ep, evd):
        super().__init__(ia)
        self.conn_qual = conn_qual
        self._ep = ep
        self._evd = evd
        ep_state.fire(ep, V.RESERVE)
        ep.local_port_qual = conn_qual
        evd._streams.append(self)
        ia._cm.add_sp(conn_qual, self)

    def query(self):
        """dat_rsp_query -> RspParam."""
        with self._ia._progress.lock:
            self._check()
            return RspParam(ia=self._ia, conn_qual=self.conn_qual, evd=self._evd, ep=self._ep)

    def free(self):
        """dat_rsp_free: the EP goes back to UNCONNECTED."""
        with self._ia._progress.lock:
            self._check()
            ep_state.fire(self._ep, V.UNRESERVE)     # a live RSP's EP is RESERVED
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        self._evd._streams.remove(self)
        self._ia._cm.remove_sp(self.conn_qual)


def ep_module():
    from . import ep
    return ep


class CR(Handle):
    """A Connection Request (dat_cr_*), made by the provider when a REQ arrives."""
    kind = "cr"

    def __init__(self, ia, sp, conn_qual, peer_address, conn_id, pz, segment, private_data, local_ep):
        super().__init__(ia)
        self._sp = sp
        self.conn_qual = conn_qual
        self.remote_ia_address = peer_address
        self._conn_id = conn_id
        self._pz = pz
        self._segment = segment
        self.private_data = private_data
        self._local_ep = local_ep
        self._cancelled = False
        ia._cm.crs[(peer_address, conn_id)] = self

    def query(self):
        """dat_cr_query -> CrParam."""
        with self._ia._progress.lock:
            self._check()
            return CrParam(remote_ia_address=self.remote_ia_address, remote_port_qual=self._conn_id,
                           private_data=self.private_data, local_ep=self._local_ep)

    def accept(self, ep=None, private_data=b""):
        """dat_cr_accept: accept with `ep` (None for an RSP's CR, whose EP is reserved).

        The EP goes COMPLETION_PENDING, then CONNECTED with an ESTABLISHED event, or
        DISCONNECTED with ACCEPT_COMPLETION_ERROR if the requester has gone.
        Raises InvalidHandle (ep missing, or another EP than the RSP's), InvalidState
        (EP not UNCONNECTED, or without a connect EVD), InvalidParameter (private data
        over max_private_data_size).
        """
        E_ = ep_module()
        ia = self._ia
        with ia._progress.lock:
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
                check_handle(ep, E_.EP, "ep", "INVALID_HANDLE_EP")
                ep._require("accept")
            private_data = check_private_data(private_data, 4)
            if ep._connect_evd is None:
                raise InvalidState("the EP has no connect EVD", subtype="INVALID_STATE_EP_EVD_CONNECT")
            self._destroy()
            ia._cm.accept(self, ep, private_data)

    def reject(self, private_data=b""):
        """dat_cr_reject: refuse; the requester gets PEER_REJECTED carrying `private_data`."""
        ia = self._ia
        with ia._progress.lock:
            self._check()
            private_data = check_private_data(private_data, 2)
            self._destroy()
            if self._local_ep is not None:
                ep_state.fire(self._local_ep, V.REJECT)
            if not self._cancelled:
                ia._cm.send(self.remote_ia_address, encode(REJ, self._conn_id, ia._hca.address,
                                                           reason=REASON_CONSUMER,
                                                           private_data=private_data))

    def handoff(self, conn_qual):
        """dat_cr_handoff: pass the request to this IA's PSP on `conn_qual`, whose EVD
        gets a new CONNECTION_REQUEST_EVENT. Raises InvalidParameter if no PSP listens there."""
        ia = self._ia
        with ia._progress.lock:
            self._check()
            sp = ia._cm.sps.get(check_conn_qual(conn_qual, 2))
            if not isinstance(sp, PSP):
                raise bad_arg(2, f"no PSP of this IA listens on conn_qual {conn_qual!r}")
            if self._local_ep is not None:
                raise InvalidState("a CR that came to an RSP cannot be handed off")
            self._destroy()
            cr = CR(ia, sp, conn_qual, self.remote_ia_address, self._conn_id, self._pz,
                    self._segment, self.private_data, None)
            cr._cancelled = self._cancelled
            sp._evd._post(E.CONNECTION_REQUEST_EVENT, CrArrival(sp, ia._hca.address, conn_qual, cr))

    def _destroy(self):
        self._mark_freed()
        self._ia._cm.crs.pop((self.remote_ia_address, self._conn_id), None)


class ConnectionManager:
    """One IA's service points, connection requests and handshakes in flight."""

    def __init__(self, ia):
        self.ia = ia
        self.hca = ia._hca
        self.sps = {}               # conn_qual -> PSP or RSP
        self.crs = {}               # (peer address, conn_id) -> CR not yet accepted or rejected
        self.active = {}            # conn_id -> Connection: our connects awaiting REP/REJ
        self.passive = {}           # (peer address, conn_id) -> Connection: accepted, awaiting RTU
        self._ids = itertools.count(1)
        self._probe = np.frombuffer(secrets.token_bytes(8), dtype=np.uint64).copy()
        self._scratch = np.zeros(1, dtype=np.uint64)

    # Service points.

    def psp_create(self, conn_qual, evd, flags):
        flags = check_choice(flags, 4, "flags", (PspFlags.CONSUMER, PspFlags.PROVIDER))
        if flags == PspFlags.PROVIDER:
            raise ModelNotSupported("PspFlags.PROVIDER (provider-created EPs) is not supported; "
                                    "use PspFlags.CONSUMER and accept with your own EP")
        if conn_qual in self.sps:
            raise ConnQualInUse(f"conn_qual {conn_qual} is already in use on this IA")
        if len(self.sps) >= limits.MAX_PSPS:
            raise InsufficientResources(f"the IA has {limits.MAX_PSPS} service points already")
        return PSP(self.ia, conn_qual, evd, PspFlags(flags))

    def add_sp(self, conn_qual, sp):
        self.sps[conn_qual] = sp
        self.hca.listen(conn_qual, True)

    def remove_sp(self, conn_qual):
        self.sps.pop(conn_qual, None)
        self.hca.listen(conn_qual, False)

    def free_conn_qual(self):
        for _ in range(64):
            q = CONN_QUAL_ANY_BASE + secrets.randbelow(CONN_QUAL_MAX - CONN_QUAL_ANY_BASE)
            if q not in self.sps:
                return q
        raise ConnQualUnavailable("no free connection qualifier was found")

    # Active side.

    def connect(self, ep, address, conn_qual, seconds, private_data):
        if parse_address(address) is None:
            raise InvalidAddress(f"{address!r} is not an IA address (ia.address of a peer)",
                                 subtype="INVALID_ADDRESS_MALFORMED")
        conn_id = next(self._ids)
        name = f"{self.hca.prefix}.c{conn_id}"
        with hardware_errors():
            segment = ring.create_connection_segment(name)
        ep_state.fire(ep, V.CONNECT)
        ep.remote_ia_address, ep.remote_port_qual, ep.local_port_qual = address, conn_qual, conn_id
        conn = Connection(ep, conn_id, address, None, True)
        conn.segment = segment
        ep._conn = conn
        try:
            conn.peer = self.hca.peer(address)
            if not conn.peer.listens(conn_qual):
                ep_state.fire(ep, V.NON_PEER_REJECTED)
                return
            self.hca.cm_send(address, encode(REQ, conn_id, self.hca.address, conn_qual=conn_qual,
                                             pz=ep._pz._id, segment=name, private_data=private_data))
        except PeerUnreachable:
            ep_state.fire(ep, V.UNREACHABLE)
            return
        if seconds is not None:
            conn.deadline = time.monotonic() + seconds
        self.active[conn_id] = conn
        self._update_timer()

    def abandon(self, ep):
        """The active side gives up a connection attempt: tell the passive side."""
        conn = ep._conn
        if conn is not None and conn.active and self.active.pop(conn.conn_id, None) is not None:
            self.send(conn.peer_address, encode(CANCEL, conn.conn_id, self.hca.address))
            self._update_timer()

    def forget(self, ep):
        """Drop the handshake state of an EP that left it (any outcome)."""
        conn = ep._conn
        if conn is None:
            return
        ep._conn = None
        if conn.active:
            self.active.pop(conn.conn_id, None)
            self._update_timer()
        else:
            self.passive.pop((conn.peer_address, conn.conn_id), None)
        if conn.segment is not None and conn.active and ep._qp is None:
            conn.segment.unlink()
            conn.segment.close()
        conn.segment = None

    # The handlers of received messages (cm_state.ACTIVE and PASSIVE say which runs
    # when); each takes the Received message.

    def _complete_connect(self, m):
        """REP for our REQ: the connection is up on our side; RTU tells the passive side."""
        conn = self.active.pop(m.conn_id)
        self._update_timer()
        ep = conn.ep
        conn.segment.unlink()               # both sides have it mapped: its name can go
        conn.peer_pz = m.pz
        qp = ring.QueuePair(conn.segment, 0, conn.peer, ep, ep._take_recv_source())
        conn.segment = None
        qp.publish_probe(self._probe)
        ep._attach(qp, conn.peer)
        self.send(m.address, encode(RTU, m.conn_id, self.hca.address))
        ep._conn = None
        ep_state.fire(ep, V.CONNECT_RESPONSE, m.private_data)

    def _refuse_connect(self, m):
        ep = self.active[m.conn_id].ep
        if m.reason == REASON_CONSUMER:
            ep_state.fire(ep, V.PEER_REJECTED, m.private_data)
        else:
            ep_state.fire(ep, V.NON_PEER_REJECTED)

    def _cancel_late_reply(self, m):
        self.send(m.address, encode(CANCEL, m.conn_id, self.hca.address))

    # Passive side.

    def _take_request(self, m):
        """REQ: a CR for the PSP's consumer, or for the RSP's EP; NON_PEER if nobody listens."""
        address, conn_id, conn_qual = m.address, m.conn_id, m.conn_qual
        sp = self.sps.get(conn_qual)
        if sp is None:
            self.send(address, encode(REJ, conn_id, self.hca.address, reason=REASON_NON_PEER))
            return
        if isinstance(sp, RSP):
            ep = sp._ep
            sp._destroy()                   # DAT: a reserved SP is used up by its request
            ep_state.fire(ep, V.REQUEST)
            ep.remote_ia_address = address
            cr = CR(self.ia, None, conn_qual, address, conn_id, m.pz, m.segment, m.private_data, ep)
            sp._evd._post(E.CONNECTION_REQUEST_EVENT, CrArrival(None, self.hca.address, conn_qual, cr))
        else:
            cr = CR(self.ia, sp, conn_qual, address, conn_id, m.pz, m.segment, m.private_data, None)
            sp._evd._post(E.CONNECTION_REQUEST_EVENT, CrArrival(sp, self.hca.address, conn_qual, cr))

    def _complete_accept(self, m):
        """RTU for our REP: the connection is up on our side too."""
        conn = self.passive.pop((m.address, m.conn_id))
        conn.ep._conn = None
        ep_state.fire(conn.ep, V.ESTABLISHED)

    def _cancel_request(self, m):
        self.crs[(m.address, m.conn_id)]._cancelled = True

    def _fail_accept(self, m):
        ep_state.fire(self.passive[(m.address, m.conn_id)].ep, V.CONNECT_ERROR)

    def _ignore(self, m):
        pass

    def accept(self, cr, ep, private_data):
        address, conn_id = cr.remote_ia_address, cr._conn_id
        ep_state.fire(ep, V.ACCEPT)
        ep.remote_ia_address, ep.remote_port_qual, ep.local_port_qual = address, conn_id, cr.conn_qual
        conn = Connection(ep, conn_id, address, None, False)
        conn.peer_pz = cr._pz
        ep._conn = conn
        if cr._cancelled:
            ep_state.fire(ep, V.CONNECT_ERROR)
            return
        try:
            conn.peer = self.hca.peer(address)
            segment = ring.open_connection_segment(cr._segment)
        except (PeerUnreachable, posix_ipc.ExistentialError, OSError, ring.RingCorrupt):
            ep_state.fire(ep, V.CONNECT_ERROR)
            return
        qp = ring.QueuePair(segment, 1, conn.peer, ep, ep._take_recv_source())
        qp.publish_probe(self._probe)
        ep._attach(qp, conn.peer)
        self.passive[(address, conn_id)] = conn
        if not self.send(address, encode(REP, conn_id, self.hca.address, pz=ep._pz._id,
                                         private_data=private_data)):
            ep_state.fire(ep, V.CONNECT_ERROR)

    # Shared.

    def send(self, address, data):
        """Send a CM message; False if the peer is unreachable."""
        try:
            self.hca.cm_send(address, data)
            return True
        except PeerUnreachable:
            return False

    def probe(self, ep):
        """After ESTABLISHED: test whether we can read the peer's memory by CMA."""
        ep._qp.run_probe(self._scratch)

    def process(self):
        """Handle every CM message waiting in the IA's inbox, as cm_state's tables say."""
        for data, pid in self.hca.cm_receive():
            try:
                m = decode(data)
            except ValueError:
                continue
            parsed = parse_address(m.address)
            if parsed is None or parsed[0] != pid or len(m.private_data) > limits.MAX_PRIVATE_DATA_SIZE:
                continue                    # not from whom it claims to be
            self._handlers[cm_state.handler(self._handshake(m), m.kind)](self, m)

    def _handshake(self, m):
        """The cm_state.Handshake state of the handshake the message `m` belongs to."""
        if m.kind in cm_state.ACTIVE_MESSAGES:
            conn = self.active.get(m.conn_id)
            return H.REQ_SENT if conn is not None and conn.peer_address == m.address else H.GONE
        key = (m.address, m.conn_id)
        if key in self.passive:
            return H.REP_SENT
        cr = self.crs.get(key)
        if cr is None:
            return H.GONE
        return H.CR_CANCELLED if cr._cancelled else H.CR_PENDING

    def check_timers(self, now):
        for conn in [c for c in self.active.values() if c.deadline is not None and c.deadline <= now]:
            self.send(conn.peer_address, encode(CANCEL, conn.conn_id, self.hca.address))
            ep_state.fire(conn.ep, V.TIMER_EXPIRED)

    def check_peers(self):
        """Handshakes whose peer died fail instead of waiting forever."""
        for conn in [c for c in self.active.values() if not c.peer.alive()]:
            ep_state.fire(conn.ep, V.UNREACHABLE)
        for conn in [c for c in self.passive.values() if not c.peer.alive()]:
            ep_state.fire(conn.ep, V.CONNECT_ERROR)

    def _update_timer(self):
        deadlines = [c.deadline for c in self.active.values() if c.deadline is not None]
        self.ia._progress.next_timer = min(deadlines) if deadlines else None

    _handlers = {
        "complete_connect": _complete_connect,
        "refuse_connect": _refuse_connect,
        "cancel_late_reply": _cancel_late_reply,
        "take_request": _take_request,
        "complete_accept": _complete_accept,
        "cancel_request": _cancel_request,
        "fail_accept": _fail_accept,
        "ignore": _ignore,
    }
