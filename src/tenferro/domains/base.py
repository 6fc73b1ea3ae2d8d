"""`SharedTensorAllocationDomain`: where an engine may place its outputs.

A domain is an owner of allocations that all share one `AllocationDomainId`.
An engine built with ``CpuEngine(allocation_domain=d)`` asks ``d`` for the output of
``to_contiguous`` on a tensor of that domain, so the copy stays in the domain (as
upstream does); every other output still comes from the engine's host pool.
Tensors a domain allocates carry an identity (``allocation_domain == d.id()``,
a fresh ``allocation_id`` each) and the domain's memory kind; they are never
read implicitly: ``host_data()`` refuses them, while ``map_read()`` /
``with_host_read`` go through the provider's mapping when it has one.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..dtype import as_dtype
from ..errors import ValidationError
from ..group import tensor_from_owner
from ..layout import normalize_shape, shape_size
from ..storage.identity import AllocationDomainId
from ..storage.root import BackendStorage, import_backend_buffer
from ..tensor import Tensor

__all__ = ["SharedTensorAllocationDomain", "tensor_from_backend_buffer"]


@runtime_checkable
class SharedTensorAllocationDomain(Protocol):
    """The protocol a shared allocation domain implements.

    ``id()`` returns the stable identity shared by every allocation from this
    owner. ``allocate(dtype, shape)`` returns a compact column-major tensor in
    the domain; its storage may be uninitialised (the caller writes every
    element before reading). Invalid shapes or dtypes raise `ValidationError`;
    a failed provider allocation raises a `TenferroError` naming the domain
    (`OutOfMemoryError`, also a `MemoryError`, when there is no room).
    """

    def id(self) -> AllocationDomainId: ...

    def allocate(self, dtype: Any, shape: Any) -> Tensor: ...


def tensor_from_backend_buffer(buffer: BackendStorage, dtype: Any, shape: Any) -> Tensor:
    """Wrap a provider buffer as a group-backed tensor (what a domain's ``allocate`` returns).

    The buffer must report its allocation domain and id (else `RootImportError`
    kind MISSING_ALLOCATION_IDENTITY) and hold exactly ``prod(shape)`` elements
    of ``dtype``. Ownership: **moves** ``buffer`` into the tensor's owner.
    """
    op = "tensor_from_backend_buffer"
    dt = as_dtype(dtype, op)
    sh = normalize_shape(shape, op, dt.itemsize)
    if buffer.len() != shape_size(sh):
        raise ValidationError(
            op,
            f"shape {sh} needs {shape_size(sh)} elements but the buffer holds {buffer.len()}",
            kind="LENGTH_MISMATCH",
            expected=shape_size(sh),
            actual=buffer.len(),
        )
    return tensor_from_owner(import_backend_buffer(buffer, dt), dt, sh, op)
