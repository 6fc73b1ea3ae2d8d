"""Running slices of a `SlicePlan` on one engine: the only module that executes steps.

Each operand is sliced as a strided view (`TensorView.slice_view`: no copy,
the engine reads the view in place), each pairwise step is one `eng.einsum`
into a pooled buffer, and an intermediate goes back to the pool as soon as the
next step has consumed it. A group of slices is summed into the first slice's
running sum (``eng.add`` into a pooled output, the previous sum going back to
the pool), so a group costs two output buffers plus the working set of one
slice, however many slices it holds.

When the engine gains a compiled contraction expression, only this module changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..tensor import Tensor
from ._plan import SlicePlan

__all__ = ["SliceStats", "run_slice", "run_slices"]


class SliceStats:
    """What running slices measured: slices run, largest intermediate, pool high water."""

    __slots__ = ("max_intermediate_bytes", "peak_pool_bytes", "slices")

    def __init__(self) -> None:
        self.slices = 0
        self.max_intermediate_bytes = 0
        self.peak_pool_bytes = 0


def run_slice(eng: Any, plan: SlicePlan, bases: Sequence[Any], s: int, stats: SliceStats) -> Any:
    """Contract slice ``s``; returns an engine output (borrows ``bases``, copies nothing).

    ``bases[k]`` is operand ``k`` as a `TensorView` (sliced here) or a `Tensor`.
    """
    values = plan.slice_values(s)
    terms: list[Any] = []
    for base, slicer in zip(bases, plan.operand_slicers, strict=True):
        if slicer:
            index: list[Any] = [slice(None)] * len(base.shape)
            for axis, position in slicer:
                index[axis] = values[position]
            terms.append(base.slice_view(tuple(index)))
        else:
            terms.append(base)
    largest = stats.max_intermediate_bytes
    for i, j, subscripts in plan.steps:
        x, y = terms[i], terms[j]
        for k in (i, j) if i > j else (j, i):
            del terms[k]
        z = eng.einsum(subscripts, x, y)
        # Dropping x and y here returns an intermediate's buffer to the pool before
        # the next step asks for one.
        del x, y
        largest = max(largest, z.nbytes)
        terms.append(z)
    result = terms.pop()
    if plan.final is not None:
        result = eng.einsum(plan.final, result)
        largest = max(largest, result.nbytes)
    stats.max_intermediate_bytes = largest
    return result


def run_slices(
    eng: Any,
    plan: SlicePlan,
    operands: Sequence[Tensor],
    start: int,
    stop: int,
    stats: SliceStats,
    on_slice: Callable[[], None] | None = None,
) -> Tensor:
    """The sum of slices ``start <= s < stop``, an output of ``eng`` (borrows ``operands``)."""
    bases = [
        t.as_view() if slicer else t
        for t, slicer in zip(operands, plan.operand_slicers, strict=True)
    ]
    acc: Any = None
    for s in range(start, stop):
        r = run_slice(eng, plan, bases, s, stats)
        # Not in place (out=acc): an exclusive borrow is refused while anything else
        # still sees acc's buffer, and a Dask worker's sampling profiler can hold a
        # kernel frame (and so an array over that buffer) for a moment. A new pooled
        # output costs one buffer from the pool instead, and the old one goes back.
        acc = r if acc is None else eng.add(acc, r)
        del r
        stats.slices += 1
        # At the end of a slice every intermediate is back in the pool: what it retains
        # now is the slice's working set.
        stats.peak_pool_bytes = max(stats.peak_pool_bytes, eng.buffer_pool_stats().capacity_bytes)
        if on_slice is not None:
            on_slice()
    assert acc is not None
    return acc  # type: ignore[no-any-return]
