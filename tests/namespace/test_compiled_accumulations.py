"""`cumulative_sum`/`cumulative_prod`, `count_nonzero` and `diagonal` through the
engine's compiled protocol (issue 20's quimb row): owners and C-ordered views give
numpy's values in the memory order the general path gives, and refusals stay typed."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr

SHAPES = [(7,), (3, 4), (4, 1), (2, 3, 4), (1, 5, 2)]
FLOATS = [np.float64, np.float32, np.complex128]


def _owner(a: np.ndarray[Any, Any]) -> Any:
    t = tfr.asarray(np.asfortranarray(a))
    assert isinstance(t, tfr.Tensor)
    return t


def _c_view(a: np.ndarray[Any, Any]) -> Any:
    # An array both C- and F-contiguous (a length-one axis) is adopted as an owner.
    return tfr.asarray(np.ascontiguousarray(a))


def _values(shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape).astype(dtype)
    return a


def _layout(r: Any) -> tuple[type, tuple[int, ...]]:
    return type(r), tuple(np.asarray(r).strides) if r.size > 1 else ()


@given(shape=st.sampled_from(SHAPES), dtype=st.sampled_from(FLOATS), data=st.data())
def test_a_running_sum_of_an_owner_or_c_view_matches_numpy_and_the_general_path(
    shape: tuple[int, ...], dtype: Any, data: Any
) -> None:
    a = _values(shape, dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    for x in (_owner(a), _c_view(a)) if len(shape) > 1 else (_owner(a),):
        fast = tfr.cumulative_sum(x, axis=axis)
        general = tfr.cumulative_sum(x, axis=axis, dtype=x.dtype)  # dtype: the general path
        np.testing.assert_allclose(np.asarray(fast), np.cumsum(a, axis=axis), rtol=1e-5)
        assert _layout(fast) == _layout(general)
        assert fast.dtype == x.dtype


@given(shape=st.sampled_from(SHAPES), data=st.data())
def test_a_running_product_of_an_owner_matches_numpy_and_the_general_path(
    shape: tuple[int, ...], data: Any
) -> None:
    a = _values(shape, np.float64)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = _owner(a)
    fast = tfr.cumulative_prod(x, axis=axis)
    general = tfr.cumulative_prod(x, axis=axis, dtype=x.dtype)
    np.testing.assert_allclose(np.asarray(fast), np.cumprod(a, axis=axis))
    assert _layout(fast) == _layout(general)


def test_a_running_sum_that_overflows_gives_inf_without_a_warning_as_the_general_path() -> None:
    x = tfr.asarray(np.array([1e308, 1e308]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = tfr.cumulative_sum(x)
    assert np.asarray(r)[1] == np.inf


def test_a_running_sum_of_an_integer_owner_still_accumulates_in_int64() -> None:
    r = tfr.cumulative_sum(tfr.asarray(np.array([1, 2, 3], dtype=np.int32)))
    assert r.dtype == tfr.int64
    assert np.asarray(r).tolist() == [1, 3, 6]


def test_a_running_sum_with_an_axis_out_of_range_is_refused_with_a_typed_error() -> None:
    with pytest.raises(tfr.IndexOutOfRangeError, match="cumulative_sum"):
        tfr.cumulative_sum(_owner(np.ones((2, 3))), axis=2)
    with pytest.raises(tfr.IndexOutOfRangeError, match="cumulative_sum"):
        tfr.cumulative_sum(_c_view(np.ones((2, 3))), axis=-3)


def test_a_running_sum_of_an_owner_borrowed_for_writing_is_refused() -> None:
    t = _owner(np.ones(4))
    with pytest.raises(tfr.BorrowError), t.map_write():
        tfr.cumulative_sum(t)


def test_a_running_sum_of_a_moved_tensor_is_refused() -> None:
    t = tfr.Tensor.from_vec_col_major((4,), np.ones(4))
    t.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        tfr.cumulative_sum(t)
    with pytest.raises(tfr.MovedTensorError):
        tfr.count_nonzero(t)


@given(
    shape=st.sampled_from(SHAPES),
    axis=st.sampled_from([None, 0, -1, (0,), (0, -1)]),
    keepdims=st.booleans(),
)
def test_count_nonzero_of_an_owner_or_c_view_matches_numpy_in_the_general_paths_order(
    shape: tuple[int, ...], axis: Any, keepdims: bool
) -> None:
    a = np.where(_values(shape, np.float64) > 0.2, 1.0, 0.0)
    if isinstance(axis, tuple) and len(shape) == 1:
        axis = axis[:1]
    want = np.asarray(np.count_nonzero(a, axis=axis, keepdims=keepdims), np.int64)
    for x, order in ((_owner(a), "F"), (_c_view(a), "C")):
        r = tfr.count_nonzero(x, axis=axis, keepdims=keepdims)
        assert r.dtype == tfr.int64
        assert np.array_equal(np.asarray(r), want)
        # Memory order follows the data (numpy's 'K'): F in, owner out; C in, C out.
        if r.ndim >= 2 and min(r.shape) > 1:
            assert isinstance(r, tfr.Tensor) == (order == "F")


def test_count_nonzero_of_a_bool_mask_counts_its_true_entries() -> None:
    mask = tfr.asarray(np.array([0.1, 0.5, 0.9])) < 0.6
    assert int(tfr.count_nonzero(mask, axis=-1)) == 2


def test_count_nonzero_with_a_repeated_axis_is_refused_with_a_typed_error() -> None:
    with pytest.raises(tfr.ValidationError, match="count_nonzero"):
        tfr.count_nonzero(_owner(np.ones((2, 3))), axis=(0, 0))
    with pytest.raises(tfr.ValidationError, match="count_nonzero"):
        tfr.count_nonzero(_c_view(np.ones((2, 3))), axis=(1, -1))


def test_count_nonzero_of_an_empty_owner_is_zero_as_numpy() -> None:
    r = tfr.count_nonzero(_owner(np.ones((0, 3))), axis=0)
    assert np.asarray(r).tolist() == [0, 0, 0]


@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 5),
    offset=st.integers(-5, 5),
    axes=st.sampled_from([(0, 1), (1, 0), (-2, -1), (-1, -2), (0, -1)]),
)
def test_the_diagonal_of_a_matrix_owner_or_c_view_matches_numpy(
    rows: int, cols: int, offset: int, axes: tuple[int, int]
) -> None:
    a = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    want = np.diagonal(a, offset, *axes)
    for x in (_owner(a), _c_view(a)):
        r = tfr.diagonal(x, offset=offset, axis1=axes[0], axis2=axes[1])
        assert r.shape == want.shape
        assert np.array_equal(np.asarray(r), want)


def test_the_diagonal_is_a_computed_owner_not_a_view_of_the_matrix() -> None:
    x = _owner(np.arange(9.0).reshape(3, 3))
    r = tfr.diagonal(x)
    assert isinstance(r, tfr.Tensor)
    with x.map_write() as w:  # refused if the diagonal were an alias of the matrix
        w.array[...] = 0.0
    assert np.asarray(r).tolist() == [0.0, 4.0, 8.0]


def test_the_diagonal_with_equal_axes_is_refused_with_a_typed_error() -> None:
    with pytest.raises(tfr.ValidationError, match="diagonal"):
        tfr.diagonal(_owner(np.ones((3, 3))), axis1=1, axis2=-1)


def test_the_diagonal_of_a_matrix_borrowed_for_writing_is_refused() -> None:
    t = _owner(np.ones((3, 3)))
    with pytest.raises(tfr.BorrowError), t.map_write():
        tfr.diagonal(t)


def _no_general_path(monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(module, "compute", refuse)


def test_owners_and_c_views_take_the_compiled_protocol_not_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.namespace import _contraction, _reductions

    _no_general_path(monkeypatch, _reductions)
    _no_general_path(monkeypatch, _contraction)
    a = np.arange(12.0).reshape(3, 4)
    for x in (_owner(a), _c_view(a)):
        assert np.array_equal(np.asarray(tfr.cumulative_sum(x, axis=1)), np.cumsum(a, axis=1))
        assert np.array_equal(np.asarray(tfr.cumulative_prod(x, axis=0)), np.cumprod(a, axis=0))
        assert np.array_equal(np.asarray(tfr.count_nonzero(x, axis=-1)), [3, 4, 4])
        assert np.array_equal(np.asarray(tfr.diagonal(x, offset=1)), [1.0, 6.0, 11.0])
    assert int(tfr.count_nonzero(_owner(a))) == 11
