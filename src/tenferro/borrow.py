"""Alias counting and the exclusive-borrow protocol (DESIGN §3).

numpy collapses a view's ``base`` chain to the first array that owns its memory or
whose own base is not an ndarray. Every array tenferro hands out is a fresh view
sliced from a per-buffer *root* built with ``np.asarray`` over a `_Memory` holder
(its base is the holder, not an ndarray), so every live view of a buffer holds
exactly one reference to that root. The root's reference count minus the
references tenferro holds itself is therefore the number of live aliases.

INVARIANT: the object that is counted (the root) is never the object handed out;
every handed-out array is a new view of it, and nothing reachable from one is
writable or uncounted:

* the holder lends the memory to numpy once, through ``__array_interface__``,
  which is deleted as soon as the root exists: ``np.asarray(root.base)`` then
  makes a harmless 0-d object array, never a second (uncounted) array over the
  memory;
* the holder exports no buffer, so numpy refuses ``flags.writeable = True`` on a
  read root, on a sealed write root and on every array derived from them (a
  memoryview, even a read-only one, would lead back through ``.obj`` to the
  writable internal array).

The holder keeps the memory alive through a private slot; reaching it needs
``gc.get_referents`` on a tenferro object, the same introspection that finds
every `HostBuffer` with ``gc.get_objects()`` (documented in docs/internals.md as
out of reach, like ctypes and raw ``__array_interface__`` pointers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._roots import root_over

__all__ = [
    "as_memoryview",
    "make_read_root",
    "make_write_root",
    "seal_write_root",
]


def as_memoryview(arr: np.ndarray[Any, Any]) -> memoryview:
    """A memoryview of a contiguous array (numpy's stubs miss the buffer protocol on 3.11)."""
    return memoryview(arr)  # type: ignore[arg-type]


class _Memory:
    """Keeps a buffer's memory alive for its root; lends it to nobody.

    The root is built in C over the buffer's data pointer with this holder as its
    ``base`` (`tenferro._roots.root_over`): the holder exports no buffer and no array
    interface, ever, so no array can be built from it and no array whose base
    chain ends in it can be made writable once frozen.
    """

    __slots__ = ("_keep",)

    def __init__(self, flat: np.ndarray[Any, Any]) -> None:
        # INVARIANT: `_keep` holds the memory for as long as any array built on
        # this holder lives (they reference the holder through their root).
        self._keep = flat


class _WriteMemory(_Memory):
    """The holder of a write root (adoption refuses arrays whose chain ends in one)."""

    __slots__ = ()


def make_read_root(flat: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A read-only root over the memory of the 1-D contiguous ``flat`` whose views
    cannot be made writable.

    Never hand the root itself out: hand out views of it (`HostBuffer.read_flat`).
    """
    return root_over(flat, _Memory(flat), False)


def make_write_root(flat: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A writable root over ``flat``'s memory, made fresh for each exclusive borrow.

    Its base is a `_WriteMemory` holder (not an ndarray), so every view of it
    collapses onto the root and holds one reference to it: the root's reference
    count counts the arrays that escaped the borrow.
    """
    return root_over(flat, _WriteMemory(flat), True)


def seal_write_root(wroot: np.ndarray[Any, Any]) -> None:
    """Freeze a write root at the end of its borrow; neither it nor its views can be thawed.

    The holder exports no buffer, so numpy refuses to make the root writable again.
    """
    wroot.flags.writeable = False
