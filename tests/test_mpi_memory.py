"""shmdat/mpi/memory.py on a real IA: the bounce arena's blocks (powers of two, the last
freed given first, larger free blocks halved, a fresh start when none is in use, None when
full) and the registration cache's bounds (entries, idle bytes; a block in use never
dropped)."""

import numpy as np
import pytest

import shmdat
from shmdat import MemPriv
from shmdat.mpi import memory
from shmdat.mpi.memory import BOUNCE_BYTES, BOUNCE_LIMIT, MIN_BLOCK, BounceArena, RegistrationCache

PRIV = MemPriv.LOCAL_READ | MemPriv.REMOTE_READ


@pytest.fixture
def ia():
    ia = shmdat.ia_open()
    yield ia
    ia.close()


def test_blocks_of_a_power_of_two_the_last_freed_given_first(ia):
    arena = BounceArena(ia, ia.pz_create(), PRIV)
    a = arena.alloc(1)
    b = arena.alloc(MIN_BLOCK + 1)                  # two minimum blocks
    c = arena.alloc(MIN_BLOCK)
    assert (a, b, c) == (0, MIN_BLOCK, 3 * MIN_BLOCK)
    assert len(arena.view) == BOUNCE_BYTES and arena.lmr.rmr_triplet(c, 8).segment_length == 8
    arena.free(a, 1)
    arena.free(c, MIN_BLOCK)
    assert arena.alloc(100) == c                    # the one freed last
    assert arena.alloc(100) == a
    arena.free(a, 100)
    arena.free(b, MIN_BLOCK + 1)
    arena.free(c, 100)                              # none in use: a fresh start
    assert arena.in_use == 0 and arena.alloc(5) == 0


def test_a_full_arena_gives_none_and_halves_larger_free_blocks(ia):
    arena = BounceArena(ia, ia.pz_create(), PRIV)
    big = [arena.alloc(BOUNCE_LIMIT) for _ in range(BOUNCE_BYTES // BOUNCE_LIMIT)]
    assert big == [i * BOUNCE_LIMIT for i in range(len(big))]
    assert arena.alloc(1) is None                   # full
    arena.free(big[1], BOUNCE_LIMIT)
    small = arena.alloc(MIN_BLOCK)                  # a free 8 MiB block halved down
    assert small == big[1]
    assert arena.alloc(BOUNCE_LIMIT) is None        # no whole 8 MiB block is left
    half = arena.alloc(BOUNCE_LIMIT // 2)           # the upper half of what was split
    assert half == big[1] + BOUNCE_LIMIT // 2


def test_the_registration_cache_keeps_what_is_in_use_and_bounds_the_rest(ia, monkeypatch):
    monkeypatch.setattr(memory, "CACHE_ENTRIES", 3)
    cache = RegistrationCache(ia, ia.pz_create())
    arrays = [np.zeros(4096, np.uint8) for _ in range(5)]
    lmrs = [cache.get(memoryview(a), PRIV) for a in arrays]
    assert len(cache.entries) == 5                  # all in use: none dropped
    assert cache.get(memoryview(arrays[0]), PRIV) is lmrs[0]   # a hit
    cache.release(lmrs[0])
    for lmr in lmrs:
        cache.release(lmr)
    assert len(cache.entries) == 3                  # the least recently used idle ones went
    assert cache.get(memoryview(arrays[4]), PRIV) is lmrs[4]
    monkeypatch.setattr(memory, "CACHE_IDLE_BYTES", 4096)
    cache.release(lmrs[4])
    assert sum(key[1] for key in cache.entries) <= 4096
