"""The Cholesky and LU kernels: cholesky, solve, inv, det, slogdet."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import DTypeError, ValidationError
from ._adapter import Array, LinalgCall, Shape
from ._common import (
    _check_info,
    _items,
    _lwork,
    _mat,
    _matrix,
    _same_memory_or_copy,
    _vec,
)
from ._lapack import (
    f2py,
    remember,
)


def cholesky(call: LinalgCall, x: Any, upper: bool) -> None:
    """Output: the Cholesky factor ``[N, N, B...]`` (the other triangle zero)."""
    arr, dt, _, n, batch = _matrix(call, x, square=True)
    c = call.output((n, n, *batch), dt)
    if n == 0:
        return
    fn = f2py("potrf", dt)
    for idx in _items(batch):
        c_b = _mat(c, idx)
        np.copyto(c_b, _mat(arr, idx))
        c_, info = fn(c_b, lower=int(not upper), clean=1, overwrite_a=1)
        _same_memory_or_copy(c_b, c_)
        _check_info(
            call.op, info, "NOT_POSITIVE_DEFINITE", "the matrix is not positive definite", idx
        )


def _rhs(call: LinalgCall, b: Any, dt: DType, n: int, batch: Shape) -> tuple[Array, bool]:
    """The right-hand side ``[N, K, B...]`` or ``[N, B...]``; True for a vector rhs."""
    op = call.op
    arr, bdt, shape = call.operand(b)
    if bdt is not dt:
        raise DTypeError(
            op,
            f"a and b dtypes differ: {dt.name} and {bdt.name}; there is no implicit promotion "
            "(convert one of them with eng.convert)",
            kind="DTYPE_MISMATCH",
        )
    nb = len(batch)
    if len(shape) == nb + 1 and shape[0] == n and shape[1:] == batch:
        return arr, True
    if len(shape) == nb + 2 and shape[0] == n and shape[2:] == batch:
        return arr, False
    raise ValidationError(
        op,
        f"b must have shape [{n}, K, *{batch}] or [{n}, *{batch}] for a of batch {batch}, "
        f"got {shape}",
        kind="SHAPE_MISMATCH",
        shapes=(shape,),
    )


def solve(call: LinalgCall, a: Any, b: Any) -> None:
    """Output: X with ``A X = B``, shaped like B."""
    arr, dt, _, n, batch = _matrix(call, a, square=True)
    barr, vector = _rhs(call, b, dt, n, batch)
    x = call.output(barr.shape, dt)
    if x.size == 0 and n:
        return
    fn = f2py("gesv", dt)
    a_s = call.matrix_scratch(n, n, dt.numpy)
    for idx in _items(batch):
        np.copyto(a_s, _mat(arr, idx))
        if vector:
            x_b = _vec(x, idx).reshape((n, 1), order="F")
            np.copyto(x_b[:, 0], _vec(barr, idx))
        else:
            x_b = _mat(x, idx)
            np.copyto(x_b, _mat(barr, idx))
        if n == 0:
            continue
        _lu, _piv, x_, info = fn(a_s, x_b, overwrite_a=1, overwrite_b=1)
        _same_memory_or_copy(x_b, x_)
        _check_info(call.op, info, "SINGULAR", "the matrix is singular", idx)


def inv(call: LinalgCall, x: Any) -> None:
    """Output: the inverse ``[N, N, B...]``."""
    arr, dt, _, n, batch = _matrix(call, x, square=True)
    out = call.output((n, n, *batch), dt)
    if n == 0:
        return
    getrf = f2py("getrf", dt)
    getri = f2py("getri", dt)
    lw = _lwork("getri", dt, n)
    for idx in _items(batch):
        o_b = _mat(out, idx)
        np.copyto(o_b, _mat(arr, idx))
        lu, piv, info = getrf(o_b, overwrite_a=1)
        _same_memory_or_copy(o_b, lu)
        _check_info(call.op, info, "SINGULAR", "the matrix is singular", idx)
        inv_, info = getri(o_b, piv, lwork=lw, overwrite_lu=1)
        _same_memory_or_copy(o_b, inv_)
        _check_info(call.op, info, "SINGULAR", "the matrix is singular", idx)


_aranges: dict[tuple[int, np.dtype[Any]], Array] = {}


def _arange(n: int, dtype: np.dtype[Any]) -> Array:
    """``0..n-1`` (read-only, cached): the pivot vector of no row exchange."""
    key = (n, dtype)
    r = _aranges.get(key)
    if r is None:
        r = np.arange(n, dtype=dtype)
        r.flags.writeable = False
        remember(_aranges, key, r)
    return r


def _lu_diag(
    call: LinalgCall, arr: Array, dt: DType, n: int, batch: Shape
) -> Iterator[tuple[tuple[int, ...], Array, int]]:
    """``(idx, diagonal of U, permutation parity)`` of each matrix's LU factorisation."""
    getrf = f2py("getrf", dt)
    a_s = call.matrix_scratch(n, n, dt.numpy)
    for idx in _items(batch):
        np.copyto(a_s, _mat(arr, idx))
        lu, piv, _info = getrf(a_s, overwrite_a=1)
        _same_memory_or_copy(a_s, lu)
        # info > 0: U is exactly singular; its zero diagonal gives det 0, no error.
        # Direct ufunc reductions, not the array methods: their Python wrappers cost
        # more than the 64-element reduction itself.
        yield idx, a_s.diagonal(), lu_parity(piv)


def lu_parity(piv: Array) -> int:
    """1 when the row exchanges of ``?getrf``'s 0-based pivots ``piv`` are odd, else 0."""
    return int(_count_nonzero(piv != _arange(len(piv), piv.dtype))) % 2


def det_from_lu(diag: Array, parity: int) -> Any:
    """The determinant from U's diagonal and the permutation parity (0 when singular)."""
    value = _mul_reduce(diag)
    return -value if parity else value


def slogdet_from_lu(diag: Array, parity: int, complex_: bool) -> tuple[Any, Any]:
    """``(sign, log|det|)`` from U's diagonal and the permutation parity.

    ``diag`` is read only. Singular (a zero on the diagonal): ``(0, -inf)`` without
    a division-by-zero warning; NaN entries give NaN, as numpy.

    For real input the product of the diagonal, taken in Python floats (which
    overflow to inf without numpy's floating-point warning), gives both values
    at once when it is a finite normal number, the common case: its rounding
    error, about ``n eps`` relative, is at most what summing ``n`` logarithms
    costs, in one pass instead of five ufunc calls. Otherwise (overflow,
    underflow, a zero, NaN; and complex input) the logarithms are summed.
    """
    if not complex_:
        product = math.prod(diag.tolist())
        size = abs(product)
        if _TINY <= size < math.inf:
            return (-1.0 if (product < 0) != bool(parity) else 1.0), math.log(size)
    absd = np.abs(diag)
    if complex_:
        # A zero entry (a singular matrix) is checked before dividing by it.
        phase = _mul_reduce(diag / absd) if absd.all() else 0
    else:
        # The product of the entries' signs: exact (+-1), and 0 exactly when a
        # diagonal entry is 0 (a singular matrix); NaN for NaN input, as numpy.
        phase = _mul_reduce(np.sign(diag))
    if phase == 0:
        return 0, -np.inf
    return (-phase if parity else phase), _add_reduce(np.log(absd, out=absd))


def det(call: LinalgCall, x: Any) -> None:
    """Output: the determinants ``[B...]``."""
    arr, dt, _, n, batch = _matrix(call, x, square=True)
    d = call.output(batch, dt)
    if n == 0:
        d[...] = 1
        return
    for idx, diag, parity in _lu_diag(call, arr, dt, n, batch):
        d[idx] = det_from_lu(diag, parity)


_mul_reduce = np.multiply.reduce
_add_reduce = np.add.reduce
#: The smallest normal Python float.
_TINY = sys.float_info.min
_count_nonzero = np.count_nonzero


def slogdet(call: LinalgCall, x: Any) -> None:
    """Outputs: sign ``[B...]`` (dtype of a) and log|det| ``[B...]`` (real)."""
    arr, dt, _, n, batch = _matrix(call, x, square=True)
    sign = call.output(batch, dt)
    logabs = call.output(batch, dt.real)
    if n == 0:
        sign[...] = 1
        logabs[...] = 0
        return
    complex_ = dt.is_complex
    for idx, diag, parity in _lu_diag(call, arr, dt, n, batch):
        sign[idx], logabs[idx] = slogdet_from_lu(diag, parity, complex_)
