"""pyverbs.providers.mlx5.mlx5_vfio: mlx5 devices driven over VFIO
(mlx5dv_get_vfio_device_list). shm0 is not that device: creating an object is
PyverbsRDMAError with EOPNOTSUPP; attributes hold what they are given."""

from ...base import Unsupported, UnsupportedAttr


class Mlx5VfioAttr(UnsupportedAttr):
    """Attributes of mlx5 devices driven over VFIO."""


class Mlx5VfioContext(Unsupported):
    """EOPNOTSUPP on shm0."""
