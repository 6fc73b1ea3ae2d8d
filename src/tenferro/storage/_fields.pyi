"""Type stubs of `HostBuffer`'s compiled fields (storage/_fields.pyx)."""

import weakref
from typing import Any

import numpy as np

from .recycler import Recycler

def address(flat: np.ndarray[Any, Any]) -> int: ...

class BufferFields:
    owner: np.ndarray[Any, Any]
    flat: np.ndarray[Any, Any]
    recycler: weakref.ref[Recycler] | None
    origin: np.ndarray[Any, Any] | None
    _root: np.ndarray[Any, Any] | None
    _stale: list[np.ndarray[Any, Any]] | None
    exclusive: str | None
    failed_read: bool
    @property
    def core_pins(self) -> int: ...
    def __del__(self) -> None: ...

class ReturnLane:
    _lane: list[np.ndarray[Any, Any]]
    _lane_bytes: int
    _lane_max: int
    def acquire(self, dtype: np.dtype[Any], n: int, kept: bool = False) -> np.ndarray[Any, Any]: ...
    def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None: ...
    def take_lane_hits(self) -> int: ...
    def lane_pop_oldest(self) -> np.ndarray[Any, Any] | None: ...
    def _acquire_locked(
        self, dtype: np.dtype[Any], n: int, kept: bool = False
    ) -> np.ndarray[Any, Any]: ...
    def _recycle_locked(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None: ...
    def drain_lane(self) -> None: ...
