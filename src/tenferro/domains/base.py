"""`SharedTensorAllocationDomain`: where an engine may place its outputs.

A domain is an owner of allocations that all share one `AllocationDomainId`.
An engine built with ``CpuEngine(allocation_domain=d)`` asks ``d`` for its output
buffers instead of its host pool. Tensors a domain allocates carry an identity
(``allocation_domain == d.id()``, a fresh ``allocation_id`` each) and the
domain's memory kind; they are never read implicitly: ``host_data()`` refuses
them, while ``map_read()`` / ``with_host_read`` go through the provider's
mapping when it has one.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..storage.identity import AllocationDomainId
from ..tensor import Tensor

__all__ = ["SharedTensorAllocationDomain"]


@runtime_checkable
class SharedTensorAllocationDomain(Protocol):
    """The protocol a shared allocation domain implements.

    ``id()`` returns the stable identity shared by every allocation from this
    owner. ``allocate(dtype, shape)`` returns a compact column-major tensor in
    the domain; its storage may be uninitialised (the caller writes every
    element before reading). Invalid shapes or dtypes raise `ValidationError`;
    a failed provider allocation raises a `TenferroError` naming the domain.
    """

    def id(self) -> AllocationDomainId: ...

    def allocate(self, dtype: Any, shape: Any) -> Tensor: ...
