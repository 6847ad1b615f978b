"""shmdat.verbs RC QPs and CQs: both ends in one process (as rdma-core's tests run
them, with no thread) and in two processes, connected as on a NIC by exchanging
qp_num and GID out of band."""

import errno
import select
import signal

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.device import Context
from shmdat.verbs.cq import CQEX, CompChannel, CqInitAttrEx, PollCqAttr
from shmdat.verbs.mr import MR
from shmdat.verbs.pyverbs_error import PyverbsRDMAError
from shmdat.verbs.qp import QP, QPAttr, QPInitAttr, QPInitAttrEx
from shmdat.verbs.wr import SGE, RecvWR, SendWR

from tests.verbs_ends import End, bounded, qp_attr


def test_send_recv_in_one_process(verbs_pair):
    a, b = verbs_pair
    assert a.qp.qp_state == b.qp.qp_state == e.IBV_QPS_RTS and a.qp.qp_num != b.qp.qp_num
    b.recv(7)
    a.send(1, b"hello verbs")
    wc = b.completion()
    assert (wc.wr_id, wc.status, wc.opcode, wc.byte_len) == (7, e.IBV_WC_SUCCESS, e.IBV_WC_RECV, 11)
    assert wc.qp_num == b.qp.qp_num and wc.src_qp == a.qp.qp_num
    assert b.mr.read(11, 0) == b"hello verbs"
    wc = a.completion()
    assert (wc.wr_id, wc.status, wc.opcode) == (1, e.IBV_WC_SUCCESS, e.IBV_WC_SEND)


def test_rdma_write_and_read_need_no_call_from_the_target(verbs_pair):
    a, b = verbs_pair
    a.mr.write(b"written", 7, 100)
    a.rdma(e.IBV_WR_RDMA_WRITE, 2, 100, 7, b.mr.rkey, b.mr.buf + 500)
    assert a.completion().status == e.IBV_WC_SUCCESS
    assert b.mr.read(7, 500) == b"written"
    b.mr.write(b"to read", 7, 900)
    a.rdma(e.IBV_WR_RDMA_READ, 3, 2000, 7, b.mr.rkey, b.mr.buf + 900)
    wc = a.completion()
    assert (wc.wr_id, wc.status, wc.opcode) == (3, e.IBV_WC_SUCCESS, e.IBV_WC_RDMA_READ)
    assert a.mr.read(7, 2000) == b"to read"


def test_a_bad_rkey_is_a_remote_access_error_and_breaks_the_qp(verbs_pair):
    a, b = verbs_pair
    a.rdma(e.IBV_WR_RDMA_WRITE, 4, 0, 8, b.mr.rkey ^ 0x10000, b.mr.buf)
    assert a.completion().status == e.IBV_WC_REM_ACCESS_ERR
    assert a.qp.qp_state == e.IBV_QPS_ERR


def test_unsignaled_sends_complete_silently():
    a, b = End(sq_sig_all=0), End()
    try:
        a.connect(b.qp.qp_num)
        b.connect(a.qp.qp_num)
        b.recv(1)
        b.recv(2)
        a.send(10, b"quiet", flags=0)
        a.send(11, b"loud")
        assert [b.completion().wr_id for _ in range(2)] == [1, 2]
        assert a.completion().wr_id == 11
        assert a.cq.poll() == (0, [])
    finally:
        a.close()
        b.close()


def test_a_message_longer_than_its_receive(verbs_pair):
    a, b = verbs_pair
    b.recv(1, length=4)
    a.send(1, b"too long for it")
    assert b.completion().status == e.IBV_WC_LOC_LEN_ERR


def test_err_flushes_and_reset_purges(verbs_pair):
    a, b = verbs_pair
    b.recv(1)
    b.recv(2)
    b.qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    assert [(wc.wr_id, wc.status) for wc in (b.completion(), b.completion())] == \
        [(1, e.IBV_WC_WR_FLUSH_ERR), (2, e.IBV_WC_WR_FLUSH_ERR)]
    b.recv(3)                                               # posted in ERR: flushed at once
    b.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    assert b.cq.poll() == (0, [])                           # RESET dropped its completions
    assert b.qp.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_RESET


def test_posting_in_the_wrong_state_is_einval():
    end = End()
    try:
        with pytest.raises(PyverbsRDMAError) as err:
            end.send(1, b"x")                               # INIT: no sends yet
        assert err.value.error_code == errno.EINVAL
        end.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
        with pytest.raises(PyverbsRDMAError) as err:
            end.recv(1)                                     # RESET: no receives
        assert err.value.error_code == errno.EINVAL
        with pytest.raises(PyverbsRDMAError) as err:        # RESET -> RTS is no move
            end.qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
        assert err.value.error_code == errno.EINVAL and end.qp.qp_state == e.IBV_QPS_RESET
    finally:
        end.close()


@pytest.fixture
def armed_pair():
    """Two connected Ends, b's CQ with a completion channel, armed."""
    a, b = End(), End(channel=True)
    try:
        a.connect(b.qp.qp_num)
        b.connect(a.qp.qp_num)
        b.cq.req_notify()
        yield a, b
    finally:
        a.close()
        b.close()


def test_a_channel_fd_asked_for_late_polls_readable_for_the_events_already_there(armed_pair):
    a, b = armed_pair
    b.recv(1)
    a.send(1, b"one")
    assert b.completion().wr_id == 1                # the completion raised the event
    fd = b.channel.fd                               # the fd's pipe is made now
    assert select.select([fd], [], [], 0)[0] == [fd]
    bounded(lambda: b.channel.get_cq_event(b.cq))
    b.cq.ack_events(1)
    assert select.select([fd], [], [], 0)[0] == []


def test_the_fd_of_a_closed_channel_is_ebadf():
    ctx = Context(name="shm0")
    try:
        channel = CompChannel(ctx)
        channel.close()
        with pytest.raises(PyverbsRDMAError) as err:
            channel.fd
        assert err.value.error_code == errno.EBADF
    finally:
        ctx.close()


def test_a_bad_lkey_is_a_local_protection_error(verbs_pair):
    a, b = verbs_pair
    a.qp.post_send(SendWR(wr_id=5, num_sge=1, sg=[SGE(a.mr.buf, 8, a.mr.lkey ^ 0x10000)]))
    wc = a.completion()
    assert (wc.wr_id, wc.status) == (5, e.IBV_WC_LOC_PROT_ERR)


def test_a_completion_channel_event_per_arming(armed_pair):
    a, b = armed_pair
    b.recv(1)
    b.recv(2)
    a.send(1, b"one")
    a.send(2, b"two")
    bounded(lambda: b.channel.get_cq_event(b.cq))           # progress runs inside it
    assert select.select([b.channel.fd], [], [], 0)[0] == []                # the event was taken
    b.cq.ack_events(1)
    assert b.cq.num_events == 0
    assert [wc.wr_id for wc in (b.completion(), b.completion())] == [1, 2]
    assert select.select([b.channel.fd], [], [], 0)[0] == []                # one event per arming


def _peer(ch):
    """A spawned end: tell our qp_num, connect to the test's, echo one message."""
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    end.recv(1)
    ch.send("ready")
    wc = end.completion()
    end.send(2, end.mr.read(wc.byte_len, 0))
    end.completion()
    ch.send(("rkey", end.mr.rkey, end.mr.buf))
    ch.recv(timeout=60)                         # until told to end, or killed
    end.close()


def test_two_processes_connect_as_on_a_nic(spawn):
    peer = spawn(_peer)
    me = End()
    try:
        me.connect_to(peer)
        assert peer.recv() == "ready"
        me.recv(9)
        me.send(1, b"across processes")
        assert me.completion().wr_id in (1, 9)
        assert me.completion().wr_id in (1, 9)
        assert me.mr.read(16, 0) == b"across processes"
        _, rkey, addr = peer.recv()
        me.rdma(e.IBV_WR_RDMA_READ, 3, 4000, 16, rkey, addr)
        assert me.completion().status == e.IBV_WC_SUCCESS
        assert me.mr.read(16, 4000) == b"across processes"
        me.recv(10)
        peer.kill(signal.SIGKILL)
        peer.process.join(10)
        wc = me.completion()                    # the peer's death reaches the poller
        assert (wc.wr_id, wc.status) == (10, e.IBV_WC_WR_FLUSH_ERR)
        assert me.qp.qp_state == e.IBV_QPS_ERR
    finally:
        me.close()


@pytest.mark.parametrize("first", ["lower", "higher"])
def test_one_side_runs_before_the_other_reaches_rtr(first):
    """Sends posted, and CQs polled, before the peer QP joins: nothing fails, the
    message waits, and flows once the peer is there (either side may come first)."""
    x, y = End(), End()
    try:
        lo, hi = (x, y) if x.qp.qp_num < y.qp.qp_num else (y, x)
        early, late = (lo, hi) if first == "lower" else (hi, lo)
        early.connect(late.qp.qp_num)
        early.send(1, b"early bird")
        for _ in range(20):
            assert early.cq.poll()[0] in (0, 1)          # progress runs; no error appears
        assert early.qp.qp_state == e.IBV_QPS_RTS
        late.recv(2)
        late.connect(early.qp.qp_num)
        wc = late.completion()
        assert (wc.wr_id, wc.status) == (2, e.IBV_WC_SUCCESS) and late.mr.read(10, 0) == b"early bird"
        early.cq.poll()                                  # its send completion, if not taken above
    finally:
        x.close()
        y.close()


def test_immediate_data_with_a_send_and_with_an_rdma_write(verbs_pair):
    a, b = verbs_pair
    b.recv(1)
    b.recv(2, length=0)                      # an RDMA write's notice needs no buffer
    a.mr.write(b"imm", 3)
    a.qp.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND_WITH_IMM, num_sge=1, imm_data=0x12345678,
                          sg=[a.sge(0, 3)]))
    wc = b.completion()
    assert (wc.opcode, wc.byte_len, wc.imm_data) == (e.IBV_WC_RECV, 3, 0x12345678)
    assert wc.wc_flags & e.IBV_WC_WITH_IMM
    a.mr.write(b"written+imm", 11, 100)
    wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1, imm_data=0xCAFE,
                sg=[a.sge(100, 11)])
    wr.set_wr_rdma(b.mr.rkey, b.mr.buf + 700)
    a.qp.post_send(wr)
    wc = b.completion()
    assert (wc.wr_id, wc.opcode, wc.byte_len, wc.imm_data) == (2, e.IBV_WC_RECV_RDMA_WITH_IMM, 11, 0xCAFE)
    assert b.mr.read(11, 700) == b"written+imm"
    assert [a.completion().opcode for _ in range(2)] == [e.IBV_WC_SEND, e.IBV_WC_RDMA_WRITE]


def test_atomics_fetch_and_add_and_compare_and_swap():
    a, b = End(), End()
    try:
        a.connect(b.qp.qp_num)
        b.connect(a.qp.qp_num)
        target = MR(b.pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC)
        target.write((40).to_bytes(8, "little"), 8, 8)

        def atomic(opcode, wr_id, compare_add, swap=0):
            wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[a.sge(0, 8)])
            wr.set_wr_atomic(target.rkey, target.buf + 8, compare_add, swap)
            a.qp.post_send(wr)
            wc = a.completion()
            assert wc.status == e.IBV_WC_SUCCESS, wc
            return wc.opcode, int.from_bytes(a.mr.read(8, 0), "little")

        assert atomic(e.IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 2) == (e.IBV_WC_FETCH_ADD, 40)
        assert atomic(e.IBV_WR_ATOMIC_CMP_AND_SWP, 2, 41, 7) == (e.IBV_WC_COMP_SWAP, 42)   # no match
        assert atomic(e.IBV_WR_ATOMIC_CMP_AND_SWP, 3, 42, 7) == (e.IBV_WC_COMP_SWAP, 42)   # swapped
        assert int.from_bytes(target.read(8, 8), "little") == 7
        wr = SendWR(wr_id=4, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1, sg=[a.sge(0, 8)])
        wr.set_wr_atomic(b.mr.rkey, b.mr.buf + 8, 1)         # an MR without remote atomic access
        a.qp.post_send(wr)
        assert a.completion().status == e.IBV_WC_REM_ACCESS_ERR
    finally:
        a.close()
        b.close()


def _adder(ch, count):
    """A spawned initiator adding 1 `count` times to the word the test exposes."""
    end = End()
    ch.send(end.qp.qp_num)
    qpn, rkey, addr = ch.recv()
    end.connect(qpn)
    for i in range(count):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1, sg=[end.sge(0, 8)])
        wr.set_wr_atomic(rkey, addr, 1)
        end.qp.post_send(wr)
        assert end.completion().status == e.IBV_WC_SUCCESS
    ch.send("done")
    ch.recv(timeout=60)
    end.close()


def test_atomics_from_two_processes_do_not_interleave(spawn):
    count = 300
    target = End()
    second = QP(target.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=target.cq, rcq=target.cq), qp_attr())
    peers = [spawn(_adder, count) for _ in range(2)]
    try:
        word = MR(target.pd, 8, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC)
        target.connect(peers[0].recv())
        attr = QPAttr()
        attr.dest_qp_num = peers[1].recv()
        second.to_rts(attr)
        for qp, peer in ((target.qp, peers[0]), (second, peers[1])):
            peer.send((qp.qp_num, word.rkey, word.buf))
        for peer in peers:
            assert peer.recv(timeout=60) == "done"
        assert int.from_bytes(word.read(8, 0), "little") == 2 * count
        for peer in peers:
            peer.send("end")
            peer.join()
    finally:
        target.close()


def test_what_arrived_before_the_peer_left_is_delivered(verbs_pair):
    a, b = verbs_pair
    b.recv(1)
    b.recv(2)
    a.send(1, b"last words")                    # in b's ring; b has not polled since
    a.close()                                   # a leaves right after its send
    assert (b.completion().wr_id, b.mr.read(10, 0)) == (1, b"last words")
    wc = b.completion()                          # then b's QP fails: the rest flushes
    assert (wc.wr_id, wc.status) == (2, e.IBV_WC_WR_FLUSH_ERR)
    bounded(b.ctx.get_async_event).ack()        # QP_FATAL


def test_a_qp_created_from_the_context_with_init_attr_ex(verbs_pair):
    a, b = verbs_pair
    attr = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=a.cq, rcq=a.cq, comp_mask=e.IBV_QP_INIT_ATTR_PD,
                        pd=a.pd)
    qp = QP(a.ctx, attr, QPAttr())
    assert qp.qp_state == e.IBV_QPS_INIT and qp.pd is a.pd and qp.sq_sig_all == 0
    with pytest.raises(PyverbsRDMAError) as err:
        QP(a.ctx, QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=a.cq, rcq=a.cq, pd=a.pd))    # no PD bit
    assert err.value.error_code == errno.EINVAL
    with pytest.raises(PyverbsRDMAError) as err:
        QP(a.ctx, QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=a.cq, rcq=a.cq, pd=a.pd, create_flags=1,
                               comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_CREATE_FLAGS))
    assert err.value.error_code == errno.EOPNOTSUPP


def test_an_extended_cq_polled_a_batch_at_a_time():
    a, b = End(), End()
    try:
        cqex = CQEX(b.ctx, CqInitAttrEx(cqe=16, wc_flags=e.IBV_WC_EX_WITH_BYTE_LEN))
        qp = QP(b.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqex, rcq=cqex), QPAttr())
        attr = QPAttr()
        attr.dest_qp_num = a.qp.qp_num
        qp.to_rts(attr)
        a.connect(qp.qp_num)
        for i in range(2):
            qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[b.sge(64 * i, 64)]))
            a.send(i, b"x" * (i + 3))
        assert cqex.start_poll(PollCqAttr()) == 0                  # the device ran in it
        got = [(cqex.wr_id, cqex.status, cqex.read_opcode(), cqex.read_byte_len(), cqex.read_qp_num())]
        assert cqex.poll_next() == 0
        got.append((cqex.wr_id, cqex.status, cqex.read_opcode(), cqex.read_byte_len(), cqex.read_qp_num()))
        assert cqex.poll_next() == errno.ENOENT
        cqex.end_poll()
        assert got == [(0, e.IBV_WC_SUCCESS, e.IBV_WC_RECV, 3, qp.qp_num),
                       (1, e.IBV_WC_SUCCESS, e.IBV_WC_RECV, 4, qp.qp_num)]
        assert cqex.start_poll() == errno.ENOENT
        with pytest.raises(PyverbsRDMAError) as err:
            CQEX(b.ctx, CqInitAttrEx(wc_flags=e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP))
        assert err.value.error_code == errno.EOPNOTSUPP
    finally:
        a.close()
        b.close()


def test_init_attr_caps_and_data_in_order(verbs_pair):
    a, _ = verbs_pair
    attr = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=a.cq, rcq=a.cq)
    attr.max_send_wr = 0xFFFFFFFF                    # pyverbs sets caps through the init attributes
    assert attr.cap.max_send_wr == attr.max_send_wr == 0xFFFFFFFF
    with pytest.raises(PyverbsRDMAError) as err:
        QP(a.pd, attr)
    assert err.value.error_code == errno.EINVAL
    assert a.qp.query_data_in_order(e.IBV_WR_SEND) == 0
