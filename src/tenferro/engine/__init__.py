"""The CPU engine: pooled uninitialised outputs, contraction, elementwise, fusion."""

from __future__ import annotations

from .cpu import CpuEngine, applied_threads, default_engine
from .pool import BufferPool, BufferPoolCacheStats, BufferPoolStats
from .ufuncs import array_ufunc as _array_ufunc  # noqa: F401  (registers the operators)

__all__ = [
    "BufferPool",
    "BufferPoolCacheStats",
    "BufferPoolStats",
    "CpuEngine",
    "applied_threads",
    "default_engine",
]
