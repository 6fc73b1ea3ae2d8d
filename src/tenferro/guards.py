"""Borrow guards: `HostReadGuard` (shared) and `HostWriteGuard` (exclusive)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np

from .copies import NotCopyable
from .dtype import as_numpy_dtype
from .errors import BorrowError, DTypeError, ValidationError
from .storage.host import HostBuffer

__all__ = ["ExclusiveBorrow", "HostReadGuard", "HostWriteGuard"]


class HostReadGuard(NotCopyable):
    """A shared borrow of a tensor's elements; ``.array`` is read-only, column-major.

    Usable directly or as a context manager; leaving the block releases the alias.
    Pickling or copying it is refused (`NotCopyableError`): a pickle would be an
    uncounted copy of the elements (even under ``forbid_copies()``), a copy a
    second guard over the same alias.
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
        array = self.array
        return _array_protocol(
            "HostReadGuard.__array__", array.dtype, array.size, lambda: array, dtype, copy
        )

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

    __slots__ = ("_buffer", "_handed", "_prune_at", "_wroot", "op")

    def __init__(
        self, buffer: HostBuffer, op: str, own_pins: int = 0, own_aliases: int = 0
    ) -> None:
        self._buffer = buffer
        self.op = op
        # own_pins / own_aliases: engine reads of this buffer, and counted aliases of
        # it, held by the borrower itself (see HostBuffer.begin_exclusive).
        self._wroot: np.ndarray[Any, Any] | None = buffer.begin_exclusive(op, own_pins, own_aliases)
        self._handed: list[weakref.ref[np.ndarray[Any, Any]]] = []
        self._prune_at = 64

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
        handed = self._handed
        handed.append(weakref.ref(arr))
        if len(handed) >= self._prune_at:
            # A long block handing out many short-lived arrays: forget the dead ones.
            handed[:] = [r for r in handed if r() is not None]
            self._prune_at = 2 * len(handed) + 64
        return arr

    def end(self) -> None:
        """End the borrow (idempotent): handed-out arrays become read-only."""
        if self._wroot is None:
            return
        wroot = self._wroot
        self._wroot = None
        handed = self._handed
        self._handed = []
        self._buffer.end_exclusive(wroot, handed)

    def __del__(self) -> None:
        # A borrow nobody can reach any more (a guard or mutable view dropped
        # without `with`) must not leave its buffer exclusively borrowed forever.
        if getattr(self, "_wroot", None) is not None:
            self.end()


class HostWriteGuard(NotCopyable):
    """An exclusive borrow; ``.array`` is writable, column-major, until the block ends."""

    __slots__ = ("_array", "_borrow")

    def __init__(self, borrow: ExclusiveBorrow, array: np.ndarray[Any, Any]) -> None:
        # ``array``: the column-major array over the borrow's root, already handed out.
        self._borrow = borrow
        self._array: np.ndarray[Any, Any] | None = array

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
        array = self.array
        item = array[index]
        if isinstance(item, np.ndarray) and np.may_share_memory(item, array):
            # A view of the writable array: frozen with the others when the borrow
            # ends (a copy made by fancy indexing is the caller's own).
            self._borrow.hand_out(item)
        return item

    def __setitem__(self, index: Any, value: Any) -> None:
        self.array[index] = value

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        array = self.array
        return _array_protocol(
            "HostWriteGuard.__array__", array.dtype, array.size, lambda: array, dtype, copy
        )

    def __del__(self) -> None:
        # A guard dropped without `with` still ends its borrow. Drop our own array
        # first so it is not mistaken for an alias that escaped.
        self._array = None
        borrow = getattr(self, "_borrow", None)
        if borrow is not None:
            borrow.end()


def _array_protocol(
    op: str,
    have: Any,
    size: int,
    make: Callable[[], np.ndarray[Any, Any]],
    dtype: Any,
    copy: bool | None,
) -> np.ndarray[Any, Any]:
    """numpy 2's ``__array__(dtype, copy)`` over a borrowed array that ``make`` returns.

    ``have`` is the borrowed dtype (a `DType` or numpy dtype) and ``size`` its
    element count. Refusals and the copy record happen before ``make`` runs, so
    a refusal's traceback holds no alias. Copies are named and counted.
    """
    from .copies import check_copy, check_copy_flag, count_copy

    check_copy_flag(op, copy, allow_none=True)
    have_np = np.dtype(have.numpy if hasattr(have, "numpy") else have)
    if dtype is not None:
        dtype = as_numpy_dtype(dtype, op)
    convert = dtype is not None and dtype != have_np
    if convert and copy is False:
        raise ValidationError(
            op,
            f"converting {getattr(have, 'name', have_np)} to {np.dtype(dtype)} needs a copy "
            "but copy=False was given; pass copy=None",
            kind="COPY_REQUIRED",
        )
    if convert or copy:
        target = np.dtype(dtype) if convert else have_np
        # Refused before make() (no alias in a traceback); counted once made.
        check_copy(f"{op}(copy)", size * target.itemsize)
        try:
            made = np.array(make(), dtype=target, order="K", copy=True)
        except (TypeError, ValueError) as exc:
            raise DTypeError(
                op,
                f"numpy cannot convert {have_np} to {target} ({exc}); convert with the "
                "engine (eng.convert / eng.cast) instead",
                kind="UNSUPPORTED_DTYPE",
                dtype=target,
            ) from None
        count_copy(size * target.itemsize)
        return made
    return make()
