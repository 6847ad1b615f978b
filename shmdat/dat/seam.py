"""The seam between DAT and verbs: the only module of shmdat.dat that names a verbs module
(docs/design/dat-over-verbs.md, section 3).

It picks the verbs modules by provider name (`open_device`), lists the real NICs that
rdma-core's pyverbs sees (`nic_listing`), names every verbs call DAT may make (`CALLS`,
the allow-list the recording module of the tests enforces) and holds the one copy of
each translation table: `DTO_STATUS` (WC status), `ASYNC_EVENT` (async event type),
`CM_EVENT` (rdma_cm event type) and `dat_error` (verbs exceptions). Constants and
device selection only: DAT's objects live elsewhere.

Two environment variables, for tests only (spawned peers inherit them):
SHMDAT_DAT_VERBS=<module path> loads that module-like object instead of shmdat.verbs
for shm0 (tests/recording_verbs.py); SHMDAT_PYVERBS=<package> is the name imported as
rdma-core's pyverbs (default `pyverbs`).
"""

import enum
import errno
import importlib
import ipaddress
import os
import types
from typing import Any, NamedTuple

from ..verbs import (cmid, cq, device, libibverbs_enums, librdmacm_enums, mr, pd,
                     pyverbs_error, qp, srq, wr)
from ..verbs.libibverbs_enums import ibv_event_type, ibv_port_state, ibv_wc_status
from ..verbs.librdmacm_enums import rdma_cm_event_type
from .constants import AsyncReason, DtoStatus, EventNumber
from .errors import (ConnQualInUse, ConnQualUnavailable, InsufficientResources,
                     InternalError, InvalidAddress, InvalidParameter, ModelNotSupported,
                     ProviderNotFound)

SHM0 = "shm0"
SHM0_ADDRESS = "127.0.0.1"
SHM0_PORT = 1
NIC_PREFIX = "ofa-v2-"              # OFA dat.conf's names: ofa-v2-<device>-<port>
VERBS_ENV = "SHMDAT_DAT_VERBS"
PYVERBS_ENV = "SHMDAT_PYVERBS"
SHM0DV = "shmdat.verbs.providers.shm0.shm0dv"

# The verbs modules DAT uses, by pyverbs module name; a stand-in (SHMDAT_DAT_VERBS) has
# them as attributes, plus `shm0dv` (None when absent).
MODULES = ("device", "pd", "mr", "cq", "qp", "srq", "wr", "cmid", "libibverbs_enums",
           "librdmacm_enums", "pyverbs_error")


class Device(NamedTuple):
    """The verbs modules of one provider, and where the IA sits on its device."""
    device: Any
    pd: Any
    mr: Any
    cq: Any
    qp: Any
    srq: Any
    wr: Any
    cmid: Any
    enums: Any              # libibverbs_enums
    cm_enums: Any           # librdmacm_enums
    pyverbs_error: Any
    dv: Any                 # shm0dv, or None (real pyverbs)
    event_fd: Any           # the module's event_fd(obj), or None: event_fds.py finds the fds
    provider: str           # the DAT provider name: shm0, ofa-v2-rxe0-1
    name: str               # the verbs device name: shm0, rxe0
    port: int
    address: str            # the IA address: an IPv4 address


class NicListing(NamedTuple):
    """The ofa-v2 provider names of the ports rdma-core's pyverbs sees, and why each
    missing one is missing (`missing` is never empty when `names` is)."""
    names: list
    missing: list


# -- device selection -------------------------------------------------------------------

def open_device(provider_name):
    """The Device record of provider `provider_name`: shm0 (shmdat.verbs), or
    ofa-v2-<device>-<port> (rdma-core's pyverbs, an ACTIVE port with an IPv4 RoCE GID).

    Raises ProviderNotFound naming why the provider cannot be used.
    """
    if provider_name == SHM0:
        return _device(_shm0_modules(), SHM0, SHM0, SHM0_PORT, SHM0_ADDRESS)
    name, port = _parse_nic_name(provider_name)
    modules, why = _real_pyverbs()
    if modules is None:
        raise ProviderNotFound(f"{provider_name}: {why}", subtype="NAME_NOT_REGISTERED")
    ports, missing = _device_ports(modules, name)
    if port not in ports:
        why = [w for who, w in missing if who in (provider_name, nic_name(name, "*"))]
        why = "; ".join(why) or f"{name} has no port {port}"
        raise ProviderNotFound(f"{provider_name}: {why}", subtype="NAME_NOT_REGISTERED")
    address = _port_ipv4(modules, name, port)
    if address is None:
        raise ProviderNotFound(f"{provider_name}: port {port} of {name} has no RoCE GID "
                               f"with an IPv4 address (::ffff:a.b.c.d)",
                               subtype="NAME_NOT_REGISTERED")
    return _device(modules, provider_name, name, port, address)


def nic_listing():
    """NicListing of the real NIC ports: one name per ACTIVE port of every device
    rdma-core's pyverbs lists, and the reasons the others (or all) are missing."""
    modules, why = _real_pyverbs()
    if modules is None:
        return NicListing([], [why])
    try:
        devices = modules.device.get_device_list()
    except modules.pyverbs_error.PyverbsError as exc:
        return NicListing([], [f"no RDMA devices ({exc})"])
    if not devices:
        return NicListing([], ["no RDMA devices"])
    names, missing = [], []
    for dev in devices:
        dev_name = _text(dev.name)
        ports, why = _device_ports(modules, dev_name)
        names += [nic_name(dev_name, port) for port in ports]
        missing += [f"{who}: {w}" for who, w in why]
    return NicListing(names, missing)


def nic_name(device_name, port):
    """OFA dat.conf's provider name of a device port: ofa-v2-mlx5_0-1."""
    return f"{NIC_PREFIX}{device_name}-{port}"


def _parse_nic_name(provider_name):
    prefix, _, rest = provider_name.partition(NIC_PREFIX)
    name, _, port = rest.rpartition("-")
    if prefix or not name or not port.isdigit():
        raise ProviderNotFound(f"{provider_name!r} is neither {SHM0} nor "
                               f"{NIC_PREFIX}<device>-<port>", subtype="NAME_NOT_REGISTERED")
    return name, int(port)


def _device(modules, provider, name, port, address):
    return Device(*(getattr(modules, m) for m in MODULES), modules.shm0dv,
                  getattr(modules, "event_fd", None), provider, name, port, address)


def _shm0_modules():
    """shmdat.verbs' modules (or the test's stand-in named by SHMDAT_DAT_VERBS)."""
    stand_in = os.environ.get(VERBS_ENV)
    if stand_in:
        return importlib.import_module(stand_in)
    return types.SimpleNamespace(
        device=device, pd=pd, mr=mr, cq=cq, qp=qp, srq=srq, wr=wr, cmid=cmid,
        libibverbs_enums=libibverbs_enums, librdmacm_enums=librdmacm_enums,
        pyverbs_error=pyverbs_error, shm0dv=optional_module(SHM0DV))


def optional_module(name):
    """The module `name`, or None when it (or its package) does not exist; an import
    error inside it is raised, not taken for absence."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            return None
        raise


def _real_pyverbs():
    """(modules, None) of rdma-core's pyverbs, or (None, why it cannot be used)."""
    package = os.environ.get(PYVERBS_ENV, "pyverbs")
    try:
        root = importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if exc.name != package:
            return None, f"{package} does not import ({exc})"
        return None, f"{package} not installed"
    except ImportError as exc:      # e.g. libibverbs.so missing under the extension
        return None, f"{package} does not import ({exc})"
    if getattr(root, "__shmdat__", False):
        return None, f"{package} is shmdat's own shim (shmdat run-verbs), not rdma-core's"
    try:
        found = {m: importlib.import_module(f"{package}.{m}") for m in MODULES
                 if m not in ("libibverbs_enums", "librdmacm_enums")}
        # Before rdma-core v58 the enums lived in pyverbs.enums and pyverbs.cm_enums.
        found["libibverbs_enums"] = (optional_module(f"{package}.libibverbs_enums")
                                     or importlib.import_module(f"{package}.enums"))
        found["librdmacm_enums"] = (optional_module(f"{package}.librdmacm_enums")
                                    or importlib.import_module(f"{package}.cm_enums"))
    except ImportError as exc:
        return None, f"{package} is incomplete ({exc})"
    # (rdma-core's has no event_fd; a stand-in shaped as its package may say where its fds are)
    return types.SimpleNamespace(shm0dv=None, event_fd=getattr(root, "event_fd", None), **found), None


def _device_ports(modules, dev_name):
    """([ACTIVE port numbers], [(provider name, why it is missing)...]); the name is
    ofa-v2-<device>-* when the device cannot be opened at all."""
    try:
        ctx = modules.device.Context(name=dev_name)
    except modules.pyverbs_error.PyverbsError as exc:
        return [], [(nic_name(dev_name, "*"), f"cannot open {dev_name} ({exc})")]
    try:
        active, missing = [], []
        for port in range(1, ctx.query_device().phys_port_cnt + 1):
            state = ctx.query_port(port).state
            if state == ibv_port_state.IBV_PORT_ACTIVE:
                active.append(port)
            else:
                missing.append((nic_name(dev_name, port),
                                f"port {port} {_port_state_name(state)}"))
        return active, missing
    finally:
        ctx.close()


def _port_state_name(state):
    try:
        return ibv_port_state(state).name[len("IBV_PORT_"):]
    except ValueError:
        return f"in state {state}"


def _port_ipv4(modules, dev_name, port):
    """The IPv4 address of the port's first RoCE GID ::ffff:a.b.c.d, or None."""
    ctx = modules.device.Context(name=dev_name)
    try:
        for index in range(ctx.query_port(port).gid_tbl_len):
            try:
                gid = ctx.query_gid(port, index).gid
            except modules.pyverbs_error.PyverbsError:
                continue            # an unused entry may refuse to be read
            mapped = ipaddress.IPv6Address(gid).ipv4_mapped
            if mapped is not None and not mapped.is_unspecified:
                return str(mapped)
        return None
    finally:
        ctx.close()


def _text(name):
    return name.decode() if isinstance(name, bytes) else str(name)


# -- the allow-list ----------------------------------------------------------------------

# Every verbs name DAT may touch (section 3.2). "module.name" is a module-level name
# (a function, a class to build, an enum value); "Class.member" a method or attribute of
# an object some call returned. Nothing else: no `_private` name, no `shmdat.hw`.
CALLS = frozenset({
    # device
    "device.get_device_list", "Device.name",
    "device.Context", "Context.query_device", "Context.query_port", "Context.query_gid",
    "Context.get_async_event", "Context.async_fd", "Context.close",
    "DeviceAttr.phys_port_cnt", "DeviceAttr.max_qp", "DeviceAttr.max_qp_wr",
    "DeviceAttr.max_sge", "DeviceAttr.max_cq", "DeviceAttr.max_cqe", "DeviceAttr.max_mr",
    "DeviceAttr.max_mr_size", "DeviceAttr.max_pd", "DeviceAttr.max_mw",
    "DeviceAttr.max_srq", "DeviceAttr.max_srq_wr", "DeviceAttr.max_srq_sge",
    "DeviceAttr.max_qp_rd_atom", "DeviceAttr.max_qp_init_rd_atom",
    "PortAttr.state", "PortAttr.gid_tbl_len", "GID.gid",
    "AsyncEvent.event_type", "AsyncEvent.element", "AsyncEvent.ack",
    "AsyncElement.qp", "AsyncElement.cq", "AsyncElement.srq", "AsyncElement.port_num",
    # pd
    "pd.PD", "PD.close",
    # mr
    "mr.MR", "MR.lkey", "MR.rkey", "MR.buf", "MR.close",
    "mr.MW", "mr.MWBindInfo", "mr.MWBind", "MW.rkey", "MW.close",
    # cq
    "cq.CompChannel", "CompChannel.fd", "CompChannel.get_cq_event", "CompChannel.close",
    "cq.CQ", "CQ.poll", "CQ.req_notify", "CQ.ack_events", "CQ.resize", "CQ.close",
    "WC.wr_id", "WC.status", "WC.opcode", "WC.byte_len", "WC.qp_num",
    # qp
    "qp.QPCap", "qp.QPInitAttr", "qp.QPAttr", "qp.QP",
    "QPAttr.qp_state", "QPAttr.qp_access_flags", "QPAttr.port_num",
    "QP.to_init", "QP.modify", "QP.qp_state", "QP.qp_num", "QP.post_send", "QP.post_recv",
    "QP.bind_mw", "QP.close",
    # a device without shm0dv: the QPs an element-less async event is about (nic_engine.py)
    "QP.query",
    # srq
    "srq.SrqAttr", "srq.SrqInitAttr", "srq.SRQ", "SRQ.post_recv", "SRQ.modify",
    "SRQ.query", "SRQ.close", "SrqAttr.max_wr", "SrqAttr.max_sge", "SrqAttr.srq_limit",
    # wr
    "wr.SGE", "wr.SendWR", "wr.RecvWR", "SendWR.set_wr_rdma",
    # pyverbs' settable WR fields: DAT posts the WR of a resolved local_iov again (a post
    # copies it), setting these each time
    "SendWR.wr_id", "SendWR.opcode", "SendWR.send_flags", "RecvWR.wr_id",
    # cmid
    "cmid.CMEventChannel", "CMEventChannel.close", "cmid.CMEvent", "CMEvent.event_type",
    "CMEvent.private_data", "CMEvent.id", "CMEvent.listen_id", "CMEvent.status",
    "CMEvent.ack_cm_event",
    "cmid.AddrInfo", "cmid.CMID", "CMID.bind_addr", "CMID.listen", "CMID.resolve_addr",
    "CMID.resolve_route", "cmid.ConnParam", "ConnParam.set_private_data", "CMID.connect",
    "CMID.accept", "CMID.reject", "CMID.init_qp_attr", "CMID.establish",
    "CMID.disconnect", "CMID.close",
    # where the device says them (shm0's CMID, as the C id's route): read by the seam only
    "CMID.src_addr", "CMID.dst_addr",
    # libibverbs_enums: the values the design names
    *(f"libibverbs_enums.{name}" for name in (
        "IBV_ACCESS_LOCAL_WRITE", "IBV_ACCESS_REMOTE_READ", "IBV_ACCESS_REMOTE_WRITE",
        "IBV_ACCESS_MW_BIND", "IBV_MW_TYPE_1", "IBV_QPT_RC",
        "IBV_QPS_RESET", "IBV_QPS_INIT", "IBV_QPS_RTR", "IBV_QPS_RTS", "IBV_QPS_ERR",
        "IBV_QP_STATE", "IBV_WR_SEND", "IBV_WR_RDMA_WRITE", "IBV_WR_RDMA_READ",
        "IBV_SEND_SIGNALED", "IBV_SEND_SOLICITED", "IBV_SEND_FENCE",
        "IBV_WC_SEND", "IBV_WC_RDMA_WRITE", "IBV_WC_RDMA_READ", "IBV_WC_RECV",
        "IBV_WC_RECV_RDMA_WITH_IMM", "IBV_WC_BIND_MW",
        "IBV_SRQ_LIMIT", "IBV_SRQ_MAX_WR", "IBV_PORT_ACTIVE", "IBV_EVENT_QP_FATAL")),
    # librdmacm_enums
    "librdmacm_enums.RDMA_PS_TCP", "librdmacm_enums.RAI_PASSIVE",
    # pyverbs_error: caught in the seam's callers, translated by dat_error
    "pyverbs_error.PyverbsError", "pyverbs_error.PyverbsRDMAError",
    "pyverbs_error.PyverbsUserError", "PyverbsRDMAError.error_code",
    # shm0dv (section 5), shm0 only
    *(f"shm0dv.{name}" for name in (
        "query_rq", "srq_available", "set_recv_credits", "take_count",
        "cm_set_private_data_limit", "cm_channel_fd", "events_pending",
        "context_lock",
        "progress", "progress_locked", "poll_cq", "cq_sink", "block", "wake",
        "watch", "consumer_memory_remote_ok", "wc_solicited")),
    "Shm0RqAttr.posted", "Shm0RqAttr.filling", "Shm0RqAttr.credits_exhausted",
})


# -- DTO status (section 2.6) ------------------------------------------------------------

_S = ibv_wc_status
DTO_STATUS = {
    _S.IBV_WC_SUCCESS: DtoStatus.SUCCESS,
    _S.IBV_WC_LOC_LEN_ERR: DtoStatus.LENGTH_ERROR,
    _S.IBV_WC_LOC_QP_OP_ERR: DtoStatus.ERR_LOCAL_EP,
    _S.IBV_WC_LOC_EEC_OP_ERR: DtoStatus.ERR_TRANSPORT,
    _S.IBV_WC_LOC_PROT_ERR: DtoStatus.ERR_LOCAL_PROTECTION,
    _S.IBV_WC_WR_FLUSH_ERR: DtoStatus.ERR_FLUSHED,
    _S.IBV_WC_MW_BIND_ERR: DtoStatus.RMR_OPERATION_FAILED,
    _S.IBV_WC_BAD_RESP_ERR: DtoStatus.ERR_BAD_RESPONSE,
    _S.IBV_WC_LOC_ACCESS_ERR: DtoStatus.ERR_LOCAL_PROTECTION,
    _S.IBV_WC_REM_INV_REQ_ERR: DtoStatus.ERR_REMOTE_RESPONDER,
    _S.IBV_WC_REM_ACCESS_ERR: DtoStatus.ERR_REMOTE_ACCESS,
    _S.IBV_WC_REM_OP_ERR: DtoStatus.ERR_REMOTE_RESPONDER,
    _S.IBV_WC_RETRY_EXC_ERR: DtoStatus.ERR_TRANSPORT,
    _S.IBV_WC_RNR_RETRY_EXC_ERR: DtoStatus.ERR_RECEIVER_NOT_READY,
    _S.IBV_WC_LOC_RDD_VIOL_ERR: DtoStatus.ERR_LOCAL_PROTECTION,
    _S.IBV_WC_REM_INV_RD_REQ_ERR: DtoStatus.ERR_REMOTE_RESPONDER,
    _S.IBV_WC_REM_ABORT_ERR: DtoStatus.ERR_REMOTE_RESPONDER,
    _S.IBV_WC_INV_EECN_ERR: DtoStatus.ERR_TRANSPORT,
    _S.IBV_WC_INV_EEC_STATE_ERR: DtoStatus.ERR_TRANSPORT,
    _S.IBV_WC_FATAL_ERR: DtoStatus.ERR_TRANSPORT,
    _S.IBV_WC_RESP_TIMEOUT_ERR: DtoStatus.ERR_RECEIVER_NOT_READY,
    _S.IBV_WC_GENERAL_ERR: DtoStatus.ERR_TRANSPORT,
    # Tag matching: DAT posts no tagged receives ("anything else" of the table).
    _S.IBV_WC_TM_ERR: DtoStatus.ERR_TRANSPORT,
    _S.IBV_WC_TM_RNDV_INCOMPLETE: DtoStatus.ERR_TRANSPORT,
}
DTO_STATUS_OTHER = DtoStatus.ERR_TRANSPORT     # a status newer than this table


def dto_status(wc_status):
    """The DtoStatus of a work completion's `status`."""
    return DTO_STATUS.get(wc_status, DTO_STATUS_OTHER)


# -- async events (section 2.3) ----------------------------------------------------------

class AsyncMap(NamedTuple):
    """What DAT posts for a verbs async event: the event number, the AsyncError reason,
    and which DAT object the handle is ("ep" from element.qp, "evd" from element.cq,
    "srq" from element.srq, "ia" for port and device events)."""
    number: EventNumber
    reason: AsyncReason
    handle: str


_E = ibv_event_type
_EP_BROKEN = AsyncMap(EventNumber.ASYNC_ERROR_EP_BROKEN, AsyncReason.EP_TRANSFER_TO_ERROR, "ep")
# None: acknowledged and dropped.
ASYNC_EVENT = {
    _E.IBV_EVENT_QP_FATAL: _EP_BROKEN,
    _E.IBV_EVENT_QP_REQ_ERR: _EP_BROKEN,
    _E.IBV_EVENT_QP_ACCESS_ERR: _EP_BROKEN,
    # Cannot happen with CQs sized as section 2.5 says: kept as the backstop.
    _E.IBV_EVENT_CQ_ERR: AsyncMap(EventNumber.ASYNC_ERROR_EVD_OVERFLOW,
                                  AsyncReason.EVD_OVERFLOW_ERROR, "evd"),
    _E.IBV_EVENT_PORT_ERR: AsyncMap(EventNumber.ASYNC_ERROR_IA_CATASTROPHIC,
                                    AsyncReason.IA_CATASTROPHIC_ERROR, "ia"),
    # dapl says IA_CATASTROPHIC here; issue 12 asks for the split.
    _E.IBV_EVENT_DEVICE_FATAL: AsyncMap(EventNumber.ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
                                        AsyncReason.OTHER, "ia"),
    _E.IBV_EVENT_SRQ_LIMIT_REACHED: AsyncMap(EventNumber.ASYNC_SRQ_LOW_WATERMARK,
                                             AsyncReason.SRQ_LOW_WATERMARK, "srq"),
    # The SRQ is in error: DAT's SrqState.ERROR; the EPs on it break by their own events.
    _E.IBV_EVENT_SRQ_ERR: AsyncMap(EventNumber.ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
                                   AsyncReason.OTHER, "srq"),
    _E.IBV_EVENT_COMM_EST: None,            # dapl logs it; ESTABLISHED comes from rdma_cm
    _E.IBV_EVENT_SQ_DRAINED: None,          # DAT never moves a QP to SQD (6.1)
    _E.IBV_EVENT_QP_LAST_WQE_REACHED: None,  # the SRQ's receives stay on the SRQ
    _E.IBV_EVENT_PORT_ACTIVE: None,
    _E.IBV_EVENT_PATH_MIG: None,            # DAT loads no alternate path
    _E.IBV_EVENT_PATH_MIG_ERR: None,
    # InfiniBand fabric changes: none occur on RoCE or shm0 (dapl: IA_CATASTROPHIC).
    _E.IBV_EVENT_LID_CHANGE: None,
    _E.IBV_EVENT_PKEY_CHANGE: None,
    _E.IBV_EVENT_SM_CHANGE: None,
    _E.IBV_EVENT_CLIENT_REREGISTER: None,
    _E.IBV_EVENT_GID_CHANGE: None,          # the IA keeps the address it opened with
    _E.IBV_EVENT_WQ_FATAL: None,            # DAT creates no WQs
    _E.IBV_EVENT_DEVICE_SPEED_CHANGE: None,
}


# -- rdma_cm events (sections 2.3 and 6.2) -----------------------------------------------

class CmEvent(enum.Enum):
    """The typed events the EP's connection state machine receives from rdma_cm
    (section 6.1's names). Which DAT event each becomes depends on the EP's state:
    Unreachable while ACTIVE_CONNECTION_PENDING is UNREACHABLE, while
    COMPLETION_PENDING it is ACCEPT_COMPLETION_ERROR."""
    ADDR_RESOLVED = "AddrResolved"
    ROUTE_RESOLVED = "RouteResolved"
    UNREACHABLE = "Unreachable"
    CONNECT_RESPONSE = "ConnectResponse"
    REJECTED = "Rejected"               # PEER or NON_PEER by DAT's header (2.4)
    REQUEST = "Request"
    ESTABLISHED = "Established"
    PEER_DISCONNECTED = "PeerDisconnected"
    QP_FATAL = "QpFatal"
    DEVICE_REMOVAL = "DeviceRemoval"    # the IA: PROVIDER_INTERNAL_ERROR


_C = rdma_cm_event_type
# None: rdma_cm delivers it unasked; acknowledged and dropped.
CM_EVENT = {
    _C.RDMA_CM_EVENT_ADDR_RESOLVED: CmEvent.ADDR_RESOLVED,
    _C.RDMA_CM_EVENT_ADDR_ERROR: CmEvent.UNREACHABLE,
    _C.RDMA_CM_EVENT_ROUTE_RESOLVED: CmEvent.ROUTE_RESOLVED,
    _C.RDMA_CM_EVENT_ROUTE_ERROR: CmEvent.UNREACHABLE,
    _C.RDMA_CM_EVENT_CONNECT_REQUEST: CmEvent.REQUEST,
    _C.RDMA_CM_EVENT_CONNECT_RESPONSE: CmEvent.CONNECT_RESPONSE,
    _C.RDMA_CM_EVENT_CONNECT_ERROR: CmEvent.UNREACHABLE,
    _C.RDMA_CM_EVENT_UNREACHABLE: CmEvent.UNREACHABLE,
    _C.RDMA_CM_EVENT_REJECTED: CmEvent.REJECTED,
    _C.RDMA_CM_EVENT_ESTABLISHED: CmEvent.ESTABLISHED,
    _C.RDMA_CM_EVENT_DISCONNECTED: CmEvent.PEER_DISCONNECTED,
    _C.RDMA_CM_EVENT_DEVICE_REMOVAL: CmEvent.DEVICE_REMOVAL,
    _C.RDMA_CM_EVENT_MULTICAST_JOIN: None,      # DAT joins no multicast group
    _C.RDMA_CM_EVENT_MULTICAST_ERROR: None,
    _C.RDMA_CM_EVENT_ADDR_CHANGE: None,         # the IA keeps the address it opened with
    _C.RDMA_CM_EVENT_TIMEWAIT_EXIT: None,
    _C.RDMA_CM_EVENT_ADDRINFO_RESOLVED: None,   # DAT never calls resolve_addrinfo
    _C.RDMA_CM_EVENT_ADDRINFO_ERROR: None,
}

# shm0's cmid gives a DISCONNECTED caused by the peer's death this status (a documented
# shm0 choice; rdma_cm on a NIC says 0): DAT reads it as BROKEN, not DISCONNECTED (R3).
DEAD_PEER_STATUS = -errno.ECONNRESET


def cm_event(event_type, status=0):
    """The CmEvent of an rdma_cm event (None: ignored), given its type and status."""
    event = CM_EVENT[event_type]
    if event is CmEvent.PEER_DISCONNECTED and status == DEAD_PEER_STATUS:
        return CmEvent.QP_FATAL
    return event


# -- verbs errors (section 3.4) ----------------------------------------------------------

_RESOURCE = {
    "QP": "RESOURCE_TEP", "QP.post_send": "RESOURCE_TEP", "QP.post_recv": "RESOURCE_TEP",
    "SRQ": "RESOURCE_SRQ", "SRQ.post_recv": "RESOURCE_SRQ",
    "MR": "RESOURCE_MEMORY_REGION", "MW": "RESOURCE_MEMORY_REGION",
    "PD": "RESOURCE_PROTECTION_DOMAIN", "CQ": "RESOURCE_TEVD", "CompChannel": "RESOURCE_TEVD",
}
_CR_CALLS = frozenset({"CMID.accept", "CMID.reject"})
_ADDRESS_CALLS = frozenset({"CMID.bind_addr", "CMID.resolve_addr"})


def dat_error(exc, call, position=None):
    """The DatError for the verbs exception `exc` raised by `call` (a name of CALLS
    without its module: "QP" for the constructor, "QP.post_send" for a method), keeping
    its message. `position` names the DAT argument whose value a create's EINVAL refused.

    None for EINVAL from CMID.accept/CMID.reject: the request was withdrawn, which is
    not the consumer's error but a ConnectError event (section 2.4).
    """
    message = f"{call}: {exc}"
    code = getattr(exc, "error_code", -1)    # PyverbsUserError has none: a DAT bug
    is_create = "." not in call
    if code in (errno.ENOMEM, errno.ENOSPC, errno.EAGAIN):
        return InsufficientResources(message, subtype=_RESOURCE.get(call, "RESOURCE_MEMORY"))
    if code == errno.EINVAL:
        if call in _CR_CALLS:
            return None
        if is_create:
            return InvalidParameter(message, subtype=f"INVALID_ARG{position}"
                                    if position is not None else None)
        return InternalError(message)   # DAT checks state and depth before posting
    if code == errno.EADDRINUSE:
        return ConnQualInUse(message)
    if code == errno.EADDRNOTAVAIL:
        return ConnQualUnavailable(message)
    if code in (errno.ENODEV, errno.EAFNOSUPPORT) and call in _ADDRESS_CALLS:
        return InvalidAddress(message, subtype="INVALID_ADDRESS_UNREACHABLE"
                              if code == errno.ENODEV else "INVALID_ADDRESS_UNSUPPORTED")
    if code == errno.EOPNOTSUPP:
        return ModelNotSupported(message)
    # EIO (device fatal: PROVIDER_INTERNAL_ERROR is queued already), EBADF (closed under
    # us), ECONNREFUSED/ETIMEDOUT (never: DAT's CMIDs are asynchronous), the rest.
    return InternalError(message)



# -- what pyverbs does not say, read where the device says it -----------------------------

def peer_address(cmid_):
    """The address a passive CMID's request came from (pyverbs wraps no
    rdma_get_peer_addr; shm0's CMID has dst_addr, as the C id's route does)."""
    dst = getattr(cmid_, "dst_addr", None)
    return dst[0] if dst else None


def local_port(cmid_):
    """The port an active CMID was bound to by resolve_addr (pyverbs wraps no
    rdma_get_src_port; shm0's CMID has src_addr, as the C id's route does)."""
    src = getattr(cmid_, "src_addr", None)
    return src[1] if src else 0
