"""Copy accounting: every physical copy the library makes is named and counted."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, NoReturn

from .errors import CopyForbiddenError, not_copyable

__all__ = [
    "CopyStats",
    "NotCopyable",
    "check_copy",
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
_forbid = threading.local()


def copy_stats() -> CopyStats:
    """The running totals of physical copies made by the library (all threads)."""
    with _lock:
        return CopyStats(_copies, _bytes)


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
    if getattr(_forbid, "depth", 0):
        raise CopyForbiddenError(
            op,
            f"a physical copy of {nbytes} bytes was attempted inside forbid_copies(); "
            "borrow instead (as_view, host_data, map_read) or leave the forbid_copies block",
            nbytes=nbytes,
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
    _forbid.depth = getattr(_forbid, "depth", 0) + 1
    try:
        yield
    finally:
        _forbid.depth -= 1


class NotCopyable:
    """A base for objects that own memory: pickling, ``copy.copy`` and
    ``copy.deepcopy`` would copy it implicitly, so each raises the one
    `NotCopyableError` (kind NOT_COPYABLE) naming the class."""

    __slots__ = ()

    def __reduce__(self) -> NoReturn:
        raise not_copyable(type(self).__name__)

    def __copy__(self) -> NoReturn:
        raise not_copyable(type(self).__name__)

    def __deepcopy__(self, memo: Any) -> NoReturn:
        raise not_copyable(type(self).__name__)
