"""Borrow guards: `HostReadGuard` (shared) and `HostWriteGuard` (exclusive)."""

from __future__ import annotations

import weakref
from types import TracebackType
from typing import Any

import numpy as np

from .errors import BorrowError
from .storage.host import HostBuffer

__all__ = ["ExclusiveBorrow", "HostReadGuard", "HostWriteGuard"]


class HostReadGuard:
    """A shared borrow of a tensor's elements; ``.array`` is read-only, column-major.

    Usable directly or as a context manager; leaving the block releases the alias.
    """

    __slots__ = ("_array",)

    def __init__(self, array: np.ndarray[Any, Any]) -> None:
        self._array: np.ndarray[Any, Any] | None = array

    @property
    def array(self) -> np.ndarray[Any, Any]:
        if self._array is None:
            raise BorrowError("HostReadGuard.array", "the read guard was released", kind="RELEASED")
        return self._array

    def release(self) -> None:
        """Drop the guard's alias now (leaving a ``with`` block does this)."""
        self._array = None

    def __enter__(self) -> HostReadGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        if copy:
            from .copies import record_copy

            record_copy("HostReadGuard.__array__(copy=True)", self.array.nbytes)
            return np.array(self.array, dtype=dtype, copy=True)
        return self.array if dtype is None else np.asarray(self.array, dtype=dtype)

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index: Any) -> Any:
        return self.array[index]

    def __iter__(self) -> Any:
        return iter(self.array)

    def tolist(self) -> Any:
        return self.array.tolist()

    def __repr__(self) -> str:
        if self._array is None:
            return "HostReadGuard(<released>)"
        return repr(self._array.reshape(-1, order="F").tolist())


class ExclusiveBorrow:
    """Bookkeeping of one exclusive borrow of a `HostBuffer`."""

    __slots__ = ("_buffer", "_handed", "_wroot", "op")

    def __init__(self, buffer: HostBuffer, op: str) -> None:
        self._buffer = buffer
        self.op = op
        self._wroot: np.ndarray[Any, Any] | None = buffer.begin_exclusive(op)
        self._handed: list[weakref.ref[np.ndarray[Any, Any]]] = []

    @property
    def active(self) -> bool:
        return self._wroot is not None

    def root(self, what: str) -> np.ndarray[Any, Any]:
        """The writable root while the borrow lasts."""
        if self._wroot is None:
            raise BorrowError(
                what,
                f"the exclusive borrow from {self.op} has ended; start a new one",
                kind="BORROW_ENDED",
            )
        return self._wroot

    def hand_out(self, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Remember an array handed out so it can be made read-only at the end."""
        self._handed.append(weakref.ref(arr))
        return arr

    def end(self) -> None:
        if self._wroot is None:
            return
        wroot = self._wroot
        self._wroot = None
        self._buffer.end_exclusive(wroot, self._handed)
        self._handed = []


class HostWriteGuard:
    """An exclusive borrow; ``.array`` is writable, column-major, until the block ends."""

    __slots__ = ("_array", "_borrow", "_shape")

    def __init__(
        self, borrow: ExclusiveBorrow, dtype: np.dtype[Any], offset: int, shape: tuple[int, ...]
    ) -> None:
        self._borrow = borrow
        self._shape = shape
        root = borrow.root(borrow.op)
        if dtype != root.dtype:
            root = root.view(dtype)
        n = 1
        for d in shape:
            n *= d
        flat = root[offset : offset + n]
        self._array: np.ndarray[Any, Any] | None = borrow.hand_out(
            flat.reshape(shape, order="F") if len(shape) != 1 else flat
        )

    @property
    def array(self) -> np.ndarray[Any, Any]:
        if self._array is None or not self._borrow.active:
            raise BorrowError(
                "HostWriteGuard.array", "the exclusive borrow has ended", kind="BORROW_ENDED"
            )
        return self._array

    def __enter__(self) -> HostWriteGuard:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def release(self) -> None:
        """End the borrow: handed-out arrays become read-only."""
        self._array = None
        self._borrow.end()

    def __getitem__(self, index: Any) -> Any:
        return self.array[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self.array[index] = value

    def __del__(self) -> None:
        # A guard dropped without `with` still ends its borrow.
        borrow = getattr(self, "_borrow", None)
        if borrow is not None:
            borrow.end()
