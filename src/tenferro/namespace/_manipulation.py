"""Manipulation functions: views where the memory allows, pooled outputs otherwise.

``permute_dims``, ``matrix_transpose``, ``expand_dims``, ``squeeze``, ``flip``,
``broadcast_to``, ``broadcast_arrays``, ``moveaxis``, ``unstack`` and
``reshape`` (when the strides allow it) **borrow**: they return `TensorView`s
over the same buffer, never a copy. numpy computes the new layout on a
borrowed array; the view keeps only the descriptor. ``reshape`` that needs a
copy is a named, counted copy (refused under `forbid_copies`, and with
``copy=False``). ``concat``, ``stack``, ``roll``, ``tile`` and ``repeat``
**compute** new pooled outputs.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, Protocol, cast

import numpy as np

from ..copies import check_copy, check_copy_flag, count_copy
from ..engine._core import permute_dims_entry as _permute_dims_entry
from ..engine._core import reshape_entry as _reshape_entry
from ..engine._core import reshape_planned as _reshape_planned
from ..engine._core import transpose_entry as _transpose_entry
from ..errors import NUMPY_REFUSALS, PASSED_ON, ValidationError, numpy_refusal
from ..layout import ArgMemo, col_major_strides, permuter
from ..tensor import Tensor
from ..view import TensorView
from ._adapter import (
    Result,
    compute,
    emit,
    permuted_view,
    view_base,
    view_like,
)
from ._core import axes_tuple, check_array, normalize_axis, operand_dtype
from ._interop import accept_numpy, compiled_entry

Shape = tuple[int, ...]


def _view(x: Any, op: str, fn: Callable[[Any], Any]) -> Result:
    """``fn`` applied to a borrowed array of ``x``, returned as a view (never a copy)."""
    check_array(x, op)
    v, base = view_base(x, op)
    try:
        res = fn(base)
    except NUMPY_REFUSALS as exc:
        raise numpy_refusal(op, exc) from None
    if not isinstance(res, np.ndarray):
        res = base[...]  # numpy gives a scalar for some rank-0 results: the same view
    out = view_like(v, base, res, op)
    if out is None:  # pragma: no cover - every caller's fn returns a numpy view
        raise AssertionError(f"{op}: numpy returned a copy")
    return cast(Result, out)


def _permute_dims(x: Any, /, axes: tuple[int, ...]) -> Result:
    """The axes of ``x`` in the order ``axes``. Ownership: **borrows** (a view, no copy)."""
    # `permute_dims`'s general path: checks ``axes`` (typed errors) and remembers a
    # checked tuple of exact ints for the compiled entry (`_PERM_PLANS`).
    op = "tenferro.permute_dims"
    if x.__class__ is Tensor or x.__class__ is TensorView:
        ndim = len(x._shape)  # a moved tensor is refused by its as_view
    else:
        check_array(x, op)
        ndim = x.ndim
    permute = _PERMS.get(axes, ndim)
    if permute is None:
        if not isinstance(axes, (tuple, list)):
            raise ValidationError(
                op,
                f"axes must be a tuple of ints (a permutation of range({ndim})), "
                f"got {type(axes).__name__}",
                kind="INVALID_AXIS",
            )
        if len(axes) != ndim or sorted(normalize_axis(a, ndim, op) for a in axes) != list(
            range(ndim)
        ):
            raise ValidationError(
                op, f"axes {axes} is not a permutation of range({ndim})", kind="INVALID_AXIS"
            )
        norm = tuple(normalize_axis(a, ndim, op) for a in axes)
        permute = permuter(norm)
        _PERMS.put(axes, ndim, permute)
        if axes.__class__ is tuple and all(a.__class__ is int for a in axes):
            # Its length is the rank it was checked for (`engine._core._permuted`).
            if len(_PERM_PLANS) >= 1024:
                _PERM_PLANS.clear()
            _PERM_PLANS[axes] = norm
    # The descriptor permuted directly: what numpy's transpose of a borrowed array
    # would give, without building the array.
    return cast(Result, permuted_view(x, permute))


#: Checked permutations of `permute_dims` (as `layout.permuter`s), per axes tuple; found
#: by value too (autoray's callers build a new tuple per call).
_PERMS = ArgMemo(by_value=True)
#: The same checked permutations as normalised tuples, per axes tuple of exact ints (its
#: length is the rank it was checked for): what the compiled entries look up. Bounded.
_PERM_PLANS: dict[tuple[int, ...], tuple[int, ...]] = {}


def _transpose(x: Any, /, axes: Any = None) -> Result:
    """numpy's ``transpose``: reversed axes, or ``axes``. Ownership: **borrows** (a view)."""
    # `transpose`'s general path (checks, typed errors; `_permute_dims` for ``axes``).
    op = "tenferro.transpose"
    if axes is None:
        if x.__class__ is Tensor or x.__class__ is TensorView:
            return cast(
                Result, permuted_view(x, _reversed(len(x._shape)))
            )  # as_view refuses a moved one
        check_array(x, op)
        return cast(Result, permuted_view(x, _reversed(x.ndim)))
    check_array(x, op)
    if not isinstance(axes, (tuple, list)):
        raise ValidationError(
            op,
            f"axes must be None or a sequence of ints, got {type(axes).__name__}",
            kind="INVALID_AXIS",
        )
    return _permute_dims(x, axes if axes.__class__ is tuple else tuple(axes))


@functools.cache
def _reversed(ndim: int) -> Any:
    """The permuter that reverses ``ndim`` axes (``x.T``)."""
    return permuter(tuple(range(ndim - 1, -1, -1)))


@functools.cache
def _swapped_last(ndim: int) -> Any:
    """The permuter that swaps the last two of ``ndim`` axes (``x.mT``)."""
    return permuter((*range(ndim - 2), ndim - 1, ndim - 2))


def matrix_transpose(x: Any, /) -> Result:
    """The last two axes swapped. Ownership: **borrows** (a view, no copy)."""
    op = "tenferro.matrix_transpose"
    check_array(x, op)
    ndim = x.ndim
    if ndim < 2:
        raise ValidationError(
            op, f"needs at least 2 dimensions, got {ndim}", kind="INVALID_ARGUMENT"
        )
    return cast(Result, permuted_view(x, _swapped_last(ndim)))


def array_T(x: Any) -> Any:
    """``x.T``: the reversed axes. Ownership: **borrows** (a view)."""
    return transpose(x)


class TransposeFunction(Protocol):
    """``transpose(x, /, axes=None)``: the compiled entry (`engine._core.transpose_entry`)."""

    def __call__(self, x: Any, /, axes: Any = None) -> Result: ...


class PermuteDimsFunction(Protocol):
    """``permute_dims(x, /, axes)``: the compiled entry (`engine._core.permute_dims_entry`)."""

    def __call__(self, x: Any, /, axes: tuple[int, ...]) -> Result: ...


class ReshapeFunction(Protocol):
    """``reshape(x, /, shape, *, copy=None)``: the compiled entry (`engine._core.reshape_entry`)."""

    def __call__(self, x: Any, /, shape: Any, *, copy: bool | None = None) -> Result: ...


#: numpy's ``transpose``: reversed axes, or ``axes``. Ownership: **borrows** (a view).
#: Compiled (`engine._core.transpose_entry`): a tensor or shared view with no axes, or
#: with axes checked before (`_PERM_PLANS`), is one call; else `_transpose`.
transpose: TransposeFunction = compiled_entry(
    _transpose_entry(accept_numpy(_transpose, "transpose"), _PERM_PLANS),
    _transpose,
    "transpose",
    __name__,
)
#: The axes of ``x`` in the order ``axes``. Ownership: **borrows** (a view, no copy).
#: Compiled (`engine._core.permute_dims_entry`), as `transpose`; else `_permute_dims`.
permute_dims: PermuteDimsFunction = compiled_entry(
    _permute_dims_entry(accept_numpy(_permute_dims, "permute_dims"), _PERM_PLANS),
    _permute_dims,
    "permute_dims",
    __name__,
)


def expand_dims(x: Any, /, axis: Any = 0) -> Result:
    """``x`` with new axes of length one at ``axis``. Ownership: **borrows** (a view)."""
    op = "tenferro.expand_dims"
    check_array(x, op)
    items = axis if isinstance(axis, tuple) else (axis,)
    n = x.ndim + len(items)
    axes = tuple(normalize_axis(a, n, op) for a in items)
    if len(set(axes)) != len(axes):
        raise ValidationError(op, f"repeated axis in {axis!r}", kind="INVALID_AXIS")
    return _view(x, op, lambda a: np.expand_dims(a, axes))


def squeeze(x: Any, /, axis: Any) -> Result:
    """``x`` without the length-one axes ``axis``. Ownership: **borrows** (a view)."""
    op = "tenferro.squeeze"
    check_array(x, op)
    axes = axes_tuple(axis, x.ndim, op) or ()
    for a in axes:
        if x.shape[a] != 1:
            raise ValidationError(
                op, f"axis {a} has length {x.shape[a]}, not 1", kind="INVALID_AXIS"
            )
    return _view(x, op, lambda a: np.squeeze(a, axes))


def flip(x: Any, /, *, axis: Any = None) -> Result:
    """``x`` reversed along ``axis`` (all axes by default). Ownership: **borrows** (a view)."""
    op = "tenferro.flip"
    check_array(x, op)
    axes = axes_tuple(axis, x.ndim, op)
    return _view(x, op, lambda a: np.flip(a, axes))


def broadcast_to(x: Any, /, shape: Any) -> Result:
    """``x`` broadcast to ``shape`` (stride-0 axes). Ownership: **borrows** (a read-only view)."""
    op = "tenferro.broadcast_to"
    new = _shape_ints(shape, op)
    return _view(x, op, lambda a: np.broadcast_to(a, new))


def _shape_ints(shape: Any, op: str) -> tuple[int, ...]:
    """``shape`` (an int, or a tuple or list of ints; a tenferro array of ints, as
    numpy takes an array) as a tuple of Python ints, refused (INVALID_SHAPE) before
    anything is computed: an entry that is not an index is never compared or read as
    an array (a tensor entry compared with -1 would compute a pooled result, then
    fail on its truth value)."""
    if isinstance(shape, (tuple, list)):
        items: Any = shape
    elif isinstance(shape, (Tensor, TensorView, np.ndarray)) and len(shape.shape) == 1:
        items = [shape[i] for i in range(shape.shape[0])]
    else:
        items = (shape,)
    try:
        return tuple(d if d.__class__ is int else operator.index(d) for d in items)
    except TypeError:  # (a DTypeError too: a float or bool array's entry)
        raise ValidationError(
            op,
            f"shape must be an int or a sequence of ints, got {shape!r}",
            kind="INVALID_SHAPE",
            shape=shape,
        ) from None


def broadcast_arrays(*arrays: Any) -> list[Result]:
    """Every array broadcast to their common shape. Ownership: **borrows** (views)."""
    op = "tenferro.broadcast_arrays"
    for a in arrays:
        check_array(a, op)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError as exc:
        raise ValidationError(
            op, str(exc), kind="BROADCAST", shapes=tuple(a.shape for a in arrays)
        ) from None
    return [broadcast_to(a, shape) for a in arrays]


def moveaxis(x: Any, source: Any, destination: Any, /) -> Result:
    """Axes moved from ``source`` to ``destination``. Ownership: **borrows** (a view)."""
    op = "tenferro.moveaxis"
    return _view(x, op, lambda a: np.moveaxis(a, source, destination))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Result, ...]:
    """The sub-arrays along ``axis``. Ownership: **borrows** (one view each)."""
    op = "tenferro.unstack"
    check_array(x, op)
    ax = normalize_axis(axis, x.ndim, op)
    moved = _view(x, op, lambda a: np.moveaxis(a, ax, 0))
    return tuple(moved[i] for i in range(moved.shape[0]))


def _reshape(x: Any, /, shape: Any, *, copy: bool | None = None) -> Result:
    """``x`` with a new shape, elements in row-major (C) order as the standard says.

    Ownership: **borrows** (a view, no copy) whenever the strides allow it (any
    C-ordered data, splitting axes, adding length-one axes); otherwise, or with
    ``copy=True``, **copies** (named, counted; refused with ``copy=False`` and
    under `forbid_copies`).
    """
    op = "tenferro.reshape"
    flag: Any = copy
    if (
        flag is not None
        and flag.__class__ is not bool
        and isinstance(flag, (Tensor, TensorView, np.ndarray))
    ):
        check_copy_flag(op, flag, allow_none=True)  # refuses it: an array's truth is ambiguous
    if not copy and (x.__class__ is Tensor or x.__class__ is TensorView):
        # The descriptor numpy's no-copy reshape gives this layout, remembered per
        # (shape, strides, new shape): no array is built per call. A planned layout
        # and shape is one compiled call (`engine._core.reshape_planned`).
        out: Any = _reshape_planned(x, shape, copy is None, _reshape_plans)
        if out is None:
            out = _reshaped_view(x, shape, copy is None)
        if out is not None:
            return out  # type: ignore[no-any-return]
    check_array(x, op)
    new = _shape_ints(shape, op)
    size = x.size
    known = 1
    for d in new:
        if d != -1:
            known *= d
    if (
        new.count(-1) > 1
        or (-1 not in new and known != size)
        or (-1 in new and (known == 0 or size % known))
    ):
        raise ValidationError(
            op, f"cannot reshape an array of shape {x.shape} to {new}", kind="LENGTH_MISMATCH"
        )
    if not copy:
        v, base = view_base(x, op)
        try:
            res = np.reshape(base, new, copy=False)
        except ValueError:
            res = None
        if res is not None:
            out = view_like(v, base, res, op)
            if out is not None:
                return cast(Result, out)
        del res, base, v
        if copy is False:
            raise ValidationError(
                op,
                f"reshaping {x.shape} to {new} needs a copy with this layout but copy=False",
                kind="COPY_REQUIRED",
            )
    # Checked before, counted once made: a refused read (an exclusive borrow) counts nothing.
    check_copy(op, size * x.dtype.itemsize)
    res = compute(op, lambda a: np.reshape(a, new), (x,))
    count_copy(size * x.dtype.itemsize)
    # Only a layout that is not row-major needs this copy: it stays an owner.
    return emit(op, res, follow_order=False)


def _reshaped_view(x: Any, shape: Any, may_copy: bool) -> Any:
    """The view `reshape` gives a live owner or view ``x``, or None for the general
    path (a copy is needed, the arguments are refused, or the case is not planned).

    Only a tuple of exact ints is looked up (a bool or float entry compares equal
    to an int and is left to the general path's checks).
    """
    if shape.__class__ is not tuple:
        return None
    for d in shape:
        if d.__class__ is not int:
            return None
    own = x._shape
    strides = col_major_strides(own) if x.__class__ is Tensor else x._strides
    key = (own, strides, shape)
    plan = _reshape_plans.get(key, _UNPLANNED)
    if plan is _UNPLANNED:
        plan = _reshape_plan(own, strides, shape)
        if len(_reshape_plans) >= 1024:
            _reshape_plans.clear()
        _reshape_plans[key] = plan
    if plan is None:
        return None
    # Planned now: the compiled path takes it (the view, or the one named copy numpy's
    # own reshape would make), or declines (None) for the general path.
    return _reshape_planned(x, shape, may_copy, _reshape_plans)


#: Cap on the span (in elements) of a layout `_reshape_plan` imitates with bytes.
_PLAN_SPAN = 1 << 16
#: ``(new shape, strides, offset)`` of a no-copy reshape; strides None: numpy copies.
_Plan = tuple[Shape, Shape | None, int]
_UNPLANNED: Any = object()
_reshape_plans: dict[tuple[Shape, Shape, Shape], _Plan | None] = {}


def _reshape_plan(shape: Shape, strides: Shape, want: Shape) -> _Plan | None:
    """``(new shape, strides, offset)`` in elements of numpy's no-copy C-order reshape
    of the layout ``(shape, strides)`` to ``want`` (ints, at most one -1);
    ``(new shape, None, 0)`` when numpy would copy; or None: no elements, a size
    mismatch or a bad -1 (the general path explains), or a layout spanning more
    than `_PLAN_SPAN` elements.

    numpy decides on a stand-in: one byte per element over the same span.
    """
    size = 1
    for d in shape:
        size *= d
    if not size or want.count(-1) > 1 or any(d < -1 for d in want):
        return None
    known = 1
    for d in want:
        if d != -1:
            known *= d
    if -1 in want:
        if not known or size % known:
            return None
        want = tuple([size // known if d == -1 else d for d in want])
    elif known != size:
        return None
    span = 1 + sum((d - 1) * abs(s) for d, s in zip(shape, strides, strict=True))
    if span > _PLAN_SPAN:
        return None
    lo = sum((d - 1) * s for d, s in zip(shape, strides, strict=True) if s < 0)
    scratch = np.zeros(span, np.int8)[-lo:]
    fake = np.lib.stride_tricks.as_strided(scratch, shape, strides)
    try:
        res = np.reshape(fake, want, copy=False)
    except ValueError:
        return want, None, 0  # numpy would copy
    start = res.__array_interface__["data"][0] - fake.__array_interface__["data"][0]
    return want, tuple(int(s) for s in res.strides), int(start)


#: ``x`` with a new shape (`_reshape`'s documentation). Compiled
#: (`engine._core.reshape_entry`): a layout and shape planned before is one call
#: (`reshape_planned`: the view, or the one named copy); else `_reshape`.
reshape: ReshapeFunction = compiled_entry(
    _reshape_entry(accept_numpy(_reshape, "reshape"), _reshape_plans),
    _reshape,
    "reshape",
    __name__,
)


def _sequence(arrays: Any, op: str) -> tuple[Any, ...]:
    if isinstance(arrays, (list, tuple)):
        return tuple(arrays)
    raise ValidationError(
        op,
        f"arrays must be a list or tuple of arrays, got {type(arrays).__name__}",
        kind="INVALID_ARGUMENT",
    )


def concat(arrays: Any, /, *, axis: int | None = 0) -> Result:
    """Arrays joined along ``axis`` (flattened when None). Ownership: **computes**."""
    op = "tenferro.concat"
    arrays = _sequence(arrays, op)
    for a in arrays:
        check_array(a, op)
    dt = operand_dtype(arrays, op)
    try:
        return emit(
            op, compute(op, lambda *v: np.concatenate(v, axis=axis, dtype=dt.numpy), arrays)
        )
    except PASSED_ON:
        raise
    except NUMPY_REFUSALS as exc:
        raise numpy_refusal(op, exc) from None


def stack(arrays: Any, /, *, axis: int = 0) -> Result:
    """Arrays stacked along a new ``axis``. Ownership: **computes** a pooled output."""
    op = "tenferro.stack"
    arrays = _sequence(arrays, op)
    for a in arrays:
        check_array(a, op)
    dt = operand_dtype(arrays, op)
    try:
        return emit(op, compute(op, lambda *v: np.stack(v, axis=axis, dtype=dt.numpy), arrays))
    except PASSED_ON:
        raise
    except NUMPY_REFUSALS as exc:
        raise numpy_refusal(op, exc) from None


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Result:
    """Elements shifted along ``axis`` (cyclically). Ownership: **computes**."""
    op = "tenferro.roll"
    check_array(x, op)
    return emit(op, compute(op, lambda a: np.roll(a, shift, axis=axis), (x,)))


def tile(x: Any, repetitions: Any, /) -> Result:
    """``x`` repeated ``repetitions`` times per axis. Ownership: **computes**."""
    op = "tenferro.tile"
    check_array(x, op)
    items = repetitions if isinstance(repetitions, (tuple, list)) else (repetitions,)
    try:
        # Python ints only: iterating a tenferro array here would read (copy) it.
        reps = tuple(r if isinstance(r, int) else operator.index(r) for r in items)
    except TypeError:
        raise ValidationError(
            op,
            f"repetitions must be an int or a sequence of ints, got {repetitions!r}",
            kind="INVALID_ARGUMENT",
        ) from None
    return emit(op, compute(op, lambda a: np.tile(a, reps), (x,)))


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Result:
    """Each element repeated ``repeats`` times along ``axis``. Ownership: **computes**."""
    op = "tenferro.repeat"
    check_array(x, op)
    return emit(op, compute(op, lambda a, r: np.repeat(a, r, axis=axis), (x, repeats)))


#: numpy's spelling, for autoray's numpy-style callers.
concatenate = concat
