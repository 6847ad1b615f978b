"""pyverbs.providers.mlx5.mlx5dv_event: mlx5 DevX event channels
(mlx5dv_devx_*_event_channel). shm0 is not that device: creating an object is
PyverbsRDMAError with EOPNOTSUPP; attributes hold what they are given."""

from ...base import Unsupported


class EventChannel(Unsupported):
    """EOPNOTSUPP on shm0."""


class EventFD(Unsupported):
    """EOPNOTSUPP on shm0."""
