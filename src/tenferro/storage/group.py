"""The allocation-group tables: owners and descriptors (no tensors).

A group has two tables that only grow:

* ``allocations``: `OwnedStorage` cells, one per root (the single owner of its
  memory);
* ``descriptors``: `DescriptorRecord` cells (owner index, dtype, shape, checked
  byte span, provider kind, placement). A descriptor owns nothing; several may
  point at one owner.

A `DescriptorSlot` is an index into ``descriptors`` and grants nothing by itself.
Taking a tensor out leaves both of its cells vacant; counts never shrink and a
slot is never reused.

`GroupTables` keeps both tables and everything that reads or changes them
without a `Tensor`. The public `AllocationGroup` (`tenferro.group`, one layer
up) adds what moves tensors in and out, and the group branch of `Tensor`.
"""

from __future__ import annotations

import operator
import threading
from dataclasses import dataclass
from typing import Any

from ..copies import NotCopyable
from ..dtype import DType, as_dtype, dtype_of_array
from ..errors import GroupError, HostAccessError, ValidationError
from ..layout import col_major_strides, normalize_shape, shape_size, strict_index
from ..placement import Placement
from .diagnostics import DescriptorInfo, GroupSnapshot, OwnerInfo, StorageOperation
from .host import HostBuffer
from .identity import AllocationDomainId, AllocationId, AllocationKey
from .root import (
    DeviceAccessRequest,
    OwnedStorage,
    PreparedDeviceAccess,
    ProviderKind,
)
from .span import RootBoundSpan, RootResourceExtent, nonneg_int, validate_span

__all__ = ["DescriptorRecord", "DescriptorSlot", "GroupTables"]

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True, order=True)
class DescriptorSlot:
    """An index into a group's descriptor table. Grants nothing by itself."""

    index: int

    def __post_init__(self) -> None:
        try:
            index = strict_index(self.index)
        except TypeError:
            index = -1
        if index < 0:
            raise ValidationError(
                "DescriptorSlot",
                f"a slot index must be an int >= 0, got {self.index!r}",
                kind="INVALID_SLOT",
            )
        object.__setattr__(self, "index", index)  # normalise numpy integers to int

    def __index__(self) -> int:
        return self.index

    def __int__(self) -> int:
        return self.index

    def __repr__(self) -> str:
        return f"DescriptorSlot({self.index})"


@dataclass(frozen=True, slots=True)
class DescriptorRecord:
    """One tensor's metadata in a group. Owns nothing."""

    owner: int
    dtype: DType
    shape: Shape
    strides: Shape
    span: RootBoundSpan
    provider_kind: ProviderKind
    placement: Placement

    @property
    def element_offset(self) -> int:
        """Where the tensor starts in its owner's buffer, in elements of ``dtype``."""
        return self.span.element_offset(self.dtype)

    def with_owner(self, owner: int) -> DescriptorRecord:
        return DescriptorRecord(
            owner,
            self.dtype,
            self.shape,
            self.strides,
            self.span,
            self.provider_kind,
            self.placement,
        )


def _check_viewable(op: str, owner: OwnedStorage, dtype: DType) -> None:
    # INVARIANT: every borrow views the owner's *whole* read root as the descriptor's
    # dtype, so a reinterpreting descriptor needs the root to divide evenly.
    if dtype is not owner.dtype and owner.extent.byte_len % dtype.itemsize:
        raise GroupError(
            op,
            f"the owner holds {owner.extent.byte_len} bytes of {owner.dtype.name}, which "
            f"cannot be viewed as whole {dtype.name} elements ({dtype.itemsize} bytes)",
            kind="INVALID_LAYOUT",
            dtype=dtype,
            owner_dtype=owner.dtype,
        )


def record_for(
    op: str, owner: OwnedStorage, owner_index: int, dtype: DType, shape: Shape, byte_offset: Any
) -> DescriptorRecord:
    """A validated descriptor for ``shape``/``dtype`` at ``byte_offset`` of ``owner``."""
    # Checked before the arithmetic: a str or None must not surface as a raw
    # TypeError, nor a bool pass as 0 or 1.
    offset = nonneg_int(op, "byte_offset", byte_offset)
    span = validate_span(
        owner.extent,
        owner.extent.byte_offset + offset,
        shape_size(shape) * dtype.itemsize,
        dtype,
        root_dtype=owner.dtype,
        op=op,
    )
    _check_viewable(op, owner, dtype)
    return DescriptorRecord(
        owner_index,
        dtype,
        shape,
        col_major_strides(shape),
        span,
        owner.provider_kind(),
        owner.placement,
    )


def host_refusal(op: str, owner: OwnedStorage) -> HostAccessError:
    return HostAccessError(
        op,
        "backend storage cannot be borrowed as host data; download explicitly first",
        kind="UNSUPPORTED",
        placement=owner.placement,
        allocation=owner.key,
        backend=str(owner.provider_kind()),
    )


def memory_of(owner_host: HostBuffer | None, key: AllocationKey | None) -> tuple[Any, int, int]:
    """A comparable (space, start, end) for alias detection."""
    if owner_host is not None:
        start = owner_host.address
        return ("host", start, start + owner_host.flat.nbytes)
    return (key, 0, 1)


def overlap(a: tuple[Any, int, int], b: tuple[Any, int, int]) -> bool:
    if a[0] != b[0]:
        return False
    if a[1] == a[2] or b[1] == b[2]:
        return False  # empty buffers share no memory
    return a[1] < b[2] and b[1] < a[2]


class GroupTables(NotCopyable):
    """Owners and the descriptors that point at them; see the module docstring.

    The base of `tenferro.AllocationGroup`, which adds the tensor operations.
    Not copyable or picklable (it owns memory).
    """

    __slots__ = ("__weakref__", "_allocations", "_descriptors", "_lock", "_moved")

    def __init__(self) -> None:
        self._allocations: list[OwnedStorage | None] = []
        self._descriptors: list[DescriptorRecord | None] = []
        self._lock = threading.RLock()
        self._moved: str | None = None

    # -- table changes (the tensor layer's operations call these) ---------------------
    def _refuse_aliases(self, op: str, incoming: list[tuple[object, tuple[Any, int, int]]]) -> None:
        """Refuse entries that are the same storage or share memory (each other or an owner).

        ``incoming``: per entry, the storage object and its `memory_of` range.
        """
        storages: dict[int, int] = {}
        for i, (storage, _) in enumerate(incoming):
            sid = id(storage)
            if sid in storages:
                raise GroupError(
                    op,
                    f"entries {storages[sid]} and {i} are the same tensor storage; a buffer "
                    "can enter a group once (add_descriptor puts a second view on an owner)",
                    kind="ALIASED_ALLOCATION",
                    entries=(storages[sid], i),
                )
            storages[sid] = i
        existing = [owner_memory(o) for o in self._allocations if o is not None]
        for ia, (_, ra) in enumerate(incoming):
            for ex in existing:
                if overlap(ra, ex):
                    raise GroupError(
                        op,
                        f"entry {ia} shares memory with an owner already in the group",
                        kind="ALIASED_ALLOCATION",
                        entries=(ia,),
                    )
            for ib in range(ia + 1, len(incoming)):
                if overlap(ra, incoming[ib][1]):
                    raise GroupError(
                        op,
                        f"entries {ia} and {ib} share memory (overlapping buffers); import "
                        "one of them and add_descriptor() for the other view",
                        kind="ALIASED_ALLOCATION",
                        entries=(ia, ib),
                    )

    def _append(self, owner: OwnedStorage, record: DescriptorRecord) -> DescriptorSlot:
        """Add an owner and its one descriptor (``record.owner`` must be its index)."""
        self._allocations.append(owner)
        self._descriptors.append(record)
        return DescriptorSlot(len(self._descriptors) - 1)

    def _take(self, op: str, slot: Any) -> tuple[OwnedStorage, DescriptorRecord]:
        """Vacate a sole descriptor and its owner; the record comes back as owner 0.

        Refused when another live descriptor shares the owner (SHARED_OWNER) or the
        owner is aliased (`BorrowError`); nothing changes then.
        """
        with self._lock:
            index, rec = self._record(op, slot)
            sharing = [
                i
                for i, d in enumerate(self._descriptors)
                if d is not None and i != index and d.owner == rec.owner
            ]
            if sharing:
                raise GroupError(
                    op,
                    "a tensor can only be taken when it is the owner's sole descriptor",
                    kind="SHARED_OWNER",
                    slot=index,
                    sharing=tuple(sharing),
                )
            owner = self._allocations[rec.owner]
            assert owner is not None
            owner.check_exclusive(op)
            self._allocations[rec.owner] = None
            self._descriptors[index] = None
        return owner, rec.with_owner(0)

    def _owner_of(self, op: str, slot: Any) -> tuple[OwnedStorage, DescriptorRecord]:
        """The owner a live slot points at, and the slot's record."""
        _, rec = self._record(op, slot)
        owner = self._allocations[rec.owner]
        assert owner is not None
        return owner, rec

    def append_group(self, other: GroupTables) -> list[DescriptorSlot]:
        """Move every live owner and descriptor of ``other`` into this group.

        Returns the new slots of ``other``'s live descriptors, in order. ``other`` is
        moved: every later use of it (each public method and count) raises
        `GroupError` kind GROUP_MOVED. Refused, moving nothing, when ``other`` shares
        memory with this group.
        """
        op = StorageOperation.APPEND_GROUP.value
        if not isinstance(other, GroupTables):
            raise ValidationError(
                op,
                f"expected an AllocationGroup, got {type(other).__name__}",
                kind="INVALID_ARGUMENT",
            )
        if other is self:
            raise GroupError(op, "a group cannot be appended to itself", kind="SAME_GROUP")
        first, second = (self, other) if id(self) < id(other) else (other, self)
        with first._lock, second._lock:
            self._check_live(op)
            other._check_live(op)
            mine = [owner_memory(o) for o in self._allocations if o is not None]
            for o in other._allocations:
                if o is None:
                    continue
                r = owner_memory(o)
                if any(overlap(r, m) for m in mine):
                    raise GroupError(
                        op,
                        f"the other group's owner {o.key!r} shares memory with this group",
                        kind="ALIASED_ALLOCATION",
                        entries=(),
                    )
            remap: dict[int, int] = {}
            for i, o in enumerate(other._allocations):
                if o is not None:
                    remap[i] = len(self._allocations)
                    self._allocations.append(o)
            slots = []
            for rec in other._descriptors:
                if rec is None:
                    continue
                self._descriptors.append(rec.with_owner(remap[rec.owner]))
                slots.append(DescriptorSlot(len(self._descriptors) - 1))
            other._vacate_all()
            other._moved = op
            return slots

    def add_descriptor(
        self, owner_of: DescriptorSlot | int, dtype: Any, shape: Any, byte_offset: int = 0
    ) -> DescriptorSlot:
        """Put one more descriptor on the owner that ``owner_of`` points at.

        ``byte_offset`` (an int >= 0; bools refused) is from the start of the owner's
        buffer. It and the span are validated first (inside the owner, element
        aligned, compatible dtype: `AccessError`, nothing changed). Afterwards the
        owner is shared, so `take_tensor` refuses both descriptors (kind
        SHARED_OWNER). Ownership: no move, no copy.
        """
        op = StorageOperation.ADD_DESCRIPTOR.value
        self._check_live(op)
        dt = as_dtype(dtype, op)
        sh = normalize_shape(shape, op, dt.itemsize)
        with self._lock:
            _, base = self._record(op, owner_of)  # checks the group is live again
            owner = self._allocations[base.owner]
            assert owner is not None
            record = record_for(op, owner, base.owner, dt, sh, byte_offset)
            self._descriptors.append(record)
            return DescriptorSlot(len(self._descriptors) - 1)

    # -- reading --------------------------------------------------------------------------
    @property
    def allocation_count(self) -> int:
        """Cells in the ``allocations`` table (vacant ones included; never shrinks)."""
        self._check_live("AllocationGroup.allocation_count")
        return len(self._allocations)

    @property
    def descriptor_count(self) -> int:
        """Cells in the ``descriptors`` table (vacant ones included; never shrinks)."""
        self._check_live("AllocationGroup.descriptor_count")
        return len(self._descriptors)

    def slots(self) -> list[DescriptorSlot]:
        """The live (not vacant) slots, in order."""
        self._check_live("AllocationGroup.slots")
        return self._live_slots()

    def _live_slots(self) -> list[DescriptorSlot]:
        return [DescriptorSlot(i) for i, d in enumerate(self._descriptors) if d is not None]

    def descriptor(self, slot: DescriptorSlot | int) -> DescriptorRecord:
        """The metadata of a live slot."""
        return self._record("AllocationGroup.descriptor", slot)[1]

    def allocation_key(self, slot: DescriptorSlot | int) -> AllocationKey:
        """The allocation identity of the owner a live slot points at."""
        return self._owner_of("AllocationGroup.allocation_key", slot)[0].key

    def prepare_device_access(
        self, slot: DescriptorSlot | int, request: DeviceAccessRequest
    ) -> PreparedDeviceAccess:
        """Validate ``request`` against the slot owner's identity and ask its provider."""
        op = StorageOperation.PREPARE_DEVICE_ACCESS.value
        owner, _ = self._owner_of(op, slot)
        return owner.prepare_device_access(request)

    def snapshot(self) -> GroupSnapshot:
        """Both tables as plain data (vacant cells included), for debugging."""
        self._check_live("AllocationGroup.snapshot")
        descriptors = list(self._descriptors)
        owners = []
        for i, o in enumerate(list(self._allocations)):
            if o is None:
                owners.append(OwnerInfo(i, None, None, None, ()))
                continue
            refs = tuple(j for j, d in enumerate(descriptors) if d is not None and d.owner == i)
            owners.append(OwnerInfo(i, o.key, o.extent.byte_len, str(o.provider_kind()), refs))
        infos = [
            DescriptorInfo(j, None, None, None, None, None)
            if d is None
            else DescriptorInfo(j, d.owner, d.dtype, d.shape, d.span.range, d.placement)
            for j, d in enumerate(descriptors)
        ]
        return GroupSnapshot(tuple(owners), tuple(infos))

    # -- helpers ---------------------------------------------------------------------------
    def _check_live(self, op: str) -> None:
        if self._moved is not None:
            raise GroupError(
                op,
                "use the group it was appended to",
                kind="GROUP_MOVED",
                moved_by=self._moved,
            )

    def _record(self, op: str, slot: Any) -> tuple[int, DescriptorRecord]:
        # Every slot lookup goes through here: a moved group's tables are all vacant,
        # so without this a slot would read as vacant instead of as moved.
        self._check_live(op)
        if isinstance(slot, bool):
            raise ValidationError(
                op, f"expected a DescriptorSlot, got {slot!r}", kind="INVALID_SLOT"
            )
        try:
            index = operator.index(slot)
        except TypeError:
            raise ValidationError(
                op, f"expected a DescriptorSlot, got {type(slot).__name__}", kind="INVALID_SLOT"
            ) from None
        if not 0 <= index < len(self._descriptors):
            raise GroupError(
                op,
                kind="DESCRIPTOR_SLOT_OUT_OF_BOUNDS",
                slot=index,
                descriptor_count=len(self._descriptors),
            )
        rec = self._descriptors[index]
        if rec is None:
            raise GroupError(
                op,
                kind="DESCRIPTOR_SLOT_VACANT",
                slot=index,
            )
        return index, rec

    def _vacate_all(self) -> None:
        for i in range(len(self._allocations)):
            self._allocations[i] = None
        for i in range(len(self._descriptors)):
            self._descriptors[i] = None

    def __repr__(self) -> str:
        if self._moved is not None:
            return f"AllocationGroup(<moved by {self._moved}>)"
        return (
            f"AllocationGroup(allocation_count={len(self._allocations)}, "
            f"descriptor_count={len(self._descriptors)})"
        )


def check_host_entry(op: str, buf: HostBuffer, dtype: DType, shape: Shape) -> DType:
    """Validate a plain host tensor's descriptor before its buffer is imported.

    Returns the root dtype. Nothing is minted or moved here, so a refusal changes nothing.
    """
    root_dtype = dtype_of_array(buf.flat, op)
    byte_len = len(buf) * root_dtype.itemsize
    # A placeholder key: the real identity is minted only once every check passed.
    probe = RootResourceExtent(
        AllocationKey(AllocationDomainId(0), AllocationId(0)),
        0,
        byte_len,
        root_dtype.numpy.alignment,
    )
    validate_span(probe, 0, shape_size(shape) * dtype.itemsize, dtype, root_dtype=root_dtype, op=op)
    if dtype is not root_dtype and byte_len % dtype.itemsize:
        raise GroupError(
            op,
            f"the buffer holds {byte_len} bytes of {root_dtype.name}, which cannot be viewed "
            f"as whole {dtype.name} elements",
            kind="INVALID_LAYOUT",
            dtype=dtype,
            owner_dtype=root_dtype,
        )
    return root_dtype


def owner_memory(owner: OwnedStorage) -> tuple[Any, int, int]:
    return memory_of(owner.mapped if owner.is_host else None, owner.key)
