"""The linear-algebra kernels: LAPACK on pooled, column-major buffers.

Each kernel is ``kernel(call, operands..., options...)`` (see `_adapter.run_call`):
it reads its operands, takes its pooled outputs in the order the operation
returns them, and fills them matrix by matrix over the trailing batch
dimensions (``[M, N, B...]``: each matrix is contiguous column-major memory,
exactly what LAPACK takes, so no transposition is ever needed).

LAPACK overwrites its input, so the input matrix is first written into a
pooled buffer (the result's own buffer where the routine returns the result in
place: ``potrf``, ``getrf``/``getri``, ``syevd``, ``orgqr``; a pooled scratch
buffer otherwise). That write is part of the computation, not a named copy: the
caller's tensor is only read.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from ...dtype import DType
from ...errors import DTypeError, LinAlgError, ValidationError
from ._adapter import Array, LinalgCall, Shape
from ._lapack import (
    blas,
    byref,
    f2py,
    info_int,
    lwork_from,
    ptr,
    raw,
    ref_char,
    ref_int,
    remember,
)
from ._selective import gram_svd

__all__ = [
    "DotParts",
    "GesddPlan",
    "cholesky",
    "det",
    "det_from_lu",
    "dot_parts",
    "eig",
    "eigh",
    "expm",
    "expm_into",
    "finite",
    "finite_triangle",
    "gelsd_sizes",
    "gesdd_error",
    "gesdd_plan",
    "gesdd_run",
    "inv",
    "lq",
    "lstsq",
    "lu_parity",
    "matrix_norm",
    "norm_from_singular_values",
    "not_finite",
    "pinv",
    "pinv_from_svd",
    "qr",
    "real_geev_to_complex",
    "residual_sums",
    "slogdet",
    "slogdet_from_lu",
    "solve",
    "svd",
    "svd_truncated",
    "two_norm",
    "vector_norm",
]

_LAPACK_T = (DType.F32, DType.F64, DType.C32, DType.C64)
_COMPLEX_OF = {
    DType.F32: DType.C32,
    DType.F64: DType.C64,
    DType.C32: DType.C32,
    DType.C64: DType.C64,
}
_I32 = np.dtype(np.int32)
_ALL = slice(None)


# ---------------------------------------------------------------------- helpers
def _check_dtype(op: str, dt: DType, what: str = "a") -> None:
    if dt not in _LAPACK_T:
        raise DTypeError(
            op,
            f"{what} has dtype {dt.name}; linear algebra runs on F32, F64, C32 or C64 "
            "(convert first: eng.convert(t, tfr.DType.F64))",
            kind="UNSUPPORTED_DTYPE",
            dtype=dt,
        )


def _matrix(
    call: LinalgCall, x: Any, square: bool = False, what: str = "a"
) -> tuple[Array, DType, int, int, Shape]:
    """``(array, dtype, M, N, batch)`` of a ``[M, N, B...]`` operand."""
    op = call.op
    arr, dt, shape = call.operand(x)
    _check_dtype(op, dt, what)
    if len(shape) < 2:
        raise ValidationError(
            op,
            f"{what} must have at least 2 dimensions [M, N, B...], got shape {shape}",
            kind="INVALID_RANK",
            shape=shape,
        )
    if square and shape[0] != shape[1]:
        raise ValidationError(
            op,
            f"{what} must be square in its first two dimensions, got shape {shape}",
            kind="NOT_SQUARE",
            shape=shape,
        )
    return arr, dt, shape[0], shape[1], shape[2:]


def _items(batch: Shape) -> Iterator[tuple[int, ...]]:
    """Every batch index (one empty index for an unbatched call)."""
    return np.ndindex(*batch) if batch else iter(((),))


def _mat(arr: Array, idx: tuple[int, ...]) -> Array:
    """Matrix ``idx`` of a ``[M, N, B...]`` array (a view)."""
    if not idx:
        return arr
    key: tuple[Any, ...] = (_ALL, _ALL, *idx)
    out: Array = arr[key]
    return out


def _vec(arr: Array, idx: tuple[int, ...]) -> Array:
    """Vector ``idx`` of a ``[K, B...]`` array (a view)."""
    if not idx:
        return arr
    key: tuple[Any, ...] = (_ALL, *idx)
    out: Array = arr[key]
    return out


def _check_info(op: str, info: int, kind: str, what: str, idx: tuple[int, ...]) -> None:
    if info == 0:
        return
    if info < 0:  # an argument we pass is wrong: a bug here, not the caller's input
        raise LinAlgError(
            op, f"LAPACK rejected argument {-info}", kind="INVALID_ARGUMENT", batch_index=idx
        )
    at = f" at batch index {idx}" if idx else ""
    raise LinAlgError(op, f"{what}{at} (LAPACK info={info})", kind=kind, batch_index=idx, info=info)


def finite(arr: Array) -> bool:
    """Whether every entry of ``arr`` is finite: checked before every iterative LAPACK call.

    ``?gesdd`` (and the ``?gelsd`` of lstsq) can loop forever on a matrix with
    +-inf entries, and Ctrl-C cannot stop a LAPACK call; ``?geev`` and ``?syevd``
    report them as a bad argument or no convergence. scipy makes the same check.
    Both the lean path (`_lean`) and the general path (the kernels here) call it.
    A contiguous matrix takes one BLAS pass: its sum of squares (``?dot`` /
    ``?dotc`` of it with itself; scipy's wrappers set no floating-point warning)
    is finite exactly when every entry is, unless an entry above about 1e154
    overflows it, so only a non-finite sum is checked entry by entry (0.25 us
    where ``isfinite(a).all()`` costs 3.5 us, on a 16 x 16 matrix).
    """
    if arr.flags.f_contiguous or arr.flags.c_contiguous:
        dot = _SELF_DOT.get(arr.dtype)
        if dot is not None and arr.size:
            flat = arr.ravel(order="K")
            if math.isfinite(abs(dot(flat, flat))):
                return True
    return bool(np.isfinite(arr).all())


class _SelfDots(dict[Any, Any]):
    """numpy dtype -> scipy's BLAS ``?dot``/``?dotc``, bound on first use (scipy is slow
    to import: `import tenferro` must not pay for it)."""

    def __missing__(self, key: Any) -> Any:
        name = {"f": "sdot", "d": "ddot", "F": "cdotc", "D": "zdotc"}.get(key.char)
        fn = blas(name) if name is not None else None
        self[key] = fn
        return fn


_SELF_DOT = _SelfDots()


def not_finite(op: str, idx: tuple[int, ...], what: str = "the matrix") -> LinAlgError:
    """The typed refusal of a matrix with NaN or +-inf entries (see `finite`)."""
    at = f" at batch index {idx}" if idx else ""
    return LinAlgError(
        op,
        f"{what}{at} has NaN or infinite entries; LAPACK cannot factor it (and can "
        "loop forever on infinities), so it is refused: replace them first "
        "(tfr.where(tfr.isfinite(a), a, 0))",
        kind="NOT_FINITE",
        batch_index=idx,
    )


_EPS: dict[DType, float] = {}


def _eps(dt: DType) -> float:
    """Machine epsilon of ``dt``'s real precision (cached: ``numpy.finfo`` costs 1-2 us)."""
    eps = _EPS.get(dt)
    if eps is None:
        eps = _EPS[dt] = float(np.finfo(dt.real.numpy).eps)
    return eps


def _identity_fill(arr: Array) -> None:
    """Write the identity into every ``[M, N]`` matrix of ``arr`` (all elements written)."""
    arr[...] = 0
    r = min(arr.shape[0], arr.shape[1])
    for i in range(r):
        arr[i, i, ...] = 1


_tri_masks: dict[tuple[int, int, bool], Array] = {}


def _triangle(rows: int, cols: int, upper: bool) -> Array:
    """A read-only F-ordered mask of the upper (``j >= i``) or lower (``j <= i``) triangle.

    Cached per shape: a masked ``copyto`` writes a triangle in one C pass, where a
    Python loop over the columns costs 0.5 us per column (30 us at n = 64).
    """
    key = (rows, cols, upper)
    mask = _tri_masks.get(key)
    if mask is None:
        ones = np.ones((rows, cols), dtype=bool)
        mask = np.asfortranarray(np.triu(ones) if upper else np.tril(ones))
        mask.flags.writeable = False
        remember(_tri_masks, key, mask)
    return mask


def finite_triangle(a: Array, lower: int) -> bool:
    """`finite` for the triangle ``?syevd`` reads (``lower``: 1 for the lower one).

    The whole matrix is checked first (one pass); only a matrix with a non-finite
    entry somewhere has its triangle checked, so an infinity in the half LAPACK
    ignores is accepted as before.
    """
    if finite(a):
        return True
    return finite(a[_triangle(a.shape[0], a.shape[1], not lower)])


def _copy_triangle(dst: Array, src: Array, upper: bool) -> None:
    """Write ``src``'s upper (lower) triangle into ``dst`` (same shape), zeros elsewhere."""
    dst[...] = 0
    np.copyto(dst, src, where=_triangle(dst.shape[0], dst.shape[1], upper))


def _same_memory_or_copy(dst: Array, src: Array) -> None:
    """f2py returns ``dst`` itself when it could work in place; otherwise write it."""
    if src is not dst and not np.may_share_memory(src, dst):  # pragma: no cover
        np.copyto(dst, src)


_lwork_cache: dict[tuple[str, DType, tuple[int, ...]], int] = {}


def _lwork(name: str, dt: DType, *args: int) -> int:
    """The optimal ``lwork`` from scipy's ``<routine>_lwork`` query, cached per shape.

    The f2py wrappers' default ``lwork`` is LAPACK's minimum, which runs the
    unblocked (slow) code path.
    """
    key = (name, dt, args)
    value = _lwork_cache.get(key)
    if value is None:
        out = f2py(name + "_lwork", dt)(*args)
        value = remember(_lwork_cache, key, lwork_from(out[0]))
    return value


def _orgqr_lwork(dt: DType, m: int, n: int, k: int) -> int:
    """The optimal ``lwork`` of ``?orgqr``/``?ungqr`` (a LAPACK ``lwork = -1`` query)."""
    key = ("orgqr", dt, (m, n, k))
    value = _lwork_cache.get(key)
    if value is None:
        probe = np.empty(1, dt.numpy)
        work = np.empty(1, dt.numpy)
        info = info_int()
        raw("orgqr", dt)(
            ref_int(m), ref_int(n), ref_int(k), ptr(probe), ref_int(max(m, 1)),
            ptr(probe), ptr(work), ref_int(-1), byref(info),
        )  # fmt: skip
        value = remember(_lwork_cache, key, lwork_from(work[0]))
    return value


# ---------------------------------------------------------------------- SVD
_gesdd_sizes: dict[tuple[DType, bytes, int, int], tuple[int, int]] = {}


def _gesdd_workspace(dt: DType, jobz: bytes, m: int, n: int) -> tuple[int, int]:
    """``(lwork, lrwork)`` for ``?gesdd``: LAPACK's own query, cached per shape."""
    key = (dt, jobz, m, n)
    sizes = _gesdd_sizes.get(key)
    if sizes is None:
        k = min(m, n)
        probe = np.empty(max(m * n, 1), dt.numpy)
        work = np.empty(1, dt.numpy)
        iwork = np.empty(max(8 * k, 1), _I32)
        info = info_int()
        args: list[Any] = [
            ref_char(jobz),
            ref_int(m),
            ref_int(n),
            ptr(probe),
            ref_int(max(m, 1)),
            ptr(probe),
            ptr(probe),
            ref_int(max(m, 1)),
            ptr(probe),
            ref_int(max(n, 1)),
            ptr(work),
            ref_int(-1),
        ]
        if dt.is_complex:
            args.append(ptr(probe))
        args += [ptr(iwork), byref(info)]
        raw("gesdd", dt)(*args)
        if jobz == b"N":
            lrwork = 7 * k
        else:
            lrwork = max(5 * k * k + 5 * k, 2 * max(m, n) * k + 2 * k * k + k)
        sizes = (lwork_from(work[0]), max(lrwork, 1))
        remember(_gesdd_sizes, key, sizes)
    return sizes


class GesddPlan(NamedTuple):
    """Everything about one ``?gesdd`` shape that does not change between calls.

    ``scratch`` elements of the dtype hold, in one pooled buffer, the overwritten
    copy of the matrix (first ``m * n``), the workspace, ``rwork`` (complex) and
    ``iwork``, at the byte offsets given: one pool request and one address per
    call instead of four of each (an address costs a microsecond at n = 64).
    """

    fn: Any
    jobz: Any
    m: Any
    n: Any
    lda: Any
    ldu: Any
    ldvt: Any
    lwork: Any
    scratch: int
    work_at: int
    rwork_at: int | None
    iwork_at: int


_gesdd_plans: dict[tuple[DType, bytes, int, int], GesddPlan] = {}


def gesdd_plan(dt: DType, jobz: bytes, m: int, n: int) -> GesddPlan:
    """The cached `GesddPlan` of ``?gesdd`` for ``dt``, ``jobz`` and an ``m x n`` matrix."""
    key = (dt, jobz, m, n)
    plan = _gesdd_plans.get(key)
    if plan is None:
        k = min(m, n)
        lwork, lrwork = _gesdd_workspace(dt, jobz, m, n)
        size = dt.numpy.itemsize
        # INVARIANT: every part starts at a multiple of the element size, which is a
        # multiple of the real and of the int32 sizes: each part is aligned.
        work_at = m * n * size
        end = work_at + lwork * size
        rwork_at = None
        if dt.is_complex:
            rwork_at = end
            end += lrwork * dt.real.numpy.itemsize
        iwork_at = end
        end += 8 * k * _I32.itemsize
        ldvt = (n if jobz == b"A" else k) if jobz != b"N" else 1
        plan = GesddPlan(
            raw("gesdd", dt),
            ref_char(jobz),
            ref_int(m),
            ref_int(n),
            ref_int(max(m, 1)),
            ref_int(max(m, 1) if jobz != b"N" else 1),
            ref_int(max(ldvt, 1)),
            ref_int(lwork),
            -(-end // size),
            work_at,
            rwork_at,
            iwork_at,
        )
        remember(_gesdd_plans, key, plan)
    return plan


def gesdd_run(plan: GesddPlan, base: int, s: int, u: int, vt: int) -> int:
    """Run ``?gesdd`` on the matrix at the start of the scratch at ``base``; returns info.

    ``s``, ``u``, ``vt``: the addresses of the F-ordered outputs (any valid address
    for U and Vh when ``jobz`` is N: LAPACK does not touch them).
    """
    info = info_int()
    p = plan
    if p.rwork_at is None:
        p.fn(
            p.jobz, p.m, p.n, base, p.lda, s, u, p.ldu, vt, p.ldvt,
            base + p.work_at, p.lwork, base + p.iwork_at, byref(info),
        )  # fmt: skip
    else:
        p.fn(
            p.jobz, p.m, p.n, base, p.lda, s, u, p.ldu, vt, p.ldvt,
            base + p.work_at, p.lwork, base + p.rwork_at, base + p.iwork_at, byref(info),
        )  # fmt: skip
    return info.value


def gesdd_error(op: str, info: int, idx: tuple[int, ...]) -> None:
    """Raise the typed error of a failed ``?gesdd`` (nothing when ``info == 0``)."""
    if info == -4:
        # gesdd's own NaN check reports the matrix argument as invalid.
        raise LinAlgError(
            op,
            f"the matrix{f' at batch index {idx}' if idx else ''} has NaN entries",
            kind="NOT_FINITE",
            batch_index=idx,
            info=-4,
        )
    _check_info(op, info, "NOT_CONVERGED", "the SVD did not converge", idx)


def _gesdd(
    call: LinalgCall,
    arr: Array,
    dt: DType,
    m: int,
    n: int,
    batch: Shape,
    jobz: bytes,
    u: Array | None,
    s: Array,
    vh: Array | None,
) -> None:
    """Fill ``s`` (and ``u``, ``vh`` unless ``jobz == b"N"``) for every matrix of ``arr``.

    ``u`` is ``[M, Ku, B...]``, ``s`` is ``[K, B...]`` and ``vh`` is ``[Kv, N, B...]``,
    all F-ordered (pooled outputs or scratch). Every buffer LAPACK touches is pooled.
    """
    plan = gesdd_plan(dt, jobz, m, n)
    scratch = call.reused("gesdd.scratch", plan.scratch, dt.numpy)
    a_s = scratch[: m * n].reshape((m, n), order="F")
    base = ptr(scratch)
    for idx in _items(batch):
        np.copyto(a_s, _mat(arr, idx))
        if not finite(a_s):
            raise not_finite(call.op, idx)
        # INVARIANT: u, s, vh matrices are contiguous column-major (pooled [M, N, B...]
        # arrays indexed on trailing axes), as LAPACK reads them through raw pointers.
        info = gesdd_run(
            plan,
            base,
            ptr(_vec(s, idx)),
            ptr(_mat(u, idx)) if u is not None else base,
            ptr(_mat(vh, idx)) if vh is not None else base,
        )
        gesdd_error(call.op, info, idx)


def svd(call: LinalgCall, x: Any, full_matrices: bool, compute_uv: bool) -> None:
    """Outputs: U ``[M, M|K, B...]``, S ``[K, B...]``, Vh ``[N|K, N, B...]`` (or S alone)."""
    arr, dt, m, n, batch = _matrix(call, x)
    k = min(m, n)
    ucols, vrows = (m, n) if full_matrices else (k, k)
    u = call.output((m, ucols, *batch), dt) if compute_uv else None
    s = call.output((k, *batch), dt.real)
    vh = call.output((vrows, n, *batch), dt) if compute_uv else None
    if k == 0:
        # No singular values; full_matrices still asks for orthonormal bases.
        for out in (u, vh):
            if out is not None:
                _identity_fill(out)
        return
    jobz = b"N" if not compute_uv else (b"A" if full_matrices else b"S")
    _gesdd(call, arr, dt, m, n, batch, jobz, u, s, vh)


def svd_truncated(
    call: LinalgCall,
    x: Any,
    max_rank: int | None,
    cutoff: float,
    relative: bool,
    method: str = "gesdd",
) -> None:
    """Outputs: U ``[M, r, B...]``, S ``[r, B...]``, Vh ``[r, N, B...]``, discarded ``[B...]``.

    ``method``: ``"gesdd"`` (the full thin SVD, then the cut) or ``"gram"`` (only
    the leading ``min(max_rank, K)`` triplets, see `_selective`).
    """
    op = call.op
    if max_rank is not None and (
        isinstance(max_rank, bool) or not isinstance(max_rank, int) or max_rank < 1
    ):
        raise ValidationError(
            op, f"max_rank must be a positive int or None, got {max_rank!r}", kind="INVALID_RANK"
        )
    if not isinstance(cutoff, (int, float)) or not cutoff >= 0:
        raise ValidationError(
            op, f"cutoff must be a non-negative number, got {cutoff!r}", kind="INVALID_CUTOFF"
        )
    arr, dt, m, n, batch = _matrix(call, x)
    k = min(m, n)
    rdt = dt.real
    nb = math.prod(batch)
    gram = method == "gram"
    # The values computed: all K (gesdd) or the leading r0 (gram).
    r0 = min(k, max_rank) if gram and max_rank is not None else k
    if k and not gram:
        # Largest first: the pool is best fit, and a smaller request taken first could
        # claim the buffer the workspace fits in.
        call.reused("gesdd.scratch", gesdd_plan(dt, b"S", m, n).scratch, dt.numpy)
    u_s = call.scratch(m * r0 * nb, dt.numpy).reshape((m, r0, *batch), order="F")
    s_s = call.scratch(r0 * nb, rdt.numpy).reshape((r0, *batch), order="F")
    v_s = call.scratch(r0 * n * nb, dt.numpy).reshape((r0, n, *batch), order="F")
    # ||A||_F^2 per matrix (gram: the discarded weight is what the kept values miss).
    fro2: list[float] = []
    if k and gram:
        for idx in _items(batch):
            fro2.append(
                gram_svd(
                    call, _mat(arr, idx), dt, m, n, r0, idx,
                    _mat(u_s, idx), _vec(s_s, idx), _mat(v_s, idx), _gesdd,
                )
            )  # fmt: skip
    elif k:
        _gesdd(call, arr, dt, m, n, batch, b"S", u_s, s_s, v_s)
    # Rank kept per matrix: values >= threshold, at most max_rank, at least one.
    keeps: list[int] = []
    for idx in _items(batch):
        sv = _vec(s_s, idx)
        if k == 0:
            keeps.append(0)
            continue
        threshold = cutoff * float(sv[0]) if relative else float(cutoff)
        kept = int(np.count_nonzero(sv >= threshold)) if threshold > 0 else r0
        if max_rank is not None:
            kept = min(kept, max_rank)
        keeps.append(max(kept, 1))
    r = max(keeps, default=min(k, max_rank) if max_rank is not None else k)
    u = call.output((m, r, *batch), dt)
    s = call.output((r, *batch), rdt)
    vh = call.output((r, n, *batch), dt)
    disc = call.output(batch, rdt)
    np.copyto(u, u_s[:, :r])
    np.copyto(s, s_s[:r])
    np.copyto(vh, v_s[:r])
    for j, (idx, kept) in enumerate(zip(_items(batch), keeps, strict=False)):
        sv = _vec(s_s, idx)
        if gram and k:
            head = sv[:kept]
            # Cancellation leaves about eps * ||A||_F^2 of noise; never below zero.
            disc[idx] = max(fro2[j] - float(np.dot(head, head)), 0.0)
        else:
            tail = sv[kept:]
            disc[idx] = float(np.dot(tail, tail))
        # A matrix that keeps fewer than the common rank r gets zeros there, so
        # U S Vh is its own truncation.
        _vec(s, idx)[kept:] = 0


# ---------------------------------------------------------------------- QR and LQ
def _check_mode(op: str, mode: str) -> None:
    if not isinstance(mode, str) or mode not in ("reduced", "complete"):
        raise ValidationError(
            op, f"mode must be 'reduced' or 'complete', got {mode!r}", kind="INVALID_MODE"
        )


def qr(call: LinalgCall, x: Any, mode: str) -> None:
    """Outputs: Q ``[M, Kq, B...]``, R ``[Kq, N, B...]`` (Kq = K reduced, M complete)."""
    _check_mode(call.op, mode)
    arr, dt, m, n, batch = _matrix(call, x)
    k = min(m, n)
    qc = m if mode == "complete" else k
    q = call.output((m, qc, *batch), dt)
    r = call.output((qc, n, *batch), dt)
    if k == 0:
        _identity_fill(q)
        r[...] = 0
        return
    geqrf = f2py("geqrf", dt)
    orgqr = f2py("orgqr", dt)
    a_s = call.matrix_scratch(m, n, dt.numpy)
    lw_qr = _lwork("geqrf", dt, m, n)
    lw_org = _orgqr_lwork(dt, m, qc, k)
    for idx in _items(batch):
        np.copyto(a_s, _mat(arr, idx))
        qr_, tau, _work, info = geqrf(a_s, lwork=lw_qr, overwrite_a=1)
        _same_memory_or_copy(a_s, qr_)
        _check_info(call.op, info, "NOT_CONVERGED", "geqrf failed", idx)
        r_b = _mat(r, idx)
        r_b[k:] = 0
        _copy_triangle(r_b[:k], a_s[:k], upper=True)
        q_b = _mat(q, idx)
        # The reflectors (first k columns) go into Q's own buffer, which orgqr then
        # overwrites in place with Q (it sets any columns past k itself).
        np.copyto(q_b[:, :k], a_s[:, :k])
        q_, _work, info = orgqr(q_b, tau, lwork=lw_org, overwrite_a=1)
        _same_memory_or_copy(q_b, q_)
        _check_info(call.op, info, "NOT_CONVERGED", "orgqr failed", idx)


_lq_sizes: dict[tuple[DType, int, int, int, int], int] = {}


def _lq_workspace(dt: DType, m: int, n: int, rows: int, k: int) -> int:
    """The ``lwork`` serving both ``?gelqf`` and ``?orglq`` (LAPACK's queries, cached)."""
    key = (dt, m, n, rows, k)
    value = _lq_sizes.get(key)
    if value is None:
        value = remember(_lq_sizes, key, _query_lq_workspace(dt, m, n, rows, k))
    return value


def _query_lq_workspace(dt: DType, m: int, n: int, rows: int, k: int) -> int:
    probe = np.empty(1, dt.numpy)
    work = np.empty(1, dt.numpy)
    info = info_int()
    raw("gelqf", dt)(
        ref_int(m), ref_int(n), ptr(probe), ref_int(max(m, 1)), ptr(probe),
        ptr(work), ref_int(-1), byref(info),
    )  # fmt: skip
    lw = lwork_from(work[0])
    raw("orglq", dt)(
        ref_int(rows), ref_int(n), ref_int(k), ptr(probe), ref_int(max(rows, 1)),
        ptr(probe), ptr(work), ref_int(-1), byref(info),
    )  # fmt: skip
    return max(lw, lwork_from(work[0]))


def lq(call: LinalgCall, x: Any, mode: str) -> None:
    """Outputs: L ``[M, Kq, B...]``, Q ``[Kq, N, B...]`` (Kq = K reduced, N complete)."""
    _check_mode(call.op, mode)
    arr, dt, m, n, batch = _matrix(call, x)
    k = min(m, n)
    qr_rows = n if mode == "complete" else k
    lo = call.output((m, qr_rows, *batch), dt)
    q = call.output((qr_rows, n, *batch), dt)
    if k == 0:
        lo[...] = 0
        _identity_fill(q)
        return
    lwork = _lq_workspace(dt, m, n, qr_rows, k)
    a_s = call.matrix_scratch(m, n, dt.numpy)
    tau = call.scratch(k, dt.numpy)
    work = call.scratch(lwork, dt.numpy)
    gelqf = raw("gelqf", dt)
    orglq = raw("orglq", dt)
    info = info_int()
    for idx in _items(batch):
        np.copyto(a_s, _mat(arr, idx))
        gelqf(
            ref_int(m), ref_int(n), ptr(a_s), ref_int(m), ptr(tau),
            ptr(work), ref_int(lwork), byref(info),
        )  # fmt: skip
        _check_info(call.op, info.value, "NOT_CONVERGED", "gelqf failed", idx)
        l_b = _mat(lo, idx)
        l_b[:, k:] = 0
        _copy_triangle(l_b[:, :k], a_s[:, :k], upper=False)
        q_b = _mat(q, idx)
        np.copyto(q_b[:k], a_s[:k])
        # INVARIANT: q_b is contiguous column-major with leading dimension qr_rows.
        orglq(
            ref_int(qr_rows), ref_int(n), ref_int(k), ptr(q_b), ref_int(qr_rows),
            ptr(tau), ptr(work), ref_int(lwork), byref(info),
        )  # fmt: skip
        _check_info(call.op, info.value, "NOT_CONVERGED", "orglq failed", idx)


# ---------------------------------------------------------------------- eigenproblems
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


# ---------------------------------------------------------------------- Cholesky, LU
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
        shape=shape,
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


# ---------------------------------------------------------------------- norms, expm
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
        raise ValidationError(op, str(exc), kind="INVALID_AXES") from None
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
