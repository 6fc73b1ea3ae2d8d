"""The compiled per-call paths of indexing, reshape and 2-D matmul (issue 20):
``x[key]`` (`engine._core.getitem`), a planned ``reshape`` (`reshape_planned`) and
``a @ b`` of two owners by the planned product keep every result, ownership rule
and typed refusal of the general paths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import CpuEngine, _core
from tenferro.namespace import _indexing


def _owner(shape: tuple[int, ...] = (4, 5), seed: int = 0) -> tuple[Any, np.ndarray]:
    n = np.asfortranarray(np.random.default_rng(seed).random(shape))
    return tfr.asarray(n.copy(order="F")), n


def _c_view(shape: tuple[int, ...] = (4, 5), seed: int = 0) -> tuple[Any, np.ndarray]:
    n = np.random.default_rng(seed).random(shape)
    return tfr.asarray(n.copy()), n


# ------------------------------------------------------------------------ x[key]
def test_getitem_is_the_compiled_entry_on_tensors_and_views() -> None:
    assert tfr.Tensor.__getitem__ is _core.getitem
    assert tfr.TensorView.__getitem__ is _core.getitem
    assert _indexing.getitem is _core.getitem


def test_int_indexes_of_arrays_of_different_layouts_in_turn_give_each_its_own_row() -> None:
    # The row layout of the array indexed last is kept: alternating arrays of other
    # shapes and layouts must each get their own.
    (a, na), (b, nb), (c, nc) = _owner((3, 4), 1), _owner((4, 3), 2), _c_view((3, 4), 3)
    for _ in range(2):
        for x, n in ((a, na), (b, nb), (c, nc), (c.T, nc.T), (a, na)):
            for i in (0, 1, -1):
                np.testing.assert_array_equal(np.asarray(x[i]), n[i])


def test_basic_keys_in_turn_give_each_its_own_layout() -> None:
    # The layout of the view made last is reused only when it is exactly the new one.
    (a, na), (c, nc) = _owner((4, 6), 5), _c_view((4, 6), 6)
    keys: list[Any] = [
        (slice(None), slice(None, 2)),
        slice(1, 3),
        (None, 1),
        (Ellipsis, slice(None, None, -1)),
        (slice(None), slice(None, 2)),
        (slice(None, None, 2), slice(1, 5)),
        slice(1, 3),
    ]
    for _ in range(2):
        for key in keys:
            for x, n in ((a, na), (c, nc), (c.T, nc.T)):
                got = x[key]
                assert got.shape == n[key].shape
                np.testing.assert_array_equal(np.asarray(got), n[key])


def test_an_int_index_of_a_view_sharing_a_shape_tuple_reads_its_own_strides() -> None:
    t, n = _owner((4, 4), 4)
    shape = (4, 4)
    rows = _core.view_of(t, shape, (4, 1))  # n.T's layout over t's buffer
    cols = _core.view_of(t, shape, (1, 4))  # n's own layout, the same shape tuple
    np.testing.assert_array_equal(np.asarray(rows[1]), n.T[1])
    np.testing.assert_array_equal(np.asarray(cols[1]), n[1])
    np.testing.assert_array_equal(np.asarray(rows[2]), n.T[2])


def test_an_int_index_beyond_a_machine_int_is_an_index_out_of_range_error() -> None:
    x, _ = _owner((4, 5))
    with pytest.raises(IndexError):
        x[2**70]
    with pytest.raises(IndexError):
        x[-(2**70)]


@pytest.mark.parametrize("make", [_owner, _c_view])
@pytest.mark.parametrize("key", [0, 3, -1, -4])
def test_one_int_index_gives_numpys_row(make: Any, key: int) -> None:
    x, n = make((4, 5, 2))
    got = x[key]
    assert isinstance(got, tfr.TensorView)
    np.testing.assert_array_equal(np.asarray(got), n[key])


@pytest.mark.parametrize("make", [_owner, _c_view])
@pytest.mark.parametrize("key", [4, -5, 2**70, -(2**70)])
def test_an_int_out_of_range_is_an_index_out_of_range_error(make: Any, key: int) -> None:
    x, _ = make()
    with pytest.raises(tfr.IndexOutOfRangeError):
        x[key]


@pytest.mark.parametrize("make", [_owner, _c_view])
@pytest.mark.parametrize(
    ("key", "error"),
    [
        (1.5, tfr.ValidationError),
        ("a", tfr.ValidationError),
        (slice(1.5, None), tfr.ValidationError),
        (slice(None, None, 0), tfr.ValidationError),
        ((Ellipsis, Ellipsis), tfr.ValidationError),
        ((1, 2, 3), tfr.IndexOutOfRangeError),
    ],
)
def test_a_bad_key_is_still_a_typed_error(make: Any, key: Any, error: type) -> None:
    x, _ = make()
    with pytest.raises(error):
        x[key]


def test_an_int_index_of_a_rank_0_array_is_a_typed_error() -> None:
    x = tfr.asarray(np.float64(1.0))
    with pytest.raises(tfr.IndexOutOfRangeError):
        x[0]


def test_an_int_index_of_a_moved_tensor_is_refused() -> None:
    x, _ = _owner()
    x.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        x[1]


def test_an_int_index_of_an_exclusively_borrowed_tensor_is_refused() -> None:
    x, _ = _owner()
    with x.map_write(), pytest.raises(tfr.BorrowError):
        x[1]


def test_an_int_index_borrows_the_tensor_as_a_counted_alias() -> None:
    x, _ = _owner()
    row = x[1]
    with pytest.raises(tfr.BorrowError):
        x.map_write()
    del row
    with x.map_write():
        pass


def test_an_int_index_of_a_fresh_result_view_takes_its_root() -> None:
    c, n = _c_view()
    fresh = c + c
    assert fresh._base is None
    row = fresh[1]
    assert fresh._base is not None and row._base is fresh._base
    np.testing.assert_array_equal(np.asarray(row), (n + n)[1])


def test_an_int_index_of_a_mutable_view_takes_the_general_path() -> None:
    x, n = _owner()
    with x.map_write() as m:
        np.testing.assert_array_equal(np.asarray(m[1]), n[1])


def test_an_index_array_still_copies_through_the_general_path() -> None:
    x, n = _c_view()
    got = x[np.array([0, 2])]
    np.testing.assert_array_equal(np.asarray(got), n[[0, 2]])


# ------------------------------------------------------------------------ reshape
def test_a_repeated_owner_reshape_copy_counts_a_copy_every_time() -> None:
    x, n = _owner((4, 4))
    tfr.reshape(x, (16,))
    before = tfr.copy_stats().copies
    got = tfr.reshape(x, (16,))
    assert tfr.copy_stats().copies == before + 1
    assert isinstance(got, tfr.Tensor)
    np.testing.assert_array_equal(np.asarray(got), np.reshape(n, (16,)))


def test_a_planned_owner_reshape_copy_is_refused_under_forbid_copies() -> None:
    x, _ = _owner((4, 4))
    tfr.reshape(x, (16,))
    before = tfr.copy_stats().copies
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        tfr.reshape(x, (16,))
    assert tfr.copy_stats().copies == before


def test_a_planned_owner_reshape_copy_counts_its_bytes_in_copy_stats() -> None:
    x, _ = _owner((4, 4))
    tfr.reshape(x, (16,))
    before = tfr.copy_stats()
    tfr.reshape(x, (16,))
    after = tfr.copy_stats()
    assert (after.copies, after.bytes) == (before.copies + 1, before.bytes + 16 * 8)


def test_a_planned_owner_reshape_refused_for_a_writer_counts_no_copy() -> None:
    x, _ = _owner((4, 4))
    tfr.reshape(x, (16,))
    before = tfr.copy_stats()
    with x.map_write(), pytest.raises(tfr.BorrowError):
        tfr.reshape(x, (16,))
    assert tfr.copy_stats() == before


def test_a_planned_owner_reshape_copy_keeps_the_owners_column_major_values() -> None:
    n = np.asfortranarray(np.arange(24.0).reshape(2, 3, 4))
    x = tfr.asarray(n)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(tfr.reshape(x, (24,))), n.reshape(24))


def test_a_planned_owner_reshape_of_a_moved_tensor_is_refused() -> None:
    x, _ = _owner((4, 4))
    tfr.reshape(x, (16,))
    x.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        tfr.reshape(x, (16,))


def test_a_planned_owner_reshape_of_an_exclusively_borrowed_tensor_is_refused() -> None:
    x, _ = _owner((4, 4))
    tfr.reshape(x, (16,))
    tfr.reshape(x, (2, 8))
    with x.map_write():
        with pytest.raises(tfr.BorrowError):
            tfr.reshape(x, (16,))  # the copy path
        with pytest.raises(tfr.BorrowError):
            tfr.reshape(x, (2, 8))  # the view path


def test_a_planned_reshape_copy_with_copy_false_is_refused() -> None:
    x, _ = _owner((4, 4))
    tfr.reshape(x, (16,))
    with pytest.raises(tfr.ValidationError):
        tfr.reshape(x, (16,), copy=False)


@pytest.mark.parametrize("target", [(16,), (2, 8), (8, 2), (2, 2, 4)])
def test_a_repeated_owner_reshape_equals_numpys(target: tuple[int, ...]) -> None:
    x, n = _owner((4, 4))
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(tfr.reshape(x, target)), np.reshape(n, target))


def test_a_repeated_reshape_of_a_fresh_result_view_takes_its_root() -> None:
    c, n = _c_view((4, 6))
    tfr.reshape(c, (24,))
    fresh = c * 2.0
    assert fresh._base is None
    got = tfr.reshape(fresh, (24,))
    assert got._base is fresh._base is not None
    np.testing.assert_array_equal(np.asarray(got), np.reshape(n * 2.0, (24,)))


def test_a_reshape_of_a_non_tuple_or_non_int_shape_keeps_its_typed_errors() -> None:
    x, _ = _owner((4, 4))
    tfr.reshape(x, (16,))
    with pytest.raises(tfr.TenferroError):
        tfr.reshape(x, (16.0,))
    with pytest.raises(tfr.ValidationError):
        tfr.reshape(x, (15,))


# ------------------------------------------------------------------------ a @ b
def test_a_repeated_owner_matmul_calls_no_engine_matmul(monkeypatch: pytest.MonkeyPatch) -> None:
    a, na = _owner((4, 3), 0)
    b, nb = _owner((3, 5), 1)
    a @ b
    monkeypatch.setattr(CpuEngine, "matmul", lambda *a, **k: pytest.fail("engine called"))
    got = a @ b
    assert isinstance(got, tfr.Tensor)
    np.testing.assert_allclose(np.asarray(got), na @ nb)
    assert np.asarray(got).flags.f_contiguous


def test_an_owner_matmul_of_mismatched_shapes_keeps_the_engines_error() -> None:
    a, _ = _owner((4, 3), 0)
    b, _ = _owner((4, 5), 1)
    with pytest.raises(tfr.ValidationError, match=r"CpuEngine\.matmul"):
        a @ b


def test_a_planned_owner_matmul_of_a_moved_tensor_is_refused() -> None:
    a, _ = _owner((4, 4), 0)
    b, _ = _owner((4, 4), 1)
    a @ b
    b.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        a @ b


def test_a_planned_owner_matmul_of_an_exclusively_borrowed_tensor_is_refused() -> None:
    a, _ = _owner((4, 4), 0)
    b, _ = _owner((4, 4), 1)
    a @ b
    with b.map_write(), pytest.raises(tfr.BorrowError):
        a @ b


def test_a_c_view_matmul_reads_a_view_holding_its_root_without_a_new_alias() -> None:
    c, nc = _c_view((4, 4), 0)
    d, nd = _c_view((4, 4), 1)
    c @ d
    root_id = id(c._base)
    before = c._source.alias_count()
    got = c @ d
    after = c._source.alias_count()  # read outside an assert (which keeps its operands)
    assert id(c._base) == root_id
    assert after == before
    np.testing.assert_allclose(np.asarray(got), nc @ nd)


def test_a_matmul_of_a_sliced_view_equals_numpys() -> None:
    w, nw = _c_view((6, 8), 0)
    v, nv = _c_view((5, 4), 1)
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(w[1:5, 2:7] @ v), nw[1:5, 2:7] @ nv)
        np.testing.assert_allclose(np.asarray(w[:, 3:7].T @ w[:, :4]), nw[:, 3:7].T @ nw[:, :4])


def test_a_matmul_of_reversed_and_stepped_views_equals_numpys() -> None:
    w, nw = _c_view((6, 8), 0)
    v, nv = _c_view((8, 3), 1)
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(w[::-1, ::-1] @ v), nw[::-1, ::-1] @ nv)
        np.testing.assert_allclose(np.asarray(w[::2, :] @ v[::-1]), nw[::2, :] @ nv[::-1])


def test_a_matmul_of_a_sliced_view_adds_no_alias_and_leaves_no_pin() -> None:
    w, nw = _c_view((6, 8), 0)
    v, nv = _c_view((5, 4), 1)
    part = w[1:5, 2:7]
    part @ v
    before = w._source.alias_count()
    got = part @ v
    after = w._source.alias_count()  # read outside an assert (which keeps its operands)
    assert after == before
    assert w._source.readers() == 0 and v._source.readers() == 0
    np.testing.assert_allclose(np.asarray(got), nw[1:5, 2:7] @ nv)


# ------------------------------------------------------------------------ comparisons
@pytest.mark.parametrize(
    ("op", "fn"),
    [
        (lambda a, b: a < b, np.less),
        (lambda a, b: a <= b, np.less_equal),
        (lambda a, b: a > b, np.greater),
        (lambda a, b: a >= b, np.greater_equal),
    ],
)
def test_the_order_comparisons_are_the_namespace_functions(op: Any, fn: Any) -> None:
    x, n = _owner((16,))
    np.testing.assert_array_equal(np.asarray(op(x, 0.5)), fn(n, 0.5))
    np.testing.assert_array_equal(np.asarray(op(0.5, x)), fn(0.5, n))


def test_a_key_longer_than_the_compiled_descriptor_takes_the_general_path() -> None:
    x, n = _c_view((3, 4))
    key = (None,) * 40 + (1, slice(None, None, -2))
    got = x[key]
    np.testing.assert_array_equal(np.asarray(got), n[key])
    assert got.shape == n[key].shape


@pytest.mark.parametrize("make", [_owner, _c_view])
def test_slices_none_and_an_ellipsis_give_numpys_view(make: Any) -> None:
    x, n = make((4, 5, 3))
    for key in [
        (slice(None), slice(None, 3)),
        (None, Ellipsis, 2),
        (slice(3, 0, -2), None, slice(1, None)),
        (1, Ellipsis, slice(None, None, 2)),
    ]:
        np.testing.assert_array_equal(np.asarray(x[key]), n[key])


def test_the_matmul_operator_is_the_compiled_entry_and_falls_back_to_matmul() -> None:
    assert tfr.Tensor.__matmul__ is _core.matmul_operator
    c, nc = _c_view((3, 3), 0)
    got = c @ np.eye(3)  # a numpy operand: tenferro.matmul borrows it
    np.testing.assert_allclose(np.asarray(got), nc)
    with pytest.raises(tfr.ValidationError):
        c @ tfr.asarray(np.ones((4, 2)))
