"""DAT return codes as Python exceptions.

A DAT call that does not return DAT_SUCCESS raises a subclass of DatError whose
``code`` is the DAT return type and whose ``subtype`` names the DAT subtype
where one is known ("INVALID_ARG3", "INVALID_STATE_EP_CONNECTED", ...).
``str(err)`` plays the part of dat_strerror.
"""

from .constants import Return


class DatError(Exception):
    code = Return.INTERNAL_ERROR
    subtype = None              # unless the error names one

    def __init__(self, message, subtype=None):
        super().__init__(message)
        if subtype is not None:
            self.subtype = subtype

    @property
    def message(self):
        return self.args[0]

    def __str__(self):
        sub = f" ({self.subtype})" if self.subtype else ""
        return f"DAT_{self.code.name}{sub}: {self.message}"


class _WithNmore(DatError):
    def __init__(self, message, nmore=0, subtype=None):
        super().__init__(message, subtype)
        self.nmore = nmore


class Abort(DatError):
    code = Return.ABORT


class ConnQualInUse(DatError):
    code = Return.CONN_QUAL_IN_USE


class ConnQualUnavailable(DatError):
    code = Return.CONN_QUAL_UNAVAILABLE


class InsufficientResources(DatError):
    code = Return.INSUFFICIENT_RESOURCES


class InternalError(DatError):
    code = Return.INTERNAL_ERROR


class InvalidAddress(DatError):
    code = Return.INVALID_ADDRESS


class InvalidHandle(DatError):
    code = Return.INVALID_HANDLE


class InvalidParameter(DatError):
    code = Return.INVALID_PARAMETER


class InvalidState(DatError):
    code = Return.INVALID_STATE


class LengthError(DatError):
    code = Return.LENGTH_ERROR


class ModelNotSupported(DatError):
    code = Return.MODEL_NOT_SUPPORTED


class ProviderNotFound(DatError):
    code = Return.PROVIDER_NOT_FOUND


class PrivilegesViolation(DatError):
    code = Return.PRIVILEGES_VIOLATION


class ProtectionViolation(DatError):
    code = Return.PROTECTION_VIOLATION


class QueueEmpty(DatError):
    code = Return.QUEUE_EMPTY
    # DAT gives QUEUE_EMPTY no subtype, and a polling consumer meets it at every empty
    # dequeue: made by the C-level init (args, hence message), no Python call.
    __init__ = Exception.__init__


class QueueFull(DatError):
    code = Return.QUEUE_FULL


class TimeoutExpired(_WithNmore):
    code = Return.TIMEOUT_EXPIRED


class InterruptedCall(_WithNmore):
    code = Return.INTERRUPTED_CALL


class DatNotImplemented(DatError):
    code = Return.NOT_IMPLEMENTED


def bad_arg(position, message):
    """InvalidParameter naming the argument by its DAT position (INVALID_ARGn)."""
    return InvalidParameter(message, subtype=f"INVALID_ARG{position}")

