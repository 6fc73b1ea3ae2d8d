"""Shapes, column-major strides, index normalisation and element intervals.

Strides are in elements (not bytes) throughout the public API.
"""

from __future__ import annotations

import contextlib
import operator
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from numpy.lib.array_utils import normalize_axis_tuple as _np_normalize_axis_tuple

from .errors import IndexOutOfRangeError, ValidationError

__all__ = [
    "ArgMemo",
    "col_major_strides",
    "element_interval",
    "is_compact_col_major",
    "normalize_axes",
    "normalize_axis",
    "normalize_axis_tuple",
    "normalize_perm",
    "normalize_shape",
    "quick_axes",
    "row_major_strides",
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
            f"{nonzero} elements of {itemsize} bytes cannot fit in memory (at most "
            f"{sys.maxsize} bytes); use a smaller shape",
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


#: Shapes a strides cache (`col_major_strides`, `row_major_strides`) holds before it is
#: cleared: every shape a program reuses, bounded for one that keeps making new ones
#: (the same bound as the views' layout caches).
_STRIDE_CACHE_ENTRIES = 4096


def col_major_strides(shape: Sequence[int]) -> Shape:
    """Compact column-major strides, in elements."""
    if shape.__class__ is tuple:
        hit = _strides_of.get(shape)
        if hit is not None:
            return hit
    strides = []
    acc = 1
    for d in shape:
        strides.append(acc)
        acc *= d
    result = tuple(strides)
    if shape.__class__ is tuple:
        if len(_strides_of) >= _STRIDE_CACHE_ENTRIES:
            _strides_of.clear()
        _strides_of[shape] = result
    return result


#: `col_major_strides` per shape tuple: every view of a tensor and many operations
#: ask for it, and the loop costs more than a small operation's kernel. Equal
#: tuples have equal strides (a bool dimension equals its int), so equality keys.
_strides_of: dict[Shape, Shape] = {}


def row_major_strides(shape: Shape) -> Shape:
    """Compact row-major (C) strides, in elements: the column-major strides of the
    reversed shape, reversed (a C-ordered array is the axis-reversed view of a
    column-major owner)."""
    hit = _row_strides_of.get(shape)
    if hit is not None:
        return hit
    result = col_major_strides(shape[::-1])[::-1]
    if len(_row_strides_of) >= _STRIDE_CACHE_ENTRIES:
        _row_strides_of.clear()
    _row_strides_of[shape] = result
    return result


_row_strides_of: dict[Shape, Shape] = {}


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
            axes=perm,
        ) from None
    if sorted(p) != list(range(ndim)):
        raise ValidationError(
            op,
            f"{p!r} is not a permutation of the {ndim} axes 0..{ndim - 1}; "
            f"pass each axis exactly once, e.g. {tuple(reversed(range(ndim)))!r}",
            kind="INVALID_AXES",
            axes=p,
        )
    return p


def normalize_axis(
    axis: Any, ndim: int, op: str, what: str = "axis", kind: str = "INVALID_AXES"
) -> int:
    """One axis of a rank-``ndim`` operand, negatives counted from the end (numpy's
    `normalize_axis_index`), as an int in ``0..ndim-1``.

    Refuses non-integers and bools (`ValidationError`) and axes out of range
    (`IndexOutOfRangeError`, also an IndexError, as numpy's AxisError is).
    """
    return normalize_axis_tuple((axis,), ndim, op, what, kind)[0]


def normalize_axis_tuple(
    axes: Any,
    ndim: int,
    op: str,
    what: str = "axes",
    kind: str = "INVALID_AXES",
    allow_duplicates: bool = False,
    duplicate_kind: str | None = None,
) -> Shape:
    """Axes (one int or an iterable of ints) of a rank-``ndim`` operand, normalised by
    numpy's `normalize_axis_tuple` (negatives from the end), in the order given.

    Refuses what numpy would take for an axis but tenferro does not (bools, with
    `strict_index`) before numpy sees it, then numpy's refusals as typed errors:
    an axis out of range (`IndexOutOfRangeError`) and, unless
    ``allow_duplicates``, a repeated axis (`ValidationError`). ``what`` names the
    argument in messages, ``kind`` is the error kind (``duplicate_kind`` for a
    repeated axis, when it differs).
    """
    if isinstance(axes, Iterable) and not isinstance(axes, (str, bytes)):
        items = list(axes)
    else:
        items = [axes]
    checked = []
    for a in items:
        try:
            checked.append(strict_index(a))
        except TypeError:
            raise ValidationError(
                op, f"{what}: axis must be an int, got {a!r}", kind=kind, axes=axes
            ) from None
    for i in checked:
        if not -ndim <= i < ndim:
            raise IndexOutOfRangeError(
                op,
                f"{what}: axis {i} is out of range for a rank-{ndim} operand; use "
                f"-{ndim}..{ndim - 1}"
                if ndim
                else f"{what}: a rank-0 operand has no axis {i}",
                kind=kind,
                axis=i,
                ndim=ndim,
            )
    try:
        return tuple(_np_normalize_axis_tuple(checked, ndim, allow_duplicate=allow_duplicates))
    except ValueError:  # numpy: "repeated axis"
        raise ValidationError(
            op,
            f"{what}: duplicate axes in {tuple(checked)!r}",
            kind=duplicate_kind or kind,
            axes=tuple(checked),
        ) from None


def normalize_axes(axes: Any, ndim: int, op: str) -> Shape:
    """Validate reduction axes (negatives allowed), rejecting duplicates; None means all."""
    if axes is None:
        return tuple(range(ndim))
    return normalize_axis_tuple(axes, ndim, op)


def strict_index(x: Any) -> int:
    """``operator.index(x)``, except that a bool is refused too (`TypeError`).

    True and False are never taken for axis numbers, sizes or indices.
    """
    if isinstance(x, bool):
        raise TypeError("bool is not an integer index")
    return operator.index(x)


def permuter(p: Shape) -> Any:
    """A callable that reorders a tuple by the permutation ``p``: ``t -> (t[p[0]], ...)``.

    `operator.itemgetter` does it in C; a rank below 2 has only the identity.
    """
    if len(p) < 2:
        return _same
    return operator.itemgetter(*p)


def _same(t: Any) -> Any:
    return t


class ArgMemo:
    """What an argument check computed for a tuple argument, keyed by the tuple itself.

    Per-call checks of a permutation or shape (``(1, 0)``, ``(n,)``) cost more
    than a small operation's kernel. Code passes the same constant tuple on
    every call (a tuple literal is one object), so a result is remembered per
    tuple *object* and per rank, and found again by identity: an equal tuple
    of other types (``(True, False)`` equals ``(1, 0)``) never hits, and only
    tuples of exact ints (immutable, checked in full once) are remembered. The
    memo holds each tuple it remembers, so its ``id`` cannot be reused while
    the entry lives. With ``by_value``, a new tuple object equal to a remembered
    one (callers such as autoray build one per call) is found too, once its
    entries are seen to be exact ints. The memo is emptied when it reaches
    ``max_entries``.
    """

    __slots__ = ("_by_value", "_entries", "_max")

    def __init__(self, max_entries: int = 1024, *, by_value: bool = False) -> None:
        self._entries: dict[int, tuple[Any, int, Any]] = {}
        self._by_value: dict[tuple[Any, int], Any] | None = {} if by_value else None
        self._max = max_entries

    def get(self, key: Any, rank: int) -> Any:
        """The value remembered for ``key`` at ``rank`` (this very object; with
        ``by_value``, also an equal tuple of exact ints), else None."""
        entry = self._entries.get(id(key))
        if entry is not None and entry[0] is key and entry[1] == rank:
            return entry[2]
        by_value = self._by_value
        if by_value is None or key.__class__ is not tuple:
            return None
        for k in key:
            if k.__class__ is not int:
                return None
        return by_value.get((key, rank))

    def put(self, key: Any, rank: int, value: Any) -> None:
        """Remember ``value`` (not None) for ``key`` at ``rank`` if it is a tuple of ints."""
        if key.__class__ is not tuple or any(k.__class__ is not int for k in key):
            return
        entries = self._entries
        if len(entries) >= self._max:
            entries.clear()
            if self._by_value is not None:
                self._by_value.clear()
        # INVARIANT: the entry holds `key`, so no other object can take its id.
        entries[id(key)] = (key, rank, value)
        if self._by_value is not None:
            self._by_value[key, rank] = value


def quick_axes(axes: Any, ndim: int) -> Shape | None:
    """Reduction axes (an int or a tuple of ints) normalised, sorted, distinct and
    non-empty, or None for anything else (the caller's full check then explains).

    The hot paths' check: one compare for an int; a tuple is checked once and
    remembered (`ArgMemo`).
    """
    if axes.__class__ is int:
        if -ndim <= axes < ndim:
            return (axes % ndim,)
        return None
    if axes.__class__ is not tuple:
        return None
    hit: Shape | None = _quick.get(axes, ndim)
    if hit is not None:
        return hit
    out = []
    for a in axes:
        if a.__class__ is not int or not -ndim <= a < ndim:
            return None
        out.append(a % ndim)
    if not out or len(set(out)) != len(out):
        return None
    result = tuple(sorted(out))
    _quick.put(axes, ndim, result)
    return result


_quick = ArgMemo()
