"""Shared allocation domains: memory that is not plain host memory, with an identity.

`SharedTensorAllocationDomain` is the protocol (``id()``, ``allocate(dtype,
shape)``); `SharedMemoryDomain` is the implementation that ships: POSIX shared
memory, so that worker processes read a tensor without pickling or copying it.
"""

from __future__ import annotations

from .base import SharedTensorAllocationDomain
from .shared_memory import SharedMemoryDomain, ShareHandle, share_handle

__all__ = ["ShareHandle", "SharedMemoryDomain", "SharedTensorAllocationDomain", "share_handle"]
