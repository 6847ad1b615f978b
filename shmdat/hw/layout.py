"""The shared layout: every word index, size and code that processes read in each
other's shared objects, in one module (as libfabric's shm provider keeps its shared
region in smr_util.h), and the version word that says which layout a peer speaks.

LAYOUT_VERSION is written in the header of each shared object that has one (the HCA
segment, a connection segment) and checked by a process that maps a peer's: an object
of another version raises errors.LayoutMismatch (a peer that speaks another layout is
unreachable, as a NIC of another wire protocol would be). Change a number here: bump
LAYOUT_VERSION.

Every object is 8-byte words (a memoryview cast 'Q'), little-endian as the host.
"""

LAYOUT_VERSION = 2
WORD = 8
CELL = 64                                # a cache line: the unit of a ring

# The HCA segment `<prefix>.ia` (hca.py): a header page, the listening table, the
# registration table. Armed, cm_pending and closed sit on cache lines of their own.
HCA_MAGIC = 0x73686D6461743031           # "shmdat01"
HCA_HEADER_BYTES = 4096
HCA_W_MAGIC, HCA_W_PID, HCA_W_START, HCA_W_TABLE_SLOTS, HCA_W_LISTEN_SLOTS = 0, 1, 2, 3, 4
HCA_W_LAYOUT = 5                         # LAYOUT_VERSION
HCA_W_ARMED = 8                          # 0; ARMED_SELF: ring my doorbell; ARMED_FOR + n: ring my HCA n's
HCA_W_CM_PENDING = 16
HCA_W_CLOSED = 24
ARMED_SELF, ARMED_FOR = 1, 2
# Listening table: (conn_qual, listening) word pairs, after the header.
LISTEN_OFFSET = HCA_HEADER_BYTES
LISTEN_ENTRY_BYTES = 2 * WORD
# Registration table: one 64-byte entry per registration, after the listening table.
ENTRY_WORDS = 8
E_KEY, E_KIND, E_PRIV, E_PZ, E_BASE, E_LENGTH, E_SEG, E_SEGOFF = range(ENTRY_WORDS)
KIND_SEGMENT = 1                         # memory in one of the owner's shared segments
KIND_PROCESS = 2                         # the owner's private memory, reached by cross-memory attach
INDEX_BITS = 16                          # a key is 31 bits (a driver's rkey): a tag, then the slot
TAG_BITS = 15
SLOT_MASK = (1 << INDEX_BITS) - 1
# What a registration lets a peer do (E_PRIV, and a connection's published access): the
# hardware's own bits, which a driver translates from its API's (shmdat.verbs: ibv_access_flags).
PRIV_REMOTE_READ = 0x1
PRIV_REMOTE_WRITE = 0x2
PRIV_REMOTE_ATOMIC = 0x4
ATOMIC_LOCK_SLOTS = 4096                 # record locks on a peer's table file, by 8-byte word

# A connection segment (ring.py): a header page, then the ring side 0 produces, then side 1's.
# Each side's state and each ring index sit on a cache line of their own.
CONN_MAGIC = 0x636F6E6E64617431          # "connedat1"
CONN_HEADER_BYTES = 4096
CONN_W_MAGIC, CONN_W_NCELLS = 0, 1
CONN_W_LAYOUT = 2                        # LAYOUT_VERSION
CONN_W_STATE = (8, 16)                   # state of side 0 (active) and side 1 (passive)
CONN_W_HEAD = (24, 40)                   # head of the ring that side 0 / side 1 produces
CONN_W_TAIL = (32, 48)                   # tail of that ring (written by the other side)
CONN_W_PROBE_ADDR = (56, 64)             # where each side's CMA probe word lives
CONN_W_PROBE_VALUE = (57, 65)
CONN_W_CAN_READ = (58, 66)               # 1: this side can read the other side's memory by CMA
# A side's NAK of the message at a position of the ring it receives: (position + 1) << 8 | reason,
# the delay (microseconds) it asks the sender to wait after a NOT_READY NAK, its fault word, and
# the remote access it allows (ACCESS_PUBLISHED | PRIV_* bits; 0: not published, anything goes).
CONN_W_NAK = (72, 80)
CONN_W_NAK_DELAY = (73, 81)
CONN_W_FAULT = (74, 82)
CONN_W_ACCESS = (75, 83)
CONN_W_ABANDON = (76, 84)                # (position + 1) of a message in the ring a side produces that it gave up
# The receives a side has made available to the other side's messages, a running total.
CONN_W_CREDITS = (88, 96)
# Where a side's posted receives lie, so that the other side may write a message straight
# into one (K_WRITTEN): a table of POSTED_ENTRIES entries per side, the receive numbered n
# (its place in the running total) at entry n % POSTED_ENTRIES, four words each: n (written
# 0 first and n last, so that a reader who finds n before and after read a whole entry),
# the seg_id of the receiver's shared segment, the offset there, the length.
POSTED_ENTRIES = 32
CONN_W_POSTED = (128, 128 + 4 * POSTED_ENTRIES)
NAK_NOT_READY, NAK_INVALID, NAK_REMOTE_OP, NAK_DROPPED = 1, 2, 3, 4
FAULT_ACCESS, FAULT_INVALID = 1, 2
ACCESS_PUBLISHED = 1 << 8
S_INIT, S_UP, S_CLOSED, S_BROKEN = 0, 1, 2, 3          # side states
# Records: whole cells, never wrapping. Word 0: kind (bits 0-7) | flags (bits 8-15) | payload
# length (bits 32-63); word 1: aux; the payload from byte HDR.
HDR = 16
K_PAD, K_MSG, K_FRAG, K_RDV = 1, 2, 3, 4
K_WRITTEN = 5                            # the sender wrote the message into a posted receive: aux its length,
                                         # the payload the (seg_id, offset) it wrote at
F_SOLICITED = 1
F_IMM = 2                                # the first record carries 32 bits of immediate data
F_WRITE_NOTICE = 4                       # an empty MSG telling that an RDMA write with immediate data is done
LENGTH_MASK = (1 << 32) - 1
CHUNK = 64 * 1024                        # largest payload of one MSG/FRAG record
DATAGRAM_HEADER = 8                      # a datagram's first bytes: its key (32 bits, little-endian), 4 reserved

# The port file (port.py): one per device instance; its magic is its layout's version.
PORT_MAGIC = 0x3174726F70646D73          # "smdport1"
PORT_SIZE = 4096
PORT_W_MAGIC, PORT_W_DOWN, PORT_W_GENERATION = 0, 1, 2

# The QP number table (qpn.py): a header, then one slot per QP number.
QPN_SLOTS = 1 << 16
QPN_SLOT_WORDS = 4                       # pid, start time, hca number, a word of the owner's
QPN_FIRST = 2
QPN_HEADER_WORDS = 8                     # word 0: where the next claim starts looking
QPN_SIZE = (QPN_HEADER_WORDS + QPN_SLOTS * QPN_SLOT_WORDS) * WORD

# The cm_ports table (cm_ports.py): one slot per bound or listening port.
CM_PORTS_SLOTS = 4096
CM_PORTS_SLOT_WORDS = 6
(CM_PORTS_W_ADDRESS, CM_PORTS_W_PORT, CM_PORTS_W_STATE, CM_PORTS_W_PID, CM_PORTS_W_START,
 CM_PORTS_W_HCA) = range(CM_PORTS_SLOT_WORDS)
CM_PORTS_FREE, CM_PORTS_BOUND, CM_PORTS_LISTENING = 0, 1, 2
CM_PORTS_SIZE = CM_PORTS_SLOTS * CM_PORTS_SLOT_WORDS * WORD
