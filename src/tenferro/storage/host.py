"""`HostBuffer`: one 1-D host buffer, its recycler, its roots and its borrow state.

This is the storage of a plain host tensor (the seed's ``HostData``) and the host
root of an allocation-group owner. It owns three arrays over the same memory:

* ``owner``: the allocation itself (a pool buffer whose capacity may exceed the
  tensor's size, or a writable array over an adopted caller buffer);
* ``flat``: the first ``length`` elements, writable, library-internal, never handed
  out (kernels write through it with ``out=``);
* ``_root``: created lazily on the first shared borrow, read-only and un-flippable;
  every read-only array handed out is sliced from it, so its reference count is
  the number of live aliases (see `tenferro.borrow`).
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ..borrow import _BASELINE, make_read_root, make_write_root
from ..errors import BorrowError

if TYPE_CHECKING:
    from ..engine.pool import BufferPool

__all__ = ["HostBuffer"]

_getrefcount = sys.getrefcount


class HostBuffer:
    """A host buffer with an optional weak link to the pool that should get it back."""

    __slots__ = (
        "__weakref__",
        "_root",
        "_stale",
        "exclusive",
        "flat",
        "origin",
        "owner",
        "recycler",
    )

    def __init__(
        self,
        owner: np.ndarray[Any, Any],
        flat: np.ndarray[Any, Any],
        recycler: weakref.ref[BufferPool] | None = None,
        origin: np.ndarray[Any, Any] | None = None,
    ) -> None:
        self.owner = owner
        self.flat = flat
        self.recycler = recycler
        # The caller's adopted array, frozen (read-only) while we own the memory.
        self.origin = origin
        self._root: np.ndarray[Any, Any] | None = None
        # Writable roots of ended exclusive borrows that still had aliases.
        self._stale: list[np.ndarray[Any, Any]] | None = None
        # Name of the operation holding an exclusive borrow, or None.
        self.exclusive: str | None = None

    # -- identity ----------------------------------------------------------------
    @property
    def address(self) -> int:
        """The address of the first element (what `host_data()` points at)."""
        return int(self.flat.ctypes.data)

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self.flat.dtype
        return dtype

    def __len__(self) -> int:
        return int(self.flat.shape[0])

    # -- alias accounting -----------------------------------------------------------
    def alias_count(self) -> int:
        """Live arrays or views (handed out by tenferro) that can see this memory."""
        n = 0
        if self._root is not None:
            n = _getrefcount(self._root) - _BASELINE
        if self._stale:
            n += self._stale_aliases()
        return n

    def _stale_aliases(self) -> int:
        assert self._stale is not None
        alive = []
        count = 0
        for root in self._stale:
            # One reference from the list, one from `root`, one from the argument.
            extra = _getrefcount(root) - 3
            if extra > 0:
                alive.append(root)
                count += extra
        self._stale = alive or None
        return count

    # -- shared borrows ---------------------------------------------------------------
    def read_root(self) -> np.ndarray[Any, Any]:
        """The read-only root; every shared borrow is a view of it."""
        root = self._root
        if root is None:
            root = self._root = make_read_root(self.flat)
        return root

    def read_flat(self, dtype: np.dtype[Any], offset: int, count: int) -> np.ndarray[Any, Any]:
        """A read-only 1-D alias of ``count`` elements of ``dtype`` from element ``offset``."""
        root = self._root
        if root is None:
            root = self._root = make_read_root(self.flat)
        if dtype != root.dtype:
            root = root.view(dtype)
        if offset == 0 and count == root.shape[0]:
            return root
        return root[offset : offset + count]

    def check_shared(self, op: str) -> None:
        """Refuse a shared borrow while an exclusive borrow is active."""
        if self.exclusive is not None:
            raise BorrowError(
                op,
                f"the buffer is exclusively borrowed by {self.exclusive}; "
                "leave that block before reading the tensor",
                kind="EXCLUSIVELY_BORROWED",
                holder=self.exclusive,
            )

    # -- exclusive borrows --------------------------------------------------------------
    def check_exclusive(self, op: str) -> None:
        """Refuse exclusive access while any alias is alive or another borrow is active."""
        if self.exclusive is not None:
            raise BorrowError(
                op,
                f"the buffer is already exclusively borrowed by {self.exclusive}; "
                "leave that block first",
                kind="EXCLUSIVELY_BORROWED",
                holder=self.exclusive,
            )
        aliases = self.alias_count()
        if aliases:
            raise BorrowError(
                op,
                f"{aliases} live alias(es) of this buffer (arrays from host_data/map_read/"
                "to_numpy, views or guards) are still alive; delete them (del, or leave "
                "their with-block) before writing",
                kind="ALIASED",
                aliases=aliases,
            )

    def begin_exclusive(self, op: str) -> np.ndarray[Any, Any]:
        """Start an exclusive borrow; returns a fresh writable root for this borrow."""
        self.check_exclusive(op)
        self.exclusive = op
        return make_write_root(self.flat)

    def end_exclusive(self, wroot: np.ndarray[Any, Any], handed: list[Any]) -> None:
        """End an exclusive borrow: arrays handed out become read-only; escapes are tracked."""
        for ref in handed:
            arr = ref()
            if arr is not None:
                arr.flags.writeable = False
        arr = None  # the loop variable must not count as an alias below
        wroot.flags.writeable = False
        # `wroot` here is referenced by the caller's frame, by `wroot` and the argument.
        if _getrefcount(wroot) > _WROOT_BASELINE:
            if self._stale is None:
                self._stale = []
            self._stale.append(wroot)
        self.exclusive = None

    # -- recycling -----------------------------------------------------------------------
    def detach_recycler(self) -> None:
        self.recycler = None

    def __del__(self) -> None:
        recycler = self.recycler
        if recycler is None:
            return
        pool = recycler()
        if pool is None:
            return  # the engine is gone: the buffer is simply freed
        pool.recycle(self.owner, self.alias_count())


def _calibrate_wroot() -> int:
    # Mirror `end_exclusive`'s call shape: the caller holds one reference.
    class _Calib(HostBuffer):
        __slots__ = ("measured",)

        def end_exclusive(self, wroot: np.ndarray[Any, Any], handed: list[Any]) -> None:
            self.measured = _getrefcount(wroot)

    buf = _Calib(np.empty(1), np.empty(1))
    w = make_write_root(buf.flat)
    buf.end_exclusive(w, [])
    return int(buf.measured)


_WROOT_BASELINE = _calibrate_wroot()
