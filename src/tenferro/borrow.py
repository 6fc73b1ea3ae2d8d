"""Alias counting and the exclusive-borrow protocol (DESIGN §3).

numpy collapses a view's ``base`` chain to the first array that owns its memory or
whose own base is not an ndarray. Every array tenferro hands out is sliced from a
per-buffer *root* built with ``np.frombuffer(memoryview(...))`` (its base is the
memoryview), so every live view of a buffer holds exactly one reference to that
root. The root's reference count minus the references tenferro holds itself is
therefore the number of live aliases.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["as_memoryview", "extra_refs", "make_read_root", "make_write_root"]

_getrefcount = sys.getrefcount


def as_memoryview(arr: np.ndarray[Any, Any]) -> memoryview:
    """A memoryview of a contiguous array (numpy's stubs miss the buffer protocol on 3.11)."""
    return memoryview(arr)  # type: ignore[arg-type]


def make_read_root(flat: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A read-only root over ``flat``'s memory whose views cannot be made writable.

    The memoryview is read-only, so numpy refuses ``flags.writeable = True`` on
    every array derived from this root.
    """
    return np.frombuffer(as_memoryview(flat).toreadonly(), dtype=flat.dtype)


def make_write_root(flat: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A writable root over ``flat``'s memory, made fresh for each exclusive borrow."""
    return np.frombuffer(as_memoryview(flat), dtype=flat.dtype)


class _Probe:
    __slots__ = ("root",)

    def __init__(self) -> None:
        self.root: Any = None

    def refs(self) -> int:
        return _getrefcount(self.root)


def _calibrate() -> int:
    # The baseline depends on the interpreter (3.14 borrows some references), so it
    # is measured with the very same access pattern the counters below use.
    probe = _Probe()
    probe.root = make_write_root(np.empty(1))
    return probe.refs()


#: References a root has when it is held only by its owning slot.
_BASELINE = _calibrate()


def extra_refs(refs: int) -> int:
    """Aliases implied by a raw ``sys.getrefcount`` taken as ``_Probe.refs`` does."""
    return refs - _BASELINE
