"""The lean path of the engine's linear algebra: one plain host matrix, no batch.

At n = 64 a LAPACK call takes 20-300 us and numpy's gufunc adds about 5 us to
it. The general path (`_adapter.run_call`: a `Reads`, a `LinalgCall` that
records every pooled buffer, batch iteration, the results wrapped in a loop)
adds 10-25 us, enough to lose to numpy on every cheap factorisation. This
module runs the common case, one unbatched non-empty plain host tensor of F32,
F64, C32 or C64 (and, for solve, a right-hand side of the same kind), with
nothing but the rules:

* the operand's buffer is pinned *before* it is checked for an exclusive
  borrow, read through ``HostBuffer.flat`` (no alias) and unpinned when the
  call ends: the compiled per-operation protocol (`_core.pinned`);
* results and LAPACK's overwritten copy of the input are pooled buffers;
  scratch goes back to the pool once no array over it is left, results are
  handed out by `_core.pooled` (`tensor._pooled`'s tensor);
* if anything raises, the buffers taken so far are dropped, never pooled (the
  traceback keeps arrays over them), and the operands' buffers are marked
  ``failed_read`` (pooled at their death only if no internal array over them
  survives: docs/internals.md, "Failure policy for pooled buffers");
* a LAPACK failure (``info != 0``) or any case this module does not handle
  (empty, batched, a borrowed operand, views, ...) gives its buffers back and
  returns None: the caller then runs the general path, which raises the typed
  `LinAlgError` naming the operation and the batch index (or the typed
  refusal), so errors are written in one place. A failure costs the routine
  twice; success costs it once.

Ownership, for every function here: **borrows** its operands for the call
(never modified) and returns new pooled tensors, like the `LinalgOps` methods
it serves, or None.

Every per-matrix computation the two paths share (determinant from the LU
diagonal, real ``?geev`` pairs, workspace sizes) is one function in `_kernels`,
so both give the same bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...dtype import DType
from ...storage.host import HostBuffer
from ...tensor import Tensor
from .._base import EngineBase
from .._core import lean_qr as _lean_qr
from .._core import lean_svd as _lean_svd
from .._core import pinned as _core_pinned

# `tensor._pooled`'s tensor, built in C (a third of a microsecond less per result).
from .._core import pooled as _pooled
from . import _kernels as K
from ._lapack import f2py, ptr

__all__ = [
    "SVD_ROWS_MIN",
    "cholesky",
    "det",
    "eig",
    "eigh",
    "expm",
    "inv",
    "lstsq",
    "pinv",
    "qr",
    "qr_rows",
    "slogdet",
    "solve",
    "spectral_norm",
    "svd",
    "svd_rows",
]

Array = np.ndarray[Any, Any]
# ``body(eng, flat, dt, m, n, *args)``: the result, or None for the general path.
Body = Callable[..., Any]

_I64 = DType.I64.numpy
_LAPACK = frozenset((DType.F32, DType.F64, DType.C32, DType.C64))
_COMPLEX_OF = {
    DType.F32: DType.C32,
    DType.F64: DType.C64,
    DType.C32: DType.C32,
    DType.C64: DType.C64,
}


def run(eng: EngineBase, a: Any, square: bool, body: Body, *args: Any) -> Any:
    """``body(eng, flat, dt, m, n, *args)`` on ``a``'s pinned buffer, or None.

    None (before anything is taken) unless ``a`` is a non-empty plain host matrix
    (square if ``square``) of a LAPACK dtype that nobody borrows exclusively.
    """
    if a.__class__ is not Tensor:
        return None
    st = a._st
    shape = a._shape
    dt = a._dtype
    if st.__class__ is not HostBuffer or len(shape) != 2 or dt not in _LAPACK:
        return None
    m, n = shape
    if not m or not n or (square and m != n):
        return None
    # The per-operation protocol, compiled (engine/_core.pyx): pin, check for a writer
    # (None: the general path refuses it, typed), the failure policy, unpin.
    return _core_pinned(body, st, (eng, st.flat, dt, m, n, *args))


def _take(eng: EngineBase, dtype: np.dtype[Any], n: int) -> tuple[Array, Array]:
    """``(owner, flat)``: ``n`` uninitialised pooled elements (the caller writes them).

    Each body takes its results first, in the order it returns them, and its
    scratch last, and gives the scratch back before it returns: the pool's
    lock-free lane hands back the newest released buffer when its size matches,
    so a call repeated on the same shapes (results dropped last to first, as a
    tuple is) finds each buffer on top of the lane instead of taking the pool's
    lock twice per buffer (3 us at n = 64).
    """
    owner = eng._pool.acquire(dtype, n)
    return owner, (owner if len(owner) == n else owner[:n])


def _fmat(flat: Array, m: int, n: int) -> Array:
    """The F-ordered ``m x n`` matrix over a flat array (the same memory)."""
    return flat.reshape((m, n), order="F")


# ---------------------------------------------------------------------- LU
def _lu(eng: EngineBase, fa: Array, dt: DType, n: int) -> tuple[Array, Array, int, int]:
    """``(owner, flat, parity, info)``: ``?getrf`` of ``fa`` in a pooled scratch buffer.

    ``parity``: 1 when the row exchanges are odd (`_kernels.lu_parity`).
    """
    owner = eng._pool.acquire(dt.numpy, n * n)
    flat = owner if len(owner) == n * n else owner[: n * n]
    flat[...] = fa
    lu = flat.reshape((n, n), order="F")
    lu_, piv, info = f2py("getrf", dt)(lu, overwrite_a=1)
    if lu_ is not lu:  # pragma: no cover - f2py works in place on F-ordered input
        lu[...] = lu_
    return owner, flat, K.lu_parity(piv), info


def _det(eng: EngineBase, fa: Array, dt: DType, n: int, _n: int) -> Tensor | None:
    out, o = _take(eng, dt.numpy, 1)
    owner, flat, parity, info = _lu(eng, fa, dt, n)
    if info < 0:  # pragma: no cover - an argument we pass is wrong
        del flat, o
        eng._pool.recycle(owner, 0)
        eng._pool.recycle(out, 0)
        return None
    # info > 0: U is exactly singular; its zero diagonal gives det 0, no error.
    o[0] = K.det_from_lu(flat[:: n + 1], parity)
    del flat  # INVARIANT: no array over the scratch is left when it goes back
    eng._pool.recycle(owner, 0)
    return _pooled((), dt, out, o, eng._recycler)


def det(eng: EngineBase, a: Any) -> Tensor | None:
    """The lean `LinalgOps.det`, or None (see `run`)."""
    result: Tensor | None = run(eng, a, True, _det)
    return result


def _slogdet(eng: EngineBase, fa: Array, dt: DType, n: int, _n: int) -> Any:
    real = dt.real
    s_owner, s = _take(eng, dt.numpy, 1)
    l_owner, lg = _take(eng, real.numpy, 1)
    owner, flat, parity, info = _lu(eng, fa, dt, n)
    pool = eng._pool
    if info < 0:  # pragma: no cover - an argument we pass is wrong
        del flat, s, lg
        for buf in (owner, l_owner, s_owner):
            pool.recycle(buf, 0)
        return None
    s[0], lg[0] = K.slogdet_from_lu(flat[:: n + 1], parity, dt.is_complex)
    del flat  # INVARIANT: no array over the scratch is left when it goes back
    pool.recycle(owner, 0)
    rec = eng._recycler
    return _pooled((), dt, s_owner, s, rec), _pooled((), real, l_owner, lg, rec)


def slogdet(eng: EngineBase, a: Any) -> tuple[Tensor, Tensor] | None:
    """The lean `LinalgOps.slogdet` ``(sign, logabsdet)``, or None (see `run`)."""
    result: tuple[Tensor, Tensor] | None = run(eng, a, True, _slogdet)
    return result


def _inv(eng: EngineBase, fa: Array, dt: DType, n: int, _n: int) -> Tensor | None:
    pool = eng._pool
    owner, flat = _take(eng, dt.numpy, n * n)
    flat[...] = fa
    o = _fmat(flat, n, n)
    lu, piv, info = f2py("getrf", dt)(o, overwrite_a=1)
    if lu is not o:  # pragma: no cover - f2py works in place on F-ordered input
        o[...] = lu
    if info == 0:
        inv_, info = f2py("getri", dt)(o, piv, lwork=K._lwork("getri", dt, n), overwrite_lu=1)
        if inv_ is not o:  # pragma: no cover - in place, as above
            o[...] = inv_
    del lu, o
    if info:
        del flat
        pool.recycle(owner, 0)
        return None  # singular: the general path raises the typed error
    return _pooled((n, n), dt, owner, flat, eng._recycler)


def inv(eng: EngineBase, a: Any) -> Tensor | None:
    """The lean `LinalgOps.inv`, or None (see `run`)."""
    result: Tensor | None = run(eng, a, True, _inv)
    return result


# ---------------------------------------------------------------------- Cholesky, solve
def _cholesky(eng: EngineBase, fa: Array, dt: DType, n: int, _n: int, upper: bool) -> Any:
    owner, flat = _take(eng, dt.numpy, n * n)
    flat[...] = fa
    c = _fmat(flat, n, n)
    c_, info = f2py("potrf", dt)(c, lower=int(not upper), clean=1, overwrite_a=1)
    if c_ is not c:  # pragma: no cover - f2py works in place on F-ordered input
        c[...] = c_
    del c, c_
    if info:
        del flat
        eng._pool.recycle(owner, 0)
        return None  # not positive definite: the general path raises the typed error
    return _pooled((n, n), dt, owner, flat, eng._recycler)


def cholesky(eng: EngineBase, a: Any, upper: Any) -> Tensor | None:
    """The lean `LinalgOps.cholesky`, or None (see `run`)."""
    if upper.__class__ is not bool:
        return None  # the general path validates it (before any buffer is taken)
    result: Tensor | None = run(eng, a, True, _cholesky, upper)
    return result


def _run_rhs(eng: EngineBase, a: Any, b: Any, square: bool, body: Body, *args: Any) -> Any:
    """`run` for ``body(eng, flat, dt, m, n, sb, bshape, *args)`` with a plain host
    right-hand side ``b`` ``[M]`` or ``[M, K]`` of ``a``'s dtype pinned too, or None."""
    if a.__class__ is not Tensor or b.__class__ is not Tensor:
        return None
    sb = b._st
    bshape = b._shape
    if (
        sb.__class__ is not HostBuffer
        or b._dtype is not a._dtype
        or not 1 <= len(bshape) <= 2
        or not bshape[-1]
        or a._shape[:1] != bshape[:1]
    ):
        return None
    # b pinned and checked for a writer (compiled core), then `run` pins and checks a.
    return _core_pinned(run, sb, (eng, a, square, body, sb, bshape, *args))


def solve(eng: EngineBase, a: Any, b: Any) -> Tensor | None:
    """The lean `LinalgOps.solve` for a plain host ``b`` ``[N]`` or ``[N, K]``, or None."""
    result: Tensor | None = _run_rhs(eng, a, b, True, _solve)
    return result


def _solve(
    eng: EngineBase, fa: Array, dt: DType, n: int, _n: int, sb: HostBuffer, bshape: Any
) -> Tensor | None:
    fb = sb.flat
    k = bshape[1] if len(bshape) == 2 else 1
    pool = eng._pool
    npdt = dt.numpy
    x_owner, x = _take(eng, npdt, n * k)
    x[...] = fb
    owner, flat = _take(eng, npdt, n * n)
    flat[...] = fa
    a_s = _fmat(flat, n, n)
    xm = _fmat(x, n, k)
    lu, _piv, x_, info = f2py("gesv", dt)(a_s, xm, overwrite_a=1, overwrite_b=1)
    if x_ is not xm:  # pragma: no cover - f2py works in place on F-ordered input
        xm[...] = x_
    del lu, a_s, flat, xm, x_
    pool.recycle(owner, 0)
    if info:
        del x
        pool.recycle(x_owner, 0)
        return None  # singular: the general path raises the typed error
    return _pooled(bshape, dt, x_owner, x, eng._recycler)


# ---------------------------------------------------------------------- eigenproblems
def _eigh(
    eng: EngineBase,
    fa: Array,
    dt: DType,
    n: int,
    _n: int,
    lower: int,
    vectors: bool,
    rows: bool,
) -> Any:
    # ``rows``: the matrix is fa's transpose (a C-ordered matrix's column-major owner,
    # `mirror`), written transposed into the column-major buffer LAPACK overwrites: the
    # copy the general path makes of the C-ordered view, so the same bits come out.
    a = _fmat(fa, n, n).T if rows else _fmat(fa, n, n)
    if not K.finite_triangle(a, lower):
        return None  # NaN or +-inf: the general path refuses it (typed)
    pool = eng._pool
    sizes = K._syevd_sizes(dt, n, vectors, lower)
    real = dt.real
    w_owner, w = _take(eng, real.numpy, n)
    owner, flat = _take(eng, dt.numpy, n * n)
    target = _fmat(flat, n, n)
    if rows:
        target[...] = a
    else:
        flat[...] = fa
    del a
    # The wrapper's arguments by position (a, compute_v, lower, lwork, liwork[, lrwork],
    # overwrite_a: its documented order): f2py parses keywords slower.
    w_, v_, info = f2py("syevd", dt)(target, int(vectors), lower, *sizes.values(), 1)
    if vectors and v_ is not target:  # pragma: no cover - in place on F-ordered input
        target[...] = v_
    del v_, target
    if info:
        del flat, w
        pool.recycle(owner, 0)
        pool.recycle(w_owner, 0)
        return None  # not converged: the general path raises the typed error
    w[...] = w_
    rec = eng._recycler
    values = _pooled((n,), real, w_owner, w, rec)
    if not vectors:
        del flat
        pool.recycle(owner, 0)
        return values
    return values, _pooled((n, n), dt, owner, flat, rec)


def eigh(eng: EngineBase, a: Any, uplo: str, vectors: bool, rows: bool = False) -> Any:
    """The lean `LinalgOps.eigh` (``vectors``) or ``eigvalsh``, or None (see `run`).

    ``rows``: the matrix is ``a.T`` (``a``: the column-major owner of a C-ordered
    matrix, the namespace's `linalg.eigh`), with the results the general path gives
    for that C-ordered matrix.
    """
    if uplo.__class__ is not str or uplo not in ("L", "U"):
        return None  # the general path refuses it (typed)
    return run(eng, a, True, _eigh, int(uplo == "L"), vectors, rows)


def _eig(eng: EngineBase, fa: Array, dt: DType, n: int, _n: int) -> Any:
    if not K.finite(fa):
        return None  # NaN or +-inf: the general path refuses it (typed)
    pool = eng._pool
    cdt = _COMPLEX_OF[dt]
    cnp = cdt.numpy
    w_owner, w = _take(eng, cnp, n)
    v_owner, vf = _take(eng, cnp, n * n)
    owner, flat = _take(eng, dt.numpy, n * n)
    flat[...] = fa
    a_s = _fmat(flat, n, n)
    lw = K._lwork("geev", dt, n, 0, 1)
    fn = f2py("geev", dt)
    # (w, vr, info) for complex input, (wr, wi, vr, info) for real.
    res = fn(a_s, compute_vl=0, compute_vr=1, lwork=lw, overwrite_a=1)
    del a_s, flat
    pool.recycle(owner, 0)
    if res[-1]:
        del w, vf
        pool.recycle(v_owner, 0)
        pool.recycle(w_owner, 0)
        return None  # not converged: the general path raises the typed error
    v = _fmat(vf, n, n)
    if dt.is_complex:
        w[...] = res[0]
        v[...] = res[2]
    else:
        K.real_geev_to_complex(res[0], res[1], res[3], w, v)
    del v
    rec = eng._recycler
    return _pooled((n,), cdt, w_owner, w, rec), _pooled((n, n), cdt, v_owner, vf, rec)


def eig(eng: EngineBase, a: Any) -> Any:
    """The lean `LinalgOps.eig` ``(eigenvalues, eigenvectors)``, or None (see `run`)."""
    return run(eng, a, True, _eig)


# ---------------------------------------------------------------------- QR, expm
def _qr(eng: EngineBase, fa: Array, dt: DType, m: int, n: int, complete: bool) -> Any:
    # ?geqrf on a copy of fa, R off its triangle, ?orgqr's Q in place: compiled.
    return _qr_run(eng, fa, dt, m, n, complete, False)


def _qr_run(
    eng: EngineBase, fa: Array, dt: DType, m: int, n: int, complete: bool, rows: bool
) -> Any:
    """Q and R of the ``m x n`` matrix ``fa`` holds (``rows``: its transpose, handed out
    transposed, `_qr_rows`) by one compiled call (`_core.lean_qr`: the plan, the pooled
    outputs, `_calls.qr_run`) ; None when LAPACK refuses the arguments."""
    return _lean_qr(eng, fa, dt, m, n, complete, rows)


def qr(eng: EngineBase, a: Any, mode: str) -> Any:
    """The lean `LinalgOps.qr` ``(Q, R)``, or None (see `run`)."""
    if mode.__class__ is not str or mode not in ("reduced", "complete"):
        return None  # the general path refuses it (typed)
    return run(eng, a, False, _qr, mode == "complete")


def _qr_rows(eng: EngineBase, fa: Array, dt: DType, n: int, m: int, complete: bool) -> Any:
    """`_qr` of the ``m x n`` matrix ``x`` whose transpose is the column-major ``n x m``
    ``fa`` (a C-ordered ``x``'s owner, `mirror`), with Q and R handed out transposed
    (column-major ``Q^T``, ``R^T``: the C-ordered Q and R of ``x``).

    ``?geqrf``/``?orgqr`` on a column-major copy of ``x`` (the copy every QR makes, here
    a transposing one), then one transposing copy of Q into its output (`_calls.qr_run`
    with a ``rows`` plan): for tall matrices twice as fast as the LQ of ``fa``
    (``?gelqf``/``?orglq``), which needs no transposition but runs LAPACK's slower
    row-wise reflectors.
    """
    return _qr_run(eng, fa, dt, m, n, complete, True)


def qr_rows(eng: EngineBase, a: Any, mode: str) -> Any:
    """``(Q^T, R^T)`` of ``x = a.T`` as `_qr_rows` computes them, or None (see `run`):
    the QR of a C-ordered matrix whose column-major owner is ``a``."""
    if mode.__class__ is not str or mode not in ("reduced", "complete"):
        return None  # the general path refuses it (typed)
    return run(eng, a, False, _qr_rows, mode == "complete")


def _expm(eng: EngineBase, fa: Array, dt: DType, n: int, _n: int) -> Tensor:
    owner, flat = _take(eng, dt.numpy, n * n)
    K.expm_into(_fmat(flat, n, n), _fmat(fa, n, n))
    return _pooled((n, n), dt, owner, flat, eng._recycler)


def expm(eng: EngineBase, a: Any) -> Tensor | None:
    """The lean `LinalgOps.expm`, or None (see `run`)."""
    result: Tensor | None = run(eng, a, True, _expm)
    return result


# ---------------------------------------------------------------------- SVD
def _gesdd(eng: EngineBase, fa: Array, dt: DType, m: int, n: int, jobz: bytes, outs: Any) -> int:
    """``?gesdd`` of ``fa`` into the flat outputs ``outs`` = (U, S, Vh) or (S,); info.

    The scratch (the matrix's copy, every workspace) is one pooled buffer, taken
    after the outputs and given back before returning (see `_take`).
    """
    if not K.finite(fa):
        return -4  # NaN or +-inf (gesdd may never return): the general path refuses it
    plan = K.gesdd_plan(dt, jobz, m, n)
    owner, scratch = _take(eng, dt.numpy, plan.scratch)
    # fa copied into the scratch and every address read in the compiled call.
    if len(outs) == 3:
        info = K.gesdd_run(plan, scratch, outs[1], outs[0], outs[2], fa)
    else:
        info = K.gesdd_run(plan, scratch, outs[0], scratch, scratch, fa)
    del scratch  # INVARIANT: no array over the scratch is left when it goes back
    eng._pool.recycle(owner, 0)
    return info


def _svd(
    eng: EngineBase, fa: Array, dt: DType, m: int, n: int, full: bool, vectors: bool, swapped: bool
) -> Any:
    if vectors:
        # Compiled (`_core.lean_svd`): the pooled results, ``?gesdd``, the scratch.
        return _lean_svd(eng, fa, dt, m, n, full, swapped)
    k = min(m, n)
    real = dt.real
    s_owner, s = _take(eng, real.numpy, k)
    if _gesdd(eng, fa, dt, m, n, b"N", (s,)):
        del s
        eng._pool.recycle(s_owner, 0)
        return None  # NaN input or no convergence: the general path raises
    return _pooled((k,), real, s_owner, s, eng._recycler)


def svd(eng: EngineBase, a: Any, full_matrices: Any, vectors: bool, swapped: bool = False) -> Any:
    """The lean `LinalgOps.svd` ``(U, S, Vh)`` or ``svdvals`` (S), or None (see `run`).

    ``swapped``: the caller hands the results out as ``(Vh, S, U)`` (transposed: the
    SVD of a C-ordered matrix from its column-major owner's), so they are taken from
    the pool in that order; the values are the same.
    """
    if full_matrices.__class__ is not bool:
        return None  # the general path validates it (before any buffer is taken)
    return run(eng, a, False, _svd, full_matrices, vectors, swapped)


def _svd_rows(eng: EngineBase, fa: Array, dt: DType, n: int, m: int, full: bool) -> Any:
    """The SVD of the tall ``m x n`` matrix ``x`` (``m > n``) whose transpose is the
    column-major ``n x m`` ``fa`` (a C-ordered ``x``'s owner, `mirror`), handed out as
    the SVD of ``fa`` is (`_svd`): ``(Vh^T, S, U^T)`` of ``x``, column-major, so the
    caller's `unmirror` of them gives ``x``'s C-ordered U and Vh.

    ``?gesdd`` on a column-major copy of ``x`` (the copy every SVD makes, here a
    transposing one), then one transposing copy of U and of Vh into their outputs:
    LAPACK's tall path (QR first) beats the wide one (LQ first) that ``fa`` itself
    takes, by 6-30 % from 64 x 16 to 256 x 32 (`SVD_ROWS_MIN`).
    """
    k = min(m, n)
    real = dt.real
    npdt = dt.numpy
    pool = eng._pool
    ucols, vrows = (m, n) if full else (k, k)
    jobz = b"A" if full else b"S"
    if not K.finite(fa):
        return None  # NaN or +-inf: the general path refuses it
    # Results first, in the order the caller hands them out (x's U, S, Vh: see
    # `_take`), then the scratch.
    u_owner, u = _take(eng, npdt, ucols * m)  # U^T of x: the SVD of fa's Vh
    s_owner, sv = _take(eng, real.numpy, k)
    v_owner, v = _take(eng, npdt, n * vrows)  # Vh^T of x: the SVD of fa's U
    plan = K.gesdd_plan(dt, jobz, m, n)
    at_u = plan.scratch
    at_v = at_u + m * ucols
    owner, scratch = _take(eng, npdt, at_v + vrows * n)
    _fmat(scratch[: m * n], m, n)[...] = _fmat(fa, n, m).T
    base = ptr(scratch)
    size = npdt.itemsize
    info = K.gesdd_run(plan, base, ptr(sv), base + at_u * size, base + at_v * size)
    if not info:
        _fmat(u, ucols, m)[...] = _fmat(scratch[at_u:at_v], m, ucols).T
        _fmat(v, n, vrows)[...] = _fmat(scratch[at_v : at_v + vrows * n], vrows, n).T
    del scratch  # INVARIANT: no array over a buffer is left when it goes back
    pool.recycle(owner, 0)
    if info:
        del u, sv, v
        for buf in (u_owner, s_owner, v_owner):
            pool.recycle(buf, 0)
        return None  # no convergence: the general path raises
    rec = eng._recycler
    return (
        _pooled((n, vrows), dt, v_owner, v, rec),
        _pooled((k,), real, s_owner, sv, rec),
        _pooled((ucols, m), dt, u_owner, u, rec),
    )


def svd_rows(eng: EngineBase, a: Any, full_matrices: Any) -> Any:
    """``(U, S, Vh)`` of ``a`` as `svd` gives them, computed by `_svd_rows` from ``x = a.T``
    when ``x`` is tall (``a`` wide), or None (see `run`): the SVD of a tall C-ordered
    matrix whose column-major owner is ``a``."""
    if full_matrices.__class__ is not bool or a.__class__ is not Tensor:
        return None
    shape = a._shape
    if len(shape) != 2 or shape[1] <= shape[0] or shape[0] * shape[1] < SVD_ROWS_MIN:
        # x is not tall (``a``'s own SVD is the tall or square one already), or so small
        # that the two extra transposing copies cost more than the tall path saves.
        return None
    return run(eng, a, False, _svd_rows, full_matrices)


#: The fewest elements of a tall matrix `svd_rows` factors as it is (measured, F64,
#: one thread: 32 x 8 and 32 x 16 are as fast either way, 64 x 16 and 64 x 32 gain
#: 6-14 %, 128 x 32 15 %, 256 x 32 30 %).
SVD_ROWS_MIN = 1024


def _spectral(eng: EngineBase, fa: Array, dt: DType, m: int, n: int, ord: Any) -> Any:
    k = min(m, n)
    real = dt.real
    out, o = _take(eng, real.numpy, 1)
    s_owner, s = _take(eng, real.numpy, k)
    info = _gesdd(eng, fa, dt, m, n, b"N", (s,))
    if not info:
        o[0] = K.norm_from_singular_values(s, ord)
    del s
    eng._pool.recycle(s_owner, 0)
    if info:
        del o
        eng._pool.recycle(out, 0)
        return None  # NaN input or no convergence: the general path raises
    return _pooled((), real, out, o, eng._recycler)


def spectral_norm(eng: EngineBase, a: Any, ord: Any) -> Tensor | None:
    """The lean `LinalgOps.matrix_norm` for ord 2, -2 or 'nuc', or None (see `run`)."""
    result: Tensor | None = run(eng, a, False, _spectral, ord)
    return result


# ---------------------------------------------------------------------- least squares
def lstsq(eng: EngineBase, a: Any, b: Any, rcond: float | None) -> Any:
    """The lean `LinalgOps.lstsq` for a plain host ``b`` ``[M]`` or ``[M, K]``, or None."""
    if not (rcond is None or rcond.__class__ is float or rcond.__class__ is int):
        return None
    return _run_rhs(eng, a, b, False, _lstsq, rcond)


def _lstsq(
    eng: EngineBase,
    fa: Array,
    dt: DType,
    m: int,
    n: int,
    sb: HostBuffer,
    bshape: Any,
    rcond: float | None,
) -> Any:
    fb = sb.flat
    if not (K.finite(fa) and K.finite(fb)):
        return None  # NaN or +-inf (gelsd may never return): the general path refuses it
    vector = len(bshape) == 1
    nrhs = 1 if vector else bshape[1]
    k = min(m, n)
    mx = max(m, n)
    real = dt.real
    rnp = real.numpy
    npdt = dt.numpy
    pool = eng._pool
    # Results first, in the order they are returned (see `_take`).
    x_shape = (n,) if vector else (n, nrhs)
    res_shape = (() if vector else (nrhs,)) if m > n else (0,)
    x_owner, x = _take(eng, npdt, n * nrhs)
    r_owner, res = _take(eng, rnp, (nrhs if m > n else 0))
    k_owner, rank = _take(eng, _I64, 1)
    s_owner, sv = _take(eng, rnp, k)
    a_owner, a_flat = _take(eng, npdt, m * n)
    b_owner, b_flat = _take(eng, npdt, mx * nrhs)
    a_flat[...] = fa
    b_s = _fmat(b_flat, mx, nrhs)
    b_s[:m] = _fmat(fb, m, nrhs)  # rows M..N (M < N) are LAPACK's output space
    cond = K._eps(dt) * mx if rcond is None else float(rcond)
    a_s = _fmat(a_flat, m, n)
    x_, s_, rank_, info = f2py("gelsd", dt)(
        a_s, b_s, *K.gelsd_sizes(dt, m, n, nrhs), cond=cond, overwrite_a=1, overwrite_b=1
    )
    if x_ is not b_s:  # pragma: no cover - f2py works in place on F-ordered input
        b_s[...] = x_
    del x_, a_s, a_flat
    if not info:
        _fmat(x, n, nrhs)[...] = b_s[:n]
        sv[...] = s_
        rank[0] = rank_
        if m > n:
            res[...] = K.residual_sums(b_s[n:m], rank_ == n)
    del b_s, b_flat
    pool.recycle(b_owner, 0)
    pool.recycle(a_owner, 0)
    if info:
        del x, res, rank, sv
        for buf in (s_owner, k_owner, r_owner, x_owner):
            pool.recycle(buf, 0)
        return None  # not converged: the general path raises the typed error
    rec = eng._recycler
    return (
        _pooled(x_shape, dt, x_owner, x, rec),
        _pooled(res_shape, real, r_owner, res, rec),
        _pooled((), DType.I64, k_owner, rank, rec),
        _pooled((k,), real, s_owner, sv, rec),
    )


def _pinv(eng: EngineBase, fa: Array, dt: DType, m: int, n: int, rtol: float | None) -> Any:
    k = min(m, n)
    npdt = dt.numpy
    pool = eng._pool
    out, o = _take(eng, npdt, n * m)
    u_owner, u = _take(eng, npdt, m * k)
    s_owner, s = _take(eng, dt.real.numpy, k)
    v_owner, v = _take(eng, npdt, k * n)
    info = _gesdd(eng, fa, dt, m, n, b"S", (u, s, v))
    if not info:
        cut = K._eps(dt) * max(m, n) if rtol is None else float(rtol)
        K.pinv_from_svd(_fmat(u, m, k), s, _fmat(v, k, n), cut, _fmat(o, n, m))
    del u, s, v
    for buf in (v_owner, s_owner, u_owner):
        pool.recycle(buf, 0)
    if info:
        del o
        pool.recycle(out, 0)
        return None  # NaN input or no convergence: the general path raises
    return _pooled((n, m), dt, out, o, eng._recycler)


def pinv(eng: EngineBase, a: Any, rtol: float | None) -> Tensor | None:
    """The lean `LinalgOps.pinv`, or None (see `run`)."""
    if not (rtol is None or rtol.__class__ is float or rtol.__class__ is int):
        return None
    result: Tensor | None = run(eng, a, False, _pinv, rtol)
    return result
