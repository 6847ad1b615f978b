"""pyverbs.providers.mlx5.dr_rule: mlx5 direct rules (mlx5dv_dr_rule_*). shm0 is not that
device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold what
they are given."""

from ...base import Unsupported


class DrRule(Unsupported):
    """EOPNOTSUPP on shm0."""
