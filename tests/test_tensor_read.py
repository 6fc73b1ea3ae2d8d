"""Shared borrows: host_data, map_read, with_host_read, to_numpy and numpy 2's __array__."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr


def matrix() -> tuple[tfr.Tensor, np.ndarray]:
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    return tfr.Tensor.from_vec_col_major((2, 3), data), data


def addr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


# -- host_data -----------------------------------------------------------------------------
def test_host_data_is_the_1d_column_major_buffer() -> None:
    t, data = matrix()
    h = t.host_data()
    assert (h.ndim, h.tolist(), addr(h)) == (1, data.tolist(), addr(data))


def test_host_data_is_read_only() -> None:
    t, _ = matrix()
    with pytest.raises(ValueError, match="read-only"):
        t.host_data()[0] = 9.0


def test_host_data_cannot_be_made_writable() -> None:
    t, _ = matrix()
    h = t.host_data()
    with pytest.raises(ValueError):
        h.flags.writeable = True


def test_host_data_views_cannot_be_made_writable_either() -> None:
    t, _ = matrix()
    v = t.host_data()[1:3].reshape(1, 2)
    with pytest.raises(ValueError):
        v.flags.writeable = True


# -- map_read ------------------------------------------------------------------------------
def test_map_read_array_is_the_read_only_column_major_array() -> None:
    t, data = matrix()
    with t.map_read() as g:
        a = g.array
        assert a.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
        assert not a.flags.writeable
        assert a.flags.f_contiguous
        assert addr(a) == addr(data)
        del a


def test_map_read_works_without_a_with_block() -> None:
    t, _ = matrix()
    g = t.map_read()
    assert g.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
    g.release()


def test_leaving_the_map_read_block_releases_the_guard() -> None:
    t, _ = matrix()
    with t.map_read() as g:
        pass
    with pytest.raises(tfr.BorrowError) as err:
        _ = g.array
    assert err.value.kind == "RELEASED"


def test_map_read_guard_indexes_and_iterates_like_its_array() -> None:
    t, _ = matrix()
    with t.map_read() as g:
        assert (len(g), g[1, 2], [list(r) for r in g]) == (
            2,
            6.0,
            [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]],
        )


def test_np_asarray_of_a_map_read_guard_is_zero_copy() -> None:
    t, data = matrix()
    with t.map_read() as g, tfr.forbid_copies():
        a = np.asarray(g)
        assert addr(a) == addr(data)
        del a


def test_map_read_guard_dtype_conversion_is_a_named_copy() -> None:
    t, _ = matrix()
    before = tfr.copy_stats().copies
    with t.map_read() as g:
        a = np.asarray(g, dtype=np.float32)
    assert (a.dtype, tfr.copy_stats().copies - before) == (np.float32, 1)


# -- with_host_read -----------------------------------------------------------------------
def test_with_host_read_passes_a_read_only_1d_view_and_returns_the_result() -> None:
    t, data = matrix()
    seen: list[tuple[int, bool, int]] = []

    def fn(s: np.ndarray) -> float:
        seen.append((s.ndim, s.flags.writeable, addr(s)))
        return float(s.sum())

    assert t.with_host_read(fn) == 21.0
    assert seen == [(1, False, addr(data))]


def test_with_host_read_leaves_no_alias_behind() -> None:
    t, _ = matrix()
    t.with_host_read(lambda s: s.sum())
    with t.map_write():
        pass


# -- to_numpy ----------------------------------------------------------------------------
def test_to_numpy_is_a_zero_copy_read_only_f_ordered_array() -> None:
    t, data = matrix()
    with tfr.forbid_copies():
        a = t.to_numpy()
    assert (a.shape, a.flags.f_contiguous, a.flags.writeable, addr(a)) == (
        (2, 3),
        True,
        False,
        addr(data),
    )


def test_to_numpy_copy_true_is_a_writable_named_copy() -> None:
    t, data = matrix()
    before = tfr.copy_stats().copies
    a = t.to_numpy(copy=True)
    assert tfr.copy_stats().copies == before + 1
    assert a.flags.writeable and a.flags.f_contiguous
    assert addr(a) != addr(data)
    a[0, 0] = 100.0
    assert t.host_data()[0] == 1.0


# -- numpy 2 __array__ ---------------------------------------------------------------------
def test_np_asarray_is_zero_copy_and_read_only() -> None:
    t, data = matrix()
    with tfr.forbid_copies():
        a = np.asarray(t)
    assert (addr(a), a.flags.writeable, a.shape) == (addr(data), False, (2, 3))


def test_np_asarray_with_the_same_dtype_is_zero_copy() -> None:
    t, data = matrix()
    with tfr.forbid_copies():
        assert addr(np.asarray(t, dtype=np.float64)) == addr(data)


def test_np_array_copy_false_is_zero_copy() -> None:
    t, data = matrix()
    with tfr.forbid_copies():
        assert addr(np.array(t, copy=False)) == addr(data)


def test_np_array_default_copies_and_counts() -> None:
    t, data = matrix()
    before = tfr.copy_stats().copies
    a = np.array(t)
    assert tfr.copy_stats().copies == before + 1
    assert a.flags.writeable
    assert addr(a) != addr(data)


def test_a_dtype_change_is_a_named_copy() -> None:
    t, _ = matrix()
    before = tfr.copy_stats()
    a = np.asarray(t, dtype=np.float32)
    after = tfr.copy_stats()
    assert (a.dtype, after.copies - before.copies, after.bytes - before.bytes) == (
        np.float32,
        1,
        24,
    )
    np.testing.assert_array_equal(a, [[1, 3, 5], [2, 4, 6]])


def test_a_dtype_change_with_copy_false_is_refused_and_leaves_no_alias() -> None:
    t, _ = matrix()
    with pytest.raises(ValueError) as err:
        np.array(t, dtype=np.float32, copy=False)
    assert isinstance(err.value, tfr.ValidationError)
    assert err.value.kind == "COPY_REQUIRED"
    with t.map_write():  # the refused conversion left no alias in the traceback
        pass


def test_a_dtype_change_inside_forbid_copies_is_refused() -> None:
    t, _ = matrix()
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        np.asarray(t, dtype=np.float32)


def test_numpy_functions_read_tensors_directly() -> None:
    t, _ = matrix()
    assert float(np.sum(t)) == 21.0


# -- reads during exclusive borrows ----------------------------------------------------------
@pytest.mark.parametrize(
    "read",
    [
        lambda t: t.host_data(),
        lambda t: t.map_read(),
        lambda t: t.with_host_read(len),
        lambda t: t.to_numpy(),
        lambda t: np.asarray(t),
        lambda t: t.as_view(),
        lambda t: t.duplicate(),
    ],
    ids=["host_data", "map_read", "with_host_read", "to_numpy", "asarray", "as_view", "dup"],
)
def test_reading_during_an_exclusive_borrow_is_refused(read) -> None:
    t, _ = matrix()
    with t.map_write(), pytest.raises(tfr.BorrowError) as err:
        read(t)
    assert err.value.kind == "EXCLUSIVELY_BORROWED"
    assert err.value.holder == "Tensor.map_write"


def test_repr_shows_the_values_and_the_dtype() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.array([1.0, 2.0]))
    assert repr(t) == "Tensor([1., 2.], dtype=float64)"


def test_repr_prints_rows_like_numpy_although_memory_is_column_major() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 2), np.array([1.0, 3.0, 2.0, 4.0]))
    assert repr(t) == "Tensor([[1., 2.],\n        [3., 4.]], dtype=float64)"


def test_repr_during_an_exclusive_borrow_does_not_read() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.array([1.0, 2.0]))
    with t.map_write():
        assert repr(t) == (
            "Tensor(<not readable now: exclusively borrowed>, shape=(2,), dtype=float64)"
        )


def test_a_one_element_tensor_has_a_truth_value() -> None:
    assert bool(tfr.Tensor.from_vec_col_major((), [2.0]))
    assert not bool(tfr.Tensor.from_vec_col_major((1, 1), [0.0]))


def test_the_truth_value_of_several_elements_is_ambiguous() -> None:
    t, _ = matrix()
    with pytest.raises(tfr.ValidationError) as err:
        bool(t)
    assert (err.value.op, err.value.kind, err.value.size) == (
        "Tensor.__bool__",
        "AMBIGUOUS_TRUTH",
        6,
    )
