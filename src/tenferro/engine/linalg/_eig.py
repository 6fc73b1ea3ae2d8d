"""The eigenproblem kernels (``?syevd``/``?heevd``, ``?geev``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import ValidationError
from ._adapter import Array, LinalgCall
from ._common import (
    _COMPLEX_OF,
    _check_info,
    _items,
    _lwork,
    _mat,
    _matrix,
    _same_memory_or_copy,
    _vec,
    finite,
    finite_triangle,
    not_finite,
)
from ._lapack import (
    f2py,
    lwork_from,
    remember,
)


def _check_uplo(op: str, uplo: str) -> None:
    if not isinstance(uplo, str) or uplo not in ("L", "U"):
        raise ValidationError(op, f"uplo must be 'L' or 'U', got {uplo!r}", kind="INVALID_UPLO")


_syevd_cache: dict[tuple[DType, int, bool, int], dict[str, int]] = {}


def _syevd_sizes(dt: DType, n: int, vectors: bool, lower: int) -> dict[str, int]:
    """The optimal workspace sizes of ``?syevd``/``?heevd`` (LAPACK's query, cached).

    The f2py wrapper's default ``lwork`` is LAPACK's minimum, which without vectors
    makes the tridiagonal reduction run unblocked (about 20% slower at n = 256).
    """
    key = (dt, n, vectors, lower)
    sizes = _syevd_cache.get(key)
    if sizes is None:
        out = f2py("syevd_lwork", dt)(n, compute_v=int(vectors), lower=lower)
        if dt.is_complex:  # work, iwork, rwork, info
            sizes = {"lwork": lwork_from(out[0]), "liwork": int(out[1]), "lrwork": int(out[2])}
        else:  # work, iwork, info
            sizes = {"lwork": lwork_from(out[0]), "liwork": int(out[1])}
        remember(_syevd_cache, key, sizes)
    return sizes


def eigh(call: LinalgCall, x: Any, uplo: str, vectors: bool) -> None:
    """Outputs: eigenvalues ``[N, B...]`` ascending (real), eigenvectors ``[N, N, B...]``."""
    _check_uplo(call.op, uplo)
    arr, dt, _, n, batch = _matrix(call, x, square=True)
    w = call.output((n, *batch), dt.real)
    v = call.output((n, n, *batch), dt) if vectors else None
    if n == 0:
        return
    fn = f2py("syevd", dt)
    a_s = None if vectors else call.matrix_scratch(n, n, dt.numpy)
    lower = int(uplo == "L")
    sizes = _syevd_sizes(dt, n, vectors, lower)
    for idx in _items(batch):
        # With vectors, syevd overwrites the matrix with them: work in V's buffer.
        target = _mat(v, idx) if v is not None else a_s
        assert target is not None
        np.copyto(target, _mat(arr, idx))
        if not finite_triangle(target, lower):
            raise not_finite(call.op, idx)
        w_b, v_b, info = fn(target, compute_v=int(vectors), lower=lower, overwrite_a=1, **sizes)
        _check_info(call.op, info, "NOT_CONVERGED", "the eigensolver did not converge", idx)
        if vectors:
            _same_memory_or_copy(target, v_b)
        np.copyto(_vec(w, idx), w_b)


def eig(call: LinalgCall, x: Any) -> None:
    """Outputs: eigenvalues ``[N, B...]`` and right eigenvectors ``[N, N, B...]``, complex."""
    arr, dt, _, n, batch = _matrix(call, x, square=True)
    cdt = _COMPLEX_OF[dt]
    w = call.output((n, *batch), cdt)
    v = call.output((n, n, *batch), cdt)
    if n == 0:
        return
    fn = f2py("geev", dt)
    lw = _lwork("geev", dt, n, 0, 1)
    a_s = call.matrix_scratch(n, n, dt.numpy)
    for idx in _items(batch):
        np.copyto(a_s, _mat(arr, idx))
        if not finite(a_s):
            raise not_finite(call.op, idx)
        w_b = _vec(w, idx)
        v_b = _mat(v, idx)
        if dt.is_complex:
            wc, _vl, vr, info = fn(a_s, compute_vl=0, compute_vr=1, lwork=lw, overwrite_a=1)
            _check_info(call.op, info, "NOT_CONVERGED", "the eigensolver did not converge", idx)
            np.copyto(w_b, wc)
            np.copyto(v_b, vr)
            continue
        wr, wi, _vl, vr, info = fn(a_s, compute_vl=0, compute_vr=1, lwork=lw, overwrite_a=1)
        _check_info(call.op, info, "NOT_CONVERGED", "the eigensolver did not converge", idx)
        real_geev_to_complex(wr, wi, vr, w_b, v_b)


def real_geev_to_complex(wr: Array, wi: Array, vr: Array, w: Array, v: Array) -> None:
    """Write real ``?geev``'s eigenvalues and vectors into the complex ``w`` and ``v``.

    Real geev stores a complex pair's vectors as (re, im) in two columns, the one
    with positive imaginary part first: column j of the pair is ``vr[:, j] +
    i vr[:, j+1]``, column j+1 its conjugate. Every element of ``w`` and ``v``
    (F-ordered) is written, by masked whole-matrix passes over the real and
    imaginary parts (a Python loop over the columns cost 2 us per column, fancy
    indexing of the pairs' columns 50 us at n = 64).
    """
    w.real = wr
    w.imag = wi
    n = len(wr)
    # Row j of these C-ordered views is column j of the F-ordered matrices.
    src = vr.T
    parts = v.T.view(v.real.dtype).reshape((n, n, 2))
    re = parts[:, :, 0]
    im = parts[:, :, 1]
    re[...] = src
    im[...] = 0
    first = wi > 0
    first[-1] = False  # a pair needs two columns (LAPACK never ends on a first)
    second = np.zeros_like(first)
    second[1:] = first[:-1]
    if not first.any():
        return
    np.copyto(re[1:], src[:-1], where=second[1:, None])
    np.copyto(im[:-1], src[1:], where=first[:-1, None])
    np.negative(src, out=im, where=second[:, None])
