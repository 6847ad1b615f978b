"""Work requests (pyverbs.wr): SGE, SendWR, RecvWR and send_flags_to_str.

pyverbs keeps a C struct (ibv_sge, ibv_send_wr, ibv_recv_wr) under each object;
here each C field is a plain attribute (the classes have __slots__), because the
QP reads them on every post. Construction and the set_wr_* methods store their
arguments as pyverbs' C fields do: as an int (a float is truncated, an IntEnum
becomes its value); a value of another type, or one that does not fit the
field, is a PyverbsUserError naming it (checks.py). Assigning an attribute
afterwards stores the value as given; the QP checks the fields of a WR that
fails to post (check_send_wr, check_recv_wr) and names the wrong one.

The fields a QP reads from a SendWR (post_send):

    every WR            wr_id, opcode, send_flags, num_sge, sg_list, next_wr
    SEND_WITH_IMM,
    RDMA_WRITE_WITH_IMM imm_data (32 bits, as the program gave them: rdma-core's
                        tests pass socket.htonl values and compare the completion's
                        imm_data with them)
    LOCAL_INV,
    SEND_WITH_INV       imm_data is the rkey to invalidate (in C, invalidate_rkey
                        shares imm_data's place)
    RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ
                        rdma_remote_addr, rdma_rkey (set_wr_rdma; pyverbs reads
                        them back under these names)
    ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD
                        atomic_remote_addr, atomic_rkey, compare_add, swap
                        (set_wr_atomic; CMP_AND_SWP compares with compare_add and
                        writes swap, FETCH_AND_ADD adds compare_add)
    on a UD QP          ah, remote_qpn, remote_qkey (set_wr_ud)
    on an XRC QP        remote_srqn (set_qp_type_xrc)

and from a RecvWR (post_recv on a QP or an SRQ): wr_id, num_sge, sg_list, next_wr.
Fields a WR was never given read 0 (ah: None), as pyverbs' zeroed struct does.

sg_list is the list of the WR's SGEs, copies of the first num_sge given at
construction (pyverbs copies them into the WR's own array, so changing an SGE
afterwards does not change the WR). pyverbs' sg_list is that array's address and
its setter takes one SGE; here it is the list, and a program assigns a list. A
program may change num_sge afterwards, as C allows: the WR uses the first num_sge
entries of sg_list, and a num_sge above len(sg_list) is the QP's to refuse
(EINVAL), where C would read past the array.

next_wr chains WRs as ibv_send_wr.next does: post_send and post_recv post the
whole chain. As with ibv_post_send, a program may change or reuse a WR as soon
as the post returns, so the QP copies what it needs when it is posted.
"""

import ctypes

from . import checks, libibverbs_enums as e
from .addr import AH
from .pyverbs_error import PyverbsUserError

# The opcodes pyverbs lets through without an SGE: they move no local data.
_NO_SGE_OPCODES = frozenset({e.IBV_WR_LOCAL_INV, e.IBV_WR_BIND_MW, e.IBV_WR_SEND_WITH_INV})

_PRINT_FORMAT = '{:22}: {:<20}\n'


def _copy_sges(sg, num_sge):
    """Copies of the first num_sge SGEs of the list `sg`."""
    num_sge = checks.uint(num_sge, "num_sge")
    if num_sge == 0:
        return []
    checks.sequence(sg, SGE, "sg")
    if len(sg) < num_sge:
        raise PyverbsUserError(f"num_sge is {num_sge} but sg has {len(sg)} SGEs")
    copies = []
    for sge in sg[:num_sge]:
        copy = SGE.__new__(SGE)     # already checked: skip __init__'s conversions
        copy.addr, copy.length, copy.lkey = sge.addr, sge.length, sge.lkey
        copies.append(copy)
    return copies


class _Closeable:
    """pyverbs' close() and `with` block. A WR owns no memory here (pyverbs
    frees its C arrays), so there is nothing to release."""

    __slots__ = ()

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SGE(_Closeable):
    """ibv_sge: `SGE(addr, length, lkey)`, a buffer of a registered MR.

    addr (64 bits), length and lkey (32 bits) are read/write attributes.
    """

    __slots__ = ('addr', 'length', 'lkey')

    def __init__(self, addr, length, lkey):
        self.addr = checks.uint(addr, 'addr', 64)
        self.length = checks.uint(length, 'length')
        self.lkey = checks.uint(lkey, 'lkey')

    def read(self, length, offset):
        """The `length` bytes at `offset` from addr, read directly from memory
        as pyverbs does (addr must be a real address in this process, as MR.buf
        is)."""
        return ctypes.string_at(self.addr + offset, length)

    def __str__(self):
        return (_PRINT_FORMAT.format('Address', hex(self.addr))
                + _PRINT_FORMAT.format('Length', self.length)
                + _PRINT_FORMAT.format('Key', hex(self.lkey)))


class RecvWR(_Closeable):
    """ibv_recv_wr: `RecvWR(wr_id=0, num_sge=0, sg=None, next_wr=None)`.

    Takes the first num_sge SGEs of `sg` (more are ignored, fewer raise
    PyverbsUserError, where pyverbs' copy raises IndexError). A RecvWR without SGEs is allowed: it
    receives a message of no data.
    """

    __slots__ = ('wr_id', 'num_sge', 'sg_list', 'next_wr')

    def __init__(self, wr_id=0, num_sge=0, sg=None, next_wr=None):
        self.sg_list = _copy_sges(sg, num_sge)
        self.num_sge = len(self.sg_list)
        self.wr_id = checks.uint(wr_id, 'wr_id', 64)
        self.next_wr = checks.instance(next_wr, RecvWR, 'next_wr', none=True)

    def __str__(self):
        return (_PRINT_FORMAT.format('WR ID', self.wr_id)
                + _PRINT_FORMAT.format('Num SGE', self.num_sge))


class SendWR(_Closeable):
    """ibv_send_wr: `SendWR(wr_id=0, opcode=IBV_WR_SEND, num_sge=0, imm_data=0,
    sg=None, send_flags=IBV_SEND_SIGNALED, next_wr=None)`.

    Raises PyverbsUserError('A WR needs at least one SGE') as pyverbs does when
    num_sge < 1 or sg is None, except for LOCAL_INV, BIND_MW and SEND_WITH_INV;
    so SendWR() alone raises. Takes the first num_sge SGEs of `sg`, as RecvWR.
    With IBV_SEND_INLINE the QP copies the SGEs' bytes at post (no lkey check).
    """

    __slots__ = ('wr_id', 'opcode', 'num_sge', 'imm_data', 'sg_list', 'send_flags',
                 'next_wr', 'rdma_remote_addr', 'rdma_rkey', 'atomic_remote_addr',
                 'atomic_rkey', 'compare_add', 'swap', 'ah', 'remote_qpn', 'remote_qkey',
                 'remote_srqn')

    def __init__(self, wr_id=0, opcode=e.IBV_WR_SEND, num_sge=0, imm_data=0, sg=None,
                 send_flags=e.IBV_SEND_SIGNALED, next_wr=None):
        opcode, num_sge = checks.uint(opcode, 'opcode'), checks.uint(num_sge, 'num_sge')
        if opcode not in _NO_SGE_OPCODES and (num_sge < 1 or sg is None):
            raise PyverbsUserError('A WR needs at least one SGE')
        self.sg_list = _copy_sges(sg, num_sge)
        self.num_sge = len(self.sg_list)
        self.wr_id = checks.uint(wr_id, 'wr_id', 64)
        self.opcode = opcode
        self.imm_data = checks.uint(imm_data, 'imm_data')
        self.send_flags = int(checks.uint(send_flags, 'send_flags'))     # a plain int: tested at each post
        self.next_wr = checks.instance(next_wr, SendWR, 'next_wr', none=True)
        self.rdma_remote_addr = self.rdma_rkey = 0
        self.atomic_remote_addr = self.atomic_rkey = self.compare_add = self.swap = 0
        self.ah = None
        self.remote_qpn = self.remote_qkey = self.remote_srqn = 0

    def set_wr_rdma(self, rkey, addr):
        """The remote buffer of an RDMA write or read: its rkey and address."""
        self.rdma_rkey = checks.uint(rkey, 'rkey')
        self.rdma_remote_addr = checks.uint(addr, 'addr', 64)

    def set_wr_atomic(self, rkey, addr, compare_add, swap=0):
        """The remote 8 bytes of an atomic and its operands: compare_add is what
        CMP_AND_SWP compares with and what FETCH_AND_ADD adds; swap is what
        CMP_AND_SWP writes."""
        self.atomic_rkey = checks.uint(rkey, 'rkey')
        self.atomic_remote_addr = checks.uint(addr, 'addr', 64)
        self.compare_add = checks.uint(compare_add, 'compare_add', 64)
        self.swap = checks.uint(swap, 'swap', 64)

    def set_wr_ud(self, ah, rqpn, rqkey):
        """The destination of a UD send: its AH, QP number and Q_Key. The QP
        checks at post that ah is an AH of its PD."""
        checks.instance(ah, AH, 'ah')       # pyverbs: `AH ah not None`
        self.remote_qpn = checks.uint(rqpn, 'rqpn')
        self.remote_qkey = checks.uint(rqkey, 'rqkey')
        self.ah = ah

    def set_qp_type_xrc(self, remote_srqn):
        """The XRC SRQ at the responder that receives this send."""
        self.remote_srqn = checks.uint(remote_srqn, 'remote_srqn')

    def __str__(self):
        # pyverbs' own __str__ misplaces a parenthesis and runs 'Imm Data' into
        # the 'Send flags' line; this prints each field on its line.
        return (_PRINT_FORMAT.format('WR ID', self.wr_id)
                + _PRINT_FORMAT.format('Num SGE', self.num_sge)
                + _PRINT_FORMAT.format('Opcode', self.opcode)
                + _PRINT_FORMAT.format('Send flags', send_flags_to_str(self.send_flags))
                + _PRINT_FORMAT.format('Imm Data', self.imm_data))


_SEND_FLAG_NAMES = ((e.IBV_SEND_FENCE, 'IBV_SEND_FENCE'),
                    (e.IBV_SEND_SIGNALED, 'IBV_SEND_SIGNALED'),
                    (e.IBV_SEND_SOLICITED, 'IBV_SEND_SOLICITED'),
                    (e.IBV_SEND_INLINE, 'IBV_SEND_INLINE'),
                    (e.IBV_SEND_IP_CSUM, 'IBV_SEND_IP_CSUM'))


def send_flags_to_str(flags):
    """The names of the ibv_send_flags set in `flags`, each followed by a space."""
    return ''.join(name + ' ' for flag, name in _SEND_FLAG_NAMES if flags & flag)


def check_sg_list(wr, name):
    """The SGEs of a WR that failed to post: each field an int that fits."""
    checks.uint(wr.num_sge, f"{name}.num_sge")
    for i, sge in enumerate(checks.sequence(wr.sg_list, SGE, f"{name}.sg_list")):
        checks.uint(sge.addr, f"{name}.sg_list[{i}].addr", 64)
        checks.uint(sge.length, f"{name}.sg_list[{i}].length")
        checks.uint(sge.lkey, f"{name}.sg_list[{i}].lkey")


def check_send_wr(wr, name="wr"):
    """The fields of a SendWR that failed to post -> the SendWR; PyverbsUserError
    naming the first one that is not what its C field holds (posting is not
    slowed by it: the QP checks only after a post failed)."""
    checks.instance(wr, SendWR, name)
    for field in ("wr_id", "opcode", "imm_data", "send_flags", "rdma_remote_addr", "rdma_rkey",
                  "atomic_remote_addr", "atomic_rkey", "compare_add", "swap", "remote_qpn",
                  "remote_qkey"):
        checks.uint(getattr(wr, field), f"{name}.{field}", 64)
    check_sg_list(wr, name)
    checks.instance(wr.next_wr, SendWR, f"{name}.next_wr", none=True)
    return wr


def check_recv_wr(wr, name="wr"):
    """The fields of a RecvWR that failed to post, as check_send_wr."""
    checks.instance(wr, RecvWR, name)
    checks.uint(wr.wr_id, f"{name}.wr_id", 64)
    check_sg_list(wr, name)
    checks.instance(wr.next_wr, RecvWR, f"{name}.next_wr", none=True)
    return wr
