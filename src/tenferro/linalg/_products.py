"""The array API ``linalg`` extension's products and views of matrices.

``cross``, ``diagonal``, ``matrix_power``, ``outer``, ``tensordot``, ``trace``
and ``vecdot``: the standard puts them in the extension (``xp.linalg.*``) with
its own signatures (batch axes leading, the matrix in the last two axes,
keyword-only options). Most are the namespace's functions with the standard's
axes; this module is why ``tenferro.linalg`` sits in the namespace layer (see
docs/internals.md, "Layers").

Ownership, for every function: **borrows** its inputs (never modified) and
computes new pooled results.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import LinAlgError, ValidationError
from ..namespace._adapter import Result, compute, emit
from ..namespace._contraction import diagonal as _diagonal
from ..namespace._contraction import outer as _outer
from ..namespace._contraction import tensordot as _tensordot
from ..namespace._contraction import vecdot as _vecdot
from ..namespace._core import check_array, check_category, operand_dtype
from ..namespace._creation import astype
from ..namespace._reductions import _sum_dtype

__all__ = ["cross", "diagonal", "matrix_power", "outer", "tensordot", "trace", "vecdot"]


def _matrices(x: Any, op: str) -> None:
    check_array(x, op)
    if x.ndim < 2:
        raise ValidationError(
            op,
            f"needs an array of rank >= 2 (..., M, N), got rank {x.ndim}",
            kind="INVALID_RANK",
            shape=x.shape,
        )


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Result:
    """Cross product of 3-element vectors along ``axis`` (negative), other axes broadcast.

    Ownership: **borrows** the inputs; the result is a new pooled tensor.
    """
    op = "linalg.cross"
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    check_category(op, x1.dtype, "numeric")
    check_category(op, x2.dtype, "numeric")
    dt = operand_dtype((x1, x2), op)
    # Axis and lengths are checked on the operands before either is converted: a
    # refused call computes nothing (a promoted copy would be counted as live while
    # the error's traceback holds it).
    nd = min(x1.ndim, x2.ndim)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -nd <= axis <= -1:
        raise ValidationError(
            op, f"axis must be an int in [-{nd}, -1], got {axis!r}", kind="INVALID_AXIS"
        )
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValidationError(
            op,
            f"the vectors along axis {axis} must have 3 elements, got {x1.shape[axis]} and "
            f"{x2.shape[axis]}",
            kind="DIM_MISMATCH",
        )
    a = x1 if x1.dtype is dt else astype(x1, dt)
    b = x2 if x2.dtype is dt else astype(x2, dt)
    try:
        return emit(op, compute(op, lambda p, q: np.cross(p, q, axis=axis), (a, b)))
    except ValueError as exc:  # shapes that do not broadcast
        raise ValidationError(op, str(exc), kind="DIM_MISMATCH") from None


def diagonal(x: Any, /, *, offset: int = 0) -> Result:
    """The ``offset``-th diagonal of each matrix (last two axes), as the last axis.

    Ownership: **borrows** the input; the result is a new pooled tensor.
    """
    _matrices(x, "linalg.diagonal")
    return _diagonal(x, offset, -2, -1)


def matrix_power(x: Any, n: int, /) -> Result:
    """``x`` (floating) raised to the integer power ``n`` (``n < 0``: of the inverse), per matrix.

    A singular matrix with ``n < 0`` raises `LinAlgError` kind SINGULAR.

    Ownership: **borrows** the input; the result is a new pooled tensor.
    """
    op = "linalg.matrix_power"
    _matrices(x, op)
    check_category(op, x.dtype, "floating")
    if x.shape[-1] != x.shape[-2]:
        raise ValidationError(op, "needs square matrices", kind="NOT_SQUARE", shape=x.shape)
    if isinstance(n, bool):
        raise ValidationError(op, "n must be an int, got a bool", kind="INVALID_ARGUMENT")
    try:
        power = operator.index(n)
    except TypeError:
        raise ValidationError(op, f"n must be an int, got {n!r}", kind="INVALID_ARGUMENT") from None
    try:
        return emit(op, compute(op, lambda a: np.linalg.matrix_power(a, power), (x,)))
    except np.linalg.LinAlgError:
        raise LinAlgError(
            op,
            f"a matrix is singular, so it has no power {power}",
            kind="SINGULAR",
            batch_index=(),
        ) from None


def outer(x1: Any, x2: Any, /) -> Result:
    """The outer product of two 1-D arrays (``[M] x [N] -> [M, N]``).

    Ownership: **borrows** the inputs; the result is a new pooled tensor.
    """
    op = "linalg.outer"
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValidationError(
            op,
            f"needs two 1-D arrays, got ranks {x1.ndim} and {x2.ndim}",
            kind="INVALID_RANK",
            shape=x1.shape if x1.ndim != 1 else x2.shape,
        )
    check_category(op, x1.dtype, "numeric")
    check_category(op, x2.dtype, "numeric")
    return _outer(x1, x2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Result:
    """`tenferro.tensordot` (the extension's alias, ``axes`` keyword-only).

    Ownership: **borrows** the inputs; the result is a new pooled tensor.
    """
    return _tensordot(x1, x2, axes=axes)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Result:
    """Sum of the ``offset``-th diagonal of each matrix (last two axes): shape ``x.shape[:-2]``.

    ``dtype=None``: the standard's accumulation dtype (as `tenferro.sum`).

    Ownership: **borrows** the input; the result is a new pooled tensor.
    """
    op = "linalg.trace"
    _matrices(x, op)
    check_category(op, x.dtype, "numeric")
    dt = _sum_dtype(x, dtype, op)
    return emit(
        op,
        compute(op, lambda a: np.asarray(np.trace(a, offset, -2, -1, dtype=dt.numpy)), (x,)),
    )


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Result:
    """`tenferro.vecdot`: ``sum(conj(x1) * x2)`` along ``axis``, the rest broadcast.

    Ownership: **borrows** the inputs; the result is a new pooled tensor.
    """
    return _vecdot(x1, x2, axis=axis)
