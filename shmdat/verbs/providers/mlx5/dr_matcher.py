"""pyverbs.providers.mlx5.dr_matcher: mlx5 direct rule matchers (mlx5dv_dr_matcher_*). shm0
is not that device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes
hold what they are given."""

from ...base import Unsupported


class DrMatcher(Unsupported):
    """EOPNOTSUPP on shm0."""
