"""Work requests (pyverbs.wr): SGE, SendWR, RecvWR and send_flags_to_str.

pyverbs keeps a C struct (ibv_sge, ibv_send_wr, ibv_recv_wr) under each object;
here each C field is a plain attribute (the classes have __slots__), because the
QP reads them on every post. Construction and the set_wr_* methods store their
arguments as pyverbs' C fields do: as an int (a float is truncated, an IntEnum
becomes its value), with OverflowError when it does not fit the field. Assigning
an attribute afterwards stores the value as given: assign ints.

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
import operator

from . import libibverbs_enums as e
from .pyverbs_error import PyverbsUserError

# The opcodes pyverbs lets through without an SGE: they move no local data.
_NO_SGE_OPCODES = frozenset({e.IBV_WR_LOCAL_INV, e.IBV_WR_BIND_MW, e.IBV_WR_SEND_WITH_INV})

_PRINT_FORMAT = '{:22}: {:<20}\n'


def _c_uint(value, bits, name):
    """`value` as pyverbs stores it in an unsigned C field of `bits` bits.

    Cython converts any number that has __int__ (rdma-core's tests pass
    msg_size / 2, a float, as a length) and raises OverflowError when the
    value does not fit.
    """
    if type(value) is not int:
        if isinstance(value, (str, bytes, bytearray)):      # int() would parse them
            raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
        value = int(value)
    if value < 0 or value >> bits:
        raise OverflowError(f"{name} {value} does not fit an unsigned {bits}-bit field")
    return value


def _copy_sges(sg, num_sge):
    """Copies of the first num_sge SGEs of the sequence `sg`."""
    num_sge = operator.index(num_sge)
    if num_sge < 0:
        # pyverbs mallocs num_sge entries, and Cython refuses a negative size
        raise OverflowError(f"num_sge must not be negative, not {num_sge}")
    if num_sge == 0:
        return []
    if sg is None:
        raise TypeError(f"num_sge is {num_sge} but sg is None")
    if len(sg) < num_sge:
        raise IndexError(f"num_sge is {num_sge} but sg has {len(sg)} SGEs")
    copies = []
    for sge in sg[:num_sge]:
        if not isinstance(sge, SGE):
            raise TypeError(f"sg must hold SGE objects, not {type(sge).__name__}")
        copy = SGE.__new__(SGE)     # already checked: skip __init__'s conversions
        copy.addr, copy.length, copy.lkey = sge.addr, sge.length, sge.lkey
        copies.append(copy)
    return copies


def _check_next(next_wr, cls):
    # pyverbs types the parameter as its own class, so Cython raises TypeError
    if next_wr is not None and not isinstance(next_wr, cls):
        raise TypeError(f"next_wr must be a {cls.__name__} or None, "
                        f"not {type(next_wr).__name__}")
    return next_wr


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
        self.addr = _c_uint(addr, 64, 'addr')
        self.length = _c_uint(length, 32, 'length')
        self.lkey = _c_uint(lkey, 32, 'lkey')

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
    IndexError, as pyverbs' copy does). A RecvWR without SGEs is allowed: it
    receives a message of no data.
    """

    __slots__ = ('wr_id', 'num_sge', 'sg_list', 'next_wr')

    def __init__(self, wr_id=0, num_sge=0, sg=None, next_wr=None):
        self.sg_list = _copy_sges(sg, num_sge)
        self.num_sge = len(self.sg_list)
        self.wr_id = _c_uint(wr_id, 64, 'wr_id')
        self.next_wr = _check_next(next_wr, RecvWR)

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
        if opcode not in _NO_SGE_OPCODES and (num_sge < 1 or sg is None):
            raise PyverbsUserError('A WR needs at least one SGE')
        self.sg_list = _copy_sges(sg, num_sge)
        self.num_sge = len(self.sg_list)
        self.wr_id = _c_uint(wr_id, 64, 'wr_id')
        self.opcode = operator.index(opcode)
        self.imm_data = _c_uint(imm_data, 32, 'imm_data')
        self.send_flags = _c_uint(send_flags, 32, 'send_flags')
        self.next_wr = _check_next(next_wr, SendWR)
        self.rdma_remote_addr = self.rdma_rkey = 0
        self.atomic_remote_addr = self.atomic_rkey = self.compare_add = self.swap = 0
        self.ah = None
        self.remote_qpn = self.remote_qkey = self.remote_srqn = 0

    def set_wr_rdma(self, rkey, addr):
        """The remote buffer of an RDMA write or read: its rkey and address."""
        self.rdma_rkey = _c_uint(rkey, 32, 'rkey')
        self.rdma_remote_addr = _c_uint(addr, 64, 'addr')

    def set_wr_atomic(self, rkey, addr, compare_add, swap=0):
        """The remote 8 bytes of an atomic and its operands: compare_add is what
        CMP_AND_SWP compares with and what FETCH_AND_ADD adds; swap is what
        CMP_AND_SWP writes."""
        self.atomic_rkey = _c_uint(rkey, 32, 'rkey')
        self.atomic_remote_addr = _c_uint(addr, 64, 'addr')
        self.compare_add = _c_uint(compare_add, 64, 'compare_add')
        self.swap = _c_uint(swap, 64, 'swap')

    def set_wr_ud(self, ah, rqpn, rqkey):
        """The destination of a UD send: its AH, QP number and Q_Key. The QP
        checks at post that ah is an AH of its PD."""
        if ah is None:
            raise TypeError("ah must be an AH, not None")   # pyverbs: `AH ah not None`
        self.remote_qpn = _c_uint(rqpn, 32, 'rqpn')
        self.remote_qkey = _c_uint(rqkey, 32, 'rqkey')
        self.ah = ah

    def set_qp_type_xrc(self, remote_srqn):
        """The XRC SRQ at the responder that receives this send."""
        self.remote_srqn = _c_uint(remote_srqn, 32, 'remote_srqn')

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
