"""The seam's tables (docs/design/dat-over-verbs.md 2.3, 2.6, 3.4, 6.2), each exhaustive
over its verbs enum, dat_error for each errno of 3.4, and the allow-list's spelling."""

import errno
import importlib
import pathlib
import re

import pytest

from shmdat.dat import seam
from shmdat.dat.constants import AsyncReason, DtoStatus, EventNumber
from shmdat.dat.errors import (ConnQualInUse, ConnQualUnavailable, InsufficientResources,
                               InternalError, InvalidAddress, InvalidParameter,
                               ModelNotSupported)
from shmdat.verbs.libibverbs_enums import ibv_event_type, ibv_wc_status
from shmdat.verbs.librdmacm_enums import rdma_cm_event_type
from shmdat.verbs.pyverbs_error import PyverbsError, PyverbsRDMAError, PyverbsUserError

# Section 2.6 as the design writes it: the rows shm0 can produce first.
DTO_ROWS = {
    "SUCCESS": "SUCCESS", "LOC_LEN_ERR": "LENGTH_ERROR", "LOC_QP_OP_ERR": "ERR_LOCAL_EP",
    "LOC_EEC_OP_ERR": "ERR_TRANSPORT", "LOC_PROT_ERR": "ERR_LOCAL_PROTECTION",
    "WR_FLUSH_ERR": "ERR_FLUSHED", "MW_BIND_ERR": "RMR_OPERATION_FAILED",
    "BAD_RESP_ERR": "ERR_BAD_RESPONSE", "LOC_ACCESS_ERR": "ERR_LOCAL_PROTECTION",
    "REM_INV_REQ_ERR": "ERR_REMOTE_RESPONDER", "REM_ACCESS_ERR": "ERR_REMOTE_ACCESS",
    "REM_OP_ERR": "ERR_REMOTE_RESPONDER", "RETRY_EXC_ERR": "ERR_TRANSPORT",
    "RNR_RETRY_EXC_ERR": "ERR_RECEIVER_NOT_READY", "LOC_RDD_VIOL_ERR": "ERR_LOCAL_PROTECTION",
    "REM_INV_RD_REQ_ERR": "ERR_REMOTE_RESPONDER", "REM_ABORT_ERR": "ERR_REMOTE_RESPONDER",
    "INV_EECN_ERR": "ERR_TRANSPORT", "INV_EEC_STATE_ERR": "ERR_TRANSPORT",
    "FATAL_ERR": "ERR_TRANSPORT", "GENERAL_ERR": "ERR_TRANSPORT",
    "RESP_TIMEOUT_ERR": "ERR_RECEIVER_NOT_READY",
    "TM_ERR": "ERR_TRANSPORT", "TM_RNDV_INCOMPLETE": "ERR_TRANSPORT",     # "anything else"
}


@pytest.mark.parametrize("status", list(ibv_wc_status), ids=lambda s: s.name)
def test_every_wc_status_has_its_dto_status(status):
    expected = DtoStatus[DTO_ROWS[status.name[len("IBV_WC_"):]]]
    assert seam.DTO_STATUS[status] is expected
    assert seam.dto_status(int(status)) is expected        # a WC's status is a plain int


def test_dto_status_table_is_exactly_the_enum():
    assert set(seam.DTO_STATUS) == set(ibv_wc_status)
    assert seam.dto_status(max(ibv_wc_status) + 1) is DtoStatus.ERR_TRANSPORT


_EP_BROKEN = (EventNumber.ASYNC_ERROR_EP_BROKEN, AsyncReason.EP_TRANSFER_TO_ERROR, "ep")
ASYNC_ROWS = {
    "QP_FATAL": _EP_BROKEN, "QP_REQ_ERR": _EP_BROKEN, "QP_ACCESS_ERR": _EP_BROKEN,
    "CQ_ERR": (EventNumber.ASYNC_ERROR_EVD_OVERFLOW, AsyncReason.EVD_OVERFLOW_ERROR, "evd"),
    "PORT_ERR": (EventNumber.ASYNC_ERROR_IA_CATASTROPHIC, AsyncReason.IA_CATASTROPHIC_ERROR,
                 "ia"),
    "DEVICE_FATAL": (EventNumber.ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, AsyncReason.OTHER, "ia"),
    "SRQ_LIMIT_REACHED": (EventNumber.ASYNC_SRQ_LOW_WATERMARK, AsyncReason.SRQ_LOW_WATERMARK,
                          "srq"),
    "SRQ_ERR": (EventNumber.ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, AsyncReason.OTHER, "srq"),
}
ASYNC_IGNORED = {"COMM_EST", "SQ_DRAINED", "QP_LAST_WQE_REACHED", "PORT_ACTIVE", "PATH_MIG",
                 "PATH_MIG_ERR", "LID_CHANGE", "PKEY_CHANGE", "SM_CHANGE", "CLIENT_REREGISTER",
                 "GID_CHANGE", "WQ_FATAL", "DEVICE_SPEED_CHANGE"}


@pytest.mark.parametrize("event_type", list(ibv_event_type), ids=lambda e: e.name)
def test_every_async_event_type_is_mapped_or_ignored(event_type):
    short = event_type.name[len("IBV_EVENT_"):]
    assert (short in ASYNC_ROWS) != (short in ASYNC_IGNORED)
    mapped = seam.ASYNC_EVENT[event_type]
    if short in ASYNC_IGNORED:
        assert mapped is None
    else:
        assert tuple(mapped) == ASYNC_ROWS[short]
        assert mapped.number == mapped[0] and mapped.handle in ("ep", "evd", "srq", "ia")


def test_async_event_table_is_exactly_the_enum():
    assert set(seam.ASYNC_EVENT) == set(ibv_event_type)


C = seam.CmEvent
CM_ROWS = {
    "ADDR_RESOLVED": C.ADDR_RESOLVED, "ADDR_ERROR": C.UNREACHABLE,
    "ROUTE_RESOLVED": C.ROUTE_RESOLVED, "ROUTE_ERROR": C.UNREACHABLE,
    "CONNECT_REQUEST": C.REQUEST, "CONNECT_RESPONSE": C.CONNECT_RESPONSE,
    "CONNECT_ERROR": C.UNREACHABLE, "UNREACHABLE": C.UNREACHABLE, "REJECTED": C.REJECTED,
    "ESTABLISHED": C.ESTABLISHED, "DISCONNECTED": C.PEER_DISCONNECTED,
    "DEVICE_REMOVAL": C.DEVICE_REMOVAL,
}
CM_IGNORED = {"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT",
              "ADDRINFO_RESOLVED", "ADDRINFO_ERROR"}


@pytest.mark.parametrize("event_type", list(rdma_cm_event_type), ids=lambda e: e.name)
def test_every_cm_event_type_is_mapped_or_ignored(event_type):
    short = event_type.name[len("RDMA_CM_EVENT_"):]
    assert (short in CM_ROWS) != (short in CM_IGNORED)
    assert seam.CM_EVENT[event_type] is CM_ROWS.get(short)
    assert seam.cm_event(int(event_type)) is CM_ROWS.get(short)


def test_cm_event_table_is_exactly_the_enum_and_uses_every_typed_event():
    assert set(seam.CM_EVENT) == set(rdma_cm_event_type)
    # QP_FATAL comes from DISCONNECTED's status, not from a type of its own.
    assert set(seam.CM_EVENT.values()) - {None} == set(C) - {C.QP_FATAL}


def test_a_dead_peers_disconnect_is_qp_fatal_and_only_disconnect_reads_the_status():
    dis = rdma_cm_event_type.RDMA_CM_EVENT_DISCONNECTED
    assert seam.cm_event(dis, 0) is C.PEER_DISCONNECTED
    assert seam.cm_event(dis, -errno.ECONNRESET) is C.QP_FATAL
    assert seam.cm_event(rdma_cm_event_type.RDMA_CM_EVENT_REJECTED, -errno.ECONNRESET) \
        is C.REJECTED
    assert seam.cm_event(rdma_cm_event_type.RDMA_CM_EVENT_REJECTED, 28) is C.REJECTED


# Section 3.4: (errno, the call that raised it) -> (DatError class, subtype).
ERRNO_ROWS = [
    (errno.ENOMEM, "QP", InsufficientResources, "RESOURCE_TEP"),
    (errno.ENOMEM, "MR", InsufficientResources, "RESOURCE_MEMORY_REGION"),
    (errno.ENOSPC, "CQ", InsufficientResources, "RESOURCE_TEVD"),
    (errno.EAGAIN, "PD", InsufficientResources, "RESOURCE_PROTECTION_DOMAIN"),
    (errno.ENOMEM, "SRQ", InsufficientResources, "RESOURCE_SRQ"),
    (errno.ENOMEM, "QP.post_send", InsufficientResources, "RESOURCE_TEP"),
    (errno.ENOMEM, "QP.post_recv", InsufficientResources, "RESOURCE_TEP"),
    (errno.EAGAIN, "SRQ.post_recv", InsufficientResources, "RESOURCE_SRQ"),
    (errno.ENOMEM, "CMID", InsufficientResources, "RESOURCE_MEMORY"),
    (errno.EINVAL, "QP", InvalidParameter, None),
    (errno.EINVAL, "QP.post_send", InternalError, None),
    (errno.EINVAL, "SRQ.post_recv", InternalError, None),
    (errno.EINVAL, "CMID.connect", InternalError, None),
    (errno.EADDRINUSE, "CMID.bind_addr", ConnQualInUse, None),
    (errno.EADDRNOTAVAIL, "CMID.bind_addr", ConnQualUnavailable, None),
    (errno.ENODEV, "CMID.resolve_addr", InvalidAddress, "INVALID_ADDRESS_UNREACHABLE"),
    (errno.ENODEV, "CMID.bind_addr", InvalidAddress, "INVALID_ADDRESS_UNREACHABLE"),
    (errno.EAFNOSUPPORT, "CMID.bind_addr", InvalidAddress, "INVALID_ADDRESS_UNSUPPORTED"),
    (errno.ENODEV, "device.Context", InternalError, None),
    (errno.ECONNREFUSED, "CMID.connect", InternalError, None),
    (errno.ETIMEDOUT, "CMID.resolve_route", InternalError, None),
    (errno.EIO, "CQ.poll", InternalError, None),
    (errno.EBADF, "QP.post_send", InternalError, None),
    (errno.EOPNOTSUPP, "MR", ModelNotSupported, None),
    (errno.EOPNOTSUPP, "QP.bind_mw", ModelNotSupported, None),
    (errno.EPERM, "MR", InternalError, None),
]


@pytest.mark.parametrize("code, call, kind, subtype", ERRNO_ROWS,
                         ids=[f"{errno.errorcode[r[0]]}-{r[1]}" for r in ERRNO_ROWS])
def test_dat_error_for_each_errno(code, call, kind, subtype):
    exc = PyverbsRDMAError(f"Failed {call}", code)
    err = seam.dat_error(exc, call)
    assert type(err) is kind
    assert err.subtype == subtype
    assert str(exc) in err.message and call in err.message


def test_dat_error_names_the_argument_a_create_refused():
    err = seam.dat_error(PyverbsRDMAError("Failed to create QP", errno.EINVAL), "QP", position=4)
    assert isinstance(err, InvalidParameter) and err.subtype == "INVALID_ARG4"


@pytest.mark.parametrize("call", ["CMID.accept", "CMID.reject"])
def test_einval_from_accepting_a_withdrawn_request_is_no_error(call):
    assert seam.dat_error(PyverbsRDMAError("Failed to accept", errno.EINVAL), call) is None
    # Any other errno there is still an error.
    assert isinstance(seam.dat_error(PyverbsRDMAError("x", errno.EIO), call), InternalError)


def test_user_errors_and_errno_less_errors_are_dat_bugs():
    for exc in (PyverbsUserError("pd must be a PD"), PyverbsError("odd"),
                PyverbsRDMAError("no errno")):
        err = seam.dat_error(exc, "QP")
        assert type(err) is InternalError and str(exc) in err.message


def test_no_room_in_dev_shm_keeps_its_numbers():
    # shm0.verbs turns hw's NoRoom into ENOMEM with the message: the sizes must survive.
    message = "MR: /dev/shm has 1.0 MiB free, 64.0 MiB asked"
    err = seam.dat_error(PyverbsRDMAError(message, errno.ENOMEM), "MR")
    assert isinstance(err, InsufficientResources) and message in str(err)


def test_dat_error_reads_rdma_cores_exceptions_by_their_error_code():
    class PyverbsRDMAError(Exception):      # rdma-core's own class: another type, same API
        error_code = errno.EADDRINUSE
    assert isinstance(seam.dat_error(PyverbsRDMAError("in use"), "CMID.bind_addr"),
                      ConnQualInUse)


def test_calls_are_spelled_as_the_recording_module_logs_them():
    modules = set(seam.MODULES) | {"shm0dv"}
    for name in seam.CALLS:
        owner, _, member = name.partition(".")
        assert member and not member.startswith("_") and "." not in member, name
        assert owner in modules or owner[0].isupper(), name


@pytest.mark.parametrize("module", seam.MODULES)
def test_every_module_level_call_exists_in_shmdat_verbs(module):
    real = importlib.import_module(f"shmdat.verbs.{module}")
    for name in seam.CALLS:
        owner, _, member = name.partition(".")
        if owner == module:
            assert hasattr(real, member), name


def test_no_other_dat_module_names_a_verbs_module():
    dat = pathlib.Path(seam.__file__).parent
    verbs_import = re.compile(r"^\s*(from|import)\s+(\.\.verbs|shmdat\.verbs|pyverbs)\b", re.M)
    naming = [p.name for p in dat.glob("*.py")
              if p.name != "seam.py" and verbs_import.search(p.read_text())]
    assert naming == []


def test_no_dat_module_imports_the_hardware():
    """Issue 12: DAT is built on a verbs module alone (the seam); the hardware is the
    device's."""
    dat = pathlib.Path(seam.__file__).parent
    hw_import = re.compile(r"^\s*(from|import)\s+(\.\.hw|shmdat\.hw)\b", re.M)
    assert [p.name for p in dat.glob("*.py") if hw_import.search(p.read_text())] == []
