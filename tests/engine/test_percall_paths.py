"""The per-call hot paths added for issue 12 give the general paths' results and refusals.

Reductions over some axes (engine and namespace), descriptor-only transposes of
the namespace, and the argument memos they use (`layout.ArgMemo`,
`layout.quick_axes`): a memo must never turn a refused argument into an
accepted one.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.layout import ArgMemo, col_major_strides, quick_axes
from tenferro.storage import host


def col(arr: np.ndarray) -> tfr.Tensor:
    return tfr.from_numpy(np.array(arr, order="F"))


def _all_axes(rank: int) -> list[object]:
    singles: list[object] = list(range(-rank, rank))
    groups = [c for r in range(1, rank + 1) for c in itertools.combinations(range(rank), r)]
    return singles + groups


# -- reductions over axes ------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=4), data=st.data())
def test_an_axes_sum_matches_numpy(shape: list[int], data: st.DataObject) -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=2**20)
    x = np.arange(float(np.prod(shape))).reshape(shape) + 0.5
    axes = data.draw(st.sampled_from(_all_axes(len(shape))))
    np.testing.assert_allclose(eng.reduce_sum(col(x), axes).to_numpy(), np.sum(x, axis=axes))
    np.testing.assert_allclose(eng.reduce_prod(col(x), axes).to_numpy(), np.prod(x, axis=axes))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4), (1, 4, 1)])
def test_a_namespace_sum_over_axes_matches_numpy(shape: tuple[int, ...], keepdims: bool) -> None:
    x = np.arange(float(np.prod(shape))).reshape(shape) + 0.25
    t = col(x)
    for axes in _all_axes(len(shape)):
        got = tfr.sum(t, axis=axes, keepdims=keepdims)
        want = np.sum(x, axis=axes, keepdims=keepdims)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want)
        np.testing.assert_allclose(
            np.asarray(tfr.prod(t, axis=axes, keepdims=keepdims)),
            np.prod(x, axis=axes, keepdims=keepdims),
        )


def test_a_namespace_sum_with_keepdims_and_no_axis_keeps_every_axis() -> None:
    x = np.arange(6.0).reshape(2, 3)
    got = tfr.sum(col(x), keepdims=True)
    assert got.shape == (1, 1)
    assert float(got[0, 0]) == 15.0


def test_an_axes_sum_of_f32_stays_f32(eng: tfr.CpuEngine) -> None:
    r = eng.reduce_sum(col(np.ones((2, 3), np.float32)), 1)
    assert r.dtype is tfr.DType.F32


def test_an_axes_sum_of_integers_takes_the_general_path(eng: tfr.CpuEngine) -> None:
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    np.testing.assert_array_equal(eng.reduce_sum(col(x), 0).to_numpy(), x.sum(axis=0))
    assert tfr.sum(col(x.astype(np.int32)), axis=0).dtype is tfr.DType.I64


@pytest.mark.parametrize("axes", [2, -3, (0, 0), (True,), (0.0,)])
def test_bad_axes_are_refused_as_before(eng: tfr.CpuEngine, axes: object) -> None:
    t = col(np.ones((2, 3)))
    with pytest.raises(tfr.TenferroError):
        eng.reduce_sum(t, axes)
    assert not host.reading


def test_an_axes_sum_refuses_a_tensor_being_written(eng: tfr.CpuEngine) -> None:
    t = col(np.ones((2, 3)))
    with t.map_write(), pytest.raises(tfr.BorrowError):
        eng.reduce_sum(t, 0)
    assert not host.reading


def test_an_axes_sum_gives_its_buffer_back_to_the_pool(eng: tfr.CpuEngine) -> None:
    t = col(np.ones((2, 3)))
    eng.reduce_sum(t, 0)
    eng.reduce_sum(t, 0)
    assert eng.buffer_pool_cache_stats().hits >= 1


def test_a_failed_axes_kernel_never_pools_its_operand(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenferro.engine import reduction

    class Failing:
        @staticmethod
        def reduce(*args: object) -> object:
            raise RuntimeError("kernel failed")

    monkeypatch.setitem(reduction._UFUNC, "reduce_sum", Failing)
    t = col(np.ones((2, 3)))
    with pytest.raises(RuntimeError):
        eng.reduce_sum(t, 0)
    assert t._st.recycler is None  # the traceback held its internal array
    assert not host.reading


# -- namespace transposes are descriptor-only views ------------------------------------------
@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_permute_dims_matches_numpy(shape: list[int], data: st.DataObject) -> None:
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = np.arange(float(np.prod(shape))).reshape(shape)
    t = col(x)
    v = tfr.permute_dims(t, perm)
    np.testing.assert_array_equal(np.asarray(v), x.transpose(perm))
    np.testing.assert_array_equal(
        np.asarray(tfr.permute_dims(v, perm)), x.transpose(perm).transpose(perm)
    )


def test_negative_axes_permute_like_numpy() -> None:
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(
        np.asarray(tfr.permute_dims(col(x), (-1, 0, 1))), x.transpose(2, 0, 1)
    )


def test_t_and_mt_are_views_of_the_same_buffer() -> None:
    x = np.arange(6.0).reshape(2, 3)
    t = col(x)
    assert isinstance(t.T, tfr.TensorView)
    np.testing.assert_array_equal(np.asarray(t.T), x.T)
    np.testing.assert_array_equal(
        np.asarray(col(np.arange(24.0).reshape(2, 3, 4)).mT),
        np.arange(24.0).reshape(2, 3, 4).swapaxes(-1, -2),
    )


@pytest.mark.parametrize("axes", [(0, 0), (True, False), (1.0, 0.0), (0,), (0, 1, 2)])
def test_a_bad_permutation_is_refused_even_after_a_good_equal_one(axes: tuple[object, ...]) -> None:
    t = col(np.ones((2, 3)))
    tfr.permute_dims(t, (1, 0))  # remembered
    with pytest.raises(tfr.TenferroError):
        tfr.permute_dims(t, axes)


def test_permute_dims_of_a_tensor_being_written_is_refused() -> None:
    t = col(np.ones((2, 3)))
    with t.map_write(), pytest.raises(tfr.BorrowError):
        tfr.permute_dims(t, (1, 0))


def test_permute_dims_of_a_moved_tensor_is_refused() -> None:
    t = col(np.ones((2, 3)))
    t.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        tfr.permute_dims(t, (1, 0))


# -- the memos -------------------------------------------------------------------------------
def test_an_arg_memo_finds_only_the_very_same_tuple() -> None:
    memo = ArgMemo()
    key = (1, 0)
    memo.put(key, 2, "p")
    assert memo.get(key, 2) == "p"
    assert memo.get(key, 3) is None
    assert memo.get((True, False), 2) is None
    assert memo.get(tuple([1, 0]), 2) is None


def test_an_arg_memo_never_remembers_a_tuple_of_non_ints() -> None:
    memo = ArgMemo()
    key = (np.int64(1), 0)
    memo.put(key, 2, "p")
    assert memo.get(key, 2) is None


def test_an_arg_memo_is_bounded() -> None:
    memo = ArgMemo(max_entries=4)
    keys = [tuple([i]) for i in range(10)]
    for k in keys:
        memo.put(k, 1, k)
    assert len(memo._entries) <= 4


@pytest.mark.parametrize(
    ("axes", "rank", "want"),
    [
        (0, 2, (0,)),
        (-1, 2, (1,)),
        ((1, 0), 2, (0, 1)),
        (2, 2, None),
        ((0, 0), 2, None),
        ((True,), 2, None),
        ([0], 2, None),
        ((), 2, None),
        (1.0, 2, None),
    ],
)
def test_quick_axes_takes_only_plain_valid_axes(axes: object, rank: int, want: object) -> None:
    assert quick_axes(axes, rank) == want


def test_col_major_strides_are_the_same_remembered_or_not() -> None:
    for shape in [(2, 3), (4,), (), (2, 0, 3)]:
        assert col_major_strides(shape) == col_major_strides(list(shape))
        assert col_major_strides(shape) == col_major_strides(shape)


# -- small strided copies are one gather ---------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    data=st.data(),
)
def test_to_contiguous_of_any_small_slice_matches_numpy(
    shape: list[int], data: st.DataObject
) -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=2**20)
    x = np.arange(float(np.prod(shape))).reshape(shape)
    key = tuple(
        slice(
            data.draw(st.integers(-d, d)),
            data.draw(st.integers(-d - 1, d)),
            data.draw(st.sampled_from([1, 2, -1, -2])),
        )
        for d in shape
    )
    view = col(x).as_view().slice_view(key)
    np.testing.assert_array_equal(eng.to_contiguous(view).to_numpy(), x[key])


def test_to_contiguous_of_a_reinterpreted_view_reads_its_dtype(eng: tfr.CpuEngine) -> None:
    z = np.array([1 + 2j, 3 + 4j, 5 + 6j])
    view = col(z).as_view().as_real_view().transpose_view((1, 0))
    np.testing.assert_array_equal(eng.to_contiguous(view).to_numpy(), np.stack([z.real, z.imag]).T)


@pytest.mark.parametrize("side", [2, 4, 22, 23])
def test_a_small_and_a_large_transpose_agree(eng: tfr.CpuEngine, side: int) -> None:
    # 2 * 22 * 22 = 968 elements take the gather, 2 * 23 * 23 = 1058 the strided copy.
    x = np.arange(float(side * side * 2)).reshape(side, side, 2)
    for perm in itertools.permutations(range(3)):
        np.testing.assert_array_equal(eng.transpose(col(x), perm).to_numpy(), x.transpose(perm))


def test_the_small_transpose_hot_path_pins_its_tensor(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from tenferro.engine import pool

    started, release = threading.Event(), threading.Event()
    acquire = pool.BufferPool.acquire

    def waiting_acquire(self: pool.BufferPool, *args: object) -> object:
        # The hot path takes its output while the operand is pinned.
        started.set()
        assert release.wait(30.0)
        return acquire(self, *args)  # type: ignore[arg-type]

    x = np.arange(6.0).reshape(2, 3)
    a = col(x)
    monkeypatch.setattr(pool.BufferPool, "acquire", waiting_acquire)
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(eng.transpose(a, (1, 0))))
    thread.start()
    try:
        assert started.wait(30.0)
        with pytest.raises(tfr.BorrowError) as err:
            a.map_write()
        assert err.value.kind == "IN_USE"
    finally:
        release.set()
        thread.join(30.0)
    np.testing.assert_array_equal(result[0].to_numpy(), x.T)  # type: ignore[attr-defined]
    assert not host.reading


# -- view transforms -----------------------------------------------------------------------
def test_reshape_view_refusals_survive_a_remembered_shape() -> None:
    t = col(np.arange(6.0).reshape(2, 3))
    shape = (6,)
    np.testing.assert_array_equal(
        np.asarray(t.as_view().reshape_view(shape)),
        np.arange(6.0).reshape(2, 3).reshape(-1, order="F"),
    )
    strided = t.as_view().transpose_view((1, 0))
    with pytest.raises(tfr.ValidationError) as err:
        strided.reshape_view(shape)  # remembered shape, non-compact view
    assert err.value.kind == "NOT_CONTIGUOUS"
    with pytest.raises(tfr.ValidationError) as err:
        col(np.arange(4.0)).as_view().reshape_view(shape)  # remembered shape, other size
    assert err.value.kind == "LENGTH_MISMATCH"
    assert t.as_view().reshape_view((1, 6)).shape == (1, 6)  # remembered
    with pytest.raises(tfr.ValidationError):
        t.as_view().reshape_view((True, 6))  # equals (1, 6), but a bool is no size
    with pytest.raises(tfr.ValidationError):
        t.as_view().reshape_view((1.0, 6))


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_slice_view_matches_numpy(shape: list[int], data: st.DataObject) -> None:
    x = np.arange(float(np.prod(shape))).reshape(shape)
    entries = []
    for d in shape:
        if data.draw(st.booleans()):
            entries.append(data.draw(st.integers(-d, d - 1)))
        else:
            entries.append(
                slice(
                    data.draw(st.none() | st.integers(-d - 1, d + 1)),
                    data.draw(st.none() | st.integers(-d - 1, d + 1)),
                    data.draw(st.none() | st.sampled_from([1, 2, -1, -3])),
                )
            )
    cut = data.draw(st.integers(0, len(entries)))
    key = tuple(entries[:cut])
    if data.draw(st.booleans()):
        key = (*key, Ellipsis)
    np.testing.assert_array_equal(np.asarray(col(x).as_view().slice_view(key)), x[key])


@pytest.mark.parametrize(
    "key",
    [(True,), (0.0,), (slice(0, 1, 0),), (Ellipsis, Ellipsis), (0, 0, 0), (5,), (slice(0.5, 1),)],
)
def test_slice_view_refuses_bad_keys(key: tuple[object, ...]) -> None:
    with pytest.raises(tfr.TenferroError):
        col(np.ones((2, 3))).as_view().slice_view(key)


@pytest.mark.parametrize("perm", [(True, False), (1.0, 0.0), (1, 1), (0,)])
def test_a_bad_transpose_perm_is_refused_after_an_equal_good_one(
    eng: tfr.CpuEngine, perm: tuple[object, ...]
) -> None:
    t = col(np.ones((2, 3)))
    eng.transpose(t, (1, 0))  # planned and remembered
    with pytest.raises(tfr.ValidationError):
        eng.transpose(t, perm)
    assert not host.reading


# -- the namespace's scalar hot path ---------------------------------------------------------
_SCALAR_OPS = ["add", "subtract", "multiply", "divide", "pow", "maximum", "less", "equal"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, e.g. (-0.5) ** 0.5
@pytest.mark.parametrize("name", _SCALAR_OPS)
@pytest.mark.parametrize("value", [2.0, -0.5, 3, 2**53, 2**60, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_a_tensor_with_a_python_scalar_matches_the_general_path(
    name: str, value: object, dtype: type
) -> None:
    import tenferro.namespace._elementwise as elementwise

    fn = getattr(tfr, name)
    x = np.array([0.5, 1.5, 2.5, 4.0], dtype=dtype)
    if dtype is np.complex128 and name in ("maximum", "less"):
        return  # not defined for complex (the general path refuses it)
    for args in ((col(x), value), (value, col(x))):
        try:
            want = elementwise.binary(
                f"tenferro.{name}",
                getattr(np, name if name != "pow" else "power"),
                _category(name),
                _rule(name),
                *args,
            )
        except tfr.TenferroError as exc:
            with pytest.raises(type(exc)):
                fn(*args)
            continue
        got = fn(*args)
        assert got.dtype is want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _category(name: str) -> str:
    return {
        "divide": "floating",
        "maximum": "real numeric",
        "less": "real numeric",
        "equal": "any",
    }.get(name, "numeric")


def _rule(name: str) -> str:
    return "bool" if name in ("less", "equal") else "same"


def test_operators_with_scalars_take_the_tensor_dtype() -> None:
    x = col(np.array([1.0, 2.0]))
    assert (x * 2.0).dtype is tfr.DType.F64
    assert (1 - x).to_numpy().tolist() == [0.0, -1.0]
    assert (2.0 / x).to_numpy().tolist() == [2.0, 1.0]
    assert (x < 1.5).to_numpy().tolist() == [True, False]


def test_the_scalar_hot_path_refuses_a_tensor_being_written_and_unpins() -> None:
    x = col(np.array([1.0, 2.0]))
    with x.map_write(), pytest.raises(tfr.BorrowError):
        x * 2.0
    assert not host.reading


# -- the namespace's reshape -----------------------------------------------------------------
def _factorisations(n: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [(n,), (1, n), (n, 1)]
    for a in range(2, n + 1):
        if n % a == 0:
            out.append((a, n // a))
            for b in range(2, n // a + 1):
                if (n // a) % b == 0:
                    out.append((a, b, n // a // b))
    return out


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    data=st.data(),
)
def test_reshape_matches_numpy_and_is_a_view_exactly_when_numpy_needs_no_copy(
    shape: list[int], data: st.DataObject
) -> None:
    x = np.arange(float(np.prod(shape))).reshape(shape)
    t = col(x)
    source: object = t
    ref = x
    kind = data.draw(st.sampled_from(["owner", "transposed", "stepped"]))
    if kind == "transposed":
        perm = tuple(data.draw(st.permutations(range(len(shape)))))
        source = tfr.permute_dims(t, perm)
        ref = x.transpose(perm)
    elif kind == "stepped":
        key = tuple(slice(None, None, data.draw(st.sampled_from([1, 2, -1]))) for _ in shape)
        source = t[key]
        ref = x[key]
    new = data.draw(st.sampled_from(_factorisations(ref.size)))
    if data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(new) - 1))
        new = (*new[:i], -1, *new[i + 1 :])
    got = tfr.reshape(source, new)
    np.testing.assert_array_equal(np.asarray(got), np.reshape(ref, new))
    try:
        np.reshape(np.asarray(source), new, copy=False)  # the tensor's real layout
        numpy_view = True
    except ValueError:
        numpy_view = False
    assert isinstance(got, tfr.TensorView) == numpy_view


def test_reshape_refusals_are_unchanged() -> None:
    t = col(np.arange(6.0).reshape(2, 3))
    with pytest.raises(tfr.ValidationError):
        tfr.reshape(t, (4, 2))
    with pytest.raises(tfr.ValidationError):
        tfr.reshape(t, (-1, -1))
    with pytest.raises(tfr.ValidationError):
        tfr.reshape(t, (6,), copy=False)  # column-major owner: row-major order needs a copy


@pytest.mark.parametrize("shape", [(slice(None),), (2, [3]), ({}, 6)])
def test_reshape_view_refuses_an_unhashable_shape_entry_with_a_typed_error(shape: Any) -> None:
    # Found by the fuzz: the remembered-shape lookup hashed the tuple first, so a
    # slice or a list in it escaped as a raw TypeError.
    view = col(np.arange(6.0).reshape(2, 3)).as_view()
    with pytest.raises(tfr.ValidationError):
        view.reshape_view(shape)
