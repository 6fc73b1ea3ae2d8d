"""Bad input: a typed error naming the operation, and nothing lost or half-changed.

Every case checks that the caller's arrays are as they were (same values, still
writable when they were), that tensors are neither moved nor left aliased or
borrowed, and that no copy was counted.
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
    call: Callable[[], Any]
    error: type[tfr.TenferroError]
    op: str
    kind: str
    arrays: list[np.ndarray] = field(default_factory=list)
    tensors: list[tfr.Tensor] = field(default_factory=list)


def mat(shape: tuple[int, ...] = (2, 3)) -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major(shape, np.arange(float(np.prod(shape))))


def adopt_case(name: str, shape: Any, data: Any, kind: str, **kw: Any) -> Case:
    arrays = [data] if isinstance(data, np.ndarray) else []
    return Case(
        name,
        lambda: tfr.Tensor.from_vec_col_major(shape, data, **kw),
        tfr.ValidationError,
        FVC,
        kind,
        arrays,
    )


def view_case(name: str, build: Callable[[tfr.TensorView], Any], op: str, kind: str) -> Case:
    t = mat((3, 4))
    return Case(name, lambda: build(t.as_view()), tfr.ValidationError, op, kind, tensors=[t])


def cases() -> list[Case]:
    ro = np.zeros(4)
    ro.flags.writeable = False
    ro_f = np.asfortranarray(np.zeros((2, 2)))
    ro_f.flags.writeable = False
    cplx = tfr.Tensor.from_vec_col_major((2,), np.zeros(2, np.complex128))
    return [
        adopt_case("wrong length", (2, 2), np.zeros(3), "LENGTH_MISMATCH"),
        adopt_case("too long", (2,), np.zeros(3), "LENGTH_MISMATCH"),
        adopt_case("negative dimension", (-1, 2), np.zeros(2), "INVALID_SHAPE"),
        adopt_case("overflowing shape", (2**62, 2**62), np.zeros(1), "SHAPE_OVERFLOW"),
        adopt_case("overflow beside a zero", (0, 2**62, 2**62), np.zeros(0), "SHAPE_OVERFLOW"),
        adopt_case("bytes overflow", (2**61,), np.zeros(1), "SHAPE_OVERFLOW"),
        adopt_case("float dimension", (2.0,), np.zeros(2), "INVALID_SHAPE"),
        adopt_case("bool dimension", (True,), np.zeros(1), "INVALID_SHAPE"),
        adopt_case("string shape", "ab", np.zeros(2), "INVALID_SHAPE"),
        adopt_case("None shape", None, np.zeros(2), "INVALID_SHAPE"),
        adopt_case("float16 data", (2,), np.zeros(2, np.float16), "UNSUPPORTED_DTYPE"),
        adopt_case("uint8 data", (2,), np.zeros(2, np.uint8), "UNSUPPORTED_DTYPE"),
        adopt_case("big-endian data", (2,), np.zeros(2, ">f8"), "UNSUPPORTED_DTYPE"),
        adopt_case("unsupported dtype argument", (2,), [1, 2], "UNSUPPORTED_DTYPE", dtype="f2"),
        adopt_case("dtype disagrees", (2,), np.zeros(2), "DTYPE_MISMATCH", dtype=np.float32),
        adopt_case("2-D data", (4,), np.zeros((2, 2)), "NOT_1D"),
        adopt_case("0-D data", (), np.array(1.0), "NOT_1D"),
        adopt_case("nested list", (4,), [[1, 2], [3, 4]], "NOT_1D"),
        adopt_case("strided data", (3,), np.zeros(6)[::2], "NOT_CONTIGUOUS"),
        adopt_case("reversed data", (3,), np.zeros(3)[::-1], "NOT_CONTIGUOUS"),
        adopt_case("read-only data", (4,), ro, "READ_ONLY"),
        adopt_case("strings", (2,), ["a", "b"], "INVALID_DATA"),
        adopt_case("a scalar", (1,), 5.0, "INVALID_DATA"),
        adopt_case("ragged list", (2,), [[1], [1, 2]], "INVALID_DATA"),
        adopt_case("int out of range", (1,), [2**40], "INVALID_DATA", dtype=tfr.DType.I32),
        Case(
            "row major wrong length",
            lambda: tfr.Tensor.from_vec_row_major((2, 2), np.zeros(5)),
            tfr.ValidationError,
            FVR,
            "LENGTH_MISMATCH",
        ),
        Case(
            "row major 2-D data",
            lambda: tfr.Tensor.from_vec_row_major((4,), np.zeros((2, 2))),
            tfr.ValidationError,
            FVR,
            "NOT_1D",
        ),
        Case(
            "from_numpy C order",
            lambda: tfr.from_numpy(np.zeros((2, 3))),
            tfr.ValidationError,
            FNP,
            "NOT_F_CONTIGUOUS",
        ),
        Case(
            "from_numpy read-only",
            lambda: tfr.from_numpy(ro_f),
            tfr.ValidationError,
            FNP,
            "READ_ONLY",
            [ro_f],
        ),
        Case(
            "from_numpy float16",
            lambda: tfr.from_numpy(np.zeros(2, np.float16)),
            tfr.ValidationError,
            FNP,
            "UNSUPPORTED_DTYPE",
        ),
        Case(
            "from_numpy float16 copy",
            lambda: tfr.from_numpy(np.zeros(2, np.float16), copy=True),
            tfr.ValidationError,
            FNP,
            "UNSUPPORTED_DTYPE",
        ),
        view_case(
            "repeated axis",
            lambda v: v.transpose_view((0, 0)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "too many axes",
            lambda v: v.transpose_view((0, 1, 2)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "too few axes",
            lambda v: v.transpose_view((1,)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "negative axis",
            lambda v: v.transpose_view((-1, 0)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "bool axis",
            lambda v: v.transpose_view((True, False)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "non-int axis",
            lambda v: v.transpose_view(("a", 0)),
            "TensorView.transpose_view",
            "INVALID_AXES",
        ),
        view_case(
            "index out of range",
            lambda v: v.slice_view((3, 0)),
            "TensorView.slice_view",
            "INDEX_OUT_OF_RANGE",
        ),
        view_case(
            "negative index out of range",
            lambda v: v.slice_view((0, -5)),
            "TensorView.slice_view",
            "INDEX_OUT_OF_RANGE",
        ),
        view_case(
            "zero step",
            lambda v: v.slice_view(slice(None, None, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "float step",
            lambda v: v.slice_view(slice(0, 2, 0.5)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "too many indices",
            lambda v: v.slice_view((0, 0, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "two ellipses",
            lambda v: v.slice_view((..., ...)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "newaxis", lambda v: v.slice_view((None, 0)), "TensorView.slice_view", "INVALID_INDEX"
        ),
        view_case(
            "bool index",
            lambda v: v.slice_view((True, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "float index",
            lambda v: v.slice_view((1.0, 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "array index",
            lambda v: v.slice_view(([0, 1], 0)),
            "TensorView.slice_view",
            "INVALID_INDEX",
        ),
        view_case(
            "get out of range", lambda v: v.get((0, 4)), "TensorView.get", "INDEX_OUT_OF_RANGE"
        ),
        view_case("get too few", lambda v: v.get((0,)), "TensorView.get", "INVALID_INDEX"),
        view_case(
            "get a slice", lambda v: v.get((0, slice(None))), "TensorView.get", "INVALID_INDEX"
        ),
        view_case(
            "reshape strided",
            lambda v: v.transpose_view((1, 0)).reshape_view((12,)),
            "TensorView.reshape_view",
            "NOT_CONTIGUOUS",
        ),
        view_case(
            "reshape row slice",
            lambda v: v.slice_view((0, slice(None))).reshape_view((2, 2)),
            "TensorView.reshape_view",
            "NOT_CONTIGUOUS",
        ),
        view_case(
            "reshape wrong size",
            lambda v: v.reshape_view((5,)),
            "TensorView.reshape_view",
            "LENGTH_MISMATCH",
        ),
        view_case(
            "reshape negative",
            lambda v: v.reshape_view((-1, 12)),
            "TensorView.reshape_view",
            "INVALID_SHAPE",
        ),
        view_case(
            "as_real of real",
            lambda v: v.as_real_view(),
            "TensorView.as_real_view",
            "DTYPE_MISMATCH",
        ),
        view_case(
            "duplicate strided",
            lambda v: v.transpose_view((1, 0)).duplicate(),
            "TensorView.duplicate",
            "NOT_CONTIGUOUS",
        ),
        Case(
            "view asarray dtype without copy",
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


def test_every_refusal_message_says_what_to_do() -> None:
    hints = ("use", "pass", "call", "convert", "must", "needs", "cannot", "delete", "got")
    for case in CASES:
        with pytest.raises(tfr.TenferroError) as err:
            case.call()
        assert any(h in err.value.message for h in hints), case.name


def test_a_refused_adoption_leaves_the_array_writable() -> None:
    data = np.zeros(3)
    with pytest.raises(tfr.ValidationError):
        tfr.Tensor.from_vec_col_major((2, 2), data)
    data[0] = 1.0
    assert tfr.Tensor.from_vec_col_major((3,), data).host_data()[0] == 1.0
