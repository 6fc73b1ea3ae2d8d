"""The norm kernels (matrix and vector norms, the BLAS two-norm) and the matrix
exponential."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ...dtype import DType
from ...errors import ValidationError
from ._adapter import Array, LinalgCall
from ._common import (
    _check_dtype,
    _items,
    _mat,
    _matrix,
)
from ._lapack import (
    blas,
)
from ._svd import _gesdd

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def matrix_norm(call: LinalgCall, x: Any, ord: Any) -> None:
    """Output: the norm of each matrix, ``[B...]``, real."""
    op = call.op
    # The default ord first: the general membership test costs a microsecond.
    fro = ord.__class__ is str and ord == "fro"
    # An array-like ord compares elementwise: only a scalar can name a norm.
    if not fro and (
        (hasattr(ord, "__len__") and not isinstance(ord, str))
        or not any(ord == o and type(ord) is not bool for o in _MATRIX_ORDS)
    ):
        raise ValidationError(
            op,
            f"ord must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf, got {ord!r}",
            kind="INVALID_ORD",
        )
    arr, dt, m, n, batch = _matrix(call, x)
    out = call.output(batch, dt.real)
    if m == 0 or n == 0:
        out[...] = 0
        return
    if fro and not batch and (arr.flags.f_contiguous or arr.flags.c_contiguous):
        # One matrix in one block of memory (a tensor, or a view of a whole one):
        # the norm of its elements in memory order, no temporary.
        out[()] = two_norm(arr.ravel(order="K"), dt)
        return
    if ord in ("nuc", 2, -2):
        k = min(m, n)
        s_s = call.scratch(k, dt.real.numpy)
        for idx in _items(batch):
            _gesdd(call, _mat(arr, idx), dt, m, n, (), b"N", None, s_s, None)
            out[idx] = norm_from_singular_values(s_s, ord)
        return
    for idx in _items(batch):
        mat = _mat(arr, idx)
        if fro and mat.flags.f_contiguous:
            out[idx] = two_norm(mat.reshape(-1, order="F"), dt)
        else:
            out[idx] = np.linalg.norm(mat, ord)


def norm_from_singular_values(s: Array, ord: Any) -> Any:
    """The norm ``ord`` ('nuc', 2 or -2) of a matrix from its descending singular values."""
    return s.sum() if ord == "nuc" else (s[0] if ord == 2 else s[-1])


_DOT = {DType.F32: "sdot", DType.F64: "ddot", DType.C32: "cdotc", DType.C64: "zdotc"}
_NRM2 = {DType.F32: "snrm2", DType.F64: "dnrm2", DType.C32: "scnrm2", DType.C64: "dznrm2"}
# Below this sum of squares (per element) squares of the smaller entries may have
# underflowed: tiny / eps, so that what underflowed is below the rounding error.
_SAFE_LOW = {dt: float(np.finfo(dt.real.numpy).tiny / np.finfo(dt.real.numpy).eps) for dt in _DOT}


class DotParts(NamedTuple):
    """What `two_norm`'s common case needs for one dtype, looked up once (see `dot_parts`)."""

    dot: Any
    complex_: bool
    safe_low: float
    real: DType
    real_np: np.dtype[Any]


_dot_parts: dict[DType, DotParts] = {}


def dot_parts(dt: DType) -> DotParts | None:
    """The `DotParts` of ``dt`` (None for a dtype outside LAPACK's), cached.

    The Frobenius hot path inlines `two_norm`'s common case with them: its own
    lookups (the BLAS routine, the dtype's properties) cost as much as the dot
    of a 64 x 64 matrix.
    """
    parts = _dot_parts.get(dt)
    if parts is None:
        if dt not in _DOT:
            return None
        parts = _dot_parts[dt] = DotParts(
            blas(_DOT[dt]), dt.is_complex, _SAFE_LOW[dt], dt.real, dt.real.numpy
        )
    return parts


def two_norm(flat: Array, dt: DType) -> float:
    """The 2-norm of a contiguous 1-D array of ``dt``, safe against overflow and underflow.

    ``sqrt(dot(x, x))`` (one BLAS pass, what ``numpy.linalg.norm`` computes) when
    the sum of squares is finite and far enough above the underflow threshold
    that no square that underflowed can matter; otherwise (entries beyond about
    1e154 or below 1e-154 in F64, NaN, inf) BLAS ``?nrm2``, whose scaled
    accumulation is exact there but 2.5x slower on large vectors. numpy returns
    inf for a matrix of 1e200 entries; this returns the right value.
    """
    size = flat.size
    if not size:
        return 0.0
    ss = blas(_DOT[dt])(flat, flat)
    if dt.is_complex:
        ss = ss.real
    if _SAFE_LOW[dt] * size < ss < math.inf:
        return math.sqrt(ss)
    return float(blas(_NRM2[dt])(flat))


def vector_norm(call: LinalgCall, x: Any, axes: Any, keepdims: bool, ord: Any) -> None:
    """Output: the vector norm over ``axes`` (all axes for None), real."""
    op = call.op
    arr, dt, _shape = call.operand(x)
    _check_dtype(op, dt, "x")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise ValidationError(op, f"ord must be a number, got {ord!r}", kind="INVALID_ORD")
    if axes is None and ord == 2 and not keepdims and arr.flags.f_contiguous:
        out = call.output((), dt.real)
        flat = arr.reshape(-1, order="F")
        out[...] = two_norm(flat, dt)
        return
    try:
        value = np.linalg.vector_norm(arr, axis=axes, keepdims=keepdims, ord=ord)
    except (ValueError, TypeError, np.exceptions.AxisError) as exc:
        raise ValidationError(op, str(exc), kind="INVALID_AXES", axes=axes) from None
    res = call.output(np.shape(value), dt.real)
    np.copyto(res, value)


def expm(call: LinalgCall, x: Any) -> None:
    """Output: the matrix exponential ``[N, N, B...]`` (scipy.linalg.expm per matrix)."""
    arr, dt, _, n, batch = _matrix(call, x, square=True)
    out = call.output((n, n, *batch), dt)
    if n == 0:
        return
    for idx in _items(batch):
        expm_into(_mat(out, idx), _mat(arr, idx))


def expm_into(out: Array, a: Array) -> None:
    """Write ``expm(a)`` into the F-ordered square ``out`` (``scipy.linalg.expm``).

    scipy allocates its own result (and the Pade temporaries); it is written into
    ``out``: one pass over N*N elements. scipy works on ``a.T`` (C-ordered when
    ``a`` is F-ordered, its natural layout), since ``exp(A)^T = exp(A^T)``: its
    C-ordered result is then ``exp(A)`` in F order, and that pass is a plain copy
    instead of a transposing one (2-3 % of the call at n = 64).
    """
    global _scipy_expm
    if _scipy_expm is None:
        # First use only (see `_lapack.f2py`): an import statement costs a
        # microsecond per call even once the module is loaded.
        from scipy.linalg import expm as _scipy_expm
    out.T[...] = _scipy_expm(a.T)


_scipy_expm: Any = None
