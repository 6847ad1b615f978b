"""pyverbs.providers.efa.efadv: Amazon EFA direct verbs (efadv_*). shm0 is not that device:
creating an object is PyverbsRDMAError with EOPNOTSUPP; attributes hold what they are
given."""

from ...base import Unsupported


class EfaCQ(Unsupported):
    """EOPNOTSUPP on shm0."""
