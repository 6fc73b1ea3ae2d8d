"""BufferPool policy: best fit, per-dtype shelves, the byte cap, eviction, stats, threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine import BufferPool, BufferPoolCacheStats, BufferPoolStats
from tenferro.engine.pool import (
    CEILING_LIMIT_BYTES,
    DEFAULT_LIMIT_BYTES,
    ENV_LIMIT,
    FLOOR_LIMIT_BYTES,
    SLACK_MIN,
    default_limit_bytes,
    machine_memory_bytes,
)

F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
MIB = 2**20


def filled(pool: BufferPool, *sizes: int, dtype: np.dtype = F64) -> list[int]:
    """Retain fresh buffers of the given sizes; returns their addresses."""
    addrs = []
    for n in sizes:
        buf = np.empty(n, dtype=dtype)
        addrs.append(buf.ctypes.data)
        pool.recycle(buf, 0)
    return addrs


def test_an_empty_pool_reports_no_buffers() -> None:
    assert BufferPool(MIB).stats() == BufferPoolStats(0, 0)


def test_best_fit_hands_out_the_smallest_buffer_at_least_the_request() -> None:
    pool = BufferPool(MIB)
    a200, a300 = filled(pool, 300, 200)[::-1]
    got = pool.acquire(F64, 150)
    assert got.ctypes.data == a200 and len(got) == 200
    assert pool.stats() == BufferPoolStats(1, 300 * 8)
    del a300


def test_an_exact_capacity_is_preferred_over_a_larger_one() -> None:
    pool = BufferPool(MIB)
    addrs = filled(pool, 256, 100)
    assert pool.acquire(F64, 100).ctypes.data == addrs[1]


def test_a_request_larger_than_every_retained_buffer_allocates_a_new_one() -> None:
    pool = BufferPool(MIB)
    (small,) = filled(pool, 10)
    got = pool.acquire(F64, 11)
    assert got.ctypes.data != small and len(got) == 11
    assert pool.cache_stats().misses == 1


def test_a_miss_drops_retained_buffers_beyond_the_live_peak() -> None:
    # The footprint budget: the program's live peak was the 10-element buffer
    # (80 bytes); holding it next to the new 11-element output would exceed that
    # peak by more than 1/16 (no least slack here), so the miss drops it.
    pool = BufferPool(MIB, slack_min=0)
    filled(pool, 10)
    pool.acquire(F64, 11)
    assert pool.stats() == BufferPoolStats(0, 0)
    assert pool.cache_stats().evictions == 1


def test_buffers_within_the_live_peak_survive_a_miss() -> None:
    pool = BufferPool(MIB, slack_min=0)
    held = [pool.acquire(F64, 1000), pool.acquire(F64, 10)]  # live peak 8080 bytes
    pool.recycle(held.pop(), 0)
    pool.recycle(held.pop(), 0)  # 8080 retained, nothing live
    pool.acquire(F64, 20)  # a miss: 160 live + 8080 retained is within 8080 * 17 / 16
    assert pool.stats() == BufferPoolStats(2, 8080)
    pool.acquire(F64, 600)  # 4960 live + 8080 retained is not: the largest goes
    assert pool.stats() == BufferPoolStats(1, 80)


def _check_footprint(pool: BufferPool, steps: list[tuple[bool, int]], least: int) -> None:
    # Drive the pool with takes and releases; after each, live + retained stays
    # within the live peak plus max(1/16 of it, least).
    held: list[np.ndarray] = []
    live_peak = 0
    for take, n in steps:
        if take or not held:
            held.append(pool.acquire(F64, n))
        else:
            pool.recycle(held.pop(n % len(held)), 0)
        live = sum(h.nbytes for h in held)
        live_peak = max(live_peak, live)
        pool.drain_lane()
        slack = max(live_peak // 16, least)
        # 8 bytes: a buffer's capacity rounds the budget to whole elements.
        assert live + pool._bytes <= live_peak + slack + 8 or pool._bytes == 0


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(st.tuples(st.booleans(), st.integers(1, 5000)), min_size=1, max_size=80),
)
def test_live_plus_retained_never_exceeds_the_live_peak_by_more_than_a_16th(
    steps: list[tuple[bool, int]],
) -> None:
    _check_footprint(BufferPool(100 * MIB, slack_min=0), steps, 0)


def _phase_loop(pool: BufferPool) -> None:
    # A peak phase (14 live buffers of 800), one scratch of 4000, then two
    # temporaries of 1900: no phase's request fits another phase's buffers (the 2x
    # fit bound), and their union exceeds the live peak by more than 1/16.
    peak = [pool.acquire(F64, 800) for _ in range(14)]
    while peak:
        pool.recycle(peak.pop(), 0)
    pool.recycle(pool.acquire(F64, 4000), 0)
    pair = [pool.acquire(F64, 1900), pool.acquire(F64, 1900)]
    pool.recycle(pair.pop(), 0)
    pool.recycle(pair.pop(), 0)


def test_a_loop_of_phases_settles_to_the_same_misses_every_iteration() -> None:
    pool = BufferPool(MIB // 2, slack_min=0)  # under 1 MiB: no return lane, only the shelves
    for _ in range(3):
        _phase_loop(pool)
    per_iteration = []
    for _ in range(4):
        misses = pool.cache_stats().misses
        _phase_loop(pool)
        per_iteration.append(pool.cache_stats().misses - misses)
    assert len(set(per_iteration)) == 1


def test_a_phase_loop_needing_more_than_the_budget_is_not_kept_whole() -> None:
    # The budget is the live peak plus 1/16, never raised by sizes asked for again:
    # the loop's union of sizes (11,200 + 4,000 + 3,800 elements) is not retained.
    pool = BufferPool(MIB // 2, slack_min=0)
    for _ in range(5):
        _phase_loop(pool)
    live_peak = 14 * 800 * 8
    assert pool.stats().capacity_bytes <= live_peak + live_peak // 16 + 8
    assert pool.stats().capacity_bytes < (14 * 800 + 4000 + 2 * 1900) * 8


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(st.tuples(st.booleans(), st.integers(1, 50_000)), min_size=1, max_size=80),
)
def test_live_plus_retained_stays_within_the_least_slack_over_a_small_live_peak(
    steps: list[tuple[bool, int]],
) -> None:
    _check_footprint(BufferPool(100 * MIB), steps, SLACK_MIN)


def test_a_phase_loop_of_small_buffers_settles_with_no_misses() -> None:
    # The same loop as above, whose union exceeds its live peak by 60,000 bytes:
    # within the least slack (1 MiB), so every phase's buffers stay.
    pool = BufferPool(MIB // 2)
    for _ in range(2):
        _phase_loop(pool)
    misses = pool.cache_stats().misses
    for _ in range(4):
        _phase_loop(pool)
    assert pool.cache_stats().misses == misses


def test_buffers_of_equal_capacity_come_back_newest_first() -> None:
    pool = BufferPool(MIB)
    first, second = filled(pool, 64, 64)
    assert pool.acquire(F64, 64).ctypes.data == second
    assert pool.acquire(F64, 64).ctypes.data == first


def test_best_fit_never_hands_out_more_than_twice_the_request() -> None:
    pool = BufferPool(MIB)
    held = [pool.acquire(F64, 301) for _ in range(3)]  # a live peak of 3 x 2408 bytes
    pool.recycle(held.pop(), 0)
    pool.recycle(held.pop(), 0)
    got = pool.acquire(F64, 150)  # 301 > 2 * 150: a miss, not a retained 301
    assert len(got) == 150
    assert len(pool.acquire(F64, 151)) == 301  # 301 <= 302: a hit
    assert pool.cache_stats().misses == 4


def test_a_kept_result_never_gets_a_buffer_of_twice_its_size() -> None:
    pool = BufferPool(MIB)
    filled(pool, 300)
    got = pool.acquire(F64, 150, kept=True)  # 300 == 2 * 150: a miss for a kept result
    assert len(got) == 150
    assert len(pool.acquire(F64, 150)) == 300  # scratch still takes it (300 <= 2 * 150)
    assert pool.cache_stats().misses == 1


def test_a_kept_result_still_gets_a_buffer_just_under_twice_its_size() -> None:
    pool = BufferPool(MIB)
    filled(pool, 299)
    assert len(pool.acquire(F64, 150, kept=True)) == 299
    assert pool.cache_stats().misses == 0


def test_a_rank0_result_does_not_strand_a_large_buffer() -> None:
    # The issue-12 case: a sum's one-element output took the pooled 64 MiB buffer,
    # and the next 64 MiB request missed.
    pool = BufferPool(256 * MIB)
    n = 64 * MIB // 8
    (addr,) = filled(pool, n)
    scalar = pool.acquire(F64, 1)
    assert len(scalar) == 1
    assert pool.acquire(F64, n).ctypes.data == addr


@settings(max_examples=60, deadline=None)
@given(
    retained=st.lists(st.integers(1, 4000), max_size=12),
    request=st.integers(1, 4000),
)
def test_every_hit_fits_within_twice_the_request(retained: list[int], request: int) -> None:
    pool = BufferPool(MIB)
    filled(pool, *retained)
    got = pool.acquire(F64, request)
    fitting = [r for r in retained if request <= r <= 2 * request]
    if fitting:
        assert len(got) == min(fitting)
    else:
        assert len(got) == request and pool.cache_stats().misses == 1


def _held_bytes(pool: BufferPool) -> int:
    """Shelves plus the return lane, read without draining the lane."""
    return pool._bytes + sum(a.nbytes for a in list(pool._lane))


@settings(max_examples=40, deadline=None)
@given(
    limit=st.sampled_from([MIB, 3 * MIB, 100 * MIB]),
    steps=st.lists(
        st.tuples(st.booleans(), st.integers(1, 300_000), st.sampled_from([F64, F32])),
        max_size=60,
    ),
)
def test_shelves_and_lane_together_never_exceed_the_cap(
    limit: int, steps: list[tuple[bool, int, np.dtype]]
) -> None:
    pool = BufferPool(limit)
    held: list[np.ndarray] = []
    for take, n, dtype in steps:
        if take or not held:
            held.append(pool.acquire(dtype, n))
        else:
            pool.recycle(held.pop(n % len(held)), 0)
        assert _held_bytes(pool) <= limit


def test_a_full_lane_plus_full_shelves_stay_within_the_cap() -> None:
    pool = BufferPool(MIB)  # lane buffers up to 4 KiB
    filled(pool, *[(MIB - 9 * 4096) // 8])  # the shelves at their share exactly
    filled(pool, *[4096 // 8] * 8)  # eight lane-sized buffers wait in the lane
    assert len(pool._lane) == 8
    assert _held_bytes(pool) <= MIB


def test_shelves_are_separate_per_dtype() -> None:
    pool = BufferPool(MIB)
    held = [pool.acquire(F64, 10_000), pool.acquire(F32, 100)]  # a live peak of 80400
    f32 = held[1].ctypes.data
    while held:
        pool.recycle(held.pop(), 0)
    got = pool.acquire(F64, 100)  # an F64 request never takes the F32 buffer
    assert got.dtype == F64 and got.ctypes.data != f32
    assert pool.stats() == BufferPoolStats(2, 80_400)


def test_a_zero_size_request_never_touches_the_pool() -> None:
    pool = BufferPool(MIB)
    got = pool.acquire(F64, 0)
    assert len(got) == 0
    assert pool.cache_stats() == BufferPoolCacheStats(0, 0, 0, 0, 0, 0)


def test_a_zero_size_buffer_is_never_retained() -> None:
    pool = BufferPool(MIB)
    pool.recycle(np.empty(0), 0)
    assert pool.stats() == BufferPoolStats(0, 0)


def test_an_aliased_buffer_is_refused_and_counted() -> None:
    pool = BufferPool(MIB)
    pool.recycle(np.empty(10), 1)
    assert pool.stats() == BufferPoolStats(0, 0)
    assert pool.cache_stats().refused_aliased == 1


def test_the_default_cap_is_the_machine_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_LIMIT, raising=False)
    assert BufferPool().limit_bytes == DEFAULT_LIMIT_BYTES
    assert default_limit_bytes(machine_memory_bytes()) == DEFAULT_LIMIT_BYTES


def test_the_default_cap_is_a_32nd_of_memory_between_100_mib_and_4_gib() -> None:
    gib = 2**30
    assert default_limit_bytes(24 * gib) == 768 * MIB
    assert default_limit_bytes(gib) == FLOOR_LIMIT_BYTES == 100 * MIB
    assert default_limit_bytes(1024 * gib) == CEILING_LIMIT_BYTES == 4 * gib
    assert default_limit_bytes(None) == 100 * MIB


@pytest.mark.parametrize("memory_gib", [12, 16, 64])
def test_the_default_cap_keeps_a_256_mib_output_on_machines_above_8_gib(
    memory_gib: int,
) -> None:
    # The large-output policy: a loop over 256 MiB outputs is served from the pool.
    # np.empty touches no page, so this costs no memory.
    pool = BufferPool(default_limit_bytes(memory_gib * 2**30))
    big = np.empty(256 * MIB // 8)
    addr = big.ctypes.data
    pool.recycle(big, 0)
    del big
    assert pool.stats() == BufferPoolStats(1, 256 * MIB)
    assert pool.acquire(F64, 256 * MIB // 8).ctypes.data == addr
    assert pool.cache_stats().hits == 1


def test_two_256_mib_outputs_stay_pooled_from_24_gib() -> None:
    pool = BufferPool(default_limit_bytes(24 * 2**30))
    pool.recycle(np.empty(256 * MIB // 8), 0)
    pool.recycle(np.empty(256 * MIB // 8), 0)
    assert pool.stats() == BufferPoolStats(2, 512 * MIB)


def test_the_environment_sets_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_LIMIT, "4096")
    assert BufferPool().limit_bytes == 4096
    assert tfr.CpuEngine().buffer_pool_limit_bytes == 4096


def test_an_environment_value_of_zero_turns_retention_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_LIMIT, "0")
    pool = BufferPool()
    filled(pool, 10)
    assert pool.stats() == BufferPoolStats(0, 0)
    assert pool.cache_stats().evictions == 1


@pytest.mark.parametrize("raw", ["lots", "-5", "1.5", "0x10"])
def test_an_unreadable_environment_value_falls_back_to_the_default(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(ENV_LIMIT, raw)
    with pytest.warns(RuntimeWarning, match=ENV_LIMIT):
        pool = BufferPool()
    assert pool.limit_bytes == DEFAULT_LIMIT_BYTES


def test_the_constructor_cap_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_LIMIT, "0")
    assert tfr.CpuEngine(buffer_limit_bytes=1234).buffer_pool_limit_bytes == 1234


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True, None])
def test_an_invalid_cap_is_a_validation_error(bad: object) -> None:
    pool = BufferPool(MIB)
    with pytest.raises(tfr.ValidationError) as err:
        pool.set_limit_bytes(bad)  # type: ignore[arg-type]
    assert err.value.kind == "INVALID_LIMIT"
    assert pool.limit_bytes == MIB


def test_going_over_the_cap_evicts_the_smallest_buffer_across_dtypes() -> None:
    pool = BufferPool(1000)
    filled(pool, 50, dtype=F32)  # 200 bytes
    filled(pool, 40)  # 320 bytes
    filled(pool, 60)  # 480 bytes: 1000 in all, exactly the cap
    filled(pool, 10)  # +80 -> 1080: the smallest (these 80 bytes) goes
    assert pool.stats() == BufferPoolStats(3, 1000)
    filled(pool, 30)  # +240 -> 1240: the f32 200 goes (1040), then the 240 (800)
    assert pool.stats() == BufferPoolStats(2, 800)
    assert pool.cache_stats().evictions == 3


def test_eviction_removes_the_smallest_first() -> None:
    pool = BufferPool(1000)
    filled(pool, 100)  # 800 bytes
    filled(pool, 20, dtype=F32)  # 80 bytes
    filled(pool, 20)  # 160 bytes -> 1040: the 80-byte f32 buffer goes
    assert pool.stats() == BufferPoolStats(2, 960)
    assert pool.acquire(F32, 1).dtype == F32
    assert pool.cache_stats().misses == 1


def test_a_buffer_larger_than_the_cap_is_evicted_at_once_and_keeps_the_others() -> None:
    pool = BufferPool(1000)
    filled(pool, 10, 20)
    filled(pool, 1000)  # 8000 bytes > cap
    assert pool.stats() == BufferPoolStats(2, 240)
    assert pool.cache_stats().evictions == 1


def test_shrinking_the_cap_evicts_at_once() -> None:
    pool = BufferPool(MIB)
    filled(pool, 10, 20, 30)  # 80 + 160 + 240 bytes
    pool.set_limit_bytes(400)
    assert pool.stats() == BufferPoolStats(2, 400)
    assert pool.limit_bytes == 400


def test_a_zero_cap_retains_nothing() -> None:
    pool = BufferPool(0)
    filled(pool, 1, 2, 3)
    assert pool.stats() == BufferPoolStats(0, 0)


def test_clear_drops_every_buffer_and_counts_one_clear() -> None:
    pool = BufferPool(MIB)
    filled(pool, 10, 20)
    pool.clear()
    assert pool.stats() == BufferPoolStats(0, 0)
    stats = pool.cache_stats()
    assert stats.clears == 1 and stats.evictions == 0 and stats.hits == 0


def test_cache_stats_count_real_hits_misses_and_recycles() -> None:
    pool = BufferPool(MIB)
    a = pool.acquire(F64, 8)  # miss
    pool.recycle(a, 0)
    b = pool.acquire(F64, 8)  # hit
    c = pool.acquire(F64, 8)  # miss
    pool.recycle(b, 0)
    pool.recycle(c, 0)
    stats = pool.cache_stats()
    assert (stats.hits, stats.misses, stats.recycled) == (1, 2, 3)
    assert stats.hit_rate == pytest.approx(1 / 3)


def test_hit_rate_is_one_without_requests() -> None:
    assert BufferPool(MIB).cache_stats().hit_rate == 1.0


def test_many_distinct_sizes_do_not_accumulate_empty_shelf_entries() -> None:
    pool = BufferPool(MIB)
    for n in range(1, 500):
        pool.recycle(pool.acquire(F64, n), 0)
        pool.acquire(F64, n)
    stacks, caps, _ = pool._shelves[F64]
    assert len(caps) == len(stacks) <= 65


def test_concurrent_threads_never_get_the_same_buffer_twice() -> None:
    pool = BufferPool(MIB)
    seen: list[set[int]] = []
    errors: list[str] = []

    def worker() -> None:
        mine: set[int] = set()
        for i in range(300):
            held = [pool.acquire(F64, 16 + (i % 4)) for _ in range(3)]
            addrs = {h.ctypes.data for h in held}
            if len(addrs) != 3:
                errors.append("one buffer handed out twice at once")
            for h in held:
                h[:] = i  # writes would collide if two holders shared memory
            for h in held:
                if not np.all(h[:16] == i):
                    errors.append("another thread wrote into a held buffer")
                pool.recycle(h, 0)
            mine |= addrs
        seen.append(mine)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stats = pool.cache_stats()
    assert stats.hits + stats.misses == 4 * 300 * 3
    # Every buffer allocated is retained at the end unless a miss dropped it.
    assert pool.stats().buffers == stats.misses - stats.evictions


def test_small_releases_wait_in_the_lane_but_stats_always_see_them() -> None:
    pool = BufferPool(MIB)
    filled(pool, 3, 5)
    assert len(pool._lane) == 2
    assert pool.stats() == BufferPoolStats(2, 64)
    assert len(pool._lane) == 0


def test_the_lane_hands_the_newest_exact_fit_straight_back() -> None:
    pool = BufferPool(MIB)
    a = pool.acquire(F64, 16)
    addr = a.ctypes.data
    pool.recycle(a, 0)
    del a
    b = pool.acquire(F64, 16)
    assert b.ctypes.data == addr
    stats = pool.cache_stats()
    assert (stats.hits, stats.misses, stats.recycled) == (1, 1, 1)


def test_a_lane_buffer_of_another_size_still_serves_best_fit() -> None:
    pool = BufferPool(MIB)
    (big,) = filled(pool, 32)
    assert pool.acquire(F64, 20).ctypes.data == big


def test_many_small_releases_drain_the_lane_without_an_acquire() -> None:
    pool = BufferPool(MIB)
    filled(pool, *range(1, 30))
    assert len(pool._lane) <= 9


def test_a_zero_cap_keeps_no_buffer_in_the_lane() -> None:
    pool = BufferPool(0)
    pool.recycle(np.empty(4), 0)
    assert len(pool._lane) == 0
    assert pool.cache_stats().evictions == 1


def test_buffers_above_the_lane_size_are_retained_at_once() -> None:
    pool = BufferPool(100 * MIB)
    pool.recycle(np.empty((2 * MIB) // 8), 0)
    assert len(pool._lane) == 0
    assert pool._bytes == 2 * MIB


def test_a_miss_that_drops_a_mebibyte_hands_free_memory_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.engine import pool as pool_module

    trims: list[int] = []
    monkeypatch.setattr(pool_module, "_trim", lambda: trims.append(1))
    pool = BufferPool(100 * MIB, slack_min=0)
    held = pool.acquire(F64, MIB // 4)  # a 2 MiB live peak
    pool.recycle(held, 0)
    del held
    pool.acquire(F64, 10)  # within the budget: nothing dropped, nothing trimmed
    assert trims == []
    pool.acquire(F64, MIB // 8 - 64)  # too small for it; ~1 MiB live + 2 MiB > the budget
    assert pool.stats().buffers == 0 and trims == [1]
