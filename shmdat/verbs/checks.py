"""Checks of the verbs API's arguments: one validator per kind of argument.

A value of the wrong type is a PyverbsUserError (pyverbs' Python-level checks
raise it, and it has no errno); a value of the right type that the device
refuses stays the caller's PyverbsRDMAError with EINVAL, as libibverbs returns.
Messages name the argument, say what it must be and what was given:
"cap.max_send_wr must be an int from 0 to 4294967295, not str 'x'".

The common case of each check is one class comparison (`value.__class__ is
int`), so that the calls on the data path (post_send, post_recv, poll,
get_cq_event) pay nothing more for it; the rest is looked at only when that fails.
"""

import math
import reprlib

from .pyverbs_error import PyverbsUserError

# What a post raises when a WR's field is of the wrong type: the WR's fields are
# then checked (wr.check_send_wr), to name the wrong one.
WRONG_FIELD = (TypeError, ValueError, OverflowError, AttributeError, IndexError)

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 48


def given(value):
    """What the caller passed, for a message: its type and a short repr."""
    if value is None:
        return "None"
    return f"{type(value).__name__} {_short.repr(value)}"


def wrong(name, what, value):
    """The PyverbsUserError for argument `name` that is not `what`."""
    return PyverbsUserError(f"{name} must be {what}, not {given(value)}")


def uint(value, name, bits=32):
    """An unsigned C integer of `bits` bits -> int. As Cython converts a number
    for a C integer field, a finite float is truncated (rdma-core's tests pass
    msg_size / 2 as a length); bool, str, bytes and anything else are refused,
    as are values that do not fit."""
    if value.__class__ is int and 0 <= value and not value >> bits:     # the common case
        return value
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value >> bits:
        raise wrong(name, f"an int from 0 to {(1 << bits) - 1}", value)
    return int(value)                # an IntEnum or IntFlag member -> its plain value


def boolean(value, name):
    """A yes-or-no option (solicited_only, is_global, sq_sig_all): a bool, or an
    int as C takes it."""
    if value.__class__ is bool or value.__class__ is int:
        return value
    if not isinstance(value, int):
        raise wrong(name, "a bool", value)
    return int(value)


def instance(value, cls, name, none=False):
    """An object of the verbs class (or tuple of classes) `cls`; None too if `none`."""
    if value.__class__ is cls or isinstance(value, cls) or (none and value is None):
        return value
    names = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
    raise wrong(name, f"a{'n' if names[0] in 'AEIOU' else ''} {names}{' or None' if none else ''}",
                value)


def sequence(value, cls, name):
    """A list or tuple of objects of `cls` (SGEs, WRs) -> the list."""
    if not isinstance(value, (list, tuple)):
        raise wrong(name, f"a list of {cls.__name__}", value)
    for i, item in enumerate(value):
        instance(item, cls, f"{name}[{i}]")
    return value


def text(value, name):
    """A name or an address: str, or bytes as UTF-8 -> str."""
    if value.__class__ is str:
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            pass
    if isinstance(value, str):
        return str(value)
    raise wrong(name, "a str", value)


def data(value, name, encode=False):
    """Bytes-like data -> a flat memoryview of bytes; a str is encoded as UTF-8
    if `encode` (MR.write takes one, as pyverbs'), refused otherwise."""
    if isinstance(value, str) and encode:
        value = value.encode()
    try:
        return memoryview(value).cast("B")
    except TypeError:
        raise wrong(name, "bytes-like", value) from None
