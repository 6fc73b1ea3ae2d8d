"""The least-squares and pseudo-inverse kernels (``?gelsd``; pinv from the SVD)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtype import DType
from ._adapter import Array, LinalgCall, Shape
from ._common import (
    _check_info,
    _eps,
    _items,
    _mat,
    _matrix,
    _same_memory_or_copy,
    _vec,
    finite,
    not_finite,
)
from ._lapack import (
    f2py,
    lwork_from,
    remember,
)
from ._lu import _rhs
from ._svd import _gesdd

_vecdot = np.vecdot
_COLUMNS: Any = [(0,), (0,), ()]  # vecdot over axis 0 (the stubs type `axes`, not `axis`)


def residual_sums(tail: Array, full_rank: bool) -> Array:
    """Sums of squares of the columns of ``tail`` (rows N..M of gelsd's overwritten b).

    They are the residuals only when the matrix has full column rank (LAPACK's
    contract): NaN otherwise. A new real array of one value per column.
    """
    # One dot per column (``vecdot`` conjugates its first argument): a third of
    # squaring the strided block and reducing it, which costs 9 us on 32 x 8.
    sq: Array = _vecdot(tail, tail, axes=_COLUMNS)
    if sq.dtype.kind == "c":
        sq = sq.real.copy()
    if not full_rank:
        sq[...] = np.nan
    return sq


_gelsd_cache: dict[tuple[DType, int, int, int], tuple[int, ...]] = {}


def gelsd_sizes(dt: DType, m: int, n: int, nrhs: int) -> tuple[int, ...]:
    """``?gelsd``'s workspace sizes (lwork, [lrwork,] liwork), LAPACK's query cached per shape.

    The query is a LAPACK call of its own (a few us at n = 64); the sizes do not
    depend on ``rcond``.
    """
    key = (dt, m, n, nrhs)
    sizes = _gelsd_cache.get(key)
    if sizes is None:
        out = f2py("gelsd_lwork", dt)(m, n, nrhs, -1.0)
        if dt.is_complex:  # work, rwork, iwork, info
            sizes = (lwork_from(out[0]), int(out[1]), int(out[2]))
        else:  # work, iwork, info
            sizes = (lwork_from(out[0]), int(out[1]))
        remember(_gelsd_cache, key, sizes)
    return sizes


def lstsq(call: LinalgCall, a: Any, b: Any, rcond: float | None) -> None:
    """Outputs: solution, residuals, rank ``[B...]`` (I64), singular values ``[K, B...]``."""
    arr, dt, m, n, batch = _matrix(call, a)
    barr, vector = _rhs(call, b, dt, m, batch)
    nrhs = 1 if vector else barr.shape[1]
    k = min(m, n)
    rdt = dt.real
    x = call.output((n, *batch) if vector else (n, nrhs, *batch), dt)
    res_shape: Shape = ((*batch,) if vector else (nrhs, *batch)) if m > n else (0,)
    res = call.output(res_shape, rdt)
    rank = call.output(batch, DType.I64)
    sv = call.output((k, *batch), rdt)
    if k == 0:
        x[...] = 0
        rank[...] = 0
        if m > n:
            for idx in _items(batch):
                if vector:
                    bv = _vec(barr, idx)
                    res[idx] = np.vdot(bv, bv).real
                else:
                    bm = _mat(barr, idx)
                    _vec(res, idx)[...] = np.sum(bm.real**2 + bm.imag**2, axis=0)
        return
    cond = _eps(dt) * max(m, n) if rcond is None else float(rcond)
    mx = max(m, n)
    gelsd = f2py("gelsd", dt)
    sizes = gelsd_sizes(dt, m, n, nrhs)
    a_s = call.matrix_scratch(m, n, dt.numpy)
    b_s = call.matrix_scratch(mx, nrhs, dt.numpy)
    for idx in _items(batch):
        np.copyto(a_s, _mat(arr, idx))
        if vector:
            np.copyto(b_s[:m, 0], _vec(barr, idx))
        else:
            np.copyto(b_s[:m], _mat(barr, idx))
        if not finite(a_s):
            raise not_finite(call.op, idx)
        if not finite(b_s[:m]):
            raise not_finite(call.op, idx, "the right-hand side")
        x_, s_, rank_, info = gelsd(a_s, b_s, *sizes, cond=cond, overwrite_a=1, overwrite_b=1)
        _same_memory_or_copy(b_s, x_)
        _check_info(call.op, info, "NOT_CONVERGED", "the SVD in lstsq did not converge", idx)
        if vector:
            np.copyto(_vec(x, idx), b_s[:n, 0])
        else:
            np.copyto(_mat(x, idx), b_s[:n])
        np.copyto(_vec(sv, idx), s_)
        rank[idx] = rank_
        if m > n:
            # Rows n..m of the overwritten b hold the residual components only when
            # the matrix has full column rank (LAPACK's contract); NaN otherwise.
            sq = residual_sums(b_s[n:m], rank_ == n)
            if vector:
                res[idx] = sq[0]
            else:
                _vec(res, idx)[...] = sq


def pinv(call: LinalgCall, x: Any, rtol: float | None) -> None:
    """Output: the pseudo-inverse ``[N, M, B...]`` (singular values <= rtol * max cut)."""
    arr, dt, m, n, batch = _matrix(call, x)
    out = call.output((n, m, *batch), dt)
    k = min(m, n)
    if k == 0:
        out[...] = 0
        return
    cut = _eps(dt) * max(m, n) if rtol is None else float(rtol)
    u_s = call.matrix_scratch(m, k, dt.numpy)
    s_s = call.scratch(k, dt.real.numpy)
    v_s = call.matrix_scratch(k, n, dt.numpy)
    for idx in _items(batch):
        _gesdd(call, _mat(arr, idx), dt, m, n, (), b"S", u_s, s_s, v_s)
        pinv_from_svd(u_s, s_s, v_s, cut, _mat(out, idx))


def pinv_from_svd(u: Array, s: Array, vh: Array, cut: float, out: Array) -> None:
    """Write ``V diag(1/s) U^H`` into ``out`` ``[N, M]``, values ``<= cut * s[0]`` as zero.

    ``u`` ``[M, K]``, ``s`` ``[K]`` and ``vh`` ``[K, N]`` (a thin SVD) are overwritten.
    """
    big = s > cut * s[0]
    np.divide(1.0, s, out=s, where=big)
    s[~big] = 0
    np.multiply(u, s, out=u)
    if u.dtype.kind == "c":
        np.conjugate(u, out=u)
        np.conjugate(vh, out=vh)
    # pinv = V diag(1/s) U^H = (conj Vh)^T (conj U diag(1/s))^T, written straight
    # into the output.
    np.matmul(vh.T, u.T, out=out)
