"""Checks shared by the namespace functions: operands, Python scalars, dtypes, shapes."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import layout
from ..dtype import CATEGORIES, DType, as_dtype, promote_types
from ..errors import PromotionError, ValidationError
from ._adapter import ARRAY_TYPES

__all__ = [
    "axes_tuple",
    "broadcast_shapes",
    "check_array",
    "check_category",
    "flag_param",
    "int_param",
    "normalize_axis",
    "number_param",
    "operand_dtype",
    "scalar_to",
]

Shape = tuple[int, ...]

_COMPLEX_OF = {DType.F32: DType.C32, DType.F64: DType.C64}


def check_array(x: Any, op: str, what: str = "x") -> None:
    """Refuse anything that is not a tenferro array (`ValidationError`, INVALID_OPERAND)."""
    if not isinstance(x, ARRAY_TYPES):
        raise ValidationError(
            op,
            f"{what} must be a tenferro array (Tensor or TensorView), got "
            f"{type(x).__name__}; wrap data with tenferro.asarray first",
            kind="INVALID_OPERAND",
            operand_type=type(x).__name__,
        )


def is_py_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex))


def check_category(op: str, dt: DType, category: str) -> None:
    """Refuse a dtype outside the function's array API category (a `PromotionError`)."""
    if dt not in CATEGORIES[category]:
        raise PromotionError(
            op,
            f"the array API allows {category} dtypes here; convert with tenferro.astype first",
            kind="UNSUPPORTED_DTYPE",
            dtype=dt,
        )


def scalar_dtype(value: Any, dt: DType, op: str) -> DType:
    """The dtype a Python scalar takes next to an array of ``dt`` (the standard's rules)."""
    if isinstance(value, bool):
        ok = dt is DType.BOOL
    elif isinstance(value, int):
        ok = dt is not DType.BOOL
    elif isinstance(value, float):
        ok = dt in CATEGORIES["floating"]
    else:
        ok = dt in CATEGORIES["floating"]
        if ok and dt in _COMPLEX_OF:
            return _COMPLEX_OF[dt]
    if not ok:
        raise PromotionError(
            op,
            f"a Python {type(value).__name__} cannot be combined with a {dt.value} array "
            "under the array API's rules; pass a scalar of the array's kind or convert "
            "the array with tenferro.astype",
            kind="SCALAR_DTYPE",
            dtype=dt,
        )
    return dt


def scalar_to(value: Any, dt: DType, op: str) -> Any:
    """``value`` as a 0-d numpy array of ``dt`` (typed error when out of range)."""
    try:
        if isinstance(value, int) and dt.is_integer:
            info = np.iinfo(dt.numpy)
            if not info.min <= value <= info.max:
                raise OverflowError
        with np.errstate(over="ignore"):
            return np.asarray(value, dtype=dt.numpy)
    except OverflowError:
        raise ValidationError(
            op,
            f"the scalar {value!r} is out of range for dtype {dt.value}",
            kind="SCALAR_OUT_OF_RANGE",
            scalar=value,
            dtype=dt,
        ) from None


def operand_dtype(args: tuple[Any, ...], op: str) -> DType:
    """The promoted dtype of the arrays among ``args``, then of their Python scalars."""
    dt: DType | None = None
    for a in args:
        if isinstance(a, ARRAY_TYPES):
            d = a.dtype
            dt = d if dt is None else promote_types(dt, d, op)
        elif not is_py_scalar(a):
            raise ValidationError(
                op,
                f"operands must be tenferro arrays or Python scalars, got "
                f"{type(a).__name__}; wrap data with tenferro.asarray first",
                kind="INVALID_OPERAND",
                operand_type=type(a).__name__,
            )
    if dt is None:
        raise ValidationError(
            op,
            "at least one operand must be a tenferro array",
            kind="INVALID_OPERAND",
            operand_type=type(args[0]).__name__ if args else "nothing",
        )
    for a in args:
        if is_py_scalar(a):
            dt = scalar_dtype(a, dt, op)
    return dt


def broadcast_shapes(op: str, *shapes: Shape) -> Shape:
    """The broadcast shape of ``shapes`` (`ValidationError` BROADCAST when they clash)."""
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return shapes[0]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValidationError(
            op,
            f"shapes {', '.join(map(str, shapes))} do not broadcast; each axis (aligned "
            "from the right) must be equal or 1",
            kind="BROADCAST",
            shapes=shapes,
        ) from None


def normalize_axis(axis: Any, ndim: int, op: str) -> int:
    """A valid axis in ``0..ndim-1`` from a possibly negative int (IndexError-compatible)."""
    return layout.normalize_axis(axis, ndim, op, kind="INVALID_AXIS")


def axes_tuple(axis: Any, ndim: int, op: str) -> tuple[int, ...] | None:
    """``axis`` (None, an int or a sequence of ints) as non-negative axes."""
    if axis is None:
        return None
    return layout.normalize_axis_tuple(axis, ndim, op, kind="INVALID_AXIS")


def int_param(value: Any, name: str, op: str) -> Any:
    """An int parameter (a diagonal offset, an axis) given as a tenferro array: a 0-d
    integer one as its int; any other refused (`ValidationError` INVALID_ARGUMENT)
    before numpy does arithmetic on it, which would compute pooled temporaries and
    then fail on their truth value. Anything else is returned as it is (numpy's own
    checks, typed by `numpy_call`, still apply)."""
    if not isinstance(value, ARRAY_TYPES):
        return value
    if value.shape != () or not value.dtype.is_integer:
        raise ValidationError(
            op,
            f"{name} must be an int, got a {value.dtype.value} array of shape {value.shape}",
            kind="INVALID_ARGUMENT",
        )
    return operator.index(value)


def flag_param(value: Any, name: str, op: str) -> bool:
    """A flag (``keepdims``) as a bool; an array, whose truth value numpy refuses after
    reading it, is refused first (`ValidationError` INVALID_ARGUMENT)."""
    if value is True or value is False:
        return value
    if isinstance(value, (*ARRAY_TYPES, np.ndarray)):
        raise ValidationError(
            op, f"{name} must be True or False, got an array", kind="INVALID_ARGUMENT"
        )
    return bool(value)


def number_param(value: Any, name: str, op: str) -> Any:
    """A real number parameter (``correction``) given as an array: a 0-d real one as its
    Python number; any other refused (`ValidationError` INVALID_ARGUMENT) before numpy
    does arithmetic on it. Anything else is returned as it is."""
    if isinstance(value, np.ndarray):
        ok = value.shape == () and value.dtype.kind in "iuf"
        is_float = value.dtype.kind == "f"
    elif isinstance(value, ARRAY_TYPES):
        ok = value.shape == () and (value.dtype.is_integer or value.dtype.is_float)
        is_float = value.dtype.is_float
    else:
        return value
    if not ok:
        raise ValidationError(
            op,
            f"{name} must be a real number, got an array of shape {value.shape}",
            kind="INVALID_ARGUMENT",
        )
    return float(value) if is_float else int(value)


def dtype_arg(dtype: Any, op: str) -> DType | None:
    return None if dtype is None else as_dtype(dtype, op)
