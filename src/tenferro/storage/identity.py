"""Allocation identities: domain ids, allocation ids, keys and root identities.

Memory that is not plain host memory carries an identity. An `AllocationKey`
pairs the `AllocationDomainId` of the runtime (or shared-memory owner, or group
import) that made the allocation with the `AllocationId` of the allocation inside
it. Two tensors are the same physical memory exactly when their keys are equal.
Plain host tensors have no key (compare their buffer addresses instead).

Domain ids come from one process-wide counter (`AllocationDomainId.fresh`):
every host buffer imported into a group takes one, so does every domain. A
minted id is ``epoch << 64 | serial``: ``serial`` is that counter, ``epoch`` a
random 64-bit number drawn when the process starts (and again in a forked
child). Shared memory carries keys between processes, so an id must not be
unique in one process only: two fresh processes count alike, and a forked child
starts from its parent's count, so ``serial`` alone would give different memory
equal keys (see docs/domains.md, "Identities across processes").
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ValidationError

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

#: Bits of a minted domain id below its epoch (the serial number's room).
EPOCH_SHIFT = 64
_SERIAL_MASK = (1 << EPOCH_SHIFT) - 1


def _new_epoch() -> int:
    # Never 0: ids a provider numbers itself (small ints) never equal minted ones.
    return int.from_bytes(os.urandom(8), "little") or 1


_lock = threading.Lock()
_domain_counter = itertools.count(1)
_epoch = _new_epoch()


def _reseed_after_fork() -> None:
    # INVARIANT: a forked child never mints an id its parent mints too. The counter
    # carries on from the parent's count in both, so the epoch must differ.
    global _epoch, _lock
    _lock = threading.Lock()  # the parent's may have been held by another thread
    _epoch = _new_epoch()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_after_fork)


@dataclass(frozen=True, slots=True, order=True)
class AllocationDomainId:
    """Identity of an allocation domain (a runtime, a shared-memory owner, ...).

    Ids minted by `fresh` are ``epoch << 64 | serial`` (see the module docstring);
    an id a provider numbers itself is any int and has epoch 0.
    """

    value: int

    @classmethod
    def fresh(cls) -> AllocationDomainId:
        """A new domain id: unique across processes, consecutive within one."""
        with _lock:
            return cls((_epoch << EPOCH_SHIFT) | next(_domain_counter))

    @property
    def epoch(self) -> int:
        """The random number of the process (or fork) that minted it; 0 if not minted."""
        return self.value >> EPOCH_SHIFT

    @property
    def serial(self) -> int:
        """The per-process count (what upstream calls the domain id: 1, 2, 3, ...)."""
        return self.value & _SERIAL_MASK

    @property
    def label(self) -> str:
        """``serial@epoch`` in hex for minted ids, the plain number otherwise."""
        epoch = self.epoch
        return f"{self.serial}@{epoch:016x}" if epoch else str(self.value)

    def __repr__(self) -> str:
        epoch = self.epoch
        if not epoch:
            return f"AllocationDomainId({self.value})"
        return f"AllocationDomainId(0x{epoch:016x}_{self.serial:016x})"


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
            raise ValidationError(
                "AllocationKey",
                "an AllocationKey needs an AllocationDomainId and an AllocationId, got "
                f"{type(domain).__name__} and {type(local).__name__}",
                kind="INVALID_ARGUMENT",
            )

    def __repr__(self) -> str:
        return f"AllocationKey({self.domain.label}:{self.local.value})"


# eq=False: each import is a distinct root, even of the same extent (two roots over
# one extent must never be mistaken for one), so identities compare by object.
@dataclass(frozen=True, slots=True, eq=False)
class RootResourceIdentity:
    """The identity of one imported root: its key and the extent it covers.

    Two imports are two roots: identities are equal only to themselves.
    """

    extent: RootResourceExtent

    @property
    def key(self) -> AllocationKey:
        return self.extent.key

    def root_span(self) -> RootBoundSpan:
        """The span covering the whole root (what the owner's single claim holds)."""
        return self.extent.root_span()
