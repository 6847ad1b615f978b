"""Protection domains (pyverbs.pd): PD."""

import secrets
import weakref

from .base import PyverbsCM, close_weakrefs
from .device import Context
from .pyverbs_error import PyverbsUserError


class PD(PyverbsCM):
    """ibv_alloc_pd: `PD(ctx)`. Its MRs (and later QPs, SRQs, AHs) close with it.

    Raises PyverbsUserError when `creator` is not a Context, PyverbsRDMAError
    (EBADF) when the context is closed.
    """

    def __init__(self, creator, **kwargs):
        super().__init__()
        if not isinstance(creator, Context):
            raise PyverbsUserError(f"Cannot create PD from {type(creator)}")
        if kwargs.get("handle") is not None:
            raise PyverbsUserError("shm0 cannot import a PD by handle")
        self.ctx = creator
        creator.add_ref(self)
        # The registration table's PD field: a peer's RDMA must name this PD's MR.
        self.pd_id = secrets.randbits(62) + 1
        self.mrs = weakref.WeakSet()

    def add_ref(self, obj):
        self._check_open(f"Failed to create {type(obj).__name__}")
        self.mrs.add(obj)

    def _release(self):
        """ibv_dealloc_pd: its MRs first."""
        close_weakrefs([self.mrs])
        self.ctx.pds.discard(self)

    @property
    def handle(self):
        return self.pd_id & 0xFFFFFFFF
