"""quimb's split kernels for tenferro arrays: ``svd_truncated`` and ``qr_stabilized``.

quimb writes its decompositions once against autoray (``@compose``) and registers
backend-specific versions under the same names (numpy's are numba-compiled). An
array with no registered version runs the composed default: for a truncated SVD
about twenty namespace calls (the SVD, a cutoff search over cumulative sums,
slices, a square root, broadcast products), for a stabilised QR six. These are
the ``tenferro`` backend's versions, registered with autoray under quimb's names
(`register`, called wherever tenferro registers with autoray: when autoray is
loaded, and again after `tenferro.autodiff` clears autoray's cache). autoray
keys a registration by name only, so it holds whether quimb is imported before
tenferro or after, and nothing here imports quimb, except the fallback below,
which only quimb's own calls reach.

Each takes quimb's arguments and gives quimb's composed results, value for value
(the same numpy formulas, in the same dtype): ``svd_truncated(x, cutoff,
cutoff_mode, max_bond, absorb, renorm, info)`` with the cutoff modes 1-6
(``"abs"``, ``"rel"``, ``"sum2"``, ``"rsum2"``, ``"sum1"``, ``"rsum1"``), every
absorb code or name, renormalisation powers and ``info["error"]``;
``qr_stabilized(x, absorb, stabilized)`` with the QR-like and LQ-like codes. The
work is one ``tenferro.linalg.svd`` (``qr``), one read of the singular values
(or of R's diagonal) under a pin, and one compiled engine call
(`engine.interface.shaped2`) per factor that absorbs them, writing the product
into a new pooled output; an unabsorbed, truncated factor is a view of the
decomposition's pooled output, as in quimb's composed function. Anything else
(a batch of matrices, extra keyword arguments, tracers, unknown codes, an empty
matrix) runs quimb's composed function, as quimb's numpy versions do for
batches.

Ownership, for each: **borrows** ``x``; results are new pooled tensors, or views
of them.
"""

from __future__ import annotations

import importlib
import sys
from bisect import bisect_left
from typing import Any

import numpy as np

from ..engine.interface import current, pinned, shaped
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import TensorView
from ._adapter import emit, mirror, unmirror

__all__ = ["qr_stabilized", "register", "svd_truncated"]

Array = np.ndarray[Any, Any]

# What a factor becomes: absent, as decomposed, or times s (or sqrt(s)).
_NONE, _PLAIN, _TIMES_S, _TIMES_SQRT = 0, 1, 2, 3

#: quimb's absorb codes and their names -> (left factor, singular values returned,
#: right factor).
_SVD_FORMS: dict[Any, tuple[int, bool, int]] = {}
for _codes, _form in (
    ((None, "U,s,VH"), (_PLAIN, True, _PLAIN)),
    ((2, "s"), (_NONE, True, _NONE)),
    ((-12, "lsqrt"), (_TIMES_SQRT, False, _NONE)),
    ((-11, "VH", "rorthog"), (_NONE, False, _PLAIN)),
    ((-10, "Us", "lfactor"), (_TIMES_S, False, _NONE)),
    ((-1, "Us,VH", "left"), (_TIMES_S, False, _PLAIN)),
    ((0, "Usq,sqVH", "both"), (_TIMES_SQRT, False, _TIMES_SQRT)),
    ((1, "U,sVH", "right"), (_PLAIN, False, _TIMES_S)),
    ((10, "U", "lorthog"), (_PLAIN, False, _NONE)),
    ((11, "sVH", "rfactor"), (_NONE, False, _TIMES_S)),
    ((12, "sqVH", "rsqrt"), (_NONE, False, _TIMES_SQRT)),
):
    for _c in _codes:
        _SVD_FORMS[_c] = _form

#: quimb's cutoff modes: 1 abs, 2 rel, 3 sum2, 4 rsum2, 5 sum1, 6 rsum1.
_CUTOFF_MODES: dict[Any, int] = {}
for _i, _name in enumerate(("abs", "rel", "sum2", "rsum2", "sum1", "rsum1"), start=1):
    _CUTOFF_MODES[_i] = _CUTOFF_MODES[_name] = _i

#: qr_stabilized's absorb codes and names -> (LQ-like, return Q, return R); the
#: LQ-like ones run on the transpose, Q and R swapping sides.
_QR_FORMS: dict[Any, tuple[bool, bool, bool]] = {}
for _codes, _qform in (
    ((1, "U,sVH", "right"), (False, True, True)),
    ((10, "U", "lorthog"), (False, True, False)),
    ((11, "sVH", "rfactor"), (False, False, True)),
    ((-1, "Us,VH", "left"), (True, True, True)),
    ((-11, "VH", "rorthog"), (True, True, False)),
    ((-10, "Us", "lfactor"), (True, False, True)),
):
    for _c in _codes:
        _QR_FORMS[_c] = _qform


def _composed(name: str) -> Any:
    """quimb's composed default of ``name`` (only quimb's calls reach the fallback)."""
    decomp = sys.modules.get("quimb.tensor.decomp")
    if decomp is None:
        decomp = importlib.import_module("quimb.tensor.decomp")
    return getattr(decomp, name)._default_fn


_linalg_module: Any = None


def _linalg() -> Any:
    # tenferro.linalg imports the namespace: looked up at the first call (the module,
    # so `tenferro.autodiff`'s wrappers of its functions are the ones called).
    global _linalg_module
    if _linalg_module is None:
        from .. import linalg

        _linalg_module = linalg
    return _linalg_module


def _lookup(table: dict[Any, Any], key: Any) -> Any:
    try:
        return table.get(key)
    except TypeError:  # unhashable: quimb's own lookup raises
        return None


# ---------------------------------------------------------------------- operands
def _operand(r: Any) -> tuple[Tensor, bool] | None:
    """A decomposition's result as ``(column-major owner, flipped)``: the result itself
    (``flipped`` False), or the owner a C-ordered result is the reversed view of (True).
    None for anything else."""
    if r.__class__ is Tensor:
        if r._st.__class__ is not HostBuffer:
            return None
        return r, False
    if r.__class__ is TensorView:
        m = mirror(r)
        if m is not None:
            return m, True
    return None


def _result(t: Tensor, flipped: bool) -> Any:
    return unmirror(t) if flipped else t


# ---------------------------------------------------------------------- kernels
def _svd_plan(
    flat: Array,
    k: int,
    cutoff: float,
    mode: int,
    max_bond: int,
    renorm: Any,
    want_error: bool,
) -> tuple[int, Array | None, Any]:
    """``(n, norm, error)`` from the singular values ``flat[:k]`` (descending): how many
    to keep, the factor the kept ones are renormalised by (None: none) and the
    truncation error (None: not asked). quimb's composed rule, step for step, in
    the singular values' dtype. Returns new values only (``flat`` is borrowed)."""
    s = flat[:k]
    csp = tot = None
    power = 0
    if (
        mode >= 3
        and cutoff > 0.0
        and not renorm
        and cutoff.__class__ is float
        and flat.dtype.char == "d"
    ):
        # A cumulative mode in float64 without renormalisation: the same sums (a
        # cumulative sum adds in order; ``s * s`` is ``s**2``), read once as Python
        # floats, the bound in the same double arithmetic; the cumulative sums never
        # decrease (their terms are not negative), so the count below the bound is
        # where the bound would be inserted (a NaN bound counts none either way).
        c = np.cumsum(s * s if mode <= 4 else s).tolist()
        last = c[-1]
        n = bisect_left(c, last * (1 - cutoff) if mode in (4, 6) else last - cutoff) + 1
        if max_bond > 0:
            n = min(n, max_bond)
    elif cutoff > 0.0 or renorm > 0:
        if mode == 1:
            n = int(np.count_nonzero(s > cutoff))
        elif mode == 2:
            n = int(np.count_nonzero(s > cutoff * s[0:1]))
        else:
            power = 2 if mode in (3, 4) else 1
            csp = np.cumsum(s**2 if power == 2 else s)
            tot = csp[-1:]
            bound = tot * (1 - cutoff) if mode in (4, 6) else tot - cutoff
            n = int(np.count_nonzero(csp < bound)) + 1
        n = max(n, 1)
        if max_bond > 0:
            n = min(n, max_bond)
    elif max_bond > 0:
        n = max_bond
    else:
        n = k
    if n >= k:
        return k, None, 0.0 if want_error else None
    norm = None
    if renorm > 0:
        if csp is not None and renorm == power:
            total, kept = tot, csp[n - 1 : n]
        else:
            weights = s**renorm
            total = np.sum(weights, axis=-1, keepdims=True)
            kept = np.sum(weights[:n], axis=-1, keepdims=True)
        norm = (total / np.where(kept > 0, kept, 1)) ** (1 / renorm)
        norm = np.where(kept > 0, norm, 1)
    error = np.sqrt(np.sum(s[n:] ** 2, axis=-1)) if want_error else None
    return n, norm, error


def _absorb_kernel(fa: Array, out: Array, arg: Any) -> None:
    # fa: a factor's column-major (p, q) owner; out: the column-major (rows, cols)
    # block of it times the weights w along its columns (`axis`) or rows: every
    # element written. Each side is viewed so that w runs along its last axis: the
    # leading columns as a column-major (p, cols) block of the first elements, the
    # leading rows through the row-major (q, p) view of the whole (its transpose).
    p, q, rows, cols, axis, w = arg
    if axis:
        a = fa[: p * cols].reshape((p, cols), order="F")
        o = out.reshape((p, cols), order="F")
    else:
        a = (fa if len(fa) == p * q else fa[: p * q]).reshape((q, p))
        if rows != p:
            a = a[:, :rows]
        o = out.reshape((q, rows))
    np.multiply(a, w, out=o)


def _values_kernel(fs: Array, out: Array, norm: Array) -> None:
    # The kept values, renormalised: every element of out written.
    np.multiply(fs[: len(out)], norm, out=out)


def _phases(fr: Array, rows: int, k: int) -> Array:
    """quimb's ``sgn`` of R's diagonal (``x / |x|``, 1 where x is 0), a new array; ``fr``
    is the column-major (rows, .) owner of R or of its transpose, whose diagonal is
    every (rows + 1)th element."""
    d = fr[: (k - 1) * (rows + 1) + 1 : rows + 1]
    zero = d == 0
    ph: Array = (d + zero) / (np.abs(d) + zero)
    return ph


def _phase_r_kernel(fa: Array, out: Array, arg: Any) -> None:
    # out: the (p, q) owner of R (or of its transpose, `flipped`) with its rows (its
    # columns) times the phases of its diagonal, every element written; the phases
    # are handed back in `held` for Q's call.
    p, q, flipped, k, held = arg
    ph = _phases(fa, p, k)
    held.append(ph)
    _phase_kernel(fa, out, (p, q, flipped, ph))


def _phase_kernel(fa: Array, out: Array, arg: Any) -> None:
    # out: the (p, q) owner fa times the phases along its columns (`axis`) or rows:
    # every element written (viewed so that the phases run along the last axis: the
    # column-major (p, q) view, or the row-major (q, p) one, its transpose).
    p, q, axis, ph = arg
    if len(fa) != p * q:
        fa = fa[: p * q]
    if axis:
        np.multiply(fa.reshape((p, q), order="F"), ph, out=out.reshape((p, q), order="F"))
    else:
        np.multiply(fa.reshape((q, p)), ph, out=out.reshape((q, p)))


# ---------------------------------------------------------------------- svd_truncated
def _absorbed(eng: Any, f: tuple[Tensor, bool], n: int, left: bool, w: Array) -> Any:
    """U[:, :n] * w (``left``) or w[:, None] * VH[:n], in a new pooled result in the
    factor's memory order (one compiled engine call)."""
    t, flipped = f
    p, q = t._shape
    # The owner holds the factor (flipped: its transpose): the kept singular vectors
    # are its leading columns when they are the factor's columns, else its rows.
    along_cols = left != flipped
    rows, cols = (p, n) if along_cols else (n, q)
    r = shaped(
        _absorb_kernel,
        t,
        (rows, cols),
        rows * cols,
        t._dtype,
        eng,
        (p, q, rows, cols, along_cols, w),
    )
    return None if r is None else _result(r, flipped)


def _svd_body(
    flat: Array,
    s: Tensor,
    uf: tuple[Tensor, bool] | None,
    vf: tuple[Tensor, bool] | None,
    form: tuple[int, bool, int],
    opts: tuple[Any, ...],
) -> tuple[int, Any, Any, Any, Any] | None:
    """Run while the singular values ``flat`` are pinned: the plan, then each factor
    that absorbs them (`_absorbed`, reading the kept values in place) and the
    renormalised values. ``(n, left, values, right, error)``, None for a factor the
    caller slices itself; None when an operand was exclusively borrowed."""
    k = s._shape[0]
    n, norm, error = _svd_plan(flat, k, *opts)
    eng = current()
    lform, s_out, rform = form
    # The kept values as quimb absorbs them: renormalised (a new array), else read in
    # place; their square roots where a factor takes those.
    w = flat[:n] if norm is None else flat[:n] * norm
    wsq = np.sqrt(w) if _TIMES_SQRT in (lform, rform) else w
    left = right = vals = None
    if uf is not None:
        left = _absorbed(eng, uf, n, True, w if lform == _TIMES_S else wsq)
        if left is None:
            return None
    if vf is not None:
        right = _absorbed(eng, vf, n, False, w if rform == _TIMES_S else wsq)
        if right is None:
            return None
    if s_out and norm is not None:
        vals = shaped(_values_kernel, s, (n,), n, s._dtype, eng, norm)
        if vals is None:
            return None
    return n, left, vals, right, error


def svd_truncated(
    x: Any,
    cutoff: float = -1.0,
    cutoff_mode: Any = 2,
    max_bond: int = -1,
    absorb: Any = 0,
    renorm: Any = 0,
    info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> tuple[Any, Any, Any]:
    """quimb's ``svd_truncated`` of one tenferro matrix: a thin SVD, truncated by
    ``max_bond`` and ``cutoff`` (``cutoff_mode``), renormalised (``renorm``), the
    singular values absorbed as ``absorb`` says; ``info["error"]`` is the norm of
    the discarded values. Anything else runs quimb's composed function.

    Ownership: **borrows** ``x``; absorbed factors (and renormalised values) are new
    pooled tensors, the others the SVD's pooled outputs or views of them.
    """
    form = _lookup(_SVD_FORMS, absorb)
    mode = _lookup(_CUTOFF_MODES, cutoff_mode)
    u: Any = None
    s: Any = None
    vh: Any = None
    if not (
        kwargs
        or form is None
        or mode is None
        or (x.__class__ is not Tensor and x.__class__ is not TensorView)
        or len(x._shape) != 2
        or 0 in x._shape
    ):
        u, s, vh = _linalg().svd(x, full_matrices=False)
    ok = s.__class__ is Tensor and s._st.__class__ is HostBuffer
    uf = vf = None
    if ok:
        assert form is not None
        # The owners of the factors that absorb the values (taking a fresh result's
        # owner roots it: only where needed).
        if form[0] >= _TIMES_S:
            uf = _operand(u)
            ok = uf is not None
        if form[2] >= _TIMES_S:
            vf = _operand(vh)
            ok = ok and vf is not None
    if not ok:
        # A batch, extra options, a tracer, an unknown code, an empty matrix (or results
        # not in the forms tenferro.linalg gives): quimb's composed function.
        return _composed("svd_truncated")(  # type: ignore[no-any-return]
            x, cutoff, cutoff_mode, max_bond, absorb, renorm, info, **kwargs
        )
    assert form is not None
    if info is not None and len(info) == 0:
        info["error"] = None  # an empty dict asks for every extra (quimb's rule)
    want_error = info is not None and "error" in info
    st = s._st
    got = pinned(
        _svd_body, st, (st.flat, s, uf, vf, form, (cutoff, mode, max_bond, renorm, want_error))
    )
    if got is None:
        # An operand was exclusively borrowed meanwhile (never, for fresh results,
        # which nothing else sees): the composed function.
        return _composed("svd_truncated")(  # type: ignore[no-any-return]
            x, cutoff, cutoff_mode, max_bond, absorb, renorm, info
        )
    n, left, vals, right, error = got
    k = s._shape[0]
    lform, s_out, rform = form
    if lform == _PLAIN:
        left = u if n == k else u[:, :n]
    if rform == _PLAIN:
        right = vh if n == k else vh[:n]
    if s_out and vals is None:
        vals = s if n == k else s[:n]
    if want_error:
        assert info is not None
        info["error"] = error if error.__class__ is float else emit("svd_truncated", error)
    return left, vals, right


# ---------------------------------------------------------------------- qr_stabilized
def _phase_body(flat: Array, rows: int, k: int) -> Array:
    return _phases(flat, rows, k)


def _stabilized(q: Any, r: Any, want_q: bool, want_r: bool) -> tuple[Any, Any] | None:
    """Q and R with the phases of R's diagonal moved from R into Q, each a new pooled
    result in its memory order (one compiled engine call each; R's computes the
    phases, Q's reads them); None when they are not in `tenferro.linalg`'s forms or
    an operand was exclusively borrowed."""
    rf = _operand(r)
    qf = _operand(q) if want_q else None
    if rf is None or (want_q and qf is None):
        return None
    eng = current()
    rt, r_flipped = rf
    rp, rq = rt._shape
    k = min(rp, rq)
    held: list[Array] = []
    if want_r:
        # R's rows (its owner's columns when flipped) take the phases.
        got = shaped(
            _phase_r_kernel, rt, (rp, rq), rp * rq, rt._dtype, eng, (rp, rq, r_flipped, k, held)
        )
        if got is None:
            return None
        r = _result(got, r_flipped)
    else:
        st = rt._st
        ph = pinned(_phase_body, st, (st.flat, rp, k))
        if ph is None:
            return None
        held.append(ph)
    if qf is not None:
        ph = held[0]  # real phases are their own conjugates
        qt, q_flipped = qf
        qp, qq = qt._shape
        # Q's columns (its owner's rows when flipped) take the conjugate phases.
        got = shaped(
            _phase_kernel,
            qt,
            (qp, qq),
            qp * qq,
            qt._dtype,
            eng,
            (qp, qq, not q_flipped, ph if ph.dtype.kind != "c" else np.conj(ph)),
        )
        if got is None:
            return None
        q = _result(got, q_flipped)
    return q, r


def qr_stabilized(
    x: Any, absorb: Any = 1, stabilized: bool = True, **kwargs: Any
) -> tuple[Any, None, Any]:
    """quimb's ``qr_stabilized`` of one tenferro matrix: ``Q, R = qr(x)`` with the phases
    of R's diagonal moved into Q (``stabilized``), or the LQ-like form on the
    transpose; ``absorb`` chooses the factors returned. Anything else runs quimb's
    composed function.

    Ownership: **borrows** ``x``; results are new pooled tensors, or views of them.
    """
    qform = _lookup(_QR_FORMS, absorb)
    q: Any = None
    r: Any = None
    if not (
        kwargs
        or qform is None
        or (x.__class__ is not Tensor and x.__class__ is not TensorView)
        or len(x._shape) != 2
        or 0 in x._shape
    ):
        assert qform is not None
        q, r = _linalg().qr(x.mT if qform[0] else x)
    if q is None or r is None:
        return _composed("qr_stabilized")(  # type: ignore[no-any-return]
            x, absorb=absorb, stabilized=stabilized, **kwargs
        )
    assert qform is not None
    transposed, want_q, want_r = qform
    if stabilized:
        got = _stabilized(q, r, want_q, want_r)
        if got is None:  # not in linalg's forms, or borrowed meanwhile (never)
            return _composed("qr_stabilized")(  # type: ignore[no-any-return]
                x, absorb=absorb, stabilized=stabilized
            )
        q, r = got
    left = q if want_q else None
    right = r if want_r else None
    if transposed:
        left, right = (None if right is None else right.mT), (None if left is None else left.mT)
    return left, None, right


def register(autoray: Any) -> None:
    """Register the two kernels under quimb's names for the ``tenferro`` backend."""
    autoray.register_function("tenferro", "svd_truncated", svd_truncated)
    autoray.register_function("tenferro", "qr_stabilized", qr_stabilized)
