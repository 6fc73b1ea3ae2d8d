"""TensorView: descriptor-only transforms over a shared buffer, and named copies of views."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tenferro as tfr


def addr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


def tensor(shape: tuple[int, ...], dtype: type = np.float64) -> tuple[tfr.Tensor, np.ndarray]:
    """A tensor over 0..n-1 and numpy's column-major picture of the same memory."""
    n = int(np.prod(shape))
    data = np.arange(n).astype(dtype)
    t = tfr.Tensor.from_vec_col_major(shape, data)
    return t, data.reshape(shape, order="F")


# -- as_view ---------------------------------------------------------------------------------
def test_as_view_shares_the_buffer() -> None:
    t, ref = tensor((2, 3))
    assert addr(t.as_view().to_numpy()) == addr(ref)


def test_as_view_descriptor_is_compact_column_major() -> None:
    t, _ = tensor((2, 3, 4))
    v = t.as_view()
    assert (v.shape, v.strides, v.offset, v.dtype, v.ndim, v.size) == (
        (2, 3, 4),
        (1, 2, 6),
        0,
        tfr.DType.F64,
        3,
        24,
    )
    assert v.is_contiguous


def test_view_to_numpy_is_read_only() -> None:
    t, _ = tensor((2, 2))
    a = t.as_view().to_numpy()
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a.flags.writeable = True


def test_np_asarray_of_a_view_is_zero_copy() -> None:
    t, ref = tensor((2, 3))
    with tfr.forbid_copies():
        assert addr(np.asarray(t.as_view().transpose_view((1, 0)))) == addr(ref)


def test_np_array_of_a_view_is_a_counted_copy() -> None:
    t, _ = tensor((2, 3))
    v = t.as_view()
    before = tfr.copy_stats().copies
    a = np.array(v)
    assert (tfr.copy_stats().copies - before, a.flags.writeable) == (1, True)


def test_a_view_keeps_the_memory_readable_after_the_tensor_is_dropped() -> None:
    t, _ = tensor((4,))
    v = t.as_view()
    del t
    gc.collect()
    assert v.to_numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


# -- transpose_view ---------------------------------------------------------------------------
def test_transpose_view_permutes_shape_and_strides() -> None:
    t, ref = tensor((2, 3, 4))
    v = t.as_view().transpose_view((2, 0, 1))
    assert (v.shape, v.strides, v.offset) == ((4, 2, 3), (6, 1, 2), 0)
    np.testing.assert_array_equal(v.to_numpy(), ref.transpose(2, 0, 1))


def test_transpose_view_accepts_numpy_ints() -> None:
    t, _ = tensor((2, 3))
    assert t.as_view().transpose_view(np.array([1, 0])).shape == (3, 2)


# -- slice_view -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "index",
    [
        (slice(None), 1),
        (1, slice(None)),
        (slice(None, None, -1), slice(1, None, 2)),
        (Ellipsis, 0),
        (0, Ellipsis),
        (slice(2, 0, -1), -1),
        (-1, slice(None, None, -2)),
        slice(1, 3),
        1,
        (slice(5, 1, -2), slice(None)),
    ],
    ids=repr,
)
def test_slice_view_agrees_with_numpy(index: object) -> None:
    t, ref = tensor((4, 5))
    v = t.as_view().slice_view(index)
    expected = ref[index]
    assert v.shape == expected.shape
    np.testing.assert_array_equal(v.to_numpy(), expected)
    if expected.size:
        assert addr(v.to_numpy()) == addr(expected)


def test_slice_view_offset_and_strides_are_in_elements() -> None:
    t, _ = tensor((4, 5))
    v = t.as_view().slice_view((slice(3, None, -2), slice(1, 4)))
    assert (v.shape, v.strides, v.offset) == ((2, 3), (-2, 4), 7)


def test_slice_bounds_clamp_like_numpy() -> None:
    t, ref = tensor((4,))
    v = t.as_view().slice_view(slice(-100, 100))
    assert v.to_numpy().tolist() == ref[-100:100].tolist()


def test_an_empty_slice_is_a_zero_size_view() -> None:
    t, _ = tensor((4, 2))
    v = t.as_view().slice_view((slice(3, 1), slice(None)))
    assert (v.shape, v.size, v.to_numpy().shape) == ((0, 2), 0, (0, 2))


def test_slice_of_a_slice_composes() -> None:
    t, ref = tensor((6, 6))
    v = t.as_view().slice_view((slice(None, None, 2), slice(1, None)))
    w = v.slice_view((slice(None, None, -1), 2))
    np.testing.assert_array_equal(w.to_numpy(), ref[::2, 1:][::-1, 2])


# -- reshape_view -----------------------------------------------------------------------------
def test_reshape_view_of_a_compact_view_is_column_major() -> None:
    t, ref = tensor((2, 6))
    v = t.as_view().reshape_view((3, 4))
    np.testing.assert_array_equal(v.to_numpy(), ref.reshape((3, 4), order="F"))
    assert addr(v.to_numpy()) == addr(ref)


def test_reshape_view_of_a_compact_column_slice_keeps_its_offset() -> None:
    t, ref = tensor((2, 6))
    v = t.as_view().slice_view((slice(None), slice(2, 5))).reshape_view((6,))
    assert v.offset == 4
    np.testing.assert_array_equal(v.to_numpy(), ref[:, 2:5].reshape(-1, order="F"))


def test_reshape_view_of_a_strided_view_says_use_to_col_major() -> None:
    t, _ = tensor((2, 3))
    v = t.as_view().transpose_view((1, 0))
    with pytest.raises(tfr.ValidationError, match="to_col_major") as err:
        v.reshape_view((6,))
    assert (err.value.op, err.value.kind) == ("TensorView.reshape_view", "NOT_CONTIGUOUS")


def test_reshape_view_to_another_size_is_a_length_mismatch() -> None:
    t, _ = tensor((2, 3))
    with pytest.raises(tfr.ValidationError) as err:
        t.as_view().reshape_view((4,))
    assert err.value.kind == "LENGTH_MISMATCH"


def test_reshape_view_of_a_zero_size_strided_view_is_allowed() -> None:
    t, _ = tensor((3, 4))
    v = t.as_view().slice_view((slice(None, None, 2), slice(0, 0)))
    assert v.reshape_view((0, 5)).shape == (0, 5)


# -- as_real_view ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("complex_type", "real"),
    [(np.complex64, tfr.DType.F32), (np.complex128, tfr.DType.F64)],
)
def test_as_real_view_adds_a_leading_axis_of_two(complex_type: type, real: tfr.DType) -> None:
    data = (np.arange(6) + 1j * np.arange(10, 16)).astype(complex_type)
    t = tfr.Tensor.from_vec_col_major((2, 3), data)
    v = t.as_view().as_real_view()
    ref = data.reshape((2, 3), order="F")
    assert (v.dtype, v.shape, v.strides) == (real, (2, 2, 3), (1, 2, 4))
    np.testing.assert_array_equal(v.to_numpy(), np.stack([ref.real, ref.imag]))
    assert addr(v.to_numpy()) == addr(data)


def test_as_real_view_of_a_strided_complex_view() -> None:
    data = np.arange(6) * (1 + 2j)
    t = tfr.Tensor.from_vec_col_major((6,), data)
    v = t.as_view().slice_view(slice(4, None, -3)).as_real_view()
    assert (v.shape, v.strides, v.offset) == ((2, 2), (1, -6), 8)
    np.testing.assert_array_equal(v.to_numpy(), np.stack([data[4::-3].real, data[4::-3].imag]))


def test_as_real_view_of_a_real_view_is_refused() -> None:
    t, _ = tensor((2,))
    with pytest.raises(tfr.ValidationError) as err:
        t.as_view().as_real_view()
    assert (err.value.op, err.value.kind) == ("TensorView.as_real_view", "DTYPE_MISMATCH")


# -- get -------------------------------------------------------------------------------------
def test_get_reads_one_element_as_a_python_scalar() -> None:
    t, ref = tensor((3, 4))
    v = t.as_view().transpose_view((1, 0))
    got = v.get((3, 1))
    assert (got, type(got)) == (ref[1, 3], float)


def test_get_accepts_negative_indices() -> None:
    t, ref = tensor((3, 4))
    assert t.as_view().get((-1, -2)) == ref[-1, -2]


def test_get_of_a_rank_0_view_takes_an_empty_index() -> None:
    t = tfr.Tensor.from_vec_col_major((), np.array([4.5]))
    assert t.as_view().get(()) == 4.5


def test_get_of_an_as_real_view_reads_the_imaginary_part() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.array([1 + 2j, 3 + 4j]))
    assert t.as_view().as_real_view().get((1, 1)) == 4.0


# -- duplicate and to_col_major -------------------------------------------------------------
def test_duplicate_of_a_contiguous_view_is_a_new_tensor() -> None:
    t, ref = tensor((2, 4))
    before = tfr.copy_stats().copies
    d = t.as_view().slice_view((slice(None), slice(1, 3))).duplicate()
    assert tfr.copy_stats().copies == before + 1
    assert d.shape == (2, 2)
    np.testing.assert_array_equal(d.to_numpy(), ref[:, 1:3])
    assert addr(d.host_data()) != addr(ref)


def test_duplicate_of_a_strided_view_names_to_col_major() -> None:
    t, _ = tensor((2, 4))
    with pytest.raises(tfr.ValidationError, match="to_col_major") as err:
        t.as_view().slice_view((0, slice(None))).duplicate()
    assert (err.value.op, err.value.kind) == ("TensorView.duplicate", "NOT_CONTIGUOUS")


def test_to_col_major_materialises_any_view() -> None:
    t, ref = tensor((3, 4))
    v = t.as_view().transpose_view((1, 0)).slice_view((slice(None, None, -1), slice(0, 3, 2)))
    m = v.to_col_major()
    expected = ref.T[::-1, 0:3:2]
    assert m.shape == expected.shape
    np.testing.assert_array_equal(m.to_numpy(), expected)
    assert m.strides == (1, 4)


def test_to_col_major_of_an_as_real_view_is_a_real_tensor() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.array([1 + 2j, 3 + 4j], np.complex64))
    m = t.as_view().as_real_view().to_col_major()
    assert (m.dtype, m.to_numpy().tolist()) == (tfr.DType.F32, [[1.0, 3.0], [2.0, 4.0]])


def test_view_transforms_never_copy() -> None:
    t, _ = tensor((4, 6))
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        v = t.as_view().transpose_view((1, 0)).slice_view((slice(1, None, 2), slice(None)))
        v = v.slice_view((slice(None), slice(None, None, -1))).transpose_view((1, 0))
        v.to_numpy()
        v.get((0, 0))
    assert tfr.copy_stats() == before


def test_repr_shows_the_descriptor() -> None:
    t, _ = tensor((2, 3))
    v = t.as_view().slice_view((1, slice(None)))
    assert repr(v) == "TensorView([1., 3., 5.], dtype=float64, view: strides=(2,), offset=1)"
