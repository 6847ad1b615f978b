"""Every public entry point refuses a wrong argument with a DatError that names it.

For each call, Hypothesis puts one wrong value (an object of another kind, a
str, a float, None, a tuple of the wrong length, an out-of-range int, ...) in
one argument position and keeps the others good. The call may succeed (some
values are legitimately accepted) or raise a DatError; any other exception is a
bug. An InvalidParameter must also say what it was given.
"""

import asyncio
import itertools
import reprlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import shmdat
from shmdat import EpAttr, EventNumber as E, EvdFlags, MemPriv, RmrTriplet

_quals = itertools.count(1)


class World:
    """One IA holding one of everything, a loopback connection and a pending CR."""

    def __init__(self):
        ia = self.ia = shmdat.ia_open()
        self.pz = ia.pz_create()
        self.dto = ia.evd_create(64, EvdFlags.DTO)
        self.conn = ia.evd_create(16, EvdFlags.CONNECTION)
        self.cr_evd = ia.evd_create(16, EvdFlags.CR)
        self.cno = ia.cno_create()
        self.lmr = ia.lmr_create(self.pz, 4096)
        self.array = np.zeros(64, dtype=np.uint8)
        self.srq = ia.srq_create(self.pz, 8)
        self.rmr = self.pz.rmr_create()
        self.qual = 20_000 + next(_quals) * 3
        ia.psp_create(self.qual, self.cr_evd)
        self.ep = ia.ep_create(self.pz, self.dto, self.dto, self.conn)
        server = ia.ep_create(self.pz, self.dto, self.dto, self.conn)
        self.ep.connect(ia.address, self.qual, 5_000_000)
        self.cr_evd.wait(5_000_000)[0].data.cr.accept(server)
        for _ in range(2):
            assert self.conn.wait(5_000_000)[0].number == E.CONNECTION_EVENT_ESTABLISHED
        self.idle = ia.ep_create(self.pz, self.dto, self.dto, self.conn)     # UNCONNECTED
        asker = ia.ep_create(self.pz, self.dto, self.dto, self.conn)
        asker.connect(ia.address, self.qual, 5_000_000)
        self.cr = self.cr_evd.wait(5_000_000)[0].data.cr                      # left pending

    def close(self):
        self.ia.close()


def _wait_async(evd, *args):
    return asyncio.run(evd.wait_async(*args))


def _cno_wait_async(cno, *args):
    return asyncio.run(cno.wait_async(*args))


# call name -> (function of (world, *args), the good arguments as functions of the world)
CALLS = {
    "ia_open": (lambda w, *a: shmdat.ia_open(*a).close(), ["shm0", 8]),
    "ia.close": (lambda w, *a: w.ia.close(*a), [shmdat.CloseFlags.GRACEFUL]),
    "ia.evd_create": (lambda w, *a: w.ia.evd_create(*a), [8, EvdFlags.DTO, lambda w: w.cno]),
    "ia.lmr_create": (lambda w, *a: w.ia.lmr_create(*a),
                      [lambda w: w.pz, 64, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE]),
    "ia.lmr_create(array)": (lambda w, *a: w.ia.lmr_create(*a), [lambda w: w.pz, lambda w: w.array]),
    "ia.psp_create": (lambda w, *a: w.ia.psp_create(*a),
                      [lambda w: w.qual + 1, lambda w: w.cr_evd, shmdat.PspFlags.CONSUMER]),
    "ia.psp_create_any": (lambda w, *a: w.ia.psp_create_any(*a),
                          [lambda w: w.cr_evd, shmdat.PspFlags.CONSUMER]),
    "ia.rsp_create": (lambda w, *a: w.ia.rsp_create(*a),
                      [lambda w: w.qual + 2, lambda w: w.idle, lambda w: w.cr_evd]),
    "ia.ep_create": (lambda w, *a: w.ia.ep_create(*a),
                     [lambda w: w.pz, lambda w: w.dto, lambda w: w.dto, lambda w: w.conn, EpAttr()]),
    "ia.ep_create_with_srq": (lambda w, *a: w.ia.ep_create_with_srq(*a),
                              [lambda w: w.pz, lambda w: w.dto, lambda w: w.dto, lambda w: w.conn,
                               lambda w: w.srq, EpAttr()]),
    "ia.srq_create": (lambda w, *a: w.ia.srq_create(*a), [lambda w: w.pz, 4, 1, 0]),
    "ep.connect": (lambda w, *a: w.idle.connect(*a),
                   [lambda w: w.ia.address, lambda w: w.qual, 1_000_000, b"pd",
                    shmdat.Qos.BEST_EFFORT, shmdat.ConnectFlags.DEFAULT]),
    "ep.dup_connect": (lambda w, *a: w.idle.dup_connect(*a),
                       [lambda w: w.ep, 1_000_000, b"pd", shmdat.Qos.BEST_EFFORT]),
    "ep.disconnect": (lambda w, *a: w.ep.disconnect(*a), [shmdat.CloseFlags.GRACEFUL]),
    "ep.post_send": (lambda w, *a: w.ep.post_send(*a),
                     [lambda w: [w.lmr.triplet(0, 8)], "cookie", shmdat.CompletionFlags.DEFAULT]),
    "ep.post_recv": (lambda w, *a: w.ep.post_recv(*a),
                     [lambda w: [w.lmr.triplet(0, 8)], "cookie", shmdat.CompletionFlags.DEFAULT]),
    "ep.post_rdma_write": (lambda w, *a: w.ep.post_rdma_write(*a),
                           [lambda w: [w.lmr.triplet(0, 8)], "cookie",
                            lambda w: w.lmr.rmr_triplet(8, 8), shmdat.CompletionFlags.DEFAULT]),
    "ep.post_rdma_read": (lambda w, *a: w.ep.post_rdma_read(*a),
                          [lambda w: [w.lmr.triplet(0, 8)], "cookie",
                           lambda w: w.lmr.rmr_triplet(8, 8), shmdat.CompletionFlags.DEFAULT]),
    "ep.set_watermark": (lambda w, *a: w.ep.set_watermark(*a), [100, 200]),
    "ep.modify(pz)": (lambda w, v: w.idle.modify(pz=v), [lambda w: w.pz]),
    "ep.modify(recv_evd)": (lambda w, v: w.idle.modify(recv_evd=v), [lambda w: w.dto]),
    "ep.modify(max_recv_dtos)": (lambda w, v: w.idle.modify(max_recv_dtos=v), [8]),
    "ep.modify(recv_completion_flags)": (lambda w, v: w.idle.modify(recv_completion_flags=v), [0]),
    "evd.wait": (lambda w, *a: w.dto.wait(*a), [0, 1]),
    "evd.wait_async": (lambda w, *a: _wait_async(w.dto, *a), [0, 1]),
    "evd.resize": (lambda w, *a: w.dto.resize(*a), [32]),
    "evd.modify_cno": (lambda w, *a: w.dto.modify_cno(*a), [lambda w: w.cno]),
    "cno.wait": (lambda w, *a: w.cno.wait(*a), [0]),
    "cno.wait_async": (lambda w, *a: _cno_wait_async(w.cno, *a), [0]),
    "lmr.triplet": (lambda w, *a: w.lmr.triplet(*a), [0, 8]),
    "lmr.rmr_triplet": (lambda w, *a: w.lmr.rmr_triplet(*a), [0, 8]),
    "rmr.bind": (lambda w, *a: w.rmr.bind(*a),
                 [lambda w: w.lmr.triplet(0, 8), MemPriv.REMOTE_READ, lambda w: w.ep, "cookie",
                  shmdat.CompletionFlags.DEFAULT]),
    "srq.post_recv": (lambda w, *a: w.srq.post_recv(*a), [lambda w: [w.lmr.triplet(0, 8)], "cookie"]),
    "srq.resize": (lambda w, *a: w.srq.resize(*a), [8]),
    "srq.set_lw": (lambda w, *a: w.srq.set_lw(*a), [2]),
    "cr.accept": (lambda w, *a: w.cr.accept(*a), [lambda w: w.idle, b"pd"]),
    "cr.reject": (lambda w, *a: w.cr.reject(*a), [b"pd"]),
    "cr.handoff": (lambda w, *a: w.cr.handoff(*a), [lambda w: w.qual]),
    "RmrTriplet.unpack": (lambda w, *a: RmrTriplet.unpack(*a), [bytes(24)]),
}
# Positions that take any object (cookies) are left out.
ANY_OBJECT = {("ep.post_send", 1), ("ep.post_recv", 1), ("ep.post_rdma_write", 1),
              ("ep.post_rdma_read", 1), ("rmr.bind", 3), ("srq.post_recv", 1)}
CASES = [(name, pos) for name, (_, good) in CALLS.items() for pos in range(len(good))
         if (name, pos) not in ANY_OBJECT]


class Opaque:
    """An object of no kind the API knows."""


def wrong_values(world):
    """Values of the wrong type or out of range; never a small valid int, which
    could make a wait block or a call succeed for the wrong reason."""
    handles = st.sampled_from([world.ia, world.pz, world.lmr, world.dto, world.cno, world.srq,
                               world.rmr, world.cr, world.idle])
    atoms = st.one_of(
        st.none(), st.booleans(), st.text(max_size=4), st.binary(max_size=30),
        st.floats(allow_nan=True), st.sampled_from([-1, -(1 << 63), 1 << 64, 1 << 70]),
        st.builds(Opaque), st.just(object), st.complex_numbers(max_magnitude=4), handles,
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
    return st.one_of(atoms, st.lists(atoms, max_size=4), st.tuples(atoms),
                     st.tuples(atoms, atoms), st.tuples(atoms, atoms, atoms, atoms))


def _mentions(message, value, depth=0):
    """Whether an error message says what it was given (the value, its type, or,
    for a container, one of its items)."""
    if value is None and "NULL" in message:
        return True
    if type(value).__name__ in message or reprlib.repr(value) in message or repr(value) in message:
        return True
    if depth < 2 and isinstance(value, (list, tuple, dict)):
        items = value.values() if isinstance(value, dict) else value
        return any(_mentions(message, item, depth + 1) for item in items)
    return False


@pytest.mark.parametrize("name, position", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_a_wrong_argument_is_a_dat_error(name, position):
    call, good = CALLS[name]
    worlds = [World()]

    @settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        w = worlds[-1]
        args = [g(w) if callable(g) and not isinstance(g, type) else g for g in good]
        bad = data.draw(wrong_values(w), label="bad")
        args[position] = bad
        try:
            call(w, *args)
        except shmdat.DatError as e:
            if isinstance(e, shmdat.InvalidParameter):
                assert e.subtype and e.subtype.startswith("INVALID_ARG"), f"{name}: {e} names no argument"
                assert _mentions(str(e), bad), f"{name}: {e} does not say it was given {bad!r}"
        else:
            # Accepted (rightly or not) it may have changed the world: the next example gets a new one.
            worlds.append(World())

    try:
        check()
    finally:
        for w in worlds:
            if not w.ia._freed:
                w.close()


@pytest.fixture
def world():
    w = World()
    yield w
    w.close()


@pytest.mark.parametrize("call, says", [
    (lambda w: w.ep.post_send([(w.lmr, 0, 5)], "c"), "local_iov[0].lmr_context must be an int"),
    (lambda w: w.ep.post_send(w.lmr.triplet(0, 5), "c"), "it is one triplet: pass [triplet]"),
    (lambda w: w.ep.post_send(b"hello", "c"), "local_iov must be a list of LmrTriplet, not bytes b'hello'"),
    (lambda w: w.lmr.triplet("0", 5), "offset must be an int from 0 to 18446744073709551615, not str '0'"),
    (lambda w: w.ep.post_rdma_write([w.lmr.triplet(0, 8)], "c", ("a", "b", "c")),
     "remote_iov.rmr_context must be an int"),
    (lambda w: w.dto.wait(0.5), "timeout must be an int of microseconds"),
    (lambda w: w.dto.wait(1 << 32), "from 0 to TIMEOUT_INFINITE (2**32 - 1), not int 4294967296"),
    (lambda w: w.ia.evd_create(8, "DTO"), "flags must be a combination of EvdFlags, not str 'DTO'"),
    (lambda w: w.idle.connect(w.ia.address, w.qual, 1000, "text"), "private_data must be bytes-like, not str"),
])
def test_what_a_newcomer_passed_is_named(world, call, says):
    with pytest.raises(shmdat.InvalidParameter) as e:
        call(world)
    assert says in str(e.value)


def test_a_handle_of_another_ia_is_invalid_handle(world):
    other = World()
    try:
        for call in (lambda: world.dto.modify_cno(other.cno),
                     lambda: world.ia.psp_create(world.qual + 1, other.cr_evd),
                     lambda: world.ia.ep_create(world.pz, other.dto, world.dto, world.conn),
                     lambda: world.idle.modify(pz=other.pz),
                     lambda: world.idle.modify(connect_evd=other.conn),
                     lambda: world.rmr.bind(world.lmr.triplet(0, 8), MemPriv.REMOTE_READ, other.ep, "c"),
                     lambda: world.ia.rsp_create(world.qual + 2, other.idle, world.cr_evd)):
            with pytest.raises(shmdat.InvalidHandle, match="another IA"):
                call()
    finally:
        other.close()
