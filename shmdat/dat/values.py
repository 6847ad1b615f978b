"""DAT's value types: triplets, attributes, parameters and event data."""

import dataclasses
import struct
from typing import Any, NamedTuple, Optional

from . import limits
from .constants import (CompletionFlags, DtoOp, DtoStatus, EventNumber, Qos,
                        ServiceType, WATERMARK_INFINITE)
from .errors import InvalidParameter


class LmrTriplet(NamedTuple):
    """DAT_LMR_TRIPLET: a segment of local memory named by its LMR context."""
    lmr_context: int
    virtual_address: int
    segment_length: int


_RMR_TRIPLET = struct.Struct("<QQQ")


class RmrTriplet(NamedTuple):
    """DAT_RMR_TRIPLET: a segment of a peer's memory named by its RMR context."""
    rmr_context: int
    target_address: int
    segment_length: int

    def pack(self) -> bytes:
        """The triplet as 24 little-endian bytes, to hand to a peer."""
        return _RMR_TRIPLET.pack(*self)

    @classmethod
    def unpack(cls, data) -> "RmrTriplet":
        """The triplet from the first 24 bytes that pack() produced."""
        try:
            return cls(*_RMR_TRIPLET.unpack_from(data))
        except (struct.error, TypeError):
            raise InvalidParameter(f"RmrTriplet.unpack needs the {_RMR_TRIPLET.size} bytes made by "
                                   f"RmrTriplet.pack(), not {type(data).__name__} {data!r:.48}",
                                   subtype="INVALID_ARG1") from None


RmrTriplet.SIZE = _RMR_TRIPLET.size


@dataclasses.dataclass
class EpAttr:
    """DAT_EP_ATTR, each field with the provider's default."""
    service_type: ServiceType = ServiceType.RC
    max_message_size: int = limits.MAX_MESSAGE_SIZE
    max_rdma_size: int = limits.MAX_RDMA_SIZE
    qos: Qos = Qos.BEST_EFFORT
    recv_completion_flags: CompletionFlags = CompletionFlags.DEFAULT
    request_completion_flags: CompletionFlags = CompletionFlags.DEFAULT
    max_recv_dtos: int = limits.DEFAULT_MAX_DTOS
    max_request_dtos: int = limits.DEFAULT_MAX_DTOS
    max_recv_iov: int = limits.DEFAULT_MAX_IOV
    max_request_iov: int = limits.DEFAULT_MAX_IOV
    max_rdma_read_in: int = limits.DEFAULT_MAX_RDMA_READ
    max_rdma_read_out: int = limits.DEFAULT_MAX_RDMA_READ
    srq_soft_hw: int = WATERMARK_INFINITE


@dataclasses.dataclass
class IaAttr:
    adapter_name: str
    vendor_name: str
    hardware_version_major: int
    hardware_version_minor: int
    firmware_version_major: int
    firmware_version_minor: int
    ia_address: str
    max_eps: int
    max_dto_per_ep: int
    max_rdma_read_per_ep_in: int
    max_rdma_read_per_ep_out: int
    max_evds: int
    max_evd_qlen: int
    max_iov_segments_per_dto: int
    max_lmrs: int
    max_lmr_block_size: int
    max_lmr_virtual_address: int
    max_pzs: int
    max_message_size: int
    max_rdma_size: int
    max_rmrs: int
    max_rmr_target_address: int
    max_srqs: int
    max_ep_per_srq: int
    max_recv_per_srq: int
    max_iov_segments_per_rdma_read: int
    max_iov_segments_per_rdma_write: int


@dataclasses.dataclass
class ProviderAttr:
    provider_name: str
    provider_version_major: int
    provider_version_minor: int
    dapl_version_major: int
    dapl_version_minor: int
    lmr_mem_types_supported: tuple
    max_private_data_size: int
    is_thread_safe: bool
    completion_flags_supported: CompletionFlags
    ep_creator: str
    max_rdma_read_per_ep_in_guaranteed: bool
    max_rdma_read_per_ep_out_guaranteed: bool
    srq_supported: bool
    srq_watermarks_supported: bool
    srq_info_supported: bool
    ep_recv_info_supported: bool
    optimal_buffer_alignment: int
    iov_ownership_on_return: str
    dto_async_return_guaranteed: bool
    rdma_write_for_rdma_read_req: bool
    lmr_sync_req: bool


class ProviderInfo(NamedTuple):
    ia_name: str
    version: tuple
    thread_safe: bool


@dataclasses.dataclass
class EpParam:
    ia: Any
    ep_state: Any
    local_ia_address: str
    local_port_qual: Optional[int]
    remote_ia_address: Optional[str]
    remote_port_qual: Optional[int]
    pz: Any
    recv_evd: Any
    request_evd: Any
    connect_evd: Any
    srq: Any
    ep_attr: EpAttr


@dataclasses.dataclass
class EvdParam:
    ia: Any
    evd_qlen: int
    evd_state: Any
    evd_flags: Any
    cno: Any
    evd_count: int          # events queued now (provider extension, handy in tests)
    overflowed: bool


@dataclasses.dataclass
class LmrParam:
    ia: Any
    mem_type: str
    region: Any
    length: int
    pz: Any
    mem_priv: Any
    lmr_context: int
    rmr_context: Optional[int]
    registered_size: int
    registered_address: int


@dataclasses.dataclass
class RmrParam:
    ia: Any
    pz: Any
    lmr_triplet: Optional[LmrTriplet]
    mem_priv: Any
    rmr_context: Optional[int]


@dataclasses.dataclass
class PzParam:
    ia: Any


@dataclasses.dataclass
class PspParam:
    ia: Any
    conn_qual: int
    evd: Any
    psp_flags: Any


@dataclasses.dataclass
class RspParam:
    ia: Any
    conn_qual: int
    evd: Any
    ep: Any


@dataclasses.dataclass
class CrParam:
    remote_ia_address: str
    remote_port_qual: int
    private_data: bytes
    local_ep: Any


@dataclasses.dataclass
class SrqParam:
    ia: Any
    srq_state: Any
    pz: Any
    max_recv_dtos: int
    max_recv_iov: int
    low_watermark: int
    available_dto_count: int
    outstanding_dto_count: int


@dataclasses.dataclass
class CnoParam:
    ia: Any
    agent: Any


# Events. NamedTuples: cheap to build on the completion path.

class Event(NamedTuple):
    number: EventNumber
    evd: Any
    data: Any


class DtoCompletion(NamedTuple):
    ep: Any
    user_cookie: Any
    status: DtoStatus
    transferred_length: int
    operation: DtoOp


class RmrBindCompletion(NamedTuple):
    rmr: Any
    user_cookie: Any
    status: DtoStatus


class CrArrival(NamedTuple):
    sp: Any
    local_ia_address: str
    conn_qual: int
    cr: Any


class ConnectionEvent(NamedTuple):
    ep: Any
    private_data: bytes


class AsyncError(NamedTuple):
    handle: Any
    reason: Any


class SoftwareEvent(NamedTuple):
    pointer: Any
