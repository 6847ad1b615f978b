"""pyverbs.providers.mlx5.dr_table: mlx5 direct rule tables (mlx5dv_dr_table_*). shm0 is
not that device: creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold
what they are given."""

from ...base import Unsupported


class DrTable(Unsupported):
    """EOPNOTSUPP on shm0."""
