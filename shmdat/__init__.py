"""shmdat: a DAT (uDAPL 1.2) provider whose hardware is shared memory between processes.

The public API is the DAT API mapped to Python: see docs/api.md and the README.

Its names are loaded on first use (PEP 562's module __getattr__), so that what does not
use the provider starts without importing it: the launcher (`shmdat run`, `python -m
shmdat.mpi`), `shmdat --version`, `python -m shmdat.verbs`. `import shmdat` then
`shmdat.ia_open(...)`, `from shmdat import DtoStatus` and `from shmdat import *` work as
with plain imports.
"""

import importlib as _importlib

__version__ = "0.1.0"

# module (relative to this package) -> the public names it gives
_EXPORTS = {
    ".dat.constants": """
        TIMEOUT_INFINITE VALUE_UNKNOWN WATERMARK_INFINITE AsyncReason CloseFlags
        CompletionFlags ConnectFlags DtoOp DtoStatus EpState EventNumber EvdFlags EvdState
        MemPriv PspFlags Qos Return ServiceType SrqState
    """.split(),
    ".dat.errors": """
        Abort ConnQualInUse ConnQualUnavailable DatError DatNotImplemented
        InsufficientResources InternalError InterruptedCall InvalidAddress InvalidHandle
        InvalidParameter InvalidState LengthError ModelNotSupported PrivilegesViolation
        ProtectionViolation ProviderNotFound QueueEmpty QueueFull TimeoutExpired
    """.split(),
    ".dat.registry": """
        ia_open registry_list_providers
    """.split(),
    ".dat.values": """
        AsyncError ConnectionEvent CrArrival CrParam DtoCompletion EpAttr EpParam Event
        EvdParam IaAttr LmrParam LmrTriplet ProviderAttr ProviderInfo PspParam
        RmrBindCompletion RmrTriplet SoftwareEvent SrqParam
    """.split(),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    """A public name, imported from its module at its first use (and bound here)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'shmdat' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
