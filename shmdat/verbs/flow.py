"""Flow steering (pyverbs.flow): shm0 steers no packets, so Flow is EOPNOTSUPP."""

from .base import Unsupported, UnsupportedAttr


class FlowAttr(UnsupportedAttr):
    """ibv_flow_attr with its specs."""


class Flow(Unsupported):
    """ibv_create_flow: PyverbsRDMAError (EOPNOTSUPP)."""


class FlowAction(Unsupported):
    """ibv_flow_action: PyverbsRDMAError (EOPNOTSUPP)."""
