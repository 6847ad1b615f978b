"""Errors at the responder of an RC QP, and what each side learns: the
requester's completion status, the responder's receive status or async event
(both QPs end in ERR); and SQ_DRAINED when a send queue drains in SQD."""

import errno
import fcntl
import os

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.pyverbs_error import PyverbsRDMAError
from shmdat.verbs.qp import QPAttr
from shmdat.verbs.wr import SGE, RecvWR, SendWR

from tests.verbs_ends import End, POLL_BOUND, bounded

READ_ONLY_QP = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ


def _pair(b_access=None):
    """a, b connected; b's QP allows only `b_access` (qp_access_flags) if given."""
    a, b = End(), End()
    if b_access is not None:
        attr = QPAttr(qp_state=e.IBV_QPS_INIT)
        attr.qp_access_flags = b_access
        b.qp.modify(attr, e.IBV_QP_ACCESS_FLAGS)           # INIT -> INIT
    a.connect(b.qp.qp_num)
    b.connect(a.qp.qp_num)
    return a, b


def _event(end):
    event = bounded(end.ctx.get_async_event)               # the device runs meanwhile
    event.ack()
    return event.event_type, event.element.qp


def test_a_bad_rkey_is_rem_access_err_here_and_qp_access_err_there():
    a, b = _pair()
    try:
        a.rdma(e.IBV_WR_RDMA_WRITE, 1, 0, 8, b.mr.rkey ^ 0x10000, b.mr.buf)
        assert a.completion().status == e.IBV_WC_REM_ACCESS_ERR
        assert _event(b) == (e.IBV_EVENT_QP_ACCESS_ERR, b.qp)
        assert a.qp.qp_state == b.qp.qp_state == e.IBV_QPS_ERR
    finally:
        a.close()
        b.close()


def test_an_mr_without_remote_write_is_a_remote_access_error():
    a, b = _pair()
    try:
        local_only = MR(b.pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)
        a.rdma(e.IBV_WR_RDMA_WRITE, 1, 0, 8, local_only.rkey, local_only.buf)
        assert a.completion().status == e.IBV_WC_REM_ACCESS_ERR
        assert _event(b) == (e.IBV_EVENT_QP_ACCESS_ERR, b.qp)
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("opcode", [e.IBV_WR_RDMA_WRITE, e.IBV_WR_ATOMIC_FETCH_AND_ADD])
def test_an_operation_the_responders_qp_does_not_allow_is_an_invalid_request(opcode):
    """As rxe: the MR would allow it, the QP's qp_access_flags do not."""
    a, b = _pair(b_access=READ_ONLY_QP)
    try:
        target = MR(b.pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                    | e.IBV_ACCESS_REMOTE_ATOMIC)
        wr = SendWR(wr_id=3, opcode=opcode, num_sge=1, sg=[a.sge(0, 8)])
        wr.set_wr_rdma(target.rkey, target.buf)
        wr.set_wr_atomic(target.rkey, target.buf, 1)
        a.qp.post_send(wr)
        wc = a.completion()
        assert (wc.wr_id, wc.status) == (3, e.IBV_WC_REM_INV_REQ_ERR)
        assert _event(b) == (e.IBV_EVENT_QP_REQ_ERR, b.qp)
        a2, b2 = _pair(b_access=READ_ONLY_QP)       # what the QP allows still works
        try:
            b2.mr.write(b"readable", 8, 64)
            a2.rdma(e.IBV_WR_RDMA_READ, 4, 0, 8, b2.mr.rkey, b2.mr.buf + 64)
            assert a2.completion().status == e.IBV_WC_SUCCESS and a2.mr.read(8, 0) == b"readable"
        finally:
            a2.close()
            b2.close()
    finally:
        a.close()
        b.close()


def test_a_send_longer_than_the_receive_is_rem_inv_req_err_and_loc_len_err(verbs_pair):
    a, b = verbs_pair
    b.recv(1, length=4)
    b.recv(2)
    a.send(7, b"longer than four")
    a.send(8, b"next", offset=100)
    wc = b.completion()
    assert (wc.wr_id, wc.status) == (1, e.IBV_WC_LOC_LEN_ERR)
    wc = a.completion()
    assert (wc.wr_id, wc.status) == (7, e.IBV_WC_REM_INV_REQ_ERR)
    wc = a.completion()
    assert (wc.wr_id, wc.status) == (8, e.IBV_WC_WR_FLUSH_ERR)
    assert a.qp.qp_state == b.qp.qp_state == e.IBV_QPS_ERR


def test_a_receive_that_fails_its_checks_is_rem_op_err_at_the_requester(verbs_pair):
    a, b = verbs_pair
    b.qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(b.mr.buf, 64, b.mr.lkey ^ 0x10000)]))
    assert b.cq.poll() == (0, [])                # found out only when a message takes it
    a.send(5, b"for a bad buffer")
    wc = b.completion()
    assert (wc.wr_id, wc.status) == (1, e.IBV_WC_LOC_PROT_ERR)
    wc = a.completion()
    assert (wc.wr_id, wc.status) == (5, e.IBV_WC_REM_OP_ERR)
    assert a.qp.qp_state == e.IBV_QPS_ERR


def test_sq_drained_in_sqd_and_rts_resumes(verbs_pair):
    a, b = verbs_pair
    b.recv(1)
    b.recv(2)
    a.send(1, b"before")
    attr = QPAttr(qp_state=e.IBV_QPS_SQD)
    attr.en_sqd_async_notify = 1
    a.qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_EN_SQD_ASYNC_NOTIFY)
    assert a.qp.qp_state == e.IBV_QPS_SQD
    a.send(2, b"during", offset=100)            # accepted, not started while in SQD
    assert _event(a) == (e.IBV_EVENT_SQ_DRAINED, a.qp)     # once "before" was acked
    assert (a.completion().wr_id, b.completion().wr_id) == (1, 1)
    for _ in range(20):
        assert b.cq.poll() == (0, [])            # "during" waits
    a.qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)
    wc = b.completion()
    assert (wc.wr_id, b.mr.read(6, 0)) == (2, b"during")
    assert a.completion().wr_id == 2


def test_sqd_without_notify_raises_no_event(verbs_pair):
    a, b = verbs_pair
    a.qp.modify(QPAttr(qp_state=e.IBV_QPS_SQD), e.IBV_QP_STATE)
    fd = a.ctx.async_fd
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    for _ in range(5):
        a.cq.poll()
    with pytest.raises(PyverbsRDMAError) as err:
        a.ctx.get_async_event()
    assert err.value.error_code == errno.EAGAIN


def _responder(ch):
    """A spawned responder: reports the async event its QP gets."""
    end = End()
    ch.send((end.qp.qp_num, end.mr.rkey, end.mr.buf))
    end.connect(ch.recv())
    ch.send("connected")
    event = bounded(end.ctx.get_async_event)
    ch.send((event.event_type, event.element.qp is end.qp, end.qp.qp_state))
    event.ack()
    ch.recv(timeout=60)
    end.close()


def test_the_responders_event_across_processes(spawn):
    peer = spawn(_responder)
    me = End()
    try:
        qpn, rkey, addr = peer.recv()
        me.connect(qpn)
        peer.send(me.qp.qp_num)
        assert peer.recv() == "connected"
        me.rdma(e.IBV_WR_RDMA_WRITE, 1, 0, 8, rkey ^ 0x10000, addr)
        assert me.completion().status == e.IBV_WC_REM_ACCESS_ERR
        assert peer.recv(POLL_BOUND) == (e.IBV_EVENT_QP_ACCESS_ERR, True, e.IBV_QPS_ERR)
        peer.send("end")
        peer.join()
    finally:
        me.close()


def test_a_receive_is_checked_when_taken_so_a_rereg_in_between_counts(verbs_pair):
    """As a NIC resolves a receive's lkey when a message lands: an MR moved to
    another PD after the post fails the receive (and REM_OP_ERR at the sender)."""
    a, b = verbs_pair
    b.recv(1)
    b.mr.rereg(e.IBV_REREG_MR_CHANGE_PD, pd=PD(b.ctx))
    a.send(2, b"too late")
    assert (b.completion().status, a.completion().status) == (e.IBV_WC_LOC_PROT_ERR, e.IBV_WC_REM_OP_ERR)
