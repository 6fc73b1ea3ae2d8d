"""DType: the element types, their numpy twins, and dtype normalisation."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr
from tenferro.dtype import as_dtype, dtype_of_array

NUMPY_TWINS = {
    tfr.DType.F32: np.float32,
    tfr.DType.F64: np.float64,
    tfr.DType.I32: np.int32,
    tfr.DType.I64: np.int64,
    tfr.DType.BOOL: np.bool_,
    tfr.DType.C32: np.complex64,
    tfr.DType.C64: np.complex128,
}


def test_there_are_the_seven_upstream_dtypes_and_the_array_api_integers() -> None:
    upstream = {"F32", "F64", "I32", "I64", "BOOL", "C32", "C64"}
    array_api = {"I8", "I16", "U8", "U16", "U32", "U64"}
    assert {d.name for d in tfr.DType} == upstream | array_api


@pytest.mark.parametrize(("dtype", "twin"), NUMPY_TWINS.items())
def test_numpy_property_is_the_twin(dtype: tfr.DType, twin: type) -> None:
    assert dtype.numpy == np.dtype(twin)


@pytest.mark.parametrize(("dtype", "twin"), NUMPY_TWINS.items())
def test_itemsize_matches_numpy(dtype: tfr.DType, twin: type) -> None:
    assert dtype.itemsize == np.dtype(twin).itemsize


@pytest.mark.parametrize(("dtype", "twin"), NUMPY_TWINS.items())
def test_as_dtype_accepts_the_numpy_scalar_type(dtype: tfr.DType, twin: type) -> None:
    assert as_dtype(twin) is dtype


@pytest.mark.parametrize(("dtype", "twin"), NUMPY_TWINS.items())
def test_as_dtype_accepts_the_numpy_dtype_object(dtype: tfr.DType, twin: type) -> None:
    assert as_dtype(np.dtype(twin)) is dtype


@pytest.mark.parametrize("dtype", list(tfr.DType))
def test_as_dtype_accepts_the_numpy_name(dtype: tfr.DType) -> None:
    assert as_dtype(dtype.numpy.name) is dtype


@pytest.mark.parametrize("dtype", list(tfr.DType))
def test_as_dtype_accepts_the_dtype_name(dtype: tfr.DType) -> None:
    assert as_dtype(dtype.name) is dtype


@pytest.mark.parametrize("dtype", list(tfr.DType))
def test_as_dtype_returns_a_dtype_unchanged(dtype: tfr.DType) -> None:
    assert as_dtype(dtype) is dtype


def test_python_builtin_types_map_to_the_64_bit_dtypes() -> None:
    assert [as_dtype(t) for t in (float, int, bool, complex)] == [
        tfr.DType.F64,
        tfr.DType.I64,
        tfr.DType.BOOL,
        tfr.DType.C64,
    ]


@pytest.mark.parametrize(
    "bad",
    [np.float16, np.longdouble, np.datetime64, ">f8", "i4,i4", object, "U3", None, "nonsense", 5],
    ids=repr,
)
def test_as_dtype_refuses_what_tenferro_does_not_store(bad: object) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        as_dtype(bad, "Op.name")
    assert err.value.kind == "UNSUPPORTED_DTYPE"
    assert err.value.op == "Op.name"
    assert "F64 (float64)" in str(err.value)


def test_dtype_of_array_refuses_a_float16_array_and_says_how_to_convert() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        dtype_of_array(np.zeros(2, np.float16), "Op.name")
    assert err.value.kind == "UNSUPPORTED_DTYPE"
    assert "astype" in str(err.value)


def test_dtype_of_array_refuses_non_native_byte_order() -> None:
    with pytest.raises(tfr.ValidationError):
        dtype_of_array(np.zeros(2, ">f8"), "Op.name")


def test_real_of_a_complex_dtype_is_its_component_type() -> None:
    assert (tfr.DType.C32.real, tfr.DType.C64.real) == (tfr.DType.F32, tfr.DType.F64)


def test_real_of_a_real_dtype_is_itself() -> None:
    assert all(d.real is d for d in tfr.DType if not d.is_complex)


def test_kind_predicates_partition_the_dtypes() -> None:
    kinds = [(d.is_complex, d.is_float, d.is_integer) for d in tfr.DType]
    assert all(sum(k) <= 1 for k in kinds)
    assert [d for d in tfr.DType if not any((d.is_complex, d.is_float, d.is_integer))] == [
        tfr.DType.BOOL
    ]


def test_repr_names_the_member() -> None:
    assert repr(tfr.DType.C32) == "DType.C32"


@pytest.mark.parametrize("spelling", [tfr.DType.F32, np.float32, np.dtype("float32"), "F32"])
def test_constructors_accept_every_dtype_spelling(spelling: object) -> None:
    t = tfr.Tensor.from_vec_col_major((2,), [1, 2], dtype=spelling)
    assert t.dtype is tfr.DType.F32
