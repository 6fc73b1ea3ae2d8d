"""The compiled broadcasting path of the binary elementwise functions
(`engine._core.broadcast2`, issue 20): numpy's values, and the general path's
dtype, memory order and refusals, over broadcastable shapes, promoted dtypes and
the layouts real code makes (owners, C-ordered views, slices, ``None`` axes)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.interface import broadcast2
from tenferro.namespace import _elementwise as ew

DTYPES = [np.float64, np.float32, np.complex128, np.int64, np.int32, np.int8, np.uint8]
FUNCS = [
    "add",
    "multiply",
    "subtract",
    "less",
    "maximum",
    "equal",
    "divide",
    "pow",
    "floor_divide",
    "remainder",
]
ROWS = {row[0]: row for row in ew._BINARY}


def _layout(arr: np.ndarray[Any, Any], kind: str) -> Any:
    """``arr``'s values as a tenferro array laid out as ``kind`` says."""
    if kind == "owner":
        return tfr.asarray(np.asfortranarray(arr))
    if kind == "c":
        return tfr.asarray(np.ascontiguousarray(arr))
    # A strided view: every other element of a C-ordered array twice as wide.
    wide = np.zeros((*arr.shape[:-1], 2 * arr.shape[-1]), arr.dtype) if arr.ndim else None
    if wide is None:
        return tfr.asarray(np.ascontiguousarray(arr))
    wide[..., ::2] = arr
    return tfr.asarray(wide)[..., ::2]


@st.composite
def operands(draw: Any) -> tuple[Any, ...]:
    out = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(0, len(out)))
        tail = out[len(out) - rank :]
        shapes.append(tuple(d if draw(st.booleans()) else 1 for d in tail))
    dts = [draw(st.sampled_from(DTYPES)) for _ in range(2)]
    kinds = [draw(st.sampled_from(["owner", "c", "strided"])) for _ in range(2)]
    name = draw(st.sampled_from(FUNCS))
    seed = draw(st.integers(0, 2**16))
    return name, shapes, dts, kinds, seed


def _values(shape: tuple[int, ...], dt: Any, rng: np.random.Generator) -> Any:
    vals = rng.integers(-5, 6, size=shape)
    if np.dtype(dt).kind == "u":
        vals = np.abs(vals)
    return np.asarray(vals).astype(dt)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        with warnings.catch_warnings():
            # The same-shape hot path leaves numpy's warnings as numpy gives them.
            warnings.simplefilter("ignore")
            r = fn(*args)
    except tfr.TenferroError as exc:
        return ("refused", type(exc), str(exc))
    return ("ok", type(r), r.dtype, r.shape, np.asarray(r))


@settings(max_examples=300, deadline=None)
@given(case=operands())
def test_a_binary_function_gives_the_general_paths_result_and_numpys_values(
    case: tuple[Any, ...],
) -> None:
    name, shapes, dts, kinds, seed = case
    rng = np.random.default_rng(seed)
    arrs = [_values(s, d, rng) for s, d in zip(shapes, dts, strict=True)]
    x1, x2 = (_layout(a, k) for a, k in zip(arrs, kinds, strict=True))
    fast = _outcome(ew.FUNCTIONS[name], x1, x2)
    if fast[0] == "ok" and 0 not in fast[3]:
        # Every case that computes takes a compiled path (the same-shape one declines
        # where this one takes over).
        allowed = ew._fast_tuple(ROWS[name][2])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert broadcast2(ROWS[name][1], x1, x2, allowed, False, "t") is not None
    _, ufunc, category, rule = ROWS[name]
    general = _outcome(
        lambda a, b: ew.binary(f"tenferro.{name}", ufunc, category, rule, a, b), x1, x2
    )
    assert fast[:4] == general[:4]
    if fast[0] == "ok":
        np.testing.assert_array_equal(fast[4], general[4])
        with np.errstate(all="ignore"):
            want = getattr(np, ufunc.__name__)(*arrs)
        np.testing.assert_allclose(fast[4], want.astype(fast[4].dtype), rtol=1e-6)


@pytest.mark.parametrize("value", [2.0, 3, -1.5])
def test_a_strided_view_times_a_python_scalar_gives_numpys_values(value: Any) -> None:
    base = np.arange(5.0)
    v = tfr.asarray(base.copy())[2:3]
    r = v * value
    assert r.dtype == tfr.float64
    np.testing.assert_array_equal(np.asarray(r), base[2:3] * value)
    np.testing.assert_array_equal(np.asarray(value - v), value - base[2:3])


def test_a_broadcast_product_of_c_ordered_operands_is_c_ordered() -> None:
    u = np.arange(12.0).reshape(3, 4)
    s = np.arange(4.0)
    r = tfr.asarray(u.copy()) * tfr.asarray(s.copy())[None, :]
    assert isinstance(r, tfr.TensorView)
    assert r.strides[0] > r.strides[1]
    np.testing.assert_array_equal(np.asarray(r), u * s[None, :])


def test_a_broadcast_division_by_zero_does_not_warn_as_the_general_path_does_not() -> None:
    a = tfr.asarray(np.ones((2, 3)))
    b = tfr.asarray(np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = a / b
    assert np.isinf(np.asarray(r)).all()


def test_a_broadcast_operand_borrowed_for_writing_is_refused() -> None:
    a = tfr.asarray(np.asfortranarray(np.ones((2, 3))))
    b = tfr.asarray(np.ones(3))
    with a.map_write(), pytest.raises(tfr.BorrowError):
        tfr.multiply(a, b)
    with b.map_write(), pytest.raises(tfr.BorrowError):
        tfr.multiply(a, b)


SCALARS = [2, -3, 0, 2.5, -0.0, 300, -129, 2**40, 2**53 + 1, 2**70, True]


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(FUNCS),
    dt=st.sampled_from(DTYPES),
    kind=st.sampled_from(["owner", "c", "strided"]),
    shape=st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
    value=st.sampled_from(SCALARS),
    first=st.booleans(),
)
def test_a_python_scalar_operand_gives_the_general_paths_result(
    name: str, dt: Any, kind: str, shape: tuple[int, ...], value: Any, first: bool
) -> None:
    arr = _values(shape, dt, np.random.default_rng(0))
    x = _layout(arr, kind)
    args = (value, x) if first else (x, value)
    fast = _outcome(ew.FUNCTIONS[name], *args)
    _, ufunc, category, rule = ROWS[name]
    general = _outcome(
        lambda a, b: ew.binary(f"tenferro.{name}", ufunc, category, rule, a, b), *args
    )
    assert fast[:4] == general[:4]
    if fast[0] == "ok":
        np.testing.assert_array_equal(fast[4], general[4])


def test_an_int_scalar_next_to_an_int64_array_takes_the_compiled_path() -> None:
    x = tfr.asarray(np.array(5, dtype=np.int64))
    hot = broadcast2(np.add, x, 1, ew._fast_tuple("numeric"), False, "t")
    assert hot is not None
    assert hot.dtype == tfr.int64
    assert int(hot) == 6


def test_a_refused_integer_power_on_the_hot_path_names_pow_as_the_general_path_does() -> None:
    a = tfr.asarray(np.asfortranarray(np.full((2, 2), 2, dtype=np.int64)))
    b = tfr.asarray(np.asfortranarray(np.full((2, 2), -1, dtype=np.int64)))
    with pytest.raises(tfr.TenferroError, match=r"^tenferro\.pow: "):
        tfr.pow(a, b)
    with pytest.raises(tfr.TenferroError, match=r"^tenferro\.pow: "):
        tfr.pow(a, b[0])


def _fresh_transposed_view() -> Any:
    """A fresh root-less view that is not C-ordered: the transposed view of a new pooled
    column-major result (what an einsum whose output axes are permuted returns)."""
    from tenferro.engine import _core

    t = tfr.exp(tfr.asarray(np.asfortranarray(np.arange(6.0).reshape(2, 3))))
    v = _core.permuted_view(t, (1, 0))
    del t
    assert v._base is None
    return v


def test_a_fresh_strided_view_operand_stays_root_less() -> None:
    v = _fresh_transposed_view()
    want = np.exp(np.arange(6.0).reshape(2, 3)).T
    r = v * tfr.asarray(np.arange(2.0))[None, :]
    np.testing.assert_array_equal(np.asarray(r), want * np.arange(2.0)[None, :])
    assert v._base is None
    assert v._source._root is None
    assert v._source.readers() == 0


def test_a_broadcast_leaves_no_pin_on_any_operand_buffer() -> None:
    u = tfr.asarray(np.ones((4, 3)))
    s = tfr.asarray(np.arange(3.0))
    sv = s[None, :]
    r = u * sv
    r2 = u[:, :2] * s[:2]
    r3 = s[1:2] * 2.0
    assert (r.shape, r2.shape, r3.shape) == ((4, 3), (4, 2), (1,))
    assert u._source.readers() == 0
    assert s._st.readers() == 0


def test_a_refused_broadcast_kernel_marks_every_buffer_it_read_and_unpins_them() -> None:
    a = tfr.asarray(np.asfortranarray(np.full((2, 2), 2, dtype=np.int64)))
    b = tfr.asarray(np.full((3, 2), -1, dtype=np.int64))
    row = b[1]  # a view holding its root, read on its buffer's memory
    with pytest.raises(tfr.TenferroError, match=r"^tenferro\.pow: "):
        tfr.pow(a, row)
    assert a._st.failed_read
    assert row._source.failed_read
    assert a._st.readers() == 0
    assert row._source.readers() == 0
