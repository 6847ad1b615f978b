"""pyverbs.providers.mlx5.mlx5dv_mkey: mlx5 memory keys and signature offload
(mlx5dv_create_mkey). shm0 is not that device: creating an object is PyverbsRDMAError
with EOPNOTSUPP; attributes hold what they are given."""

from ...base import Unsupported, UnsupportedAttr


class Mlx5MkeyConfAttr(UnsupportedAttr):
    """Attributes of mlx5 memory keys and signature offload."""


class Mlx5MrInterleaved(UnsupportedAttr):
    """Attributes of mlx5 memory keys and signature offload."""


class Mlx5SigBlockAttr(UnsupportedAttr):
    """Attributes of mlx5 memory keys and signature offload."""


class Mlx5SigBlockDomain(UnsupportedAttr):
    """Attributes of mlx5 memory keys and signature offload."""


class Mlx5SigCrc(UnsupportedAttr):
    """Attributes of mlx5 memory keys and signature offload."""


class Mlx5SigT10Dif(UnsupportedAttr):
    """Attributes of mlx5 memory keys and signature offload."""


class Mlx5Mkey(Unsupported):
    """EOPNOTSUPP on shm0."""
