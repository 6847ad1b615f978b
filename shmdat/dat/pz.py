"""Protection Zones (dat_pz_*)."""

from . import seam
from .errors import InvalidState
from .handle import Handle
from .rmr import RMR
from .values import PzParam


class PZ(Handle):
    kind = "pz"

    def __init__(self, ia):
        super().__init__(ia)
        try:
            # The device checks a peer's RDMA against the PD of the QP it arrives on.
            self._pd = ia._dev.pd.PD(ia._engine.ctx)
        except ia._dev.pyverbs_error.PyverbsError as err:
            raise seam.dat_error(err, "PD") from None
        self._users = set()             # LMRs, RMRs, EPs and SRQs in this PZ
        self._empty = None              # the SGE list of an empty local_iov (made when needed)

    def query(self):
        """dat_pz_query -> PzParam."""
        with self._ia._engine.lock:
            self._check()
            return PzParam(ia=self._ia)

    def rmr_create(self):
        """dat_rmr_create: an unbound RMR in this PZ. Raises InsufficientResources, InvalidHandle."""
        with self._ia._engine.lock:
            self._check()
            return RMR(self._ia, self)

    def free(self):
        """dat_pz_free. Raises InvalidState while an LMR, RMR, EP or SRQ uses it; InvalidHandle."""
        with self._ia._engine.lock:
            self._check()
            if self._users:
                kinds = sorted({u.kind.upper() for u in self._users})
                raise InvalidState(f"the PZ is in use by {len(self._users)} object(s) "
                                   f"({', '.join(kinds)}); free them first",
                                   subtype="INVALID_STATE_PZ_IN_USE")
            self._destroy()

    def _empty_sges(self):
        """A work request needs one SGE (pyverbs): an empty local_iov posts a zero-length
        one in a one-byte MR of the PZ's own."""
        if self._empty is None:
            dev = self._ia._dev
            try:
                self._empty_mr = dev.mr.MR(self._pd, 1, dev.enums.IBV_ACCESS_LOCAL_WRITE)
            except dev.pyverbs_error.PyverbsError as err:
                raise seam.dat_error(err, "MR") from None
            self._empty = [dev.wr.SGE(self._empty_mr.buf, 0, self._empty_mr.lkey)]
        return self._empty

    def _destroy(self):
        self._mark_freed()
        self._pd.close()
        self._ia._pzs.discard(self)
