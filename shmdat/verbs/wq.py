"""Work queues and RSS indirection tables (pyverbs.wq): shm0 has neither
(they serve raw packet QPs), so WQ and RwqIndTable are EOPNOTSUPP."""

from .base import Unsupported, UnsupportedAttr


class WQInitAttr(UnsupportedAttr):
    """ibv_wq_init_attr."""


class WQAttr(UnsupportedAttr):
    """ibv_wq_attr."""


class RwqIndTableInitAttr(UnsupportedAttr):
    """ibv_rwq_ind_table_init_attr."""


class RxHashConf(UnsupportedAttr):
    """ibv_rx_hash_conf."""


class WQ(Unsupported):
    """ibv_create_wq: PyverbsRDMAError (EOPNOTSUPP)."""


class RwqIndTable(Unsupported):
    """ibv_create_rwq_ind_table: PyverbsRDMAError (EOPNOTSUPP)."""
