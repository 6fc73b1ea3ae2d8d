"""Statistical, searching, sorting, set and utility functions.

Each reads its operands without copying and writes its result into a new
pooled tensor of the default engine (Ownership: **computes**).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple, cast

import numpy as np

from ..dtype import DType
from ..engine.interface import axes_reduction, current, full_reduction, shaped
from ..errors import NUMPY_REFUSALS, PASSED_ON, ValidationError, numpy_refusal
from ..layout import quick_axes, shape_size
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import TensorView
from ._adapter import Result, compute, compute_into, emit, mirror, unmirror
from ._core import (
    axes_tuple,
    check_array,
    check_category,
    dtype_arg,
    flag_param,
    int_param,
    normalize_axis,
    number_param,
    operand_dtype,
    scalar_to,
)

# numpy's stubs cannot type some calls with runtime-chosen arguments.
_np: Any = np


_FLOATING = (DType.F64, DType.F32, DType.C64, DType.C32)
Shape = tuple[int, ...]


def _mirrored(op: str, x: Any, axis: Any) -> tuple[Any, Any] | None:
    """``(owner, axes)``: a C-ordered view's column-major owner (`mirror`) and ``axis``
    in the owner's reversed axes, or None. The reduction of the owner over those
    axes, reversed (`unmirror`), is the reduction of the view in C order."""
    if x.__class__ is not TensorView:
        return None
    m = mirror(x)
    if m is None:
        return None
    if axis is None:
        return m, None
    last = len(m._shape) - 1
    # One int or a tuple of ints (the common case), else the full check and its error.
    axes = quick_axes(axis, last + 1) or axes_tuple(axis, last + 1, op)
    assert axes is not None
    return m, tuple(last - i for i in axes)


def _reduce(
    op: str, x: Any, fn: Any, axis: Any, category: str, out: DType | None = None, **kw: Any
) -> Result:
    """``fn(x, axis=..., out=...)`` written straight into a pooled output (C-ordered
    views reduce their owner, so the result keeps their memory order)."""
    hit = _mirrored(op, x, axis)
    if hit is not None:
        mirrored: Result = unmirror(_reduce(op, hit[0], fn, hit[1], category, out, **kw))
        return mirrored
    check_array(x, op)
    dt = x.dtype
    check_category(op, dt, category)
    axes = axes_tuple(axis, x.ndim, op)
    keep = kw.get("keepdims", False)
    if keep is not False and keep is not True:
        keep = kw["keepdims"] = flag_param(keep, "keepdims", op)
    reduced = range(x.ndim) if axes is None else axes
    shape = tuple(
        1 if i in reduced else d for i, d in enumerate(x.shape) if keep or i not in reduced
    )

    def kernel(nd: Any, a: Any) -> None:
        # A reduction with out= writes every element of its output.
        fn(a, axis=axes, out=nd, **kw)

    try:
        res: Result = compute_into(op, shape, out or dt, kernel, (x,))
        return res
    except PASSED_ON:
        raise
    except NUMPY_REFUSALS as exc:
        raise numpy_refusal(op, exc) from None


def _not_bool(value: Any) -> bool:
    return value.__class__ is not bool


def _all_axes(x: Any) -> Any:
    """Every axis of an array (for ``keepdims`` with ``axis=None``), or None."""
    shape = getattr(x, "_shape", None)
    return None if shape is None else _every_axis(len(shape))


@functools.cache
def _every_axis(rank: int) -> tuple[int, ...]:
    return tuple(range(rank))


def _sum_dtype(x: Any, dtype: Any, op: str) -> DType:
    """The standard's default accumulation dtype: int64/uint64 for integers and bools."""
    want = dtype_arg(dtype, op)
    if want is not None:
        return want
    dt: DType = x.dtype
    if dt is DType.BOOL or (dt.is_integer and not dt.is_unsigned):
        return DType.I64
    if dt.is_unsigned:
        return DType.U64
    return dt


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Result:
    """Sum over ``axis`` (all axes by default). Ownership: **computes** a pooled output."""
    op = "tenferro.sum"
    if _not_bool(keepdims):  # (an array given here is refused before any work)
        keepdims = flag_param(keepdims, "keepdims", op)
    if dtype is None and axis is None and not keepdims:
        # The engine's full-reduction hot path (owners and C-ordered views): float
        # dtypes keep their dtype, as the standard's sum does.
        r = full_reduction("reduce_sum", x, _FLOATING)
        if r is not None:
            return r
    hit = _mirrored(op, x, axis)
    if hit is not None:
        return cast(Result, unmirror(sum(hit[0], axis=hit[1], dtype=dtype, keepdims=keepdims)))
    if dtype is None:
        if axis is None and not keepdims:
            r = None  # tried above
        else:
            r = axes_reduction("reduce_sum", x, _all_axes(x) if axis is None else axis, keepdims)
        if r is not None:
            return cast(Result, r)
    check_array(x, op)
    dt = _sum_dtype(x, dtype, op)
    return _reduce(op, x, np.sum, axis, "numeric", dt, dtype=dt.numpy, keepdims=keepdims)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Result:
    """Product over ``axis``. Ownership: **computes** a pooled output."""
    op = "tenferro.prod"
    if _not_bool(keepdims):  # (an array given here is refused before any work)
        keepdims = flag_param(keepdims, "keepdims", op)
    hit = _mirrored(op, x, axis)
    if hit is not None:
        return cast(Result, unmirror(prod(hit[0], axis=hit[1], dtype=dtype, keepdims=keepdims)))
    if dtype is None and axis is not None:
        r = axes_reduction("reduce_prod", x, axis, keepdims)
        if r is not None:
            return cast(Result, r)
    check_array(x, op)
    dt = _sum_dtype(x, dtype, op)
    return _reduce(op, x, np.prod, axis, "numeric", dt, dtype=dt.numpy, keepdims=keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Result:
    """Maximum over ``axis`` (non-empty). Ownership: **computes** a pooled output."""
    return _reduce("tenferro.max", x, np.max, axis, "real numeric", keepdims=keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Result:
    """Minimum over ``axis`` (non-empty). Ownership: **computes** a pooled output."""
    return _reduce("tenferro.min", x, np.min, axis, "real numeric", keepdims=keepdims)


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Result:
    """Arithmetic mean over ``axis``. Ownership: **computes** a pooled output."""
    return _reduce("tenferro.mean", x, np.mean, axis, "floating", keepdims=keepdims)


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Result:
    """Standard deviation (``correction`` degrees of freedom). Ownership: **computes**."""
    correction = number_param(correction, "correction", "tenferro.std")
    return _reduce(
        "tenferro.std", x, np.std, axis, "real floating", ddof=correction, keepdims=keepdims
    )


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Result:
    """Variance (``correction`` degrees of freedom). Ownership: **computes**."""
    correction = number_param(correction, "correction", "tenferro.var")
    return _reduce(
        "tenferro.var", x, np.var, axis, "real floating", ddof=correction, keepdims=keepdims
    )


def _cumulative_kernel(fa: Any, flat: Any, arg: tuple[Any, Shape, int]) -> None:
    """``ufunc.accumulate`` along one axis of a column-major owner (`shaped`'s kernel): the owner's
    flat buffer is the row-major array of the reversed shape, the axis reversed, and
    the output's buffer the same; an accumulation writes every element of it."""
    ufunc, rshape, rax = arg
    with np.errstate(all="ignore"):  # as the general path (`compute`)
        ufunc.accumulate(fa.reshape(rshape), rax, None, flat.reshape(rshape))


def _cumulative_fast(op: str, ufunc: Any, x: Any, axis: Any) -> Result | None:
    """The hot path of a running sum or product without ``dtype`` or
    ``include_initial``: a plain host owner of a floating dtype (which the
    accumulation keeps) and one int axis in range (None for rank 1), through the
    engine's compiled protocol (`engine.interface.shaped`: pin, writer check, one
    pooled output, one numpy call into it); a C-ordered view accumulates its
    column-major owner (`mirror`) and gives the C-ordered view of the result.
    None for anything else (the general path checks, computes or refuses)."""
    if x.__class__ is TensorView:
        if axis.__class__ is not int:
            return None
        hit = _mirrored(op, x, axis) if -len(x._shape) <= axis < len(x._shape) else None
        if hit is None:
            return None
        owned = _cumulative_fast(op, ufunc, hit[0], hit[1][0])
        return None if owned is None else cast(Result, unmirror(owned))
    if x.__class__ is not Tensor:
        return None
    st = x._st
    dt = x._dtype
    if st.__class__ is not HostBuffer or dt not in _FLOATING:
        return None
    shape = x._shape
    rank = len(shape)
    if axis is None:
        if rank != 1:
            return None
        axis = 0
    elif axis.__class__ is not int or not -rank <= axis < rank:
        return None
    # None for an empty or exclusively borrowed buffer (the general path's case).
    r: Result | None = shaped(
        _cumulative_kernel,
        x,
        shape,
        shape_size(shape),
        dt,
        current(),
        (ufunc, shape[::-1], rank - 1 - axis % rank),
    )
    return r


def _cumulative(
    op: str, fn: Any, x: Any, axis: Any, dtype: Any, include_initial: bool, initial: int
) -> Result:
    if dtype is None and include_initial is False:
        r = _cumulative_fast(op, np.add if fn is np.cumsum else np.multiply, x, axis)
        if r is not None:
            return r
    check_array(x, op)
    check_category(op, x.dtype, "numeric")
    if axis is None:
        if x.ndim > 1:
            raise ValidationError(
                op, "axis is required for arrays of rank > 1", kind="INVALID_AXIS"
            )
        axis = 0
    ax = normalize_axis(axis, builtins_max(x.ndim, 1), op)
    dt = _sum_dtype(x, dtype, op).numpy

    def run(a: Any) -> Any:
        r = fn(a, axis=ax, dtype=dt)
        if include_initial:
            shape = list(r.shape)
            shape[ax] = 1
            r = np.concatenate([np.full(shape, initial, dtype=r.dtype), r], axis=ax)
        return r

    return emit(op, compute(op, run, (x,)))


def builtins_max(a: int, b: int) -> int:
    return a if a > b else b


def cumulative_sum(
    x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
) -> Result:
    """Running sums along ``axis``. Ownership: **computes** a pooled output."""
    return _cumulative("tenferro.cumulative_sum", np.cumsum, x, axis, dtype, include_initial, 0)


def cumulative_prod(
    x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
) -> Result:
    """Running products along ``axis``. Ownership: **computes** a pooled output."""
    return _cumulative("tenferro.cumulative_prod", np.cumprod, x, axis, dtype, include_initial, 1)


# ---------------------------------------------------------------------- utility
def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Result:
    """True where every element along ``axis`` is non-zero. Ownership: **computes**."""
    return _reduce("tenferro.all", x, np.all, axis, "any", DType.BOOL, keepdims=keepdims)


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Result:
    """True where some element along ``axis`` is non-zero. Ownership: **computes**."""
    return _reduce("tenferro.any", x, np.any, axis, "any", DType.BOOL, keepdims=keepdims)


def diff(
    x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None
) -> Result:
    """The ``n``-th discrete difference along ``axis``. Ownership: **computes**."""
    op = "tenferro.diff"
    check_array(x, op)
    check_category(op, x.dtype, "numeric")
    n = int_param(n, "n", op)
    ax = normalize_axis(axis, x.ndim, op)
    kw: dict[str, Any] = {}

    def run(a: Any, pre: Any, app: Any) -> Any:
        if pre is not None:
            kw["prepend"] = pre
        if app is not None:
            kw["append"] = app
        return np.diff(a, n=n, axis=ax, **kw)

    return emit(op, compute(op, run, (x, prepend, append)))


def _count_kernel(fa: Any, flat: Any, arg: tuple[Shape, Any, Any]) -> None:
    """`count_nonzero` of a column-major owner (`shaped`'s kernel): over its flat
    buffer for a count of every element, else over the row-major array of the
    reversed shape along the reversed axes, whose result has the row-major shape
    ``red`` of the output's buffer; every element is written."""
    rshape, rax, red = arg
    if rax is None:
        flat[0] = np.count_nonzero(fa)
    else:
        flat.reshape(red)[...] = np.count_nonzero(fa.reshape(rshape), axis=rax)


def _count_fast(op: str, x: Any, axis: Any, keepdims: bool) -> Result | None:
    """The hot path of `count_nonzero`: a plain host owner (any dtype) and None, an int
    or a tuple of ints for ``axis`` (`layout.quick_axes`), through the engine's
    compiled protocol (`shaped`) into a pooled int64 owner; a C-ordered view counts
    its column-major owner (`mirror`) and gives the result's C-ordered view. None for
    anything else (the general path checks, computes or refuses)."""
    if x.__class__ is TensorView:
        hit = _mirrored(op, x, axis) if axis is not None else None
        if hit is None or hit[1] is None:
            return None
        owned = _count_fast(op, hit[0], hit[1], keepdims)
        return None if owned is None else cast(Result, unmirror(owned))
    if x.__class__ is not Tensor or x._st.__class__ is not HostBuffer:
        return None
    shape = x._shape
    rank = len(shape)
    ax: tuple[int, ...] | None
    if axis is None:
        ax = tuple(range(rank))
    else:
        ax = quick_axes(axis, rank)
        if ax is None:
            return None
    kept = tuple([d for i, d in enumerate(shape) if i not in ax])
    out = tuple([1 if i in ax else d for i, d in enumerate(shape)]) if keepdims else kept
    rax = None if len(ax) == rank else tuple([rank - 1 - i for i in ax])
    # None for an empty or exclusively borrowed buffer (the general path's case).
    r: Result | None = shaped(
        _count_kernel,
        x,
        out,
        shape_size(kept),
        DType.I64,
        current(),
        (shape[::-1], rax, kept[::-1]),
    )
    return r


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Result:
    """How many elements along ``axis`` are non-zero (int64). Ownership: **computes**."""
    op = "tenferro.count_nonzero"
    if _not_bool(keepdims):  # (an array given here is refused before any work)
        keepdims = flag_param(keepdims, "keepdims", op)
    r = _count_fast(op, x, axis, keepdims)
    if r is not None:
        return r
    check_array(x, op)
    axes = axes_tuple(axis, x.ndim, op)
    return emit(
        op,
        compute(
            op,
            lambda a: np.asarray(np.count_nonzero(a, axis=axes, keepdims=keepdims), np.int64),
            (x,),
        ),
    )


# ---------------------------------------------------------------------- searching
def _check_not_empty(x: Any, axis: Any, op: str) -> None:
    """argmax/argmin need an element to point at along the reduced axes."""
    if x.size == 0 and (axis is None or isinstance(axis, int)):
        shape = x.shape
        empty = axis is None or (-len(shape) <= axis < len(shape) and shape[axis] == 0)
        if empty:
            raise ValidationError(
                op,
                "an empty array has no element to point at",
                kind="EMPTY_REDUCTION",
                axes=tuple(range(len(shape))) if axis is None else (axis,),
                shape=shape,
            )


def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Result:
    """Index of the first maximum along ``axis`` (int64). Ownership: **computes**."""
    op = "tenferro.argmax"
    if _not_bool(keepdims):  # (an array given here is refused before any work)
        keepdims = flag_param(keepdims, "keepdims", op)
    check_array(x, op)
    check_category(op, x.dtype, "real numeric")
    _check_not_empty(x, axis, op)
    return emit(
        op, compute(op, lambda a: np.asarray(np.argmax(a, axis=axis, keepdims=keepdims)), (x,))
    )


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Result:
    """Index of the first minimum along ``axis`` (int64). Ownership: **computes**."""
    op = "tenferro.argmin"
    if _not_bool(keepdims):  # (an array given here is refused before any work)
        keepdims = flag_param(keepdims, "keepdims", op)
    check_array(x, op)
    check_category(op, x.dtype, "real numeric")
    _check_not_empty(x, axis, op)
    return emit(
        op, compute(op, lambda a: np.asarray(np.argmin(a, axis=axis, keepdims=keepdims)), (x,))
    )


def nonzero(x: Any, /) -> tuple[Result, ...]:
    """The indices of the non-zero elements, one int64 array per axis. Ownership: **computes**."""
    op = "tenferro.nonzero"
    check_array(x, op)
    if x.ndim == 0:
        raise ValidationError(op, "nonzero needs an array of rank >= 1", kind="INVALID_ARGUMENT")
    return tuple(emit(op, r) for r in compute(op, lambda a: np.nonzero(a), (x,)))


def where(condition: Any, x1: Any, x2: Any, /) -> Result:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast, promoted).

    Ownership: **computes** a pooled output.
    """
    op = "tenferro.where"
    check_array(condition, op, "condition")
    dt = operand_dtype((x1, x2), op)
    args = tuple(
        scalar_to(a, dt, op) if isinstance(a, (bool, int, float, complex)) else a for a in (x1, x2)
    )
    return emit(
        op,
        compute(
            op, lambda c, a, b: np.asarray(np.where(c, a, b), dtype=dt.numpy), (condition, *args)
        ),
    )


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Result:
    """Insertion indices of ``x2`` into sorted 1-D ``x1`` (int64). Ownership: **computes**."""
    op = "tenferro.searchsorted"
    check_array(x1, op)
    if side.__class__ is not str or side not in ("left", "right"):  # (an array compared: ambiguous)
        raise ValidationError(op, "side must be 'left' or 'right'", kind="INVALID_ARGUMENT")
    return emit(
        op,
        compute(
            op,
            lambda a, v, s: np.asarray(_np.searchsorted(a, v, side=side, sorter=s)),
            (x1, x2, sorter),
        ),
    )


# ---------------------------------------------------------------------- sorting
def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Result:
    """Sorted values along ``axis``. Ownership: **computes** a pooled output."""
    op = "tenferro.sort"
    check_array(x, op)
    check_category(op, x.dtype, "real")
    ax = normalize_axis(axis, x.ndim, op)

    def run(a: Any) -> Any:
        if descending:
            return np.flip(np.sort(np.flip(a, ax), axis=ax, kind="stable"), ax)
        return np.sort(a, axis=ax, kind="stable")

    return emit(op, compute(op, run, (x,)))


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Result:
    """Indices that sort ``x`` along ``axis`` (int64). Ownership: **computes**."""
    op = "tenferro.argsort"
    check_array(x, op)
    check_category(op, x.dtype, "real")
    ax = normalize_axis(axis, x.ndim, op)

    def run(a: Any) -> Any:
        if descending:
            n = a.shape[ax]
            idx = np.argsort(np.flip(a, ax), axis=ax, kind="stable")
            return np.flip(n - 1 - idx, ax)
        return np.argsort(a, axis=ax, kind="stable")

    return emit(op, compute(op, run, (x,)))


# ---------------------------------------------------------------------- sets
class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _unique(x: Any, op: str) -> tuple[Any, Any, Any, Any]:
    check_array(x, op)

    def run(a: Any) -> Any:
        r = np.unique_all(a)
        return (
            np.asarray(r.values),
            np.asarray(r.indices, np.int64),
            np.asarray(r.inverse_indices, np.int64).reshape(a.shape),
            np.asarray(r.counts, np.int64),
        )

    return compute(op, run, (x,))  # type: ignore[no-any-return]


def unique_all(x: Any, /) -> UniqueAllResult:
    """Distinct values with first indices, inverse indices and counts. Ownership: **computes**."""
    op = "tenferro.unique_all"
    v, i, inv, c = _unique(x, op)
    return UniqueAllResult(emit(op, v), emit(op, i), emit(op, inv), emit(op, c))


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """Distinct values and their counts. Ownership: **computes** pooled outputs."""
    op = "tenferro.unique_counts"
    v, _, _, c = _unique(x, op)
    return UniqueCountsResult(emit(op, v), emit(op, c))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """Distinct values and the inverse indices. Ownership: **computes** pooled outputs."""
    op = "tenferro.unique_inverse"
    v, _, inv, _ = _unique(x, op)
    return UniqueInverseResult(emit(op, v), emit(op, inv))


def unique_values(x: Any, /) -> Result:
    """Distinct values (sorted). Ownership: **computes** a pooled output."""
    op = "tenferro.unique_values"
    v, _, _, _ = _unique(x, op)
    return emit(op, v)
