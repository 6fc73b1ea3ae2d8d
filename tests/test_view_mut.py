"""TensorViewMut: exclusive writable views and try_multi_slice_mut."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tenferro as tfr


def zeros(shape: tuple[int, ...]) -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major(shape, np.zeros(int(np.prod(shape))))


# -- as_view_mut ------------------------------------------------------------------------------
def test_to_numpy_is_writable_inside_the_block_and_writes_land_in_the_buffer() -> None:
    t = zeros((2, 2))
    with t.as_view_mut() as mv:
        a = mv.to_numpy()
        assert a.flags.writeable
        a[1, 0] = 7.0
        del a
    assert t.host_data().tolist() == [0.0, 7.0, 0.0, 0.0]


def test_to_numpy_shares_the_tensors_buffer() -> None:
    data = np.zeros(4)
    t = tfr.Tensor.from_vec_col_major((2, 2), data)
    with t.as_view_mut() as mv:
        assert mv.to_numpy().ctypes.data == data.ctypes.data


def test_arrays_from_to_numpy_are_read_only_after_the_block() -> None:
    t = zeros((2, 2))
    with t.as_view_mut() as mv:
        a = mv.to_numpy()
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a.flags.writeable = True


def test_set_writes_one_element() -> None:
    t = zeros((2, 3))
    with t.as_view_mut() as mv:
        mv.set((1, 2), 5.0)
    assert t.to_numpy()[1, 2] == 5.0


def test_set_on_a_transposed_slice_writes_the_right_element() -> None:
    t = zeros((2, 3))
    with t.as_view_mut() as mv:
        mv.transpose_view((1, 0)).slice_view((slice(None, None, -1), 1)).set((0,), 9.0)
    assert t.to_numpy()[1, 2] == 9.0


def test_np_asarray_of_a_mutable_view_is_writable_inside_and_frozen_after() -> None:
    t = zeros((3,))
    with t.as_view_mut() as mv:
        a = np.asarray(mv)
        a[:] = 1.0
    assert (t.host_data().tolist(), a.flags.writeable) == ([1.0, 1.0, 1.0], False)


def test_a_mutable_view_reads_through_get() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.array([3.0, 4.0]))
    with t.as_view_mut() as mv:
        assert mv.get(1) == 4.0


def test_using_a_mutable_view_after_the_block_is_refused() -> None:
    t = zeros((2,))
    with t.as_view_mut() as mv:
        pass
    with pytest.raises(tfr.BorrowError) as err:
        mv.to_numpy()
    assert err.value.kind == "BORROW_ENDED"


def test_as_view_mut_dropped_without_a_with_block_ends_its_borrow() -> None:
    t = zeros((2,))
    mv = t.as_view_mut()
    mv.set(0, 1.0)
    del mv
    gc.collect()
    assert t.host_data().tolist() == [1.0, 0.0]


def test_release_ends_the_borrow() -> None:
    t = zeros((2,))
    mv = t.as_view_mut()
    mv.release()
    assert t.host_data().tolist() == [0.0, 0.0]


def test_as_view_mut_is_refused_while_a_shared_view_lives() -> None:
    t = zeros((2,))
    v = t.as_view()
    with pytest.raises(tfr.BorrowError) as err:
        t.as_view_mut()
    assert (err.value.op, err.value.aliases) == ("Tensor.as_view_mut", 1)
    del v
    with t.as_view_mut():
        pass


def test_a_second_as_view_mut_is_refused_while_the_first_lasts() -> None:
    t = zeros((2,))
    with t.as_view_mut(), pytest.raises(tfr.BorrowError) as err:
        t.as_view_mut()
    assert err.value.kind == "EXCLUSIVELY_BORROWED"


def test_set_with_a_wrong_number_of_indices_is_refused() -> None:
    t = zeros((2, 2))
    with t.as_view_mut() as mv, pytest.raises(tfr.ValidationError) as err:
        mv.set((0,), 1.0)
    assert err.value.kind == "INVALID_INDEX"


def test_set_out_of_range_is_refused_and_writes_nothing() -> None:
    t = zeros((2, 2))
    with t.as_view_mut() as mv, pytest.raises(tfr.ValidationError) as err:
        mv.set((2, 0), 1.0)
    assert err.value.kind == "INDEX_OUT_OF_RANGE"
    assert t.host_data().tolist() == [0.0] * 4


# -- try_multi_slice_mut ----------------------------------------------------------------------
COL0, COL1 = (slice(None), 0), (slice(None), 1)
ROW0, ROW1 = (0, slice(None)), (1, slice(None))


def test_two_columns_of_a_2x2_matrix_split() -> None:
    with zeros((2, 2)).as_view_mut() as mv:
        assert mv.try_multi_slice_mut(COL0, COL1) is not None


def test_two_rows_of_a_2x2_matrix_do_not_split() -> None:
    with zeros((2, 2)).as_view_mut() as mv:
        assert mv.try_multi_slice_mut(ROW0, ROW1) is None


def test_writes_through_the_two_column_halves_land_in_the_shared_buffer() -> None:
    t = zeros((2, 2))
    with t.as_view_mut() as mv:
        halves = mv.try_multi_slice_mut(COL0, COL1)
        assert halves is not None
        left, right = halves
        left.set((1,), 1.0)
        right.set((0,), 2.0)
    assert t.host_data().tolist() == [0.0, 1.0, 2.0, 0.0]


def test_column_halves_give_writable_numpy_arrays() -> None:
    t = zeros((2, 2))
    with t.as_view_mut() as mv:
        halves = mv.try_multi_slice_mut(COL0, COL1)
        assert halves is not None
        halves[0].to_numpy()[:] = 1.0
        halves[1].to_numpy()[:] = 2.0
    assert t.to_numpy().tolist() == [[1.0, 2.0], [1.0, 2.0]]


def test_halves_cannot_be_used_after_the_block() -> None:
    with zeros((2, 2)).as_view_mut() as mv:
        halves = mv.try_multi_slice_mut(COL0, COL1)
    assert halves is not None
    with pytest.raises(tfr.BorrowError):
        halves[0].set((0,), 1.0)


def test_the_same_range_twice_does_not_split() -> None:
    with zeros((4,)).as_view_mut() as mv:
        assert mv.try_multi_slice_mut(slice(0, 2), slice(1, 3)) is None


def test_adjacent_ranges_split() -> None:
    with zeros((4,)).as_view_mut() as mv:
        assert mv.try_multi_slice_mut(slice(0, 2), slice(2, 4)) is not None


def test_interleaved_strided_ranges_do_not_split() -> None:
    with zeros((6,)).as_view_mut() as mv:
        assert mv.try_multi_slice_mut(slice(0, None, 2), slice(1, None, 2)) is None


def test_an_empty_range_splits_from_anything() -> None:
    with zeros((4,)).as_view_mut() as mv:
        assert mv.try_multi_slice_mut(slice(0, 0), slice(None)) is not None


def test_reversed_ranges_are_compared_by_their_element_intervals() -> None:
    with zeros((6,)).as_view_mut() as mv:
        assert mv.try_multi_slice_mut(slice(2, None, -1), slice(5, 2, -1)) is not None
        assert mv.try_multi_slice_mut(slice(3, None, -1), slice(5, 2, -1)) is None


def test_try_multi_slice_mut_after_the_block_is_refused() -> None:
    with zeros((2, 2)).as_view_mut() as mv:
        pass
    with pytest.raises(tfr.BorrowError):
        mv.try_multi_slice_mut(COL0, COL1)


def test_try_multi_slice_mut_with_a_bad_index_raises_the_slice_error() -> None:
    with zeros((2, 2)).as_view_mut() as mv, pytest.raises(tfr.ValidationError) as err:
        mv.try_multi_slice_mut((0, 5), COL1)
    assert (err.value.op, err.value.kind) == ("TensorViewMut.slice_view", "INDEX_OUT_OF_RANGE")


# -- set: one element at a full integer index, or a typed refusal that writes nothing ---------
def filled(shape: tuple[int, ...], dtype: object = np.float64) -> tfr.Tensor:
    n = int(np.prod(shape))
    return tfr.Tensor.from_vec_col_major(shape, np.arange(1, n + 1).astype(dtype))


def refused_set(t: tfr.Tensor, index: object, value: object) -> tfr.ValidationError:
    """The error `set` raises, after checking that nothing was written."""
    before = t.host_data().tolist()
    with t.as_view_mut() as mv, pytest.raises(tfr.ValidationError) as err:
        mv.set(index, value)
    assert t.host_data().tolist() == before
    assert err.value.op == "TensorViewMut.set"
    return err.value


def test_set_refuses_a_bool_index_instead_of_writing_every_element() -> None:
    assert refused_set(filled((4,)), (True,), -1.0).kind == "INVALID_INDEX"


def test_set_refuses_a_numpy_bool_index() -> None:
    assert refused_set(filled((4,)), (np.True_,), -1.0).kind == "INVALID_INDEX"


def test_set_refuses_a_slice_index() -> None:
    assert refused_set(filled((4,)), (slice(None),), -1.0).kind == "INVALID_INDEX"


def test_set_refuses_a_list_inside_the_index() -> None:
    assert refused_set(filled((2, 2)), (0, [0, 1]), -1.0).kind == "INVALID_INDEX"


def test_set_refuses_an_ellipsis_index() -> None:
    assert refused_set(filled((2, 2)), (..., 0), -1.0).kind == "INVALID_INDEX"


def test_set_refuses_a_float_index_as_invalid_not_out_of_range() -> None:
    assert refused_set(filled((2, 2)), (0, 1.0), -1.0).kind == "INVALID_INDEX"


def test_set_refuses_a_string_value_as_invalid_value() -> None:
    assert refused_set(filled((2,)), (0,), "abc").kind == "INVALID_VALUE"


def test_set_refuses_a_numeric_string_value() -> None:
    assert refused_set(filled((2,)), (0,), "1.5").kind == "INVALID_VALUE"


def test_set_refuses_none_instead_of_storing_nan() -> None:
    assert refused_set(filled((2,)), (0,), None).kind == "INVALID_VALUE"


def test_set_refuses_a_sequence_value() -> None:
    assert refused_set(filled((2,)), (0,), [1.0]).kind == "INVALID_VALUE"


def test_set_refuses_a_one_element_array_value() -> None:
    assert refused_set(filled((2,)), (0,), np.array([1.0])).kind == "INVALID_VALUE"


def test_set_refuses_a_complex_value_for_a_real_tensor() -> None:
    assert refused_set(filled((2,)), (0,), np.complex128(1 + 2j)).kind == "SCALAR_DTYPE"


def test_set_refuses_a_float_value_for_an_integer_tensor_instead_of_truncating() -> None:
    assert refused_set(filled((2,), np.int64), (0,), 1.5).kind == "SCALAR_DTYPE"


def test_set_refuses_an_int_beyond_the_dtype() -> None:
    err = refused_set(filled((2,), np.int32), (0,), 2**40)
    assert err.kind == "SCALAR_OUT_OF_RANGE"


def test_set_refuses_a_float_that_overflows_f32() -> None:
    assert refused_set(filled((2,), np.float32), (0,), 1e300).kind == "SCALAR_OUT_OF_RANGE"


@pytest.mark.parametrize(
    ("dtype", "value", "stored"),
    [
        (np.float64, 2, 2.0),
        (np.float64, np.float32(0.5), 0.5),
        (np.int32, np.int64(-7), -7),
        (np.complex128, 1.5, 1.5 + 0j),
        (np.bool_, True, True),
        (np.float64, np.array(3.0), 3.0),
        (np.float64, float("nan"), None),
    ],
)
def test_set_stores_a_number_of_the_same_or_a_lower_kind(
    dtype: type, value: object, stored: object
) -> None:
    t = filled((2,), dtype)
    with t.as_view_mut() as mv:
        mv.set((1,), value)
    got = t.host_data().tolist()[1]
    assert np.isnan(got) if stored is None else got == stored


def test_set_and_get_refuse_the_same_index_the_same_way() -> None:
    t = filled((2, 2))
    with t.as_view_mut() as mv:
        for index in [(True, 0), (0, slice(None)), (0, [0, 1]), (0, 1.0), (0,), (2, 0)]:
            with pytest.raises(tfr.ValidationError) as by_get:
                mv.get(index)
            with pytest.raises(tfr.ValidationError) as by_set:
                mv.set(index, 0.0)
            assert by_get.value.kind == by_set.value.kind
            assert by_get.value.message == by_set.value.message


def test_set_refuses_a_numpy_unsigned_int_beyond_int64_instead_of_wrapping_it() -> None:
    err = refused_set(filled((2,), np.int64), (0,), np.uint64(2**64 - 1))
    assert err.kind == "SCALAR_OUT_OF_RANGE"


def test_set_describes_a_huge_int_without_printing_it() -> None:
    err = refused_set(filled((2,)), (0,), 10**5000)
    assert (err.kind, "bits" in err.message, len(err.message) < 200) == (
        "SCALAR_OUT_OF_RANGE",
        True,
        True,
    )
