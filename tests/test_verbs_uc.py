"""UC QPs on shmdat.verbs: sends and RDMA writes as on RC, but no acks: a message
with no receive is lost, and RDMA read and atomics are not UC operations."""

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.qp import QPAttr
from shmdat.verbs.wr import SendWR

from tests.verbs_ends import End


@pytest.fixture
def uc_pair():
    a, b = End(qp_type=e.IBV_QPT_UC), End(qp_type=e.IBV_QPT_UC)
    a.connect(b.qp.qp_num)
    b.connect(a.qp.qp_num)
    yield a, b
    a.close()
    b.close()


def test_uc_sends_and_rdma_writes(uc_pair):
    a, b = uc_pair
    assert a.qp.qp_type == e.IBV_QPT_UC and a.qp.qp_state == e.IBV_QPS_RTS
    b.recv(1)
    a.send(1, b"unreliable")
    wc = b.completion()
    assert (wc.wr_id, wc.status, wc.byte_len, wc.src_qp) == (1, e.IBV_WC_SUCCESS, 10, a.qp.qp_num)
    assert b.mr.read(10, 0) == b"unreliable"
    assert a.completion().status == e.IBV_WC_SUCCESS
    a.mr.write(b"written", 7, 200)
    a.rdma(e.IBV_WR_RDMA_WRITE, 2, 200, 7, b.mr.rkey, b.mr.buf + 300)
    assert a.completion().status == e.IBV_WC_SUCCESS
    assert b.mr.read(7, 300) == b"written"


def test_a_uc_message_with_no_receive_is_lost(uc_pair):
    a, b = uc_pair
    a.send(1, b"lost")
    assert a.completion().status == e.IBV_WC_SUCCESS      # the sender never learns
    assert b.cq.poll() == (0, [])                          # b's device found no receive: dropped
    b.recv(2)
    a.send(3, b"kept", offset=100)
    wc = b.completion()
    assert (wc.wr_id, wc.byte_len) == (2, 4) and b.mr.read(4, 0) == b"kept"
    assert a.completion().wr_id == 3
    assert a.qp.qp_state == b.qp.qp_state == e.IBV_QPS_RTS


def test_a_uc_rdma_write_with_a_bad_rkey_is_lost_without_an_error(uc_pair):
    a, b = uc_pair
    a.mr.write(b"never", 5, 0)
    a.rdma(e.IBV_WR_RDMA_WRITE, 1, 0, 5, b.mr.rkey ^ 0x10000, b.mr.buf + 64)
    assert a.completion().status == e.IBV_WC_SUCCESS
    assert b.mr.read(5, 64) == bytes(5)
    b.recv(2)
    a.send(3, b"still up", offset=100)                   # the connection goes on
    assert b.completion().wr_id == 2
    assert a.qp.qp_state == b.qp.qp_state == e.IBV_QPS_RTS


@pytest.mark.parametrize("opcode", [e.IBV_WR_RDMA_READ, e.IBV_WR_ATOMIC_FETCH_AND_ADD])
def test_rdma_read_and_atomics_on_uc_are_local_qp_operation_errors(uc_pair, opcode):
    a, b = uc_pair
    wr = SendWR(wr_id=5, opcode=opcode, num_sge=1, sg=[a.sge(0, 8)])
    wr.set_wr_rdma(b.mr.rkey, b.mr.buf)
    wr.set_wr_atomic(b.mr.rkey, b.mr.buf, 1)
    a.qp.post_send(wr)                                     # accepted, as rxe does
    a.send(6, b"after")
    assert [(wc.wr_id, wc.status) for wc in (a.completion(), a.completion())] == \
        [(5, e.IBV_WC_LOC_QP_OP_ERR), (6, e.IBV_WC_WR_FLUSH_ERR)]
    assert a.qp.qp_state == e.IBV_QPS_ERR


def test_uc_moves_need_what_pyverbs_passes():
    end = End(qp_type=e.IBV_QPT_UC)
    try:
        assert end.qp.qp_state == e.IBV_QPS_INIT
        attr = QPAttr()
        attr.dest_qp_num = end.qp.qp_num
        end.qp.to_rts(attr)                    # RTR without rnr/atomic attributes, RTS with sq_psn only
        assert end.qp.qp_state == e.IBV_QPS_RTS
    finally:
        end.close()
