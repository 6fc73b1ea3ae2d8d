"""Copy accounting: every physical copy the library makes is named and counted."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, NoReturn

import numpy as np

from .errors import CopyForbiddenError, ValidationError, not_copyable

__all__ = [
    "CopyStats",
    "NotCopyable",
    "check_copy",
    "check_copy_flag",
    "copy_stats",
    "count_copy",
    "forbid_copies",
    "record_copy",
]


class CopyStats(NamedTuple):
    """Totals since the process started: number of named copies and bytes copied."""

    copies: int
    bytes: int


_lock = threading.Lock()
_copies = 0
_bytes = 0


class _Forbid(threading.local):
    # The class default: a thread that never entered forbid_copies reads 0 without
    # the AttributeError that `getattr(local, name, 0)` raises and swallows inside
    # (about 1 µs, on every named copy).
    depth = 0


_forbid = _Forbid()


#: Counts kept elsewhere, each ``() -> (copies, bytes)``, added to `copy_stats`'s totals:
#: the compiled core registers its own (`engine._core.copy_counts`, an owner's planned
#: reshape copies) when it loads (`_add_counts`; this module imports nothing back).
_more_counts: list[Callable[[], tuple[int, int]]] = []


def _add_counts(counts: Callable[[], tuple[int, int]]) -> None:
    """Add ``counts()``, copies counted elsewhere under `count_copy`'s rule, to the totals."""
    _more_counts.append(counts)


def copy_stats() -> CopyStats:
    """The running totals of physical copies made by the library (all threads): those
    counted here (`count_copy`) and those the compiled core counted itself."""
    with _lock:
        copies, nbytes = _copies, _bytes
        for counts in _more_counts:
            more, more_bytes = counts()
            copies += more
            nbytes += more_bytes
        return CopyStats(copies, nbytes)


def record_copy(op: str, nbytes: int) -> None:
    """Account for a physical copy named ``op``; call it *before* copying.

    Raises `CopyForbiddenError` when the calling thread is inside `forbid_copies()`,
    so the refused copy is never made and nothing is changed.
    """
    check_copy(op, nbytes)
    count_copy(nbytes)


def check_copy(op: str, nbytes: int) -> None:
    """Refuse (`CopyForbiddenError`) a copy inside `forbid_copies()`; counts nothing.

    For copies that can still fail after this check (an engine conversion that
    finds a lossy value, an ``out=`` tensor whose borrow is refused): check
    before copying, and `count_copy` once the copy is made.
    """
    if _forbid.depth:
        raise CopyForbiddenError(
            op,
            f"a physical copy of {nbytes} bytes was attempted inside forbid_copies(); "
            "borrow instead (as_view, host_data, map_read) or leave the forbid_copies block",
            nbytes=nbytes,
        )


def check_copy_flag(op: str, copy: Any, allow_none: bool = False) -> None:
    """Refuse a ``copy=`` flag that is not a bool (or None where ``allow_none``).

    Its truth value decides whether memory is copied or borrowed, so an array
    (whose truth value numpy refuses) or a string is a `ValidationError`.
    """
    if isinstance(copy, (bool, np.bool_)) or (allow_none and copy is None):
        return
    allowed = "True, False or None" if allow_none else "True or False"
    raise ValidationError(
        op,
        f"copy must be {allowed}, got {type(copy).__name__}",
        kind="INVALID_ARGUMENT",
        copy=copy,
    )


def count_copy(nbytes: int) -> None:
    """Count a copy of ``nbytes`` that was made (after `check_copy` allowed it)."""
    global _copies, _bytes
    with _lock:
        _copies += 1
        _bytes += nbytes


@contextmanager
def forbid_copies() -> Iterator[None]:
    """Make any physical copy in this thread raise `CopyForbiddenError` (nestable)."""
    _forbid.depth += 1
    try:
        yield
    finally:
        _forbid.depth -= 1


class NotCopyable:
    """A base for objects that own or lend memory (tensors, views, groups, owners):
    pickling, ``copy.copy`` and ``copy.deepcopy`` would copy or alias it
    implicitly, so each raises the one `NotCopyableError` (kind NOT_COPYABLE)
    naming the class."""

    __slots__ = ()

    def __reduce__(self) -> NoReturn:
        raise not_copyable(_name(self))

    def __copy__(self) -> NoReturn:
        raise not_copyable(_name(self))

    def __deepcopy__(self, memo: Any) -> NoReturn:
        raise not_copyable(_name(self))


def _name(obj: object) -> str:
    # A view names its kind ("TensorView" or "TensorViewMut"); others their class.
    return str(getattr(obj, "_kind", type(obj).__name__))
