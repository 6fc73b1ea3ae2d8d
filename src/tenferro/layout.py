"""Shapes, column-major strides, index normalisation and element intervals.

Strides are in elements (not bytes) throughout the public API.
"""

from __future__ import annotations

import contextlib
import operator
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from .errors import ValidationError

__all__ = [
    "col_major_strides",
    "element_interval",
    "is_compact_col_major",
    "normalize_axes",
    "normalize_perm",
    "normalize_shape",
    "shape_size",
    "strict_index",
]

Shape = tuple[int, ...]


def normalize_shape(shape: Any, op: str, itemsize: int = 1) -> Shape:
    """Validate a shape: a sequence of non-negative ints whose byte size fits in memory.

    A bare int ``n`` means ``(n,)``, as in numpy.
    """
    if not isinstance(shape, (bool, str, bytes)):
        with contextlib.suppress(TypeError):  # not a single int: a sequence, checked below
            shape = (operator.index(shape),)
    if isinstance(shape, (str, bytes)):
        raise ValidationError(
            op,
            f"shape must be a sequence of ints such as (2, 3), got {shape!r}",
            kind="INVALID_SHAPE",
            shape=shape,
        )
    if not isinstance(shape, (Sequence, tuple)):
        try:
            shape = tuple(shape)
        except TypeError:
            raise ValidationError(
                op,
                f"shape must be a sequence of ints such as (2, 3), got {shape!r}",
                kind="INVALID_SHAPE",
                shape=shape,
            ) from None
    dims: list[int] = []
    for d in shape:
        try:
            n = strict_index(d)
        except TypeError:
            raise ValidationError(
                op,
                f"shape entries must be ints, got {d!r} in {tuple(shape)!r}",
                kind="INVALID_SHAPE",
                shape=tuple(shape),
            ) from None
        if n < 0:
            raise ValidationError(
                op,
                f"shape entries must be >= 0 (0 makes an empty axis), got {n} in {tuple(shape)!r}",
                kind="INVALID_SHAPE",
                shape=tuple(shape),
            )
        dims.append(n)
    result = tuple(dims)
    # Like numpy, the product of the non-zero dimensions must fit even when another
    # dimension is zero: (0, 2**62, 2**62) is refused, not silently empty.
    nonzero = shape_size(d for d in result if d)
    if nonzero * max(itemsize, 1) > sys.maxsize:
        raise ValidationError(
            op,
            f"shape {result!r} overflows: {nonzero} elements of {itemsize} bytes cannot fit "
            f"in memory (at most {sys.maxsize} bytes); use a smaller shape",
            kind="SHAPE_OVERFLOW",
            shape=result,
        )
    return result


def shape_size(shape: Iterable[int]) -> int:
    """The number of elements of ``shape`` (1 for rank 0)."""
    n = 1
    for d in shape:
        n *= d
    return n


def col_major_strides(shape: Sequence[int]) -> Shape:
    """Compact column-major strides, in elements."""
    strides = []
    acc = 1
    for d in shape:
        strides.append(acc)
        acc *= d
    return tuple(strides)


def is_compact_col_major(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """True when ``strides`` walk ``shape`` column-major without gaps (size-1 axes are free).

    A view with no elements is compact whatever its strides.
    """
    if 0 in shape:
        return True
    acc = 1
    for d, s in zip(shape, strides, strict=True):
        if d == 0:
            return True
        if d != 1 and s != acc:
            return False
        acc *= d
    return True


def element_interval(
    shape: Sequence[int], strides: Sequence[int], offset: int
) -> tuple[int, int] | None:
    """The lowest and highest element offset a strided layout touches; None if empty."""
    lo = hi = offset
    for d, s in zip(shape, strides, strict=True):
        if d == 0:
            return None
        span = s * (d - 1)
        if span < 0:
            lo += span
        else:
            hi += span
    return lo, hi


def normalize_perm(perm: Any, ndim: int, op: str) -> Shape:
    """Validate a permutation of ``range(ndim)``."""
    try:
        p = tuple(strict_index(x) for x in perm)
    except TypeError:
        raise ValidationError(
            op,
            f"permutation must be a sequence of axis numbers (ints), got {perm!r}",
            kind="INVALID_AXES",
            perm=perm,
        ) from None
    if sorted(p) != list(range(ndim)):
        raise ValidationError(
            op,
            f"{p!r} is not a permutation of the {ndim} axes 0..{ndim - 1}; "
            f"pass each axis exactly once, e.g. {tuple(reversed(range(ndim)))!r}",
            kind="INVALID_AXES",
            perm=p,
            ndim=ndim,
        )
    return p


def normalize_axes(axes: Any, ndim: int, op: str) -> Shape:
    """Validate reduction axes (negatives allowed), rejecting duplicates; None means all."""
    if axes is None:
        return tuple(range(ndim))
    if not isinstance(axes, (tuple, list)):
        axes = (axes,)
    out = []
    for a in axes:
        if isinstance(a, bool):
            raise ValidationError(op, f"axis must be an int, got {a!r}", kind="INVALID_AXES")
        try:
            i = operator.index(a)
        except TypeError:
            raise ValidationError(
                op, f"axis must be an int, got {a!r}", kind="INVALID_AXES", axes=axes
            ) from None
        if not -ndim <= i < ndim:
            raise ValidationError(
                op,
                f"axis {i} is out of range for a rank-{ndim} tensor",
                kind="INVALID_AXES",
                axes=tuple(axes),
                ndim=ndim,
            )
        out.append(i % ndim if ndim else i)
    if len(set(out)) != len(out):
        raise ValidationError(
            op, f"duplicate axes in {tuple(axes)!r}", kind="INVALID_AXES", axes=tuple(axes)
        )
    return tuple(out)


def strict_index(x: Any) -> int:
    """``operator.index(x)``, except that a bool is refused too (`TypeError`).

    True and False are never taken for axis numbers, sizes or indices.
    """
    if isinstance(x, bool):
        raise TypeError("bool is not an integer index")
    return operator.index(x)
