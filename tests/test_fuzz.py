"""Random sequences of API calls over a pair of processes (Hypothesis stateful testing).

The test process drives one IA through random calls: create and free objects,
connect (accepted or rejected), post sends, receives and RDMA, wait, dequeue,
disconnect, close and reopen. Its peer is a spawned responder that accepts or
rejects as the private data asks and echoes every message back. Invariants:

- only DatError subclasses come out of the API;
- every posted DTO completes exactly once (flushes included);
- no call blocks past its timeout;
- nothing is left behind in /dev/shm.
"""

import itertools
import os
import time

import numpy as np
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

import shmdat
from shmdat import CloseFlags, EpState, EventNumber as E, EvdFlags, RmrTriplet
from shmdat.hw import shm

SIZES = [0, 1, 63, 4096, 40_000, 300_000]      # 300 KB is larger than a connection's ring
RECV_BYTES = 64 * 1024
SLACK = 2.0                                     # seconds a call may run past its own timeout
STEP = 5.0                                      # seconds for things the peer must answer
MAX_EPS = 3
MAX_POSTED = 6                                  # per EP and direction, so EVDs never overflow


# ----------------------------------------------------------------------------- the peer

def _responder(ch):
    """Accept a CR unless its private data starts with b"R"; echo what arrives; stop when told."""
    ia = shmdat.ia_open()
    pz = ia.pz_create()
    evd = ia.evd_create(4096, EvdFlags.CR | EvdFlags.CONNECTION | EvdFlags.DTO)
    target = ia.lmr_create(pz, 1 << 20)                  # what the test RDMAs into and out of
    recv_area = ia.lmr_create(pz, 128 * RECV_BYTES)
    slots = itertools.cycle(range(128))
    psp = ia.psp_create_any(evd)
    ch.send((ia.address, psp.conn_qual, tuple(target.rmr_triplet())))

    def post_recv(ep):
        offset = next(slots) * RECV_BYTES
        ep.post_recv([recv_area.triplet(offset, RECV_BYTES)], offset)

    while not ch._conn.poll(0):
        try:
            event, _ = evd.wait(20_000)
        except shmdat.TimeoutExpired:
            continue
        data = event.data
        try:
            if event.number == E.CONNECTION_REQUEST_EVENT:
                if data.cr.private_data.startswith(b"R"):
                    data.cr.reject(b"no")
                else:
                    ep = ia.ep_create(pz, evd, evd, evd)
                    for _ in range(4):
                        post_recv(ep)
                    data.cr.accept(ep, b"yes")
            elif event.number in (E.CONNECTION_EVENT_DISCONNECTED, E.CONNECTION_EVENT_BROKEN):
                data.ep.free()
            elif (event.number == E.DTO_COMPLETION_EVENT and data.operation.name == "RECEIVE"
                  and data.status.name == "SUCCESS"):
                post_recv(data.ep)
                data.ep.post_send([recv_area.triplet(data.user_cookie, data.transferred_length)], None)
        except shmdat.DatError:
            pass                # the test side may have gone away meanwhile: that is its right
    ch._conn.recv()
    ia.close()


# ----------------------------------------------------------------------------- the driver

class Pair(RuleBasedStateMachine):
    peer = None                 # (address, conn_qual, RmrTriplet of the peer's target)

    def __init__(self):
        super().__init__()
        self.ia = None
        self.cookies = itertools.count()
        self.open_ia()

    # -- bookkeeping

    def open_ia(self):
        self.ia = shmdat.ia_open()
        self.pz = self.ia.pz_create()
        self.dto = self.ia.evd_create(256, EvdFlags.DTO)
        self.conn = self.ia.evd_create(64, EvdFlags.CONNECTION)
        self.lmr = self.ia.lmr_create(self.pz, 1 << 20)
        self.own = np.zeros(1 << 20, np.uint8)           # consumer memory: messages go through the ring
        self.own_lmr = self.ia.lmr_create(self.pz, self.own)
        self.eps = []                                    # EPs we created and have not freed
        self.posted = {}                                 # cookie -> (ep, "send" | "recv" | "rdma")
        self.done = set()
        self.conn_events = {}                            # EP -> its connection events so far
        self.extras = []                                 # PZs, EVDs, LMRs made by the fuzz

    def call(self, fn, *args, timeout_s=0.0):
        """Run an API call: only DatError may come out, and not later than its timeout."""
        start = time.monotonic()
        try:
            return fn(*args)
        except shmdat.DatError as e:
            assert isinstance(e.code, shmdat.Return), e
            return e
        finally:
            elapsed = time.monotonic() - start
            assert elapsed < timeout_s + SLACK, f"{fn.__qualname__} took {elapsed:.2f} s"

    def take(self, event):
        """Account for one event of the DTO or connection EVD."""
        if event.number == E.DTO_COMPLETION_EVENT:
            cookie = event.data.user_cookie
            assert cookie in self.posted, f"completion for a DTO never posted: {cookie}"
            assert cookie not in self.done, f"DTO {cookie} completed twice"
            self.done.add(cookie)
        else:
            self.conn_events.setdefault(event.data.ep, []).append(event.number)

    def drain(self):
        for evd in (self.dto, self.conn):
            while True:
                try:
                    self.take(evd.dequeue())
                except shmdat.QueueEmpty:
                    break

    def outstanding(self, ep, kind):
        return sum(1 for c, (e, k) in self.posted.items() if e is ep and k == kind and c not in self.done)

    @staticmethod
    def pick(data, candidates):
        """One of `candidates` (None if there are none). The draw is made whatever the
        candidates are: which EPs qualify depends on when completions and connection
        events arrived, and Hypothesis must see the same draws when it replays a run
        (a draw made only sometimes, or a precondition on such state, is its
        FlakyStrategyDefinition)."""
        index = data.draw(st.integers(0, MAX_EPS - 1))
        return candidates[index % len(candidates)] if candidates else None

    def connected(self):
        return [ep for ep in self.eps if ep.state == EpState.CONNECTED]

    def wait_conn_event(self, ep):
        """The next connection event of `ep`; other events met meanwhile are taken."""
        seen = len(self.conn_events.get(ep, ()))
        deadline = time.monotonic() + STEP
        while len(self.conn_events.get(ep, ())) == seen:
            assert time.monotonic() < deadline, f"no connection event within {STEP} s; EP is {ep.state.name}"
            self.drain_dto_only()
            try:
                self.take(self.conn.wait(50_000)[0])
            except shmdat.TimeoutExpired:
                pass
        return self.conn_events[ep][seen]

    def drain_dto_only(self):
        while True:
            try:
                self.take(self.dto.dequeue())
            except shmdat.QueueEmpty:
                return

    # -- rules

    @precondition(lambda self: len(self.eps) < MAX_EPS)
    @rule(reject=st.booleans())
    def connect(self, reject):
        address, conn_qual, _ = self.peer
        ep = self.ia.ep_create(self.pz, self.dto, self.dto, self.conn)
        self.eps.append(ep)
        self.call(ep.connect, address, conn_qual, int(STEP * 1e6), b"R" if reject else b"A")
        number = self.wait_conn_event(ep)
        if reject:
            assert number == E.CONNECTION_EVENT_PEER_REJECTED, number
        else:
            assert number == E.CONNECTION_EVENT_ESTABLISHED, number

    @rule(data=st.data())
    def post_recv(self, data):
        ep = self.pick(data, [ep for ep in self.eps if self.outstanding(ep, "recv") < MAX_POSTED])
        if ep is None:
            return
        cookie = next(self.cookies)
        slot = cookie % 3
        result = self.call(ep.post_recv, [self.own_lmr.triplet(slot * 300_000, 300_000)], cookie)
        if not isinstance(result, shmdat.DatError):
            self.posted[cookie] = (ep, "recv")

    @rule(data=st.data(), size=st.sampled_from(SIZES), shared=st.booleans())
    def post_send(self, data, size, shared):
        ep = self.pick(data, [ep for ep in self.eps if self.outstanding(ep, "send") < MAX_POSTED])
        if ep is None:
            return
        cookie = next(self.cookies)
        lmr = self.lmr if shared else self.own_lmr
        result = self.call(ep.post_send, [lmr.triplet(0, size)], cookie)
        if not isinstance(result, shmdat.DatError):
            self.posted[cookie] = (ep, "send")

    @rule(data=st.data(), write=st.booleans(), size=st.sampled_from([8, 4096, 100_000]),
          out_of_bounds=st.booleans())
    def post_rdma(self, data, write, size, out_of_bounds):
        ep = self.pick(data, [ep for ep in self.eps if self.outstanding(ep, "rdma") < MAX_POSTED])
        if ep is None:
            return
        target = RmrTriplet(*self.peer[2])
        # out of bounds completes with ERR_REMOTE_ACCESS and breaks the connection
        offset = target.segment_length - size // 2 if out_of_bounds else 0
        remote = target._replace(target_address=target.target_address + offset, segment_length=size)
        cookie = next(self.cookies)
        post = ep.post_rdma_write if write else ep.post_rdma_read
        result = self.call(post, [self.lmr.triplet(0, size)], cookie, remote)
        if not isinstance(result, shmdat.DatError):
            self.posted[cookie] = (ep, "rdma")

    @rule(timeout_us=st.sampled_from([0, 1_000, 30_000]), threshold=st.sampled_from([1, 2, 300]))
    def wait(self, timeout_us, threshold):
        result = self.call(self.dto.wait, timeout_us, threshold, timeout_s=timeout_us / 1e6)
        if not isinstance(result, shmdat.DatError):
            self.take(result[0])

    @rule()
    def dequeue(self):
        result = self.call(self.dto.dequeue)
        if not isinstance(result, shmdat.DatError):
            self.take(result)

    @rule(data=st.data(), graceful=st.booleans())
    def disconnect(self, data, graceful):
        ep = self.pick(data, self.connected())
        if ep is None:
            return
        self.call(ep.disconnect, CloseFlags.GRACEFUL if graceful else CloseFlags.ABRUPT)
        assert self.wait_conn_event(ep) in (E.CONNECTION_EVENT_DISCONNECTED, E.CONNECTION_EVENT_BROKEN)

    @rule(data=st.data())
    def free_ep(self, data):
        ep = self.pick(data, self.eps)
        if ep is None:
            return
        result = self.call(ep.free)
        if not isinstance(result, shmdat.DatError):
            self.eps.remove(ep)
            # dat_ep_free flushes what was outstanding: the completions are already queued
            self.drain_dto_only()
            assert self.outstanding(ep, "send") + self.outstanding(ep, "recv") + self.outstanding(ep, "rdma") == 0

    @rule(kind=st.sampled_from(["pz", "evd", "lmr", "cno"]))
    def create(self, kind):
        make = {"pz": self.ia.pz_create, "evd": lambda: self.ia.evd_create(8, EvdFlags.SOFTWARE),
                "lmr": lambda: self.ia.lmr_create(self.pz, 4096), "cno": self.ia.cno_create}[kind]
        result = self.call(make)
        if not isinstance(result, shmdat.DatError):
            self.extras.append(result)

    @precondition(lambda self: self.extras)
    @rule(data=st.data())
    def free_extra(self, data):
        obj = data.draw(st.sampled_from(self.extras))
        if not isinstance(self.call(obj.free), shmdat.DatError):
            self.extras.remove(obj)

    @rule(data=st.data())
    def free_in_use(self, data):
        """The PZ, EVDs and LMR the EPs use cannot be freed while anything uses them."""
        obj = data.draw(st.sampled_from([self.pz, self.dto, self.conn]))
        if self.eps:
            result = self.call(obj.free)
            assert isinstance(result, shmdat.InvalidState), result

    @rule()
    def close_and_reopen(self):
        self.settle()
        self.call(self.ia.close, timeout_s=STEP)
        self.check_nothing_left()
        self.open_ia()

    @rule(graceful=st.booleans())
    def close_with_everything_open(self, graceful):
        """Closing an IA in the middle of everything: its DTOs die with its EVDs, nothing leaks."""
        if graceful and isinstance(self.call(self.ia.close, CloseFlags.GRACEFUL, timeout_s=STEP),
                                   shmdat.DatError):
            self.call(self.ia.close, CloseFlags.ABRUPT, timeout_s=STEP)
        elif not graceful:
            self.call(self.ia.close, CloseFlags.ABRUPT, timeout_s=STEP)
        self.check_nothing_left()
        self.open_ia()

    # -- invariants and the end of each run

    @invariant()
    def no_completion_twice(self):
        assert self.done <= set(self.posted)

    def settle(self):
        """Disconnect everything, then every posted DTO must have completed exactly once."""
        for ep in list(self.eps):
            if ep.state != EpState.CONNECTED:
                continue    # (looked at now: waiting for the last EP's event may have taken its break)
            self.call(ep.disconnect, CloseFlags.ABRUPT)
            assert self.wait_conn_event(ep) in (E.CONNECTION_EVENT_DISCONNECTED, E.CONNECTION_EVENT_BROKEN)
        deadline = time.monotonic() + STEP
        while set(self.posted) - self.done and time.monotonic() < deadline:
            try:
                self.take(self.dto.wait(50_000)[0])
            except shmdat.TimeoutExpired:
                pass
        self.drain()
        missing = {c: k for c, (ep, k) in self.posted.items() if c not in self.done}
        assert not missing, f"DTOs that never completed: {missing}"

    def check_nothing_left(self):
        left = [o["name"] for o in shm.list_objects() if o["pid"] == os.getpid()]
        assert not left, left

    def teardown(self):
        if self.ia is not None:
            try:
                self.settle()
            finally:
                self.ia.close()
            self.check_nothing_left()


def test_random_api_sequences(spawn):
    peer = spawn(_responder)
    Pair.peer = peer.recv()
    try:
        run_state_machine_as_test(Pair, settings=settings(
            max_examples=60, stateful_step_count=30, deadline=None, database=None,
            suppress_health_check=list(HealthCheck)))
    finally:
        peer.send("stop")
    peer.join()
