"""pyverbs.providers.mlx5.mlx5dv_dmabuf: mlx5 DMA-BUF registration (mlx5dv_reg_dmabuf_mr).
shm0 is not that device: creating an object is PyverbsRDMAError with EOPNOTSUPP;
attributes hold what they are given."""

from ...base import Unsupported


class Mlx5DmaBufMR(Unsupported):
    """EOPNOTSUPP on shm0."""
