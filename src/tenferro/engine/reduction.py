"""Reductions: sum, product, max, min and mean over given axes.

``axes=None`` reduces every axis (a rank-0 result); an empty tuple reduces none
(the result is a computed copy of the input); reduced axes are dropped (no
keepdims). Result dtypes: the input's, except ``reduce_sum``/``reduce_prod`` of
BOOL give I64 (counts) and ``reduce_mean`` of BOOL or integers gives F64.
Integer sums wrap on overflow, like numpy. ``reduce_max``/``reduce_min``
propagate NaN and refuse complex dtypes and empty reductions (no identity);
``reduce_mean`` refuses empty reductions (no value).

Every kernel is one ``ufunc.reduce`` with ``out=`` the pooled output, whose
shape is exactly the input's shape without the reduced axes, so the reduction
writes every output element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import DTypeError, ValidationError
from ..layout import normalize_axes, quick_axes, shape_size
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ._base import EngineBase, Reads
from ._core import full as _core_full
from ._core import shaped as _core_shaped

__all__ = ["ReductionOps"]

Array = np.ndarray[Any, Any]
_INTISH = frozenset({DType.BOOL, DType.I32, DType.I64})
_divide = np.divide
# Full reductions of these dtypes keep the dtype and have a value for every
# non-empty input, so they take the hot path (see `_full_fast`).
_FLOAT_T = (DType.F64, DType.F32)
_FLOATING_T = (DType.F64, DType.F32, DType.C64, DType.C32)
_UFUNC: dict[str, Any] = {
    "reduce_sum": np.add,
    "reduce_prod": np.multiply,
    "reduce_max": np.maximum,
    "reduce_min": np.minimum,
    "reduce_mean": np.add,
}


_Plan = tuple[tuple[int, ...], tuple[int, ...], "tuple[int, ...] | None", Any, int]
#: `_plan` per (shape, axes, keepdims): the shapes of the hot path cost more to
#: build than a small reduction's kernel.
_plans: dict[tuple[tuple[int, ...], tuple[int, ...], bool], _Plan] = {}
#: Plans `_plans` holds before it is cleared: every (shape, axes) a program reuses,
#: bounded for one that reduces ever new shapes.
_MAX_PLANS = 1024


def _plan(shape: tuple[int, ...], ax: tuple[int, ...], keepdims: bool) -> _Plan:
    """``(out_shape, src_shape, red_shape, rax, size)`` of `_axes_fast` (remembered).

    ``src_shape``: the input's reversed shape (its row-major view); ``rax``: the
    reduced axes in that view (an int for one axis: numpy parses it faster);
    ``red_shape``: the reversed shape of the result without the reduced axes
    (None when the flat buffer already has it); ``size``: its element count.
    """
    rank = len(shape)
    kept = tuple([d for i, d in enumerate(shape) if i not in ax])
    out_shape = tuple([1 if i in ax else d for i, d in enumerate(shape)]) if keepdims else kept
    rev = tuple([rank - 1 - i for i in ax])
    plan: _Plan = (
        out_shape,
        shape[::-1],
        None if len(kept) == 1 else kept[::-1],
        rev[0] if len(rev) == 1 else rev,
        shape_size(kept),
    )
    if len(_plans) >= _MAX_PLANS:
        _plans.clear()
    _plans[(shape, ax, keepdims)] = plan
    return plan


def _full_kernel(fa: Array, flat: Array, name: str) -> None:
    """A full reduction of ``fa`` into the one element of ``flat`` (``_core.shaped``'s kernel).

    INVARIANT: the one element of the rank-0 result is written here: the
    reduction of all n elements with keepdims has flat's shape (1,), written in
    place (no numpy scalar, no item assignment).
    """
    _UFUNC[name].reduce(fa, 0, None, flat, True)
    if name == "reduce_mean":
        _divide(flat, len(fa), flat)


def _axes_kernel(fa: Array, flat: Array, arg: tuple[str, Any, Any, Any]) -> None:
    """A reduction over some axes (``_core.shaped``'s kernel for `ReductionOps._axes_fast`).

    The reduction of the reversed row-major view over the reversed axes has exactly
    the shape ``red_shape`` of the output's row-major view (keepdims only adds
    length-one axes): every element is written.
    """
    name, src_shape, rax, red_shape = arg
    _UFUNC[name].reduce(
        fa.reshape(src_shape), rax, None, flat if red_shape is None else flat.reshape(red_shape)
    )


class ReductionOps(EngineBase):
    """Reduction methods of `CpuEngine` (mixed in; see the module docstring)."""

    __slots__ = ()

    def _full_fast(self, name: str, t: Any, fast: tuple[DType, ...]) -> Tensor | None:
        """A full reduction of a non-empty plain host tensor, or C-ordered view, to rank
        0, or None.

        The hot path of ``reduce_*(t)``: pin, then check for a writer (see
        `HostBuffer.pin`), one ``ufunc.reduce`` over ``HostBuffer.flat`` (every
        element, in memory order: a full reduction does not depend on the shape),
        and the value written into a one-element pooled buffer.
        """
        # The per-operation protocol, compiled (engine/_core.pyx); None for anything
        # else, an empty or an exclusively borrowed buffer (the general path handles or
        # refuses it).
        r: Tensor | None = _core_full(_full_kernel, t, fast, self, name)
        return r

    def _axes_fast(self, name: str, t: Any, axes: Any, keepdims: bool = False) -> Tensor | None:
        """``reduce_sum``/``reduce_prod`` of a plain host float tensor over ``axes``, or None.

        ``axes``: an int or a tuple of ints (checked by `layout.quick_axes`; None
        for anything else, which the general path checks and explains).
        ``keepdims`` keeps reduced axes as length one (the namespace's option). The
        hot path of a reduction over some axes: pin, then check for a writer, one
        ``ufunc.reduce`` over the row-major view of the reversed shape (the
        column-major array's twin, see `structural._perm`: no ``order="F"``
        reshape) into the pooled output, viewed the same way.
        """
        if t.__class__ is not Tensor:
            return None
        st = t._st
        dt = t._dtype
        if st.__class__ is not HostBuffer or dt not in _FLOATING_T:
            return None
        shape = t._shape
        ax = quick_axes(axes, len(shape))
        if ax is None:
            return None
        key = (shape, ax, keepdims)
        plan = _plans.get(key)
        if plan is None:
            plan = _plan(shape, ax, keepdims)
        out_shape, src_shape, red_shape, rax, size = plan
        # The per-operation protocol, compiled (engine/_core.pyx); None for an empty or
        # exclusively borrowed tensor (the general path handles or refuses it).
        r: Tensor | None = _core_shaped(
            _axes_kernel, t, out_shape, size, dt, self, (name, src_shape, rax, red_shape)
        )
        return r

    def _reduce(self, name: str, t: Any, axes: Any, out: Tensor | None) -> Tensor:
        op = f"CpuEngine.{name}"
        with Reads() as reads:
            x, dt, shape = reads.operand(t, op)
            ax = normalize_axes(axes, len(shape), op)
            out_shape = tuple(d for i, d in enumerate(shape) if i not in ax)
            count = shape_size([shape[i] for i in ax])
            if name in ("reduce_max", "reduce_min"):
                if dt.is_complex:
                    raise DTypeError(
                        op,
                        f"{name} is not defined for complex dtypes (no order); reduce abs() or "
                        "the real part instead",
                        kind="UNSUPPORTED_DTYPE",
                        dtype=dt,
                    )
                if count == 0 and ax:
                    raise ValidationError(
                        op,
                        f"{name} over an empty axis has no value (no identity); check the "
                        "shape and axes",
                        kind="EMPTY_REDUCTION",
                        shape=shape,
                        axes=ax,
                    )
                result = dt
            elif name == "reduce_mean":
                if count == 0 and ax:
                    raise ValidationError(
                        op,
                        "the mean over an empty axis is undefined; check the shape and axes",
                        kind="EMPTY_REDUCTION",
                        shape=shape,
                        axes=ax,
                    )
                result = DType.F64 if dt in _INTISH else dt
            else:
                result = DType.I64 if dt is DType.BOOL else dt
            ufunc = _UFUNC[name]
            np_result = result.numpy
            mean = name == "reduce_mean"

            def kernel(nd: Array) -> None:
                if not ax:
                    # No axis reduced: the (converted) input has nd's shape; copyto
                    # writes every element.
                    np.copyto(nd, x, casting="unsafe")
                    return
                # The reduction's output shape is nd's shape exactly: every element of
                # nd receives one reduced value.
                ufunc.reduce(x, axis=ax, out=nd, dtype=np_result)
                if mean:
                    np.divide(nd, count, out=nd)

            return self._run(op, out_shape, result, kernel, out, reads)

    def reduce_sum(self, t: Any, axes: Any = None, out: Tensor | None = None) -> Tensor:
        """Sum over ``axes`` (None: all, a rank-0 result; ``()``: none). BOOL gives I64."""
        if out is None:
            if axes is None:
                r = self._full_fast("reduce_sum", t, _FLOATING_T)
            else:
                r = self._axes_fast("reduce_sum", t, axes)
            if r is not None:
                return r
        return self._reduce("reduce_sum", t, axes, out)

    def reduce_prod(self, t: Any, axes: Any = None, out: Tensor | None = None) -> Tensor:
        """Product over ``axes`` (None: all; ``()``: none). BOOL gives I64."""
        if out is None:
            if axes is None:
                r = self._full_fast("reduce_prod", t, _FLOATING_T)
            else:
                r = self._axes_fast("reduce_prod", t, axes)
            if r is not None:
                return r
        return self._reduce("reduce_prod", t, axes, out)

    def reduce_max(self, t: Any, axes: Any = None, out: Tensor | None = None) -> Tensor:
        """Maximum over ``axes`` (NaN propagates; not for complex or empty reductions)."""
        if axes is None and out is None:
            r = self._full_fast("reduce_max", t, _FLOAT_T)
            if r is not None:
                return r
        return self._reduce("reduce_max", t, axes, out)

    def reduce_min(self, t: Any, axes: Any = None, out: Tensor | None = None) -> Tensor:
        """Minimum over ``axes`` (NaN propagates; not for complex or empty reductions)."""
        if axes is None and out is None:
            r = self._full_fast("reduce_min", t, _FLOAT_T)
            if r is not None:
                return r
        return self._reduce("reduce_min", t, axes, out)

    def reduce_mean(self, t: Any, axes: Any = None, out: Tensor | None = None) -> Tensor:
        """Mean over ``axes``; integer and BOOL inputs give F64."""
        if axes is None and out is None:
            r = self._full_fast("reduce_mean", t, _FLOATING_T)
            if r is not None:
                return r
        return self._reduce("reduce_mean", t, axes, out)
