"""PZs, LMRs (provider and consumer memory), triplets and RMR contexts."""

import numpy as np
import pytest

import shmdat
from shmdat import MemPriv, Return, RmrTriplet


def test_pz_query_and_free(ia):
    pz = ia.pz_create()
    assert pz.query().ia is ia
    pz.free()
    with pytest.raises(shmdat.InvalidHandle):
        pz.free()


def test_pz_in_use_is_invalid_state(ia):
    pz = ia.pz_create()
    lmr = ia.lmr_create(pz, 4096)
    with pytest.raises(shmdat.InvalidState) as e:
        pz.free()
    assert e.value.code == Return.INVALID_STATE and e.value.subtype == "INVALID_STATE_PZ_IN_USE"
    lmr.free()
    pz.free()


def test_provider_lmr_is_a_numpy_view_at_its_address(ia):
    pz = ia.pz_create()
    lmr = ia.lmr_create(pz, 10000)
    buf = lmr.buffer
    assert isinstance(buf, np.ndarray) and buf.dtype == np.uint8 and buf.shape == (10000,)
    assert lmr.registered_size == 10000
    assert lmr.registered_address == buf.ctypes.data
    buf[:] = 7
    assert int(buf.sum()) == 70000
    p = lmr.query()
    assert p.lmr_context == lmr.lmr_context and p.rmr_context == lmr.rmr_context
    assert p.registered_size == 10000 and p.pz is pz and p.mem_priv == MemPriv.ALL


@pytest.mark.parametrize("make", [lambda: np.zeros(4096, dtype=np.float64),
                                  lambda: bytearray(1000),
                                  lambda: memoryview(bytearray(512))])
def test_consumer_memory_lmr(ia, make):
    region = make()
    pz = ia.pz_create()
    lmr = ia.lmr_create(pz, region, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE)
    size = memoryview(region).nbytes
    assert lmr.registered_size == size
    lmr.buffer[:3] = [1, 2, 3]
    assert bytes(memoryview(region).cast("B")[:3]) == b"\x01\x02\x03"
    assert lmr.rmr_context is None


@pytest.mark.parametrize("region", [0, -5, bytearray()])
def test_zero_length_is_refused(ia, region):
    pz = ia.pz_create()
    with pytest.raises(shmdat.InvalidParameter) as e:
        ia.lmr_create(pz, region)
    assert e.value.code == Return.INVALID_PARAMETER


def test_read_only_buffer_with_write_privilege_is_refused(ia):
    pz = ia.pz_create()
    with pytest.raises(shmdat.InvalidParameter):
        ia.lmr_create(pz, b"read only", MemPriv.LOCAL_WRITE)
    lmr = ia.lmr_create(pz, b"read only", MemPriv.LOCAL_READ)
    assert lmr.registered_size == 9


def test_non_buffer_region_is_invalid_parameter(ia):
    with pytest.raises(shmdat.InvalidParameter):
        ia.lmr_create(ia.pz_create(), "not memory")


def test_bad_privileges_are_invalid_parameter(ia):
    with pytest.raises(shmdat.InvalidParameter):
        ia.lmr_create(ia.pz_create(), 64, 0x1000)


def test_bad_pz_is_invalid_handle(ia):
    with pytest.raises(shmdat.InvalidHandle):
        ia.lmr_create("pz", 64)
    with shmdat.ia_open() as other:
        with pytest.raises(shmdat.InvalidHandle):
            ia.lmr_create(other.pz_create(), 64)


def test_triplets(ia):
    lmr = ia.lmr_create(ia.pz_create(), 4096)
    t = lmr.triplet()
    assert t == (lmr.lmr_context, lmr.registered_address, 4096)
    assert lmr.triplet(100, 10) == (lmr.lmr_context, lmr.registered_address + 100, 10)
    r = lmr.rmr_triplet(8, 16)
    assert r == RmrTriplet(lmr.rmr_context, lmr.registered_address + 8, 16)
    with pytest.raises(shmdat.InvalidParameter):
        lmr.triplet(4000, 100)
    with pytest.raises(shmdat.InvalidParameter):
        lmr.triplet(-1)


def test_rmr_triplet_needs_remote_privileges(ia):
    lmr = ia.lmr_create(ia.pz_create(), 64, MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE)
    assert lmr.rmr_context is None
    with pytest.raises(shmdat.PrivilegesViolation) as e:
        lmr.rmr_triplet()
    assert e.value.code == Return.PRIVILEGES_VIOLATION


def test_rmr_triplet_pack_round_trip():
    t = RmrTriplet(0xDEADBEEF12345678, 0x7F0012345000, 4096)
    data = t.pack()
    assert len(data) == 24 and RmrTriplet.unpack(data) == t
    assert RmrTriplet.unpack(bytearray(data) + b"trailing") == t
    with pytest.raises(shmdat.InvalidParameter):
        RmrTriplet.unpack(b"short")


def test_rmr_contexts_are_random_and_not_reused(ia):
    pz = ia.pz_create()
    seen = set()
    for _ in range(20):
        lmr = ia.lmr_create(pz, 64)
        assert lmr.rmr_context not in seen
        seen.add(lmr.rmr_context)
        lmr.free()
    # not a counter: the key bits above the table index differ widely
    keys = sorted(k >> 16 for k in seen)
    assert len(set(keys)) == 20 and keys[-1] - keys[0] > 1 << 12
    assert all(k < 1 << 32 for k in seen)      # DAT_RMR_CONTEXT and verbs' rkey are 32 bits


def test_freed_lmr(ia):
    lmr = ia.lmr_create(ia.pz_create(), 64)
    lmr.free()
    for call in (lmr.query, lmr.free, lmr.triplet):
        with pytest.raises(shmdat.InvalidHandle):
            call()


def test_max_lmrs_is_enforced(ia, monkeypatch):
    from shmdat.dat import limits
    monkeypatch.setattr(limits, "MAX_LMRS", 3)
    pz = ia.pz_create()
    lmrs = [ia.lmr_create(pz, 64) for _ in range(3)]
    with pytest.raises(shmdat.InsufficientResources) as e:
        ia.lmr_create(pz, 64)
    assert e.value.code == Return.INSUFFICIENT_RESOURCES
    for lmr in lmrs:
        lmr.free()


def test_shm_too_small_is_insufficient_resources_with_sizes(ia):
    from shmdat.hw import shm
    huge = shm.shm_free_bytes() + (1 << 30)
    with pytest.raises(shmdat.InsufficientResources) as e:
        ia.lmr_create(ia.pz_create(), huge)
    assert str(huge) in str(e.value) and "/dev/shm" in str(e.value)


def test_a_freed_lmr_cannot_be_posted_even_after_earlier_posts(ia):
    """Resolved iovs are remembered for speed; freeing the LMR must forget them."""
    pz = ia.pz_create()
    dto = ia.evd_create(8, shmdat.EvdFlags.DTO)
    ep = ia.ep_create(pz, dto, dto, None)
    lmr = ia.lmr_create(pz, 4096)
    iov = [lmr.triplet(0, 64)]
    ep.post_recv(iov, "first")
    ep.post_recv(iov, "second")                  # the remembered resolution
    ep.free()
    lmr.free()
    ep = ia.ep_create(pz, dto, dto, None)
    with pytest.raises(shmdat.PrivilegesViolation) as e:
        ep.post_recv(iov, "after free")
    assert e.value.code == shmdat.Return.PRIVILEGES_VIOLATION


@pytest.mark.parametrize("nbytes", [1, 7, 9, 4095])
def test_a_provider_lmr_of_any_length(ia, nbytes):
    pz = ia.pz_create()
    lmr = ia.lmr_create(pz, nbytes)
    assert lmr.registered_size == nbytes and lmr.buffer.nbytes == nbytes
    lmr.buffer[-1] = 7
    assert lmr.rmr_triplet().segment_length == nbytes
    lmr.free()


@pytest.mark.parametrize("field, value", [(2, True), (2, 8.0), (1, 1.0)])
def test_a_triplet_equal_to_a_posted_one_but_not_of_ints_is_still_refused(ia, field, value):
    """Resolved local_iovs are remembered, and True == 1, 8.0 == 8: a triplet that only
    compares equal to one posted before is checked all the same."""
    pz = ia.pz_create()
    evd = ia.evd_create(8, shmdat.EvdFlags.DTO)
    lmr = ia.lmr_create(pz, 64)
    ep = ia.ep_create(pz, evd, evd, None)
    good = lmr.triplet(0, 1 if value is True else 8)
    ep.post_recv([good], "ints")                     # resolved, and remembered
    bad = list(good)
    bad[field] = type(value)(bad[field])              # equal to the good one, not an int
    with pytest.raises(shmdat.InvalidParameter):
        ep.post_recv([shmdat.LmrTriplet(*bad)], "not ints")
