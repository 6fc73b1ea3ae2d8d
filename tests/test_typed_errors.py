"""Every failure is a typed `TenferroError` naming the operation, and changes nothing.

One test per reproducer of issue 8 ("Medium"); each failed on the code before
its fix (raw exception, half-changed counter, silent loss or wrong answer).
"""

from __future__ import annotations

import pickle
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
import tenferro.alloc as alloc_mod
import tenferro.engine.pool as pool_mod
from provider_fakes import FAKE_DOMAIN, FAKE_ID, FakeBuffer
from tenferro.engine.cpu import applied_threads
from tenferro.storage.identity import AllocationKey
from tenferro.storage.root import (
    BackendAllocationBase,
    DeviceAccessRequest,
    ProviderKind,
    import_backend_buffer,
    import_unique_root,
)
from tenferro.storage.span import ByteRange, RootResourceExtent

ENG = tfr.CpuEngine()


def _t(n: int = 6, dtype: Any = np.float64) -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major((n,), np.arange(n, dtype=dtype))


def _square() -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major((3, 3), np.arange(9.0))


def _fail_allocation(*args: Any, **kwargs: Any) -> Any:
    raise MemoryError("test: no memory")


# -- scalars ----------------------------------------------------------------------------
def test_an_int_scalar_beyond_int64_multiplies_a_float_tensor() -> None:
    assert (_t(3) * 2**80).to_numpy().tolist() == [0.0, 2.0**80, 2.0**81]


def test_an_int_scalar_beyond_float32_is_refused_as_out_of_range() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        ENG.mul(_t(3, np.float32), 2**200)
    assert (err.value.op, err.value.kind) == ("CpuEngine.mul", "SCALAR_OUT_OF_RANGE")


def test_an_int_scalar_beyond_int64_is_refused_for_an_int_tensor() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        ENG.mul(_t(3, np.int64), 2**80)
    assert err.value.kind == "SCALAR_OUT_OF_RANGE"


def test_a_fraction_scalar_takes_a_float_tensors_dtype() -> None:
    got = ENG.mul(_t(3), Fraction(1, 2)).to_numpy().tolist()
    assert got == [0.0, 0.5, 1.0]


def test_a_fraction_scalar_is_refused_for_an_int_tensor() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        ENG.add(_t(3, np.int64), Fraction(1, 3))
    assert err.value.kind == "SCALAR_DTYPE"


# -- huge integer arguments ---------------------------------------------------------------
def test_tril_with_a_huge_k_keeps_every_element() -> None:
    assert ENG.tril(_square(), k=2**70).to_numpy().tolist() == _square().to_numpy().tolist()


def test_triu_with_a_huge_negative_k_keeps_every_element() -> None:
    assert ENG.triu(_square(), k=-(2**70)).to_numpy().tolist() == _square().to_numpy().tolist()


def test_tril_with_a_huge_negative_k_keeps_nothing() -> None:
    assert ENG.tril(_square(), k=-(2**70)).to_numpy().tolist() == [[0.0] * 3] * 3


def test_extract_diagonal_with_a_huge_offset_is_empty() -> None:
    assert ENG.extract_diagonal(_square(), offset=2**70).shape == (0,)


def test_cpu_engine_refuses_more_threads_than_numexpr_can_run() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.CpuEngine(threads=2**62)
    assert (err.value.op, err.value.kind) == ("CpuEngine", "INVALID_THREADS")


def test_a_refused_thread_count_is_never_reported_as_applied() -> None:
    before = applied_threads()
    with pytest.raises(tfr.ValidationError):
        tfr.CpuEngine(threads=10**6)
    assert applied_threads() == before


def test_dlpack_accepts_a_huge_max_version() -> None:
    capsule = _t(2).__dlpack__(max_version=(2**70, 0))
    assert type(capsule).__name__ == "PyCapsule"


# -- dtypes -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["09", "(o,K", "1e999", "[", "f8,"])
def test_a_dtype_string_numpy_parses_as_a_literal_is_an_unsupported_dtype(name: str) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((2,), [1.0, 2.0], dtype=name)
    assert (err.value.op, err.value.kind) == ("Tensor.from_vec_col_major", "UNSUPPORTED_DTYPE")


def test_array_protocol_takes_a_tenferro_dtype() -> None:
    arr = _t(3).__array__(dtype=tfr.DType.F32)
    assert (arr.dtype, arr.tolist()) == (np.float32, [0.0, 1.0, 2.0])


def test_array_protocol_refuses_a_dtype_that_is_not_one() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        _t(3).__array__(dtype="09")
    assert (err.value.op, err.value.kind) == ("Tensor.__array__", "UNSUPPORTED_DTYPE")


def test_building_from_floats_refuses_a_lossy_int_dtype() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((2,), [1.5, 2.0], dtype="int64")
    assert (err.value.kind, err.value.index) == ("LOSSY_CONVERSION", 0)


def test_building_from_whole_floats_into_an_int_dtype_is_exact() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), [1.0, 2.0], dtype="int64")
    assert (t.dtype, t.to_numpy().tolist()) == (tfr.DType.I64, [1, 2])


def test_building_from_a_complex_refuses_a_real_dtype_when_it_has_an_imaginary_part() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((1,), [1 + 1j], dtype=tfr.DType.F64)
    assert err.value.kind == "LOSSY_CONVERSION"


def test_building_an_int_beyond_float64_precision_is_refused() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((1,), [2**53 + 1], dtype=tfr.DType.F64)
    assert err.value.kind == "LOSSY_CONVERSION"


def test_building_floats_into_float32_rounds_like_convert() -> None:
    t = tfr.Tensor.from_vec_col_major((1,), [0.1], dtype=tfr.DType.F32)
    assert t.to_numpy()[0] == np.float32(0.1)


def test_building_a_float_past_float32_is_refused() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((1,), [1e300], dtype=tfr.DType.F32)
    assert err.value.kind == "LOSSY_CONVERSION"


# -- views --------------------------------------------------------------------------------
def test_a_huge_slice_step_gives_a_readable_one_element_view() -> None:
    view = _t(5).as_view().slice_view(slice(None, None, 2**63))
    assert view.to_numpy().tolist() == [0.0]


def test_a_huge_slice_step_view_materialises() -> None:
    view = _t(5).as_view().slice_view(slice(None, None, 2**63))
    assert view.to_col_major().to_numpy().tolist() == [0.0]


def test_pickling_a_view_of_an_adopted_tensor_is_refused() -> None:
    with pytest.raises(tfr.BorrowError) as err:
        pickle.dumps(_t(3).as_view())
    assert (err.value.op, err.value.kind) == ("TensorView.__reduce__", "NOT_COPYABLE")


def test_pickling_a_view_of_an_engine_output_is_refused() -> None:
    with pytest.raises(tfr.BorrowError):
        pickle.dumps(ENG.add(_t(3), 1.0).as_view())


def test_copying_a_view_is_refused() -> None:
    import copy

    with pytest.raises(tfr.BorrowError):
        copy.copy(_t(3).as_view())


def test_a_to_col_major_that_cannot_allocate_counts_no_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    view = _t(6).as_view().slice_view(slice(None, None, 2))
    monkeypatch.setattr(alloc_mod, "_empty", _fail_allocation)
    before = tfr.copy_stats()
    with pytest.raises(tfr.OutOfMemoryError) as err:
        view.to_col_major()
    assert (err.value.op, tfr.copy_stats()) == ("TensorView.to_col_major", before)


def test_a_to_numpy_copy_that_cannot_allocate_counts_no_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = _t(6)
    monkeypatch.setattr(alloc_mod, "_empty", _fail_allocation)
    before = tfr.copy_stats()
    with pytest.raises(tfr.OutOfMemoryError):
        t.to_numpy(copy=True)
    assert tfr.copy_stats() == before


# -- evaluate -----------------------------------------------------------------------------
def test_evaluate_refuses_a_constant_power_with_a_huge_exponent() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        ENG.evaluate("a + 2 ** (10 ** 400)", a=_t(2))
    assert err.value.kind == "SCALAR_OUT_OF_RANGE"


@pytest.mark.parametrize("expr", ["-" * 5000 + "a", "+".join(["a"] * 5000)])
def test_evaluate_refuses_a_deeply_nested_expression(expr: str) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        ENG.evaluate(expr, a=_t(2))
    assert (err.value.op, err.value.kind) == ("CpuEngine.evaluate", "TOO_DEEP")


@pytest.mark.parametrize("name", ["expr", "self"])
def test_evaluate_takes_any_operand_name_but_out_and_backend(name: str) -> None:
    got = ENG.evaluate(f"{name} + 1", **{name: _t(2)})
    assert got.to_numpy().tolist() == [1.0, 2.0]


def test_evaluate_refuses_an_expression_that_is_not_a_string() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        ENG.evaluate(["a"], a=_t(2))  # type: ignore[arg-type]
    assert err.value.kind == "SYNTAX"


def test_evaluate_refuses_a_nul_byte() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        ENG.evaluate("a\x00", a=_t(2))
    assert err.value.kind == "SYNTAX"


# -- out of memory ------------------------------------------------------------------------
def test_out_of_memory_is_a_tenferro_error_and_a_memory_error() -> None:
    assert issubclass(tfr.OutOfMemoryError, tfr.TenferroError)
    assert issubclass(tfr.OutOfMemoryError, MemoryError)


def test_an_output_too_large_for_memory_is_out_of_memory() -> None:
    with pytest.raises(tfr.OutOfMemoryError) as err:
        ENG.broadcast_in_dim(_t(1), (2**30, 2**29), (0,))
    assert err.value.op == "BufferPool.acquire"


def test_a_failed_pool_allocation_counts_no_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    eng = tfr.CpuEngine()
    t = _t(7)
    monkeypatch.setattr(pool_mod, "_empty", _fail_allocation)
    with pytest.raises(tfr.OutOfMemoryError):
        eng.add(t, t)
    assert eng.buffer_pool_cache_stats().misses == 0


def test_a_failed_pool_allocation_leaves_the_pool_usable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eng = tfr.CpuEngine()
    t = _t(7)
    with monkeypatch.context() as patch:
        patch.setattr(pool_mod, "_empty", _fail_allocation)
        with pytest.raises(tfr.OutOfMemoryError):
            eng.add(t, t)
    assert eng.add(t, t).to_numpy().tolist() == [2.0 * i for i in range(7)]


def test_an_os_error_in_numpy_allocation_is_out_of_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(alloc_mod, "_empty", fail)
    with pytest.raises(tfr.OutOfMemoryError) as err:
        tfr.from_numpy(np.arange(4.0), copy=True)
    assert err.value.op == "tenferro.from_numpy"


# -- providers and identities ---------------------------------------------------------------
class _FailingDevice(FakeBuffer):
    def prepare_device_access(self, request: DeviceAccessRequest) -> Any:
        raise OSError(5, "device went away")


def test_an_os_error_in_prepare_device_access_is_a_device_access_error() -> None:
    owner = import_backend_buffer(_FailingDevice(np.zeros(4)), tfr.DType.F64)
    with pytest.raises(tfr.DeviceAccessError) as err:
        owner.prepare_device_access(DeviceAccessRequest(FAKE_DOMAIN, FAKE_ID, 32, 8))
    assert (err.value.op, err.value.kind) == ("prepare_device_access", "PROVIDER")


class _HugeBuffer(FakeBuffer):
    def len(self) -> int:
        return 2**62


def test_an_import_whose_length_overflows_is_a_root_import_error() -> None:
    with pytest.raises(tfr.RootImportError) as err:
        import_backend_buffer(_HugeBuffer(np.zeros(4)), tfr.DType.F64)
    assert err.value.kind == "IDENTITY"


class _Root(BackendAllocationBase):
    def __init__(self, extent: RootResourceExtent) -> None:
        self.extent = extent

    def root_extent(self) -> RootResourceExtent:
        return self.extent

    def provider_kind(self) -> ProviderKind:
        return ProviderKind("device-x")


def test_two_imports_of_one_extent_are_distinct_roots() -> None:
    key = AllocationKey(tfr.AllocationDomainId(950), tfr.AllocationId(1))
    extent = RootResourceExtent(key, 0, 32, 8)
    placement = tfr.Placement(tfr.MemoryKind.DEVICE)
    first = import_unique_root(_Root(extent), tfr.DType.F64, placement)
    second = import_unique_root(_Root(extent), tfr.DType.F64, placement)
    assert first.identity != second.identity


def test_an_empty_byte_range_overlaps_nothing() -> None:
    assert not ByteRange(40, 0).overlaps(ByteRange(32, 32))


def test_nothing_overlaps_an_empty_byte_range() -> None:
    assert not ByteRange(32, 32).overlaps(ByteRange(40, 0))


def test_non_empty_byte_ranges_sharing_a_byte_overlap() -> None:
    assert ByteRange(32, 32).overlaps(ByteRange(63, 1))


# -- found by the fuzz pass (tests/reliability/test_fuzz.py) -------------------------------
def test_with_host_read_refuses_something_that_is_not_callable() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        _t(2).with_host_read(3)  # type: ignore[arg-type]
    assert (err.value.op, err.value.kind) == ("Tensor.with_host_read", "INVALID_ARGUMENT")


def test_view_array_protocol_refuses_a_dtype_that_is_not_one() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        _t(3).as_view().__array__(dtype=ENG)
    assert (err.value.op, err.value.kind) == ("TensorView.__array__", "UNSUPPORTED_DTYPE")


def test_view_array_protocol_takes_a_tenferro_dtype() -> None:
    arr = _t(3).as_view().__array__(dtype=tfr.DType.I32)
    assert (arr.dtype, arr.tolist()) == (np.int32, [0, 1, 2])


def test_a_refused_build_from_an_array_like_counts_no_copy() -> None:
    data = _t(6)  # an array-like: building from it copies its buffer
    before = tfr.copy_stats()
    with pytest.raises(tfr.ValidationError):
        tfr.Tensor.from_vec_col_major((4,), data)  # wrong length, found after the copy
    assert tfr.copy_stats() == before


def test_a_build_from_an_array_like_counts_its_copy() -> None:
    data = _t(6)
    before = tfr.copy_stats()
    tfr.Tensor.from_vec_col_major((6,), data)
    assert tfr.copy_stats().copies == before.copies + 1


@pytest.mark.parametrize(
    "call",
    [
        lambda: _t(3).to_numpy(copy=np.arange(2.0)),  # type: ignore[arg-type]
        lambda: tfr.from_numpy(np.arange(3.0), copy=np.arange(2.0)),  # type: ignore[arg-type]
        lambda: _t(3).__array__(copy=np.arange(2.0)),  # type: ignore[arg-type]
    ],
    ids=["to_numpy", "from_numpy", "__array__"],
)
def test_a_copy_flag_that_is_not_a_bool_is_refused(call: Any) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        call()
    assert err.value.kind == "INVALID_ARGUMENT"
