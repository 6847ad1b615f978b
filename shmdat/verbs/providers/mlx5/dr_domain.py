"""pyverbs.providers.mlx5.dr_domain: mlx5 direct rule domains (mlx5dv_dr_domain_*). shm0 is
not that device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold
what they are given."""

from ...base import Unsupported


class DrDomain(Unsupported):
    """EOPNOTSUPP on shm0."""
