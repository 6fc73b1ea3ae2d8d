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
    def __del__(self) -> None: ...
