"""pyverbs.providers.mlx5.mlx5dv_sched: mlx5 scheduling elements (mlx5dv_sched_*). shm0 is
not that device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold
what they are given."""

from ...base import Unsupported, UnsupportedAttr


class Mlx5dvSchedAttr(UnsupportedAttr):
    """Attributes of mlx5 scheduling elements."""


class Mlx5dvSchedLeaf(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5dvSchedNode(Unsupported):
    """EOPNOTSUPP on shm0."""
