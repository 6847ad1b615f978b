"""The seam between DAT and a verbs module (BRANCH STUB: replaced by the seam branch's module).

What DAT needs of a verbs device, for shm0 over shmdat.verbs, until the seam and
shm0dv branches merge: the modules, the status table, error translation, and the
shm0 extension's functions (lock, block, wake, events_pending, watch, a
non-blocking CM event).
"""

import errno
import os
from typing import Any, NamedTuple

from ..hw import cma
from ..hw.progress import SignalError
from ..verbs import (cmid, cq, device, libibverbs_enums, librdmacm_enums, mr, pd, pyverbs_error,
                     qp, srq, wr)
from .constants import DtoStatus
from .errors import (ConnQualInUse, ConnQualUnavailable, InsufficientResources, InternalError,
                     InvalidAddress, InvalidParameter, ModelNotSupported)

e = libibverbs_enums
ce = librdmacm_enums


class Device(NamedTuple):
    name: str                   # the provider name
    device_name: str            # the verbs device
    port_num: int
    address: str                # the IA address
    device: Any
    pd: Any
    mr: Any
    cq: Any
    qp: Any
    srq: Any
    wr: Any
    cmid: Any
    enums: Any
    cm_enums: Any
    pyverbs_error: Any


def open_device(name):
    return Device(name, "shm0", 1, "127.0.0.1", device, pd, mr, cq, qp, srq, wr, cmid,
                  libibverbs_enums, librdmacm_enums, pyverbs_error)


# ibv_wc_status -> DtoStatus (dapl's table, openib_common/cq.c).
DTO_STATUS = {
    e.IBV_WC_SUCCESS: DtoStatus.SUCCESS,
    e.IBV_WC_LOC_LEN_ERR: DtoStatus.LENGTH_ERROR,
    e.IBV_WC_LOC_QP_OP_ERR: DtoStatus.ERR_LOCAL_EP,
    e.IBV_WC_LOC_EEC_OP_ERR: DtoStatus.ERR_TRANSPORT,
    e.IBV_WC_LOC_PROT_ERR: DtoStatus.ERR_LOCAL_PROTECTION,
    e.IBV_WC_WR_FLUSH_ERR: DtoStatus.ERR_FLUSHED,
    e.IBV_WC_MW_BIND_ERR: DtoStatus.RMR_OPERATION_FAILED,
    e.IBV_WC_BAD_RESP_ERR: DtoStatus.ERR_BAD_RESPONSE,
    e.IBV_WC_LOC_ACCESS_ERR: DtoStatus.ERR_LOCAL_PROTECTION,
    e.IBV_WC_REM_INV_REQ_ERR: DtoStatus.ERR_REMOTE_RESPONDER,
    e.IBV_WC_REM_ACCESS_ERR: DtoStatus.ERR_REMOTE_ACCESS,
    e.IBV_WC_REM_OP_ERR: DtoStatus.ERR_REMOTE_RESPONDER,
    e.IBV_WC_RETRY_EXC_ERR: DtoStatus.ERR_TRANSPORT,
    e.IBV_WC_RNR_RETRY_EXC_ERR: DtoStatus.ERR_RECEIVER_NOT_READY,
}


def dat_error(exc, what, subtype=None):
    """A verbs error as the DatError a consumer gets."""
    message = f"{what}: {exc}"
    if isinstance(exc, pyverbs_error.PyverbsRDMAError):
        code = exc.error_code
        if code in (errno.ENOMEM, errno.ENOSPC, errno.EAGAIN):
            return InsufficientResources(message, subtype=subtype)
        if code == errno.EADDRINUSE:
            return ConnQualInUse(message)
        if code == errno.EADDRNOTAVAIL:
            return ConnQualUnavailable(message)
        if code in (errno.ENODEV, errno.EAFNOSUPPORT):
            return InvalidAddress(message)
        if code == errno.EOPNOTSUPP:
            return ModelNotSupported(message)
        if code == errno.EINVAL:
            return InvalidParameter(message)
    return InternalError(message)


# The shm0 extension (shm0dv), until its branch merges.

def lock(ctx):
    return ctx.lock


def block(ctx, ready, deadline):
    """Run the device and sleep until ready() or the deadline; InterruptedError on a signal."""
    with ctx.lock:
        try:
            return ctx._progress.block(ready, deadline)
        except SignalError:
            raise InterruptedError(errno.EINTR, "a signal interrupted the wait") from None


def wake(ctx):
    ctx.wake_waiters()


def cm_event(channel):
    """The channel's next CM event, or None."""
    if not channel._events:
        return None
    return cmid.CMEvent(channel)


def watch(ctx):
    ctx.progress()


def lmr_mem_types(ctx):
    return ("virtual", "shared") if cma.status()[0] else ("shared",)


def cm_set_private_data_limit(cmid, nbytes):
    os.environ.setdefault("SHMDAT_CM_PRIVATE_DATA", str(nbytes))


def verbs_enums():
    """verbs.h's numbers (the same in every verbs module)."""
    return libibverbs_enums


def wc_solicited(wc):
    return True


def receives_filling(qp):
    return 0


def local_port(cmid):
    return cmid.src_addr[1] if cmid.src_addr else 0


def peer_died(event):
    return event.status == -errno.ECONNRESET
