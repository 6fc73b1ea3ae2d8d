"""The selective ("gram") route of ``svd_truncated``: only the ``r`` leading singular triplets.

A truncated SVD that keeps ``r`` of ``K = min(M, N)`` values does not need the
other ``K - r`` singular vectors that ``?gesdd`` computes. For ``M >= N``:

1. ``G = A^H A`` (``N x N``; BLAS ``?syrk``/``?herk``, one triangle, into a pooled buffer);
2. the ``r`` largest eigenpairs of G: ``?syevr``/``?heevr`` with an index range
   (``RANGE='I'``: tridiagonal reduction, then bisection and inverse iteration for
   those ``r`` only), eigenvectors Z ``[N, r]``;
3. a Rayleigh-Ritz step on that subspace: ``W = A Z = Q R`` (``?geqrf``), the small
   SVD ``R = Ur S Vr^H`` (``?gesdd`` of ``r x r``), and ``U = Q Ur`` (``?ormqr``,
   in U's buffer), ``Vh = Vr^H Z^H``.

``M < N`` runs the same steps on ``A^H`` (``G = A A^H``, ``M x M``), so the Gram
matrix is always ``K x K``. The cost is about ``M N K + 4/3 K^3`` flops instead
of ``?gesdd``'s ``~ 8/3 K^3 + ...`` plus the accumulation of all ``K`` vectors,
and the largest scratch is G (``K^2``) instead of ``?gesdd``'s copy of A plus its
``~4 K^2`` workspace plus ``U``, ``Vh`` of ``K`` vectors each.

Accuracy (stated in docs/linalg.md and tested): U and Vh are orthonormal to
working precision (Householder Q, LAPACK SVD of R), and ``U S Vh = Q Q^H A Z Z^H``
exactly up to rounding, i.e. A projected on the computed subspace. G carries an
error of about ``eps * ||A||_2^2``, so the subspace is the best rank-r one up to
that: ``||A - U S Vh||_F^2 <= discarded_exact + c * r * eps * ||A||_2^2``. Singular
values well above ``sqrt(eps) * s[0]`` (1.5e-8 in F64, 3.5e-4 in F32) are
resolved as accurately as by ``?gesdd``; below that, individual values and
vectors are not resolved (the reconstruction bound still holds). The discarded
weight is ``||A||_F^2 - sum(kept s^2)``, accurate to about ``eps * ||A||_F^2``.
Entries above about ``sqrt(max float)`` overflow G and raise NOT_FINITE.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import LinAlgError
from ._adapter import Array, LinalgCall
from ._lapack import (
    byref,
    f2py,
    info_int,
    lwork_from,
    ptr,
    raw,
    ref_char,
    ref_int,
    ref_real,
    remember,
)

__all__ = ["gram_svd"]

_I32 = np.dtype(np.int32)

_syevr_sizes: dict[tuple[DType, int, int], tuple[int, int, int]] = {}
_ormqr_sizes: dict[tuple[DType, bytes, int, int, int], int] = {}


def _syevr_workspace(dt: DType, k: int, r: int) -> tuple[int, int, int]:
    """``(lwork, liwork, lrwork)`` of ``?syevr``/``?heevr`` (LAPACK's query, cached)."""
    key = (dt, k, r)
    sizes = _syevr_sizes.get(key)
    if sizes is None:
        probe = np.zeros(max(k * k, 1), dt.numpy)
        w = np.empty(max(k, 1), dt.real.numpy)
        work = np.empty(1, dt.numpy)
        # Zeroed: the real routines never write rwork, and its size is read below
        # (uninitialised memory there was a NaN now and then).
        rwork = np.zeros(1, dt.real.numpy)
        iwork = np.empty(1, _I32)
        isuppz = np.empty(max(2 * r, 2), _I32)
        found = info_int()
        info = info_int()
        args: list[Any] = [
            ref_char(b"V"), ref_char(b"I"), ref_char(b"L"), ref_int(k), ptr(probe),
            ref_int(max(k, 1)), ref_real(0.0, dt), ref_real(0.0, dt), ref_int(k - r + 1),
            ref_int(k), ref_real(0.0, dt), byref(found), ptr(w), ptr(probe),
            ref_int(max(k, 1)), ptr(isuppz), ptr(work), ref_int(-1),
        ]  # fmt: skip
        if dt.is_complex:
            args += [ptr(rwork), ref_int(-1)]
        args += [ptr(iwork), ref_int(-1), byref(info)]
        raw("syevr", dt)(*args)
        sizes = (lwork_from(work[0]), max(int(iwork[0]), 1), lwork_from(rwork[0]))
        remember(_syevr_sizes, key, sizes)
    return sizes


def _ormqr_lwork(dt: DType, side: bytes, m: int, n: int, r: int) -> int:
    """The optimal ``lwork`` of ``?ormqr``/``?unmqr`` (a ``lwork = -1`` query, cached)."""
    key = (dt, side, m, n, r)
    value = _ormqr_sizes.get(key)
    if value is None:
        rows = m if side == b"L" else n
        a = np.zeros((rows, r), dt.numpy, order="F")
        c = np.zeros((m, n), dt.numpy, order="F")
        tau = np.zeros(r, dt.numpy)
        trans = b"N" if side == b"L" else (b"C" if dt.is_complex else b"T")
        _c, work, _info = f2py("ormqr", dt)(side, trans, a, tau, c, -1)
        value = remember(_ormqr_sizes, key, lwork_from(work[0]))
    return value


def _not_finite(call: LinalgCall, idx: tuple[int, ...]) -> LinAlgError:
    at = f" at batch index {idx}" if idx else ""
    return LinAlgError(
        call.op,
        f"the matrix{at} has NaN or infinite entries, or entries so large that A^H A "
        "overflows (method='gram' squares them; use method='gesdd')",
        kind="NOT_FINITE",
        batch_index=idx,
    )


def gram_svd(
    call: LinalgCall,
    mat: Array,
    dt: DType,
    m: int,
    n: int,
    r: int,
    idx: tuple[int, ...],
    u: Array,
    s: Array,
    vh: Array,
    small_svd: Callable[..., None],
) -> float:
    """Fill ``u`` ``[M, r]``, ``s`` ``[r]`` (descending), ``vh`` ``[r, N]`` for one matrix.

    ``mat`` is one F-ordered ``M x N`` matrix (only read); ``u``, ``s``, ``vh`` are
    F-ordered pooled arrays; ``small_svd`` is `_kernels._gesdd` (passed in: that
    module imports this one). Returns ``||A||_F^2`` (for the discarded weight).
    Every buffer LAPACK and BLAS touch is pooled (the small ``tau`` of ``?geqrf``
    and the f2py workspaces of ``?geqrf``/``?ormqr``, O(r) and O(r * max(M, N)),
    are scipy's).
    """
    # INVARIANT: 1 <= r <= k; mat, u, vh are F-contiguous (pooled [M, N, B...]
    # arrays indexed on trailing axes, or a compact operand's matrix).
    tall = m >= n
    k = n if tall else m  # the Gram matrix is k x k
    big = m if tall else n  # the other side: W = A Z (or A^H Z) is big x r
    cplx = dt.is_complex
    lwork, liwork, lrwork = _syevr_workspace(dt, k, r)
    # Largest first (the pool is best fit; see `_kernels._gesdd`).
    g = call.reused("gram.g", k * k, dt.numpy).reshape((k, k), order="F")
    z = call.reused("gram.z", k * r, dt.numpy).reshape((k, r), order="F")
    w_buf = call.reused("gram.w", big * r, dt.numpy).reshape((big, r), order="F")
    work = call.reused("gram.work", lwork, dt.numpy)
    iwork = call.reused("gram.iwork", liwork, _I32)
    isuppz = call.reused("gram.isuppz", 2 * r, _I32)
    evals = call.reused("gram.evals", k, dt.real.numpy)
    rwork = call.reused("gram.rwork", lrwork, dt.real.numpy) if cplx else None
    r_s = call.reused("gram.r", r * r, dt.numpy).reshape((r, r), order="F")
    ur = call.reused("gram.ur", r * r, dt.numpy).reshape((r, r), order="F")
    vr = call.reused("gram.vr", r * r, dt.numpy).reshape((r, r), order="F")

    # 1. G = A^H A (tall) or A A^H (wide), lower triangle, by BLAS ?syrk / ?herk
    # (alpha and beta are reals of the dtype's precision for both).
    raw("syrk", dt, blas=True)(
        ref_char(b"L"), ref_char((b"C" if cplx else b"T") if tall else b"N"), ref_int(k),
        ref_int(big), ref_real(1.0, dt), ptr(mat), ref_int(max(m, 1)),
        ref_real(0.0, dt), ptr(g), ref_int(k),
    )  # fmt: skip
    # ||A||_F^2 is the trace of G (read before ?syevr overwrites it).
    fro2 = float(np.sum(np.diagonal(g).real))
    if not np.isfinite(fro2):
        raise _not_finite(call, idx)

    # 2. The r largest eigenpairs of G (indices k-r+1..k, ascending).
    found = info_int()
    info = info_int()
    # abstol = safe minimum: LAPACK's advice for the most accurate eigenvectors.
    abstol = float(np.finfo(dt.real.numpy).tiny)
    args: list[Any] = [
        ref_char(b"V"), ref_char(b"I"), ref_char(b"L"), ref_int(k), ptr(g),
        ref_int(k), ref_real(0.0, dt), ref_real(0.0, dt), ref_int(k - r + 1), ref_int(k),
        ref_real(abstol, dt), byref(found), ptr(evals), ptr(z), ref_int(k),
        ptr(isuppz), ptr(work), ref_int(lwork),
    ]  # fmt: skip
    if rwork is not None:
        args += [ptr(rwork), ref_int(lrwork)]
    args += [ptr(iwork), ref_int(liwork), byref(info)]
    raw("syevr", dt)(*args)
    if info.value != 0 or found.value != r:
        raise LinAlgError(
            call.op,
            f"the eigensolver of the Gram matrix{f' at batch index {idx}' if idx else ''} "
            f"did not converge (LAPACK info={info.value}); use method='gesdd'",
            kind="NOT_CONVERGED",
            batch_index=idx,
            info=info.value,
        )

    # 3. W = A Z (tall) or A^H Z (wide), big x r. numpy's matmul uses BLAS only for
    # a C-contiguous output, so each product is written as its transpose into the
    # F-ordered buffer (whose transpose is C-contiguous).
    if tall:
        np.matmul(z.T, mat.T, out=w_buf.T)  # W^T = Z^T A^T
    else:
        if cplx:
            np.conjugate(z, out=z)  # z holds conj(Z) from here on
        np.matmul(z.T, mat, out=w_buf.T)  # W^T = Z^H A (complex) / Z^T A
        if cplx:
            np.conjugate(w_buf, out=w_buf)  # W^T = conj(Z^H A) = (A^H Z)^T
    qr_, tau, _work, qinfo = f2py("geqrf", dt)(w_buf, overwrite_a=1)
    if qr_ is not w_buf and not np.may_share_memory(qr_, w_buf):  # pragma: no cover
        np.copyto(w_buf, qr_)
    if qinfo != 0:  # pragma: no cover - geqrf has no failure mode on finite input
        raise LinAlgError(
            call.op, "geqrf failed", kind="NOT_CONVERGED", batch_index=idx, info=int(qinfo)
        )
    np.copyto(r_s, w_buf[:r])
    for j in range(r - 1):
        r_s[j + 1 :, j] = 0
    # 4. The small SVD R = Ur S Vr^H (Vr^H in vr), by the exact route.
    small_svd(call, r_s, dt, r, r, (), b"S", ur, s, vr)
    if not np.all(np.isfinite(s)):
        raise _not_finite(call, idx)

    # 5. The factors. Tall: A Z = Q R = (Q Ur) S Vr^H, so U = Q Ur, Vh = Vr^H Z^H.
    ormqr = f2py("ormqr", dt)
    if tall:
        u[:r] = ur
        u[r:] = 0
        lw = _ormqr_lwork(dt, b"L", m, r, r)
        out, _w, oinfo = ormqr(b"L", b"N", w_buf, tau, u, lw, overwrite_c=1)
        if cplx:
            np.conjugate(z, out=z)
        np.matmul(z, vr.T, out=vh.T)  # Vh^T = conj(Z) Vr^H^T
    else:
        # A^H ~ (Q Ur) S (Z Vr^H)^H, so A ~ (Z Vr^H) S (Q Ur)^H.
        # U = Z Vr^H: U^T = conj(Vr) Z^T = conj(Vr conj(Z)^T); z holds conj(Z) (complex).
        np.matmul(vr, z.T, out=u.T)
        if cplx:
            np.conjugate(u, out=u)
        # Vh = (Q Ur)^H = Ur^H Q^H: [Ur^H 0] times Q^H from the right, in Vh's buffer.
        if cplx:
            np.conjugate(ur.T, out=vh[:, :r])
        else:
            np.copyto(vh[:, :r], ur.T)
        vh[:, r:] = 0
        lw = _ormqr_lwork(dt, b"R", r, n, r)
        out, _w, oinfo = ormqr(b"R", b"C" if cplx else b"T", w_buf, tau, vh, lw, overwrite_c=1)
    target = u if tall else vh
    if out is not target and not np.may_share_memory(out, target):  # pragma: no cover
        np.copyto(target, out)
    if oinfo != 0:  # pragma: no cover - an argument error only
        raise LinAlgError(call.op, "ormqr failed", kind="INVALID_ARGUMENT", batch_index=idx)
    return fro2
