"""shmdat.verbs.wr: SGE, SendWR and RecvWR as pyverbs builds them, and the fields
a QP reads from them."""

import ctypes
import socket

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.pyverbs_error import PyverbsUserError
from shmdat.verbs.wr import SGE, RecvWR, SendWR, send_flags_to_str


def sges(n):
    return [SGE(0x1000 * (i + 1), 64 * (i + 1), 100 + i) for i in range(n)]


def fields(sge):
    return sge.addr, sge.length, sge.lkey


def test_sge_fields_read_and_write():
    sge = SGE(0x7f00_0000_1000, 4096, 0x1234)
    assert fields(sge) == (0x7f00_0000_1000, 4096, 0x1234)
    sge.addr, sge.length, sge.lkey = 1, 2, 3
    assert fields(sge) == (1, 2, 3)


def test_sge_stores_ints_as_its_c_fields_do():
    # rdma-core's tests pass msg_size / 2; enums become their values
    sge = SGE(0x1000, 512 / 2, e.IBV_ACCESS_LOCAL_WRITE)
    assert fields(sge) == (0x1000, 256, 1)
    assert all(type(v) is int for v in fields(sge))
    assert fields(SGE(2**64 - 1, 2**32 - 1, 2**32 - 1)) == (2**64 - 1, 2**32 - 1, 2**32 - 1)
    for args in [(-1, 1, 1), (2**64, 1, 1), (1, 2**32, 1), (1, 1, -1)]:
        with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
            SGE(*args)
    with pytest.raises(PyverbsUserError):
        SGE(0, "64", 1)


def test_sge_read_reads_memory_at_its_address():
    buf = ctypes.create_string_buffer(b"0123456789")
    sge = SGE(ctypes.addressof(buf), 10, 1)
    assert sge.read(4, 0) == b"0123"
    assert sge.read(3, 5) == b"567"


def test_sge_str():
    assert str(SGE(0x1000, 64, 0x2a)) == (
        f"{'Address':22}: {'0x1000':<20}\n{'Length':22}: {64:<20}\n{'Key':22}: {'0x2a':<20}\n")


def test_send_wr_defaults_are_pyverbs():
    [sge] = sges(1)
    wr = SendWR(num_sge=1, sg=[sge])
    assert (wr.wr_id, wr.opcode, wr.num_sge, wr.imm_data) == (0, e.IBV_WR_SEND, 1, 0)
    assert wr.send_flags == e.IBV_SEND_SIGNALED and wr.next_wr is None
    # what no set_wr_* gave reads 0, as pyverbs' zeroed struct
    assert (wr.rdma_remote_addr, wr.rdma_rkey) == (0, 0)
    assert (wr.atomic_remote_addr, wr.atomic_rkey, wr.compare_add, wr.swap) == (0, 0, 0, 0)
    assert (wr.ah, wr.remote_qpn, wr.remote_qkey, wr.remote_srqn) == (None, 0, 0, 0)


def test_send_wr_fields():
    wr = SendWR(wr_id=7, opcode=e.IBV_WR_SEND_WITH_IMM, num_sge=2, imm_data=socket.htonl(5),
                sg=sges(2), send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)
    assert (wr.wr_id, wr.opcode, wr.num_sge) == (7, e.IBV_WR_SEND_WITH_IMM, 2)
    assert wr.imm_data == socket.htonl(5)
    assert wr.send_flags == e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE
    # the QP compares plain ints, not enum members
    assert type(wr.opcode) is int and type(wr.send_flags) is int
    assert [fields(s) for s in wr.sg_list] == [fields(s) for s in sges(2)]
    wr.wr_id, wr.opcode, wr.imm_data, wr.send_flags = 8, e.IBV_WR_SEND, 0, 0
    assert (wr.wr_id, wr.opcode, wr.imm_data, wr.send_flags) == (8, e.IBV_WR_SEND, 0, 0)


def test_send_wr_needs_an_sge_unless_it_moves_no_data():
    for kwargs in [{}, {"num_sge": 1}, {"sg": sges(1)}, {"num_sge": 0, "sg": sges(1)},
                   {"opcode": e.IBV_WR_RDMA_READ}]:
        with pytest.raises(PyverbsUserError, match="A WR needs at least one SGE"):
            SendWR(**kwargs)
    for opcode in [e.IBV_WR_LOCAL_INV, e.IBV_WR_BIND_MW, e.IBV_WR_SEND_WITH_INV]:
        wr = SendWR(opcode=opcode)
        assert (wr.num_sge, wr.sg_list) == (0, [])
        wr.imm_data = 0xabc        # test_mr.py puts the rkey to invalidate here
        assert wr.imm_data == 0xabc


@pytest.mark.parametrize("cls", [SendWR, RecvWR])
def test_num_sge_takes_the_first_entries_of_sg(cls):
    wr = cls(num_sge=2, sg=sges(3))
    assert wr.num_sge == 2
    assert [fields(s) for s in wr.sg_list] == [fields(s) for s in sges(2)]
    with pytest.raises(PyverbsUserError, match="num_sge is 3 but sg has 2 SGEs"):
        cls(num_sge=3, sg=sges(2))
    with pytest.raises(PyverbsUserError):
        cls(num_sge=1, sg=[fields(sges(1)[0])])
    with pytest.raises(PyverbsUserError):
        cls(num_sge=1, sg=sges(1)[0])          # one SGE, not a list of them


@pytest.mark.parametrize("cls", [SendWR, RecvWR])
def test_the_wr_holds_copies_of_its_sges(cls):
    # pyverbs copies the SGEs into the WR's own array
    sge = SGE(0x1000, 64, 1)
    wr = cls(num_sge=1, sg=[sge])
    sge.length = 128
    assert wr.sg_list[0].length == 64 and wr.sg_list[0] is not sge


def test_recv_wr_defaults_and_fields():
    wr = RecvWR()
    assert (wr.wr_id, wr.num_sge, wr.sg_list, wr.next_wr) == (0, 0, [], None)
    wr = RecvWR(wr_id=2**64 - 1, num_sge=1, sg=sges(1))
    assert wr.wr_id == 2**64 - 1 and [fields(s) for s in wr.sg_list] == [fields(sges(1)[0])]
    wr.wr_id, wr.num_sge = 3, 0
    assert (wr.wr_id, wr.num_sge) == (3, 0)


def test_recv_wr_rejects_what_pyverbs_rejects():
    with pytest.raises(PyverbsUserError):
        RecvWR(num_sge=1)                      # no sg
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        RecvWR(num_sge=-1, sg=sges(1))
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        RecvWR(wr_id=-1)
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        RecvWR(wr_id=2**64)


def test_send_wr_field_widths():
    [sge] = sges(1)
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        SendWR(num_sge=1, sg=[sge], imm_data=2**32)
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        SendWR(num_sge=1, sg=[sge], wr_id=-1)
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        SendWR(opcode=e.IBV_WR_LOCAL_INV, num_sge=-1)


def test_set_wr_rdma():
    wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=sges(1))
    wr.set_wr_rdma(0xdead, 0x7f00_0000_2000)
    assert (wr.rdma_rkey, wr.rdma_remote_addr) == (0xdead, 0x7f00_0000_2000)
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        wr.set_wr_rdma(2**32, 0)


def test_set_wr_atomic():
    wr = SendWR(opcode=e.IBV_WR_ATOMIC_CMP_AND_SWP, num_sge=1, sg=sges(1))
    wr.set_wr_atomic(rkey=0xbeef, addr=0x2000, compare_add=2**64 - 1, swap=5)
    assert (wr.atomic_rkey, wr.atomic_remote_addr) == (0xbeef, 0x2000)
    assert (wr.compare_add, wr.swap) == (2**64 - 1, 5)
    wr.set_wr_atomic(1, 0x3000, 9)
    assert (wr.atomic_rkey, wr.atomic_remote_addr, wr.compare_add, wr.swap) == (1, 0x3000, 9, 0)
    with pytest.raises(PyverbsUserError, match="must be an int from 0 to"):
        wr.set_wr_atomic(1, 0x3000, -1)


def test_set_wr_ud_takes_an_ah_only():
    # (the QP checks at post that the AH is of its PD: tests/test_verbs_ud.py)
    wr = SendWR(num_sge=1, sg=sges(1))
    for ah in (None, object()):
        with pytest.raises(PyverbsUserError, match="ah must be an AH, not"):
            wr.set_wr_ud(ah, 0x11, 0x11111111)


def test_set_qp_type_xrc():
    wr = SendWR(num_sge=1, sg=sges(1))
    wr.set_qp_type_xrc(42)
    assert wr.remote_srqn == 42


@pytest.mark.parametrize("cls", [SendWR, RecvWR])
def test_next_wr_chains(cls):
    last = cls(wr_id=2, num_sge=1, sg=sges(1))
    first = cls(wr_id=1, num_sge=1, sg=sges(1), next_wr=last)
    assert first.next_wr is last and last.next_wr is None
    first.next_wr = None
    assert first.next_wr is None
    other = RecvWR if cls is SendWR else SendWR
    with pytest.raises(PyverbsUserError):
        cls(num_sge=1, sg=sges(1), next_wr=other(num_sge=1, sg=sges(1)))


def test_wrs_have_slots_only():
    # the QP reads plain attributes; no __dict__ to grow per WR
    for obj in [sges(1)[0], RecvWR(), SendWR(num_sge=1, sg=sges(1))]:
        assert not hasattr(obj, "__dict__")


def test_close_and_with():
    # pyverbs programs close WRs or use them in `with`; closing twice is allowed
    for obj in [SendWR(num_sge=1, sg=sges(1)), RecvWR(), SGE(1, 2, 3)]:
        with obj as entered:
            assert entered is obj
        obj.close()


def test_str():
    wr = SendWR(wr_id=5, num_sge=1, sg=sges(1), imm_data=3,
                send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_SOLICITED)
    assert str(wr).splitlines() == [
        f"{'WR ID':22}: {5:<20}", f"{'Num SGE':22}: {1:<20}",
        f"{'Opcode':22}: {int(e.IBV_WR_SEND):<20}",
        f"{'Send flags':22}: {'IBV_SEND_SIGNALED IBV_SEND_SOLICITED ':<20}",
        f"{'Imm Data':22}: {3:<20}"]
    assert str(RecvWR(wr_id=9)) == f"{'WR ID':22}: {9:<20}\n{'Num SGE':22}: {0:<20}\n"


def test_send_flags_to_str():
    assert send_flags_to_str(0) == ''
    assert send_flags_to_str(e.IBV_SEND_FENCE | e.IBV_SEND_INLINE | e.IBV_SEND_IP_CSUM) == \
        'IBV_SEND_FENCE IBV_SEND_INLINE IBV_SEND_IP_CSUM '
