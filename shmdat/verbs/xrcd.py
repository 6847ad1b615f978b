"""XRC domains (pyverbs.xrcd): shm0 has no XRC, so XRCD is EOPNOTSUPP."""

from .base import Unsupported, UnsupportedAttr


class XRCDInitAttr(UnsupportedAttr):
    """ibv_xrcd_init_attr: (comp_mask, oflags, fd)."""


class XRCD(Unsupported):
    """ibv_open_xrcd: PyverbsRDMAError (EOPNOTSUPP)."""
