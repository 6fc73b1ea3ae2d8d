"""tenferro: a tensor runtime in which ownership of memory is explicit and checked."""

from __future__ import annotations

import math

from . import linalg
from . import random as random  # numpy's random spellings (tenferro/random.py)
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
    IndexOutOfRangeError,
    InteropError,
    LinAlgError,
    MovedTensorError,
    NotCopyableError,
    OutOfMemoryError,
    PromotionError,
    ReinterpretError,
    RootImportError,
    RuntimeStateError,
    TenferroError,
    ValidationError,
)
from .group import AllocationGroup, DescriptorSlot
from .guards import HostReadGuard, HostWriteGuard

# Loaded for its registration (Tensor.__dlpack__ exports through it: docs/internals.md).
from .interop import dlpack as _dlpack  # noqa: F401

# The array API namespace: every public function of `tenferro.namespace`.
from .namespace import *  # noqa: F403
from .namespace import PUBLIC as _NAMESPACE_PUBLIC
from .namespace import fft as fft
from .placement import MemoryKind, Placement
from .storage.identity import AllocationDomainId, AllocationId, AllocationKey
from .tensor import Tensor, from_numpy
from .view import TensorView, TensorViewMut

# The array API's dtype names: each is a `DType` member.
bool = DType.BOOL
int8 = DType.I8
int16 = DType.I16
int32 = DType.I32
int64 = DType.I64
uint8 = DType.U8
uint16 = DType.U16
uint32 = DType.U32
uint64 = DType.U64
float32 = DType.F32
float64 = DType.F64
complex64 = DType.C32
complex128 = DType.C64

# The array API's constants.
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

__array_api_version__ = "2024.12"

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
    "IndexOutOfRangeError",
    "InteropError",
    "LinAlgError",
    "MemoryKind",
    "MovedTensorError",
    "NotCopyableError",
    "OutOfMemoryError",
    "Placement",
    "PromotionError",
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
    "__array_api_version__",
    "__version__",
    "bool",
    "complex64",
    "complex128",
    "copy_stats",
    "default_engine",
    "e",
    "float32",
    "float64",
    "forbid_copies",
    "from_numpy",
    "inf",
    "int8",
    "int16",
    "int32",
    "int64",
    "linalg",
    "nan",
    "newaxis",
    "pi",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
__all__ += _NAMESPACE_PUBLIC
__all__ += ["fft", "random"]
