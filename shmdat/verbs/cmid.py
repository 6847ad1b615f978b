"""rdma_cm over shm0 (pyverbs.cmid): AddrInfo, ConnParam, UDParam, CMEventChannel, CMEvent,
CMID (JoinMCAttrEx exists; multicast is EOPNOTSUPP).

The device owns the loopback addresses (127.0.0.0/8) and the port space on
them: bound and listening (address, port) pairs are in a machine-wide table
(hw/cm_ports.py), so a connect finds its listener's process, and a port whose
owner died is free again. The handshake is IB CM's, as rdma_cm runs it over
RoCE, in messages through each process's HCA inbox (hw/hca.py):

    active                                    passive
    connect      REQ(qp_num, psn, private data) ->  CONNECT_REQUEST (a new CMID)
                          <- REP(qp_num, psn, private data)      accept
    ESTABLISHED (or CONNECT_RESPONSE without a CMID QP, then establish)
                 RTU ->                              ESTABLISHED
    reject:               <- REJ(reason 28, private data)  -> REJECTED (status 28)
    nobody listens: the device answers REJECTED with status 8 (invalid service ID)
    disconnect:  DREQ -> DISCONNECTED (and an automatic DREP -> DISCONNECTED)

The QPs are ordinary verbs QPs (qp.py) moved with init_qp_attr's attributes:
qp_num and PSN travel in REQ and REP. Private data has IB CM's sizes (56 bytes
on connect, 196 on accept, 148 on reject; EINVAL over; SHMDAT_CM_PRIVATE_DATA
raises them), and an event carries its message's whole private data field,
zero-filled past what was sent, as on RoCE. A process has one rdma_cm agent
on one Context and PD (librdmacm opens each device once); it runs in that
Context's progress: CM messages, and every LOOK_SLICE (asleep: LIVENESS_SLICE) a look at
the peers (a dead peer's connected CMID gets DISCONNECTED, a handshake with one
UNREACHABLE). CMIDs left open close at exit (sending DREQ, freeing ports).

RDMA_PS_UDP ids (UD) run IB CM's SIDR instead, as rdma_cm does for them:

    connect      SIDR_REQ(private data) ->            CONNECT_REQUEST (a new CMID)
    ESTABLISHED (ud: ah_attr, qp_num, qkey) <- SIDR_REP(qp_num, qkey, private data)  accept
    reject:      UNREACHABLE (status 2) <- SIDR_REP(status 2, private data)          reject
    nobody listens (or a TCP id listens): UNREACHABLE with status 1 (unsupported)

The passive side gets no ESTABLISHED, and neither side DISCONNECTED: UD has no
connection. A UD id's QP goes to RTS by itself with Q_Key RDMA_UDP_QKEY, as
librdmacm's ucma_init_ud_qp takes it. Private data: 180 bytes on connect
(SIDR REQ's 216 less the 36-byte header), 136 on accept and reject (SIDR REP's).
The port table is one for both port spaces (the kernel keeps one per space).
"""

import atexit
import collections
import errno
import ipaddress
import itertools
import os
import random
import socket
import struct
import threading

from ..hw import cm_ports
from ..hw.cm_ports import AddressInUse, PortsExhausted
from ..hw.errors import PeerUnreachable
from ..hw.hca import address_of, parse_address
from . import checks, libibverbs_enums as e
from . import librdmacm_enums as ce
from .addr import AH, AHAttr, GlobalRoute
from .base import PyverbsCM, PyverbsObject
from .cq import CQ, CompChannel
from .device import DEVICE_NAME, PORT, Context, events_queued
from .gid import GID
from .mr import MR
from .pd import PD
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError
from .qp import QP, QPAttr, QPInitAttr
from .wr import SGE, RecvWR, SendWR

ET = ce.rdma_cm_event_type
# IB CM's private data fields, less rdma_cm's 36-byte header in the REQ.
PRIVATE_DATA_CONNECT, PRIVATE_DATA_ACCEPT, PRIVATE_DATA_REJECT = 56, 196, 148
# SHMDAT_CM_PRIVATE_DATA=<bytes> raises every message's limit to that many bytes, up to what
# one CM message (a datagram of at most 64 KiB) carries: for programs that need no RoCE limits.
LARGE_PRIVATE_DATA_ENV = "SHMDAT_CM_PRIVATE_DATA"
LARGEST_PRIVATE_DATA = 65000
PRIVATE_DATA_SIDR_REQ, PRIVATE_DATA_SIDR_REP = 180, 136   # SIDR's, less the header in the REQ
SIDR_SUCCESS, SIDR_UNSUPPORTED, SIDR_REJECT = 0, 1, 2    # SIDR REP's status (UNREACHABLE's)
RDMA_UDP_QKEY = 0x01234567              # rdma_cma.h's: the Q_Key of every UD id
REJ_INVALID_SERVICE_ID = 8              # IB CM's reject reasons (the REJECTED event's status)
REJ_CONSUMER_DEFINED = 28
MAX_RD_ATOMIC = 128                     # the device's max_qp_rd_atom
RDMA_MAX_RESP_RES = RDMA_MAX_INIT_DEPTH = 0xFF      # "as many as the device has"
GID_INDEX = 3                           # ::ffff:127.0.0.1, RoCE v2
ACK_TIMEOUT = 14                        # the QP's timeout unless RDMA_OPTION_ID_ACK_TIMEOUT says
LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")

# A CMID's states.
(IDLE, BOUND, ADDR_RESOLVED, ROUTE_RESOLVED, LISTENING, CONNECTING, REQUEST, ACCEPTED, RESPONSE,
 CONNECTED, DISCONNECTING, DISCONNECTED, DONE) = range(13)
_HANDSHAKE_OR_UP = (ACCEPTED, RESPONSE, CONNECTED)

# The messages: a magic (the device's inbox carries other messages too), kind, reason,
# address length, port, to (the receiver's id, 0 in a REQ), from (the sender's id),
# destination and source IPv4, qp_num, psn, responder resources, initiator depth, retry,
# rnr retry; then the sender's HCA address and the private data.
REQ, REP, RTU, REJ, DREQ, DREP, SIDR_REQ, SIDR_REP = range(1, 9)    # SIDR_REP's psn is its qkey
_MAGIC = b"shmdatCM"
_MSG = struct.Struct("<8sBBHHxxQQIIIIBBBB")


def _encode(kind, sender, to=0, frm=0, reason=0, port=0, dst=0, src=0, qpn=0, psn=0,
            param=(0, 0, 0, 0), private_data=b""):
    a = sender.encode()
    return _MSG.pack(_MAGIC, kind, reason, len(a), port, to, frm, dst, src, qpn, psn,
                     *param) + a + private_data


class _Message:
    __slots__ = ("kind", "reason", "port", "to", "frm", "dst", "src", "qpn", "psn", "param",
                 "address", "private_data")


def is_cm_message(data):
    """Whether a message of the device's inbox is rdma_cm's."""
    return data[:len(_MAGIC)] == _MAGIC


def _decode(data):
    """A _Message, or None if `data` is not one."""
    if len(data) < _MSG.size or not is_cm_message(data):
        return None
    m = _Message()
    (_magic, m.kind, m.reason, alen, m.port, m.to, m.frm, m.dst, m.src, m.qpn, m.psn,
     *param) = _MSG.unpack_from(data)
    m.param = tuple(param)
    o = _MSG.size
    m.address = data[o:o + alen].decode("ascii", "replace")
    m.private_data = bytes(data[o + alen:])
    return m


def _limit(size):
    """A message's private data limit: IB CM's `size`, or the larger one the environment asks."""
    larger = os.environ.get(LARGE_PRIVATE_DATA_ENV, "")
    return max(size, min(int(larger), LARGEST_PRIVATE_DATA)) if larger.isdigit() else size


# Addresses.

def _host(name, argument, what):
    """An IPv4 address (str) for a name or dotted address, as rdma_getaddrinfo resolves it."""
    name = checks.text(name, argument)
    try:
        return str(ipaddress.IPv4Address(name))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(name, None, socket.AF_INET)[0][4][0]
    except (OSError, UnicodeError, ValueError):         # ValueError: a NUL in the name
        raise PyverbsRDMAError(f"{what}: cannot resolve {name!r} to an IPv4 address",
                               errno.EADDRNOTAVAIL) from None


def _service(service, argument, what):
    """A port number for a service name or number (None: 0)."""
    if service is None:
        return 0
    if not isinstance(service, int) or isinstance(service, bool):
        service = checks.text(service, argument)
        if service.isdecimal():
            service = int(service)
        else:
            try:
                service = socket.getservbyname(service, "tcp")
            except (OSError, ValueError):
                raise PyverbsRDMAError(f"{what}: unknown service {service!r}", errno.EINVAL) from None
    if not 0 <= service <= 0xFFFF:
        raise PyverbsRDMAError(f"{what}: {service!r} is not a port", errno.EINVAL)
    return service


def _ip(address):
    return int(ipaddress.IPv4Address(address))


def _on_device(address):
    return ipaddress.IPv4Address(address) in LOOPBACK


class AddrInfo(PyverbsObject):
    """rdma_getaddrinfo: `AddrInfo(src, dst, src_service, dst_service, port_space, flags)`.

    With RAI_PASSIVE, `src` (or the wildcard 0.0.0.0) and `src_service` are the
    address to listen on; otherwise `dst` (127.0.0.1 if none, as getaddrinfo
    gives) and `dst_service` are the address to connect to, and `src` the one to
    connect from. `src_addr` and `dst_addr` are (address, port) or None, as
    rdma_addrinfo's ai_src_addr and ai_dst_addr. Raises PyverbsUserError (an
    address that is not a str), PyverbsRDMAError: EADDRNOTAVAIL (a name that
    does not resolve to IPv4), EINVAL (a service that is not a port).
    """

    def __init__(self, src=None, dst=None, src_service=None, dst_service=None, port_space=0,
                 flags=0):
        super().__init__()
        self.src_addr = self.dst_addr = None
        self.port_space, self.flags = ce.RDMA_PS_TCP, 0
        if src or dst or src_service or dst_service:
            self.get_addrinfo(src, dst, src_service, dst_service, port_space, flags)

    def get_addrinfo(self, src=None, dst=None, src_service=None, dst_service=None, port_space=0,
                     flags=0):
        """rdma_getaddrinfo (see the class)."""
        what = "Failed to get Address Info"
        flags, port_space = checks.uint(flags, "flags"), checks.uint(port_space, "port_space")
        if flags & ce.RAI_PASSIVE:
            self.src_addr = (_host(src, "src", what) if src else "0.0.0.0",
                             _service(src_service, "src_service", what))
            self.dst_addr = None
        else:
            self.src_addr = ((_host(src, "src", what), _service(src_service, "src_service", what))
                             if src else None)
            self.dst_addr = (_host(dst, "dst", what) if dst else "127.0.0.1",
                             _service(dst_service, "dst_service", what))
        self.port_space, self.flags = port_space or ce.RDMA_PS_TCP, flags

    def close(self):
        """rdma_freeaddrinfo (nothing to free)."""


class ConnParam(PyverbsObject):
    """rdma_conn_param: `ConnParam(resources, depth, flow_control, retry, rnr_retry,
    srq, qp_num, data_len)`. As pyverbs': set_private_data keeps at most
    data_len bytes of what it is given (none if data_len is 0)."""

    def __init__(self, resources=1, depth=1, flow_control=0, retry=5, rnr_retry=5, srq=0, qp_num=0,
                 data_len=0):
        super().__init__()
        for name, value in (("resources", resources), ("depth", depth), ("flow_control", flow_control),
                            ("retry", retry), ("rnr_retry", rnr_retry), ("srq", srq)):
            checks.uint(value, name, 8)
        checks.uint(qp_num, "qp_num")
        checks.uint(data_len, "data_len")       # the environment may allow more than 8 bits' worth
        self.responder_resources, self.initiator_depth = resources, depth
        self.flow_control, self.retry_count, self.rnr_retry_count = flow_control, retry, rnr_retry
        self.srq, self.qp_num, self.data_len = srq, qp_num, data_len
        self._private_data = b""

    @property
    def qpn(self):
        return self.qp_num

    @qpn.setter
    def qpn(self, val):
        self.qp_num = val

    @property
    def private_data(self):
        return self._private_data

    def set_private_data(self, data):
        self._private_data = bytes(checks.data(data, "data")[:self.data_len])

    def _values(self):
        return (self.responder_resources, self.initiator_depth, self.retry_count,
                self.rnr_retry_count)


class UDParam(PyverbsObject):
    """rdma_ud_param of an event: `ah_attr`, `qp_num` and `qkey` of the passive side,
    in a UD id's ESTABLISHED (zero in other events). Raises PyverbsUserError (not a
    CMEvent)."""

    def __init__(self, cm_event):
        super().__init__()
        if not isinstance(cm_event, CMEvent):
            raise PyverbsUserError(f"UDParam takes a CMEvent, not {type(cm_event)}")
        self.ah_attr, self.qp_num, self.qkey = cm_event._ud or (AHAttr(), 0, 0)


class JoinMCAttrEx(PyverbsObject):
    """rdma_cm_join_mc_attr_ex: (addr, comp_mask, join_flags); shm0 has no multicast,
    so join_multicast refuses it."""

    def __init__(self, addr, comp_mask=0, join_flags=0):
        super().__init__()
        if not isinstance(addr, AddrInfo):
            raise PyverbsUserError(f"addr must be an AddrInfo, not {type(addr)}")
        self.addr, self.comp_mask, self.join_flags = addr, comp_mask, join_flags


class _Event:
    """An rdma_cm_event as the agent queues it."""
    __slots__ = ("event_type", "status", "id", "listen_id", "private_data", "ud")

    def __init__(self, event_type, cmid, status=0, listen_id=None, private_data=b"", size=0,
                 ud=None):
        self.event_type, self.id, self.status, self.listen_id = event_type, cmid, status, listen_id
        self.ud = ud                    # a UD ESTABLISHED's (ah_attr, qp_num, qkey)
        self.private_data = bytes(private_data).ljust(size, b"\0")


class CMEventChannel(PyverbsCM):
    """rdma_create_event_channel: where the events of the CMIDs made on it queue.

    Its fd (C's rdma_event_channel.fd; shm0dv.cm_channel_fd, made when first asked
    for) polls readable while an event waits; with O_NONBLOCK set on it, CMEvent
    runs the device once and raises EAGAIN if still none waits."""

    def __init__(self):
        super().__init__()
        self._events = collections.deque()
        self._r = self._w = None            # the fd's pipe: one byte in it while events wait

    def _fd(self):
        """The channel's fd (see the class). Raises PyverbsRDMAError (EBADF: closed)."""
        agent = _live_agent()       # none yet: no id of this channel can queue an event
        with agent.ctx.lock if agent is not None else _no_agent_lock:
            self._check_open("Failed to get the event channel's fd")
            if self._r is None:
                self._r, self._w = os.pipe()
                if self._events:
                    os.write(self._w, b"\1")
            return self._r

    def _queue(self, event):
        """An event arrives (under the agent's Context lock); none on a closed channel."""
        if self._closed:
            return
        if not self._events and self._w is not None:
            os.write(self._w, b"\1")
        self._events.append(event)

    def _discard(self, events):
        """Take `events` off the queue (their ids are going)."""
        had = bool(self._events)
        for event in events:
            self._events.remove(event)
        if had and not self._events and self._r is not None:
            os.read(self._r, 1)

    def _get(self, what):
        """The next event, waiting for it while the device runs (each event goes to
        one of the threads waiting here); EAGAIN if none after one run of the device
        when the fd is non-blocking."""
        non_blocking = self._r is not None and not os.get_blocking(self._r)
        if non_blocking and not self._events and _live_agent() is None:
            self._check_open(what)
            raise PyverbsRDMAError(what, errno.EAGAIN)  # no id, no event: nor the device
        ctx = _agent().ctx
        with ctx.lock:
            self._check_open(what)
            if not self._events and non_blocking:
                ctx.progress()
                if not self._events:
                    raise PyverbsRDMAError(what, errno.EAGAIN)
            ctx.block(lambda: bool(self._events) or self._closed)
            self._check_open(what)
            event = self._events.popleft()
            if not self._events and self._r is not None:
                os.read(self._r, 1)
            return event

    def _release(self):
        """rdma_destroy_event_channel: a thread waiting on it raises EBADF."""
        self._events.clear()
        if self._r is not None:
            os.close(self._r)
            os.close(self._w)
        if _the_agent is not None and not _the_agent.ctx._closed:
            _the_agent.ctx.wake_waiters()


class CMEvent(PyverbsObject):
    """rdma_get_cm_event: `CMEvent(channel)` waits for the channel's next event.

    `event_type`, `status` (a REJECTED event's IB CM reason: 28 when the peer
    rejected, 8 when nobody listens there; -ETIMEDOUT when UNREACHABLE;
    -ECONNRESET on a DISCONNECTED whose cause is the peer process's death, 0 on one
    its DREQ caused: shm0's, real rdma_cm says 0),
    `private_data` (the message's whole field), `id` (the CMID it is about: a new
    one for CONNECT_REQUEST) and `listen_id`, as the C struct has them;
    event_str(), ack_cm_event(). Raises PyverbsUserError (not a channel),
    PyverbsRDMAError (EBADF: the channel is closed; EAGAIN: none waits and the
    channel's fd, shm0dv.cm_channel_fd, is O_NONBLOCK, as rdma_get_cm_event).
    """

    def __init__(self, channel):
        super().__init__()
        if not isinstance(channel, CMEventChannel):
            raise PyverbsUserError(f"CMEvent takes a CMEventChannel, not {type(channel)}")
        event = channel._get("Failed to create CMEvent")
        self.event_type, self.status, self.id = event.event_type, event.status, event.id
        self.listen_id, self.private_data = event.listen_id, event.private_data
        self._ud = event.ud
        self._acked = False

    def event_str(self):
        """rdma_event_str."""
        return ET(self.event_type).name

    def ack_cm_event(self):
        """rdma_ack_cm_event. Raises PyverbsRDMAError (EINVAL: acked already)."""
        if self._acked:
            raise PyverbsRDMAError(f"Failed to Acknowledge Event - {self.event_str()}", errno.EINVAL)
        self._acked = True

    def close(self):
        """Acknowledge the event if it is not yet."""
        self._acked = True


class _Agent:
    """This process's rdma_cm: one Context and PD, the CMIDs, and the CM protocol."""

    def __init__(self):
        self.ctx = Context(name=DEVICE_NAME)
        self.pd = PD(self.ctx)
        self.address = self.ctx.hca.address
        self.owner = self.ctx.owner
        self.cmids = set()              # every open CMID: closed at exit
        self.ids = {}                   # conn id -> CMID in a handshake or connected
        self.listeners = {}             # (address, port) -> listening CMID
        self.ctx.cm = self

    def event(self, cmid, event_type, about=None, **kwargs):
        """Queue an event on `cmid`'s channel about `cmid` (or `about`: the new id of a
        CONNECT_REQUEST), under the context's lock."""
        cmid._channel._queue(_Event(event_type, about or cmid, **kwargs))
        events_queued.bump()
        self.ctx.wake_waiters()

    def send(self, cmid, kind, **fields):
        """Send a CM message to `cmid`'s peer; False if it is not there."""
        try:
            self.ctx.hca.cm_send(cmid._peer_address,
                                 _encode(kind, self.address, to=cmid._peer_id, frm=cmid._conn_id,
                                         **fields))
            return True
        except PeerUnreachable:
            return False

    def take(self, data, pid):
        """Handle a CM message from the Context's inbox, sent by process `pid` (under the
        context's lock)."""
        m = _decode(data)
        parsed = None if m is None else parse_address(m.address)
        if parsed is None or parsed[0] != pid:
            return                          # not from whom it claims to be
        if m.kind in (REQ, SIDR_REQ):
            self._on_req(m)
            return
        cmid = self._addressed(m)
        if cmid is None:
            if m.kind == DREQ:              # for an id that is gone: answered all the same
                self._answer(m, DREP)
            return
        handler = {REP: cmid._on_rep, RTU: cmid._on_rtu, REJ: cmid._on_rej, DREQ: cmid._on_dreq,
                   DREP: cmid._on_drep, SIDR_REP: cmid._on_sidr_rep}.get(m.kind)
        if handler is not None:
            handler(m)

    def _addressed(self, m):
        """The CMID a message is for: by our id, or (an active side that gives up before
        it knows our id) by its sender's; None if late or not ours."""
        if m.to:
            cmid = self.ids.get(m.to)
            if cmid is not None and cmid._peer_address == m.address and cmid._peer_id in (0, m.frm):
                return cmid
            return None
        return next((c for c in self.ids.values()
                     if c._peer_address == m.address and c._peer_id == m.frm), None)

    def _answer(self, m, kind, **fields):
        """Answer a message that no CMID of ours takes."""
        try:
            self.ctx.hca.cm_send(m.address, _encode(kind, self.address, to=m.frm, **fields))
        except PeerUnreachable:
            pass

    def _on_req(self, m):
        listener = self.listeners.get((m.dst, m.port)) or self.listeners.get((cm_ports.ANY, m.port))
        sidr = m.kind == SIDR_REQ
        if listener is None or len(m.private_data) > LARGEST_PRIVATE_DATA \
                or (listener.port_space == ce.RDMA_PS_UDP) != sidr:
            if sidr:
                self._answer(m, SIDR_REP, reason=SIDR_UNSUPPORTED)
            else:
                self._answer(m, REJ, reason=REJ_INVALID_SERVICE_ID)
            return
        child = CMID()
        child._join(self, listener._sync, listener._channel, listener.event_channel)
        child._take_request(m, listener)
        self.event(listener, ET.RDMA_CM_EVENT_CONNECT_REQUEST, about=child, listen_id=listener,
                   private_data=m.private_data,
                   size=PRIVATE_DATA_SIDR_REQ if sidr else PRIVATE_DATA_CONNECT)

    def check_peers(self):
        """Every LOOK_SLICE (asleep, LIVENESS_SLICE): handshakes and connections whose peer
        process died end."""
        for cmid in list(self.ids.values()):
            if cmid._peer is not None and not cmid._peer.alive():
                cmid._peer_died()

    def close_all(self):
        for cmid in list(self.cmids):
            cmid.close()


_the_agent = None


def _live_agent():
    """The rdma_cm agent if it is open, else None (none is made)."""
    if _the_agent is None or _the_agent.ctx._closed:
        return None
    return _the_agent


_no_agent_lock = threading.Lock()


def _agent():
    """This process's rdma_cm agent, made with the first CMID that needs the device."""
    global _the_agent
    if _the_agent is None or _the_agent.ctx._closed:
        _the_agent = _Agent()
    return _the_agent


def _forget_agent():
    """In a forked child: the parent's agent and its Context are not ours."""
    global _the_agent
    _the_agent = None


os.register_at_fork(after_in_child=_forget_agent)


@atexit.register
def _close_all():
    """CMIDs left open at exit close: connected peers get DISCONNECTED, ports are freed
    (registered after device.py's handler, so it runs before the Contexts close)."""
    if _the_agent is not None and not _the_agent.ctx._closed:
        with _the_agent.ctx.lock:
            _the_agent.close_all()


_conn_ids = itertools.count(1)


class CMID(PyverbsCM):
    """rdma_cm_id: `CMID(AddrInfo, qp_init_attr=None, pd=None)` is synchronous
    (rdma_create_ep: its calls wait for their event), `CMID(CMEventChannel,
    port_space=RDMA_PS_TCP)` asynchronous (rdma_create_id: events go to the
    channel), `CMID(CMEvent, listen_id=...)` takes the id a CONNECT_REQUEST made.

    Raises PyverbsUserError (another creator, a missing listen_id, arguments of
    the wrong type), PyverbsRDMAError: EPROTONOSUPPORT (a port space other than
    RDMA_PS_TCP and RDMA_PS_UDP), and the errors of bind_addr, resolve_addr,
    resolve_route and create_qp for a synchronous id.
    """

    def __init__(self, creator=None, qp_init_attr=None, pd=None, port_space=ce.RDMA_PS_TCP,
                 listen_id=None):
        super().__init__()
        self.event_channel = None
        self.ctx = self.pd = self.qp = None
        self.state = IDLE
        self.port_space = port_space                # RDMA_PS_TCP (RC) or RDMA_PS_UDP (UD)
        self.src_addr = self.dst_addr = None        # (address, port)
        self._agent = None
        self._sync = False
        self._channel = None
        self._conn_id = next(_conn_ids)
        self._peer = self._peer_address = None
        self._peer_id = 0
        self._remote = None                         # the peer's (qp_num, psn, param)
        self._param = ConnParam()._values()         # ours: resources, depth, retry, rnr retry
        self._psn = random.getrandbits(24)
        self._ack_timeout = ACK_TIMEOUT
        self._bound = None                          # (address int, port) held in the port table
        self._qp_init_attr = None                   # a sync listener's, for its requests' QPs
        self._own = []                              # the QP, CQs, channels and MRs it made
        self._disconnected_got = False
        self._addrinfo = None                       # resolve_addrinfo's, until queried
        self._resolving = False
        self._private_data_limit = None             # shm0dv's, for every message; None: IB CM's
        if creator is None:
            return                                  # the agent's, for a request
        what = "Failed to create CM ID"
        if isinstance(creator, CMEvent):
            if listen_id is None:
                raise PyverbsUserError("listen ID not provided")
            self._take_over(creator.id, what)
            return
        if isinstance(creator, AddrInfo):
            self.port_space = creator.port_space
        elif not isinstance(creator, CMEventChannel):
            raise PyverbsUserError(f"Cannot create CM ID from {type(creator)}")
        if self.port_space not in (ce.RDMA_PS_TCP, ce.RDMA_PS_UDP):
            raise PyverbsRDMAError(f"{what}: shm0's rdma_cm has RDMA_PS_TCP (RC) and RDMA_PS_UDP "
                                   "(UD)", errno.EPROTONOSUPPORT)
        if isinstance(creator, CMEventChannel):
            creator._check_open(what)
            self._join(_agent(), False, creator, creator)
        else:
            self._create_ep(creator, qp_init_attr, pd)

    def _join(self, agent, sync, channel, event_channel):
        self._agent, self._sync = agent, sync
        self._channel = CMEventChannel() if sync else channel
        self.event_channel = event_channel
        agent.cmids.add(self)

    def _create_ep(self, ai, qp_init_attr, pd):
        """rdma_create_ep: bound (RAI_PASSIVE) or resolved, with a QP if asked."""
        if qp_init_attr is not None and not isinstance(qp_init_attr, QPInitAttr):
            raise PyverbsUserError(f"qp_init_attr must be a QPInitAttr, not {type(qp_init_attr)}")
        if pd is not None and not isinstance(pd, PD):
            raise PyverbsUserError(f"pd must be a PD, not {type(pd)}")
        self._join(_agent(), True, None, None)
        try:
            if ai.flags & ce.RAI_PASSIVE:
                self.bind_addr(ai)
                self._qp_init_attr = qp_init_attr
            else:
                self.resolve_addr(ai)
                self.resolve_route()
            if pd is not None:
                self.pd = pd
            if qp_init_attr is not None and not ai.flags & ce.RAI_PASSIVE:
                self.create_qp(qp_init_attr)
        except BaseException:
            self.close()
            raise

    def _take_over(self, cmid, what):
        """CMID(creator=event): this object becomes the id the event is about (also when
        the requester withdrew meanwhile: the id is then DONE, as rdma_cm still hands
        it over, and the program must destroy it)."""
        if not isinstance(cmid, CMID) or cmid._closed or cmid.state not in (REQUEST, DONE):
            raise PyverbsRDMAError(f"{what}: the event made no CM ID to take", errno.EINVAL)
        with cmid._agent.ctx.lock:
            self.__dict__.update({k: v for k, v in vars(cmid).items() if k != "logger"})
            cmid._closed = True                     # the event's object is now this one
            self._agent.cmids.discard(cmid)
            self._agent.cmids.add(self)
            if self.state == REQUEST:
                self._agent.ids[self._conn_id] = self
            for event in self._channel._events:    # what was said of it since: said of this one
                if event.id is cmid:
                    event.id = self

    # What pyverbs shows.

    @property
    def context(self):
        return self.ctx

    @property
    def qpn(self):
        return self.qp.qp_num if self.qp is not None else None

    @property
    def dev_name(self):
        return DEVICE_NAME

    @property
    def port_num(self):
        return PORT

    # Addresses.

    def _check(self, what, states):
        """Raise PyverbsRDMAError: EBADF if closed, EINVAL if not in one of `states`."""
        self._check_open(what)
        if self.state not in states:
            raise PyverbsRDMAError(f"{what}: not in a state for it", errno.EINVAL)

    def _attach(self):
        """The id is on the device now (bound or resolved): its Context and PD."""
        agent = self._agent
        self.ctx = self.ctx or agent.ctx
        self.pd = self.pd or agent.pd

    def bind_addr(self, lai):
        """rdma_bind_addr to lai's source address: port 0 takes an ephemeral port.

        Raises PyverbsUserError (not an AddrInfo), PyverbsRDMAError: ENODEV (an
        address outside 127.0.0.0/8, which shm0 does not have), EADDRINUSE (that
        address and port, or the wildcard on that port, is bound by a live
        process), EADDRNOTAVAIL (no ephemeral port free), EINVAL (bound already).
        """
        what = "Failed to Bind ID"
        checks.instance(lai, AddrInfo, "lai")
        with self._agent.ctx.lock:
            self._check(what, (IDLE,))
            address, port = lai.src_addr or ("0.0.0.0", 0)
            self._bind(address, port, what)

    def _bind(self, address, port, what):
        if address != "0.0.0.0" and not _on_device(address):
            raise PyverbsRDMAError(f"{what}: shm0 has 127.0.0.0/8 only, not {address}", errno.ENODEV)
        try:
            port = cm_ports.bind(_ip(address), port, self._agent.owner)
        except AddressInUse as err:
            raise PyverbsRDMAError(f"{what}: {address}:{port}: {err}", errno.EADDRINUSE) from None
        except PortsExhausted as err:
            raise PyverbsRDMAError(f"{what}: {err}", errno.EADDRNOTAVAIL) from None
        self._bound = (_ip(address), port)
        self.src_addr = (address, port)
        self.state = BOUND
        self._attach()

    def resolve_addr(self, rai, timeout_ms=2000):
        """rdma_resolve_addr to rai's destination: RDMA_CM_EVENT_ADDR_RESOLVED, or
        ADDR_ERROR (status -ENODEV) for one outside 127.0.0.0/8. An id not bound
        yet is bound to an ephemeral port of its source address (src_addr has it).
        Raises PyverbsUserError (not an AddrInfo), PyverbsRDMAError: EINVAL (no
        destination, or not idle or bound), EADDRNOTAVAIL (no ephemeral port free);
        a synchronous id raises ENODEV."""
        what = "Failed to Resolve Address"
        checks.instance(rai, AddrInfo, "rai")
        checks.uint(timeout_ms, "timeout_ms")
        with self._agent.ctx.lock:
            self._check(what, (IDLE, BOUND))
            if rai.dst_addr is None:
                raise PyverbsRDMAError(f"{what}: the AddrInfo has no destination", errno.EINVAL)
            if rai.src_addr is not None and not _on_device(rai.src_addr[0]):
                raise PyverbsRDMAError(f"{what}: shm0 has 127.0.0.0/8 only, not {rai.src_addr[0]}",
                                       errno.ENODEV)
            if not _on_device(rai.dst_addr[0]):
                self._agent.event(self, ET.RDMA_CM_EVENT_ADDR_ERROR, status=-errno.ENODEV)
            else:
                self.dst_addr = rai.dst_addr
                if self._bound is None:     # bound to an ephemeral port, as the kernel's rdma_cm does
                    self._bind((rai.src_addr or ("127.0.0.1", 0))[0], 0, what)
                self.state = ADDR_RESOLVED
                self._attach()
                self._agent.event(self, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
        self._complete(what)

    def resolve_addrinfo(self, node=None, service=None, port_space=0, flags=0):
        """rdma_resolve_addrinfo: rdma_getaddrinfo for `node` (the source with
        RAI_PASSIVE, else the destination) and `service`, reported by
        ADDRINFO_RESOLVED (query_addrinfo has the result) or ADDRINFO_ERROR
        (`status` -errno). Raises PyverbsRDMAError (EBUSY: one is pending)."""
        what = "Failed to Resolve AddrInfo"
        with self._agent.ctx.lock:
            self._check_open(what)
            if self._resolving:
                raise PyverbsRDMAError(f"{what}: a resolution is pending", errno.EBUSY)
            ai = AddrInfo()
            try:
                if flags & ce.RAI_PASSIVE:
                    ai.get_addrinfo(src=node, src_service=service, port_space=port_space, flags=flags)
                else:
                    ai.get_addrinfo(dst=node, dst_service=service, port_space=port_space, flags=flags)
            except PyverbsRDMAError as err:
                self._agent.event(self, ET.RDMA_CM_EVENT_ADDRINFO_ERROR, status=-err.error_code)
            else:
                self._addrinfo, self._resolving = ai, True
                self._agent.event(self, ET.RDMA_CM_EVENT_ADDRINFO_RESOLVED)
        self._complete(what)

    def query_addrinfo(self):
        """rdma_query_addrinfo -> the AddrInfo resolve_addrinfo found (once). Raises
        PyverbsRDMAError (ENOENT: none resolved)."""
        what = "Failed to Query AddrInfo"
        with self._agent.ctx.lock:
            self._check_open(what)
            if not self._resolving:
                raise PyverbsRDMAError(f"{what}: nothing resolved", errno.ENOENT)
            ai, self._addrinfo, self._resolving = self._addrinfo, None, False
            return ai

    def resolve_route(self, timeout_ms=2000):
        """rdma_resolve_route: RDMA_CM_EVENT_ROUTE_RESOLVED. Raises PyverbsRDMAError
        (EINVAL: the address is not resolved)."""
        what = "Failed to Resolve Route"
        with self._agent.ctx.lock:
            self._check(what, (ADDR_RESOLVED,))
            self.state = ROUTE_RESOLVED
            self._agent.event(self, ET.RDMA_CM_EVENT_ROUTE_RESOLVED)
        self._complete(what)

    def _complete(self, what):
        """A synchronous id waits for the event of its call (librdmacm's ucma_complete):
        REJECTED is ECONNREFUSED, another status its errno."""
        if not self._sync:
            return None
        event = self._channel._get(what)
        if event.event_type == ET.RDMA_CM_EVENT_DISCONNECTED:
            self._disconnected_got = True
            return event                    # its status (a dead peer's) is no error of the call
        if event.status:
            code = errno.ECONNREFUSED if event.event_type == ET.RDMA_CM_EVENT_REJECTED \
                else abs(event.status)
            raise PyverbsRDMAError(f"{what}: {ET(event.event_type).name}", code)
        return event

    # Passive side.

    def listen(self, backlog=0):
        """rdma_listen (an unbound id binds to 0.0.0.0 and an ephemeral port first).
        Raises PyverbsRDMAError (EINVAL: not idle or bound; the errors of bind_addr)."""
        what = "Listen Failed"
        checks.uint(backlog, "backlog")
        with self._agent.ctx.lock:
            self._check(what, (IDLE, BOUND))
            if self.state == IDLE:
                self._bind("0.0.0.0", 0, what)
            cm_ports.listen(*self._bound, self._agent.owner)
            self._agent.listeners[self._bound] = self
            self.state = LISTENING

    def get_request(self):
        """rdma_get_request: wait for the next connection request on a synchronous
        listening id; the new CMID it returns has the listener's QP, if the listener
        was made with qp_init_attr. Raises PyverbsRDMAError (EINVAL: not a
        synchronous listening id)."""
        what = "Failed to get request, no connection established"
        self._check(what, (LISTENING,))
        if not self._sync:
            raise PyverbsRDMAError(f"{what}: the id is not synchronous", errno.EINVAL)
        child = self._channel._get(what).id
        if self._qp_init_attr is not None:
            child.create_qp(self._qp_init_attr)
        return child

    def _take_request(self, m, listener):
        self.state = REQUEST
        self.port_space = listener.port_space
        self.src_addr = (str(ipaddress.IPv4Address(m.dst)), m.port)
        self.dst_addr = (str(ipaddress.IPv4Address(m.src)), 0)
        self.ctx, self.pd = listener.ctx, listener.pd
        self._private_data_limit = listener._private_data_limit
        self._peer_address, self._peer_id = m.address, m.frm
        self._remote = (m.qpn, m.psn, m.param)
        resources, depth, retry, rnr_retry = m.param
        self._param = (depth, resources, retry, rnr_retry)     # what the active asks, mirrored
        self._peer = self._peer_hca(m.address)
        self._agent.ids[self._conn_id] = self

    def _peer_hca(self, address):
        """The peer's HCA, or None if it is not there (any more)."""
        try:
            return self._agent.ctx.hca.peer(address)
        except PeerUnreachable:
            return None

    def accept(self, param=None):
        """rdma_accept: the id's own QP goes to RTR and RTS; REP carries its qp_num
        (or param's for an external QP) and at most 196 bytes of private data (or
        SHMDAT_CM_PRIVATE_DATA's).
        ESTABLISHED follows when the active side answers. Raises PyverbsUserError
        (param not a ConnParam), PyverbsRDMAError: EINVAL (no pending request; no
        QP and no param; private data over 196 bytes; resources or depth over the
        device's 128); a synchronous id waits for ESTABLISHED (ETIMEDOUT if the
        peer died)."""
        what = "Failed to Accept Connection"
        checks.instance(param, ConnParam, "param", none=True)
        if self._ud:
            self._accept_ud(param, what)
            return
        with self._agent.ctx.lock:
            self._check(what, (REQUEST,))
            data = self._use_param(param, PRIVATE_DATA_ACCEPT, what)
            if self.qp is not None:
                self._move_qp(e.IBV_QPS_RTR)
                self._move_qp(e.IBV_QPS_RTS)
            self.state = ACCEPTED
            self._agent.send(self, REP, qpn=self._qpn_for(param), psn=self._psn, param=self._param,
                             private_data=data)
        self._complete(what)

    @property
    def _ud(self):
        return self.port_space == ce.RDMA_PS_UDP

    def _accept_ud(self, param, what):
        """A UD id's accept: SIDR_REP with the QP's qp_num (or param's) and RDMA_UDP_QKEY;
        the id is done with its peer (no ESTABLISHED here; nothing to wait for)."""
        with self._agent.ctx.lock:
            self._check(what, (REQUEST,))
            if param is None and self.qp is None:
                raise PyverbsRDMAError(f"{what}: an id without a QP needs a ConnParam", errno.EINVAL)
            data = self._ud_private_data(param, PRIVATE_DATA_SIDR_REP, what)
            self._agent.send(self, SIDR_REP, reason=SIDR_SUCCESS, qpn=self._qpn_for(param),
                             psn=RDMA_UDP_QKEY, private_data=data)
            self._end()

    def reject(self, private_data=None):
        """rdma_reject: REJ with reason 28 (consumer defined) and at most 148 bytes
        of private data (or SHMDAT_CM_PRIVATE_DATA's); on a UD id SIDR_REP with
        status 2 (reject) and at most 136 bytes. Raises PyverbsUserError (private
        data not bytes), PyverbsRDMAError (EINVAL: no pending request, or private
        data over the limit)."""
        what = "Failed to Reject Connection"
        data = b"" if private_data is None else checks.data(private_data, "private_data")
        limit, kind, reason = ((PRIVATE_DATA_SIDR_REP, SIDR_REP, SIDR_REJECT) if self._ud
                               else (PRIVATE_DATA_REJECT, REJ, REJ_CONSUMER_DEFINED))
        with self._agent.ctx.lock:
            self._check(what, (REQUEST,))
            self._check_private_data(data, limit, what)
            self._agent.send(self, kind, reason=reason, private_data=bytes(data))
            self._end()

    def _on_rtu(self, m):
        if self.state == ACCEPTED:
            self.state = CONNECTED
            self._agent.event(self, ET.RDMA_CM_EVENT_ESTABLISHED)

    # Active side.

    def connect(self, param=None):
        """rdma_connect: REQ with the id's QP's qp_num (or param's for an external QP)
        and at most 56 bytes of private data (or SHMDAT_CM_PRIVATE_DATA's). Then
        ESTABLISHED (the QP is moved to RTR and RTS; CONNECT_ERROR if it cannot
        be), CONNECT_RESPONSE (no QP of the id: call establish()), REJECTED
        (status 28 if the peer rejected, 8 if nobody listens there) or
        UNREACHABLE (the listener's process died). Raises PyverbsUserError (param
        not a ConnParam), PyverbsRDMAError: EINVAL (route not resolved; no QP and
        no param; private data over 56 bytes; resources or depth over 128); a
        synchronous id waits: ECONNREFUSED when rejected, ETIMEDOUT when unreachable.
        A UD id sends SIDR_REQ (private data at most 180 bytes) and gets ESTABLISHED
        (UDParam has the passive side's ah_attr, qp_num and qkey) or UNREACHABLE
        (status 2 if the peer rejected, 1 if nobody listens; a synchronous id
        raises that status as its errno, as librdmacm does)."""
        what = "Failed to Connect"
        checks.instance(param, ConnParam, "param", none=True)
        with self._agent.ctx.lock:
            self._check(what, (ROUTE_RESOLVED,))
            if self._ud:
                data = self._ud_private_data(param, PRIVATE_DATA_SIDR_REQ, what)
            else:
                data = self._use_param(param, PRIVATE_DATA_CONNECT, what)
            address, port = self.dst_addr
            owner = cm_ports.find_listener(_ip(address), port)
            self._peer_address = None if owner is None else address_of(*owner)
            self._peer = None if owner is None else self._peer_hca(self._peer_address)
            self.state = CONNECTING
            if self._peer is None and self._ud:
                self._sidr_failed(SIDR_UNSUPPORTED, b"")
            elif self._peer is None:
                self._rejected(REJ_INVALID_SERVICE_ID, b"")     # as the peer's CM would answer
            else:
                self._agent.ids[self._conn_id] = self
                kind = SIDR_REQ if self._ud else REQ
                self._agent.send(self, kind, port=port, dst=_ip(address), src=_ip(self.src_addr[0]),
                                 qpn=self._qpn_for(param), psn=self._psn, param=self._param,
                                 private_data=data)
        self._complete(what)

    def _use_param(self, param, limit, what):
        """Check a connect's or accept's ConnParam, keep its values; its private data."""
        if param is None:
            if self.qp is None:
                raise PyverbsRDMAError(f"{what}: an id without a QP needs a ConnParam", errno.EINVAL)
            return b""
        self._check_private_data(param.private_data, limit, what)
        values = list(param._values())
        if not all(isinstance(v, int) for v in (*values, param.qp_num)):
            raise PyverbsUserError(f"{what}: the ConnParam's values must be ints")
        for i, top in ((0, RDMA_MAX_RESP_RES), (1, RDMA_MAX_INIT_DEPTH)):
            if values[i] == top:
                values[i] = MAX_RD_ATOMIC
            elif not 0 <= values[i] <= MAX_RD_ATOMIC:
                raise PyverbsRDMAError(f"{what}: responder resources and initiator depth are at "
                                       f"most {MAX_RD_ATOMIC}", errno.EINVAL)
        self._param = tuple(values)
        return param.private_data

    def _ud_private_data(self, param, size, what):
        """A UD connect's or accept's private data (SIDR's limits); its ConnParam's other
        values mean nothing to UD."""
        data = b"" if param is None else param.private_data
        self._check_private_data(data, size, what)
        return data

    def _check_private_data(self, data, size, what):
        """EINVAL for private data over this id's limit for a message whose IB CM field
        holds `size` bytes (SHMDAT_CM_PRIVATE_DATA's, or shm0dv's for this id)."""
        limit = _limit(size) if self._private_data_limit is None else self._private_data_limit
        if len(data) > limit:
            raise PyverbsRDMAError(f"{what}: private data over {limit} bytes", errno.EINVAL)

    def _limit_private_data(self, nbytes):
        """shm0dv.cm_set_private_data_limit: the private data of this id's messages, and
        of the ids made from its events, may be up to `nbytes` (EINVAL over 65000)."""
        what = "Failed to set the private data limit"
        nbytes = checks.uint(nbytes, "nbytes")
        self._check_open(what)
        if nbytes > LARGEST_PRIVATE_DATA:
            raise PyverbsRDMAError(f"{what}: {nbytes} is over {LARGEST_PRIVATE_DATA} bytes, what "
                                   "one CM message carries", errno.EINVAL)
        self._private_data_limit = nbytes

    def _on_sidr_rep(self, m):
        if self.state != CONNECTING or not self._ud:
            return
        if m.reason != SIDR_SUCCESS:
            self._sidr_failed(m.reason, m.private_data)
            return
        self._end()                         # UD: nothing more between the two
        ah_attr = AHAttr(is_global=1, port_num=PORT,
                         gr=GlobalRoute(GID(self.dst_addr[0]), sgid_index=GID_INDEX))
        self._agent.event(self, ET.RDMA_CM_EVENT_ESTABLISHED, private_data=m.private_data,
                          size=PRIVATE_DATA_SIDR_REP, ud=(ah_attr, m.qpn, m.psn))

    def _sidr_failed(self, status, data):
        """A UD connect the peer rejected or nobody took: UNREACHABLE with SIDR REP's status
        (as the kernel's rdma_cm reports a SIDR REP that is not a success)."""
        self._end()
        self._agent.event(self, ET.RDMA_CM_EVENT_UNREACHABLE, status=status, private_data=data,
                          size=PRIVATE_DATA_SIDR_REP)

    def _qpn_for(self, param):
        return self.qp.qp_num if self.qp is not None else param.qpn

    def _on_rep(self, m):
        if self.state != CONNECTING:
            return
        self._peer_id = m.frm
        self._remote = (m.qpn, m.psn, m.param)
        if self.qp is None:
            self.state = RESPONSE
            self._agent.event(self, ET.RDMA_CM_EVENT_CONNECT_RESPONSE, private_data=m.private_data,
                              size=PRIVATE_DATA_ACCEPT)
            return
        try:
            self._move_qp(e.IBV_QPS_RTR)
            self._move_qp(e.IBV_QPS_RTS)
        except PyverbsRDMAError as err:     # the QP could not follow (librdmacm rejects too)
            self._agent.send(self, REJ, reason=REJ_CONSUMER_DEFINED)
            self._end()
            self._agent.event(self, ET.RDMA_CM_EVENT_CONNECT_ERROR, status=-err.error_code)
            return
        self.state = CONNECTED
        self._agent.send(self, RTU)
        self._agent.event(self, ET.RDMA_CM_EVENT_ESTABLISHED, private_data=m.private_data,
                          size=PRIVATE_DATA_ACCEPT)

    def establish(self):
        """rdma_establish: after CONNECT_RESPONSE, with the external QP moved to RTS;
        the passive side gets ESTABLISHED. Raises PyverbsRDMAError (EINVAL: no
        CONNECT_RESPONSE is pending)."""
        what = "Failed to Complete an active connection request"
        with self._agent.ctx.lock:
            self._check(what, (RESPONSE,))
            self.state = CONNECTED
            self._agent.send(self, RTU)

    def _on_rej(self, m):
        if self.state in (CONNECTING, REQUEST, ACCEPTED):
            self._rejected(m.reason, m.private_data)

    def _rejected(self, reason, data):
        self._end()
        self._agent.event(self, ET.RDMA_CM_EVENT_REJECTED, status=reason, private_data=data,
                          size=PRIVATE_DATA_REJECT)

    def _end(self):
        self.state = DONE
        self._agent.ids.pop(self._conn_id, None)

    # Disconnection and peers that die.

    def disconnect(self):
        """rdma_disconnect: the id's own QP goes to ERR (flushing), DREQ goes to the
        peer, and each side gets one DISCONNECTED. Raises PyverbsRDMAError (EINVAL:
        never connected); a synchronous id waits for its DISCONNECTED."""
        what = "Failed to Disconnect"
        with self._agent.ctx.lock:
            self._check(what, (*_HANDSHAKE_OR_UP, DISCONNECTING, DISCONNECTED))
            if self.qp is not None and self.qp.qp_state != e.IBV_QPS_ERR:
                self.qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
            if self.state in _HANDSHAKE_OR_UP:
                self.state = DISCONNECTING
                if not self._agent.send(self, DREQ):
                    self._disconnected()
            wait = self._sync and not self._disconnected_got
        if wait:
            self._complete(what)

    def _on_dreq(self, m):
        if self.state in (*_HANDSHAKE_OR_UP, DISCONNECTING):
            self._agent.send(self, DREP)
            self._disconnected()

    def _on_drep(self, m):
        if self.state == DISCONNECTING:
            self._disconnected()

    def _disconnected(self, status=0):
        self.state = DISCONNECTED
        self._agent.ids.pop(self._conn_id, None)
        self._agent.event(self, ET.RDMA_CM_EVENT_DISCONNECTED, status=status)

    def _peer_died(self):
        """The peer process is gone: a connection ends in DISCONNECTED with status
        -ECONNRESET (shm0's: the kernel of a killed process sends DREQ for it, so real
        rdma_cm says 0; this tells a death from the peer's DREQ), a handshake in
        UNREACHABLE (-ETIMEDOUT, as IB CM's timeout would say)."""
        if self.state in (CONNECTED, RESPONSE, DISCONNECTING):
            self._disconnected(-errno.ECONNRESET)
        elif self.state in (CONNECTING, ACCEPTED):
            self._end()
            self._agent.event(self, ET.RDMA_CM_EVENT_UNREACHABLE, status=-errno.ETIMEDOUT)

    # QPs.

    def create_qp(self, qp_init):
        """rdma_create_qp: an RC QP on the id's PD, in INIT (a UD id's UD QP: in RTS,
        with Q_Key RDMA_UDP_QKEY); without CQs in qp_init,
        the id makes a send CQ and a recv CQ (with completion channels, for
        get_send_comp / get_recv_comp). Raises PyverbsUserError (not a
        QPInitAttr), PyverbsRDMAError: EINVAL (no device yet: bind or resolve
        first; a QP already; a UD id's QP not UD), and QP's errors."""
        what = "Failed to Create QP"
        checks.instance(qp_init, QPInitAttr, "qp_init")
        with self._agent.ctx.lock:
            self._check_open(what)
            if self.pd is None or self.qp is not None:
                raise PyverbsRDMAError(f"{what}: the id has {'a QP' if self.qp else 'no device'} "
                                       "already", errno.EINVAL)
            if self._ud and qp_init.qp_type != e.IBV_QPT_UD:
                raise PyverbsRDMAError(f"{what}: an RDMA_PS_UDP id's QP is UD", errno.EINVAL)
            cap = qp_init.cap
            scq = qp_init.send_cq or self._cq(cap.max_send_wr)
            rcq = qp_init.recv_cq or self._cq(cap.max_recv_wr)
            attr = QPInitAttr(qp_init.qp_type, qp_init.qp_context, scq, rcq, qp_init.srq, cap,
                              qp_init.sq_sig_all)
            self.qp = QP(self.pd, attr)
            self._own.append(self.qp)
            self._move_qp(e.IBV_QPS_INIT)
            if self._ud:                    # as librdmacm's ucma_init_ud_qp
                self._move_qp(e.IBV_QPS_RTR)
                self._move_qp(e.IBV_QPS_RTS)

    def _cq(self, depth):
        channel = CompChannel(self.ctx)
        cq = CQ(self.ctx, max(depth, 1), None, channel)
        self._own += [cq, channel]
        return cq

    def _move_qp(self, state):
        attr, mask = self.init_qp_attr(state)
        self.qp.modify(attr, mask)

    def init_qp_attr(self, qp_state):
        """rdma_init_qp_attr -> (QPAttr, attr_mask) to move a QP to INIT, RTR or RTS
        for this connection (RTR and RTS once the peer's REQ or REP is in). Raises
        PyverbsRDMAError (EINVAL: another state, or not known yet)."""
        what = "Failed to get QP attributes"
        self._check_open(what)
        attr = QPAttr(qp_state=qp_state)
        if qp_state == e.IBV_QPS_INIT and self.pd is not None and self._ud:
            attr.qkey = RDMA_UDP_QKEY
            return attr, int(e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
        if self._ud and qp_state in (e.IBV_QPS_RTR, e.IBV_QPS_RTS):    # UD: nothing of the peer's
            attr.sq_psn = 0
            return attr, int(e.IBV_QP_STATE | (e.IBV_QP_SQ_PSN if qp_state == e.IBV_QPS_RTS else 0))
        if qp_state == e.IBV_QPS_INIT and self.pd is not None:
            attr.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                                    | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)
            return attr, int(e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT
                             | e.IBV_QP_ACCESS_FLAGS)
        if self._remote is None or qp_state not in (e.IBV_QPS_RTR, e.IBV_QPS_RTS):
            raise PyverbsRDMAError(f"{what}: not known for {qp_state} in this state", errno.EINVAL)
        qpn, psn, _ = self._remote
        resources, depth, retry, rnr_retry = self._param
        if qp_state == e.IBV_QPS_RTR:
            attr.dest_qp_num, attr.rq_psn, attr.path_mtu = qpn, psn, e.IBV_MTU_1024
            attr.max_dest_rd_atomic, attr.min_rnr_timer = resources, 12
            attr.ah_attr = AHAttr(is_global=1, port_num=PORT,
                                  gr=GlobalRoute(GID(self.dst_addr[0]), sgid_index=GID_INDEX))
            return attr, int(e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                             | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC
                             | e.IBV_QP_MIN_RNR_TIMER)
        attr.sq_psn, attr.timeout, attr.retry_cnt = self._psn, self._ack_timeout, retry
        attr.rnr_retry, attr.max_rd_atomic = rnr_retry, depth
        return attr, int(e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                         | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def query_qp(self, attr_mask):
        """ibv_query_qp of the id's QP -> (QPAttr, QPInitAttr). EINVAL without one."""
        return self._the_qp("Failed to query QP").query(attr_mask)

    def set_option(self, level, optname, optval, optlen):
        """rdma_set_option: RDMA_OPTION_ID_ACK_TIMEOUT only (as pyverbs), the QP's
        timeout from its next move to RTS."""
        if level != ce.RDMA_OPTION_ID or optname != ce.RDMA_OPTION_ID_ACK_TIMEOUT:
            raise PyverbsUserError("Currently only RDMA_OPTION_ID_ACK_TIMEOUT is supported")
        self._ack_timeout = int(optval) & 0x1F

    def set_local_ece(self, ece):
        """rdma_set_local_ece: EOPNOTSUPP (no ECE on shm0)."""
        raise PyverbsRDMAError("Failed to set local ECE", errno.EOPNOTSUPP)

    def get_remote_ece(self):
        """rdma_get_remote_ece: EOPNOTSUPP (no ECE on shm0)."""
        raise PyverbsRDMAError("Failed to get remote ECE", errno.EOPNOTSUPP)

    def join_multicast(self, addr=None, mc_attr=None, context=0):
        """rdma_join_multicast: EOPNOTSUPP (shm0 has no multicast; max_mcast_grp is 0)."""
        raise PyverbsRDMAError("Failed to Join multicast: shm0 has no multicast", errno.EOPNOTSUPP)

    def leave_multicast(self, addr):
        """rdma_leave_multicast: EOPNOTSUPP (shm0 has no multicast)."""
        raise PyverbsRDMAError("Failed to leave multicast: shm0 has no multicast", errno.EOPNOTSUPP)

    def _the_qp(self, what):
        self._check_open(what)
        if self.qp is None:
            raise PyverbsRDMAError(f"{what}: the id has no QP", errno.EINVAL)
        return self.qp

    # Memory and work requests on the id's QP.

    def _reg(self, size, access):
        if self.pd is None:
            raise PyverbsRDMAError("Failed to register a MR: the id has no device yet", errno.EINVAL)
        mr = MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE | access)
        self._own.append(mr)
        return mr

    def reg_msgs(self, size):
        """rdma_reg_msgs: an MR with local write, on the id's PD."""
        return self._reg(size, 0)

    def reg_read(self, size=0):
        """rdma_reg_read: an MR peers may read."""
        return self._reg(size, e.IBV_ACCESS_REMOTE_READ)

    def reg_write(self, size=0):
        """rdma_reg_write: an MR peers may write."""
        return self._reg(size, e.IBV_ACCESS_REMOTE_WRITE)

    def _sge(self, mr, length, what):
        if not isinstance(mr, MR):
            raise PyverbsUserError(f"{what}: mr must be an MR, not {type(mr)}")
        return SGE(mr.buf, length or mr.length, mr.lkey)

    def post_recv(self, mr, length=None):
        """rdma_post_recv of mr's first `length` bytes (all of it by default), wr_id 0."""
        what = "Failed to Post Receive"
        sge = self._sge(mr, length, what)
        self._the_qp(what).post_recv(RecvWR(num_sge=1, sg=[sge]))

    def post_send(self, mr, flags=e.IBV_SEND_SIGNALED, length=None):
        """rdma_post_send of mr's first `length` bytes (all of it by default)."""
        what = "Failed to Post Send"
        sge = self._sge(mr, length, what)
        self._the_qp(what).post_send(SendWR(num_sge=1, sg=[sge], send_flags=flags))

    def post_ud_send(self, mr, ah, rqpn=0, flags=e.IBV_SEND_SIGNALED, length=None):
        """rdma_post_ud_send of mr's first `length` bytes (all of it by default) on a UD
        id's QP to QP `rqpn` at `ah`, with Q_Key RDMA_UDP_QKEY. Raises
        PyverbsUserError (not an MR or AH), and post_send's errors."""
        what = "Failed to Post Send"
        if not isinstance(ah, AH):
            raise PyverbsUserError(f"{what}: ah must be an AH, not {type(ah)}")
        wr = SendWR(num_sge=1, sg=[self._sge(mr, length, what)], send_flags=flags)
        wr.set_wr_ud(ah, rqpn, RDMA_UDP_QKEY)
        self._the_qp(what).post_send(wr)

    def post_read(self, mr, length, remote_addr, rkey, flags=0):
        """rdma_post_read into mr from the peer's (remote_addr, rkey)."""
        self._post_rdma(e.IBV_WR_RDMA_READ, mr, length, remote_addr, rkey, flags, "Failed to Post Read")

    def post_write(self, mr, length, remote_addr, rkey, flags=0):
        """rdma_post_write of mr to the peer's (remote_addr, rkey)."""
        self._post_rdma(e.IBV_WR_RDMA_WRITE, mr, length, remote_addr, rkey, flags, "Failed to Post Write")

    def _post_rdma(self, opcode, mr, length, remote_addr, rkey, flags, what):
        wr = SendWR(opcode=opcode, num_sge=1, sg=[self._sge(mr, length, what)], send_flags=flags)
        wr.set_wr_rdma(rkey, remote_addr)
        self._the_qp(what).post_send(wr)

    def get_send_comp(self):
        """rdma_get_send_comp: the next completion of the send CQ, waiting for it.
        Raises PyverbsRDMAError (EINVAL: no QP, or a CQ of the user's without a
        completion channel)."""
        qp = self._the_qp("Failed to retrieve send completion")
        return _next_completion(qp.send_cq)

    def get_recv_comp(self):
        """rdma_get_recv_comp: the next completion of the recv CQ, waiting for it."""
        qp = self._the_qp("Failed to retrieve receive completion")
        return _next_completion(qp.recv_cq)

    # Closing.

    def _drop_requests(self):
        """A listener goes: the requests queued for it that nobody took are rejected and
        their ids destroyed with it (as the kernel's rdma_cm does)."""
        channel = self._channel
        untaken = [ev for ev in channel._events if ev.listen_id is self
                   and ev.event_type == ET.RDMA_CM_EVENT_CONNECT_REQUEST]
        channel._discard(untaken)
        for ev in untaken:
            ev.id.close()

    def _release(self):
        """rdma_destroy_id: a connection is disconnected (DREQ), a pending request
        rejected, the port freed; the QP, CQs and MRs the id made close."""
        agent = self._agent
        if agent is None:
            return
        with agent.ctx.lock:
            if self.state in _HANDSHAKE_OR_UP:
                agent.send(self, DREQ)
            elif self.state == REQUEST and self._ud:
                agent.send(self, SIDR_REP, reason=SIDR_REJECT)
            elif self.state in (REQUEST, CONNECTING) and not self._ud:
                agent.send(self, REJ, reason=REJ_CONSUMER_DEFINED)
            agent.ids.pop(self._conn_id, None)
            if agent.listeners.get(self._bound) is self:
                del agent.listeners[self._bound]
                self._drop_requests()
            if self._bound is not None:
                cm_ports.release(*self._bound, agent.owner)
                self._bound = None
            agent.cmids.discard(self)
            for obj in reversed(self._own):
                obj.close()
            if self._sync:
                self._channel.close()
            self.state = DONE
        if not agent.cmids and not (agent.ctx._closed or agent.ctx._closing):
            agent.ctx.close()       # the last id gone: the device too, as librdmacm's refcount


def _next_completion(cq):
    """What rdma_get_*_comp do: poll, arm, poll again, then wait for the CQ's event."""
    while True:
        n, wcs = cq.poll()
        if n:
            return wcs[0]
        cq.req_notify()
        n, wcs = cq.poll()
        if n:
            return wcs[0]
        cq.channel.get_cq_event(cq)
        cq.ack_events(1)
