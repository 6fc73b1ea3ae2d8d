"""Importing roots: `import_host_vec`, `import_unique_root`, `import_backend_buffer`.

Host buffers get a fresh `AllocationDomainId` (the global counter) and a local
`AllocationId`: no copy. Provider buffers must name both.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..dtype import DType, as_dtype, dtype_of_array
from ..errors import (
    AccessError,
    RootImportError,
)
from ..placement import HOST_PLACEMENT, Placement
from .allocation import BackendAllocation, BackendStorageAllocation, HostAllocation
from .backend import DEFAULT_BACKEND_PLACEMENT, BackendStorage
from .diagnostics import RequestedIdentity, StorageOperation, StorageOperationContext
from .host import HostBuffer
from .identity import (
    AllocationDomainId,
    AllocationKey,
    RootResourceIdentity,
    next_host_allocation_id,
)
from .owned import OwnedSpanClaim, OwnedStorage
from .span import ByteRange, RootResourceExtent


# ---------------------------------------------------------------------------- imports
def _import_error(
    op: StorageOperation, requested: RequestedIdentity, message: str, **details: Any
) -> RootImportError:
    ctx = StorageOperationContext(op, requested)
    return RootImportError(
        op.value, f"{message} ({ctx})", context=ctx, requested=requested, **details
    )


def _import_extent(
    op: StorageOperation, key: AllocationKey, byte_len: int, dtype: DType, requested: ByteRange
) -> RootResourceExtent:
    """The extent of a new root of ``byte_len`` bytes; an invalid one is an IDENTITY error."""
    try:
        return RootResourceExtent(key, 0, byte_len, dtype.numpy.alignment)
    except AccessError as exc:
        raise _import_error(
            op,
            RequestedIdentity(requested, key),
            f"root-resource identity validation failed: {exc.message}",
            kind="IDENTITY",
        ) from None


def _sole_owner(
    pin: BackendAllocation,
    extent: RootResourceExtent,
    dtype: DType,
    placement: Placement,
    host: HostBuffer | None = None,
) -> OwnedStorage:
    """The owner of ``pin``, holding the one claim on its whole extent."""
    identity = RootResourceIdentity(extent)
    claim = OwnedSpanClaim(identity, identity.root_span())
    return OwnedStorage(pin, claim, dtype, placement, host)


def import_host_vec(buffer: HostBuffer, dtype: DType | None = None) -> OwnedStorage:
    """Import a host buffer as a root: a fresh domain id and local id, no copy.

    Ownership: **moves** ``buffer`` into the owner (its recycler comes along).
    """
    op = StorageOperation.IMPORT_HOST_VEC
    root_dtype = dtype_of_array(buffer.flat, op.value) if dtype is None else dtype
    byte_len = len(buffer) * root_dtype.itemsize
    key = AllocationKey(AllocationDomainId.fresh(), next_host_allocation_id())
    extent = _import_extent(op, key, byte_len, root_dtype, ByteRange(0, 0))
    pin = HostAllocation(extent, root_dtype, buffer)
    return _sole_owner(pin, extent, root_dtype, HOST_PLACEMENT, host=buffer)


def import_unique_root(
    allocation: BackendAllocation, dtype: Any, placement: Placement
) -> OwnedStorage:
    """Import one provider root and create its single claim."""
    op = StorageOperation.IMPORT_UNIQUE_ROOT
    if not isinstance(allocation, BackendAllocation):
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            f"expected a BackendAllocation, got {type(allocation).__name__}",
            kind="INVALID_ROOT",
        )
    dt = as_dtype(dtype, op.value)
    extent = allocation.root_extent()
    if not isinstance(extent, RootResourceExtent):
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            "root_extent() must return a RootResourceExtent",
            kind="IDENTITY",
        )
    return _sole_owner(allocation, extent, dt, placement)


def import_backend_buffer(buffer: BackendStorage, dtype: Any) -> OwnedStorage:
    """Import one provider buffer as the sole root owner of a tensor.

    The buffer must report its allocation domain and allocation id; a missing one
    is a `RootImportError` of kind MISSING_ALLOCATION_IDENTITY naming the backend
    and the field. ``placement()`` is optional: without it the root is device
    memory (`DEFAULT_BACKEND_PLACEMENT`); a value that is not a `Placement` is a
    `RootImportError` of kind INVALID_PLACEMENT. Ownership: **moves** ``buffer``
    into the owner.
    """
    op = StorageOperation.IMPORT_BACKEND_BUFFER
    dt = as_dtype(dtype, op.value)
    if isinstance(buffer, (HostBuffer, np.ndarray)):
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            "backend `host` did not provide backend buffer allocation identity; host "
            "buffers are imported with import_host_vec",
            kind="MISSING_ALLOCATION_IDENTITY",
            backend="host",
            field="backend buffer",
        )
    family = buffer.backend_family()
    reported = buffer.len()
    try:
        # operator.index, not int(): a numpy integer would wrap in the product.
        n = operator.index(reported)
        raw = RequestedIdentity(ByteRange(0, n * dt.itemsize))
    except (AccessError, TypeError) as exc:
        # The provider's length is its claim about the import, so a length that is
        # no byte count (negative, not an int, past the address space) is an
        # import refusal, not a span access error.
        why = exc.message if isinstance(exc, AccessError) else str(exc)
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            f"backend `{family}` reported len() = {reported!r} elements of {dt.name}, which is "
            f"not a valid byte length ({why}); fix the provider's len()",
            kind="IDENTITY",
            backend=family,
        ) from None
    domain = buffer.allocation_domain()
    if domain is None:
        raise _import_error(
            op,
            raw,
            f"backend `{family}` did not provide allocation domain allocation identity",
            kind="MISSING_ALLOCATION_IDENTITY",
            backend=family,
            field="allocation domain",
        )
    local = buffer.allocation_id()
    if local is None:
        raise _import_error(
            op,
            raw,
            f"backend `{family}` did not provide allocation id allocation identity",
            kind="MISSING_ALLOCATION_IDENTITY",
            backend=family,
            field="allocation id",
        )
    placement = _backend_placement(op, buffer, raw, family)
    extent = _import_extent(op, AllocationKey(domain, local), n * dt.itemsize, dt, raw.range)
    allocation = BackendStorageAllocation(extent, dt, buffer)
    return _sole_owner(allocation, extent, dt, placement)


def _backend_placement(
    op: StorageOperation, buffer: BackendStorage, requested: RequestedIdentity, family: str
) -> Placement:
    """``buffer.placement()`` when the buffer has one (it is optional), else DEVICE."""
    method = getattr(buffer, "placement", None)
    if method is None:
        return DEFAULT_BACKEND_PLACEMENT
    placement = method() if callable(method) else method
    if not isinstance(placement, Placement):
        raise _import_error(
            op,
            requested,
            f"backend `{family}` reported placement {placement!r}, which is not a Placement",
            kind="INVALID_PLACEMENT",
            backend=family,
        )
    return placement
