"""The provider's limits: what ia.query() reports and what every create and post enforces.

One place, so that the attributes a consumer reads are the ones the code checks.
"""

MAX_EPS = 1024
MAX_DTO_PER_EP = 16384              # per queue (recv or request) of one EP
MAX_EVDS = 1024
MAX_EVD_QLEN = 1 << 20
MAX_IOV_SEGMENTS_PER_DTO = 32       # the device's max_sge
MAX_LMRS = 4096
MAX_LMR_BLOCK_SIZE = 1 << 40        # what /dev/shm allows is checked at creation
MAX_PZS = 1024
MAX_MESSAGE_SIZE = (1 << 31) - 1    # DAT_SEG_LENGTH is 32 bits
MAX_RDMA_SIZE = (1 << 31) - 1
MAX_RMRS = 4096
MAX_SRQS = 256
MAX_EP_PER_SRQ = 1024
MAX_RECV_PER_SRQ = 16384            # the device's max_srq_wr
MAX_RDMA_READ_PER_EP = 64           # in and out
MAX_PSPS = 1024                     # each a listening CMID in the machine-wide port table
MAX_PRIVATE_DATA_SIZE = 256
MAX_CNOS = 256
OPTIMAL_BUFFER_ALIGNMENT = 64       # a cache line: the ring's unit

# Defaults of EpAttr fields.
DEFAULT_MAX_DTOS = 64
DEFAULT_MAX_IOV = 4
DEFAULT_MAX_RDMA_READ = 8
