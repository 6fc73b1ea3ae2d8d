"""`Recycler`: what a `HostBuffer` gives its memory back to when it dies.

Storage knows nothing of the engine: a recycler is any object with one
`recycle` method (the engine's `BufferPool` is one). A buffer holds a weak
reference to its recycler, so a dropped engine simply lets its buffers be freed.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Recycler"]


@runtime_checkable
class Recycler(Protocol):
    """Takes released buffers back (`HostBuffer.__del__` calls `recycle`)."""

    def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None:
        """Take ``owner`` back; keep it for reuse only when ``aliases == 0``.

        Runs inside a finalizer: it must not raise and must not block for long.
        """
