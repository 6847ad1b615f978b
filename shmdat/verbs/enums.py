"""pyverbs.enums, the flat module through which pyverbs offered the libibverbs enums
until rdma-core v58 (``import pyverbs.enums as e; e.IBV_QPT_RC``): the same objects as
libibverbs_enums, plus the few names that only older versions had.
"""

from .libibverbs_enums import *     # noqa: F401,F403 every enum class and member
from .libibverbs_enums import (     # noqa: F401 the star skips the underscore names
    _IBV_ADVISE_MR_ADVICE_PREFETCH, _IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
    _IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, _IBV_ADVISE_MR_FLAG_FLUSH, _IBV_ALLOCATOR_USE_DEFAULT,
    _IBV_DEVICE_CC_DMA_BOUNCE, _IBV_DEVICE_PCI_WRITE_END_PADDING, _IBV_DEVICE_RAW_SCATTER_FCS)

# Until v31, driver.h's gid types (today's IBV_GID_TYPE_SYSFS_*) had these names, and
# IBV_GID_TYPE_ROCE_V2 was 1 there; it is verbs.h's 2 here, as from v32 on.
IBV_GID_TYPE_IB_ROCE_V1 = 0

# Until v28; the bit is deprecated since.
IBV_FLOW_ATTR_FLAGS_ALLOW_LOOP_BACK = 1 << 0

# v22 only: each the first bit past its mask's valid ones in that version (the QP one
# has been IBV_QP_INIT_ATTR_SEND_OPS_FLAGS since).
IBV_SRQ_INIT_ATTR_RESERVED = 1 << 5
IBV_QP_INIT_ATTR_RESERVED = 1 << 6
IBV_WQ_INIT_ATTR_RESERVED = 1 << 1
IBV_WQ_FLAGS_RESERVED = 1 << 4
IBV_WQ_ATTR_RESERVED = 1 << 3
