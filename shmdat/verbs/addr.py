"""Addresses (pyverbs.addr): GID. The device's GIDs are RoCE ones: IPv6 link-local
and IPv4-mapped loopback, as Soft-RoCE shows on `lo`."""

import ipaddress

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
        self.raw = bytes(16) if val is None else gid_raw(val)

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
        self.raw = gid_raw(val)

    def __eq__(self, other):
        return isinstance(other, GID) and other.raw == self.raw

    def __hash__(self):
        return hash(self.raw)

    def __str__(self):
        return self.gid


class GlobalRoute(PyverbsObject):
    """ibv_global_route: the GRH values of an address (dgid and sgid_index matter here)."""

    def __init__(self, dgid=None, flow_label=0, sgid_index=0, hop_limit=1, traffic_class=0):
        super().__init__()
        if dgid is not None and not isinstance(dgid, GID):
            raise PyverbsUserError(f"dgid must be a GID, not {type(dgid)}")
        self.dgid = dgid if dgid is not None else GID()
        self.flow_label, self.sgid_index = flow_label, sgid_index
        self.hop_limit, self.traffic_class = hop_limit, traffic_class


class AHAttr(PyverbsObject):
    """ibv_ah_attr: where a QP (or an AH) sends. On RoCE it must be global."""

    def __init__(self, dlid=0, sl=0, src_path_bits=0, static_rate=0, is_global=0, port_num=1,
                 gr=None):
        super().__init__()
        if is_global and gr is None:
            raise PyverbsUserError("Global AH Attr is created but gr parameter is None")
        self.dlid, self.sl, self.src_path_bits, self.static_rate = dlid, sl, src_path_bits, static_rate
        self.is_global, self.port_num = is_global, port_num
        self.gr = gr if is_global else None

    @property
    def dgid(self):
        return self.gr.dgid.gid if self.gr is not None else None

    @property
    def sgid_index(self):
        return self.gr.sgid_index if self.gr is not None else 0
