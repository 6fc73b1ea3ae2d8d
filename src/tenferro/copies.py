"""Copy accounting: every physical copy the library makes is named and counted."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from .errors import CopyForbiddenError

__all__ = ["CopyStats", "copy_stats", "forbid_copies", "record_copy"]


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
    global _copies, _bytes
    if getattr(_forbid, "depth", 0):
        raise CopyForbiddenError(
            op,
            f"a physical copy of {nbytes} bytes was attempted inside forbid_copies(); "
            "borrow instead (as_view, host_data, map_read) or leave the forbid_copies block",
            nbytes=nbytes,
        )
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
