"""pyverbs.providers.mlx5.dr_action: mlx5 direct rule actions (mlx5dv_dr_action_*). shm0 is
not that device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold
what they are given."""

from ...base import Unsupported, UnsupportedAttr


class DrActionDestAttr(UnsupportedAttr):
    """Attributes of mlx5 direct rule actions."""


class DrFlowMeterAttr(UnsupportedAttr):
    """Attributes of mlx5 direct rule actions."""


class DrFlowSamplerAttr(UnsupportedAttr):
    """Attributes of mlx5 direct rule actions."""


class DrActionDefMiss(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionDestArray(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionDestTable(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionDestTir(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionDrop(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionFlowCounter(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionFlowMeter(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionFlowSample(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionIBPort(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionModify(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionPacketReformat(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionPopVLan(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionPushVLan(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionQp(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionTag(Unsupported):
    """EOPNOTSUPP on shm0."""


class DrActionVPort(Unsupported):
    """EOPNOTSUPP on shm0."""
