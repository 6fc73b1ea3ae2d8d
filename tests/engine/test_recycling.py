"""Pooled outputs and recycling: the seed chapter's facts, for all four operation families.

Every fact is shown with pool stats and buffer addresses, as in the seed:
a 64x64 f64 matmul output is 32768 bytes, a reduce_sum over one axis of it 512.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import BufferPoolStats
from tenferro.placement import HOST_PLACEMENT

EMPTY = BufferPoolStats(0, 0)
ONE_64x64 = BufferPoolStats(1, 32768)
Addr = Callable[[tfr.Tensor], int]


@pytest.fixture
def ab(rand: Callable[..., tfr.Tensor]) -> tuple[tfr.Tensor, tfr.Tensor]:
    return rand((64, 64), 1), rand((64, 64), 2)


# -- the main line: matmul output dropped, next matmul gets the block ------------------
def test_a_live_output_keeps_its_buffer_out_of_the_pool(eng: tfr.CpuEngine, ab: tuple) -> None:
    assert eng.buffer_pool_stats() == EMPTY
    first = eng.matmul(*ab)
    assert eng.buffer_pool_stats() == EMPTY
    del first


def test_dropping_a_matmul_output_returns_its_32768_bytes(eng: tfr.CpuEngine, ab: tuple) -> None:
    first = eng.matmul(*ab)
    del first
    assert eng.buffer_pool_stats() == ONE_64x64


def test_the_next_matmul_gets_the_dropped_block(eng: tfr.CpuEngine, ab: tuple, addr: Addr) -> None:
    first = eng.matmul(*ab)
    p1 = addr(first)
    del first
    second = eng.matmul(*ab)
    assert addr(second) == p1
    assert eng.buffer_pool_stats() == EMPTY


def test_while_the_second_output_lives_the_third_gets_a_new_block(
    eng: tfr.CpuEngine, ab: tuple, addr: Addr
) -> None:
    second = eng.matmul(*ab)
    third = eng.matmul(*ab)
    assert addr(third) != addr(second)


def test_control_a_plain_allocation_after_the_drop_does_not_get_the_pooled_block(
    eng: tfr.CpuEngine, ab: tuple, addr: Addr
) -> None:
    first = eng.matmul(*ab)
    p1 = addr(first)
    del first
    unrelated = np.empty(64 * 64)  # same size as the freed block
    assert unrelated.ctypes.data != p1
    nxt = eng.matmul(*ab)
    assert addr(nxt) == p1


def test_output_values_are_the_product(eng: tfr.CpuEngine, ab: tuple) -> None:
    a, b = ab
    np.testing.assert_allclose(eng.matmul(a, b).to_numpy(), a.to_numpy() @ b.to_numpy())


def test_output_placement_is_plain_host_without_cpu_affinity(eng: tfr.CpuEngine, ab: tuple) -> None:
    out = eng.matmul(*ab)
    assert out.placement == HOST_PLACEMENT
    assert out.placement.cpu_affinity is None
    assert (out.allocation_domain, out.allocation_id) == (None, None)


# -- the other families ---------------------------------------------------------------
def test_an_add_output_returns_and_exp_reuses_its_block(
    eng: tfr.CpuEngine, ab: tuple, addr: Addr
) -> None:
    a, b = ab
    s = eng.add(a, b)
    p = addr(s)
    del s
    assert eng.buffer_pool_stats() == ONE_64x64
    e = eng.exp(a)
    assert addr(e) == p


def test_a_reduce_sum_output_returns_512_bytes(eng: tfr.CpuEngine, ab: tuple) -> None:
    r = eng.reduce_sum(ab[0], (0,))
    del r
    assert eng.buffer_pool_stats() == BufferPoolStats(1, 512)


def test_a_transpose_output_returns_32768_bytes(eng: tfr.CpuEngine, ab: tuple) -> None:
    t = eng.transpose(ab[0], (1, 0))
    del t
    assert eng.buffer_pool_stats() == ONE_64x64


def test_an_einsum_output_returns_and_its_intermediates_went_back_already(
    eng: tfr.CpuEngine, ab: tuple
) -> None:
    a, b = ab
    out = eng.einsum("ij,jk,kl->il", a, b, a)
    # One 64x64 intermediate went back as soon as the last step consumed it.
    assert eng.buffer_pool_stats() == ONE_64x64
    del out
    assert eng.buffer_pool_stats() == BufferPoolStats(2, 2 * 32768)


def test_an_einsum_output_does_not_take_an_intermediate_of_twice_its_size(
    eng: tfr.CpuEngine, rand: Callable[..., tfr.Tensor]
) -> None:
    # A DMRG environment update: each intermediate [8, 2, 5, 8] is exactly twice the
    # output [8, 5, 8], and the first one is back in the pool when the output is made;
    # the output is kept, so it gets a buffer of its own size (pool.py, kept results).
    env, b, w = rand((8, 5, 8), 1), rand((8, 2, 8), 2), rand((5, 5, 2, 2), 3)
    for _ in range(2):
        out = eng.einsum("xtg,vuts,ysh,guh->xvy", b, w, b, env)
        assert out._st.owner.nbytes == 8 * 5 * 8 * 8
        del out


@pytest.mark.parametrize(
    "family",
    ["contraction", "elementwise", "reduction", "structural", "fusion"],
)
def test_each_family_recycles_its_outputs(
    eng: tfr.CpuEngine, ab: tuple, addr: Addr, family: str
) -> None:
    a, b = ab
    run = {
        "contraction": lambda: eng.matmul(a, b),
        "elementwise": lambda: eng.mul(a, b),
        "reduction": lambda: eng.reduce_max(a, (1,)),
        "structural": lambda: eng.tril(a),
        "fusion": lambda: eng.evaluate("a * b + 1", a=a, b=b),
    }[family]
    out = run()
    p = addr(out)
    del out
    assert eng.buffer_pool_stats().buffers >= 1  # fusion's tile registers come back too
    again = run()
    assert addr(again) == p


# -- a kept alias blocks recycling --------------------------------------------------------
@pytest.mark.parametrize("family", ["contraction", "elementwise", "reduction", "structural"])
def test_a_kept_host_data_array_keeps_the_buffer_out_of_the_pool_and_keeps_its_values(
    eng: tfr.CpuEngine, ab: tuple, addr: Addr, family: str
) -> None:
    a, b = ab
    run = {
        "contraction": lambda: eng.matmul(a, b),
        "elementwise": lambda: eng.add(a, b),
        "reduction": lambda: eng.reduce_sum(a, (0,)),
        "structural": lambda: eng.transpose(a, (1, 0)),
    }[family]
    out = run()
    kept = out.host_data()
    values = kept.copy()
    p = kept.ctypes.data
    del out
    assert eng.buffer_pool_stats() == EMPTY
    assert eng.buffer_pool_cache_stats().refused_aliased == 1
    nxt = run()
    assert addr(nxt) != p
    eng.neg(nxt, out=nxt)  # the engine writes something else meanwhile
    np.testing.assert_array_equal(kept, values)


def test_a_view_kept_alive_also_blocks_recycling(eng: tfr.CpuEngine, ab: tuple) -> None:
    out = eng.matmul(*ab)
    view = out.as_view().slice_view((0, slice(None)))
    del out
    assert eng.buffer_pool_stats() == EMPTY
    assert view.get((3,)) == view.to_numpy()[3]


# -- outputs outliving their engine --------------------------------------------------------
def test_an_output_outlives_its_engine(ab: tuple, addr: Addr) -> None:
    old = tfr.CpuEngine()
    ones = tfr.from_numpy(np.ones((512, 512), order="F"))
    out = old.add(ones, ones)
    p1 = addr(out)
    del old
    gc.collect()
    assert out.with_host_read(lambda s: float(s.sum())) == 2 * 512 * 512
    new = tfr.CpuEngine()
    fresh = new.add(ones, ones)
    assert addr(fresh) != p1
    del fresh
    before = new.buffer_pool_stats()
    del out  # its pool is gone: the buffer is simply freed
    assert new.buffer_pool_stats() == before == BufferPoolStats(1, 512 * 512 * 8)


def test_dropping_an_output_of_a_dead_engine_leaves_a_fresh_pool_empty(ab: tuple) -> None:
    old = tfr.CpuEngine()
    out = old.matmul(*ab)
    del old
    new = tfr.CpuEngine()
    del out
    assert new.buffer_pool_stats() == EMPTY


def test_an_output_does_not_keep_its_engine_alive(ab: tuple) -> None:
    import weakref

    old = tfr.CpuEngine()
    ref = weakref.ref(old)
    out = old.matmul(*ab)
    del old
    gc.collect()
    assert ref() is None
    assert out.shape == (64, 64)


# -- into_vec_col_major and reclaim_buffer --------------------------------------------------
def test_into_vec_col_major_clears_the_link(eng: tfr.CpuEngine, ab: tuple, addr: Addr) -> None:
    out = eng.matmul(*ab)
    p = addr(out)
    shape, vec = out.into_vec_col_major()
    assert shape == (64, 64) and vec.ctypes.data == p and vec.flags.writeable
    del vec
    assert eng.buffer_pool_stats() == EMPTY


def test_reclaim_buffer_moves_the_buffer_into_the_pool_now(
    eng: tfr.CpuEngine, ab: tuple, addr: Addr
) -> None:
    out = eng.matmul(*ab)
    p = addr(out)
    eng.reclaim_buffer(out)
    assert eng.buffer_pool_stats() == ONE_64x64
    assert out.is_moved
    with pytest.raises(tfr.MovedTensorError):
        out.host_data()
    assert addr(eng.matmul(*ab)) == p


def test_reclaim_buffer_does_not_return_the_buffer_twice(eng: tfr.CpuEngine, ab: tuple) -> None:
    out = eng.matmul(*ab)
    eng.reclaim_buffer(out)
    del out
    gc.collect()
    assert eng.buffer_pool_stats() == ONE_64x64


def test_reclaim_buffer_is_refused_while_an_alias_lives(eng: tfr.CpuEngine, ab: tuple) -> None:
    out = eng.matmul(*ab)
    alias = out.host_data()
    with pytest.raises(tfr.BorrowError):
        eng.reclaim_buffer(out)
    assert not out.is_moved
    assert eng.buffer_pool_stats() == EMPTY
    del alias


def test_reclaim_buffer_takes_a_buffer_from_another_engine(ab: tuple, addr: Addr) -> None:
    first, second = tfr.CpuEngine(), tfr.CpuEngine()
    out = first.matmul(*ab)
    p = addr(out)
    second.reclaim_buffer(out)
    assert first.buffer_pool_stats() == EMPTY
    assert addr(second.matmul(*ab)) == p


def test_reclaim_buffer_of_an_adopted_array_nobody_holds(eng: tfr.CpuEngine, addr: Addr) -> None:
    t = tfr.Tensor.from_vec_col_major((4,), np.arange(4.0))
    p = addr(t)
    eng.reclaim_buffer(t)
    assert eng.buffer_pool_stats() == BufferPoolStats(1, 32)
    ones = tfr.from_numpy(np.ones(4))
    assert addr(eng.add(ones, ones)) == p


def test_reclaim_buffer_of_an_adopted_array_the_caller_still_holds_is_refused(
    eng: tfr.CpuEngine,
) -> None:
    data = np.arange(4.0)
    t = tfr.Tensor.from_vec_col_major((4,), data)
    with pytest.raises(tfr.BorrowError) as err:
        eng.reclaim_buffer(t)
    assert err.value.kind == "ADOPTED_STILL_REFERENCED"
    assert not t.is_moved and eng.buffer_pool_stats() == EMPTY


# -- failures drop the buffer: never pooled while a traceback may hold it ---------------------
def test_a_failed_checked_conversion_drops_its_buffer_instead_of_pooling_it(
    eng: tfr.CpuEngine,
) -> None:
    t = tfr.from_numpy(np.array([1.0, 2.5, 3.0, 4.0]))
    with pytest.raises(tfr.ValidationError):
        eng.convert(t, tfr.DType.I64)
    assert eng.buffer_pool_stats() == EMPTY
    assert eng.buffer_pool_cache_stats().misses == 1


def test_a_kernel_that_raises_half_way_drops_its_buffers_instead_of_pooling_them(
    eng: tfr.CpuEngine,
) -> None:
    # Integer division by zero is found tile by tile, after the output was taken.
    n = 200_000
    a = tfr.from_numpy(np.ones(n, dtype=np.int64))
    d = np.ones(n, dtype=np.int64)
    d[-1] = 0
    b = tfr.from_numpy(d)
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a / b", a=a, b=b)
    assert err.value.kind == "DIVISION_BY_ZERO"
    assert eng.buffer_pool_stats() == EMPTY
    ok = eng.evaluate("a / b", a=a, b=tfr.from_numpy(np.ones(n, dtype=np.int64)))
    assert ok.with_host_read(lambda s: int(s.sum())) == n


# -- the steady state ----------------------------------------------------------------------
def test_a_steady_state_loop_allocates_only_on_the_first_iteration(
    eng: tfr.CpuEngine, ab: tuple
) -> None:
    a, b = ab
    for _ in range(50):
        c = eng.matmul(a, b)
        d = eng.add(c, a)
        e = eng.reduce_sum(d, (0,))
        del c, d, e
    stats = eng.buffer_pool_cache_stats()
    assert stats.misses == 3
    assert stats.hits == 50 * 3 - 3


def test_the_tensor_operators_recycle_into_the_default_engine(ab: tuple, addr: Addr) -> None:
    a, b = ab
    with tfr.CpuEngine() as eng:
        c = a @ b + a
        p = addr(c)
        del c
        # The last buffer back (c's) is the first handed out again.
        assert addr(a @ b) == p
        assert eng.buffer_pool_cache_stats().recycled >= 2


def test_reclaim_buffer_refuses_a_group_backed_tensor(eng: tfr.CpuEngine, ab: tuple) -> None:
    promoted = eng.matmul(*ab).promote()
    with pytest.raises(tfr.RuntimeStateError) as err:
        eng.reclaim_buffer(promoted)
    assert err.value.kind == "GROUP_BACKED"
    assert not promoted.is_moved


def test_reclaim_buffer_refusal_of_a_group_backed_tensor_points_to_into_vec_col_major(
    eng: tfr.CpuEngine, ab: tuple
) -> None:
    promoted = eng.matmul(*ab).promote()
    with pytest.raises(tfr.RuntimeStateError) as err:
        eng.reclaim_buffer(promoted)
    assert ("into_vec_col_major()" in err.value.message, "into_host" in err.value.message) == (
        True,
        False,
    )


def test_reclaim_buffer_refusal_advice_for_a_group_backed_tensor_works(
    eng: tfr.CpuEngine, ab: tuple
) -> None:
    promoted = eng.matmul(*ab).promote()
    before = eng.buffer_pool_stats().buffers
    eng.reclaim_buffer(tfr.Tensor.from_vec_col_major(*promoted.into_vec_col_major()))
    assert eng.buffer_pool_stats().buffers == before + 1


def test_reclaim_buffer_refuses_a_non_tensor(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError):
        eng.reclaim_buffer(np.ones(3))  # type: ignore[arg-type]
