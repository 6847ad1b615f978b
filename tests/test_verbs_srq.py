"""shmdat.verbs SRQs: shared receives in posting order, limits, the limit event."""

import errno
import fcntl
import os

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.pyverbs_error import PyverbsRDMAError
from shmdat.verbs.qp import QP, QPAttr, QPInitAttr
from shmdat.verbs.srq import SRQ, SrqAttr, SrqInitAttr
from shmdat.verbs.wr import RecvWR

from tests.verbs_ends import End, bounded


def rdma_error(call, code):
    with pytest.raises(PyverbsRDMAError) as err:
        call()
    assert err.value.error_code == code, err.value


@pytest.fixture
def served():
    """A server End whose two QPs share one SRQ, each connected to a client End."""
    server, clients = End(), [End(), End()]
    srq = SRQ(server.pd, SrqInitAttr(SrqAttr(max_wr=8)))
    qps = [QP(server.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=server.cq, rcq=server.cq, srq=srq),
              QPAttr()) for _ in clients]
    for qp, client in zip(qps, clients):
        attr = QPAttr()
        attr.dest_qp_num = client.qp.qp_num
        qp.to_rts(attr)
        client.connect(qp.qp_num)
    yield server, srq, qps, clients
    for end in (server, *clients):
        end.close()


def post(server, srq, wr_id, offset):
    srq.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[server.sge(offset, 64)]))


def test_receives_go_to_whichever_qp_a_message_reaches_in_posting_order(served):
    server, srq, qps, clients = served
    for i in range(3):
        post(server, srq, i, 64 * i)
    clients[1].send(10, b"from one")
    clients[0].send(11, b"from zero")
    clients[1].send(12, b"one again")
    got = sorted((wc.wr_id, wc.qp_num, wc.byte_len) for wc in (server.completion() for _ in range(3)))
    assert [g[0] for g in got] == [0, 1, 2]                      # each buffer once
    assert sorted(g[1] for g in got) == sorted([qps[1].qp_num, qps[0].qp_num, qps[1].qp_num])
    assert {server.mr.read(n, 64 * wr_id) for wr_id, _, n in got} == {b"from one", b"from zero",
                                                                     b"one again"}
    rdma_error(lambda: qps[0].post_recv(RecvWR(num_sge=1, sg=[server.sge(0, 8)])), errno.EINVAL)


def test_limits(served):
    server, srq, qps, _ = served
    for i in range(8):
        post(server, srq, i, 0)
    rdma_error(lambda: post(server, srq, 9, 0), errno.ENOMEM)            # max_wr held
    rdma_error(lambda: srq.modify(SrqAttr(max_wr=4), e.IBV_SRQ_MAX_WR), errno.EINVAL)
    rdma_error(lambda: srq.modify(SrqAttr(srq_limit=9), e.IBV_SRQ_LIMIT), errno.EINVAL)
    srq.modify(SrqAttr(max_wr=16), e.IBV_SRQ_MAX_WR)
    assert (srq.query().max_wr, srq.query().srq_limit) == (16, 0)
    limits = server.ctx.query_device()
    rdma_error(lambda: SRQ(server.pd, SrqInitAttr(SrqAttr(max_wr=limits.max_srq_wr + 1))), errno.EINVAL)


def test_the_limit_event_fires_once(served):
    server, srq, qps, clients = served
    for i in range(4):
        post(server, srq, i, 64 * i)
    srq.modify(SrqAttr(srq_limit=3), e.IBV_SRQ_LIMIT)
    assert srq.query().srq_limit == 3
    clients[0].send(1, b"a")
    server.completion()                                           # 3 left: not below 3
    clients[0].send(2, b"b")
    server.completion()                                           # 2 left: below
    event = bounded(server.ctx.get_async_event)
    assert event.event_type == e.IBV_EVENT_SRQ_LIMIT_REACHED and event.element.srq is srq
    event.ack()
    assert srq.query().srq_limit == 0                             # one-shot
    clients[0].send(3, b"c")
    server.completion()
    fcntl.fcntl(server.ctx.async_fd, fcntl.F_SETFL, os.O_NONBLOCK)
    rdma_error(server.ctx.get_async_event, errno.EAGAIN)           # no second event


def test_a_qp_of_an_srq_reaching_err_is_last_wqe_reached(served):
    server, srq, qps, _ = served
    qps[0].modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    event = bounded(server.ctx.get_async_event)
    assert event.event_type == e.IBV_EVENT_QP_LAST_WQE_REACHED and event.element.qp is qps[0]
    event.ack()
