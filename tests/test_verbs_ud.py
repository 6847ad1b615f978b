"""UD QPs on shmdat.verbs: sends addressed by an AH and a QP number, delivered
with RoCE v2's 40-byte GRH first; what UD loses, it loses without an error."""

import ipaddress
import struct

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.addr import AH, AHAttr, GID, GlobalRoute
from shmdat.verbs.cq import CQ
from shmdat.verbs.device import Context
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.pyverbs_error import PyverbsRDMAError
from shmdat.verbs.qp import QP, QPAttr, QPCap, QPInitAttr
from shmdat.verbs.srq import SRQ, SrqAttr, SrqInitAttr
from shmdat.verbs.wr import SGE, RecvWR, SendWR

from tests.verbs_ends import GID_INDEX, POLL_BOUND, bounded

QKEY = 0x11111111
GRH = 40


class UdEnd:
    """A UD QP taken to RTS at creation (as pyverbs does when given a QPAttr)."""

    def __init__(self, qkey=QKEY):
        self.ctx = Context(name="shm0")
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 64)
        self.mr = MR(self.pd, 8192, e.IBV_ACCESS_LOCAL_WRITE)
        attr = QPAttr()
        attr.qkey = qkey
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=self.cq, rcq=self.cq,
                                         cap=QPCap(max_send_wr=16, max_recv_wr=16)), attr)
        self.ah = self.ah_to(self.ctx.query_gid(1, GID_INDEX))

    def ah_to(self, dgid):
        return AH(self.pd, attr=AHAttr(is_global=1, gr=GlobalRoute(dgid=dgid, sgid_index=GID_INDEX)))

    def recv(self, wr_id, length=1024 + GRH, offset=0):
        self.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(self.mr.buf + offset, length, self.mr.lkey)]))

    def send(self, wr_id, data, dest_qpn, qkey=QKEY, ah=None, offset=4096,
             opcode=e.IBV_WR_SEND, imm_data=0):
        self.mr.write(data, len(data), offset)
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, imm_data=imm_data,
                    sg=[SGE(self.mr.buf + offset, len(data), self.mr.lkey)])
        wr.set_wr_ud(ah or self.ah, dest_qpn, qkey)
        self.qp.post_send(wr)

    def completion(self):
        return bounded(lambda: _first(self.cq))

    def close(self):
        self.ctx.close()


@pytest.fixture
def ud_pair():
    a, b = UdEnd(), UdEnd()
    yield a, b
    a.close()
    b.close()


def test_a_ud_qp_goes_to_rts_at_creation_and_sends_with_a_grh(ud_pair):
    a, b = ud_pair
    assert a.qp.qp_state == e.IBV_QPS_RTS and a.qp.query(e.IBV_QP_QKEY)[0].qkey == QKEY
    b.recv(1)
    a.send(7, b"datagram", b.qp.qp_num)
    assert a.completion().wr_id == 7
    wc = b.completion()
    assert (wc.wr_id, wc.status, wc.opcode, wc.byte_len) == (1, e.IBV_WC_SUCCESS, e.IBV_WC_RECV, GRH + 8)
    assert wc.wc_flags & e.IBV_WC_GRH and wc.src_qp == a.qp.qp_num and wc.qp_num == b.qp.qp_num
    assert b.mr.read(8, GRH) == b"datagram"
    # RoCE v2 over IPv4: 20 bytes unused, then the IPv4 header of the packet
    header = b.mr.read(GRH, 0)
    assert header[:20] == bytes(20)
    version, _tos, total, _id, frag, _ttl, proto, _sum, src, dst = struct.unpack("!BBHHHBBH4s4s", header[20:])
    loopback = ipaddress.IPv4Address("127.0.0.1").packed
    assert (version, proto, src, dst, frag) == (0x45, 17, loopback, loopback, 0x4000)
    assert total == 20 + 8 + 12 + 8 + 8 + 4          # IP, UDP, BTH, DETH, payload, ICRC
    assert sum(struct.unpack("!10H", header[20:])) % 0xFFFF == 0     # a valid header checksum


def test_many_senders_into_one_ud_qp_with_immediate_data():
    senders = [UdEnd() for _ in range(3)]
    receiver = UdEnd()
    try:
        for i in range(6):
            receiver.recv(i, offset=1100 * i)
        for n, sender in enumerate(senders):
            for k in range(2):
                sender.send(10 * n + k, f"from {n}.{k}".encode(), receiver.qp.qp_num,
                            opcode=e.IBV_WR_SEND_WITH_IMM, imm_data=100 * n + k)
        got = {}
        for _ in range(6):
            wc = receiver.completion()
            got[wc.imm_data] = (wc.src_qp, receiver.mr.read(wc.byte_len - GRH, 1100 * wc.wr_id + GRH))
        assert got == {100 * n + k: (s.qp.qp_num, f"from {n}.{k}".encode())
                       for n, s in enumerate(senders) for k in range(2)}
    finally:
        for end in [*senders, receiver]:
            end.close()


def test_what_ud_loses_it_loses_without_an_error(ud_pair):
    a, b = ud_pair
    b.recv(1)
    a.send(1, b"wrong qkey", b.qp.qp_num, qkey=QKEY + 1)
    a.send(2, b"x" * 1025, b.qp.qp_num)                    # over the port's MTU of 1024
    a.send(3, b"elsewhere", b.qp.qp_num, ah=a.ah_to(GID("::ffff:10.1.2.3")))
    a.send(4, b"nobody", 0xFFF0)                            # no such QP
    assert [a.completion().wr_id for _ in range(4)] == [1, 2, 3, 4]      # all SUCCESS
    assert b.cq.poll() == (0, [])
    a.send(5, b"right", b.qp.qp_num)
    wc = b.completion()
    assert (wc.wr_id, wc.byte_len, b.mr.read(5, GRH)) == (1, GRH + 5, b"right")
    assert a.completion().status == e.IBV_WC_SUCCESS


def test_a_ud_message_with_no_receive_is_lost(ud_pair):
    a, b = ud_pair
    a.send(1, b"first", b.qp.qp_num)
    assert a.completion().status == e.IBV_WC_SUCCESS
    assert b.cq.poll() == (0, [])                           # b's device ran: no receive, dropped
    b.recv(2)
    a.send(3, b"second", b.qp.qp_num)
    wc = b.completion()
    assert (wc.wr_id, b.mr.read(6, GRH)) == (2, b"second")


def test_the_qps_own_qkey_when_the_wr_sets_the_high_bit(ud_pair):
    a, b = ud_pair
    b.recv(1)
    a.send(1, b"own key", b.qp.qp_num, qkey=0x80000000)     # a's own Q_Key is b's
    assert b.completion().byte_len == GRH + 7


def test_ud_refuses_what_it_cannot_carry(ud_pair):
    a, b = ud_pair
    other_pd = PD(a.ctx)
    wr = SendWR(wr_id=1, num_sge=1, sg=[SGE(a.mr.buf, 8, a.mr.lkey)])
    wr.set_wr_ud(AH(other_pd, attr=a.ah.attr), b.qp.qp_num, QKEY)
    with pytest.raises(PyverbsRDMAError) as err:
        a.qp.post_send(wr)                                  # an AH of another PD
    assert err.value.error_code == 22
    wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(a.mr.buf, 8, a.mr.lkey)])
    wr.set_wr_ud(a.ah, b.qp.qp_num, QKEY)
    a.qp.post_send(wr)
    assert a.completion().status == e.IBV_WC_LOC_QP_OP_ERR


def _ud_receiver(ch):
    end = UdEnd()
    for i in range(2):
        end.recv(i, offset=1100 * i)
    ch.send(end.qp.qp_num)
    for _ in range(2):
        wc = end.completion()
        ch.send((wc.status, wc.src_qp, end.mr.read(wc.byte_len - GRH, 1100 * wc.wr_id + GRH)))
    ch.recv(timeout=60)
    end.close()


def test_ud_across_processes(spawn):
    peer = spawn(_ud_receiver)
    me = UdEnd()
    try:
        qpn = peer.recv()
        me.send(1, b"one", qpn)
        me.send(2, b"two", qpn)
        assert [me.completion().wr_id for _ in range(2)] == [1, 2]
        assert [peer.recv(POLL_BOUND) for _ in range(2)] == [(e.IBV_WC_SUCCESS, me.qp.qp_num, b"one"),
                                                             (e.IBV_WC_SUCCESS, me.qp.qp_num, b"two")]
        peer.send("end")
        peer.join()
    finally:
        me.close()


def test_a_ud_qp_in_rtr_with_an_srq_receives():
    a = UdEnd()
    ctx = Context(name="shm0")
    try:
        pd, cq = PD(ctx), CQ(ctx, 8)
        mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=4)))
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, srq=srq))
        attr = QPAttr()
        attr.qkey = QKEY
        qp.to_rtr(attr)                                      # INIT with the Q_Key, RTR with the state
        assert qp.qp_state == e.IBV_QPS_RTR
        srq.post_recv(RecvWR(wr_id=5, num_sge=1, sg=[SGE(mr.buf, 1024 + GRH, mr.lkey)]))
        a.send(1, b"to an srq", qp.qp_num)
        wc = bounded(lambda: _first(cq))
        assert (wc.wr_id, wc.src_qp, mr.read(9, GRH)) == (5, a.qp.qp_num, b"to an srq")
    finally:
        a.close()
        ctx.close()


def _first(cq):
    while True:
        n, wcs = cq.poll()
        if n:
            return wcs[0]
