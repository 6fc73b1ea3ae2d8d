"""``tenferro.linalg``: the array API ``linalg`` extension over the engine's operations.

Signatures follow the array API standard (``svd(x, /, *, full_matrices=True)``,
``qr(x, /, *, mode="reduced")``, ``eigh(x)``, ...; results as named tuples), so
autoray-based callers (quimb, cotengra) can use ``tenferro.linalg`` in place of
``numpy.linalg``. Each function runs on the calling thread's default engine
(``with eng:`` chooses it) and returns pooled outputs.

Batch convention: the array API puts batch dimensions first (``[..., M, N]``);
the engine puts them last (``[M, N, ...]``, each matrix contiguous). For a
batched input these functions hand the engine a transposed *view* of the same
memory (no copy), and return transposed views of the engine's outputs (a
`TensorView` with leading batch dimensions; no copy). For 2-D input the two
conventions coincide and the results are plain `Tensor`\\ s.

Ownership, for every function: **borrows** its inputs (never modified) and
returns new pooled results (views of new pooled results when batched).

>>> import numpy as np, tenferro as tfr
>>> a = tfr.from_numpy(np.asfortranarray([[2.0, 0.0], [0.0, 3.0]]))
>>> w, v = tfr.linalg.eigh(a)
>>> w.to_numpy().tolist()
[2.0, 3.0]
"""

from __future__ import annotations

import sys as _sys
from typing import Any

import numpy as np

from ..engine.cpu import CpuEngine, default_engine
from ..engine.linalg import (
    EighResult,
    EigResult,
    LQResult,
    LstsqResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    TruncatedSVDResult,
    _lean,
)
from ..errors import ValidationError
from ..namespace import _interop
from ..namespace._adapter import compute, emit, mirror, unmirror
from ..namespace._contraction import matmul as _matmul
from ..namespace._core import axes_tuple, broadcast_shapes, flag_param
from ..namespace._manipulation import broadcast_to, reshape, squeeze
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import TensorView
from ._products import cross, diagonal, matrix_power, outer, tensordot, trace, vecdot

__all__ = [
    "EigResult",
    "EighResult",
    "LQResult",
    "LstsqResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "TruncatedSVDResult",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvalsh",
    "expm",
    "inv",
    "lq",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "norm",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svd_truncated",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]

#: What these functions return: a Tensor, or a view of one for batched input.
ArrayLike = Tensor | TensorView

#: A result named tuple from its fields, as its own ``__new__`` makes it (half the cost:
#: no Python frame), on the per-call paths of `svd` and `qr`.
_new_tuple = tuple.__new__


# ---------------------------------------------------------------------- batch views
def _ndim(x: Any, op: str) -> int:
    if not isinstance(x, (Tensor, TensorView)):
        raise ValidationError(
            op,
            f"expected a tenferro Tensor or TensorView, got {type(x).__name__}; "
            "wrap numpy data with tenferro.from_numpy (adopts) first",
            kind="INVALID_OPERAND",
            operand_type=type(x).__name__,
        )
    return len(x.shape)


def _view(x: Any) -> Any:
    return x.as_view() if isinstance(x, Tensor) else x


def _trailing(x: Any, op: str, core: int = 2) -> tuple[Any, int]:
    """``x`` with its ``core`` last axes moved first (a view when batched), and the batch rank."""
    nd = _ndim(x, op)
    if nd < core:
        raise ValidationError(
            op,
            f"expected at least {core} dimensions, got shape {tuple(x.shape)}",
            kind="INVALID_RANK",
            shape=tuple(x.shape),
        )
    nb = nd - core
    if nb == 0:
        return x, 0
    perm = tuple(range(nb, nd)) + tuple(range(nb))
    return _view(x).transpose_view(perm), nb


def _c_owner(x: Any) -> Tensor | None:
    """The column-major owner a C-ordered matrix view is the transpose of (`mirror`), or None.

    A factorisation of ``x = m.T`` is read off one of ``m``: the QR of ``x`` is the
    transposed LQ of ``m``, the SVD of ``x`` the swapped, transposed SVD of ``m``;
    the factors come back C-ordered (`unmirror`), so a row-major reshape of them
    is a view, as it is for numpy's.
    """
    if x.__class__ is not TensorView or len(x._shape) != 2:
        return None
    return mirror(x)


def _f_owner(x: Any) -> Tensor | None:
    """The column-major owner a column-major matrix view covers whole, or None.

    The view of a whole compact F-ordered buffer (what a transposed C-ordered result
    or quimb's fused legs often are) is that buffer's matrix: its factorisation is
    the owner's, which takes the engine's lean LAPACK path (views take the general
    one). Like `mirror`'s, the tensor is an operand only: never handed out, it owns
    and moves nothing, and engine calls pin and check its buffer as any tensor's.
    """
    if x.__class__ is not TensorView or x._offset:
        return None
    src = x._source
    shape = x._shape
    if src.__class__ is not HostBuffer or len(shape) != 2 or x._strides != (1, shape[0]):
        return None
    flat = src.flat
    want = x._dtype.numpy
    if len(flat) != shape[0] * shape[1] or (flat.dtype is not want and flat.dtype != want):
        return None
    return Tensor._wrap(shape, x._dtype, src)


def _leading(t: Tensor, nb: int, core: int = 2) -> ArrayLike:
    """An engine result ``[core..., B...]`` as the array API's ``[B..., core...]`` view."""
    if nb == 0:
        return t
    perm = tuple(range(core, core + nb)) + tuple(range(core))
    view: TensorView = t.as_view().transpose_view(perm)
    return view


# ---------------------------------------------------------------------- array API functions
def _flag(value: Any, name: str, op: str) -> Any:
    """A flag given as an array (a numpy operand's or a tensor's truth is ambiguous) is
    refused (`ValidationError` INVALID_ARGUMENT) before anything is computed; anything
    else goes on as before."""
    return value if value.__class__ is bool else flag_param(value, name, op)


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """``(U, S, Vh)`` with ``U @ diag(S) @ Vh == x``; S descending (array API ``svd``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    m = _c_owner(x)
    if m is not None and full_matrices.__class__ is bool:
        eng = default_engine()
        # The engine's lean path straight away (what `CpuEngine.svd` tries first), saving
        # a method call and a result tuple per call; its general path where that declines.
        # A tall x is factored as it is (LAPACK's faster tall path), not as m's wide SVD.
        lean = None
        if eng.__class__ is CpuEngine:
            lean = _lean.svd_rows(eng, m, full_matrices) or _lean.svd(
                eng, m, full_matrices, True, True
            )
        u, s, vh = lean if lean is not None else eng.svd(m, full_matrices=full_matrices)
        return _new_tuple(SVDResult, (unmirror(vh), s, unmirror(u)))
    f = _f_owner(x)
    if f is not None:
        return default_engine().svd(f, full_matrices=full_matrices)
    a, nb = _trailing(x, "linalg.svd")
    full_matrices = _flag(full_matrices, "full_matrices", "linalg.svd")
    u, s, vh = default_engine().svd(a, full_matrices=full_matrices)
    return SVDResult(_leading(u, nb), _leading(s, nb, 1), _leading(vh, nb))  # type: ignore[arg-type]


def svdvals(x: Any, /) -> ArrayLike:
    """Singular values, descending (array API ``svdvals``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, nb = _trailing(x, "linalg.svdvals")
    return _leading(default_engine().svdvals(a), nb, 1)


def svd_truncated(
    x: Any,
    /,
    *,
    max_rank: int | None = None,
    cutoff: float = 0.0,
    cutoff_mode: str = "relative",
) -> TruncatedSVDResult:
    """Thin SVD truncated to ``max_rank`` and ``cutoff`` (see `CpuEngine.svd_truncated`).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    m = _c_owner(x)
    if m is not None:
        u, s, vh, d = default_engine().svd_truncated(m, max_rank, cutoff, cutoff_mode)
        return TruncatedSVDResult(unmirror(vh), s, unmirror(u), d)
    a, nb = _trailing(x, "linalg.svd_truncated")
    u, s, vh, d = default_engine().svd_truncated(a, max_rank, cutoff, cutoff_mode)
    return TruncatedSVDResult(
        _leading(u, nb),  # type: ignore[arg-type]
        _leading(s, nb, 1),  # type: ignore[arg-type]
        _leading(vh, nb),  # type: ignore[arg-type]
        d,
    )


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """``(Q, R)`` with ``Q @ R == x`` (array API ``qr``; mode 'reduced' or 'complete').

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    m = _c_owner(x) if mode.__class__ is str and mode in ("reduced", "complete") else None
    if m is not None:
        eng = default_engine()
        lean = _lean.qr_rows(eng, m, mode)
        if lean is not None:
            # ?geqrf on a transposed copy: faster than the LQ of m for tall matrices.
            return _new_tuple(QRResult, (unmirror(lean[0]), unmirror(lean[1])))
        lo, qt = eng.lq(m, mode)
        return QRResult(unmirror(qt), unmirror(lo))
    f = _f_owner(x)
    if f is not None:
        return default_engine().qr(f, mode)
    a, nb = _trailing(x, "linalg.qr")
    q, r = default_engine().qr(a, mode)
    return QRResult(_leading(q, nb), _leading(r, nb))  # type: ignore[arg-type]


def lq(x: Any, /, *, mode: str = "reduced") -> LQResult:
    """``(L, Q)`` with ``L @ Q == x`` (mode 'reduced' or 'complete').

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    m = _c_owner(x) if mode.__class__ is str and mode in ("reduced", "complete") else None
    if m is not None:
        qt, r = default_engine().qr(m, mode)
        return LQResult(unmirror(r), unmirror(qt))
    a, nb = _trailing(x, "linalg.lq")
    lo, q = default_engine().lq(a, mode)
    return LQResult(_leading(lo, nb), _leading(q, nb))  # type: ignore[arg-type]


def eigh(x: Any, /, *, UPLO: str = "L") -> EighResult:
    """``(eigenvalues, eigenvectors)`` of Hermitian matrices, eigenvalues ascending.

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    m = _c_owner(x)
    if m is not None:
        eng = default_engine()
        if eng.__class__ is CpuEngine:
            # A C-ordered matrix: the lean path from its column-major owner, copied
            # transposed into LAPACK's buffer (the general path's copy of the view).
            lean = _lean.eigh(eng, m, UPLO, True, True)
            if lean is not None:
                return _new_tuple(EighResult, lean)
    a, nb = _trailing(x, "linalg.eigh")
    w, v = default_engine().eigh(a, UPLO)
    return EighResult(_leading(w, nb, 1), _leading(v, nb))  # type: ignore[arg-type]


def eigvalsh(x: Any, /, *, UPLO: str = "L") -> ArrayLike:
    """Eigenvalues of Hermitian matrices, ascending (array API ``eigvalsh``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    m = _c_owner(x)
    if m is not None:
        eng = default_engine()
        if eng.__class__ is CpuEngine:
            lean = _lean.eigh(eng, m, UPLO, False, True)  # as in `eigh`
            if lean is not None:
                return lean  # type: ignore[no-any-return]
    a, nb = _trailing(x, "linalg.eigvalsh")
    return _leading(default_engine().eigvalsh(a, UPLO), nb, 1)


def eig(x: Any, /) -> EigResult:
    """``(eigenvalues, eigenvectors)`` of general square matrices; always complex.

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, nb = _trailing(x, "linalg.eig")
    w, v = default_engine().eig(a)
    return EigResult(_leading(w, nb, 1), _leading(v, nb))  # type: ignore[arg-type]


def cholesky(x: Any, /, *, upper: bool = False) -> ArrayLike:
    """Cholesky factor (array API ``cholesky``): L (or U with ``upper=True``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, nb = _trailing(x, "linalg.cholesky")
    return _leading(default_engine().cholesky(a, _flag(upper, "upper", "linalg.cholesky")), nb)


def _solve_operands(x1: Any, x2: Any, op: str) -> tuple[Any, Any, int, bool]:
    """``x1`` and ``x2`` as the engine takes them (batch trailing), the batch rank, and
    whether ``x2`` was one vector standing for ``(..., M, 1)`` (drop that axis after).

    Batch shapes broadcast into views with zero strides, never copies: the engine
    copies both operands into its LAPACK scratch anyway (``?gesv`` overwrites
    them). Unbatched operands (the common case) skip broadcasting entirely.
    """
    n1, n2 = _ndim(x1, op), _ndim(x2, op)
    if n1 < 2:
        raise ValidationError(
            op,
            f"x1 needs rank >= 2 (..., M, M), got shape {tuple(x1.shape)}",
            kind="INVALID_RANK",
            shape=tuple(x1.shape),
        )
    vector = False
    if n1 > 2 or n2 > 2:
        batch1 = tuple(x1.shape[:-2])
        if n2 == 1:
            column = reshape(x2, (x2.shape[0], 1))
            x2, vector = broadcast_to(column, (*batch1, x2.shape[0], 1)), True
        else:
            batch = broadcast_shapes(op, batch1, tuple(x2.shape[:-2]))
            x1 = broadcast_to(x1, (*batch, *x1.shape[-2:]))
            x2 = broadcast_to(x2, (*batch, *x2.shape[-2:]))
    a, nb = _trailing(x1, op)
    b = x2 if len(x2.shape) == 1 else _trailing(x2, op)[0]
    return a, b, nb, vector


def solve(x1: Any, x2: Any, /) -> ArrayLike:
    """X with ``x1 @ X == x2`` (array API ``solve``; x2 is ``(..., M, K)`` or ``(M,)``).

    The batch dimensions of ``x1`` and ``x2`` broadcast, as the standard says; a
    1-D ``x2`` is one right-hand side for every matrix of the stack.

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, b, nb, vector = _solve_operands(x1, x2, "linalg.solve")
    result = _leading(default_engine().solve(a, b), nb)
    return squeeze(result, axis=-1) if vector else result


def lstsq(x1: Any, x2: Any, /, *, rcond: float | None = None) -> LstsqResult:
    """Least squares for 2-D ``x1`` (see `CpuEngine.lstsq`); numpy's result order.

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    if _ndim(x1, "linalg.lstsq") != 2:
        raise ValidationError(
            "linalg.lstsq",
            "lstsq takes a 2-D matrix here; use CpuEngine.lstsq for batches [M, N, B...]",
            kind="INVALID_RANK",
            shape=tuple(x1.shape),
        )
    if rcond is not None and not isinstance(rcond, (*_REAL_SCALARS, Tensor, TensorView)):
        raise ValidationError(
            "linalg.lstsq",
            f"rcond must be None or a real number, got {type(rcond).__name__}",
            kind="INVALID_ARGUMENT",
        )
    return default_engine().lstsq(x1, x2, rcond)


def inv(x: Any, /) -> ArrayLike:
    """Inverse of square matrices (array API ``inv``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, nb = _trailing(x, "linalg.inv")
    return _leading(default_engine().inv(a), nb)


def det(x: Any, /) -> Tensor:
    """Determinants, shape ``(...)`` (array API ``det``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, _ = _trailing(x, "linalg.det")
    return default_engine().det(a)


def slogdet(x: Any, /) -> SlogdetResult:
    """``(sign, logabsdet)``, shape ``(...)`` each (array API ``slogdet``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, _ = _trailing(x, "linalg.slogdet")
    return default_engine().slogdet(a)


def pinv(x: Any, /, *, rtol: Any = None) -> ArrayLike:
    """Moore-Penrose pseudo-inverse (array API ``pinv``).

    Singular values at or below ``rtol * max(s)`` count as zero (default
    ``rtol``: ``eps * max(M, N)``). ``rtol`` may be a number (the engine's
    ``pinv``, one LAPACK pass) or an array broadcasting against the batch shape
    ``(...)``, as the standard says (then from the thin SVD, one cut per matrix).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    op = "linalg.pinv"
    if not isinstance(rtol, (Tensor, TensorView)):
        if rtol is not None and (
            isinstance(rtol, bool) or not isinstance(rtol, (int, float, np.floating))
        ):
            raise ValidationError(
                op,
                f"rtol must be None, a real number or a tenferro array, got "
                f"{type(rtol).__name__}; wrap numpy data with tenferro.asarray",
                kind="INVALID_ARGUMENT",
            )
        a, nb = _trailing(x, op)
        return _leading(default_engine().pinv(a, None if rtol is None else float(rtol)), nb)
    _ndim(x, op)
    _check_rtol(rtol, x.shape[:-2], op, exact=True)
    u, sv, vh = svd(x, full_matrices=False)
    m, n = x.shape[-2], x.shape[-1]

    def pseudo_inverse(u: Any, s: Any, vh: Any, tolerance: Any) -> Any:
        if s.shape[-1] == 0:
            return np.zeros((*s.shape[:-1], n, m), u.dtype)
        cut = np.asarray(tolerance)[..., None] * s.max(axis=-1, keepdims=True)
        keep = s > cut
        s_inv = np.divide(1, s, out=np.zeros_like(s), where=keep)
        return (np.conj(np.swapaxes(vh, -1, -2)) * s_inv[..., None, :]) @ np.conj(
            np.swapaxes(u, -1, -2)
        )

    result: ArrayLike = emit(op, compute(op, pseudo_inverse, (u, sv, vh, rtol)))
    return result


#: What `matrix_rank` takes as a number ``rtol`` (numpy compares with any of them).
_REAL_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def _check_rtol(rtol: Any, batch: tuple[int, ...], op: str, exact: bool) -> None:
    """Refuse an array ``rtol`` that does not broadcast against the batch shape (to
    exactly it where ``exact``: `pinv` writes one cut per matrix) before the SVD runs:
    refused after it, the SVD's pooled factors would stay counted as live while the
    error's traceback holds them."""
    if not isinstance(rtol, (Tensor, TensorView)):
        if rtol is not None and not isinstance(rtol, _REAL_SCALARS):
            raise ValidationError(
                op,
                f"rtol must be None, a real number or a tenferro array, got "
                f"{type(rtol).__name__}; wrap numpy data with tenferro.asarray",
                kind="INVALID_ARGUMENT",
            )
        return
    try:
        shape = np.broadcast_shapes(rtol.shape, batch)
    except ValueError:
        shape = None
    if shape is None or (exact and shape != batch):
        raise ValidationError(
            op,
            f"rtol of shape {rtol.shape} does not broadcast against the batch shape "
            f"{batch} of the matrices",
            kind="INVALID_ARGUMENT",
        )


def matrix_rank(x: Any, /, *, rtol: Any = None) -> ArrayLike:
    """Numerical rank of each matrix (``(..., M, N)`` -> ``(...)``, int64).

    Singular values above ``rtol * max(s)`` count (default ``rtol``:
    ``eps * max(M, N)``); ``rtol`` may be a number or an array broadcasting
    against ``(...)``, as the standard says.

    Ownership: **borrows** the input; the result is a new pooled tensor.
    """
    op = "linalg.matrix_rank"
    nd = _ndim(x, op)
    if nd < 2:
        raise ValidationError(
            op, f"needs rank >= 2 (..., M, N), got {nd}", kind="INVALID_RANK", shape=tuple(x.shape)
        )
    m, n = x.shape[-2], x.shape[-1]
    _check_rtol(rtol, x.shape[:-2], op, exact=False)
    sv = svdvals(x)

    def rank(values: Any, tolerance: Any) -> Any:
        if values.shape[-1] == 0:
            return np.zeros(values.shape[:-1], np.int64)
        if tolerance is None:
            tolerance = np.finfo(values.dtype).eps * max(m, n)
        cut = np.asarray(tolerance)[..., None] * values.max(axis=-1, keepdims=True)
        return np.asarray(np.count_nonzero(values > cut, axis=-1), dtype=np.int64)

    return emit(op, compute(op, rank, (sv, rtol)))


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> ArrayLike:
    """Matrix norm over the last two axes (array API ``matrix_norm``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, nb = _trailing(x, "linalg.matrix_norm")
    keepdims = _flag(keepdims, "keepdims", "linalg.matrix_norm")  # before the norm is computed
    out = default_engine().matrix_norm(a, ord)
    if not keepdims:
        return out
    shape = (*tuple(x.shape)[:nb], 1, 1)
    view: TensorView = out.as_view().reshape_view(shape)
    return view


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: float = 2) -> Tensor:
    """Vector norm over ``axis`` (None: all elements; array API ``vector_norm``).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    nd = _ndim(x, "linalg.vector_norm")
    keepdims = _flag(keepdims, "keepdims", "linalg.vector_norm")
    if axis is not None and axis.__class__ is not int:
        axes_tuple(axis, nd, "linalg.vector_norm")  # typed refusals (numpy's overflow is not)
    return default_engine().vector_norm(x, axis, keepdims, ord)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> ArrayLike:
    """``numpy.linalg.norm`` semantics, for callers written against numpy (autoray).

    ``axis=None``: the 2-norm of all elements when ``ord`` is None, else the
    matrix norm of a 2-D ``x`` or the vector norm of a 1-D ``x``; an int axis:
    vector norms; a pair of axes: matrix norms over them.

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    op = "linalg.norm"
    nd = _ndim(x, op)
    if axis is None:
        if ord is None or nd == 1:
            return vector_norm(x, keepdims=keepdims, ord=2 if ord is None else ord)
        if nd == 2:
            return matrix_norm(x, keepdims=keepdims, ord=ord)
        raise ValidationError(
            op,
            "ord needs axis for inputs of more than 2 dimensions",
            kind="INVALID_AXES",
            axes=axis,
        )
    if isinstance(axis, int):
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    try:
        a0, a1 = (int(ax) % nd for ax in axis)
    except (TypeError, ValueError):
        raise ValidationError(
            op,
            f"axis must be None, an int or a pair of ints, got {axis!r}",
            kind="INVALID_AXES",
            axes=axis,
        ) from None
    if a0 == a1:
        raise ValidationError(op, f"duplicate axes {axis!r}", kind="INVALID_AXES", axes=axis)
    if keepdims:
        raise ValidationError(
            op,
            "keepdims with a pair of axes is not supported here",
            kind="INVALID_AXES",
            axes=axis,
        )
    rest = tuple(i for i in range(nd) if i not in (a0, a1))
    moved = _view(x).transpose_view((a0, a1, *rest)) if (a0, a1) != (0, 1) or rest else x
    return default_engine().matrix_norm(moved, "fro" if ord is None else ord)


def expm(x: Any, /) -> ArrayLike:
    """Matrix exponential of square matrices (``scipy.linalg.expm`` per matrix).

    Ownership: **borrows** the input; results are new pooled tensors (views of them if batched).
    """
    a, nb = _trailing(x, "linalg.expm")
    return _leading(default_engine().expm(a), nb)


def matmul(x1: Any, x2: Any, /) -> ArrayLike:
    """`tenferro.matmul` (the extension's alias): the array API's rules, 1-D operands
    and broadcast leading batch axes included.

    Ownership: **borrows** the inputs; the result is a new pooled tensor.
    """
    return _matmul(x1, x2)


def matrix_transpose(x: Any, /) -> TensorView:
    """The last two axes swapped (array API ``matrix_transpose``).

    Ownership: **borrows**: a view of the same memory, no copy.
    """
    nd = _ndim(x, "linalg.matrix_transpose")
    if nd < 2:
        raise ValidationError(
            "linalg.matrix_transpose",
            "needs at least 2 dimensions",
            kind="INVALID_RANK",
            shape=tuple(x.shape),
        )
    perm = (*range(nd - 2), nd - 1, nd - 2)
    view: TensorView = _view(x).transpose_view(perm)
    return view


def __dir__() -> list[str]:
    """The module's public names only (its functions and result types), not the
    helpers it imports (``np``, ``Tensor``, ``default_engine``, ...)."""
    return sorted(__all__)


# numpy operands (ndarrays, numpy scalars) are borrowed for the call, as by every
# namespace function (`namespace._interop`): a refused call is run again on borrows.
_interop.wrap_functions(_sys.modules[__name__], __all__)
