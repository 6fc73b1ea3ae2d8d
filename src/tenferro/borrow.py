"""Alias counting and the exclusive-borrow protocol (DESIGN §3).

numpy collapses a view's ``base`` chain to the first array that owns its memory or
whose own base is not an ndarray. Every array tenferro hands out is sliced from a
per-buffer *root* built with ``np.frombuffer(memoryview(...))`` (its base is the
memoryview), so every live view of a buffer holds exactly one reference to that
root. The root's reference count minus the references tenferro holds itself is
therefore the number of live aliases.

Read roots sit on a read-only memoryview, so nothing derived from them can ever be
made writable. Write roots (one per exclusive borrow) sit on a `_WriteMemory`
holder that exports no buffer, so once a borrow ends and freezes them, they stay
frozen too (see `seal_write_root`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "as_memoryview",
    "make_read_root",
    "make_write_root",
    "seal_write_root",
]


def as_memoryview(arr: np.ndarray[Any, Any]) -> memoryview:
    """A memoryview of a contiguous array (numpy's stubs miss the buffer protocol on 3.11)."""
    return memoryview(arr)  # type: ignore[arg-type]


def make_read_root(flat: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A read-only root over ``flat``'s memory whose views cannot be made writable.

    The memoryview is read-only, so numpy refuses ``flags.writeable = True`` on
    every array derived from this root.
    """
    return np.frombuffer(as_memoryview(flat).toreadonly(), dtype=flat.dtype)


class _WriteMemory:
    """Lends a buffer's memory to numpy through ``__array_interface__``, and keeps it alive.

    Why not a memoryview: numpy lets anyone set ``flags.writeable = True`` again on
    an array whose base chain ends in an object that exports a *writable* buffer,
    so an array frozen at the end of an exclusive borrow could be thawed and
    written later. This holder exports no buffer at all: once the root and the
    arrays handed out are frozen, numpy refuses to make them writable again.
    """

    __slots__ = ("__array_interface__", "_keep")

    def __init__(self, flat: np.ndarray[Any, Any]) -> None:
        # INVARIANT: `_keep` holds the memory for as long as any array built on
        # this holder lives (they reference the holder through their root).
        self._keep = flat
        self.__array_interface__ = {
            "shape": (int(flat.shape[0]),),
            "typestr": flat.dtype.str,
            "data": (int(flat.ctypes.data), False),
            "version": 3,
        }

    def seal(self) -> None:
        """Make the interface read-only for good (no new writable array can be built)."""
        iface = dict(self.__array_interface__)
        iface["data"] = (iface["data"][0], True)
        self.__array_interface__ = iface


def make_write_root(flat: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A writable root over ``flat``'s memory, made fresh for each exclusive borrow.

    Its base is a `_WriteMemory` holder (not an ndarray), so every view of it
    collapses onto the root and holds one reference to it: the root's reference
    count counts the arrays that escaped the borrow.
    """
    root: np.ndarray[Any, Any] = np.asarray(_WriteMemory(flat))
    return root


def seal_write_root(wroot: np.ndarray[Any, Any]) -> None:
    """Freeze a write root at the end of its borrow; neither it nor its views can be thawed."""
    wroot.flags.writeable = False
    holder: object = wroot.base  # numpy's stubs type `base` as ndarray | None
    if isinstance(holder, _WriteMemory):
        holder.seal()
