"""DMA-BUFs (pyverbs.dmabuf): memory exported by a GPU driver, which shm0
cannot register, so DmaBuf is EOPNOTSUPP."""

from .base import Unsupported


class DmaBuf(Unsupported):
    """A GPU DMA-BUF: PyverbsRDMAError (EOPNOTSUPP)."""
