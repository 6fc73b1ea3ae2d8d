"""The singular value decomposition kernels (``?gesdd``; truncated SVD)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ...dtype import DType
from ...errors import LinAlgError, ValidationError
from ._adapter import Array, LinalgCall, Shape
from ._calls import gesdd_run
from ._common import (
    _I32,
    _check_info,
    _identity_fill,
    _items,
    _mat,
    _matrix,
    _vec,
    finite,
    not_finite,
)
from ._lapack import (
    byref,
    info_int,
    lwork_from,
    ptr,
    raw,
    raw_address,
    ref_char,
    ref_int,
    remember,
)
from ._selective import gram_svd

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

    ``fn`` is the routine's address (`_lapack.raw_address`), ``jobz`` its job
    character's code, ``m`` ... ``lwork`` its integer arguments; the compiled
    `_calls.gesdd_run` reads the fields by position, in this order.
    ``scratch`` elements of the dtype hold, in one pooled buffer, the overwritten
    copy of the matrix (first ``m * n``), the workspace, ``rwork`` (complex) and
    ``iwork``, at the byte offsets given: one pool request and one address per
    call instead of four of each (an address costs a microsecond at n = 64).
    """

    fn: int
    jobz: int
    m: int
    n: int
    lda: int
    ldu: int
    ldvt: int
    lwork: int
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
            raw_address("gesdd", dt),
            jobz[0],
            m,
            n,
            max(m, 1),
            max(m, 1) if jobz != b"N" else 1,
            max(ldvt, 1),
            lwork,
            -(-end // size),
            work_at,
            rwork_at,
            iwork_at,
        )
        remember(_gesdd_plans, key, plan)
    return plan


def gesdd_error(op: str, info: int, idx: tuple[int, ...]) -> None:
    """Raise the typed error of a failed ``?gesdd`` (nothing when ``info == 0``)."""
    if info == -4:
        # gesdd's own NaN check reports the matrix argument as invalid.
        raise LinAlgError(
            op,
            f"the matrix{f' at batch index {idx}' if idx else ''} has NaN entries",
            kind="NOT_FINITE",
            batch_index=idx,
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
            op,
            f"max_rank must be a positive int or None, got {max_rank!r}",
            kind="INVALID_ARGUMENT",
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
