"""The librdmacm enums of pyverbs' librdmacm_enums module, with the numeric values of
rdma-core's <rdma/rdma_cma.h>.

As in libibverbs_enums: named enums are Python enum classes whose members are also
module-level names (``rdma_port_space.RDMA_PS_TCP`` and ``RDMA_PS_TCP``); anonymous
ones (RAI_*, RDMA_OPTION_*) are module-level ints only.
"""

from enum import IntEnum, IntFlag


def _enum(base, name, **members):
    cls = base(name, list(members.items()), module=__name__)
    globals().update(cls.__members__)      # the members at module level, as Cython did
    return cls


rdma_cm_event_type = _enum(IntEnum, 'rdma_cm_event_type',
    RDMA_CM_EVENT_ADDR_RESOLVED=0, RDMA_CM_EVENT_ADDR_ERROR=1, RDMA_CM_EVENT_ROUTE_RESOLVED=2,
    RDMA_CM_EVENT_ROUTE_ERROR=3, RDMA_CM_EVENT_CONNECT_REQUEST=4,
    RDMA_CM_EVENT_CONNECT_RESPONSE=5, RDMA_CM_EVENT_CONNECT_ERROR=6,
    RDMA_CM_EVENT_UNREACHABLE=7, RDMA_CM_EVENT_REJECTED=8, RDMA_CM_EVENT_ESTABLISHED=9,
    RDMA_CM_EVENT_DISCONNECTED=10, RDMA_CM_EVENT_DEVICE_REMOVAL=11,
    RDMA_CM_EVENT_MULTICAST_JOIN=12, RDMA_CM_EVENT_MULTICAST_ERROR=13,
    RDMA_CM_EVENT_ADDR_CHANGE=14, RDMA_CM_EVENT_TIMEWAIT_EXIT=15,
    RDMA_CM_EVENT_ADDRINFO_RESOLVED=16, RDMA_CM_EVENT_ADDRINFO_ERROR=17)

# The port space goes into the IB service ID (with the port number): hence the odd values.
rdma_port_space = _enum(IntEnum, 'rdma_port_space',
    RDMA_PS_IPOIB=0x0002, RDMA_PS_TCP=0x0106, RDMA_PS_UDP=0x0111, RDMA_PS_IB=0x013f)

# rdma_getaddrinfo's hint flags (rdma_addrinfo.ai_flags).
RAI_PASSIVE = 1 << 0
RAI_NUMERICHOST = 1 << 1
RAI_NOROUTE = 1 << 2
RAI_FAMILY = 1 << 3
RAI_SA = 1 << 4
RAI_DNS = 1 << 5

rdma_cm_join_mc_attr_mask = _enum(IntFlag, 'rdma_cm_join_mc_attr_mask',
    RDMA_CM_JOIN_MC_ATTR_ADDRESS=1 << 0, RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS=1 << 1)

rdma_cm_mc_join_flags = _enum(IntEnum, 'rdma_cm_mc_join_flags',
    RDMA_MC_JOIN_FLAG_FULLMEMBER=0, RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER=1)

# rdma_set_option's level and one of its option names.
RDMA_OPTION_ID = 0
RDMA_OPTION_ID_ACK_TIMEOUT = 3
