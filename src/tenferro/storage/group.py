"""`AllocationGroup`: owners and descriptors, and the group branch of `Tensor`.

A group has two tables that only grow:

* ``allocations``: `OwnedStorage` cells, one per root (the single owner of its
  memory);
* ``descriptors``: `DescriptorRecord` cells (owner index, dtype, shape, checked
  byte span, provider kind, placement). A descriptor owns nothing; several may
  point at one owner.

A `DescriptorSlot` is an index into ``descriptors`` and grants nothing by itself.
Taking a tensor out leaves both of its cells vacant; counts never shrink and a
slot is never reused.

A group-backed tensor's storage is a `GroupTensorRef`: a reference to a private,
one-entry group (the tensor's own owner and descriptor). Entering a group is one
way: `Tensor.into_host` on a group-backed tensor raises `ReinterpretError`.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ..copies import record_copy
from ..dtype import DType, as_dtype, dtype_of_array
from ..errors import GroupError, HostAccessError, ReinterpretError, ValidationError
from ..layout import col_major_strides, normalize_shape, shape_size, strict_index
from ..placement import Placement
from ..tensor import Tensor, _release_host_buffer
from ..view import TensorView
from .diagnostics import DescriptorInfo, GroupSnapshot, OwnerInfo, StorageOperation
from .host import HostBuffer, shared_refusal
from .identity import AllocationDomainId, AllocationId, AllocationKey
from .root import (
    DeviceAccessRequest,
    OwnedStorage,
    PreparedDeviceAccess,
    ProviderKind,
    import_host_vec,
)
from .span import RootBoundSpan, RootResourceExtent, nonneg_int, validate_span

__all__ = [
    "AllocationGroup",
    "DescriptorRecord",
    "DescriptorSlot",
    "GroupTensorRef",
    "group_into_host",
    "group_into_vec",
    "promote_tensor",
    "tensor_from_owner",
]

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


def _not_copyable(what: str) -> NoReturn:
    raise GroupError(
        f"{what}.__reduce__",
        f"{what} owns its memory and cannot be copied or pickled; duplicate() the tensors "
        "(named copies) or share shared-memory tensors with share_handle()",
        kind="NOT_COPYABLE",
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


def _record_for(
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


def _host_refusal(op: str, owner: OwnedStorage) -> HostAccessError:
    return HostAccessError(
        op,
        "backend storage cannot be borrowed as host data; download explicitly first",
        kind="UNSUPPORTED",
        placement=owner.placement,
        allocation=owner.key,
    )


# ------------------------------------------------------------------------ the tensor branch
class GroupTensorRef:
    """A group-backed tensor's storage: its private one-entry group, and cached access.

    Provides what `Tensor` expects of a non-host storage: ``placement``,
    ``allocation_domain``, ``allocation_id``, ``host_addressable``, ``read_only``,
    ``host_buffer(op, mapped)`` and ``duplicate(tensor, op)``.
    """

    __slots__ = (
        "_buf",
        "_offset",
        "allocation_domain",
        "allocation_id",
        "group",
        "host_addressable",
        "owner",
        "placement",
        "read_only",
        "record",
    )

    def __init__(self, group: AllocationGroup, owner: OwnedStorage, record: DescriptorRecord):
        self.group = group
        self.owner = owner
        self.record = record
        self.placement: Placement = record.placement
        key = owner.key
        self.allocation_domain: AllocationDomainId = key.domain
        self.allocation_id: AllocationId = key.local
        self.host_addressable: bool = owner.host_addressable
        # Checked by Tensor.map_write: a read-only owner may share its HostBuffer
        # with a writable one, so the buffer alone cannot refuse the write.
        self.read_only: bool = owner.read_only
        # INVARIANT: a host root's buffer is the tensor's buffer for life; a provider
        # root's mapping is made on the first mapped access and cached by the owner.
        self._buf: HostBuffer | None = owner.mapped if self.host_addressable else None
        self._offset = record.element_offset

    def host_buffer(self, op: str, mapped: bool) -> tuple[HostBuffer, int]:
        """The host buffer and element offset; see docs/internals.md."""
        buf = self._buf
        if buf is not None:  # host-addressable memory: every access
            return buf, self._offset
        if not mapped:
            raise _host_refusal(op, self.owner)
        # The owner maps once and caches it; HostAccessError if unmappable.
        return self.owner.host_view(op), self._offset

    def duplicate(self, tensor: Tensor, op: str) -> Tensor:
        """A copy in the same domain (same placement), for provider memory.

        Needs the provider buffer to name the domain that allocated it (``domain``);
        otherwise `HostAccessError` says to download instead.
        """
        backend = self.owner.backend_buffer()
        domain = getattr(backend, "domain", None)
        if domain is None:
            raise HostAccessError(
                op,
                f"this {self.placement.memory_kind.name} tensor is not owned by a domain of "
                "this process (e.g. it is attached from another process), so it cannot be "
                "duplicated in place; download() makes a plain host copy",
                kind="FOREIGN_DOMAIN",
                allocation=self.owner.key,
            )
        src = tensor._read_flat(op, mapped=True)
        record_copy(op, src.nbytes)
        out: Tensor = domain.allocate(tensor._dtype, tensor._shape)
        dst, offset = out._resolve(op, mapped=True)
        # Internal write: `out` is new and unaliased, so its flat buffer is ours.
        target = dst.flat if dst.flat.dtype == src.dtype else dst.flat.view(src.dtype)
        np.copyto(target[offset : offset + src.shape[0]], src)
        return out

    def __reduce__(self) -> NoReturn:
        _not_copyable("GroupTensorRef")

    def __repr__(self) -> str:
        return (
            f"GroupTensorRef({self.owner.key!r}, {self.record.dtype.name}{list(self.record.shape)})"
        )


def tensor_from_owner(owner: OwnedStorage, dtype: Any, shape: Any, op: str) -> Tensor:
    """Wrap a freshly imported owner as a group-backed tensor covering it from byte 0.

    Ownership: **moves** ``owner`` into the tensor's private group.
    """
    dt = as_dtype(dtype, op)
    sh = normalize_shape(shape, op, dt.itemsize)
    return _sole_tensor(owner, _record_for(op, owner, 0, dt, sh, 0))


def _sole_tensor(owner: OwnedStorage, record: DescriptorRecord) -> Tensor:
    """A tensor over ``record`` (owner 0) in a new private group holding just ``owner``."""
    group = AllocationGroup()
    group._allocations.append(owner)
    group._descriptors.append(record)
    return Tensor._wrap(record.shape, record.dtype, GroupTensorRef(group, owner, record))


def _group_ref(t: Tensor, op: str) -> GroupTensorRef:
    st = t._live(op)
    if not isinstance(st, GroupTensorRef):
        raise ValidationError(op, "the tensor is not group-backed", kind="NOT_GROUP_BACKED")
    return st


def promote_tensor(t: Tensor) -> Tensor:
    """`Tensor.promote`: move a host tensor into a one-entry group, no element copy.

    The host buffer (and its recycler: an engine output keeps its pool link)
    becomes the group owner's root, under a fresh allocation identity. A
    group-backed tensor is moved as it is. Refused with `BorrowError` while an
    alias is alive; a refused call moves nothing.
    """
    op = "Tensor.promote"
    st = t._live(op)
    if st.__class__ is HostBuffer:
        root_dtype = _check_host_entry(op, st, t._dtype, t._shape)
        st.check_exclusive(op)
        owner = import_host_vec(st, root_dtype)
        tensor = tensor_from_owner(owner, t._dtype, t._shape, op)
        t._move(op)
        return tensor
    ref = _group_ref(t, op)
    ref.owner.check_exclusive(op)
    return Tensor._wrap(t._shape, t._dtype, t._move(op))


def group_into_host(t: Tensor, op: str) -> Tensor:
    """`Tensor.into_host` of a group-backed tensor: always refused, ``t`` stays usable.

    Entering a group is one way (as upstream): take the buffer out with
    ``into_vec_col_major()`` or make a plain copy with ``duplicate()``/``download()``.
    """
    ref = _group_ref(t, op)
    hint = (
        "into_vec_col_major() hands its buffer back, duplicate() makes a plain host copy"
        if ref.owner.is_host
        else "download() makes a plain host copy"
    )
    raise ReinterpretError(
        op,
        f"the tensor is group-backed rather than plain host storage; {hint}",
        kind="GROUP_BACKED",
        allocation=ref.owner.key,
    )


def group_into_vec(t: Tensor, op: str) -> np.ndarray[Any, Any]:
    """`Tensor.into_vec_col_major` of a group-backed tensor.

    Allowed when the tensor is the sole descriptor of a host owner and covers its
    whole buffer with the owner's dtype (always the case for tensors made by
    `promote` or `take_tensor` from a full buffer): the very same memory is handed
    back, writable, with the pool link cleared, and ``t`` is moved. Provider memory
    (shared memory, devices) raises `ReinterpretError`: ``download()`` first.
    Refused with `BorrowError` while an alias is alive; nothing moves then.
    """
    ref = _group_ref(t, op)
    owner = ref.owner
    host = owner.host_allocation()
    if host is None:
        raise ReinterpretError(
            op,
            f"the tensor lives in {ref.placement.memory_kind.name} memory owned by its "
            "provider, not in a host buffer that could be handed over; download() makes a "
            "plain host copy",
            kind="NOT_HOST_OWNER",
            allocation=owner.key,
        )
    rec = ref.record
    if rec.span.relative_offset or rec.span.byte_len != owner.extent.byte_len:
        raise ReinterpretError(
            op,
            "the tensor covers only part of its owner's buffer; duplicate() it instead",
            kind="PARTIAL_OWNER",
        )
    if rec.dtype is not owner.dtype:
        raise ReinterpretError(
            op,
            f"the tensor reads the owner's {owner.dtype.name} buffer as {rec.dtype.name}; "
            "duplicate() it instead",
            kind="REINTERPRETED",
        )
    # The buffer leaves tenferro for good: claim it, as a plain tensor's move does,
    # so that an engine read on another thread that picked it up just before is
    # refused instead of reading memory that has a new owner.
    host.buffer.begin_move(op)
    flat = _release_host_buffer(host.buffer)
    t._move(op)
    ref.group._vacate_all()
    return flat


# ------------------------------------------------------------------------ the group
class _Incoming:
    """A tensor about to enter a group: its storage, checked but not yet moved."""

    __slots__ = ("host", "memory", "ref", "tensor")

    def __init__(
        self,
        tensor: Tensor,
        host: HostBuffer | None,
        ref: GroupTensorRef | None,
        memory: tuple[Any, int, int],
    ):
        self.tensor = tensor
        self.host = host
        self.ref = ref
        self.memory = memory  # what `_overlap` compares


def _memory_of(owner_host: HostBuffer | None, key: AllocationKey | None) -> tuple[Any, int, int]:
    """A comparable (space, start, end) for alias detection."""
    if owner_host is not None:
        start = owner_host.address
        return ("host", start, start + owner_host.flat.nbytes)
    return (key, 0, 1)


def _overlap(a: tuple[Any, int, int], b: tuple[Any, int, int]) -> bool:
    if a[0] != b[0]:
        return False
    if a[1] == a[2] or b[1] == b[2]:
        return False  # empty buffers share no memory
    return a[1] < b[2] and b[1] < a[2]


class AllocationGroup:
    """Owners and the descriptors that point at them; see the module docstring.

    Build one with `AllocationGroup.from_tensors` or ``AllocationGroup()`` (empty).
    Not copyable or picklable (it owns memory).
    """

    __slots__ = ("__weakref__", "_allocations", "_descriptors", "_lock", "_moved")

    def __init__(self) -> None:
        self._allocations: list[OwnedStorage | None] = []
        self._descriptors: list[DescriptorRecord | None] = []
        self._lock = threading.RLock()
        self._moved: str | None = None

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_tensors(
        cls, tensors: Iterable[Tensor]
    ) -> tuple[AllocationGroup, list[DescriptorSlot]]:
        """A group owning each tensor's buffer, and one slot per tensor, in order.

        Ownership: **moves** every tensor (no element copy). Plain host buffers get
        a fresh allocation identity; group-backed tensors keep theirs. Refused,
        moving nothing, if an entry is not a live tensor, has a live alias, or
        shares memory with another entry (`GroupError` kind ALIASED_ALLOCATION).
        """
        group = cls()
        slots = group._admit(StorageOperation.FROM_TENSORS.value, tensors)
        return group, slots

    def append_tensor(self, tensor: Tensor) -> DescriptorSlot:
        """Move one more tensor in; returns its slot. Same rules as `from_tensors`."""
        return self._admit(StorageOperation.APPEND_TENSOR.value, [tensor])[0]

    def _admit(self, op: str, tensors: Iterable[Tensor]) -> list[DescriptorSlot]:
        if isinstance(tensors, Tensor):
            raise ValidationError(
                op, "expected a sequence of tensors, got a single Tensor", kind="INVALID_ARGUMENT"
            )
        try:
            items = list(tensors)
        except TypeError:
            raise ValidationError(
                op,
                f"expected an iterable of tensors, got {type(tensors).__name__}",
                kind="INVALID_ARGUMENT",
            ) from None
        with self._lock:
            self._check_live(op)
            incoming = [self._prepare(op, i, t) for i, t in enumerate(items)]
            self._refuse_aliases(op, incoming)
            # Everything is checked: from here on nothing can fail half way.
            return [self._commit(op, entry) for entry in incoming]

    def _prepare(self, op: str, index: int, t: Any) -> _Incoming:
        if not isinstance(t, Tensor):
            raise ValidationError(
                op,
                f"entry {index} is a {type(t).__name__}, not a Tensor",
                kind="INVALID_ARGUMENT",
                index=index,
            )
        st = t._live(op)
        if st.__class__ is HostBuffer:
            _check_host_entry(op, st, t._dtype, t._shape)
            st.check_exclusive(op)
            return _Incoming(t, st, None, _memory_of(st, None))
        if not isinstance(st, GroupTensorRef):
            raise ValidationError(
                op,
                f"entry {index} has storage of type {type(st).__name__}, which cannot enter "
                "an allocation group; download() it to a plain host tensor first",
                kind="UNSUPPORTED_STORAGE",
                index=index,
            )
        st.owner.check_exclusive(op)
        return _Incoming(t, None, st, _owner_memory(st.owner))

    def _refuse_aliases(self, op: str, incoming: list[_Incoming]) -> None:
        storages: dict[int, int] = {}
        for i, entry in enumerate(incoming):
            sid = id(entry.host if entry.host is not None else entry.ref)
            if sid in storages:
                raise GroupError(
                    op,
                    f"entries {storages[sid]} and {i} are the same tensor storage; a buffer "
                    "can enter a group once (add_descriptor puts a second view on an owner)",
                    kind="ALIASED_ALLOCATION",
                    entries=(storages[sid], i),
                )
            storages[sid] = i
        existing = [_owner_memory(o) for o in self._allocations if o is not None]
        for ia, entry in enumerate(incoming):
            ra = entry.memory
            for ex in existing:
                if _overlap(ra, ex):
                    raise GroupError(
                        op,
                        f"entry {ia} shares memory with an owner already in the group",
                        kind="ALIASED_ALLOCATION",
                        entry=ia,
                    )
            for ib in range(ia + 1, len(incoming)):
                if _overlap(ra, incoming[ib].memory):
                    raise GroupError(
                        op,
                        f"entries {ia} and {ib} share memory (overlapping buffers); import "
                        "one of them and add_descriptor() for the other view",
                        kind="ALIASED_ALLOCATION",
                        entries=(ia, ib),
                    )

    def _commit(self, op: str, entry: _Incoming) -> DescriptorSlot:
        t = entry.tensor
        if entry.host is not None:
            owner = import_host_vec(entry.host, dtype_of_array(entry.host.flat, op))
            index = len(self._allocations)
            record = _record_for(op, owner, index, t._dtype, t._shape, 0)
        else:
            ref = entry.ref
            assert ref is not None
            owner = ref.owner
            index = len(self._allocations)
            record = ref.record.with_owner(index)
            ref.group._vacate_all()
        t._move(op)
        self._allocations.append(owner)
        self._descriptors.append(record)
        return DescriptorSlot(len(self._descriptors) - 1)

    def append_group(self, other: AllocationGroup) -> list[DescriptorSlot]:
        """Move every live owner and descriptor of ``other`` into this group.

        Returns the new slots of ``other``'s live descriptors, in order. ``other`` is
        moved: every later use of it (each public method and count) raises
        `GroupError` kind GROUP_MOVED. Refused, moving nothing, when ``other`` shares
        memory with this group.
        """
        op = StorageOperation.APPEND_GROUP.value
        if not isinstance(other, AllocationGroup):
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
            mine = [_owner_memory(o) for o in self._allocations if o is not None]
            for o in other._allocations:
                if o is None:
                    continue
                r = _owner_memory(o)
                if any(_overlap(r, m) for m in mine):
                    raise GroupError(
                        op,
                        f"the other group's owner {o.key!r} shares memory with this group",
                        kind="ALIASED_ALLOCATION",
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
            record = _record_for(op, owner, base.owner, dt, sh, byte_offset)
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
        _, rec = self._record("AllocationGroup.allocation_key", slot)
        owner = self._allocations[rec.owner]
        assert owner is not None
        return owner.key

    def read_view(self, slot: DescriptorSlot | int) -> TensorView:
        """A read-only `TensorView` of one descriptor. Ownership: **borrows** (an alias).

        Provider memory that is not host addressable is refused (`HostAccessError`):
        take the tensor out and ``map_read()`` or ``download()`` it.
        """
        op = StorageOperation.READ_VIEW.value
        _, rec = self._record(op, slot)
        owner = self._allocations[rec.owner]
        assert owner is not None
        if not owner.host_addressable:
            raise _host_refusal(op, owner)
        buf = owner.host_view(op)
        buf.check_shared(op)
        view = TensorView._make(
            buf.read_root(), rec.dtype, rec.shape, rec.strides, rec.element_offset, owner
        )
        holder = buf.exclusive
        if holder is not None:
            del view
            raise shared_refusal(op, holder)
        return view

    def read_views(self) -> list[TensorView]:
        """`read_view` of every live slot, in slot order (see `slots`)."""
        self._check_live("AllocationGroup.read_views")
        return [self.read_view(s) for s in self._live_slots()]

    # -- taking out ------------------------------------------------------------------------
    def take_tensor(self, slot: DescriptorSlot | int) -> Tensor:
        """Take a descriptor's tensor out: same buffer, still group-backed.

        Only when no other live descriptor points at the same owner (else
        `GroupError` kind SHARED_OWNER). Both table cells become vacant; the counts
        do not shrink and the slot is never reused (a second take is kind
        DESCRIPTOR_SLOT_VACANT). Refused with `BorrowError` while a read view of
        that owner is alive. Ownership: **moves** the owner into the tensor.
        """
        op = StorageOperation.TAKE_TENSOR.value
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
                    f"descriptor slot {index} shares its owner with slot(s) {sharing}; a "
                    "tensor can only be taken when it is the owner's sole descriptor",
                    kind="SHARED_OWNER",
                    slot=index,
                    sharing=tuple(sharing),
                )
            owner = self._allocations[rec.owner]
            assert owner is not None
            owner.check_exclusive(op)
            self._allocations[rec.owner] = None
            self._descriptors[index] = None
        return _sole_tensor(owner, rec.with_owner(0))

    def prepare_device_access(
        self, slot: DescriptorSlot | int, request: DeviceAccessRequest
    ) -> PreparedDeviceAccess:
        """Validate ``request`` against the slot owner's identity and ask its provider."""
        op = StorageOperation.PREPARE_DEVICE_ACCESS.value
        _, rec = self._record(op, slot)
        owner = self._allocations[rec.owner]
        assert owner is not None
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
                f"this group was moved by {self._moved}; use the group it was appended to",
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
                f"descriptor slot {index} is out of bounds (the group has "
                f"{len(self._descriptors)} slot(s))",
                kind="DESCRIPTOR_SLOT_OUT_OF_BOUNDS",
                slot=index,
                descriptor_count=len(self._descriptors),
            )
        rec = self._descriptors[index]
        if rec is None:
            raise GroupError(
                op,
                f"descriptor slot {index} is vacant",
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

    def __reduce__(self) -> NoReturn:
        _not_copyable("AllocationGroup")

    def __copy__(self) -> NoReturn:
        _not_copyable("AllocationGroup")

    def __deepcopy__(self, memo: Any) -> NoReturn:
        _not_copyable("AllocationGroup")


def _check_host_entry(op: str, buf: HostBuffer, dtype: DType, shape: Shape) -> DType:
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
        )
    return root_dtype


def _owner_memory(owner: OwnedStorage) -> tuple[Any, int, int]:
    return _memory_of(owner.mapped if owner.is_host else None, owner.key)
