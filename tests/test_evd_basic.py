"""EVD creation, software events, wait/dequeue basics, query, resize and free."""

import pytest

import shmdat
from shmdat import EventNumber, EvdFlags, Return


def sw_evd(ia, qlen=8):
    return ia.evd_create(qlen, EvdFlags.SOFTWARE)


@pytest.mark.parametrize("qlen", [0, -3, 1 << 30, "4"])
def test_bad_qlen_is_invalid_parameter(ia, qlen):
    with pytest.raises(shmdat.InvalidParameter) as e:
        ia.evd_create(qlen)
    assert e.value.code == Return.INVALID_PARAMETER


@pytest.mark.parametrize("flags", [0, 0x1000, "DTO"])
def test_bad_flags_are_invalid_parameter(ia, flags):
    with pytest.raises(shmdat.InvalidParameter):
        ia.evd_create(4, flags)


def test_post_se_then_wait_and_dequeue(ia):
    evd = sw_evd(ia)
    payload = {"any": "object"}
    evd.post_se(payload)
    evd.post_se(2)
    event, nmore = evd.wait(0)
    assert event.number == EventNumber.SOFTWARE_EVENT
    assert event.evd is evd and event.data.pointer is payload
    assert nmore == 1
    assert evd.dequeue().data.pointer == 2
    with pytest.raises(shmdat.QueueEmpty) as e:
        evd.dequeue()
    assert e.value.code == Return.QUEUE_EMPTY


def test_post_se_needs_software_flag(ia):
    evd = ia.evd_create(4, EvdFlags.DTO)
    with pytest.raises(shmdat.InvalidParameter):
        evd.post_se(1)


def test_post_se_on_full_evd_is_queue_full_without_overflow(ia):
    evd = sw_evd(ia, 2)
    evd.post_se(1)
    evd.post_se(2)
    with pytest.raises(shmdat.QueueFull) as e:
        evd.post_se(3)
    assert e.value.code == Return.QUEUE_FULL
    assert not evd.query().overflowed
    with pytest.raises(shmdat.QueueEmpty):
        ia.async_evd.dequeue()


def test_wait_times_out_with_nmore(ia):
    evd = sw_evd(ia, 8)
    evd.post_se(1)
    with pytest.raises(shmdat.TimeoutExpired) as e:
        evd.wait(20_000, threshold=2)
    assert e.value.code == Return.TIMEOUT_EXPIRED and e.value.nmore == 1
    assert evd.query().evd_count == 1          # nothing was dequeued


def test_wait_threshold_bounds(ia):
    evd = sw_evd(ia, 4)
    for threshold in (0, -1, 5):
        with pytest.raises(shmdat.InvalidParameter):
            evd.wait(0, threshold)


def test_wait_bad_timeout(ia):
    evd = sw_evd(ia)
    with pytest.raises(shmdat.InvalidParameter):
        evd.wait(-1)


def test_query_and_resize(ia):
    cno = ia.cno_create()
    evd = ia.evd_create(4, EvdFlags.SOFTWARE | EvdFlags.DTO, cno)
    p = evd.query()
    assert p.evd_qlen == 4 and p.cno is cno and p.evd_flags == EvdFlags.SOFTWARE | EvdFlags.DTO
    for i in range(3):
        evd.post_se(i)
    evd.resize(16)
    assert evd.query().evd_qlen == 16
    with pytest.raises(shmdat.InvalidState):
        evd.resize(2)
    assert [evd.dequeue().data.pointer for _ in range(3)] == [0, 1, 2]


def test_free_in_use_is_invalid_state(ia):
    pz = ia.pz_create()
    evd = ia.evd_create(4)
    ep = ia.ep_create(pz, evd, None, None)
    with pytest.raises(shmdat.InvalidState) as e:
        evd.free()
    assert e.value.subtype == "INVALID_STATE_EVD_IN_USE"
    ep.free()
    evd.free()
    with pytest.raises(shmdat.InvalidHandle):
        evd.wait(0)


def test_free_cno_in_use_is_invalid_state(ia):
    cno = ia.cno_create()
    evd = ia.evd_create(4, cno=cno)
    with pytest.raises(shmdat.InvalidState):
        cno.free()
    evd.free()
    cno.free()
