"""Property tests: tenferro's namespace gives array-api-strict's values, dtypes and shapes.

array-api-strict (the standard's reference namespace) is the oracle: both
namespaces get the same inputs and must agree, element by element.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tenferro as tfr

xps = pytest.importorskip("array_api_strict")

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64"]
COMPLEX = ["complex64", "complex128"]
CATEGORY = {
    "numeric": INTS + FLOATS + COMPLEX,
    "real numeric": INTS + FLOATS,
    "floating": FLOATS + COMPLEX,
    "real floating": FLOATS,
    "integer": INTS,
    "integer or boolean": [*INTS, "bool"],
    "bool": ["bool"],
    "any": [*INTS, *FLOATS, *COMPLEX, "bool"],
}

UNARY = {
    "abs": "numeric", "acos": "floating", "acosh": "floating", "asin": "floating",
    "asinh": "floating", "atan": "floating", "atanh": "floating",
    "bitwise_invert": "integer or boolean", "ceil": "real numeric", "conj": "numeric",
    "cos": "floating", "cosh": "floating", "exp": "floating", "expm1": "floating",
    "floor": "real numeric", "imag": "floating", "isfinite": "numeric", "isinf": "numeric",
    "isnan": "numeric", "log": "floating", "log10": "floating", "log1p": "floating",
    "log2": "floating", "logical_not": "bool", "negative": "numeric", "positive": "numeric",
    "real": "numeric", "reciprocal": "floating", "round": "numeric", "sign": "numeric",
    "signbit": "real floating", "sin": "floating", "sinh": "floating", "sqrt": "floating",
    "square": "numeric", "tan": "floating", "tanh": "floating", "trunc": "real numeric",
}  # fmt: skip

BINARY = {
    "add": "numeric", "atan2": "real floating", "bitwise_and": "integer or boolean",
    "bitwise_or": "integer or boolean", "bitwise_xor": "integer or boolean",
    "copysign": "real floating", "divide": "floating", "equal": "any",
    "floor_divide": "real numeric", "greater": "real numeric",
    "greater_equal": "real numeric", "hypot": "real floating", "less": "real numeric",
    "less_equal": "real numeric", "logaddexp": "real floating", "logical_and": "bool",
    "logical_or": "bool", "logical_xor": "bool", "maximum": "real numeric",
    "minimum": "real numeric", "multiply": "numeric", "nextafter": "real floating",
    "not_equal": "any", "remainder": "real numeric", "subtract": "numeric",
}  # fmt: skip

#: Functions whose infinite operands are the standard's special cases (tested in
#: tests/namespace/test_special_values.py), where array-api-strict follows numpy.
SPECIAL_INFINITIES = {"floor_divide"}

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def arrays(
    dtype: str, shape: Any = shapes, small: bool = False, finite: bool = False
) -> st.SearchStrategy[np.ndarray]:
    elements: Any = None
    if finite and dtype not in COMPLEX and dtype not in INTS and dtype != "bool":
        # Where tenferro follows the standard's special cases for infinities and
        # numpy's loops do not (floor_divide: inf // 1 is inf, not NaN).
        elements = hnp.from_dtype(np.dtype(dtype), allow_infinity=False)
    elif small:
        # Products of huge or infinite values differ between BLAS and numpy's loops.
        elements = st.integers(-10, 10)
    elif dtype in COMPLEX:
        # Complex infinities are special cases where numpy's loops and the standard differ.
        elements = st.complex_numbers(
            # exp-like functions overflow complex64 beyond ~88, where the standard's
            # special cases and numpy's loops give different infinities/NaNs.
            max_magnitude=10,
            allow_nan=False,
            allow_infinity=False,
            allow_subnormal=False,
            width=64,
        )
    elif dtype in INTS:
        info = np.iinfo(dtype)
        elements = st.integers(max(info.min, -50), min(info.max, 50))
    return hnp.arrays(np.dtype(dtype), shape, elements=elements)


def both(arr: np.ndarray) -> tuple[Any, Any]:
    return tfr.asarray(arr.copy()), xps.asarray(arr.copy())


def check_same(ours: Any, ref: Any) -> None:
    expected = np.asarray(ref)
    got = np.asarray(ours)
    assert ours.dtype.numpy == expected.dtype, (ours.dtype, ref.dtype)
    assert got.shape == expected.shape
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def run_both(fn: Callable[[Any], Any], ours_args: tuple, ref_args: tuple) -> tuple[Any, Any]:
    with np.errstate(all="ignore"):
        return fn(tfr, *ours_args), fn(xps, *ref_args)


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=10)
@given(data=st.data())
def test_unary_function_agrees_with_strict(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(CATEGORY[UNARY[name]]))
    if name == "imag":
        dtype = data.draw(st.sampled_from(COMPLEX))
    arr = data.draw(arrays(dtype))
    a, b = both(arr)
    ours, ref = run_both(lambda xp, x: getattr(xp, name)(x), (a,), (b,))
    check_same(ours, ref)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=10)
@given(data=st.data())
def test_binary_function_agrees_with_strict_with_broadcasting(
    name: str, data: st.DataObject
) -> None:
    pool = CATEGORY[BINARY[name]]
    d1 = data.draw(st.sampled_from(pool))
    d2 = data.draw(st.sampled_from(pool))
    try:
        xps.result_type(xps.__dict__[d1], xps.__dict__[d2])
    except TypeError:
        with pytest.raises(TypeError):
            getattr(tfr, name)(tfr.asarray([1], dtype=d1), tfr.asarray([1], dtype=d2))
        return
    shape = data.draw(shapes)
    other = data.draw(hnp.broadcastable_shapes(shape, min_dims=0, max_dims=3, max_side=4))
    finite = name in SPECIAL_INFINITIES
    a, b = both(data.draw(arrays(d1, shape, finite=finite)))
    c, d = both(data.draw(arrays(d2, other, finite=finite)))
    ours, ref = run_both(lambda xp, x, y: getattr(xp, name)(x, y), (a, c), (b, d))
    check_same(ours, ref)


@pytest.mark.parametrize(
    ("name", "category"),
    [("sum", "numeric"), ("prod", "numeric"), ("max", "real numeric"), ("min", "real numeric"),
     ("mean", "floating"), ("std", "real floating"), ("var", "real floating"),
     ("all", "any"), ("any", "any"), ("cumulative_sum", "numeric")],
)  # fmt: skip
@settings(max_examples=10)
@given(data=st.data())
def test_reduction_agrees_with_strict(name: str, category: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(CATEGORY[category]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    a, b = both(data.draw(arrays(dtype, shape)))
    if name == "cumulative_sum":
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        kw: dict[str, Any] = {"axis": axis}
    else:
        axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
        kw = {"axis": axis, "keepdims": data.draw(st.booleans())}
    ours, ref = run_both(lambda xp, x: getattr(xp, name)(x, **kw), (a,), (b,))
    check_same(ours, ref)


MANIPULATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "permute_dims": lambda xp, x: xp.permute_dims(x, tuple(reversed(range(x.ndim)))),
    "flip": lambda xp, x: xp.flip(x),
    "expand_dims": lambda xp, x: xp.expand_dims(x, axis=0),
    "reshape": lambda xp, x: xp.reshape(x, (-1,)),
    "roll": lambda xp, x: xp.roll(x, 1),
    "concat": lambda xp, x: xp.concat([x, x], axis=None),
    "stack": lambda xp, x: xp.stack([x, x], axis=-1),
    "broadcast_to": lambda xp, x: xp.broadcast_to(x, (2, *x.shape)),
    "tile": lambda xp, x: xp.tile(x, (2,) * x.ndim),
    "repeat": lambda xp, x: xp.repeat(x, 2, axis=None),
    "sort": lambda xp, x: xp.sort(x, axis=-1, descending=True) if x.ndim else x,
    "argsort": lambda xp, x: xp.argsort(x, axis=-1) if x.ndim else x,
    "unique_values": lambda xp, x: xp.unique_values(x),
    "matrix_transpose": lambda xp, x: xp.matrix_transpose(x) if x.ndim >= 2 else x,
    "tril": lambda xp, x: xp.tril(x, k=-1) if x.ndim >= 2 else x,
    "getitem": lambda xp, x: x[..., ::-2] if x.ndim else x[...],
}


@pytest.mark.parametrize("name", sorted(MANIPULATIONS))
@settings(max_examples=10)
@given(data=st.data())
def test_manipulation_agrees_with_strict(name: str, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(["int16", "float64", "uint8"]))
    a, b = both(data.draw(arrays(dtype)))
    ours, ref = run_both(MANIPULATIONS[name], (a,), (b,))
    check_same(ours, ref)


@settings(max_examples=15)
@given(
    m=st.integers(1, 4),
    k=st.integers(1, 4),
    n=st.integers(1, 4),
    batch=st.sampled_from([(), (2,), (3, 1)]),
    dtype=st.sampled_from(["float64", "complex64", "int32"]),
    data=st.data(),
)
def test_matmul_tensordot_and_vecdot_agree_with_strict(
    m: int, k: int, n: int, batch: tuple, dtype: str, data: st.DataObject
) -> None:
    a, b = both(data.draw(arrays(dtype, (*batch, m, k), small=True)))
    c, d = both(data.draw(arrays(dtype, (k, n), small=True)))
    check_same(*run_both(lambda xp, x, y: xp.matmul(x, y), (a, c), (b, d)))
    check_same(*run_both(lambda xp, x, y: xp.tensordot(x, y, axes=1), (a, c), (b, d)))
    e, f = both(data.draw(arrays(dtype, (m, k), small=True)))
    check_same(*run_both(lambda xp, x, y: xp.vecdot(x, y), (a, e), (b, f)))


@given(d1=st.sampled_from(CATEGORY["any"]), d2=st.sampled_from(CATEGORY["any"]))
def test_result_type_agrees_with_strict(d1: str, d2: str) -> None:
    try:
        expected = str(xps.result_type(getattr(xps, d1), getattr(xps, d2))).split(".")[-1]
    except TypeError:
        with pytest.raises(TypeError):
            tfr.result_type(getattr(tfr, d1), getattr(tfr, d2))
        return
    assert tfr.result_type(getattr(tfr, d1), getattr(tfr, d2)).value == expected
    assert tfr.can_cast(getattr(tfr, d1), getattr(tfr, d2)) == xps.can_cast(
        getattr(xps, d1), getattr(xps, d2)
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda xp: xp.arange(1, 10, 3),
        lambda xp: xp.arange(0.5, 3.0, 0.5),
        lambda xp: xp.linspace(0, 1, 5),
        lambda xp: xp.eye(3, 4, k=1),
        lambda xp: xp.full((2, 2), 7, dtype=xp.int8),
        lambda xp: xp.zeros((0, 3)),
        lambda xp: xp.ones_like(xp.asarray([[1, 2]])),
        lambda xp: xp.meshgrid(xp.asarray([1, 2]), xp.asarray([3, 4, 5]))[1],
        lambda xp: xp.where(xp.asarray([True, False]), xp.asarray([1.0, 2.0]), 0.0),
        lambda xp: xp.clip(xp.asarray([1, 5, 9]), 2, 6),
        lambda xp: xp.searchsorted(xp.asarray([1.0, 3.0, 5.0]), xp.asarray([2.0, 5.0])),
        lambda xp: xp.take(xp.asarray([5, 6, 7]), xp.asarray([2, 0]), axis=0),
        lambda xp: xp.nonzero(xp.asarray([[0, 1], [2, 0]]))[1],
        lambda xp: xp.count_nonzero(xp.asarray([[0, 1], [2, 0]]), axis=0),
        lambda xp: xp.diff(xp.asarray([1, 4, 9, 16])),
        lambda xp: xp.unique_counts(xp.asarray([3, 1, 3])).counts,
        lambda xp: xp.argmax(xp.asarray([[1, 9], [8, 2]]), axis=1),
        lambda xp: xp.cumulative_prod(xp.asarray([1, 2, 3]), include_initial=True),
        lambda xp: xp.astype(xp.asarray([1.7, -2.2]), xp.int32),
    ],
)
def test_other_functions_agree_with_strict(make: Callable[[Any], Any]) -> None:
    check_same(make(tfr), make(xps))
