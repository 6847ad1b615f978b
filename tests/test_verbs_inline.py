"""Inline sends (IBV_SEND_INLINE) on shmdat.verbs: the data is taken at post,
with no lkey check, and cap.max_inline_data is the limit."""

import ctypes
import errno

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.pyverbs_error import PyverbsRDMAError
from shmdat.verbs.qp import QP, QPAttr, QPCap, QPInitAttr
from shmdat.verbs.wr import SGE, SendWR

from tests.verbs_ends import End, qp_attr


def _inline_wr(wr_id, buf, opcode=e.IBV_WR_SEND):
    """A SendWR over a buffer of no MR (lkey 0): only inline may use it."""
    sge = SGE(ctypes.addressof(buf), len(buf), 0)
    return SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[sge],
                  send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)


def _rc_qp(end, max_inline_data, max_send_sge=1):
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=max_send_sge,
                max_inline_data=max_inline_data)
    return QP(end.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=end.cq, rcq=end.cq, cap=cap), qp_attr())


def test_the_device_limit_and_what_query_reports():
    end = End()
    try:
        limit = end.ctx.query_device().max_inline_data
        assert limit >= 64
        with pytest.raises(PyverbsRDMAError) as err:
            _rc_qp(end, limit + 1)
        assert err.value.error_code == errno.EINVAL
        assert _rc_qp(end, limit).query(e.IBV_QP_CAP)[0].cap.max_inline_data == limit
        # as rxe: a send WQE holds max_send_sge SGEs of 16 bytes or the inline data
        assert _rc_qp(end, 0, max_send_sge=2).query(e.IBV_QP_CAP)[0].cap.max_inline_data == 32
    finally:
        end.close()


def test_inline_data_is_taken_at_post_without_an_lkey():
    a, b = End(), End()
    try:
        qp = _rc_qp(a, 64)
        attr = QPAttr()
        attr.dest_qp_num = b.qp.qp_num
        qp.to_rts(attr)                          # b is not in RTR yet: the send waits in the QP
        buf = ctypes.create_string_buffer(b"inline payload", 14)
        qp.post_send(_inline_wr(1, buf))
        ctypes.memmove(buf, b"overwritten!!!", 14)      # reused as soon as the post returned
        b.recv(5)
        b.connect(qp.qp_num)
        wc = b.completion()
        assert (wc.wr_id, wc.status, wc.byte_len) == (5, e.IBV_WC_SUCCESS, 14)
        assert b.mr.read(14, 0) == b"inline payload"
        assert a.completion().wr_id == 1
        wr = _inline_wr(2, buf, e.IBV_WR_RDMA_WRITE)
        wr.set_wr_rdma(b.mr.rkey, b.mr.buf + 100)
        qp.post_send(wr)
        wc = a.completion()
        assert (wc.wr_id, wc.status, wc.opcode) == (2, e.IBV_WC_SUCCESS, e.IBV_WC_RDMA_WRITE)
        assert b.mr.read(14, 100) == b"overwritten!!!"
    finally:
        a.close()
        b.close()


def test_inline_data_over_max_inline_data_is_einval(verbs_pair):
    a, b = verbs_pair
    limit = a.qp.query(e.IBV_QP_CAP)[0].cap.max_inline_data
    buf = ctypes.create_string_buffer(limit + 1)
    with pytest.raises(PyverbsRDMAError) as err:
        a.qp.post_send(_inline_wr(1, buf))
    assert err.value.error_code == errno.EINVAL
    assert a.cq.poll() == (0, [])                # nothing was posted
