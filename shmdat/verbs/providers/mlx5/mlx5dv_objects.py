"""pyverbs.providers.mlx5.mlx5dv_objects: mlx5 raw objects (mlx5dv_init_obj). shm0 is not
that device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold
what they are given."""

from ...base import Unsupported


class Mlx5DvObj(Unsupported):
    """EOPNOTSUPP on shm0."""
