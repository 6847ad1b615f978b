"""pyverbs.providers.mlx5.mlx5dv_crypto: mlx5 crypto offload (mlx5dv_crypto_*,
mlx5dv_dek_*). shm0 is not that device: creating an object is PyverbsRDMAError with
EOPNOTSUPP; attributes hold what they are given."""

from ...base import Unsupported, UnsupportedAttr


class Mlx5CryptoAttr(UnsupportedAttr):
    """Attributes of mlx5 crypto offload."""


class Mlx5CryptoExtLoginAttr(UnsupportedAttr):
    """Attributes of mlx5 crypto offload."""


class Mlx5CryptoLoginAttr(UnsupportedAttr):
    """Attributes of mlx5 crypto offload."""


class Mlx5DEKInitAttr(UnsupportedAttr):
    """Attributes of mlx5 crypto offload."""


class Mlx5CryptoLogin(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5DEK(Unsupported):
    """EOPNOTSUPP on shm0."""
