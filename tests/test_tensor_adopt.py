"""Adopting data: from_vec_col_major, from_vec_row_major, from_numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr

ALL_DTYPES = list(tfr.DType)


def addr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


# -- from_vec_col_major --------------------------------------------------------------
def test_from_vec_col_major_keeps_the_buffer() -> None:
    data = np.arange(6.0)
    t = tfr.Tensor.from_vec_col_major((2, 3), data)
    assert addr(t.host_data()) == addr(data)


def test_from_vec_col_major_freezes_the_callers_handle() -> None:
    data = np.arange(6.0)
    tfr.Tensor.from_vec_col_major((2, 3), data)
    assert not data.flags.writeable


def test_the_frozen_handle_still_reads_the_tensors_memory() -> None:
    data = np.zeros(2)
    t = tfr.Tensor.from_vec_col_major((2,), data)
    with t.map_write() as w:
        w.array[1] = 5.0
    assert data.tolist() == [0.0, 5.0]


def test_the_frozen_handle_is_not_counted_as_an_alias() -> None:
    data = np.zeros(2)
    t = tfr.Tensor.from_vec_col_major((2,), data)
    with t.map_write() as w:  # `data` is alive, yet exclusive access is granted
        w.array[0] = 1.0
    assert data[0] == 1.0


def test_from_vec_col_major_does_not_copy() -> None:
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        tfr.Tensor.from_vec_col_major((3,), np.ones(3))
    assert tfr.copy_stats() == before


def test_from_vec_col_major_reads_the_data_column_major() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 2), np.array([1.0, 2.0, 3.0, 4.0]))
    assert t.to_numpy().tolist() == [[1.0, 3.0], [2.0, 4.0]]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_from_vec_col_major_adopts_every_dtype(dtype: tfr.DType) -> None:
    data = np.ones(4, dtype=dtype.numpy)
    t = tfr.Tensor.from_vec_col_major((2, 2), data)
    assert t.dtype is dtype
    assert addr(t.host_data()) == addr(data)


def test_from_vec_col_major_accepts_a_bare_int_shape() -> None:
    assert tfr.Tensor.from_vec_col_major(3, np.ones(3)).shape == (3,)


def test_from_vec_col_major_accepts_numpy_ints_in_the_shape() -> None:
    t = tfr.Tensor.from_vec_col_major((np.int64(2), np.int32(2)), np.ones(4))
    assert t.shape == (2, 2)
    assert all(type(d) is int for d in t.shape)


def test_from_vec_col_major_accepts_a_numpy_array_as_the_shape() -> None:
    assert tfr.Tensor.from_vec_col_major(np.array([2, 3]), np.ones(6)).shape == (2, 3)


def test_a_python_list_is_built_once_and_not_frozen() -> None:
    values = [1.0, 2.0, 3.0]
    t = tfr.Tensor.from_vec_col_major((3,), values)
    assert t.host_data().tolist() == values
    assert t.dtype is tfr.DType.F64


def test_a_python_list_takes_the_requested_dtype() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), [1, 0], dtype=tfr.DType.BOOL)
    assert t.host_data().tolist() == [True, False]


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([1, 2], tfr.DType.I64),
        ([1.5], tfr.DType.F64),
        ([True], tfr.DType.BOOL),
        ([1j], tfr.DType.C64),
    ],
)
def test_a_python_list_infers_its_dtype_like_numpy(values: list, dtype: tfr.DType) -> None:
    assert tfr.Tensor.from_vec_col_major((len(values),), values).dtype is dtype


def test_explicit_matching_dtype_still_adopts() -> None:
    data = np.ones(2, np.float32)
    t = tfr.Tensor.from_vec_col_major((2,), data, dtype=np.float32)
    assert addr(t.host_data()) == addr(data)


# -- properties -------------------------------------------------------------------------
def test_shape_dtype_ndim_size_nbytes() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 3, 4), np.zeros(24, np.float32))
    assert (t.shape, t.dtype, t.ndim, t.size, t.nbytes) == ((2, 3, 4), tfr.DType.F32, 3, 24, 96)


def test_strides_are_column_major_in_elements() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 3, 4), np.zeros(24))
    assert t.strides == (1, 2, 6)


def test_host_tensor_has_no_allocation_identity() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.zeros(2))
    assert (t.allocation_domain, t.allocation_id) == (None, None)


def test_host_tensor_has_the_default_placement() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.zeros(2))
    assert t.placement == tfr.Placement(tfr.MemoryKind.UNPINNED_HOST, None, None)


def test_host_tensor_is_not_group_backed() -> None:
    assert not tfr.Tensor.from_vec_col_major((2,), np.zeros(2)).is_group_backed


def test_len_is_the_first_dimension() -> None:
    assert len(tfr.Tensor.from_vec_col_major((3, 2), np.zeros(6))) == 3


def test_len_of_a_zero_length_tensor_is_zero() -> None:
    assert len(tfr.Tensor.from_vec_col_major((0, 2), np.zeros(0))) == 0


def test_len_of_a_rank_0_tensor_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        len(tfr.Tensor.from_vec_col_major((), np.zeros(1)))


def test_tensors_cannot_be_constructed_directly() -> None:
    with pytest.raises(TypeError, match="from_vec_col_major"):
        tfr.Tensor()


# -- from_vec_row_major -------------------------------------------------------------
def test_from_vec_row_major_reorders_into_column_major() -> None:
    t = tfr.Tensor.from_vec_row_major((2, 3), np.arange(6.0))
    assert t.to_numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert t.host_data().tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]


def test_from_vec_row_major_is_a_new_buffer_and_leaves_data_writable() -> None:
    data = np.arange(6.0)
    t = tfr.Tensor.from_vec_row_major((3, 2), data)
    assert addr(t.host_data()) != addr(data)
    assert data.flags.writeable
    assert data.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_from_vec_row_major_accepts_read_only_and_strided_data() -> None:
    data = np.arange(12.0)[::2]
    data.flags.writeable = False
    t = tfr.Tensor.from_vec_row_major((2, 3), data)
    assert t.to_numpy().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]


def test_from_vec_row_major_of_a_list() -> None:
    t = tfr.Tensor.from_vec_row_major((2, 2), [1, 2, 3, 4], dtype=np.int32)
    assert (t.dtype, t.to_numpy().tolist()) == (tfr.DType.I32, [[1, 2], [3, 4]])


def test_from_vec_row_major_of_a_3d_shape_matches_numpy_c_order() -> None:
    src = np.arange(24).astype(np.int64)
    t = tfr.Tensor.from_vec_row_major((2, 3, 4), src)
    np.testing.assert_array_equal(t.to_numpy(), src.reshape(2, 3, 4))


# -- from_numpy -------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 4), (1, 1, 1, 2)])
def test_from_numpy_adopts_an_f_contiguous_array_of_any_rank(shape: tuple[int, ...]) -> None:
    arr = np.asfortranarray(np.arange(float(np.prod(shape))).reshape(shape))
    before = tfr.copy_stats()
    t = tfr.from_numpy(arr)
    assert tfr.copy_stats() == before
    assert addr(t.host_data()) == addr(arr)
    assert not arr.flags.writeable
    np.testing.assert_array_equal(t.to_numpy(), arr)


def test_from_numpy_refuses_a_c_ordered_matrix_and_says_pass_copy_true() -> None:
    arr = np.arange(6.0).reshape(2, 3)
    with pytest.raises(tfr.ValidationError, match="pass copy=True") as err:
        tfr.from_numpy(arr)
    assert err.value.op == "tenferro.from_numpy"
    assert arr.flags.writeable


def test_from_numpy_copy_true_makes_a_named_copy_and_leaves_the_array_alone() -> None:
    arr = np.arange(6.0).reshape(2, 3)
    before = tfr.copy_stats()
    t = tfr.from_numpy(arr, copy=True)
    assert tfr.copy_stats().copies == before.copies + 1
    assert addr(t.host_data()) != addr(arr)
    assert arr.flags.writeable
    np.testing.assert_array_equal(t.to_numpy(), arr)


def test_from_numpy_copy_true_copies_even_an_f_contiguous_array() -> None:
    arr = np.asfortranarray(np.ones((2, 2)))
    t = tfr.from_numpy(arr, copy=True)
    assert addr(t.host_data()) != addr(arr)
    assert arr.flags.writeable


def test_from_numpy_copy_true_accepts_a_strided_read_only_view() -> None:
    arr = np.arange(20.0).reshape(4, 5)[::2, ::-2]
    arr.flags.writeable = False
    np.testing.assert_array_equal(tfr.from_numpy(arr, copy=True).to_numpy(), arr)


def test_from_numpy_adopts_a_1d_c_contiguous_array() -> None:
    arr = np.arange(3.0)
    assert addr(tfr.from_numpy(arr).host_data()) == addr(arr)


def test_from_numpy_of_a_list_needs_copy_true() -> None:
    with pytest.raises(tfr.ValidationError, match="copy=True"):
        tfr.from_numpy([1.0, 2.0])
    assert tfr.from_numpy([[1.0, 2.0]], copy=True).shape == (1, 2)


def test_from_numpy_keeps_the_shape_of_a_rank_0_array() -> None:
    t = tfr.from_numpy(np.array(7.0))
    assert (t.shape, t.to_numpy().item()) == ((), 7.0)


# -- the base chain of an adopted view -----------------------------------------------------
class _Sub(np.ndarray):
    """A subclass, so that numpy keeps a three-array base chain: view -> middle -> base."""


def three_chain(n: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    base = np.arange(float(n))
    middle = base.view(_Sub)
    view = middle[2:6]
    assert view.base is middle and middle.base is base
    return view, middle, base


def test_adopting_a_view_freezes_its_base() -> None:
    big = np.arange(10.0)
    tfr.Tensor.from_vec_col_major((4,), big[2:6])
    assert not big.flags.writeable


def test_from_numpy_of_an_f_ordered_reshape_freezes_its_1d_base() -> None:
    arr = np.arange(6.0).reshape(2, 3, order="F")
    tfr.from_numpy(arr)
    assert not arr.base.flags.writeable


def test_adopting_a_view_freezes_every_array_of_its_base_chain() -> None:
    view, middle, base = three_chain()
    tfr.Tensor.from_vec_col_major((4,), view)
    assert [a.flags.writeable for a in (view, middle, base)] == [False, False, False]


def test_an_overlapping_view_of_an_adopted_base_is_refused_as_read_only() -> None:
    big = np.arange(10.0)
    t1 = tfr.Tensor.from_vec_col_major((4,), big[2:6])
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((4,), big[4:8])
    assert err.value.kind == "READ_ONLY"
    assert t1.host_data().tolist() == [2.0, 3.0, 4.0, 5.0]


def test_a_writable_view_whose_base_was_adopted_is_refused_naming_copy_true() -> None:
    big = np.arange(10.0)
    later = big[4:8]  # made before big was frozen, so still writable itself
    tfr.Tensor.from_vec_col_major((4,), big[2:6])
    with pytest.raises(tfr.ValidationError, match=r"copy=True") as err:
        tfr.Tensor.from_vec_col_major((4,), later)
    assert err.value.kind == "READ_ONLY"


def test_from_numpy_refuses_a_writable_view_of_a_read_only_base() -> None:
    base = np.zeros(6)
    arr = base.reshape(2, 3, order="F")
    base.flags.writeable = False
    with pytest.raises(tfr.ValidationError) as err:
        tfr.from_numpy(arr)
    assert (err.value.op, err.value.kind) == ("tenferro.from_numpy", "READ_ONLY")


def test_a_refused_adoption_freezes_no_array_of_the_chain() -> None:
    view, middle, base = three_chain()
    base.flags.writeable = False
    with pytest.raises(tfr.ValidationError):
        tfr.Tensor.from_vec_col_major((4,), view)
    assert (view.flags.writeable, middle.flags.writeable) == (True, True)


def test_adopting_an_array_handed_out_by_an_exclusive_borrow_is_refused() -> None:
    owner = tfr.Tensor.from_vec_col_major((4,), np.zeros(4))
    with owner.map_write() as w, pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((4,), w.array)
    assert err.value.kind == "TENSOR_MEMORY"
