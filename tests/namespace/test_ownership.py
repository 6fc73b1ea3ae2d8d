"""The namespace keeps the ownership model: adoption, counted copies, pooled outputs."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tenferro as tfr


def test_asarray_adopts_an_f_ordered_array_and_freezes_it() -> None:
    data = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    before = tfr.copy_stats()
    t = tfr.asarray(data)
    assert tfr.copy_stats() == before
    assert isinstance(t, tfr.Tensor)
    assert np.asarray(t).ctypes.data == data.ctypes.data
    assert not data.flags.writeable


def test_asarray_adopts_a_c_ordered_array_as_a_permuted_view() -> None:
    data = np.arange(6.0).reshape(2, 3)
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        t = tfr.asarray(data)
    assert tfr.copy_stats() == before
    assert isinstance(t, tfr.TensorView)
    assert t.shape == (2, 3)
    assert t.strides == (3, 1)
    assert np.asarray(t).ctypes.data == data.ctypes.data
    np.testing.assert_array_equal(np.asarray(t), np.arange(6.0).reshape(2, 3))
    assert not data.flags.writeable
    assert not data.base.flags.writeable


def test_asarray_of_a_read_only_array_is_a_counted_copy() -> None:
    data = np.arange(3.0)
    data.flags.writeable = False
    before = tfr.copy_stats().copies
    t = tfr.asarray(data)
    assert tfr.copy_stats().copies == before + 1
    assert np.asarray(t).ctypes.data != data.ctypes.data


def test_asarray_refuses_to_copy_when_copy_is_false() -> None:
    data = np.arange(3.0)[::2]
    with pytest.raises(tfr.ValidationError) as err:
        tfr.asarray(data, copy=False)
    assert err.value.kind == "COPY_REQUIRED"
    assert data.flags.writeable


def test_asarray_of_python_data_creates_without_counting_a_copy() -> None:
    before = tfr.copy_stats()
    t = tfr.asarray([[1, 2], [3, 4]])
    assert tfr.copy_stats() == before
    assert t.dtype is tfr.int64
    np.testing.assert_array_equal(np.asarray(t), [[1, 2], [3, 4]])


def test_asarray_of_a_tenferro_array_returns_it() -> None:
    t = tfr.asarray([1.0])
    assert tfr.asarray(t) is t
    before = tfr.copy_stats().copies
    c = tfr.asarray(t, copy=True)
    assert c is not t
    assert tfr.copy_stats().copies == before + 1


def test_outputs_come_from_the_default_engines_pool() -> None:
    eng = tfr.CpuEngine()
    with eng:
        a = tfr.ones((64,))
        b = tfr.exp(a) + a
        address = np.asarray(b).ctypes.data
        del b
        gc.collect()
        c = tfr.zeros((64,))
    assert eng.buffer_pool_cache_stats().hits >= 1
    assert np.asarray(c).ctypes.data == address


def test_with_engine_selects_the_engine_for_namespace_functions() -> None:
    eng = tfr.CpuEngine()
    with eng:
        t = tfr.ones((8,))
    misses = eng.buffer_pool_cache_stats().misses
    assert misses >= 1
    del t


def test_reshape_of_c_ordered_data_is_a_view() -> None:
    t = tfr.asarray(np.arange(12.0).reshape(3, 4))
    with tfr.forbid_copies():
        r = tfr.reshape(t, (2, 6))
    np.testing.assert_array_equal(np.asarray(r), np.arange(12.0).reshape(2, 6))


def test_reshape_that_needs_a_copy_is_counted_and_refused_under_forbid_copies() -> None:
    t = tfr.asarray(np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        tfr.reshape(t, (6,))
    before = tfr.copy_stats().copies
    flat = tfr.reshape(t, (6,))
    assert tfr.copy_stats().copies == before + 1
    np.testing.assert_array_equal(np.asarray(flat), np.arange(6.0))


def test_reshape_with_copy_false_refuses_when_a_copy_is_needed() -> None:
    t = tfr.asarray(np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    with pytest.raises(tfr.ValidationError) as err:
        tfr.reshape(t, (6,), copy=False)
    assert err.value.kind == "COPY_REQUIRED"


def test_a_view_keeps_the_owners_buffer_out_of_the_pool() -> None:
    eng = tfr.CpuEngine()
    with eng:
        owner = tfr.ones((32,))
        view = owner[1:]
        address = np.asarray(owner).ctypes.data
        del owner
        gc.collect()
        other = tfr.zeros((32,))
    assert np.asarray(other).ctypes.data != address
    np.testing.assert_array_equal(np.asarray(view), np.ones(31))


def test_a_moved_tensor_is_refused_by_namespace_functions() -> None:
    t = tfr.asarray([1.0, 2.0])
    t.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        tfr.exp(t)


def test_a_tensor_under_an_exclusive_borrow_cannot_be_read_by_namespace_functions() -> None:
    t = tfr.asarray([1.0, 2.0])
    with t.map_write(), pytest.raises(tfr.BorrowError):
        tfr.sum(t)


def test_asarray_of_a_read_guard_is_a_counted_copy() -> None:
    t = tfr.asarray([1.0, 2.0])
    with t.map_read() as guard:
        before = tfr.copy_stats().copies
        c = tfr.asarray(guard)
        assert tfr.copy_stats().copies == before + 1
    np.testing.assert_array_equal(np.asarray(c), [1.0, 2.0])


@pytest.mark.parametrize("convert", [float, int, bool, complex])
def test_a_scalar_conversion_under_an_exclusive_borrow_is_refused(convert: type) -> None:
    t = tfr.asarray(2.0)
    with t.map_write(), pytest.raises(tfr.BorrowError):
        convert(t)


def test_a_moved_scalar_tensor_refuses_conversion() -> None:
    t = tfr.asarray(2.0)
    t.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        float(t)


def test_a_plain_scalar_conversion_reads_without_an_engine_call_and_leaves_no_pin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.namespace import _indexing
    from tenferro.storage import host

    def engine_read(*args: object) -> object:
        raise AssertionError("a plain one-element tensor took the general read")

    monkeypatch.setattr(_indexing, "compute", engine_read)
    values = [float(tfr.asarray(2.5)), int(tfr.asarray(7)), bool(tfr.asarray(True))]
    assert values == [2.5, 7, True]
    assert complex(tfr.asarray(1 + 2j)) == 1 + 2j
    assert host.reading == []


def test_a_one_element_view_converts_through_the_general_read() -> None:
    t = tfr.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert float(t[1, 0]) == 3.0
