"""pyverbs.providers.mlx5.mlx5dv_flow: mlx5 flow steering (mlx5dv_create_flow*). shm0 is
not that device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold
what they are given."""

from ...base import Unsupported, UnsupportedAttr


class Mlx5FlowActionAttr(UnsupportedAttr):
    """Attributes of mlx5 flow steering."""


class Mlx5FlowMatchParameters(UnsupportedAttr):
    """Attributes of mlx5 flow steering."""


class Mlx5FlowMatcherAttr(UnsupportedAttr):
    """Attributes of mlx5 flow steering."""


class Mlx5Flow(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5FlowMatcher(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5PacketReformatFlowAction(Unsupported):
    """EOPNOTSUPP on shm0."""
