"""The QR and LQ kernels (``?geqrf``/``?orgqr``, ``?gelqf``/``?orglq``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import ValidationError
from ._adapter import LinalgCall
from ._calls import QrPlan
from ._common import (
    _check_info,
    _copy_triangle,
    _identity_fill,
    _items,
    _lwork,
    _mat,
    _matrix,
    _orgqr_lwork,
    _same_memory_or_copy,
)
from ._lapack import (
    byref,
    f2py,
    info_int,
    lwork_from,
    ptr,
    raw,
    raw_address,
    ref_int,
    remember,
)


def _check_mode(op: str, mode: str) -> None:
    if not isinstance(mode, str) or mode not in ("reduced", "complete"):
        raise ValidationError(
            op, f"mode must be 'reduced' or 'complete', got {mode!r}", kind="INVALID_MODE"
        )


_qr_plans: dict[tuple[DType, int, int, int, bool], QrPlan] = {}


def qr_plan(dt: DType, m: int, n: int, qc: int, rows: bool) -> QrPlan:
    """The cached `_calls.QrPlan` of the lean QR of an ``m x n`` matrix with ``qc``
    columns of Q (``rows``: read from and written as transposes, `_lean._qr_rows`).

    Its workspace sizes are the ones the general path passes (`_lwork`,
    `_orgqr_lwork`): the same blocked code runs on either path.
    """
    key = (dt, m, n, qc, rows)
    plan = _qr_plans.get(key)
    if plan is None:
        k = min(m, n)
        plan = QrPlan(
            raw_address("geqrf", dt),
            raw_address("orgqr", dt),
            m,
            n,
            qc,
            _lwork("geqrf", dt, m, n),
            _orgqr_lwork(dt, m, qc, k),
            dt.numpy.itemsize,
            rows,
        )
        remember(_qr_plans, key, plan)
    return plan


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
