"""Host allocations that fail as `OutOfMemoryError`, never as a raw numpy error.

numpy reports an allocation it cannot satisfy as a `MemoryError` (too little
memory), a `ValueError` ("array is too big") or, on some platforms, an
`OSError`; tenferro turns each into one `OutOfMemoryError` (a `TenferroError`
and a `MemoryError`) that names the operation and the size asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import OutOfMemoryError

__all__ = ["ALLOCATION_FAILURES", "host_empty", "out_of_memory"]

#: What numpy raises for an allocation it cannot satisfy.
ALLOCATION_FAILURES = (MemoryError, OSError, ValueError)

# Looked up at call time (a module global), so tests can make allocation fail.
_empty = np.empty


def out_of_memory(op: str, n: int, dtype: np.dtype[Any], exc: BaseException) -> OutOfMemoryError:
    """The typed error for a failed allocation of ``n`` elements of ``dtype``."""
    nbytes = n * dtype.itemsize
    return OutOfMemoryError(
        op,
        f"cannot allocate {nbytes} bytes ({n} x {dtype}): {type(exc).__name__}: {exc}; "
        "free tensors you no longer need (and clear the engine pool: eng.pool.clear()), "
        "or work on smaller pieces",
        nbytes=nbytes,
    )


def host_empty(op: str, n: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """A new uninitialised 1-D host array of ``n`` elements; `OutOfMemoryError` if impossible.

    Ownership: the caller owns the new array (nothing else sees it).
    """
    try:
        return _empty(n, dtype)
    except ALLOCATION_FAILURES as exc:
        raise out_of_memory(op, n, dtype, exc) from None
