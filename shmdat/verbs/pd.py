"""Protection domains (pyverbs.pd): PD; parent domains, which shm0 lacks, are
EOPNOTSUPP."""

import secrets

from .base import PyverbsCM, Unsupported, UnsupportedAttr, close_children
from .device import Context
from .pyverbs_error import PyverbsUserError


class PD(PyverbsCM):
    context_set = "pds"             # the Context's set that holds it
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
        self.mrs, self.qps, self.srqs, self.ahs = (set(), set(), set(), set())
        self.sge_cache = {}     # (lkey, addr, length) -> (hardware Sge, access): mr.work_request

    def add_ref(self, obj):
        """Keep `obj` (an MR, QP, SRQ or AH) to close it with the PD."""
        self._check_open(f"Failed to create {type(obj).__name__}")
        getattr(self, obj.pd_set).add(obj)

    def _release(self):
        """ibv_dealloc_pd: its QPs, AHs, SRQs and MRs first."""
        close_children([self.qps, self.ahs, self.srqs, self.mrs])
        self.ctx.pds.discard(self)

    @property
    def handle(self):
        return self.pd_id & 0xFFFFFFFF


class ParentDomainContext(UnsupportedAttr):
    """The allocator of a parent domain: (pd, alloc_func, free_func, user_data)."""


class ParentDomainInitAttr(UnsupportedAttr):
    """ibv_parent_domain_init_attr: (pd, pd_context)."""


class ParentDomain(Unsupported):
    """ibv_alloc_parent_domain: PyverbsRDMAError (EOPNOTSUPP)."""
