"""Derivative rules of `tenferro.linalg` (leading batch axes, as the array API has them).

Conventions (docs/autodiff.md): cotangents are ``dL/dRe + i dL/dIm``; ``H(x)``
is the conjugate transpose of the last two axes; spectral gaps enter through
the Lorentzian ``lor(x) = x / (x**2 + eps)`` (``config.eps``, default 1e-12),
which is ``1/x`` away from degeneracies and 0 at an exact one, so the rules
stay finite when singular values or eigenvalues are equal or zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tenferro as _tenferro

from ..engine.linalg import TruncatedSVDResult
from ..errors import ValidationError
from ._rules import COMPOSITES, RULES, H, conj, fit, is_complex, traced_getitem
from ._trace import Tracer, apply, strip

# The namespace, called through the hook at run time (mypy does not follow its star
# re-export, so the module is typed as Any).
tfr: Any = _tenferro

__all__ = ["config"]


class _Config:
    """Settings of the linear-algebra rules: ``eps``, the Lorentzian broadening."""

    __slots__ = ("eps",)

    def __init__(self) -> None:
        self.eps = 1e-12


config = _Config()


def lor(x: Any, eps: float) -> Any:
    """``x / (x**2 + eps)``: the broadened ``1/x``.

    Where ``x**2 <= eps`` (a degenerate gap) the factor is held constant for the
    derivatives of the backward pass: its derivative there is about ``1/eps``
    times a numerator that vanishes for a gauge-invariant loss but is rounding
    noise in floating point, which would put ~1e-4 of noise into second
    derivatives (exactly degenerate: the term is 0 in exact arithmetic).
    """
    if not isinstance(x, Tracer):
        return x / (x * x + eps)
    traced: Any = x  # operators are installed on Tracer at import time
    plain = strip(x)
    broad = tfr.abs(plain) * tfr.abs(plain) > eps
    return tfr.where(broad, traced / (traced * traced + eps), plain / (plain * plain + eps))


def _eye_like(k: int, x: Any) -> Any:
    return tfr.eye(k, dtype=x.dtype.real if x.dtype.is_complex else x.dtype)


def diag_embed(v: Any) -> Any:
    """``(..., k) -> (..., k, k)`` with ``v`` on the diagonal."""
    k = v.shape[-1]
    return tfr.expand_dims(v, axis=-1) * _eye_like(k, v)


def diag_part(x: Any) -> Any:
    return tfr.einsum("...ii->...i", x)


def _cols(x: Any, stop: int) -> Any:
    return traced_getitem(x, (..., slice(None), slice(0, stop)))


def _rows(x: Any, stop: int) -> Any:
    return traced_getitem(x, (..., slice(0, stop), slice(None)))


# ---------------------------------------------------------------------------- SVD
def svd_backward(u: Any, s: Any, vh: Any, gu: Any, gs: Any, gvh: Any, eps: float) -> Any:
    """The cotangent of ``A = U diag(S) Vh`` (thin: U is m x k, Vh is k x n).

    G = diag(gS) + 1/2 [(a + b) o lor(s_j - s_i) + (a - b) o lor(s_j + s_i)],
    a = X - X^H, X = U^H gU; b = Y - Y^H, Y = V^H gV: the split of the usual
    ``F o (a S + S b)`` into sum and difference keeps the antisymmetric part
    exact in a degenerate block and broadens only the gap that vanishes; the
    diagonal of the second term is the complex gauge term
    ``i (Im X_ii - Im Y_ii) / (2 s_i)`` (Wan & Zhang 2019).
    Then gA = U G Vh + (I - U U^H) gU lor(S) Vh + U lor(S) gV^H (I - V V^H).
    """
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    dt = u.dtype
    if gu is None and gvh is None:
        g = u * tfr.expand_dims(tfr.astype(gs, dt), axis=-2)
        return tfr.matmul(g, vh)
    si = tfr.expand_dims(s, axis=-1)
    sj = tfr.expand_dims(s, axis=-2)
    acc_sum: Any = None
    acc_diff: Any = None
    x = y = None
    if gu is not None:
        x = tfr.matmul(H(u), gu)
        a = x - H(x)
        acc_sum, acc_diff = a, a
    if gvh is not None:
        y = tfr.matmul(vh, H(gvh))
        b = y - H(y)
        acc_sum = b if acc_sum is None else acc_sum + b
        acc_diff = -b if acc_diff is None else acc_diff - b
    g = (acc_sum * lor(sj - si, eps) + acc_diff * lor(sj + si, eps)) * 0.5
    if gs is not None:
        g = g + diag_embed(tfr.astype(gs, dt))
    ga = tfr.matmul(tfr.matmul(u, g), vh)
    inv_s = tfr.expand_dims(lor(s, eps), axis=-2)
    if gu is not None and m > k:
        ga = ga + tfr.matmul((gu - tfr.matmul(u, x)) * inv_s, vh)
    if gvh is not None and n > k:
        gv = H(gvh)
        v = H(vh)
        ga = ga + tfr.matmul(u, H((gv - tfr.matmul(v, y)) * inv_s))
    return ga


def _svd_rule(out: Any, x: Any, /, *, full_matrices: bool = True) -> Any:
    u, s, vh = out
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    if full_matrices and u.shape[-1] != k:
        u = _cols(u, k)
    if full_matrices and vh.shape[-2] != k:
        vh = _rows(vh, k)
    eps = config.eps

    def bwd(cts: Any, needs: Any) -> Any:
        gu, gs, gvh = cts
        if gu is not None and gu.shape[-1] != k:
            gu = _cols(gu, k)
        if gvh is not None and gvh.shape[-2] != k:
            gvh = _rows(gvh, k)
        return (fit(svd_backward(u, s, vh, gu, gs, gvh, eps), x),)

    return bwd, (u, s, vh)


def _svdvals(x: Any, /) -> Any:
    return tfr.linalg.svd(x, full_matrices=False)[1]


def svd_kept_backward(
    u: Any, s: Any, vh: Any, r: int, gu: Any, gs: Any, gvh: Any, eps: float
) -> Any:
    """`svd_backward` with cotangents on the leading ``r`` triplets only (zero on the
    rest), without forming the k x k blocks that are zero: O(m k r) instead of O(m k^2).

    With R = :r and Q = r:k, the padded X = U^H gU has only its R columns, so
    G_RR is the thin rule's block, G_QR uses a = X_QR, b = Y_QR, G_RQ uses
    a = -X_QR^H, b = -Y_QR^H, and G_QQ = 0.
    """
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    ur, vhr = _cols(u, r), _rows(vh, r)
    sr = traced_getitem(s, (..., slice(0, r)))
    dt = u.dtype
    if gu is None and gvh is None:
        return tfr.matmul(ur * tfr.expand_dims(tfr.astype(gs, dt), axis=-2), vhr)
    uq, vhq = traced_getitem(u, (..., slice(None), slice(r, k))), _rows_from(vh, r, k)
    sq = traced_getitem(s, (..., slice(r, k)))
    x = y = None
    a_rr = b_rr = a_qr = b_qr = None
    if gu is not None:
        x = tfr.matmul(H(u), gu)  # k x r
        x_rr = _rows(x, r)
        a_rr = x_rr - H(x_rr)
        a_qr = _rows_from(x, r, k)
    if gvh is not None:
        y = tfr.matmul(vh, H(gvh))  # k x r
        y_rr = _rows(y, r)
        b_rr = y_rr - H(y_rr)
        b_qr = _rows_from(y, r, k)

    def combine(a: Any, b: Any, rows: Any, cols: Any) -> Any:
        si = tfr.expand_dims(rows, axis=-1)
        sj = tfr.expand_dims(cols, axis=-2)
        if a is None:
            plus, minus = b, -b
        elif b is None:
            plus, minus = a, a
        else:
            plus, minus = a + b, a - b
        return (plus * lor(sj - si, eps) + minus * lor(sj + si, eps)) * 0.5

    g_rr = combine(a_rr, b_rr, sr, sr)
    if gs is not None:
        g_rr = g_rr + diag_embed(tfr.astype(gs, dt))
    ga = tfr.matmul(tfr.matmul(ur, g_rr), vhr)
    if k > r:
        g_qr = combine(a_qr, b_qr, sq, sr)  # rows Q, columns R
        neg_a = None if a_qr is None else -H(a_qr)
        neg_b = None if b_qr is None else -H(b_qr)
        g_rq = combine(neg_a, neg_b, sr, sq)  # rows R, columns Q
        ga = ga + tfr.matmul(tfr.matmul(uq, g_qr), vhr) + tfr.matmul(ur, tfr.matmul(g_rq, vhq))
    inv_s = tfr.expand_dims(lor(sr, eps), axis=-2)
    if gu is not None and m > k:
        ga = ga + tfr.matmul((gu - tfr.matmul(u, x)) * inv_s, vhr)
    if gvh is not None and n > k:
        v = H(vh)
        ga = ga + tfr.matmul(ur, H((H(gvh) - tfr.matmul(v, y)) * inv_s))
    return ga


def _rows_from(x: Any, start: int, stop: int) -> Any:
    return traced_getitem(x, (..., slice(start, stop), slice(None)))


def _kept_ranks(values: Any, max_rank: Any, cutoff: float, cutoff_mode: str) -> Any:
    """Per matrix, how many leading singular values the engine's rule keeps."""
    k = values.shape[-1]
    flat = values.reshape(-1, k)
    if k == 0:
        return np.zeros(flat.shape[0], dtype=int)
    relative = cutoff_mode == "relative"
    limit = cutoff * flat[:, :1] if relative else np.full((flat.shape[0], 1), cutoff)
    kept = np.maximum(1, np.sum(flat >= limit, axis=1))
    return np.minimum(kept, max_rank) if max_rank is not None else kept


def _svd_kept_plain(x: Any, max_rank: Any, cutoff: float, cutoff_mode: str) -> Any:
    """The thin SVD's leading triplets (as the engine's rule keeps them) and the full factors."""
    u, s, vh = tfr.linalg.svd(x, full_matrices=False)
    kept = _kept_ranks(np.asarray(s), max_rank, cutoff, cutoff_mode)
    r = int(kept.max()) if kept.size else 0
    return (_cols(u, r), traced_getitem(s, (..., slice(0, r))), _rows(vh, r), u, s, vh)


def _svd_kept_rule(out: Any, x: Any, *_: Any) -> Any:
    _, _, _, u, s, vh = out
    r = out[1].shape[-1]
    eps = config.eps

    def bwd(cts: Any, needs: Any) -> Any:
        gu, gs, gvh = cts[0], cts[1], cts[2]
        if any(c is not None for c in cts[3:]):
            # the full factors are never handed out; only a nested caller could get here
            full = svd_backward(u, s, vh, cts[3], cts[4], cts[5], eps)
            kept = svd_kept_backward(u, s, vh, r, gu, gs, gvh, eps)
            return (fit(full + kept, x), None, None, None)
        return (fit(svd_kept_backward(u, s, vh, r, gu, gs, gvh, eps), x), None, None, None)

    return bwd, (u, s, vh)


def _svd_truncated(
    x: Any, /, *, max_rank: int | None = None, cutoff: float = 0.0, cutoff_mode: str = "relative"
) -> Any:
    """The kept triplets of the thin SVD: the gradient is the exact derivative of the map
    ``A -> (U_r, S_r, Vh_r)``, the thin-SVD rule with the dropped triplets' cotangents
    zero (the dropped values enter only through the gaps), computed blockwise in
    O(m k r) (`svd_kept_backward`)."""
    if cutoff_mode not in ("relative", "absolute"):
        raise ValidationError(
            "tenferro.linalg.svd_truncated",
            f"cutoff_mode must be 'relative' or 'absolute', not {cutoff_mode!r}",
            kind="INVALID_CUTOFF",
        )
    u, s_kept, vh, _, s, _ = apply(
        _svd_kept_plain, _svd_kept_rule, (x, max_rank, cutoff, cutoff_mode)
    )
    values = np.asarray(strip(s))
    kept = _kept_ranks(values, max_rank, cutoff, cutoff_mode)
    r = s_kept.shape[-1]
    mask_np = (np.arange(r)[None, :] < kept[:, None]).reshape((*values.shape[:-1], r))
    dropped = tfr.sum(s * s, axis=-1) - tfr.sum(s_kept * s_kept, axis=-1)
    if not mask_np.all():
        mask = tfr.asarray(mask_np.astype(np.float64))
        dropped = dropped + tfr.sum(s_kept * s_kept * (1.0 - mask), axis=-1)
        s_kept = s_kept * mask
    return TruncatedSVDResult(u, s_kept, vh, dropped)


RULES["linalg.svd"] = _svd_rule
COMPOSITES["linalg.svdvals"] = _svdvals
COMPOSITES["linalg.svd_truncated"] = _svd_truncated


# ---------------------------------------------------------------------------- eigh
def _eigh_rule(out: Any, x: Any, /, *, UPLO: str = "L") -> Any:
    w, v = out
    eps = config.eps

    def bwd(cts: Any, needs: Any) -> Any:
        gw, gv = cts
        g: Any = None
        if gv is not None:
            xm = tfr.matmul(H(v), gv)
            gap = lor(tfr.expand_dims(w, axis=-2) - tfr.expand_dims(w, axis=-1), eps)
            g = xm * gap
        if gw is not None:
            d = diag_embed(tfr.astype(gw, v.dtype))
            g = d if g is None else g + d
        ga = tfr.matmul(tfr.matmul(v, g), H(v))
        ga = (ga + H(ga)) * 0.5
        return (fit(ga, x),)

    return bwd, (w, v)


def _eigvalsh(x: Any, /, *, UPLO: str = "L") -> Any:
    return tfr.linalg.eigh(x, UPLO=UPLO)[0]


RULES["linalg.eigh"] = _eigh_rule
COMPOSITES["linalg.eigvalsh"] = _eigvalsh


# ---------------------------------------------------------------------------- qr, lq
def _solve_right_h(b: Any, r: Any) -> Any:
    """``B R^{-H}`` (solves ``X R^H = B``)."""
    return H(tfr.linalg.solve(r, H(b)))


def qr_backward(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """The cotangent of ``A = Q R`` for m >= n (Q m x n, R n x n upper triangular):
    gA = Q gR + (gQ + Q (K - Q^H gQ)) R^{-H}, K = tril(M - M^H) with its diagonal
    halved, M = R gR^H - gQ^H Q."""
    n = r.shape[-1]
    if gq is None:
        gq = tfr.zeros(tuple(q.shape), dtype=q.dtype)
    if gr is None:
        gr = tfr.zeros(tuple(r.shape), dtype=r.dtype)
    m_ = tfr.matmul(r, H(gr)) - tfr.matmul(H(gq), q)
    skew = m_ - H(m_)
    eye = tfr.eye(n, dtype=q.dtype.real if q.dtype.is_complex else q.dtype)
    k_ = tfr.tril(skew, k=-1) + skew * (eye * 0.5)
    b = gq + tfr.matmul(q, k_ - tfr.matmul(H(q), gq))
    return tfr.matmul(q, gr) + _solve_right_h(b, r)


def _qr_rule(out: Any, x: Any, /, *, mode: str = "reduced") -> Any:
    q, r = out
    m, n = x.shape[-2], x.shape[-1]
    if mode == "complete" and m > n:
        raise ValidationError(
            "tenferro.linalg.qr",
            "the complete Q of a tall matrix has columns the input does not determine, so "
            "it has no derivative; use mode='reduced'",
            kind="NOT_DIFFERENTIABLE",
        )

    def bwd(cts: Any, needs: Any) -> Any:
        gq, gr = cts
        if m >= n:
            return (fit(qr_backward(q, r, gq, gr), x),)
        # Wide: A = Q [R1 R2], with A = [X Y] and X = Q R1 square.
        r1 = _cols(r, m)
        gr1 = None if gr is None else _cols(gr, m)
        ys = traced_getitem(x, (..., slice(None), slice(m, None)))
        gy = None
        if gr is not None:
            gr2 = traced_getitem(gr, (..., slice(None), slice(m, None)))
            gy = tfr.matmul(q, gr2)
            extra = tfr.matmul(ys, H(gr2))
            gq = extra if gq is None else gq + extra
        gx = qr_backward(q, r1, gq, gr1)
        if gy is None:
            gy = tfr.zeros(tuple(ys.shape), dtype=gx.dtype)
        return (fit(tfr.concat([gx, gy], axis=-1), x),)

    return bwd, (q, r, x)


def _lq(x: Any, /, *, mode: str = "reduced") -> Any:
    q, r = tfr.linalg.qr(H(x), mode=mode)
    from ..engine.linalg import LQResult

    return LQResult(H(r), H(q))


RULES["linalg.qr"] = _qr_rule
COMPOSITES["linalg.lq"] = _lq


# ---------------------------------------------------------------------------- cholesky
def _cholesky_rule(out: Any, x: Any, /, *, upper: bool = False) -> Any:
    low = out

    def bwd(ct: Any, needs: Any) -> Any:
        n = low.shape[-1]
        p = tfr.matmul(H(low), ct)
        eye = tfr.eye(n, dtype=low.dtype.real if low.dtype.is_complex else low.dtype)
        phi = tfr.tril(p) - p * (eye * 0.5)
        g = (phi + H(phi)) * 0.5
        # gA = L^{-H} G L^{-1}
        y = tfr.linalg.solve(H(low), g)
        ga = H(tfr.linalg.solve(H(low), H(y)))
        return (fit(ga, x),)

    return bwd, (low,)


def _cholesky(x: Any, /, *, upper: bool = False) -> Any:
    if upper:
        return H(tfr.linalg.cholesky(x))
    return NotImplemented


RULES["linalg.cholesky"] = _cholesky_rule
COMPOSITES["linalg.cholesky"] = _cholesky


# ---------------------------------------------------------------------------- solve, inv, det
def _solve_rule(out: Any, a: Any, b: Any, /) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        gb = tfr.linalg.solve(H(a), ct)
        ga = -tfr.matmul(gb, H(out)) if needs[0] else None
        return fit(ga, a), fit(gb, b) if needs[1] else None

    return bwd, (a, out)


def _solve(a: Any, b: Any, /) -> Any:
    if b.ndim == 1:
        return traced_getitem(tfr.linalg.solve(a, tfr.expand_dims(b, axis=-1)), (..., 0))
    return NotImplemented


def _inv_rule(out: Any, a: Any, /) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        yh = H(out)
        return (fit(-tfr.matmul(tfr.matmul(yh, ct), yh), a),)

    return bwd, (out,)


def _det_rule(out: Any, a: Any, /) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        z = tfr.expand_dims(tfr.expand_dims(ct * conj(out), axis=-1), axis=-1)
        return (fit(z * H(tfr.linalg.inv(a)), a),)

    return bwd, (a, out)


def _slogdet_rule(out: Any, a: Any, /) -> Any:
    sign, _ = out

    def bwd(cts: Any, needs: Any) -> Any:
        g_sign, g_log = cts
        z: Any = g_log
        if is_complex(a):
            z = tfr.astype(g_log, a.dtype) if g_log is not None else None
            if g_sign is not None:
                c = -tfr.imag(conj(g_sign) * sign)
                extra = tfr.multiply(tfr.astype(c, a.dtype), 1j)
                z = extra if z is None else z + extra
        if z is None:
            return (None,)
        z = tfr.expand_dims(tfr.expand_dims(z, axis=-1), axis=-1)
        return (fit(z * H(tfr.linalg.inv(a)), a),)

    return bwd, (a, sign)


RULES.update(
    {
        "linalg.solve": _solve_rule,
        "linalg.inv": _inv_rule,
        "linalg.det": _det_rule,
        "linalg.slogdet": _slogdet_rule,
    }
)
COMPOSITES["linalg.solve"] = _solve


# ---------------------------------------------------------------------------- norms, expm
def _abs2(x: Any) -> Any:
    return tfr.real(x * tfr.conj(x)) if is_complex(x) else x * x


def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    if ord == 2:
        return tfr.sqrt(tfr.sum(_abs2(x), axis=axis, keepdims=keepdims))
    a = tfr.abs(x)
    if ord == 1:
        return tfr.sum(a, axis=axis, keepdims=keepdims)
    if ord == float("inf"):
        return tfr.max(a, axis=axis, keepdims=keepdims)
    if ord == -float("inf"):
        return tfr.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return NotImplemented
    return tfr.sum(a**ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    if ord == "fro":
        r = tfr.sqrt(tfr.sum(_abs2(x), axis=(-2, -1)))
    elif ord == "nuc":
        r = tfr.sum(_svdvals(x), axis=-1)
    elif ord in (2, -2):
        s = _svdvals(x)
        r = tfr.max(s, axis=-1) if ord == 2 else tfr.min(s, axis=-1)
    elif ord in (1, -1):
        c = tfr.sum(tfr.abs(x), axis=-2)
        r = tfr.max(c, axis=-1) if ord == 1 else tfr.min(c, axis=-1)
    elif ord in (float("inf"), -float("inf")):
        c = tfr.sum(tfr.abs(x), axis=-1)
        r = tfr.max(c, axis=-1) if ord > 0 else tfr.min(c, axis=-1)
    else:
        return NotImplemented
    if keepdims:
        r = tfr.expand_dims(tfr.expand_dims(r, axis=-1), axis=-1)
    return r


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    if axis is None and ord is None:
        return tfr.sqrt(tfr.sum(_abs2(x)))
    if isinstance(axis, int) or (axis is None and x.ndim == 1):
        return _vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if axis is None or tuple(a % x.ndim for a in axis) == (x.ndim - 2, x.ndim - 1):
        return _matrix_norm(x, keepdims=keepdims, ord="fro" if ord is None else ord)
    return NotImplemented


def _expm_rule(out: Any, a: Any, /) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        n = a.shape[-1]
        ah = H(a)
        ct = tfr.astype(ct, ah.dtype) if ct.dtype != ah.dtype else ct
        zeros = tfr.zeros(tuple(ah.shape), dtype=ah.dtype)
        top = tfr.concat([ah, ct], axis=-1)
        bottom = tfr.concat([zeros, ah], axis=-1)
        big = tfr.linalg.expm(tfr.concat([top, bottom], axis=-2))
        return (fit(traced_getitem(big, (..., slice(0, n), slice(n, None))), a),)

    return bwd, (a,)


def _pinv(x: Any, /, *, rtol: Any = None) -> Any:
    u, s, vh = tfr.linalg.svd(x, full_matrices=False)
    m, n = x.shape[-2], x.shape[-1]
    values = strip(s)
    if rtol is None:
        rtol = max(m, n) * float(np.finfo(values.dtype.numpy).eps)
    tol = tfr.max(values, axis=-1, keepdims=True) * rtol
    keep = values > tol
    inv = tfr.where(keep, 1.0 / tfr.where(keep, s, 1.0), 0.0)
    return tfr.matmul(H(vh) * tfr.expand_dims(inv, axis=-2), H(u))


def _matrix_power(x: Any, n: int, /) -> Any:
    if n < 0:
        x = tfr.linalg.inv(x)
        n = -n
    if n == 0:
        return tfr.broadcast_to(_eye_like(x.shape[-1], x), tuple(x.shape)) + x * 0
    result = x
    for _ in range(n - 1):
        result = tfr.matmul(result, x)
    return result


RULES["linalg.expm"] = _expm_rule
COMPOSITES.update(
    {
        "linalg.vector_norm": _vector_norm,
        "linalg.matrix_norm": _matrix_norm,
        "linalg.norm": _norm,
        "linalg.pinv": _pinv,
        "linalg.matrix_power": _matrix_power,
    }
)
