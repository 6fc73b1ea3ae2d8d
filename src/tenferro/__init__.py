"""tenferro: a tensor runtime in which ownership of memory is explicit and checked."""

from __future__ import annotations

from .copies import CopyStats, copy_stats, forbid_copies
from .domains import SharedMemoryDomain, SharedTensorAllocationDomain, ShareHandle
from .dtype import DType
from .engine import BufferPool, BufferPoolCacheStats, BufferPoolStats, CpuEngine, default_engine
from .errors import (
    AccessError,
    BorrowError,
    CopyForbiddenError,
    DeviceAccessError,
    DTypeError,
    GroupError,
    HostAccessError,
    InteropError,
    MovedTensorError,
    NotCopyableError,
    OutOfMemoryError,
    ReinterpretError,
    RootImportError,
    RuntimeStateError,
    TenferroError,
    ValidationError,
)
from .group import AllocationGroup, DescriptorSlot
from .guards import HostReadGuard, HostWriteGuard
from .interop import from_dlpack
from .placement import MemoryKind, Placement
from .storage.identity import AllocationDomainId, AllocationId, AllocationKey
from .tensor import Tensor, from_numpy
from .view import TensorView, TensorViewMut

__version__ = "0.1.0"

__all__ = [
    "AccessError",
    "AllocationDomainId",
    "AllocationGroup",
    "AllocationId",
    "AllocationKey",
    "BorrowError",
    "BufferPool",
    "BufferPoolCacheStats",
    "BufferPoolStats",
    "CopyForbiddenError",
    "CopyStats",
    "CpuEngine",
    "DType",
    "DTypeError",
    "DescriptorSlot",
    "DeviceAccessError",
    "GroupError",
    "HostAccessError",
    "HostReadGuard",
    "HostWriteGuard",
    "InteropError",
    "MemoryKind",
    "MovedTensorError",
    "NotCopyableError",
    "OutOfMemoryError",
    "Placement",
    "ReinterpretError",
    "RootImportError",
    "RuntimeStateError",
    "ShareHandle",
    "SharedMemoryDomain",
    "SharedTensorAllocationDomain",
    "TenferroError",
    "Tensor",
    "TensorView",
    "TensorViewMut",
    "ValidationError",
    "__version__",
    "copy_stats",
    "default_engine",
    "forbid_copies",
    "from_dlpack",
    "from_numpy",
]
