"""The array object protocol on Tensor and views: operators, indexing, scalars, repr."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import tenferro as tfr


def m(rows: list[list[float]]) -> tfr.Tensor:
    return tfr.asarray(rows)


def values(x: object) -> np.ndarray:
    return np.array(np.asarray(x))


def test_addition_broadcasts_a_row_over_a_matrix() -> None:
    out = m([[1.0, 2.0], [3.0, 4.0]]) + tfr.asarray([10.0, 20.0])
    np.testing.assert_array_equal(values(out), [[11.0, 22.0], [13.0, 24.0]])


def test_mixed_integer_widths_promote_by_the_standard_table() -> None:
    a = tfr.asarray([1, 2], dtype=tfr.int8)
    b = tfr.asarray([1, 2], dtype=tfr.uint8)
    assert (a + b).dtype is tfr.int16


def test_float32_with_complex128_promotes_to_complex128() -> None:
    a = tfr.asarray([1.0], dtype=tfr.float32)
    b = tfr.asarray([1j], dtype=tfr.complex128)
    assert (a * b).dtype is tfr.complex128


def test_mixing_kinds_raises_a_promotion_error_that_is_a_type_error() -> None:
    with pytest.raises(TypeError) as err:
        tfr.asarray([1], dtype=tfr.int64) + tfr.asarray([1.0])
    assert isinstance(err.value, tfr.PromotionError)
    assert err.value.op == "result_type" or "tenferro." in err.value.op


def test_a_python_int_takes_the_arrays_integer_dtype() -> None:
    assert (tfr.asarray([1, 2], dtype=tfr.int8) + 1).dtype is tfr.int8


def test_a_python_float_with_an_integer_array_is_refused() -> None:
    with pytest.raises(tfr.PromotionError):
        tfr.asarray([1, 2]) * 1.5


def test_a_python_complex_makes_a_real_float_array_complex() -> None:
    assert (tfr.asarray([1.0], dtype=tfr.float32) * 1j).dtype is tfr.complex64


def test_comparisons_return_bool_tensors() -> None:
    a = tfr.asarray([1.0, 2.0, 3.0])
    for cmp in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge):
        out = cmp(a, 2.0)
        assert out.dtype is tfr.bool
        np.testing.assert_array_equal(values(out), cmp(np.array([1.0, 2.0, 3.0]), 2.0))


def test_tensors_are_unhashable_because_equality_is_elementwise() -> None:
    with pytest.raises(TypeError):
        hash(tfr.asarray([1.0]))


def test_every_binary_operator_matches_numpy() -> None:
    x = np.array([[5, 6], [7, 8]], dtype=np.int32)
    y = np.array([[1, 2], [3, 1]], dtype=np.int32)
    a, b = tfr.asarray(x.copy()), tfr.asarray(y.copy())
    ops = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod]
    ops += [operator.pow, operator.and_, operator.or_, operator.xor, operator.lshift]
    ops += [operator.rshift, operator.matmul]
    for fn in ops:
        np.testing.assert_array_equal(values(fn(a, b)), fn(x, y), err_msg=fn.__name__)


def test_reflected_operators_put_the_scalar_first() -> None:
    a = tfr.asarray([1.0, 2.0])
    np.testing.assert_array_equal(values(10.0 - a), [9.0, 8.0])
    np.testing.assert_array_equal(values(2.0 / a), [2.0, 1.0])


def test_unary_operators() -> None:
    a = tfr.asarray([-1, 2], dtype=tfr.int16)
    np.testing.assert_array_equal(values(-a), [1, -2])
    np.testing.assert_array_equal(values(+a), [-1, 2])
    np.testing.assert_array_equal(values(abs(a)), [1, 2])
    np.testing.assert_array_equal(values(~a), [0, -3])


def test_true_division_of_floats() -> None:
    np.testing.assert_allclose(values(tfr.asarray([1.0, 3.0]) / 2), [0.5, 1.5])


# ---------------------------------------------------------------------- indexing
def test_basic_indexing_is_a_view_and_never_copies() -> None:
    a = m([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        row = a[1]
        col = a[:, ::-2]
        new = a[None, ..., 0]
    assert tfr.copy_stats() == before
    assert isinstance(row, tfr.TensorView)
    np.testing.assert_array_equal(values(row), [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(values(col), [[3.0, 1.0], [6.0, 4.0]])
    assert new.shape == (1, 2)


def test_a_view_reads_the_owners_memory() -> None:
    a = m([[1.0, 2.0], [3.0, 4.0]])
    v = a[0]
    assert np.shares_memory(np.asarray(v), np.asarray(a))


def test_an_integer_index_gives_a_rank_0_view() -> None:
    a = m([[1.0, 2.0], [3.0, 4.0]])
    assert a[1, 0].shape == ()
    assert float(a[1, 0]) == 3.0


def test_an_index_out_of_range_is_an_index_error() -> None:
    with pytest.raises(IndexError):
        tfr.asarray([1.0, 2.0])[2]


def test_integer_array_indexing_is_a_counted_copy() -> None:
    a = tfr.asarray([10.0, 20.0, 30.0])
    before = tfr.copy_stats().copies
    out = a[tfr.asarray([2, 0])]
    assert tfr.copy_stats().copies == before + 1
    np.testing.assert_array_equal(values(out), [30.0, 10.0])


def test_boolean_mask_indexing_is_refused_under_forbid_copies() -> None:
    a = tfr.asarray([1.0, 2.0, 3.0])
    mask = a > 1.5
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        a[mask]
    np.testing.assert_array_equal(values(a[mask]), [2.0, 3.0])


def test_setitem_writes_through_an_exclusive_borrow() -> None:
    a = tfr.zeros((2, 3))
    a[0, 1:] = 7.0
    a[1] = tfr.asarray([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(values(a), [[0.0, 7.0, 7.0], [1.0, 2.0, 3.0]])


def test_setitem_is_refused_while_a_view_is_alive() -> None:
    a = tfr.zeros((3,))
    v = a[1:]
    with pytest.raises(tfr.BorrowError):
        a[0] = 1.0
    del v
    a[0] = 1.0
    assert float(a[0]) == 1.0


def test_setitem_through_a_view_writes_the_owner() -> None:
    a = tfr.zeros((2, 2))
    row = a[1]
    row[0] = 5.0
    del row
    assert float(a[1, 0]) == 5.0


def test_setitem_refuses_a_value_of_a_higher_kind() -> None:
    a = tfr.zeros((2,), dtype=tfr.int32)
    with pytest.raises(tfr.PromotionError):
        a[0] = 1.5
    np.testing.assert_array_equal(values(a), [0, 0])


def test_in_place_addition_writes_the_same_tensor() -> None:
    a = tfr.asarray([1.0, 2.0])
    address = np.asarray(a).ctypes.data
    b = a
    b += 1.0
    assert b is a
    np.testing.assert_array_equal(values(a), [2.0, 3.0])
    assert np.asarray(a).ctypes.data == address


def test_in_place_operator_refuses_a_result_that_changes_the_dtype() -> None:
    a = tfr.asarray([1, 2], dtype=tfr.int8)
    with pytest.raises(tfr.PromotionError):
        a += tfr.asarray([1, 2], dtype=tfr.int16)


def test_iteration_yields_views_along_the_first_axis() -> None:
    rows = [values(r).tolist() for r in m([[1.0, 2.0], [3.0, 4.0]])]
    assert rows == [[1.0, 2.0], [3.0, 4.0]]


# ---------------------------------------------------------------------- scalars and attributes
def test_one_element_tensors_convert_to_python_scalars() -> None:
    assert bool(tfr.asarray([True])) is True
    assert int(tfr.asarray(3)) == 3
    assert float(tfr.asarray(2.5)) == 2.5
    assert complex(tfr.asarray(1j)) == 1j
    assert [10, 20, 30][tfr.asarray(1)] == 20


def test_truth_of_several_elements_is_ambiguous() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        bool(tfr.asarray([1.0, 2.0]))
    assert err.value.kind == "AMBIGUOUS_TRUTH"


def test_transposes_are_views() -> None:
    a = m([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with tfr.forbid_copies():
        t = a.T
        mt = tfr.reshape(tfr.arange(6.0), (1, 2, 3)).mT
    assert t.shape == (3, 2)
    assert mt.shape == (1, 3, 2)
    np.testing.assert_array_equal(values(t), values(a).T)


def test_namespace_device_and_version() -> None:
    a = tfr.asarray([1.0])
    assert a.__array_namespace__() is tfr
    assert tfr.__array_api_version__ == "2024.12"
    assert a.device == "cpu"
    assert a.to_device("cpu") is a
    with pytest.raises(tfr.ValidationError):
        a.to_device("cuda:0")


def test_repr_prints_rows_dtype_and_ownership() -> None:
    a = m([[1.0, 2.0], [3.0, 4.0]])
    assert repr(a) == "Tensor([[1., 2.],\n        [3., 4.]], dtype=float64)"
    assert repr(a[1]) == "TensorView([3., 4.], dtype=float64, view: strides=(2,), offset=1)"


def test_views_are_accepted_by_every_function() -> None:
    v = m([[1.0, 2.0], [3.0, 4.0]]).T
    np.testing.assert_array_equal(values(tfr.exp(v)), np.exp([[1.0, 3.0], [2.0, 4.0]]))
    np.testing.assert_array_equal(
        values(v @ v), np.array([[1.0, 3.0], [2.0, 4.0]]) @ [[1.0, 3.0], [2.0, 4.0]]
    )
    assert float(tfr.sum(v)) == 10.0


def test_comparison_with_a_non_array_falls_back_to_identity() -> None:
    x = tfr.asarray([1.0, 2.0])
    f = len
    assert (x == f) is False
    assert (x != None) is True  # noqa: E711
    assert x in [f, x]
    assert x not in [f, None]
