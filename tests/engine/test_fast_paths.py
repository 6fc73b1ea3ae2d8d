"""The per-call hot paths (unary, full reductions, transpose, to_contiguous of a view)
and the cache-blocked strided copy give the general paths' results and refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.structural import _BLOCK_MIN, _TILE, copy_strided


def col(arr: np.ndarray) -> tfr.Tensor:
    return tfr.from_numpy(np.asfortranarray(arr))


@pytest.mark.parametrize("name", ["neg", "abs", "exp", "log", "sin", "cos", "tanh", "sqrt"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_unary_hot_path_matches_numpy(eng: tfr.CpuEngine, name: str, dtype: type) -> None:
    x = np.random.default_rng(0).random((3, 5)).astype(dtype) + 0.5
    got = getattr(eng, name)(col(x)).to_numpy()
    ufunc = {"neg": np.negative, "abs": np.absolute}.get(name) or getattr(np, name)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ufunc(x))


def test_a_unary_hot_path_gives_its_buffer_back_to_the_pool(eng: tfr.CpuEngine) -> None:
    x = col(np.ones(8))
    eng.exp(x)
    eng.exp(x)
    stats = eng.buffer_pool_cache_stats()
    assert (stats.misses, stats.hits) == (1, 1)


def test_a_unary_hot_path_refuses_a_tensor_being_written(eng: tfr.CpuEngine) -> None:
    x = col(np.ones(4))
    with x.map_write(), pytest.raises(tfr.BorrowError) as err:
        eng.exp(x)
    assert err.value.kind == "EXCLUSIVELY_BORROWED"


def test_abs_of_complex_still_gives_the_real_dtype(eng: tfr.CpuEngine) -> None:
    x = col(np.array([3 + 4j, -1j]))
    got = eng.abs(x)
    assert got.dtype is tfr.DType.F64
    np.testing.assert_array_equal(got.to_numpy(), [5.0, 1.0])


@pytest.mark.parametrize(
    "name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_mean"]
)
def test_a_full_reduction_hot_path_matches_the_general_path(eng: tfr.CpuEngine, name: str) -> None:
    x = np.random.default_rng(1).random((4, 6)) + 0.5
    fast = getattr(eng, name)(col(x))
    general = getattr(eng, name)(col(x), axes=(0, 1))
    assert fast.shape == () and fast.dtype is tfr.DType.F64
    np.testing.assert_allclose(fast.to_numpy(), general.to_numpy(), rtol=1e-12)


def test_a_full_sum_of_f32_stays_f32(eng: tfr.CpuEngine) -> None:
    got = eng.reduce_sum(col(np.ones(10, dtype=np.float32)))
    assert got.dtype is tfr.DType.F32 and got.to_numpy() == 10


def test_a_full_max_propagates_nan(eng: tfr.CpuEngine) -> None:
    assert np.isnan(eng.reduce_max(col(np.array([1.0, np.nan, 3.0]))).to_numpy())


def test_an_empty_full_max_is_still_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.reduce_max(col(np.ones((0, 3))))
    assert err.value.kind == "EMPTY_REDUCTION"


def test_a_full_reduction_takes_a_one_element_buffer(eng: tfr.CpuEngine) -> None:
    eng.reduce_sum(col(np.ones(1000)))
    assert eng.buffer_pool_stats().capacity_bytes == 8


@pytest.mark.parametrize("perm", [(1, 0), (0, 1)])
def test_a_2d_transpose_hot_path_matches_numpy(eng: tfr.CpuEngine, perm: tuple[int, int]) -> None:
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(eng.transpose(col(x), perm).to_numpy(), x.transpose(perm))


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_every_permutation_matches_numpy(shape: list[int], data: st.DataObject) -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=2**20)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = np.arange(float(np.prod(shape))).reshape(shape)
    got = eng.transpose(col(x), perm).to_numpy()
    np.testing.assert_array_equal(got, x.transpose(perm))


def test_a_list_perm_is_accepted_like_a_tuple(eng: tfr.CpuEngine) -> None:
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(eng.transpose(col(x), [1, 0]).to_numpy(), x.T)


def test_a_bad_perm_is_refused_before_anything_is_taken_from_the_pool(
    eng: tfr.CpuEngine,
) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.transpose(col(np.ones((2, 3))), (0, 0))
    assert err.value.kind == "INVALID_AXES"
    assert eng.buffer_pool_cache_stats().misses == 0


def test_to_contiguous_of_a_strided_view_matches_numpy(eng: tfr.CpuEngine) -> None:
    x = np.arange(60.0).reshape(5, 12)
    view = col(x).as_view().slice_view((slice(None, None, -2), slice(1, 11, 3)))
    got = eng.to_contiguous(view).to_numpy()
    np.testing.assert_array_equal(got, x[::-2, 1:11:3])


def test_to_contiguous_of_a_view_is_a_counted_and_forbiddable_copy(eng: tfr.CpuEngine) -> None:
    view = col(np.ones((4, 4))).as_view().transpose_view((1, 0))
    before = tfr.copy_stats()
    eng.to_contiguous(view)
    after = tfr.copy_stats()
    assert (after.copies - before.copies, after.bytes - before.bytes) == (1, 128)
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        eng.to_contiguous(view)
    assert eng.buffer_pool_cache_stats().misses == 1  # the refused copy took no buffer


# -- the cache-blocked copy -------------------------------------------------------------
BIG = 2 * _TILE + 37  # not a multiple of the tile: the edge tiles are partial


@pytest.mark.parametrize(
    ("shape", "perm"),
    [
        ((BIG, _BLOCK_MIN // BIG + 5), (1, 0)),
        ((BIG, 40, 70), (2, 0, 1)),
        ((BIG, 40, 70), (1, 2, 0)),
        ((30, BIG, 3, 35), (3, 1, 0, 2)),
    ],
)
def test_a_blocked_transpose_matches_numpy(
    eng: tfr.CpuEngine, shape: tuple[int, ...], perm: tuple[int, ...]
) -> None:
    x = np.random.default_rng(2).random(shape)
    assert x.size >= _BLOCK_MIN
    np.testing.assert_array_equal(eng.transpose(col(x), perm).to_numpy(), x.transpose(perm))


def test_a_blocked_copy_of_a_negative_stride_view_matches_numpy(eng: tfr.CpuEngine) -> None:
    x = np.random.default_rng(3).random((BIG * 2, 900))
    view = col(x).as_view().transpose_view((1, 0)).slice_view((slice(None, None, -1),))
    got = eng.to_contiguous(view).to_numpy()
    np.testing.assert_array_equal(got, x.T[::-1])


def test_copy_strided_writes_every_element_of_the_destination() -> None:
    src = np.random.default_rng(4).random((BIG, 3000)).T
    dst = np.full(src.shape, np.nan, order="F")
    copy_strided(dst, src)
    np.testing.assert_array_equal(dst, src)


# -- evaluate: the small path and backend="auto" --------------------------------------
def test_a_small_expression_matches_numpy_and_recycles(eng: tfr.CpuEngine) -> None:
    rng = np.random.default_rng(5)
    a, b, c = (rng.random(100) for _ in range(3))
    ta, tb, tc = col(a.copy()), col(b.copy()), col(c.copy())
    got = eng.evaluate("(a * b + c) * a - b", a=ta, b=tb, c=tc)
    np.testing.assert_allclose(got.to_numpy(), (a * b + c) * a - b, rtol=1e-15)
    del got
    before = eng.buffer_pool_cache_stats().misses
    eng.evaluate("(a * b + c) * a - b", a=ta, b=tb, c=tc)
    assert eng.buffer_pool_cache_stats().misses == before  # output and registers reused


def test_plain_operands_below_small_run_whole_without_tiles(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenferro.engine import fusion

    def no_tiles(*args: object) -> None:
        raise AssertionError("the whole-array path must not tile")

    monkeypatch.setattr(fusion, "_run_tiles", no_tiles)
    rng = np.random.default_rng(7)
    a, b = rng.random(fusion.SMALL - 1), rng.random(fusion.SMALL - 1)
    got = eng.evaluate("exp(a - b) * a", a=col(a.copy()), b=col(b.copy()))
    np.testing.assert_allclose(got.to_numpy(), np.exp(a - b) * a, rtol=1e-15)


def test_a_small_plan_follows_a_change_of_dtype(eng: tfr.CpuEngine) -> None:
    x64 = col(np.array([1.0, 2.0]))
    x32 = col(np.array([1.0, 2.0], dtype=np.float32))
    assert eng.evaluate("x * 2", x=x64).dtype is tfr.DType.F64
    assert eng.evaluate("x * 2", x=x32).dtype is tfr.DType.F32
    assert eng.evaluate("x * 2", x=x64).to_numpy().tolist() == [2.0, 4.0]


def test_a_small_expression_refuses_a_tensor_being_written(eng: tfr.CpuEngine) -> None:
    a = col(np.ones(4))
    with a.map_write(), pytest.raises(tfr.BorrowError):
        eng.evaluate("a * 2", a=a)


def test_auto_gives_large_arithmetic_to_numexpr_and_functions_to_tiles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numexpr

    from tenferro.engine.fusion import AUTO_NUMEXPR_MIN, _choose

    monkeypatch.setattr(numexpr, "get_num_threads", lambda: 2)
    f64 = {"a": tfr.DType.F64, "b": tfr.DType.F64}
    big = (AUTO_NUMEXPR_MIN,)
    assert _choose("(a * b + a) * a - b", f64, big, 2) == "numexpr"
    assert _choose("exp(a + b) * a", f64, big, 2) == "tiled"
    assert _choose("(a * b + a) * a - b", f64, (AUTO_NUMEXPR_MIN - 1,), 2) == "tiled"
    f32 = {"a": tfr.DType.F32, "b": tfr.DType.F32}
    assert _choose("a * b + a", f32, big, 2) == "tiled"  # numexpr takes F64 and C64 only


def test_auto_keeps_tiles_when_numexpr_has_fewer_threads_than_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # numexpr's thread count is process-wide: another engine made with threads=1
    # leaves it at one, where the tiled executor on the engine's two threads wins.
    import numexpr

    from tenferro.engine.fusion import AUTO_NUMEXPR_MIN, _choose

    monkeypatch.setattr(numexpr, "get_num_threads", lambda: 1)
    f64 = {"a": tfr.DType.F64, "b": tfr.DType.F64}
    assert _choose("(a * b + a) * a - b", f64, (AUTO_NUMEXPR_MIN,), 2) == "tiled"
    assert _choose("(a * b + a) * a - b", f64, (AUTO_NUMEXPR_MIN,), 1) == "numexpr"


def test_auto_and_tiled_agree_on_a_large_arithmetic_chain(eng: tfr.CpuEngine) -> None:
    from tenferro.engine.fusion import AUTO_NUMEXPR_MIN

    rng = np.random.default_rng(6)
    a, b = (col(rng.random(AUTO_NUMEXPR_MIN)) for _ in range(2))
    expr = "(a * b + a) * a - b"
    auto = eng.evaluate(expr, a=a, b=b).to_numpy()
    tiled = eng.evaluate(expr, a=a, b=b, backend="tiled").to_numpy()
    np.testing.assert_allclose(auto, tiled, rtol=1e-14)
