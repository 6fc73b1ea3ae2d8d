"""numpy operands on either side of namespace functions and operators, and DType vs numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr


def values(x: Any) -> np.ndarray[Any, Any]:
    assert isinstance(x, (tfr.Tensor, tfr.TensorView)), type(x)
    return np.array(np.asarray(x))


# ---------------------------------------------------------------------- operators
@pytest.mark.parametrize(
    "name", ["add", "sub", "mul", "truediv", "pow", "eq", "lt", "ge", "matmul"]
)
def test_an_ndarray_on_either_side_of_an_operator_gives_a_tensor(name: str) -> None:
    import operator

    op = getattr(operator, name)
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = tfr.asarray(np.array([[0.5, 1.5], [2.5, 3.5]]))
    ref_t = np.array([[0.5, 1.5], [2.5, 3.5]])
    np.testing.assert_allclose(values(op(t, a)), op(ref_t, a))
    np.testing.assert_allclose(values(op(a, t)), op(a, ref_t))


def test_an_ndarray_next_to_a_view_gives_a_tensor() -> None:
    a = np.arange(3.0)
    v = tfr.asarray(np.arange(6.0).reshape(2, 3))[1]
    row = np.array([3.0, 4.0, 5.0])
    np.testing.assert_array_equal(values(a + v), a + row)
    np.testing.assert_array_equal(values(v * a), a * row)


def test_numpy_scalars_are_weak_scalars() -> None:
    x = tfr.asarray([1.0, 2.0], dtype=tfr.float32)
    y = x * np.float32(2)
    assert y.dtype == tfr.float32
    np.testing.assert_array_equal(values(y), [2.0, 4.0])
    z = tfr.asarray([1.0, 2.0]) + np.int64(1)
    np.testing.assert_array_equal(values(z), [2.0, 3.0])
    assert values(np.float64(3.0) - tfr.asarray([1.0])).tolist() == [2.0]


def test_in_place_operator_with_an_ndarray_operand() -> None:
    t = tfr.asarray([1.0, 2.0])
    t *= np.array([3.0, 4.0])
    np.testing.assert_array_equal(values(t), [3.0, 8.0])


def test_an_ndarray_updated_in_place_by_a_tensor_stays_an_ndarray() -> None:
    a = np.array([1.0, 2.0])
    a += tfr.asarray([1.0, 1.0])
    assert isinstance(a, np.ndarray)
    np.testing.assert_array_equal(a, [2.0, 3.0])


# ---------------------------------------------------------------------- functions
def test_tensordot_with_an_ndarray_operand() -> None:
    a = np.arange(6.0).reshape(2, 3)
    t = tfr.asarray(np.arange(12.0).reshape(3, 4))
    np.testing.assert_allclose(values(tfr.tensordot(a, t, 1)), a @ np.arange(12.0).reshape(3, 4))
    np.testing.assert_allclose(
        values(tfr.tensordot(t.T, a.T, 1)), (a @ np.arange(12.0).reshape(3, 4)).T
    )


def test_einsum_concat_and_stack_take_ndarrays_in_their_operand_lists() -> None:
    a = np.arange(4.0).reshape(2, 2)
    t = tfr.asarray(np.ones((2, 2)))
    np.testing.assert_allclose(values(tfr.einsum("ij,jk->ik", a, t)), a @ np.ones((2, 2)))
    np.testing.assert_array_equal(values(tfr.concat([a, t])), np.concatenate([a, np.ones((2, 2))]))
    np.testing.assert_array_equal(values(tfr.stack((t, a))), np.stack([np.ones((2, 2)), a]))


def test_a_borrowed_ndarray_is_neither_frozen_nor_copied_by_a_computation() -> None:
    a = np.arange(4.0)
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        s = tfr.sum(a)
        e = tfr.exp(a)
    assert tfr.copy_stats() == before
    assert a.flags.writeable
    assert float(s) == 6.0
    np.testing.assert_allclose(values(e), np.exp(np.arange(4.0)))


def test_a_view_of_a_borrowed_ndarray_is_a_counted_copy() -> None:
    a = np.arange(6.0).reshape(2, 3)
    before = tfr.copy_stats().copies
    r = tfr.reshape(a, (3, 2))
    assert tfr.copy_stats().copies == before + 1
    a[0, 0] = 100.0  # the caller's array stays writable; the result does not see it
    np.testing.assert_array_equal(values(r), np.arange(6.0).reshape(3, 2))


def test_a_view_of_a_borrowed_ndarray_is_refused_under_forbid_copies() -> None:
    a = np.arange(6.0).reshape(2, 3)
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        tfr.permute_dims(a, (1, 0))


def test_a_strided_ndarray_is_read_through_a_counted_copy() -> None:
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    before = tfr.copy_stats().copies
    out = tfr.sum(a, axis=0)
    assert tfr.copy_stats().copies == before + 1
    np.testing.assert_array_equal(values(out), a.sum(axis=0))


def test_an_unsupported_ndarray_dtype_is_a_typed_refusal() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.sum(np.array(["a", "b"]))


@given(st.lists(st.floats(-10, 10), min_size=1, max_size=6), st.sampled_from(["C", "F"]))
def test_functions_on_ndarrays_match_numpy(xs: list[float], order: str) -> None:
    a = np.asarray(np.array(xs).reshape(1, -1), order=order)
    b = np.array(xs).reshape(-1, 1)
    np.testing.assert_allclose(values(tfr.matmul(a, b)), a @ b)
    np.testing.assert_allclose(values(tfr.max(a, axis=1)), a.max(axis=1))
    np.testing.assert_allclose(values(tfr.where(a > 0, a, b.T)), np.where(a > 0, a, b.T))


# ---------------------------------------------------------------------- DType
def test_np_dtype_reads_a_dtype() -> None:
    assert np.dtype(tfr.float64) == np.float64
    assert np.dtype(tfr.asarray([1], dtype=tfr.int32).dtype) == np.int32
    assert np.zeros(2, dtype=tfr.complex64).dtype == np.complex64


def test_a_dtype_equals_the_numpy_dtype_of_the_same_representation() -> None:
    t = tfr.asarray([1.0])
    assert t.dtype == np.float64
    assert np.float64 == t.dtype
    assert t.dtype == np.dtype("float64")
    assert t.dtype == "float64"
    assert t.dtype != np.float32
    assert t.dtype != tfr.float32
    assert (t.dtype == None) is False  # noqa: E711
    assert t.dtype != 1.0


def test_a_refused_call_with_a_strided_ndarray_counts_no_copy() -> None:
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    before = tfr.copy_stats()
    with pytest.raises(tfr.ValidationError):
        tfr.matmul(tfr.ones((5, 5)), a)
    assert tfr.copy_stats() == before


def test_numpy_reductions_call_the_methods() -> None:
    t = tfr.asarray([1.0, 2.0, 3.0])
    assert float(np.sum(t)) == 6.0
    assert float(np.max(t)) == 3.0
    assert float(np.mean(t)) == 2.0
