"""pyverbs.cm_enums, the flat module through which pyverbs offered the librdmacm enums
until rdma-core v58: the same objects as librdmacm_enums (no name was ever dropped).
"""

from .librdmacm_enums import *      # noqa: F401,F403 every enum class and member
