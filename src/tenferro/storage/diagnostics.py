"""Diagnostics: which storage operation failed, on which requested identity.

Errors raised while importing roots or changing groups carry a
`StorageOperationContext` in their ``context`` field: the operation, the identity
that was requested (a keyed range, or a raw range when no key was known yet) and,
once resolved, the root identity. `GroupSnapshot` is a read-only picture of a
group's two tables for debugging and for the docs.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..dtype import DType
from ..placement import Placement
from .identity import AllocationKey, RootResourceIdentity
from .span import ByteRange

__all__ = [
    "DescriptorInfo",
    "GroupSnapshot",
    "OwnerInfo",
    "RequestedIdentity",
    "StorageOperation",
    "StorageOperationContext",
]


class StorageOperation(enum.Enum):
    """The storage-level operations that can fail."""

    IMPORT_HOST_VEC = "import_host_vec"
    IMPORT_BACKEND_BUFFER = "import_backend_buffer"
    IMPORT_UNIQUE_ROOT = "import_unique_root"
    FROM_TENSORS = "AllocationGroup.from_tensors"
    APPEND_TENSOR = "AllocationGroup.append_tensor"
    APPEND_GROUP = "AllocationGroup.append_group"
    ADD_DESCRIPTOR = "AllocationGroup.add_descriptor"
    TAKE_TENSOR = "AllocationGroup.take_tensor"
    READ_VIEW = "AllocationGroup.read_view"
    MAP_HOST = "OwnedStorage.host_view"
    PREPARE_DEVICE_ACCESS = "prepare_device_access"

    def __repr__(self) -> str:
        return f"StorageOperation.{self.name}"


@dataclass(frozen=True, slots=True)
class RequestedIdentity:
    """What an operation asked for: a byte range, keyed when the key is known."""

    range: ByteRange
    key: AllocationKey | None = None

    def __str__(self) -> str:
        where = f"{self.key!r} " if self.key is not None else "unkeyed "
        return f"{where}{self.range!r}"


@dataclass(frozen=True, slots=True)
class StorageOperationContext:
    """The operation, the requested identity and (once known) the resolved root."""

    operation: StorageOperation
    requested: RequestedIdentity
    resolved: RootResourceIdentity | None = None

    def __str__(self) -> str:
        return f"{self.operation.value} on {self.requested}"


@dataclass(frozen=True, slots=True)
class OwnerInfo:
    """One cell of a group's ``allocations`` table (None fields when vacant)."""

    index: int
    key: AllocationKey | None
    byte_len: int | None
    provider: str | None
    descriptors: tuple[int, ...]

    @property
    def vacant(self) -> bool:
        return self.key is None


@dataclass(frozen=True, slots=True)
class DescriptorInfo:
    """One cell of a group's ``descriptors`` table (None fields when vacant)."""

    slot: int
    owner: int | None
    dtype: DType | None
    shape: tuple[int, ...] | None
    span: ByteRange | None
    placement: Placement | None

    @property
    def vacant(self) -> bool:
        return self.owner is None


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """Both tables of an `AllocationGroup` at one moment."""

    owners: tuple[OwnerInfo, ...]
    descriptors: tuple[DescriptorInfo, ...]

    def __str__(self) -> str:
        lines = [f"AllocationGroup: {len(self.owners)} owner(s), {len(self.descriptors)} slot(s)"]
        for o in self.owners:
            if o.vacant:
                lines.append(f"  owner {o.index}: vacant")
            else:
                lines.append(
                    f"  owner {o.index}: {o.key!r}, {o.byte_len} bytes, {o.provider}, "
                    f"descriptors {list(o.descriptors)}"
                )
        for d in self.descriptors:
            if d.vacant:
                lines.append(f"  slot {d.slot}: vacant")
            else:
                assert d.dtype is not None
                lines.append(
                    f"  slot {d.slot}: owner {d.owner}, {d.dtype.name}{list(d.shape or ())} "
                    f"at {d.span!r}"
                )
        return "\n".join(lines)
