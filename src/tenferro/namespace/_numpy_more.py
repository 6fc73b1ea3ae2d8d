"""More numpy spellings that autoray callers reach: ``swapaxes``, ``indices``,
``split``/``array_split``, and the tensor-network helpers quimb composes.

Each states its ownership effect; views never copy.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np

from ..dtype import as_dtype
from ..errors import OutOfMemoryError, ValidationError
from ._adapter import Result, emit
from ._core import check_array, normalize_axis
from ._indexing import getitem
from ._manipulation import permute_dims

__all__ = ["array_split", "indices", "split", "swapaxes", "to_list"]


def swapaxes(x: Any, axis1: int, axis2: int, /) -> Result:
    """``x`` with two axes exchanged. Ownership: **borrows** (a view, no copy)."""
    op = "tenferro.swapaxes"
    check_array(x, op)
    a = normalize_axis(axis1, x.ndim, op)
    b = normalize_axis(axis2, x.ndim, op)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return permute_dims(x, tuple(perm))


def indices(
    dimensions: Any, dtype: Any = None, sparse: bool = False
) -> Result | tuple[Result, ...]:
    """numpy's ``indices``: the index grid of ``dimensions`` (a ``(len(dimensions),
    *dimensions)`` integer array, or with ``sparse=True`` a tuple of broadcastable
    arrays). Ownership: **creates** new pooled tensors."""
    op = "tenferro.indices"
    try:
        dims = tuple(operator.index(d) for d in dimensions)
    except TypeError:
        raise ValidationError(
            op,
            f"dimensions must be a sequence of ints, got {dimensions!r}",
            kind="INVALID_SHAPE",
            shape=dimensions,
        ) from None
    if any(d < 0 for d in dims):
        raise ValidationError(
            op,
            f"dimensions must be non-negative, got {dims}",
            kind="INVALID_SHAPE",
            shape=dims,
        )
    want = np.int64 if dtype is None else as_dtype(dtype, op).numpy
    if sparse:
        return tuple(emit(op, g) for g in np.indices(dims, dtype=want, sparse=True))
    return emit(op, np.indices(dims, dtype=want))


#: More sections than this cannot be returned (a list of that many views).
_MAX_SECTIONS = 2**31


def _split_points(n: int, sections: Any, even: bool, op: str) -> list[int]:
    if isinstance(sections, (list, tuple)) or (
        hasattr(sections, "ndim") and getattr(sections, "ndim", 0) == 1
    ):
        try:
            cuts = [int(p) for p in sections]
        except (TypeError, ValueError):  # (a nested list, a string, a NaN)
            raise ValidationError(
                op,
                f"indices_or_sections must be an int or a sequence of ints, got {sections!r}",
                kind="INVALID_ARGUMENT",
            ) from None
        return [min(max(p if p >= 0 else n + p, 0), n) for p in cuts]
    try:
        k = operator.index(sections)
    except TypeError:
        raise ValidationError(
            op,
            f"indices_or_sections must be an int or a sequence of ints, got {sections!r}",
            kind="INVALID_ARGUMENT",
        ) from None
    if k <= 0:
        raise ValidationError(
            op, "the number of sections must be positive", kind="INVALID_ARGUMENT"
        )
    if even and n % k:
        raise ValidationError(
            op,
            f"an axis of length {n} does not split into {k} equal sections; use "
            "tenferro.array_split for unequal ones",
            kind="INVALID_ARGUMENT",
        )
    if k > _MAX_SECTIONS:
        # numpy would build k arrays (all but n of them empty): a list no memory holds.
        raise OutOfMemoryError(
            op,
            f"{k} sections of an axis of length {n} would be {k} arrays, more than can be "
            f"made (at most {_MAX_SECTIONS}); ask for fewer sections",
        )
    size, extra = divmod(n, k)
    points = []
    pos = 0
    for i in range(k - 1):
        pos += size + (1 if i < extra else 0)
        points.append(pos)
    return points


def _split(x: Any, sections: Any, axis: int, even: bool, op: str) -> list[Any]:
    check_array(x, op)
    ax = normalize_axis(axis, x.ndim, op)
    n = x.shape[ax]
    bounds = [0, *_split_points(n, sections, even, op), n]
    head = (slice(None),) * ax
    return [getitem(x, (*head, slice(lo, max(lo, hi)))) for lo, hi in itertools.pairwise(bounds)]


def split(x: Any, indices_or_sections: Any, /, axis: int = 0) -> list[Result]:
    """numpy's ``split``: equal sections, or cuts at the given indices.
    Ownership: **borrows** (a list of views, no copy)."""
    return _split(x, indices_or_sections, axis, True, "tenferro.split")


def array_split(x: Any, indices_or_sections: Any, /, axis: int = 0) -> list[Result]:
    """numpy's ``array_split``: like `split`, sections may differ by one.
    Ownership: **borrows** (a list of views, no copy)."""
    return _split(x, indices_or_sections, axis, False, "tenferro.array_split")


def to_list(x: Any) -> Any:
    """``x.tolist()``: nested Python lists of the values (a 0-d array: its scalar).
    Ownership: **borrows** (reads only)."""
    from ._adapter import compute

    op = "Tensor.tolist"
    check_array(x, op)
    return compute(op, lambda a: a.tolist(), (x,))
