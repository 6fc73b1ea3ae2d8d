"""What every linear-algebra kernel shares: the LAPACK dtypes, dtype and matrix
checks, batch iteration, LAPACK info and workspace queries, triangles."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import DTypeError, LinAlgError, ValidationError
from ._adapter import Array, LinalgCall, Shape
from ._calls import all_finite
from ._lapack import (
    byref,
    f2py,
    info_int,
    lwork_from,
    ptr,
    raw,
    ref_int,
    remember,
)

_LAPACK_T = (DType.F32, DType.F64, DType.C32, DType.C64)
_COMPLEX_OF = {
    DType.F32: DType.C32,
    DType.F64: DType.C64,
    DType.C32: DType.C32,
    DType.C64: DType.C64,
}
_I32 = np.dtype(np.int32)
_ALL = slice(None)


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
            f"{what} must be square in its first two dimensions",
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
    Both the lean path (`_lean`) and the general path (the kernels) call it.
    A contiguous matrix of a LAPACK dtype takes one compiled pass over its memory
    (`_calls.all_finite`: 0.1 us on a 16 x 16 matrix, where ``isfinite(a).all()``
    costs 3.5 us and scipy's BLAS ``?dot`` of it with itself 1 us of wrapper);
    anything else is checked entry by entry.
    """
    single = _SINGLE.get(arr.dtype)
    if single is not None:
        try:
            return all_finite(arr, single)
        except (BufferError, ValueError):
            pass  # not contiguous
    return bool(np.isfinite(arr).all())


#: The LAPACK dtypes `all_finite` reads: True for single precision.
_SINGLE = {
    np.dtype(np.float32): True,
    np.dtype(np.complex64): True,
    np.dtype(np.float64): False,
    np.dtype(np.complex128): False,
}


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
