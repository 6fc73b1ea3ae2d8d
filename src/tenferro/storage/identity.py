"""Allocation identities: domain ids and allocation ids from thread-safe counters."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

__all__ = ["AllocationDomainId", "AllocationId"]

_lock = threading.Lock()
_domain_counter = itertools.count(1)


@dataclass(frozen=True, slots=True, order=True)
class AllocationDomainId:
    """Identity of an allocation domain (a runtime, a shared-memory owner, ...)."""

    value: int

    @classmethod
    def fresh(cls) -> AllocationDomainId:
        """A new domain id, unique in this process (global counter)."""
        with _lock:
            return cls(next(_domain_counter))

    def __repr__(self) -> str:
        return f"AllocationDomainId({self.value})"


@dataclass(frozen=True, slots=True, order=True)
class AllocationId:
    """Identity of one allocation within its domain."""

    value: int

    def __repr__(self) -> str:
        return f"AllocationId({self.value})"


class AllocationIdCounter:
    """A thread-safe source of `AllocationId`s, one per domain."""

    __slots__ = ("_counter", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)

    def next(self) -> AllocationId:
        with self._lock:
            return AllocationId(next(self._counter))
