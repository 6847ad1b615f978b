"""Every public verbs call refuses a wrong argument with a PyverbsError naming it.

As tests/test_bad_arguments.py does for DAT: Hypothesis puts one wrong value
(an object of another kind, a verbs object of the wrong kind, a str, bytes, a
float, None, a bool, a complex, a dict, a tuple, an out-of-range int) in one
argument position, or one field of an attribute object, and keeps the others
good. The call may succeed (a float is truncated as Cython does) or raise
PyverbsUserError naming the argument, or PyverbsRDMAError with EINVAL (the
device refuses the value); any other exception is a bug. Both ends of the
connection are in this process.
"""

import ctypes
import errno
import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from shmdat.verbs import cmid as cmid_module, libibverbs_enums as e
from shmdat.verbs import link
from shmdat.verbs.addr import AH, AHAttr, GlobalRoute
from shmdat.verbs.cmid import CMID, AddrInfo, CMEventChannel, ConnParam
from shmdat.verbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx
from shmdat.verbs.device import Context
from shmdat.verbs.gid import GID
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from shmdat.verbs.qp import QP, QPAttr, QPCap, QPInitAttr, QPInitAttrEx
from shmdat.verbs.srq import SRQ, SrqAttr, SrqInitAttr
from shmdat.verbs.wr import SGE, RecvWR, SendWR

from .verbs_ends import ACCESS, GID_INDEX, End, qp_attr

RC = e.IBV_QPT_RC
# Errnos a device may answer a wrong value with: EINVAL, and ENODATA for a GID
# entry that is not there (query_gid_type, query_gid_ex).
DEVICE_ERRNOS = {errno.EINVAL, errno.ENODATA}
# Calls whose refusal of a value of the right type pyverbs raises otherwise:
# no errno for a device or a P_Key not found, EADDRNOTAVAIL for a host that
# does not resolve.
OTHER_ERRNOS = {"Context": {-1}, "get_pkey_index": {-1}, "AddrInfo": {errno.EADDRNOTAVAIL}}
# Where pyverbs' own message names the argument in its words (any of them).
NAMED_BY = {("PD", 0): ("Cannot create PD from",), ("MR", 0): ("Cannot create MR from",),
            ("CQ", 0): ("Cannot create a CQ from",), ("CQEX", 0): ("Cannot create a CQ from",),
            ("QP", 0): ("creator", "init_attr"),
            ("CompChannel", 0): ("Cannot create a completion channel",),
            ("CMID", 0): ("Cannot create CM ID from",), ("GID", 0): ("val", "is not a GID"),
            ("mr.read", 1): ("offset", "is invalid"), ("mr.write", 2): ("offset", "is invalid"),
            ("SendWR", 4): ("sg", "A WR needs at least one SGE"),
            ("QPInitAttr", 2): ("scq", "a send CQ"), ("QPInitAttr", 3): ("rcq", "a recv CQ"),
            ("QPInitAttrEx", 2): ("scq", "a send CQ"), ("QPInitAttrEx", 3): ("rcq", "a recv CQ"),
            ("link_set", 0): ("link must be",), ("link_set", 1): ("state 'down' or 'up'",)}
_ns_names = itertools.count()


class World:
    """Two connected RC ends in this process, a channel, an SRQ, an AH and a CM id."""

    def __init__(self):
        self.a, self.b = End(channel=True), End()
        self.a.connect(self.b.qp.qp_num)
        self.b.connect(self.a.qp.qp_num)
        self.ctx, self.pd, self.cq, self.mr, self.qp = self.a.ctx, self.a.pd, self.a.cq, self.a.mr, self.a.qp
        self.channel = self.a.channel
        self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(8, 1)))
        self.gid = self.ctx.query_gid(1, GID_INDEX)
        self.buffer = ctypes.create_string_buffer(64)          # program memory, for rereg
        self.ah = AH(self.pd, attr=self.ah_attr())
        self.cm_channel = CMEventChannel()
        self.cmid = CMID(self.cm_channel)
        self.objects = [self.ctx, self.pd, self.cq, self.mr, self.qp, self.channel, self.srq,
                        self.gid, self.ah, self.cm_channel, self.cmid, self.b.qp]

    def ah_attr(self):
        return AHAttr(is_global=1, gr=GlobalRoute(self.gid, sgid_index=GID_INDEX))

    def sge(self):
        return SGE(self.mr.buf, 8, self.mr.lkey)

    def send_wr(self):
        return SendWR(wr_id=1, num_sge=1, sg=[self.sge()])

    def recv_wr(self):
        return RecvWR(wr_id=1, num_sge=1, sg=[self.sge()])

    def fresh_qp(self):
        """A QP in RESET, for the modify calls."""
        cap = QPCap(max_send_wr=4, max_recv_wr=4)
        return QP(self.pd, QPInitAttr(qp_type=RC, scq=self.cq, rcq=self.cq, cap=cap))

    def close(self):
        self.cmid.close()
        self.cm_channel.close()
        self.a.close()
        self.b.close()
        # rdma_cm's Context of the process (as test_verbs_cmid.py closes it after each test)
        cmid_module._the_agent.ctx.close()


def _qp_with_cap(w, cap):
    return QP(w.pd, QPInitAttr(qp_type=RC, scq=w.cq, rcq=w.cq, cap=cap))


def _modify(mover, names):
    """fresh_qp().<mover>(attr) with the QPAttr fields `names` set to the arguments."""
    def call(w, *values):
        attr = qp_attr()
        attr.dest_qp_num = w.b.qp.qp_num
        attr.ah_attr = w.ah_attr()
        for name, value in zip(names, values):
            setattr(attr, name, value)
        return getattr(w.fresh_qp(), mover)(attr)
    return call


def _send_wr_fields(w, *values):
    wr = w.send_wr()
    for name, value in zip(("wr_id", "opcode", "num_sge", "imm_data", "send_flags"), values):
        setattr(wr, name, value)
    w.a.qp.post_send(wr)


def _sge_fields(w, *values):
    sge = w.sge()
    for name, value in zip(("addr", "length", "lkey"), values):
        setattr(sge, name, value)
    w.a.qp.post_send(SendWR(wr_id=1, num_sge=1, sg=[sge]))


def _cap_fields(w, *values):
    names = ("max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge", "max_inline_data")
    cap = QPCap()
    for name, value in zip(names, values):
        setattr(cap, name, value)
    _qp_with_cap(w, cap)


def _srq_attr_fields(w, *values):
    attr = SrqAttr()
    attr.max_wr, attr.max_sge = values
    SRQ(w.pd, SrqInitAttr(attr)).close()


def _srq_modify_fields(w, *values):
    attr = SrqAttr()
    attr.max_wr, attr.srq_limit = values
    w.srq.modify(attr, e.IBV_SRQ_MAX_WR | e.IBV_SRQ_LIMIT)


def _ah_fields(w, *values):
    attr = w.ah_attr()
    attr.port_num, attr.gr.sgid_index, attr.gr.dgid = values
    AH(w.pd, attr=attr)


def _post_inline_of_length(w, length):
    wr = SendWR(wr_id=1, num_sge=1, sg=[w.sge()], send_flags=e.IBV_SEND_INLINE)
    wr.sg_list[0].length = length           # inline data is read from memory at post
    w.a.qp.post_send(wr)


def _post_recv(w, *a):
    w.b.qp.post_recv(*a)


def _context(w, name):
    Context(name=name).close()


def _set_wr_ud(w, ah, rqpn, rqkey):
    wr = w.send_wr()
    wr.set_wr_ud(ah, rqpn, rqkey)


def _cm_conn_param(w, *values):
    param = ConnParam(*values)
    param.set_private_data(b"x")


def _ack(w, n):
    w.cq.num_events = 1 << 40            # acks never go below nothing in this test
    w.cq.ack_events(n)


# call name -> (function of (world, *args), [(argument name, good value or function of the world)])
CALLS = {
    "Context": (_context, [("name", "shm0")]),
    "query_port": (lambda w, *a: w.ctx.query_port(*a), [("port_num", 1)]),
    "query_gid": (lambda w, *a: w.ctx.query_gid(*a), [("port_num", 1), ("index", 0)]),
    "query_gid_type": (lambda w, *a: w.ctx.query_gid_type(*a), [("port_num", 1), ("index", 0)]),
    "query_gid_ex": (lambda w, *a: w.ctx.query_gid_ex(*a),
                     [("port_num", 1), ("gid_index", 0), ("flags", 0)]),
    "query_pkey": (lambda w, *a: w.ctx.query_pkey(*a), [("port_num", 1), ("index", 0)]),
    "get_pkey_index": (lambda w, *a: w.ctx.get_pkey_index(*a), [("port_num", 1), ("pkey", 0xFFFF)]),
    "PD": (lambda w, *a: PD(*a).close(), [("creator", lambda w: w.ctx)]),
    "MR": (lambda w, *a: MR(*a).close(),
           [("creator", lambda w: w.pd), ("length", 64), ("access", ACCESS)]),
    "mr.read": (lambda w, *a: w.mr.read(*a), [("length", 8), ("offset", 0)]),
    "mr.write": (lambda w, *a: w.mr.write(*a), [("data", b"abcdefgh"), ("length", 8), ("offset", 0)]),
    "mr.rereg": (lambda w, *a: w.mr.rereg(*a),
                 [("flags", e.IBV_REREG_MR_CHANGE_PD | e.IBV_REREG_MR_CHANGE_TRANSLATION
                   | e.IBV_REREG_MR_CHANGE_ACCESS), ("pd", lambda w: w.pd),
                  ("addr", lambda w: ctypes.addressof(w.buffer)), ("length", 64),
                  ("access", e.IBV_ACCESS_LOCAL_WRITE)]),
    "CQ": (lambda w, *a: CQ(*a).close(),
           [("context", lambda w: w.ctx), ("cqe", 8), ("cq_context", None),
            ("channel", lambda w: w.channel), ("comp_vector", 0)]),
    "cq.poll": (lambda w, *a: w.cq.poll(*a), [("num_entries", 1)]),
    "cq.req_notify": (lambda w, *a: w.cq.req_notify(*a), [("solicited_only", False)]),
    "cq.resize": (lambda w, *a: w.cq.resize(*a), [("cqe", 64)]),
    "cq.ack_events": (_ack, [("num_events", 0)]),
    "CompChannel": (lambda w, *a: CompChannel(*a).close(), [("context", lambda w: w.ctx)]),
    "get_cq_event": (lambda w, *a: w.channel.get_cq_event(*a), [("expected_cq", lambda w: w.cq)]),
    "CQEX": (lambda w, *a: CQEX(*a).close(), [("context", lambda w: w.ctx), ("init_attr", None)]),
    "CqInitAttrEx": (lambda w, *a: CQEX(w.ctx, CqInitAttrEx(*a)).close(),
                     [("cqe", 8), ("channel", None), ("comp_vector", 0), ("wc_flags", 0),
                      ("comp_mask", 0), ("flags", 0)]),
    "QPCap": (_cap_fields, [("cap.max_send_wr", 4), ("cap.max_recv_wr", 4), ("cap.max_send_sge", 1),
                            ("cap.max_recv_sge", 1), ("cap.max_inline_data", 0)]),
    "QPInitAttr": (lambda w, *a: QP(w.pd, QPInitAttr(*a)).close(),
                   [("qp_type", RC), ("qp_context", None), ("scq", lambda w: w.cq),
                    ("rcq", lambda w: w.cq), ("srq", None), ("cap", None), ("sq_sig_all", 1)]),
    "QPInitAttrEx": (lambda w, *a: QP(w.ctx, QPInitAttrEx(*a)).close(),
                     [("qp_type", RC), ("qp_context", None), ("scq", lambda w: w.cq),
                      ("rcq", lambda w: w.cq), ("srq", None), ("cap", None), ("sq_sig_all", 1),
                      ("comp_mask", e.IBV_QP_INIT_ATTR_PD), ("pd", lambda w: w.pd)]),
    "QP": (lambda w, *a: QP(*a).close(),
           [("creator", lambda w: w.pd),
            ("init_attr", lambda w: QPInitAttr(qp_type=RC, scq=w.cq, rcq=w.cq)),
            ("qp_attr", None)]),
    "qp.modify": (lambda w, *a: w.fresh_qp().modify(*a),
                  [("qp_attr", lambda w: qp_attr()),
                   ("comp_mask", e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT
                    | e.IBV_QP_ACCESS_FLAGS)]),
    "qp.query": (lambda w, *a: w.qp.query(*a), [("attr_mask", e.IBV_QP_STATE)]),
    "qp.to_init": (lambda w, *a: w.fresh_qp().to_init(*a), [("qp_attr", lambda w: qp_attr())]),
    "QPAttr(to_init)": (_modify("to_init", ("pkey_index", "port_num", "qp_access_flags")),
                        [("pkey_index", 0), ("port_num", 1), ("qp_access_flags", ACCESS)]),
    "QPAttr(to_rtr)": (_modify("to_rtr", ("dest_qp_num", "path_mtu", "rq_psn", "max_dest_rd_atomic",
                                          "min_rnr_timer", "ah_attr")),
                       [("dest_qp_num", lambda w: w.b.qp.qp_num), ("path_mtu", e.IBV_MTU_1024),
                        ("rq_psn", 0), ("max_dest_rd_atomic", 1), ("min_rnr_timer", 12),
                        ("ah_attr", lambda w: w.ah_attr())]),
    "QPAttr(to_rts)": (_modify("to_rts", ("timeout", "retry_cnt", "rnr_retry", "sq_psn",
                                          "max_rd_atomic")),
                       [("timeout", 14), ("retry_cnt", 7), ("rnr_retry", 7), ("sq_psn", 0),
                        ("max_rd_atomic", 1)]),
    "qp.post_send": (lambda w, *a: w.a.qp.post_send(*a), [("wr", lambda w: w.send_wr())]),
    "qp.post_recv": (_post_recv, [("wr", lambda w: w.recv_wr())]),
    "SendWR fields": (_send_wr_fields, [("wr_id", 1), ("opcode", e.IBV_WR_SEND_WITH_IMM), ("num_sge", 1),
                                        ("imm_data", 0), ("send_flags", e.IBV_SEND_SIGNALED)]),
    "SGE fields": (_sge_fields, [("addr", lambda w: w.mr.buf), ("length", 8),
                                 ("lkey", lambda w: w.mr.lkey)]),
    "SRQ": (lambda w, *a: SRQ(*a).close(),
            [("creator", lambda w: w.pd), ("attr", lambda w: SrqInitAttr(SrqAttr(8, 1)))]),
    "SrqAttr": (_srq_attr_fields, [("max_wr", 8), ("max_sge", 1)]),
    "srq.post_recv": (lambda w, *a: w.srq.post_recv(*a), [("wr", lambda w: w.recv_wr())]),
    "srq.modify": (lambda w, *a: w.srq.modify(*a),
                   [("attr", lambda w: SrqAttr(16, 1, 0)), ("comp_mask", e.IBV_SRQ_MAX_WR)]),
    "srq.modify fields": (_srq_modify_fields, [("max_wr", 16), ("srq_limit", 0)]),
    "SGE": (lambda w, *a: SGE(*a), [("addr", lambda w: w.mr.buf), ("length", 8),
                                    ("lkey", lambda w: w.mr.lkey)]),
    "SendWR": (lambda w, *a: SendWR(*a),
               [("wr_id", 1), ("opcode", e.IBV_WR_SEND), ("num_sge", 1), ("imm_data", 0),
                ("sg", lambda w: [w.sge()]), ("send_flags", e.IBV_SEND_SIGNALED), ("next_wr", None)]),
    "set_wr_rdma": (lambda w, *a: w.send_wr().set_wr_rdma(*a), [("rkey", 1), ("addr", 4096)]),
    "set_wr_atomic": (lambda w, *a: w.send_wr().set_wr_atomic(*a),
                      [("rkey", 1), ("addr", 4096), ("compare_add", 1), ("swap", 0)]),
    "set_wr_ud": (_set_wr_ud, [("ah", lambda w: w.ah), ("rqpn", 1), ("rqkey", 0)]),
    "RecvWR": (lambda w, *a: RecvWR(*a),
               [("wr_id", 1), ("num_sge", 1), ("sg", lambda w: [w.sge()]), ("next_wr", None)]),
    "GID": (lambda w, *a: GID(*a), [("val", "fe80::1")]),
    "GlobalRoute": (lambda w, *a: AH(w.pd, attr=AHAttr(is_global=1, gr=GlobalRoute(*a))),
                    [("dgid", lambda w: w.gid), ("flow_label", 0), ("sgid_index", GID_INDEX),
                     ("hop_limit", 1), ("traffic_class", 0)]),
    "AHAttr": (lambda w, *a: AH(w.pd, attr=AHAttr(*a)),
               [("dlid", 0), ("sl", 0), ("src_path_bits", 0), ("static_rate", 0), ("is_global", 1),
                ("port_num", 1), ("gr", lambda w: GlobalRoute(w.gid, sgid_index=GID_INDEX))]),
    "AH fields": (_ah_fields, [("port_num", 1), ("sgid_index", GID_INDEX), ("dgid", lambda w: w.gid)]),
    "AH": (lambda w, pd: AH(pd, attr=w.ah_attr()), [("pd", lambda w: w.pd)]),
    "AddrInfo": (lambda w, *a: AddrInfo(*a),
                 [("src", "127.0.0.1"), ("dst", "127.0.0.1"), ("src_service", "7471"),
                  ("dst_service", "7471"), ("port_space", 0), ("flags", 0)]),
    "ConnParam": (_cm_conn_param, [("resources", 1), ("depth", 1), ("flow_control", 0), ("retry", 5),
                                   ("rnr_retry", 5), ("srq", 0), ("qp_num", 0), ("data_len", 4)]),
    "set_private_data": (lambda w, *a: ConnParam(data_len=4).set_private_data(*a), [("data", b"ab")]),
    "CMID": (lambda w, *a: CMID(*a).close(), [("creator", lambda w: w.cm_channel)]),
    "cmid.bind_addr": (lambda w, *a: w.cmid.bind_addr(*a),
                       [("lai", lambda w: AddrInfo(src="127.0.0.1", dst="127.0.0.1"))]),
    "cmid.resolve_addr": (lambda w, *a: w.cmid.resolve_addr(*a),
                          [("rai", lambda w: AddrInfo(dst="127.0.0.1", dst_service="7471")),
                           ("timeout_ms", 2000)]),
    "cmid.listen": (lambda w, *a: w.cmid.listen(*a), [("backlog", 1)]),
    "cmid.connect": (lambda w, *a: w.cmid.connect(*a), [("param", None)]),
    "cmid.accept": (lambda w, *a: w.cmid.accept(*a), [("param", None)]),
    "cmid.reject": (lambda w, *a: w.cmid.reject(*a), [("private_data", None)]),
    "cmid.create_qp": (lambda w, *a: w.cmid.create_qp(*a),
                       [("qp_init", lambda w: QPInitAttr(qp_type=RC))]),
    "cmid.init_qp_attr": (lambda w, *a: w.cmid.init_qp_attr(*a), [("qp_state", e.IBV_QPS_INIT)]),
    "cmid.query_qp": (lambda w, *a: w.cmid.query_qp(*a), [("attr_mask", e.IBV_QP_STATE)]),
    "cmid.reg_msgs": (lambda w, *a: w.cmid.reg_msgs(*a), [("size", 64)]),
    "cmid.post_send": (lambda w, *a: w.cmid.post_send(*a), [("mr", lambda w: w.mr)]),
    "cmid.post_recv": (lambda w, *a: w.cmid.post_recv(*a), [("mr", lambda w: w.mr)]),
    "cmid.resolve_route": (lambda w, *a: w.cmid.resolve_route(*a), [("timeout_ms", 2000)]),
    "link_set": (lambda w, *a: link.link_set(*a, ns=f"args-{next(_ns_names)}"),
                 [("link", "shm0/1"), ("state", "up")]),
}
# Positions that take any object (a context the program keeps) are left out.
ANY_OBJECT = {("CQ", 2), ("QPInitAttr", 1), ("QPInitAttrEx", 1)}
CASES = [(name, pos) for name, (_, args) in CALLS.items() for pos in range(len(args))
         if (name, pos) not in ANY_OBJECT]


class Opaque:
    """An object of no kind the API knows."""


def wrong_values(world):
    """Values of the wrong type or out of range; never a small valid int or a
    float, which may rightly be taken."""
    objects = st.sampled_from(world.objects)
    atoms = st.one_of(
        st.none(), st.booleans(), st.text(max_size=4), st.binary(max_size=8),
        st.sampled_from([float("nan"), float("inf"), -1.5, 1e30]),
        st.sampled_from([-1, -(1 << 63), 1 << 64, 1 << 70]),
        st.builds(Opaque), st.just(object), st.complex_numbers(max_magnitude=4), objects,
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
    return st.one_of(atoms, st.lists(atoms, min_size=1, max_size=3), st.tuples(atoms),
                     st.tuples(atoms, atoms, atoms))


@pytest.mark.parametrize("name, position", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_a_wrong_argument_is_a_pyverbs_error(name, position):
    call, spec = CALLS[name]
    argument = spec[position][0]
    worlds = [World()]

    @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        w = worlds[-1]
        args = [g(w) if callable(g) else g for _, g in spec]
        bad = data.draw(wrong_values(w), label="bad")
        # The world's own object in its own place is not wrong (get_cq_event would wait for ever).
        assume(bad is not args[position])
        args[position] = bad
        try:
            call(w, *args)
        except PyverbsUserError as err:
            words = NAMED_BY.get((name, position), (argument.rsplit(".", 1)[-1],))
            assert any(w in str(err) for w in words), f"{name}: {err} does not name {argument}"
        except PyverbsRDMAError as err:
            assert err.error_code in DEVICE_ERRNOS | OTHER_ERRNOS.get(name, set()), \
                f"{name}({argument}={bad!r}): {err}"
        else:
            # Accepted (rightly or not) it may have changed the world: the next example gets a new one.
            worlds.append(World())

    try:
        check()
    finally:
        for w in worlds:
            w.close()


@pytest.mark.parametrize("make, says", [
    (lambda w: _qp_with_cap(w, QPCap(max_send_wr="x")),
     "cap.max_send_wr must be an int from 0 to 4294967295, not str 'x'"),
    (lambda w: SGE("a", 1, 2), "addr must be an int from 0 to 18446744073709551615, not str 'a'"),
    (lambda w: w.cq.poll("x"), "num_entries must be an int"),
    (lambda w: w.ctx.query_gid(1, "x"), "index must be an int"),
    (lambda w: w.a.qp.post_send(RecvWR()), "wr must be a SendWR, not RecvWR"),
    (lambda w: _send_wr_fields(w, 1, "SEND"), "wr.opcode must be an int from 0 to 4294967295, not str"),
    (lambda w: _post_inline_of_length(w, -1), "wr.sg_list[0].length must be an int from 0 to"),
])
def test_what_a_newcomer_passed_is_named(make, says):
    w = World()
    try:
        with pytest.raises(PyverbsUserError) as err:
            make(w)
        assert says in str(err.value)
    finally:
        w.close()

