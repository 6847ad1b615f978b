"""Checks of the public API's arguments: one validator per kind of argument.

A failure is an InvalidParameter whose subtype is the argument's DAT position
(INVALID_ARGn) and whose message names the argument, says what it must be and
what it was given ("timeout must be an int of microseconds ..., not str '5'").
bool is never taken for an int, nor bytes or a str for a list.
"""

import reprlib

from . import limits
from .constants import CONN_QUAL_MAX, TIMEOUT_INFINITE
from .errors import bad_arg
from .values import LmrTriplet, RmrTriplet

U64 = (1 << 64) - 1
_short = reprlib.Repr()
_short.maxstring = _short.maxother = 48


def given(value):
    """What the caller passed, for a message: its type and a short repr."""
    if value is None:
        return "None"
    return f"{type(value).__name__} {_short.repr(value)}"


def expected(position, name, what, value, hint=""):
    """The InvalidParameter for argument `name` at DAT position `position`."""
    return bad_arg(position, f"{name} must be {what}, not {given(value)}{hint}")


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(value, position, name, low=0, high=U64, what=None):
    """An int from low to high (the bounds named in `what` when given) -> int."""
    if value.__class__ is int and low <= value <= high:     # the common case: one test
        return value
    if not is_int(value) or not low <= value <= high:
        raise expected(position, name, what or f"an int from {low} to {high}", value)
    return int(value)


def check_flags(value, position, name, allowed, what):
    """A combination of the flags in the int mask `allowed` -> a plain int."""
    if value.__class__ is int and 0 <= value and not value & ~allowed:     # the common case
        return value
    if not is_int(value):
        raise expected(position, name, what, value)
    flags = int(value)          # IntFlag arithmetic is a Python call per operation
    if flags < 0 or flags & ~allowed:
        raise expected(position, name, what, value)
    return flags


def check_choice(value, position, name, choices):
    """One of the enum members `choices` -> that member."""
    for choice in choices:
        if is_int(value) and value == choice:
            return choice
    raise expected(position, name, " or ".join(f"{type(c).__name__}.{c.name}" for c in choices), value)


def check_timeout(timeout, position, name="timeout"):
    """A DAT timeout in microseconds -> seconds, or None for TIMEOUT_INFINITE."""
    if timeout.__class__ is not int or not 0 <= timeout <= TIMEOUT_INFINITE:    # a DAT_TIMEOUT is 32 bits
        check_int(timeout, position, name, 0, TIMEOUT_INFINITE,
                  "an int of microseconds from 0 to TIMEOUT_INFINITE (2**32 - 1)")
    return None if timeout == TIMEOUT_INFINITE else timeout / 1e6


def check_qlen(qlen, position, name="qlen"):
    return check_int(qlen, position, name, 1, limits.MAX_EVD_QLEN,
                     f"an int from 1 to max_evd_qlen ({limits.MAX_EVD_QLEN})")


def check_conn_qual(conn_qual, position, name="conn_qual"):
    """A connection qualifier: a port of rdma_cm's TCP port space, as on every IP-based
    DAT provider (OFA's dapl too)."""
    return check_int(conn_qual, position, name, 1, CONN_QUAL_MAX,
                     f"a port number from 1 to {CONN_QUAL_MAX}")


def check_private_data(private_data, position, limit):
    """Bytes-like private data within `limit` bytes (the IA's max_private_data_size) -> bytes."""
    if isinstance(private_data, str):
        raise expected(position, "private_data", "bytes-like", private_data, "; encode the str first")
    try:
        data = bytes(memoryview(private_data))
    except TypeError:
        raise expected(position, "private_data", "bytes-like", private_data) from None
    if len(data) > limit:
        raise bad_arg(position, f"{len(data)} bytes of private_data is over max_private_data_size "
                                f"({limit})")
    return data


def check_lmr_triplet(triplet, position, name):
    """An LmrTriplet (or a tuple of three ints) -> (lmr_context, virtual_address,
    segment_length). A zero-length segment's other fields are ignored, as DAT says."""
    if not isinstance(triplet, (tuple, list)) or len(triplet) != 3:
        raise expected(position, name, "an LmrTriplet (lmr_context, virtual_address, segment_length)",
                       triplet)
    ctx, address, length = triplet
    check_int(length, position, f"{name}.segment_length")
    if length:
        if not is_int(ctx):
            hint = "; lmr.triplet(offset, length) makes the triplet" if hasattr(ctx, "lmr_context") else ""
            raise expected(position, f"{name}.lmr_context", "an int (an LMR's lmr_context)", ctx, hint)
        check_int(address, position, f"{name}.virtual_address")
    return ctx, address, length


def check_local_iov(local_iov, position):
    """A list (or tuple) of LmrTriplets -> list of (lmr_context, virtual_address, segment_length)."""
    if isinstance(local_iov, LmrTriplet) or (
            isinstance(local_iov, tuple) and len(local_iov) == 3 and all(map(is_int, local_iov))):
        raise expected(position, "local_iov", "a list of LmrTriplet", local_iov,
                       "; it is one triplet: pass [triplet]")
    if not isinstance(local_iov, (list, tuple)):
        raise expected(position, "local_iov", "a list of LmrTriplet", local_iov)
    return [check_lmr_triplet(t, position, f"local_iov[{i}]") for i, t in enumerate(local_iov)]


def check_rmr_triplet(triplet, position, name="remote_iov"):
    """An RmrTriplet (or a tuple of three ints) -> RmrTriplet."""
    if type(triplet) is RmrTriplet:             # the common case, checked inline
        ctx, address, length = triplet
        if (ctx.__class__ is int and address.__class__ is int and length.__class__ is int
                and 0 <= ctx <= U64 and 0 <= address <= U64 and 0 <= length <= U64):
            return triplet
    if not isinstance(triplet, (tuple, list)) or len(triplet) != 3:
        raise expected(position, name, "one RmrTriplet (rmr_context, target_address, segment_length)",
                       triplet)
    for field, value in zip(RmrTriplet._fields, triplet):
        check_int(value, position, f"{name}.{field}")
    return triplet if type(triplet) is RmrTriplet else RmrTriplet(*triplet)


def check_range(offset, length, size, position=2):
    """offset and length (None: to the end) inside `size` bytes -> (offset, length)."""
    if offset.__class__ is int and length.__class__ is int and 0 <= offset and 0 <= length \
            and offset + length <= size:        # the common case: no further call
        return offset, length
    check_int(offset, position, "offset")
    if length is None:
        length = max(size - offset, 0)
    check_int(length, position + 1, "length")
    if offset + length > size:
        raise bad_arg(position, f"[{offset}, {offset}+{length}) is not inside this LMR of {size} bytes")
    return offset, length
