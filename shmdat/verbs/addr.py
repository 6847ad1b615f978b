"""Addresses (pyverbs.addr): GID, GlobalRoute, AHAttr and AH."""

import ctypes
import errno

from . import checks
from . import libibverbs_enums as e
from .base import PyverbsCM, PyverbsObject
from .cq import WC
from .device import GIDS
from .gid import GID
from .pd import PD
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError


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


# The widths of the numeric fields of ibv_ah_attr and ibv_global_route.
_AH_FIELDS = (("dlid", 16), ("sl", 8), ("src_path_bits", 8), ("static_rate", 8), ("port_num", 8))
_ROUTE_FIELDS = (("flow_label", 20), ("sgid_index", 8), ("hop_limit", 8), ("traffic_class", 8))


def check_ah_attr(attr, name):
    """The fields of an AHAttr where it is used (an AH, a QP's path), named
    name.field: each an int of its C field's width, gr a GlobalRoute with a GID."""
    for field, bits in _AH_FIELDS:
        checks.uint(getattr(attr, field), f"{name}.{field}", bits)
    checks.boolean(attr.is_global, f"{name}.is_global")
    route = checks.instance(attr.gr, GlobalRoute, f"{name}.gr", none=True)
    if route is not None:
        checks.instance(route.dgid, GID, f"{name}.gr.dgid")
        for field, bits in _ROUTE_FIELDS:
            checks.uint(getattr(route, field), f"{name}.gr.{field}", bits)


class AH(PyverbsCM):
    """ibv_create_ah: `AH(pd, attr=AHAttr(...))`. On RoCE the attributes must be
    global (a GRH with a GID index of the port's table) on port 1.
    ibv_create_ah_from_wc: `AH(pd, wc=wc, port_num=1, grh=address)`, an AH back
    to the sender of a UD message, from the GRH its receive got at `address`.

    Raises PyverbsUserError (not a PD, AHAttr or WC), PyverbsRDMAError: EINVAL
    (not global, another port, a GID index past the table; from a WC: no GRH,
    or one to a GID the port does not have), EBADF (closed PD).
    """
    pd_set = "ahs"

    def __init__(self, pd, **kwargs):
        super().__init__()
        what = "Failed to create AH"
        checks.instance(pd, PD, "pd")
        attr = kwargs["attr"] if "attr" in kwargs else _attr_from_wc(what, **kwargs)
        attr = checks.instance(attr, AHAttr, "attr")
        check_ah_attr(attr, "attr")
        if attr.port_num != 1 or attr.gr is None or not attr.gr.sgid_index < len(GIDS):
            raise PyverbsRDMAError(f"{what}: RoCE needs a global AHAttr on port 1 with a GID index "
                                   f"below {len(GIDS)}", errno.EINVAL)
        pd.add_ref(self)
        self.pd, self.attr = pd, attr

    def _release(self):
        self.pd.ahs.discard(self)


def _attr_from_wc(what, wc=None, port_num=1, grh=0):
    """ibv_init_ah_from_wc on RoCE: the route back to a UD message's sender, read from
    its GRH (grh.py's layout): the sender's GID becomes the destination, and the port's
    GID the message was sent to, of the GRH's RoCE version, the source."""
    checks.instance(wc, WC, "wc")
    if not wc.wc_flags & e.IBV_WC_GRH or not isinstance(grh, int) or not grh:
        raise PyverbsRDMAError(f"{what}: the completion has no GRH", errno.EINVAL)
    header = ctypes.string_at(grh, 40)
    if header[:20] == bytes(20) and header[20] >> 4 == 4:      # RoCE v2 over IPv4
        mapped = bytes(10) + b"\xff\xff"
        sgid, dgid = mapped + header[32:36], mapped + header[36:40]
        hop_limit, traffic_class, v2 = header[28], header[21], True
    else:
        sgid, dgid, hop_limit = header[8:24], header[24:40], header[7]
        traffic_class, v2 = (int.from_bytes(header[:4], "big") >> 20) & 0xFF, False
    gid_type = e.IBV_GID_TYPE_SYSFS_ROCE_V2 if v2 else e.IBV_GID_TYPE_SYSFS_IB_ROCE_V1
    index = next((i for i, (raw, kind) in enumerate(GIDS) if raw == dgid and kind == gid_type), None)
    if index is None:
        raise PyverbsRDMAError(f"{what}: the GRH's destination is not a GID of the port", errno.EINVAL)
    return AHAttr(is_global=1, port_num=port_num,
                  gr=GlobalRoute(GID.from_raw(sgid), sgid_index=index, hop_limit=hop_limit,
                                 traffic_class=traffic_class))
