"""GIDs (what pyverbs.addr.GID is): 16 bytes, printed as pyverbs prints them.
The device's GIDs are RoCE ones: IPv6 link-local and IPv4-mapped loopback, as
Soft-RoCE shows on `lo`. Its own module so that the device and addr may both use it."""

import ipaddress

from . import checks
from .base import PyverbsObject
from .pyverbs_error import PyverbsUserError


def gid_str(raw):
    """16 bytes as pyverbs prints a GID: 'xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx'."""
    return ":".join(raw[i:i + 2].hex() for i in range(0, 16, 2))


def gid_raw(text):
    """A GID string (pyverbs' 8-word form, or any IPv6 or IPv4 address) -> 16 bytes."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise PyverbsUserError(f"{text!r} is not a GID") from None
    if address.version == 4:
        address = ipaddress.IPv6Address(f"::ffff:{address}")
    return address.packed


class GID(PyverbsObject):
    """ibv_gid: `GID()` is zero, `GID('fe80::1')` or the 8-word form sets it."""

    def __init__(self, val=None):
        super().__init__()
        self.raw = bytes(16) if val is None else gid_raw(checks.text(val, "val"))

    @classmethod
    def from_raw(cls, raw):
        gid = cls()
        gid.raw = bytes(raw)
        return gid

    @property
    def gid(self):
        return gid_str(self.raw)

    @gid.setter
    def gid(self, val):
        self.raw = gid_raw(checks.text(val, "gid"))

    def __eq__(self, other):
        return isinstance(other, GID) and other.raw == self.raw

    def __hash__(self):
        return hash(self.raw)

    def __str__(self):
        return self.gid
