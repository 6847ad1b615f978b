"""shmdat: a DAT (uDAPL 1.2) provider whose hardware is shared memory between processes.

The public API is the DAT API mapped to Python: see docs/api.md and the README.
"""

from .dat.constants import (TIMEOUT_INFINITE, VALUE_UNKNOWN, WATERMARK_INFINITE, AsyncReason,
                        CloseFlags, CompletionFlags, ConnectFlags, DtoOp, DtoStatus, EpState,
                        EventNumber, EvdFlags, EvdState, MemPriv, PspFlags, Qos, Return,
                        ServiceType, SrqState)
from .dat.errors import (Abort, ConnQualInUse, ConnQualUnavailable, DatError, DatNotImplemented,
                     InsufficientResources, InternalError, InterruptedCall, InvalidAddress,
                     InvalidHandle, InvalidParameter, InvalidState, LengthError,
                     ModelNotSupported, PrivilegesViolation, ProtectionViolation,
                     ProviderNotFound, QueueEmpty, QueueFull, TimeoutExpired)
from .dat.registry import ia_open, registry_list_providers
from .dat.values import (AsyncError, ConnectionEvent, CrArrival, CrParam, DtoCompletion, EpAttr,
                     EpParam, Event, EvdParam, IaAttr, LmrParam, LmrTriplet, ProviderAttr,
                     ProviderInfo, PspParam, RmrBindCompletion, RmrTriplet, SoftwareEvent,
                     SrqParam)

__version__ = "0.1.0"
