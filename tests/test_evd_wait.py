"""Every rule of dat_evd_wait, and the rest of the EVD API (dat_evd_*)."""

import signal
import threading

import pytest

import shmdat
from shmdat import CompletionFlags as CF, EpAttr, EvdFlags, EvdState, EventNumber as E, Return

WAIT = 10_000_000
BOUND = 10.0            # seconds any helper thread may take


class Waiter(threading.Thread):
    """Runs fn() in a thread; .result is its return value or exception."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result = fn, None
        self.start()

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:      # handed to the test
            self.result = e

    def outcome(self):
        self.join(BOUND)
        assert not self.is_alive(), "the waiter did not return"
        return self.result


def until_waiting(evd):
    """Return once a thread owns `evd` by waiting (without taking any of its events)."""
    pause = threading.Event()
    for _ in range(int(BOUND / 0.001)):
        if evd._waiter is not None:
            return
        pause.wait(0.001)
    raise AssertionError("no thread started waiting")


@pytest.fixture
def sw(ia):
    return ia.evd_create(8, EvdFlags.SOFTWARE)


def test_threshold_out_of_range_is_invalid_parameter(sw):
    for threshold in (0, -1, 9):
        with pytest.raises(shmdat.InvalidParameter) as e:
            sw.wait(0, threshold)
        assert e.value.code == Return.INVALID_PARAMETER


@pytest.mark.parametrize("attr", [EpAttr(recv_completion_flags=CF.SOLICITED_WAIT),
                                  EpAttr(recv_completion_flags=CF.UNSIGNALLED),
                                  EpAttr(request_completion_flags=CF.UNSIGNALLED)])
def test_threshold_above_one_on_a_notification_controlled_evd_is_invalid_state(ia, attr):
    pz = ia.pz_create()
    dto = ia.evd_create(8, EvdFlags.DTO)
    ep = ia.ep_create(pz, dto, dto, None, attr)
    with pytest.raises(shmdat.InvalidState) as e:
        dto.wait(0, threshold=2)
    assert e.value.code == Return.INVALID_STATE
    ep.free()
    with pytest.raises(shmdat.TimeoutExpired):   # without the stream, threshold 2 is fine
        dto.wait(0, threshold=2)


def test_nmore_is_what_is_left_at_least_threshold_minus_one(sw):
    for i in range(5):
        sw.post_se(i)
    event, nmore = sw.wait(WAIT, threshold=3)
    assert event.data.pointer == 0 and nmore == 4 >= 3 - 1


def test_timeout_carries_nmore_and_dequeues_nothing(sw):
    sw.post_se("only one")
    with pytest.raises(shmdat.TimeoutExpired) as e:
        sw.wait(1_000, threshold=2)
    assert e.value.code == Return.TIMEOUT_EXPIRED and e.value.nmore == 1
    assert sw.dequeue().data.pointer == "only one"


def test_timeout_zero_polls(sw):
    with pytest.raises(shmdat.TimeoutExpired):
        sw.wait(0)
    sw.post_se("x")
    assert sw.wait(0)[0].data.pointer == "x"


def test_one_waiter_owns_the_evd(sw):
    w = Waiter(lambda: sw.wait(WAIT))
    until_waiting(sw)
    with pytest.raises(shmdat.InvalidState) as e:
        sw.wait(0)
    assert e.value.code == Return.INVALID_STATE
    with pytest.raises(shmdat.InvalidState):
        sw.dequeue()
    with pytest.raises(shmdat.InvalidState) as e:
        sw.resize(4)                                # the waiter's threshold was checked against qlen
    assert e.value.subtype == "INVALID_STATE_EVD_WAITER"
    sw.post_se("for the waiter")
    event, _ = w.outcome()
    assert event.data.pointer == "for the waiter"


def test_unwaitable(sw):
    sw.set_unwaitable()
    with pytest.raises(shmdat.InvalidState):
        sw.wait(WAIT)                               # at once, not after the timeout
    assert sw.query().evd_state == EvdState.UNWAITABLE
    sw.post_se("still dequeued")
    assert sw.dequeue().data.pointer == "still dequeued"
    sw.clear_unwaitable()
    w = Waiter(lambda: sw.wait(WAIT))
    until_waiting(sw)
    sw.set_unwaitable()                             # wakes the blocked waiter
    assert isinstance(w.outcome(), shmdat.InvalidState)
    sw.clear_unwaitable()
    sw.post_se("waitable again")
    assert sw.wait(0)[0].data.pointer == "waitable again"


def test_abort_when_the_evd_is_freed_under_a_waiter(sw):
    w = Waiter(lambda: sw.wait(WAIT))
    until_waiting(sw)
    sw.free()
    result = w.outcome()
    assert isinstance(result, shmdat.Abort) and result.code == Return.ABORT


def test_abort_when_the_ia_is_closed_under_a_waiter():
    ia = shmdat.ia_open()
    evd = ia.evd_create(4, EvdFlags.SOFTWARE)
    w = Waiter(lambda: evd.wait(WAIT))
    until_waiting(evd)
    ia.close()
    assert isinstance(w.outcome(), shmdat.Abort)


def _free(ia, evd):
    evd.free()


def _make_unwaitable(ia, evd):
    evd.set_unwaitable()


def _close_ia(ia, evd):
    ia.close()


@pytest.mark.parametrize("end, raised", [(_free, shmdat.Abort), (_make_unwaitable, shmdat.InvalidState),
                                         (_close_ia, shmdat.Abort)])
def test_a_waiter_still_spinning_leaves_when_its_evd_ends(end, raised):
    # The spin looks at ready() only after a round that woke something: freeing the EVD,
    # closing its IA or making it unwaitable must count as such a round. The spin is made
    # long (the engine's spin_seconds, SHMDAT_SPIN_US's value) so that the waiter is still
    # spinning, not asleep, when it ends; the wait itself has no timeout.
    ia = shmdat.ia_open()
    try:
        ia._engine.spin_seconds = 3600.0
        evd = ia.evd_create(4, EvdFlags.SOFTWARE)
        w = Waiter(lambda: evd.wait(shmdat.TIMEOUT_INFINITE))
        until_waiting(evd)
        end(ia, evd)
        assert isinstance(w.outcome(), raised)
    finally:
        if not ia._freed:
            ia.close()


def _interrupt_main_until(done):
    """Signal the main thread every few ms until `done`: one lands while it sleeps."""
    main = threading.main_thread().ident
    while not done.wait(0.005):
        signal.pthread_kill(main, signal.SIGUSR1)


def test_a_signal_interrupts_the_wait_with_nmore(sw):
    sw.post_se("queued")                            # below the threshold: the wait blocks
    handled = []
    old = signal.signal(signal.SIGUSR1, lambda *a: handled.append(1))
    done = threading.Event()
    try:
        def interrupt():
            until_waiting(sw)
            _interrupt_main_until(done)
        t = threading.Thread(target=interrupt, daemon=True)
        t.start()
        with pytest.raises(shmdat.InterruptedCall) as e:
            sw.wait(WAIT, threshold=2)
    finally:
        done.set()
        signal.signal(signal.SIGUSR1, old)
    t.join(BOUND)
    assert e.value.code == Return.INTERRUPTED_CALL and e.value.nmore == 1 and handled
    assert sw.dequeue().data.pointer == "queued"    # nothing was taken


def test_a_cno_is_not_triggered_while_a_waiter_is_blocked(ia):
    cno = ia.cno_create()
    evd = ia.evd_create(4, EvdFlags.SOFTWARE, cno)
    w = Waiter(lambda: evd.wait(WAIT))
    until_waiting(evd)
    evd.post_se("to the waiter")
    assert w.outcome()[0].data.pointer == "to the waiter"
    with pytest.raises(shmdat.TimeoutExpired):
        cno.wait(0)
    evd.post_se("nobody waits")                     # now it triggers
    assert cno.wait(0) is evd
    evd.free()
    cno.free()


def test_events_of_a_stream_come_out_in_order(ia):
    evd = ia.evd_create(1000, EvdFlags.SOFTWARE)
    for i in range(1000):
        evd.post_se(i)
    assert [evd.wait(0)[0].data.pointer if i % 2 else evd.dequeue().data.pointer
            for i in range(1000)] == list(range(1000))


# The rest of dat_evd_*

def test_dequeue_of_an_empty_evd_is_queue_empty(sw):
    with pytest.raises(shmdat.QueueEmpty) as e:
        sw.dequeue()
    assert e.value.code == Return.QUEUE_EMPTY


def test_resize_loses_nothing_and_refuses_below_the_queued(sw):
    for i in range(6):
        sw.post_se(i)
    with pytest.raises(shmdat.InvalidState) as e:
        sw.resize(5)
    assert e.value.code == Return.INVALID_STATE
    sw.resize(6)
    with pytest.raises(shmdat.QueueFull):
        sw.post_se("no room")
    sw.resize(100)
    sw.post_se(6)
    assert sw.query().evd_qlen == 100
    assert [sw.dequeue().data.pointer for _ in range(7)] == list(range(7))


def test_disable_stops_triggering_the_cno_and_enable_resumes(ia):
    cno = ia.cno_create()
    evd = ia.evd_create(4, EvdFlags.SOFTWARE, cno)
    evd.disable()
    assert evd.query().evd_state == EvdState.DISABLED
    evd.post_se("queued, silent")
    with pytest.raises(shmdat.TimeoutExpired):
        cno.wait(0)
    assert evd.dequeue().data.pointer == "queued, silent"
    evd.enable()
    evd.post_se("loud")
    assert cno.wait(0) is evd
    evd.free()
    cno.free()


def test_modify_cno_moves_the_trigger(ia):
    first, second = ia.cno_create(), ia.cno_create()
    evd = ia.evd_create(4, EvdFlags.SOFTWARE, first)
    evd.modify_cno(second)
    assert evd.query().cno is second
    evd.post_se(1)
    with pytest.raises(shmdat.TimeoutExpired):
        first.wait(0)
    assert second.wait(0) is evd
    evd.modify_cno(None)
    evd.post_se(2)
    with pytest.raises(shmdat.TimeoutExpired):
        second.wait(0)
    with pytest.raises(shmdat.InvalidHandle):
        evd.modify_cno("not a cno")
    evd.free()
    first.free()
    second.free()


def test_overflow_of_a_dto_evd_is_reported_on_the_async_evd(spawn, conn_qual):
    from tests.nodes import Node
    from tests.remote import connect_to_remote
    node = Node(qlen=2)
    try:
        r = connect_to_remote(spawn, node, conn_qual)
        r.post_recv(3, 64)
        for i in range(3):                          # three completions for a queue of two
            node.ep.post_send([node.lmr.triplet(0, 8)], i)
        event = node.ia.async_evd.wait(WAIT)[0]
        assert event.number == E.ASYNC_ERROR_EVD_OVERFLOW and event.data.handle is node.dto
        assert node.dto.query().evd_state == EvdState.OVERFLOWED
        assert [node.dto.dequeue().data.user_cookie for _ in range(2)] == [0, 1]
        assert node.dto.query().evd_state == EvdState.WAITABLE
        r.wait_dtos(3)
        r.finish()
    finally:
        node.close()
