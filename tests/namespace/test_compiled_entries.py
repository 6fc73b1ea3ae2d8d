"""The compiled entries quimb's per-split glue calls (issue 20): ``transpose``,
``permute_dims``, ``reshape`` and ``tensordot`` (`engine._core.*_entry`), a planned
reshape copy of a shared view (`reshape_planned`), and the same-shape elementwise hot
path on a view that is one span of its buffer (`_span_source`) keep every result,
ownership rule and typed refusal of the general paths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr


def _c(shape: tuple[int, ...], seed: int = 0) -> tuple[Any, np.ndarray]:
    n = np.random.default_rng(seed).random(shape)
    return tfr.asarray(n.copy()), n


def _permuted_view() -> tuple[Any, np.ndarray]:
    """A shared view whose row-major reshape to (6, 32) needs a copy (quimb's fuse)."""
    x, n = _c((2, 32, 3))
    return tfr.permute_dims(x, (0, 2, 1)), n.transpose(0, 2, 1)


# ------------------------------------------------------------------------ entries
@pytest.mark.parametrize("name", ["transpose", "permute_dims", "reshape", "tensordot"])
def test_the_entry_is_the_exported_function_and_named_for_it(name: str) -> None:
    fn = getattr(tfr, name)
    assert fn.__name__ == name
    assert fn.__module__.startswith("tenferro.namespace")


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_a_repeated_transpose_gives_numpys_view(axes: Any) -> None:
    x, n = _c((2, 3, 4))
    for _ in range(2):
        got = tfr.transpose(x, axes)
        assert isinstance(got, tfr.TensorView)
        np.testing.assert_array_equal(np.asarray(got), np.transpose(n, axes))


def test_a_repeated_permute_dims_of_an_owner_gives_numpys_view() -> None:
    n = np.asfortranarray(np.arange(24.0).reshape(2, 3, 4))
    x = tfr.asarray(n)
    for _ in range(2):
        np.testing.assert_array_equal(
            np.asarray(tfr.permute_dims(x, (2, 0, 1))), n.transpose(2, 0, 1)
        )


@pytest.mark.parametrize("axes", [(True, False, 2), (0, 1), (0, 0, 1), (0.0, 1, 2)])
def test_a_planned_permutation_still_refuses_bad_axes(axes: Any) -> None:
    x, _ = _c((2, 3, 4))
    tfr.permute_dims(x, (1, 0, 2))
    with pytest.raises(tfr.ValidationError):
        tfr.permute_dims(x, axes)


def test_a_planned_transpose_of_a_moved_tensor_is_refused() -> None:
    x = tfr.asarray(np.asfortranarray(np.ones((2, 3))))
    tfr.transpose(x, (1, 0))
    x.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        tfr.transpose(x, (1, 0))
    with pytest.raises(tfr.MovedTensorError):
        tfr.transpose(x)


def test_a_planned_transpose_of_an_exclusively_borrowed_tensor_is_refused() -> None:
    x = tfr.asarray(np.asfortranarray(np.ones((2, 3))))
    tfr.transpose(x, (1, 0))
    with x.map_write(), pytest.raises(tfr.BorrowError):
        tfr.transpose(x, (1, 0))


def test_the_entries_still_borrow_numpy_operands() -> None:
    n = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(tfr.transpose(n, (1, 0))), n.T)
    np.testing.assert_array_equal(np.asarray(tfr.reshape(n, (3, 2))), n.reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(tfr.tensordot(n, n, ((1,), (1,)))), n @ n.T)


@pytest.mark.parametrize("axes", [1, ((1,), (0,)), ([1], [0]), ((1, 2), (0, 1))])
def test_a_repeated_tensordot_gives_numpys_values(axes: Any) -> None:
    a, na = _c((3, 4, 5))
    b, nb = _c((4, 5, 2), seed=1)
    if axes == 1:
        b, nb = _c((5, 2), seed=1)
    for _ in range(2):
        got = tfr.tensordot(a, b, axes)
        np.testing.assert_allclose(np.asarray(got), np.tensordot(na, nb, axes))


def test_a_planned_tensordot_refuses_bool_axes() -> None:
    a, _ = _c((3, 4))
    tfr.tensordot(a, a, ((1,), (1,)))
    with pytest.raises(tfr.ValidationError):
        tfr.tensordot(a, a, ((True,), (True,)))


# ------------------------------------------------------------ a shared view's reshape copy
def test_a_repeated_view_reshape_copy_counts_a_copy_every_time() -> None:
    v, n = _permuted_view()
    tfr.reshape(v, (6, 32))
    before = tfr.copy_stats()
    got = tfr.reshape(v, (6, 32))
    after = tfr.copy_stats()
    assert (after.copies, after.bytes) == (before.copies + 1, before.bytes + 6 * 32 * 8)
    assert isinstance(got, tfr.Tensor)
    np.testing.assert_array_equal(np.asarray(got), n.reshape(6, 32))


@pytest.mark.parametrize("target", [(6, 32), (-1,), (2, 96), (192,), (3, 2, 32)])
def test_a_repeated_view_reshape_copy_equals_numpys(target: tuple[int, ...]) -> None:
    v, n = _permuted_view()
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(tfr.reshape(v, target)), n.reshape(target))


def test_a_planned_view_reshape_copy_is_refused_under_forbid_copies() -> None:
    v, _ = _permuted_view()
    tfr.reshape(v, (6, 32))
    before = tfr.copy_stats()
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        tfr.reshape(v, (6, 32))
    assert tfr.copy_stats() == before


def test_a_planned_view_reshape_copy_with_copy_false_is_refused() -> None:
    v, _ = _permuted_view()
    tfr.reshape(v, (6, 32))
    with pytest.raises(tfr.ValidationError):
        tfr.reshape(v, (6, 32), copy=False)


def test_a_planned_view_reshape_copy_of_a_fresh_result_leaves_it_root_less() -> None:
    x, n = _c((2, 32, 3))
    tfr.reshape(tfr.permute_dims(x * 1.0, (0, 2, 1)), (6, 32))
    fresh = tfr.permute_dims(x * 1.0, (0, 2, 1))
    src = fresh._source
    root_before = src._root
    got = tfr.reshape(fresh, (6, 32))
    assert src._root is root_before
    np.testing.assert_array_equal(np.asarray(got), n.transpose(0, 2, 1).reshape(6, 32))


# ------------------------------------------------------------ one span of a buffer
@pytest.mark.parametrize("value", [2.0, 3, -1.5])
def test_a_contiguous_1d_view_times_a_scalar_is_an_owner_of_numpys_values(value: Any) -> None:
    base = np.arange(5.0)
    v = tfr.asarray(base.copy())[1:4]
    got = v * value
    assert isinstance(got, tfr.Tensor)
    np.testing.assert_array_equal(np.asarray(got), base[1:4] * value)


def test_a_row_block_of_c_ordered_data_gives_a_c_ordered_result() -> None:
    x, n = _c((6, 4))
    got = x[2:5] * 3.0
    assert isinstance(got, tfr.TensorView)
    assert got.strides == (4, 1)
    np.testing.assert_array_equal(np.asarray(got), n[2:5] * 3.0)


def test_a_single_row_block_gives_the_general_paths_owner() -> None:
    x, n = _c((6, 4))
    got = x[2:3] + x[4:5]
    assert isinstance(got, tfr.Tensor)
    np.testing.assert_array_equal(np.asarray(got), n[2:3] + n[4:5])


def test_a_unary_function_of_a_span_view_gives_numpys_values() -> None:
    x, n = _c((6, 4))
    np.testing.assert_allclose(np.asarray(tfr.exp(x[1:3])), np.exp(n[1:3]))
