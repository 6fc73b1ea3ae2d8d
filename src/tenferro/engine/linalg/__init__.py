"""Linear algebra on the engine: LAPACK into pooled outputs, batch dimensions trailing.

Every operation takes ``[M, N, B...]`` operands (each matrix contiguous
column-major memory, as `dot_general` batches) and returns compact
column-major tensors from the engine's pool. Inputs are only read (borrowed)
and never modified; LAPACK works on pooled buffers (the result's own buffer
where the routine returns it in place, a pooled scratch otherwise) with its
workspace from the pool where scipy lets the caller pass it. Failures raise
`LinAlgError` (a ``numpy.linalg.LinAlgError`` too) naming the operation and the
batch index; a failed call gives every pooled buffer back. See docs/linalg.md.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ...storage.host import HostBuffer
from ...tensor import Tensor
from .._base import EngineBase
from .._core import shaped as _core_shaped
from . import _kernels as K
from . import _lean
from ._adapter import run_call

__all__ = [
    "EigResult",
    "EighResult",
    "LQResult",
    "LinalgOps",
    "LstsqResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "TruncatedSVDResult",
]


_dot_parts = K._dot_parts  # the cache itself: one dict lookup on the hot path
_sqrt = math.sqrt
_INF = math.inf


def _fro_kernel(fa: Any, flat: Any, arg: Any) -> None:
    """The Frobenius norm of ``fa`` into the one element of ``flat`` (``_core.shaped``'s
    kernel for `LinalgOps._fro_fast`): one safe 2-norm of every element (the norm does
    not depend on their order), `K.two_norm`'s common case (one BLAS dot) inlined."""
    (dot, complex_, safe_low, _real, _real_np), dt = arg
    ss = dot(fa, fa)
    if complex_:
        ss = ss.real
    # `K.two_norm`'s test: sqrt(dot) is exact unless the sum of squares overflowed,
    # is NaN, or is small enough for squares to have underflowed.
    # INVARIANT: the one element of the rank-0 result is written here.
    flat[0] = _sqrt(ss) if safe_low * len(fa) < ss < _INF else K.two_norm(fa, dt)


class SVDResult(NamedTuple):
    """``U S Vh = A``: U ``[M, K|M, B...]``, S ``[K, B...]`` descending, Vh ``[K|N, N, B...]``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class TruncatedSVDResult(NamedTuple):
    """A truncated SVD and the discarded weight (sum of the dropped ``s**2``) per matrix."""

    U: Tensor
    S: Tensor
    Vh: Tensor
    discarded: Tensor


class QRResult(NamedTuple):
    """``Q R = A`` with orthonormal columns in Q and upper-triangular R."""

    Q: Tensor
    R: Tensor


class LQResult(NamedTuple):
    """``L Q = A`` with lower-triangular L and orthonormal rows in Q."""

    L: Tensor
    Q: Tensor


class EighResult(NamedTuple):
    """Eigenvalues (ascending, real) and eigenvectors (columns) of a Hermitian matrix."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class EigResult(NamedTuple):
    """Eigenvalues and right eigenvectors (columns) of a general matrix, always complex."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SlogdetResult(NamedTuple):
    """``det = sign * exp(logabsdet)``; sign 0 and logabsdet -inf for a singular matrix."""

    sign: Tensor
    logabsdet: Tensor


class LstsqResult(NamedTuple):
    """Least squares: solution, residual sums of squares, rank, singular values."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class LinalgOps(EngineBase):
    """Linear-algebra operations of `CpuEngine` (a mixin over `EngineBase`).

    Ownership, for every method: **borrows** its operands for the call (they
    are never modified) and returns new pooled tensors (compact column-major;
    dropping them returns their buffers to this engine's pool). Operands may be
    tensors or views. Dtypes: F32, F64, C32, C64.
    """

    __slots__ = ()

    def svd(self, a: Any, full_matrices: bool = False) -> SVDResult:
        """Singular value decomposition of each matrix of ``a`` ``[M, N, B...]`` (``?gesdd``).

        Thin by default (U ``[M, K]``, Vh ``[K, N]``, K = min(M, N)); full with
        ``full_matrices=True``. S is real, descending.

        >>> import numpy as np, tenferro as tfr
        >>> eng = tfr.CpuEngine()
        >>> a = tfr.from_numpy(np.asfortranarray([[3.0, 0.0], [0.0, 4.0], [0.0, 0.0]]))
        >>> u, s, vh = eng.svd(a)
        >>> u.shape, s.to_numpy().tolist(), vh.shape
        ((3, 2), [4.0, 3.0], (2, 2))

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.svd(self, a, full_matrices, True)
        if lean is not None:
            return SVDResult(*lean)
        u, s, vh = run_call(self, "CpuEngine.svd", K.svd, a, full_matrices, True)
        return SVDResult(u, s, vh)

    def svdvals(self, a: Any) -> Tensor:
        """Singular values ``[K, B...]`` (descending) of each matrix, without vectors.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean: Tensor | None = _lean.svd(self, a, False, False)
        if lean is not None:
            return lean
        (s,) = run_call(self, "CpuEngine.svdvals", K.svd, a, False, False)
        return s

    def svd_truncated(
        self,
        a: Any,
        max_rank: int | None = None,
        cutoff: float = 0.0,
        cutoff_mode: str = "relative",
        method: str = "gesdd",
    ) -> TruncatedSVDResult:
        """A thin SVD keeping at most ``max_rank`` singular values, none below ``cutoff``.

        ``cutoff_mode="relative"`` drops ``s < cutoff * s[0]``; ``"absolute"`` drops
        ``s < cutoff``. At least one value is kept. ``discarded`` ``[B...]`` is the sum
        of the squares of the dropped values. In a batch the kept rank is the largest
        over the matrices; a matrix that keeps fewer has zeros in S past its own rank.

        ``method``:

        * ``"gesdd"`` (default): the full thin SVD (``?gesdd``), then the cut; exact
          to LAPACK's backward-stable accuracy.
        * ``"gram"``: only the leading ``r = min(max_rank, K)`` singular triplets,
          from the ``r`` largest eigenpairs of the Gram matrix (``?syrk``, then
          ``?syevr``/``?heevr`` with an index range) and a Rayleigh-Ritz step
          (``?geqrf``, the ``r x r`` SVD, ``?ormqr``). Several times faster and
          smaller when ``max_rank`` is well below ``K = min(M, N)``. U and Vh are
          orthonormal to working precision and ``||A - U S Vh||_F^2 <= discarded +
          c r eps ||A||_2^2``; values above about ``sqrt(eps) * s[0]`` are as accurate
          as gesdd's, smaller ones are not resolved individually. The discarded
          weight is ``||A||_F^2`` minus the kept weight (absolute accuracy about
          ``eps ||A||_F^2``). See docs/linalg.md.

        >>> import numpy as np, tenferro as tfr
        >>> eng = tfr.CpuEngine()
        >>> a = tfr.from_numpy(np.asfortranarray(np.diag([4.0, 3.0, 1e-3])))
        >>> u, s, vh, d = eng.svd_truncated(a, max_rank=2, method="gram")
        >>> np.round(s.to_numpy(), 12).tolist(), round(float(d.to_numpy()), 12)
        ([4.0, 3.0], 1e-06)

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        from ...errors import ValidationError

        if not isinstance(cutoff_mode, str) or cutoff_mode not in ("relative", "absolute"):
            raise ValidationError(
                "CpuEngine.svd_truncated",
                f"cutoff_mode must be 'relative' or 'absolute', got {cutoff_mode!r}",
                kind="INVALID_MODE",
            )
        if not isinstance(method, str) or method not in ("gesdd", "gram"):
            raise ValidationError(
                "CpuEngine.svd_truncated",
                f"method must be 'gesdd' (full SVD, then the cut) or 'gram' (the leading "
                f"max_rank triplets only), got {method!r}",
                kind="INVALID_MODE",
            )
        u, s, vh, d = run_call(
            self,
            "CpuEngine.svd_truncated",
            K.svd_truncated,
            a,
            max_rank,
            cutoff,
            cutoff_mode == "relative",
            method,
        )
        return TruncatedSVDResult(u, s, vh, d)

    def qr(self, a: Any, mode: str = "reduced") -> QRResult:
        """QR decomposition (``?geqrf`` + ``?orgqr``/``?ungqr``), ``mode`` reduced or complete.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.qr(self, a, mode)
        if lean is not None:
            return QRResult(*lean)
        q, r = run_call(self, "CpuEngine.qr", K.qr, a, mode)
        return QRResult(q, r)

    def lq(self, a: Any, mode: str = "reduced") -> LQResult:
        """LQ decomposition (``?gelqf`` + ``?orglq``/``?unglq``), ``mode`` reduced or complete.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lo, q = run_call(self, "CpuEngine.lq", K.lq, a, mode)
        return LQResult(lo, q)

    def eigh(self, a: Any, uplo: str = "L") -> EighResult:
        """Eigen-decomposition of Hermitian matrices (``?syevd``/``?heevd``), reading ``uplo``.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.eigh(self, a, uplo, True)
        if lean is not None:
            return EighResult(*lean)
        w, v = run_call(self, "CpuEngine.eigh", K.eigh, a, uplo, True)
        return EighResult(w, v)

    def eigvalsh(self, a: Any, uplo: str = "L") -> Tensor:
        """Eigenvalues ``[N, B...]`` (ascending, real) of Hermitian matrices.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean: Tensor | None = _lean.eigh(self, a, uplo, False)
        if lean is not None:
            return lean
        (w,) = run_call(self, "CpuEngine.eigvalsh", K.eigh, a, uplo, False)
        return w

    def eig(self, a: Any) -> EigResult:
        """Eigenvalues and right eigenvectors of general square matrices (``?geev``), complex.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.eig(self, a)
        if lean is not None:
            return EigResult(*lean)
        w, v = run_call(self, "CpuEngine.eig", K.eig, a)
        return EigResult(w, v)

    def cholesky(self, a: Any, upper: bool = False) -> Tensor:
        """Cholesky factor (``?potrf``): L with ``L L^H = A``, or U with ``U^H U = A``.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.cholesky(self, a, upper)
        if lean is not None:
            return lean
        (c,) = run_call(self, "CpuEngine.cholesky", K.cholesky, a, upper)
        return c

    def solve(self, a: Any, b: Any) -> Tensor:
        """X with ``A X = B`` (``?gesv``); b is ``[N, K, B...]`` or ``[N, B...]``.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.solve(self, a, b)
        if lean is not None:
            return lean
        (x,) = run_call(self, "CpuEngine.solve", K.solve, a, b)
        return x

    def inv(self, a: Any) -> Tensor:
        """Inverse of each square matrix (``?getrf`` + ``?getri``, in the output's buffer).

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.inv(self, a)
        if lean is not None:
            return lean
        (x,) = run_call(self, "CpuEngine.inv", K.inv, a)
        return x

    def det(self, a: Any) -> Tensor:
        """Determinant ``[B...]`` of each square matrix (LU); 0 for a singular one.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.det(self, a)
        if lean is not None:
            return lean
        (d,) = run_call(self, "CpuEngine.det", K.det, a)
        return d

    def slogdet(self, a: Any) -> SlogdetResult:
        """Sign and log of the absolute determinant, ``[B...]`` each.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.slogdet(self, a)
        if lean is not None:
            return SlogdetResult(*lean)
        s, la = run_call(self, "CpuEngine.slogdet", K.slogdet, a)
        return SlogdetResult(s, la)

    def lstsq(self, a: Any, b: Any, rcond: float | None = None) -> LstsqResult:
        """Least-squares solution of ``A X = B`` (``?gelsd``).

        ``rcond``: singular values ``<= rcond * s[0]`` count as zero (default
        ``eps * max(M, N)``). ``residuals``: sums of squared residuals per
        right-hand side when M > N (NaN for a rank-deficient matrix), else shape
        ``(0,)``. ``rank``: I64 ``[B...]``.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.lstsq(self, a, b, rcond)
        if lean is not None:
            return LstsqResult(*lean)
        x, res, rank, sv = run_call(self, "CpuEngine.lstsq", K.lstsq, a, b, rcond)
        return LstsqResult(x, res, rank, sv)

    def pinv(self, a: Any, rtol: float | None = None) -> Tensor:
        """Moore-Penrose pseudo-inverse ``[N, M, B...]`` via the SVD.

        Singular values ``<= rtol * s[0]`` are treated as zero (default ``eps * max(M, N)``).

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.pinv(self, a, rtol)
        if lean is not None:
            return lean
        (p,) = run_call(self, "CpuEngine.pinv", K.pinv, a, rtol)
        return p

    def matrix_norm(self, a: Any, ord: Any = "fro") -> Tensor:
        """Matrix norm ``[B...]`` (real): 'fro', 'nuc', 1, -1, 2, -2, inf, -inf.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        kind = ord.__class__
        if kind is str and ord == "fro":
            if a.__class__ is Tensor:
                r = self._fro_fast(a)
                if r is not None:
                    return r
        elif (kind is int and ord in (2, -2)) or (kind is str and ord == "nuc"):
            lean = _lean.spectral_norm(self, a, ord)
            if lean is not None:
                return lean
        (n,) = run_call(self, "CpuEngine.matrix_norm", K.matrix_norm, a, ord)
        return n

    def _fro_fast(self, a: Tensor) -> Tensor | None:
        """The Frobenius norm of one non-empty plain host matrix, or None.

        The hot path of ``matrix_norm(a)``, as `_full_fast` is for reductions: the
        compiled per-operation protocol (`_core.shaped`) running `_fro_kernel` into
        a one-element pooled buffer. It skips the general path's operand, output
        and batch bookkeeping, which cost three times numpy's whole call on a
        64 x 64 matrix, with the dtype's parts looked up once.
        """
        st = a._st
        dt = a._dtype
        parts = _dot_parts.get(dt) or K.dot_parts(dt)
        if st.__class__ is not HostBuffer or len(a._shape) != 2 or parts is None:
            return None
        # The per-operation protocol, compiled (engine/_core.pyx); None for an empty
        # or exclusively borrowed operand (the general path handles or refuses it).
        return _core_shaped(_fro_kernel, a, (), 1, parts[3], self, (parts, dt))

    def vector_norm(
        self, x: Any, axes: Any = None, keepdims: bool = False, ord: float = 2
    ) -> Tensor:
        """Vector norm over ``axes`` (None: all elements), real; BLAS dot for the 2-norm.

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        (n,) = run_call(
            self,
            "CpuEngine.vector_norm",
            K.vector_norm,
            x,
            axes,
            keepdims,
            ord,
        )
        return n

    def expm(self, a: Any) -> Tensor:
        """Matrix exponential of each square matrix (``scipy.linalg.expm``).

        Ownership: **borrows** the operands (never modified); results are new pooled tensors.
        """
        lean = _lean.expm(self, a)
        if lean is not None:
            return lean
        (e,) = run_call(self, "CpuEngine.expm", K.expm, a)
        return e
