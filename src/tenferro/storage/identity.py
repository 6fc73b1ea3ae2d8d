"""Allocation identities: domain ids, allocation ids, keys and root identities.

Memory that is not plain host memory carries an identity. An `AllocationKey`
pairs the `AllocationDomainId` of the runtime (or shared-memory owner, or group
import) that made the allocation with the `AllocationId` of the allocation inside
it. Two tensors are the same physical memory exactly when their keys are equal.
Plain host tensors have no key (compare their buffer addresses instead).

Domain ids come from one process-wide counter (`AllocationDomainId.fresh`):
every host buffer imported into a group takes one, so does every domain.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .span import RootBoundSpan, RootResourceExtent

__all__ = [
    "AllocationDomainId",
    "AllocationId",
    "AllocationIdCounter",
    "AllocationKey",
    "RootResourceIdentity",
    "next_host_allocation_id",
]

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

    @classmethod
    def from_backend_id(cls, value: int) -> AllocationId:
        """Wrap a provider's own allocation number."""
        return cls(int(value))

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


#: Local ids for host buffers imported into groups (one counter for the process,
#: like upstream's ``NEXT_HOST_ALLOCATION``).
_host_allocations = AllocationIdCounter()


def next_host_allocation_id() -> AllocationId:
    """The next local id for a host buffer imported into a group."""
    return _host_allocations.next()


@dataclass(frozen=True, slots=True, order=True)
class AllocationKey:
    """``(domain, local)``: the identity of one physical allocation."""

    domain: AllocationDomainId
    local: AllocationId

    def __post_init__(self) -> None:
        domain: object = self.domain
        local: object = self.local
        if not (isinstance(domain, AllocationDomainId) and isinstance(local, AllocationId)):
            from ..errors import ValidationError

            raise ValidationError(
                "AllocationKey",
                "an AllocationKey needs an AllocationDomainId and an AllocationId, got "
                f"{type(domain).__name__} and {type(local).__name__}",
                kind="INVALID_ARGUMENT",
            )

    def __repr__(self) -> str:
        return f"AllocationKey({self.domain.value}:{self.local.value})"


@dataclass(frozen=True, slots=True)
class RootResourceIdentity:
    """The identity of one imported root: its key and the extent it covers."""

    extent: RootResourceExtent

    @property
    def key(self) -> AllocationKey:
        return self.extent.key

    def root_span(self) -> RootBoundSpan:
        """The span covering the whole root (what the owner's single claim holds)."""
        return self.extent.root_span()
