"""Bad input: a typed error naming the operation, and nothing lost or half-changed.

Every case checks that the caller's arrays are as they were (same values, still
writable when they were), that tensors are neither moved nor left aliased or
borrowed, and that no copy was counted. Each case also names, verbatim, the fix
its message must give the caller (``hint``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import tenferro as tfr

FVC = "Tensor.from_vec_col_major"
FVR = "Tensor.from_vec_row_major"
FNP = "tenferro.from_numpy"


@dataclass
class Case:
    name: str
    hint: str  # what the message must tell the caller to do, verbatim
    call: Callable[[], Any]
    error: type[tfr.TenferroError]
    op: str
    kind: str
    arrays: list[np.ndarray] = field(default_factory=list)
    tensors: list[tfr.Tensor] = field(default_factory=list)


def mat(shape: tuple[int, ...] = (2, 3)) -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major(shape, np.arange(float(np.prod(shape))))


def adopt_case(name: str, hint: str, shape: Any, data: Any, kind: str, **kw: Any) -> Case:
    arrays = [data] if isinstance(data, np.ndarray) else []
    return Case(
        name,
        hint,
        lambda: tfr.Tensor.from_vec_col_major(shape, data, **kw),
        tfr.ValidationError,
        FVC,
        kind,
        arrays,
    )


def view_case(
    name: str, hint: str, build: Callable[[tfr.TensorView], Any], op: str, kind: str
) -> Case:
    t = mat((3, 4))
    return Case(name, hint, lambda: build(t.as_view()), tfr.ValidationError, op, kind, tensors=[t])


def set_case(
    name: str, hint: str, index: Any, value: Any, kind: str, dtype: Any = np.float64
) -> Case:
    t = tfr.Tensor.from_vec_col_major((2, 2), np.arange(4).astype(dtype))

    def call() -> None:
        with t.as_view_mut() as mv:
            mv.set(index, value)

    return Case(name, hint, call, tfr.ValidationError, "TensorViewMut.set", kind, tensors=[t])


def cases() -> list[Case]:
    ro = np.zeros(4)
    ro.flags.writeable = False
    ro_base = np.zeros(6)
    view_of_ro = ro_base[:4]  # writable itself, over a base that is read-only
    ro_base.flags.writeable = False
    ro_f = np.asfortranarray(np.zeros((2, 2)))
    ro_f.flags.writeable = False
    cplx = tfr.Tensor.from_vec_col_major((2,), np.zeros(2, np.complex128))
    return [
        adopt_case(
            "wrong length",
            "pass a shape whose product is 3, or data of length 4",
            (2, 2),
            np.zeros(3),
            "LENGTH_MISMATCH",
        ),
        adopt_case(
            "too long",
            "pass a shape whose product is 3, or data of length 2",
            (2,),
            np.zeros(3),
            "LENGTH_MISMATCH",
        ),
        adopt_case(
            "negative dimension",
            "shape entries must be >= 0",
            (-1, 2),
            np.zeros(2),
            "INVALID_SHAPE",
        ),
        adopt_case(
            "overflowing shape",
            "use a smaller shape",
            (2**62, 2**62),
            np.zeros(1),
            "SHAPE_OVERFLOW",
        ),
        adopt_case(
            "overflow beside a zero",
            "use a smaller shape",
            (0, 2**62, 2**62),
            np.zeros(0),
            "SHAPE_OVERFLOW",
        ),
        adopt_case(
            "bytes overflow", "use a smaller shape", (2**61,), np.zeros(1), "SHAPE_OVERFLOW"
        ),
        adopt_case(
            "float dimension", "shape entries must be ints", (2.0,), np.zeros(2), "INVALID_SHAPE"
        ),
        adopt_case(
            "bool dimension", "shape entries must be ints", (True,), np.zeros(1), "INVALID_SHAPE"
        ),
        adopt_case(
            "string shape",
            "shape must be a sequence of ints such as (2, 3)",
            "ab",
            np.zeros(2),
            "INVALID_SHAPE",
        ),
        adopt_case(
            "None shape",
            "shape must be a sequence of ints such as (2, 3)",
            None,
            np.zeros(2),
            "INVALID_SHAPE",
        ),
        adopt_case(
            "float16 data",
            "convert it first (arr.astype(np.float64) makes a copy)",
            (2,),
            np.zeros(2, np.float16),
            "UNSUPPORTED_DTYPE",
        ),
        adopt_case(
            "long double data",
            "convert it first (arr.astype(np.float64) makes a copy)",
            (2,),
            np.zeros(2, np.longdouble),
            "UNSUPPORTED_DTYPE",
        ),
        adopt_case(
            "big-endian data",
            "convert it first (arr.astype(np.float64) makes a copy)",
            (2,),
            np.zeros(2, ">f8"),
            "UNSUPPORTED_DTYPE",
        ),
        adopt_case(
            "unsupported dtype argument",
            "use one of F32 (float32)",
            (2,),
            [1, 2],
            "UNSUPPORTED_DTYPE",
            dtype="f2",
        ),
        adopt_case(
            "dtype disagrees",
            "pass data.astype('float32') (a copy) instead",
            (2,),
            np.zeros(2),
            "DTYPE_MISMATCH",
            dtype=np.float32,
        ),
        adopt_case(
            "2-D data", "use tenferro.from_numpy for n-D arrays", (4,), np.zeros((2, 2)), "NOT_1D"
        ),
        adopt_case(
            "0-D data", "use tenferro.from_numpy for n-D arrays", (), np.array(1.0), "NOT_1D"
        ),
        adopt_case(
            "nested list",
            "flatten it (column-major) or use tenferro.from_numpy(..., copy=True)",
            (4,),
            [[1, 2], [3, 4]],
            "NOT_1D",
        ),
        adopt_case(
            "strided data",
            "pass np.ascontiguousarray(data) (a copy) or use from_numpy(arr, copy=True)",
            (3,),
            np.zeros(6)[::2],
            "NOT_CONTIGUOUS",
        ),
        adopt_case(
            "reversed data",
            "pass np.ascontiguousarray(data) (a copy) or use from_numpy(arr, copy=True)",
            (3,),
            np.zeros(3)[::-1],
            "NOT_CONTIGUOUS",
        ),
        adopt_case(
            "read-only data",
            "use tenferro.from_numpy(arr, copy=True) for a named copy",
            (4,),
            ro,
            "READ_ONLY",
        ),
        adopt_case(
            "read-only base",
            "use tenferro.from_numpy(arr, copy=True) for a named copy",
            (4,),
            view_of_ro,
            "READ_ONLY",
        ),
        adopt_case(
            "strings",
            "pass ints, floats, bools or complex numbers",
            (2,),
            ["a", "b"],
            "INVALID_DATA",
        ),
        adopt_case(
            "a scalar",
            "data must be a numpy array or a sequence of numbers",
            (1,),
            5.0,
            "INVALID_DATA",
        ),
        adopt_case(
            "ragged list",
            "pass a flat sequence of numbers that fit the dtype",
            (2,),
            [[1], [1, 2]],
            "INVALID_DATA",
        ),
        adopt_case(
            "int out of range",
            "pass a flat sequence of numbers that fit the dtype",
            (1,),
            [2**40],
            "INVALID_DATA",
            dtype=tfr.DType.I32,
        ),
        Case(
            "row major wrong length",
            "pass a shape whose product is 5, or data of length 4",
            lambda: tfr.Tensor.from_vec_row_major((2, 2), np.zeros(5)),
            tfr.ValidationError,
            FVR,
            "LENGTH_MISMATCH",
        ),
        Case(
            "row major 2-D data",
            "pass arr.reshape(-1) (row-major order)",
            lambda: tfr.Tensor.from_vec_row_major((4,), np.zeros((2, 2))),
            tfr.ValidationError,
            FVR,
            "NOT_1D",
        ),
        Case(
            "from_numpy C order",
            "pass copy=True (a named copy) or np.asfortranarray(arr)",
            lambda: tfr.from_numpy(np.zeros((2, 3))),
            tfr.ValidationError,
            FNP,
            "NOT_F_CONTIGUOUS",
        ),
        Case(
            "from_numpy read-only",
            "use tenferro.from_numpy(arr, copy=True) for a named copy",
            lambda: tfr.from_numpy(ro_f),
            tfr.ValidationError,
            FNP,
            "READ_ONLY",
            [ro_f],
        ),
        Case(
            "from_numpy float16",
            "convert it first (arr.astype(np.float64) makes a copy)",
            lambda: tfr.from_numpy(np.zeros(2, np.float16)),
            tfr.ValidationError,
            FNP,
            "UNSUPPORTED_DTYPE",
        ),
        Case(
            "from_numpy float16 copy",
            "convert it first (arr.astype(np.float64) makes a copy)",
            lambda: tfr.from_numpy(np.zeros(2, np.float16), copy=True),
            tfr.ValidationError,
            FNP,
            "UNSUPPORTED_DTYPE",
        ),
        view_case(
            "repeated axis",
            "pass each axis exactly once, e.g. (1, 0)",
            lambda v: v.transpose_view((0, 0)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "too many axes",
            "pass each axis exactly once, e.g. (1, 0)",
            lambda v: v.transpose_view((0, 1, 2)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "too few axes",
            "pass each axis exactly once, e.g. (1, 0)",
            lambda v: v.transpose_view((1,)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "negative axis",
            "pass each axis exactly once, e.g. (1, 0)",
            lambda v: v.transpose_view((-1, 0)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "bool axis",
            "permutation must be a sequence of axis numbers (ints)",
            lambda v: v.transpose_view((True, False)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "non-int axis",
            "permutation must be a sequence of axis numbers (ints)",
            lambda v: v.transpose_view(("a", 0)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "index out of range",
            "use -3..2",
            lambda v: v.slice_view((3, 0)),
            "TensorView.slice_view",
            "INDEX_OUT_OF_RANGE",
        ),
        view_case(
            "negative index out of range",
            "use -4..3",
            lambda v: v.slice_view((0, -5)),
            "TensorView.slice_view",
            "INDEX_OUT_OF_RANGE",
        ),
        view_case(
            "zero step",
            "use a non-zero step",
            lambda v: v.slice_view(slice(None, None, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "float step",
            "slice start, stop and step must be ints or None",
            lambda v: v.slice_view(slice(0, 2, 0.5)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "too many indices",
            "pass at most 2",
            lambda v: v.slice_view((0, 0, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "two ellipses",
            "use at most one",
            lambda v: v.slice_view((..., ...)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "newaxis",
            "index entries must be ints, slices or ...",
            lambda v: v.slice_view((None, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "bool index",
            "use ints and slices",
            lambda v: v.slice_view((True, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "float index",
            "index entries must be ints, slices or ...",
            lambda v: v.slice_view((1.0, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "array index",
            "index entries must be ints, slices or ...",
            lambda v: v.slice_view(([0, 1], 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "get out of range",
            "use -4..3",
            lambda v: v.get((0, 4)),
            "TensorView.get",
            "INDEX_OUT_OF_RANGE",
        ),
        view_case(
            "get too few",
            "pass e.g. (0, 0) (slice_view selects parts)",
            lambda v: v.get((0,)),
            "TensorView.get",
            "INVALID_INDEX",
        ),
        view_case(
            "get a slice",
            "use slice_view for those",
            lambda v: v.get((0, slice(None))),
            "TensorView.get",
            "INVALID_INDEX",
        ),
        view_case(
            "reshape strided",
            "call to_col_major() first (a named copy)",
            lambda v: v.transpose_view((1, 0)).reshape_view((12,)),
            "TensorView.reshape_view",
            "NOT_CONTIGUOUS",
        ),
        view_case(
            "reshape row slice",
            "call to_col_major() first (a named copy)",
            lambda v: v.slice_view((0, slice(None))).reshape_view((2, 2)),
            "TensorView.reshape_view",
            "NOT_CONTIGUOUS",
        ),
        view_case(
            "reshape wrong size",
            "the new shape must have as many elements",
            lambda v: v.reshape_view((5,)),
            "TensorView.reshape_view",
            "LENGTH_MISMATCH",
        ),
        view_case(
            "reshape negative",
            "shape entries must be >= 0",
            lambda v: v.reshape_view((-1, 12)),
            "TensorView.reshape_view",
            "INVALID_SHAPE",
        ),
        view_case(
            "as_real of real",
            "as_real_view needs a complex view (C32 or C64)",
            lambda v: v.as_real_view(),
            "TensorView.as_real_view",
            "DTYPE_MISMATCH",
        ),
        view_case(
            "duplicate strided",
            "use to_col_major() to materialise a strided view (a named copy)",
            lambda v: v.transpose_view((1, 0)).duplicate(),
            "TensorView.duplicate",
            "NOT_CONTIGUOUS",
        ),
        set_case("set a bool index", "use slice_view for those", (True, 0), 1.0, "INVALID_INDEX"),
        set_case("set a string value", "pass a scalar", (0, 0), "1", "INVALID_VALUE"),
        set_case(
            "set a float into ints",
            "pass a value of the tensor's kind",
            (0, 0),
            1.5,
            "SCALAR_DTYPE",
            np.int64,
        ),
        set_case(
            "set out of range",
            "pass a value the dtype can hold",
            (0, 0),
            2**40,
            "SCALAR_OUT_OF_RANGE",
            np.int32,
        ),
        Case(
            "view asarray dtype without copy",
            "pass copy=None",
            lambda: np.array(cplx.as_view(), dtype=np.float64, copy=False),
            tfr.ValidationError,
            "TensorView.__array__",
            "COPY_REQUIRED",
            tensors=[cplx],
        ),
    ]


CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_raises_the_typed_error_naming_the_op_and_changes_nothing(case: Case) -> None:
    arrays = [(a, a.flags.writeable, a.copy()) for a in case.arrays]
    tensors = [(t, t.host_data().copy()) for t in case.tensors]
    before = tfr.copy_stats()
    with pytest.raises(case.error) as err:
        case.call()
    assert (err.value.op, err.value.kind) == (case.op, case.kind)
    assert str(err.value).startswith(case.op + ": ")
    assert tfr.copy_stats() == before
    for a, writeable, values in arrays:
        assert a.flags.writeable == writeable
        np.testing.assert_array_equal(a, values)
    del err  # the traceback may hold frames; the tensors must not be aliased by us
    for t, values in tensors:
        assert not t.is_moved
        np.testing.assert_array_equal(t.host_data(), values)
        with t.map_write():
            pass


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_refusal_message_tells_the_caller_the_fix_for_that_case(case: Case) -> None:
    with pytest.raises(case.error) as err:
        case.call()
    assert case.hint in err.value.message


def test_a_refused_adoption_leaves_the_array_writable() -> None:
    data = np.zeros(3)
    with pytest.raises(tfr.ValidationError):
        tfr.Tensor.from_vec_col_major((2, 2), data)
    data[0] = 1.0
    assert tfr.Tensor.from_vec_col_major((3,), data).host_data()[0] == 1.0
