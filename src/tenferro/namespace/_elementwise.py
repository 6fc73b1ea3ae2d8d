"""Elementwise functions, one table row each (name, numpy ufunc, dtype category, result).

Every function broadcasts its operands, promotes their dtypes by the array API
table (`tenferro.dtype.promote_types`), accepts Python scalars where the
standard does, and writes one numpy ufunc call into a pooled output of the
default engine. Ownership: **computes** a new pooled tensor; the operands are
read without copying.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import numpy as np

from ..dtype import CATEGORIES, DType
from ._adapter import (
    ARRAY_TYPES,
    Result,
    binary_function,
    compute,
    emit,
    ufunc_into,
    unary_function,
)
from ._core import (
    broadcast_shapes,
    check_array,
    check_category,
    is_py_scalar,
    operand_dtype,
    scalar_to,
)
from ._interop import accept_numpy

Shape = tuple[int, ...]


def _floor_divide(a: Any, b: Any, out: Any, casting: Any = "same_kind") -> None:
    """numpy's ``floor_divide``, with the standard's special cases for infinities.

    numpy computes ``inf // 2`` as NaN and ``1 // -inf`` as -1; the standard says
    ``inf`` and ``-0``: those elements are ``floor(a / b)``.
    """
    if out.dtype.kind != "f":
        np.floor_divide(a, b, out=out, casting=casting)
        return
    with np.errstate(invalid="ignore"):
        # The NaNs numpy would warn about are the special cases replaced below.
        np.floor_divide(a, b, out=out, casting=casting)
        special = (np.isinf(a) & np.isfinite(b) & (b != 0)) | (np.isfinite(a) & np.isinf(b))
        if special.any():
            np.copyto(out, np.floor(np.divide(a, b)), casting=casting, where=special)


_floor_divide.__name__ = "floor_divide"


def _expm1(a: Any, out: Any, casting: Any = "same_kind") -> None:
    """numpy's ``expm1``; for complex input ``exp(z) - 1`` without cancellation,
    whose special values (infinite or NaN parts) follow the standard."""
    if out.dtype.kind != "c":
        np.expm1(a, out=out, casting=casting)
        return
    with np.errstate(all="ignore"):
        x = a.real
        y = a.imag
        half = np.sin(y / 2)
        res = np.expm1(x) * np.cos(y) - 2 * half * half + 1j * (np.exp(x) * np.sin(y))
        finite = np.isfinite(a)
        if not finite.all():
            res = np.where(finite, res, np.exp(a) - 1)
        np.copyto(out, res, casting="unsafe")


_expm1.__name__ = "expm1"

# Result rules: "same" (the promoted dtype), "bool", "real" (complex -> its real type).
_UNARY: list[tuple[str, Any, str, str]] = [
    ("abs", np.absolute, "numeric", "real"),
    ("acos", np.arccos, "floating", "same"),
    ("acosh", np.arccosh, "floating", "same"),
    ("asin", np.arcsin, "floating", "same"),
    ("asinh", np.arcsinh, "floating", "same"),
    ("atan", np.arctan, "floating", "same"),
    ("atanh", np.arctanh, "floating", "same"),
    ("bitwise_invert", np.invert, "integer or boolean", "same"),
    ("ceil", np.ceil, "real numeric", "same"),
    ("conj", np.conjugate, "numeric", "same"),
    ("cos", np.cos, "floating", "same"),
    ("cosh", np.cosh, "floating", "same"),
    ("exp", np.exp, "floating", "same"),
    ("expm1", _expm1, "floating", "same"),
    ("floor", np.floor, "real numeric", "same"),
    ("isfinite", np.isfinite, "numeric", "bool"),
    ("isinf", np.isinf, "numeric", "bool"),
    ("isnan", np.isnan, "numeric", "bool"),
    ("log", np.log, "floating", "same"),
    ("log10", np.log10, "floating", "same"),
    ("log1p", np.log1p, "floating", "same"),
    ("log2", np.log2, "floating", "same"),
    ("logical_not", np.logical_not, "bool", "same"),
    ("negative", np.negative, "numeric", "same"),
    ("positive", np.positive, "numeric", "same"),
    ("reciprocal", np.reciprocal, "floating", "same"),
    ("round", np.rint, "numeric", "same"),
    ("sign", np.sign, "numeric", "same"),
    ("signbit", np.signbit, "real floating", "bool"),
    ("sin", np.sin, "floating", "same"),
    ("sinh", np.sinh, "floating", "same"),
    ("sqrt", np.sqrt, "floating", "same"),
    ("square", np.square, "numeric", "same"),
    ("tan", np.tan, "floating", "same"),
    ("tanh", np.tanh, "floating", "same"),
    ("trunc", np.trunc, "real numeric", "same"),
]

_BINARY: list[tuple[str, Any, str, str]] = [
    ("add", np.add, "numeric", "same"),
    ("atan2", np.arctan2, "real floating", "same"),
    ("bitwise_and", np.bitwise_and, "integer or boolean", "same"),
    ("bitwise_left_shift", np.left_shift, "integer", "same"),
    ("bitwise_or", np.bitwise_or, "integer or boolean", "same"),
    ("bitwise_right_shift", np.right_shift, "integer", "same"),
    ("bitwise_xor", np.bitwise_xor, "integer or boolean", "same"),
    ("copysign", np.copysign, "real floating", "same"),
    ("divide", np.true_divide, "floating", "same"),
    ("equal", np.equal, "any", "bool"),
    ("floor_divide", _floor_divide, "real numeric", "same"),
    ("greater", np.greater, "real numeric", "bool"),
    ("greater_equal", np.greater_equal, "real numeric", "bool"),
    ("hypot", np.hypot, "real floating", "same"),
    ("less", np.less, "real numeric", "bool"),
    ("less_equal", np.less_equal, "real numeric", "bool"),
    ("logaddexp", np.logaddexp, "real floating", "same"),
    ("logical_and", np.logical_and, "bool", "same"),
    ("logical_or", np.logical_or, "bool", "same"),
    ("logical_xor", np.logical_xor, "bool", "same"),
    ("maximum", np.maximum, "real numeric", "same"),
    ("minimum", np.minimum, "real numeric", "same"),
    ("multiply", np.multiply, "numeric", "same"),
    ("nextafter", np.nextafter, "real floating", "same"),
    ("not_equal", np.not_equal, "any", "bool"),
    ("pow", np.power, "numeric", "same"),
    ("remainder", np.remainder, "real numeric", "same"),
    ("subtract", np.subtract, "numeric", "same"),
]

# Rounding an integer is the identity (numpy would compute in float64).
_INTEGER_IDENTITY = frozenset({"ceil", "floor", "trunc", "round"})


# The dtypes most code uses first: the fast paths test membership in a tuple,
# where a hit on the first entries costs one identity compare (an enum member
# compared by `==` or hashed for a set costs several times more).
_COMMON_FIRST: tuple[DType, ...] = (
    DType.F64,
    DType.F32,
    DType.C64,
    DType.C32,
    DType.I64,
    DType.I32,
    DType.BOOL,
)
_COMMON_FIRST += tuple(d for d in DType if d not in _COMMON_FIRST)


def _fast_tuple(category: str) -> frozenset[DType]:
    # A set: membership hashes by identity and never calls `DType.__eq__` (numpy-aware).
    return frozenset(d for d in _COMMON_FIRST if d in CATEGORIES[category])


def _result(rule: str, dt: DType) -> DType:
    if rule == "bool":
        return DType.BOOL
    if rule == "real":
        return dt.real
    return dt


def _make_unary(name: str, ufunc: Any, category: str, rule: str) -> Callable[..., Any]:
    op = f"tenferro.{name}"
    allowed = _fast_tuple(category)
    identity = name in _INTEGER_IDENTITY
    same = rule == "same"

    def general(x: Any, /) -> Any:
        check_array(x, op)
        dt = x.dtype
        check_category(op, dt, category)
        if identity and dt.is_integer:
            return ufunc_into(op, np.positive, (x,), x.shape, dt)
        return ufunc_into(op, ufunc, (x,), x.shape, _result(rule, dt))

    # numpy operands take the general path, which borrows them (`_interop`).
    general = accept_numpy(general, name)
    # Same-dtype functions take the hot path first; the others (bool or real
    # results, rounding that is the identity on integers) always run `general`.
    fn = unary_function(ufunc, allowed, general) if same and not identity else general

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = (
        f"Elementwise ``{name}`` (numpy's ``{ufunc.__name__}``) of an array with a "
        f"{category} dtype.\n\nOwnership: **computes** a pooled output; ``x`` is read "
        "without copying."
    )
    return fn


def _make_binary(name: str, ufunc: Any, category: str, rule: str) -> Callable[..., Any]:
    op = f"tenferro.{name}"
    allowed = _fast_tuple(category)
    out_bool = rule == "bool"

    def general(x1: Any, x2: Any) -> Any:
        return binary(op, ufunc, category, rule, x1, x2)

    # numpy operands take the general path, which borrows them (`_interop`).
    general = accept_numpy(general, name)

    fn = binary_function(ufunc, allowed, out_bool, general, op)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = (
        f"Elementwise ``{name}`` (numpy's ``{ufunc.__name__}``) with broadcasting and the "
        f"array API's type promotion; operands have {category} dtypes, either may be a "
        "Python scalar.\n\nOwnership: **computes** a pooled output; the operands are "
        "read without copying."
    )
    return fn


def binary(op: str, ufunc: Any, category: str, rule: str, x1: Any, x2: Any) -> Any:
    """The general path of a binary elementwise function (scalars, broadcasting, promotion)."""
    dt = operand_dtype((x1, x2), op)
    for a in (x1, x2):
        if isinstance(a, ARRAY_TYPES):
            check_category(op, a.dtype, category)
    check_category(op, dt, category)
    args = tuple(scalar_to(a, dt, op) if is_py_scalar(a) else a for a in (x1, x2))
    shapes = [a.shape for a in (x1, x2) if isinstance(a, ARRAY_TYPES)]
    shape = broadcast_shapes(op, *shapes) if len(shapes) == 2 else shapes[0]
    return ufunc_into(op, ufunc, args, shape, _result(rule, dt))


FUNCTIONS: dict[str, Callable[..., Any]] = {}
for _row in _UNARY:
    FUNCTIONS[_row[0]] = _make_unary(*_row)
for _row in _BINARY:
    FUNCTIONS[_row[0]] = _make_binary(*_row)


class UnaryFunction(Protocol):
    """``f(x, /)``: an elementwise function of one array or view (a row of `_UNARY`)."""

    def __call__(self, x: Any, /) -> Result: ...


class BinaryFunction(Protocol):
    """``f(x1, x2, /)``: an elementwise function of two operands, arrays, views or
    Python scalars, at least one an array (a row of `_BINARY`)."""

    def __call__(self, x1: Any, x2: Any, /) -> Result: ...


# The table's functions under their own names, typed by their family's protocol.
abs: UnaryFunction = FUNCTIONS["abs"]
acos: UnaryFunction = FUNCTIONS["acos"]
acosh: UnaryFunction = FUNCTIONS["acosh"]
asin: UnaryFunction = FUNCTIONS["asin"]
asinh: UnaryFunction = FUNCTIONS["asinh"]
atan: UnaryFunction = FUNCTIONS["atan"]
atanh: UnaryFunction = FUNCTIONS["atanh"]
bitwise_invert: UnaryFunction = FUNCTIONS["bitwise_invert"]
ceil: UnaryFunction = FUNCTIONS["ceil"]
conj: UnaryFunction = FUNCTIONS["conj"]
cos: UnaryFunction = FUNCTIONS["cos"]
cosh: UnaryFunction = FUNCTIONS["cosh"]
exp: UnaryFunction = FUNCTIONS["exp"]
expm1: UnaryFunction = FUNCTIONS["expm1"]
floor: UnaryFunction = FUNCTIONS["floor"]
isfinite: UnaryFunction = FUNCTIONS["isfinite"]
isinf: UnaryFunction = FUNCTIONS["isinf"]
isnan: UnaryFunction = FUNCTIONS["isnan"]
log: UnaryFunction = FUNCTIONS["log"]
log10: UnaryFunction = FUNCTIONS["log10"]
log1p: UnaryFunction = FUNCTIONS["log1p"]
log2: UnaryFunction = FUNCTIONS["log2"]
logical_not: UnaryFunction = FUNCTIONS["logical_not"]
negative: UnaryFunction = FUNCTIONS["negative"]
positive: UnaryFunction = FUNCTIONS["positive"]
reciprocal: UnaryFunction = FUNCTIONS["reciprocal"]
round: UnaryFunction = FUNCTIONS["round"]
sign: UnaryFunction = FUNCTIONS["sign"]
signbit: UnaryFunction = FUNCTIONS["signbit"]
sin: UnaryFunction = FUNCTIONS["sin"]
sinh: UnaryFunction = FUNCTIONS["sinh"]
sqrt: UnaryFunction = FUNCTIONS["sqrt"]
square: UnaryFunction = FUNCTIONS["square"]
tan: UnaryFunction = FUNCTIONS["tan"]
tanh: UnaryFunction = FUNCTIONS["tanh"]
trunc: UnaryFunction = FUNCTIONS["trunc"]
add: BinaryFunction = FUNCTIONS["add"]
atan2: BinaryFunction = FUNCTIONS["atan2"]
bitwise_and: BinaryFunction = FUNCTIONS["bitwise_and"]
bitwise_left_shift: BinaryFunction = FUNCTIONS["bitwise_left_shift"]
bitwise_or: BinaryFunction = FUNCTIONS["bitwise_or"]
bitwise_right_shift: BinaryFunction = FUNCTIONS["bitwise_right_shift"]
bitwise_xor: BinaryFunction = FUNCTIONS["bitwise_xor"]
copysign: BinaryFunction = FUNCTIONS["copysign"]
divide: BinaryFunction = FUNCTIONS["divide"]
equal: BinaryFunction = FUNCTIONS["equal"]
floor_divide: BinaryFunction = FUNCTIONS["floor_divide"]
greater: BinaryFunction = FUNCTIONS["greater"]
greater_equal: BinaryFunction = FUNCTIONS["greater_equal"]
hypot: BinaryFunction = FUNCTIONS["hypot"]
less: BinaryFunction = FUNCTIONS["less"]
less_equal: BinaryFunction = FUNCTIONS["less_equal"]
logaddexp: BinaryFunction = FUNCTIONS["logaddexp"]
logical_and: BinaryFunction = FUNCTIONS["logical_and"]
logical_or: BinaryFunction = FUNCTIONS["logical_or"]
logical_xor: BinaryFunction = FUNCTIONS["logical_xor"]
maximum: BinaryFunction = FUNCTIONS["maximum"]
minimum: BinaryFunction = FUNCTIONS["minimum"]
multiply: BinaryFunction = FUNCTIONS["multiply"]
nextafter: BinaryFunction = FUNCTIONS["nextafter"]
not_equal: BinaryFunction = FUNCTIONS["not_equal"]
pow: BinaryFunction = FUNCTIONS["pow"]
remainder: BinaryFunction = FUNCTIONS["remainder"]
subtract: BinaryFunction = FUNCTIONS["subtract"]

# numpy's spellings of some of them (autoray's numpy-style callers use these).
absolute: UnaryFunction = abs
arccos: UnaryFunction = acos
arccosh: UnaryFunction = acosh
arcsin: UnaryFunction = asin
arcsinh: UnaryFunction = asinh
arctan: UnaryFunction = atan
arctan2: BinaryFunction = atan2
arctanh: UnaryFunction = atanh
conjugate: UnaryFunction = conj
power: BinaryFunction = pow
true_divide: BinaryFunction = divide


def real(x: Any, /) -> Result:
    """The real part; a real array is returned as a new array of its values.

    Ownership: **computes** a pooled output (the real parts as a new array).
    """
    op = "tenferro.real"
    check_array(x, op)
    check_category(op, x.dtype, "numeric")
    return emit(op, compute(op, lambda a: np.real(a), (x,)))


def imag(x: Any, /) -> Result:
    """The imaginary part of a complex array. Ownership: **computes** a pooled output."""
    op = "tenferro.imag"
    check_array(x, op)
    check_category(op, x.dtype, "complex floating")
    return emit(op, compute(op, lambda a: np.imag(a), (x,)))


def clip(x: Any, /, min: Any = None, max: Any = None) -> Result:
    """Clamp each element to ``[min, max]`` (arrays or scalars, broadcast to ``x``).

    Ownership: **computes** a pooled output of ``x``'s dtype and shape.
    """
    op = "tenferro.clip"
    check_array(x, op)
    dt = x.dtype
    check_category(op, dt, "real numeric")
    bounds: list[Any] = []
    for b in (min, max):
        if b is None:
            bounds.append(None)
        elif isinstance(b, ARRAY_TYPES):
            check_category(op, b.dtype, "real numeric")
            if b.dtype.is_integer != dt.is_integer:
                operand_dtype((x, b), op)  # refuses mixed kinds
            broadcast_shapes(op, x.shape, b.shape)
            bounds.append(b)
        else:
            operand_dtype((x, b), op)
            bounds.append(b)
    if bounds[0] is None and bounds[1] is None:
        return cast(Result, ufunc_into(op, np.positive, (x,), x.shape, dt))

    if dt.is_integer:
        # Python ints beyond the dtype's range bound nothing (and cannot be converted).
        info = np.iinfo(dt.numpy)
        if isinstance(bounds[0], int) and bounds[0] <= info.min:
            bounds[0] = None
        if isinstance(bounds[1], int) and bounds[1] >= info.max:
            bounds[1] = None
    shapes = [x.shape] + [b.shape for b in bounds if isinstance(b, ARRAY_TYPES)]
    shape = broadcast_shapes(op, *shapes) if len(shapes) > 1 else x.shape

    def run(a: Any, lo: Any, hi: Any) -> Any:
        out = np.array(np.broadcast_to(a, shape))
        with np.errstate(invalid="ignore"):
            if lo is not None:
                lo = np.broadcast_to(np.asarray(lo), shape)
                mask = (out < lo) | np.isnan(lo)
                out[mask] = lo[mask]
            if hi is not None:
                hi = np.broadcast_to(np.asarray(hi), shape)
                mask = (out > hi) | np.isnan(hi)
                out[mask] = hi[mask]
        return out

    return emit(op, compute(op, run, (x, bounds[0], bounds[1])))
