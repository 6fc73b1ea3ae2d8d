"""`Recycler`: what a `HostBuffer` gives its memory back to when it dies.

Storage knows nothing of the engine: a recycler is any object with one
`recycle` method (the engine's `BufferPool` is one). A buffer holds a weak
reference to its recycler, so a dropped engine simply lets its buffers be freed.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Recycler", "never_pool"]


@runtime_checkable
class Recycler(Protocol):
    """Takes released buffers back (`HostBuffer.__del__` calls `recycle`)."""

    def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None:
        """Take ``owner`` back; keep it for reuse only when ``aliases == 0``.

        Runs inside a finalizer: it must not raise and must not block for long.
        """


def never_pool(buf: Any) -> None:
    """Make sure ``buf`` (a `HostBuffer`) never goes back to a pool, yet is forgotten.

    A failed call's traceback may keep an operand's internal writable array, so
    the operand's buffer must never be pooled again: its ``recycler`` is cleared.
    But a recycler that counts the bytes it handed out as live (the engine's
    `BufferPool`, through its ``forget_bytes`` method) must still hear when the
    buffer dies, or it would count them as live for good: a refused call must
    change no accounting. A finalizer tells it, once, when the buffer dies.
    """
    recycler = buf.recycler
    if recycler is None:
        return
    buf.recycler = None
    target = recycler()
    forget = getattr(target, "forget_bytes", None) if target is not None else None
    if forget is not None:
        # The finalizer holds the pool weakly and the size, never the memory.
        weakref.finalize(buf, _forget, recycler, buf.owner.nbytes)


def _forget(recycler: weakref.ref[Any], nbytes: int) -> None:
    target = recycler()
    if target is not None:
        target.forget_bytes(nbytes)
