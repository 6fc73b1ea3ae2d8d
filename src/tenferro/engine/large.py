"""Large elementwise kernels: one threaded numexpr pass where it gives numpy's exact result.

A single numpy ufunc over operands far larger than the caches runs on one
thread at the speed memory streams to one core. Pooling the output removes the
allocator's share (page faults, zeroing), but that share is small next to the
kernel once numpy's own large allocations use transparent huge pages, so a
pooled loop alone measured barely faster than numpy allocating fresh
(`python -m tenferro bench --only pool`, docs/engine.md "Large outputs").
numexpr evaluates the same operation in cache-sized blocks on its own thread
pool (the engine's ``threads``, applied globally by `CpuEngine`), which
measured 1.5-3x faster than ``np.add(a, b, out=...)`` from 4M elements.

Only operations whose numexpr result is bit-for-bit numpy's go this way: ``+ -
* /`` of two F32 or F64 arrays (IEEE-754 rounds each of them exactly, so the
two libraries agree everywhere, NaN and infinities included). Everything else
(integer and complex arithmetic, powers, functions, comparisons, scalars) keeps
the plain ufunc call.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["LARGE_MIN", "binary"]

Array = np.ndarray[Any, Any]

#: Elements from which `binary` hands ``+ - * /`` to numexpr. Measured side by side
#: (`python -m tenferro bench --only pool`, and the steady-state add rows of
#: ``--only engine``): below about 1M elements the operands live in the last-level
#: cache, numexpr's per-call setup (some 20 µs) is a visible share and numpy's
#: single SIMD loop is as fast; from 4M on numexpr's threaded blocks win.
LARGE_MIN = 1 << 22

_SOURCES: dict[Any, str] = {
    np.add: "a + b",
    np.subtract: "a - b",
    np.multiply: "a * b",
    np.true_divide: "a / b",
}
_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))

_lock = threading.Lock()
_compiled: dict[tuple[Any, np.dtype[Any]], Any] = {}


def _numexpr_kernel(ufunc: Any, dtype: np.dtype[Any]) -> Any:
    """The compiled numexpr program for ``ufunc`` on two ``dtype`` arrays, or None."""
    key = (ufunc, dtype)
    nex = _compiled.get(key)
    if nex is None:
        source = _SOURCES.get(ufunc)
        if source is None or dtype not in _DTYPES:
            return None
        import numexpr
        from numexpr.necompiler import getType

        kind = getType(np.empty(0, dtype))  # numexpr's own name for the dtype
        nex = numexpr.NumExpr(source, [("a", kind), ("b", kind)])
        with _lock:
            _compiled[key] = nex
    return nex


def binary(ufunc: Any, a: Any, b: Any, out: Array) -> None:
    """``ufunc(a, b, out=out)`` for large operands; borrows ``a`` and ``b``, writes ``out``.

    ``a`` and ``b`` have ``out``'s shape or are scalars (the elementwise checks);
    every element of ``out`` is written, as by the ufunc itself. numexpr runs only
    for two arrays of ``out``'s dtype that are either ``out`` itself or do not
    overlap it (numexpr reads and writes block by block, so a shifted overlap
    would read values it already wrote); anything else is the plain ufunc call.
    """
    dtype = out.dtype
    if (
        out.size >= LARGE_MIN
        and a.__class__ is np.ndarray
        and b.__class__ is np.ndarray
        and a.dtype is dtype
        and b.dtype is dtype
        and a.shape == out.shape
        and b.shape == out.shape
        and _separate(a, out)
        and _separate(b, out)
    ):
        nex = _numexpr_kernel(ufunc, dtype)
        if nex is not None:
            # INVARIANT: both operands have out's shape and dtype, so numexpr writes
            # every element of out with the value numpy's ufunc would (see above).
            nex(a, b, out=out, order="K", casting="no", ex_uses_vml=False)
            return
    ufunc(a, b, out=out)


def _separate(x: Array, out: Array) -> bool:
    """True when ``x`` is ``out`` element for element, or shares no memory with it."""
    if x.ctypes.data == out.ctypes.data and x.strides == out.strides:
        return True
    return not np.may_share_memory(x, out)
