"""autoray registrations for numpy's positional spellings of standard functions.

The namespace keeps the array API's signatures (``take(x, indices, /, *,
axis=None)``, ``flip(x, /, *, axis=None)``, ``squeeze(x, /, axis)``); autoray's
callers pass numpy's (``do("take", x, idx, 1)``, ``do("flip", x, 1)``, quimb's
``Tensor.flip``; ``do("squeeze", x)`` for every length-one axis). These adapters
are registered for the ``tenferro`` backend only; each has its function's
ownership.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def _take(x: Any, indices: Any, axis: Any = None, **kwargs: Any) -> Any:
    from ._indexing import take

    return take(x, indices, axis=axis)


def _flip(x: Any, axis: Any = None, **kwargs: Any) -> Any:
    from ._manipulation import flip

    return flip(x, axis=axis)


def _squeeze(x: Any, axis: Any = None, **kwargs: Any) -> Any:
    from ._manipulation import squeeze

    if axis is None:
        axis = tuple(i for i, d in enumerate(x.shape) if d == 1)
    return squeeze(x, axis=axis)


def register(autoray: Any) -> None:
    """Register the adapters above for the ``tenferro`` backend."""
    for name, fn in (("take", _take), ("flip", _flip), ("squeeze", _squeeze)):
        autoray.register_function("tenferro", name, fn)
