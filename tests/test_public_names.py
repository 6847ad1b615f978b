"""`import shmdat` offers the DAT API's names, the same set whatever the tree looks like inside."""

import shmdat

PUBLIC = {
    "TIMEOUT_INFINITE", "VALUE_UNKNOWN", "WATERMARK_INFINITE", "AsyncReason", "CloseFlags",
    "CompletionFlags", "ConnectFlags", "DtoOp", "DtoStatus", "EpState", "EventNumber", "EvdFlags",
    "EvdState", "MemPriv", "PspFlags", "Qos", "Return", "ServiceType", "SrqState",
    "Abort", "ConnQualInUse", "ConnQualUnavailable", "DatError", "DatNotImplemented",
    "InsufficientResources", "InternalError", "InterruptedCall", "InvalidAddress", "InvalidHandle",
    "InvalidParameter", "InvalidState", "LengthError", "ModelNotSupported", "PrivilegesViolation",
    "ProtectionViolation", "ProviderNotFound", "QueueEmpty", "QueueFull", "TimeoutExpired",
    "ia_open", "registry_list_providers",
    "AsyncError", "ConnectionEvent", "CrArrival", "CrParam", "DtoCompletion", "EpAttr", "EpParam",
    "Event", "EvdParam", "IaAttr", "LmrParam", "LmrTriplet", "ProviderAttr", "ProviderInfo",
    "PspParam", "RmrBindCompletion", "RmrTriplet", "SoftwareEvent", "SrqParam",
}


def test_the_public_names_are_the_dat_api():
    names = {n for n in dir(shmdat) if not n.startswith("_")}
    # The subpackages are reachable too, but are not what `from shmdat import *` users rely on.
    assert names - {"dat", "hw", "verbs", "bench", "cli", "mpi"} == PUBLIC
