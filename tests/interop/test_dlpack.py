"""DLPack export and import: zero copy both ways, read-only shared borrows, copy rules."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr

from_dlpack = tfr.from_dlpack

ALL_DTYPES = list(tfr.DType)


def _values(dtype: tfr.DType, n: int) -> np.ndarray:
    base = np.arange(n)
    if dtype is tfr.DType.BOOL:
        return (base % 2).astype(bool)
    if dtype.is_complex:
        return (base + 1j * base[::-1]).astype(dtype.numpy)
    return base.astype(dtype.numpy)


def _address(t: tfr.Tensor) -> int:
    return int(t.host_data().ctypes.data)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_numpy_imports_tensor_at_the_same_address(dtype: tfr.DType) -> None:
    t = tfr.Tensor.from_vec_col_major((2, 3), _values(dtype, 6))
    arr = np.from_dlpack(t)
    assert arr.ctypes.data == _address(t)
    np.testing.assert_array_equal(arr, t.to_numpy())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_from_dlpack_adopts_numpy_memory_at_the_same_address(dtype: tfr.DType) -> None:
    src = np.asfortranarray(_values(dtype, 6).reshape(2, 3))
    expected = src.copy()
    t = from_dlpack(src)
    assert _address(t) == src.ctypes.data
    np.testing.assert_array_equal(t.to_numpy(), expected)


def test_exported_array_is_read_only() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    arr = np.from_dlpack(t)
    assert not arr.flags.writeable
    with pytest.raises(ValueError):
        arr.flags.writeable = True


def test_live_export_blocks_exclusive_borrow() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    arr = np.from_dlpack(t)
    with pytest.raises(tfr.BorrowError):
        t.map_write()
    del arr
    with t.map_write() as w:
        w.array[0] = 7.0
    assert t.host_data()[0] == 7.0


def test_legacy_capsule_request_is_refused_without_copy() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    with pytest.raises(BufferError) as info:
        t.__dlpack__()
    assert isinstance(info.value, tfr.TenferroError)
    assert info.value.op == "Tensor.__dlpack__"


def test_legacy_capsule_with_copy_is_a_counted_copy() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    before = tfr.copy_stats()
    capsule = t.__dlpack__(copy=True)
    assert capsule is not None
    after = tfr.copy_stats()
    assert (after.copies - before.copies, after.bytes - before.bytes) == (1, 24)


def test_export_refused_inside_forbid_copies_when_copy_requested() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        t.__dlpack__(max_version=(1, 0), copy=True)


def test_export_with_a_stream_on_cpu_is_refused() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    with pytest.raises(BufferError, match="stream"):
        t.__dlpack__(stream=1, max_version=(1, 0))


def test_export_to_a_non_cpu_device_is_refused() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))


def test_host_tensor_reports_cpu_device() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    assert t.__dlpack_device__() == (1, 0)


def test_strided_view_exports_without_copy() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 3), np.arange(6.0))
    before = tfr.copy_stats()
    view = t.as_view().transpose_view((1, 0)).slice_view((slice(None, None, -1), 0))
    arr = np.from_dlpack(view)
    np.testing.assert_array_equal(arr, t.to_numpy().T[::-1, 0])
    assert tfr.copy_stats() == before


def test_from_dlpack_freezes_numpy_producer() -> None:
    src = np.arange(4.0)
    from_dlpack(src)
    assert not src.flags.writeable


def test_from_dlpack_tensor_gives_back_the_producer_writable() -> None:
    src = np.arange(4.0)
    t = from_dlpack(src)
    _, vec = t.into_vec_col_major()
    assert vec is src
    assert vec.flags.writeable


def test_from_dlpack_keeps_the_producer_alive() -> None:
    t = from_dlpack(np.arange(5.0))
    import gc

    gc.collect()
    assert t.host_data().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_from_dlpack_copy_false_refuses_row_major() -> None:
    src = np.arange(6.0).reshape(2, 3)
    with pytest.raises(BufferError) as info:
        from_dlpack(src, copy=False)
    assert info.value.kind == "COPY_REQUIRED"
    assert src.flags.writeable


def test_from_dlpack_copy_none_copies_row_major_and_counts_it() -> None:
    src = np.arange(6.0).reshape(2, 3)
    before = tfr.copy_stats().copies
    t = from_dlpack(src)
    assert tfr.copy_stats().copies == before + 1
    np.testing.assert_array_equal(t.to_numpy(), src)
    assert src.flags.writeable


def test_from_dlpack_copy_true_always_copies() -> None:
    src = np.arange(4.0)
    t = from_dlpack(src, copy=True)
    assert _address(t) != src.ctypes.data
    assert src.flags.writeable


def test_from_dlpack_of_a_read_only_producer_copies_or_refuses() -> None:
    src = np.arange(4.0)
    src.flags.writeable = False
    with pytest.raises(BufferError):
        from_dlpack(src, copy=False)
    t = from_dlpack(src)
    assert _address(t) != src.ctypes.data


def test_from_dlpack_rejects_objects_without_the_protocol() -> None:
    with pytest.raises(BufferError) as info:
        from_dlpack([1.0, 2.0])
    assert info.value.op == "tenferro.from_dlpack"


def test_from_dlpack_rejects_unsupported_dtypes() -> None:
    with pytest.raises(tfr.ValidationError) as info:
        from_dlpack(np.arange(3, dtype=np.float16))
    assert info.value.kind == "UNSUPPORTED_DTYPE"


def test_tenferro_round_trip_through_itself_copies_read_only_memory() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    with pytest.raises(BufferError):
        from_dlpack(t, copy=False)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_torch_round_trip_keeps_addresses(dtype: tfr.DType) -> None:
    torch = pytest.importorskip("torch")
    t = tfr.Tensor.from_vec_col_major((6,), _values(dtype, 6))
    x = torch.from_dlpack(t)
    assert x.data_ptr() == _address(t)
    np.testing.assert_array_equal(x.numpy(), t.host_data())
    del x
    src = torch.from_numpy(_values(dtype, 6).copy())
    u = from_dlpack(src)
    assert _address(u) == src.data_ptr()
    np.testing.assert_array_equal(u.host_data(), src.numpy())


def test_torch_transposed_matrix_is_adopted_column_major() -> None:
    torch = pytest.importorskip("torch")
    src = torch.arange(6, dtype=torch.float64).reshape(2, 3).T  # column-major (3, 2)
    u = from_dlpack(src, copy=False)
    assert u.shape == (3, 2)
    assert _address(u) == src.data_ptr()
    np.testing.assert_array_equal(u.to_numpy(), src.numpy())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_version": "x"},
        {"max_version": 1.5},
        {"max_version": (True, 0)},
        {"dl_device": 1.5},
        {"max_version": (1, 0), "copy": "yes"},
    ],
    ids=["text version", "float version", "bool version", "float device", "text copy"],
)
def test_export_with_malformed_arguments_is_a_typed_error(kwargs: dict) -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.arange(3.0))
    with pytest.raises(tfr.InteropError) as info:
        t.__dlpack__(**kwargs)
    assert info.value.kind == "INVALID_ARGUMENT"
    assert info.value.op == "Tensor.__dlpack__"


def test_from_dlpack_refuses_a_malformed_copy_flag_and_adopts_nothing() -> None:
    src = np.arange(3.0)
    with pytest.raises(tfr.InteropError) as info:
        from_dlpack(src, copy="yes")
    assert info.value.kind == "INVALID_ARGUMENT"
    assert src.flags.writeable


def test_from_dlpack_of_a_torch_tensor_that_requires_grad_is_a_typed_error() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(tfr.InteropError) as info:
        from_dlpack(torch.ones(3, requires_grad=True))
    assert info.value.kind == "PRODUCER_REFUSED"
    assert "detach" in str(info.value)


def test_from_dlpack_of_a_numpy_view_freezes_its_base() -> None:
    big = np.arange(10.0)
    from_dlpack(big[2:6])
    assert not big.flags.writeable


def test_from_dlpack_of_a_numpy_view_gives_back_the_view_and_its_base_writable() -> None:
    big = np.arange(10.0)
    view = big[2:6]
    _, vec = from_dlpack(view).into_vec_col_major()
    assert (vec is view, vec.flags.writeable, big.flags.writeable) == (True, True, True)


def test_from_dlpack_copy_false_refuses_a_view_of_an_adopted_base() -> None:
    big = np.arange(10.0)
    later = big[4:8]
    t1 = tfr.Tensor.from_vec_col_major((4,), big[2:6])
    with pytest.raises(BufferError) as info:
        from_dlpack(later, copy=False)
    assert info.value.kind == "COPY_REQUIRED"
    assert later.flags.writeable
    del t1


def test_from_dlpack_copies_a_view_of_an_adopted_base_by_default() -> None:
    big = np.arange(10.0)
    later = big[4:8]
    tfr.Tensor.from_vec_col_major((4,), big[2:6])
    before = tfr.copy_stats().copies
    t = from_dlpack(later)
    assert (_address(t) != later.ctypes.data, tfr.copy_stats().copies) == (True, before + 1)
