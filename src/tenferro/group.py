"""`AllocationGroup` with tensors, and the group branch of `Tensor`.

The tables live one layer down (`tenferro.storage.group.GroupTables`: owners,
descriptors, slots, snapshots; no tensors). This module adds what moves tensors
in (`from_tensors`, `append_tensor`) and out (`take_tensor`, `read_view`), and
the storage of a group-backed tensor: a `GroupTensorRef`, a reference to a
private, one-entry group (the tensor's own owner and descriptor). Entering a
group is one way: `Tensor.into_host` on a group-backed tensor raises
`ReinterpretError`. `Tensor.promote`, `into_host` and `into_vec_col_major`
reach this module through `tenferro._services` (it sits above `Tensor`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from . import _services
from .copies import NotCopyable, record_copy
from .dtype import as_dtype, dtype_of_array
from .errors import HostAccessError, ReinterpretError, ValidationError
from .layout import normalize_shape
from .placement import Placement
from .storage.diagnostics import StorageOperation
from .storage.group import (
    DescriptorRecord,
    DescriptorSlot,
    GroupTables,
    check_host_entry,
    host_refusal,
    memory_of,
    owner_memory,
    record_for,
)
from .storage.host import HostBuffer, shared_refusal
from .storage.identity import AllocationDomainId, AllocationId
from .storage.imports import import_host_vec
from .storage.owned import OwnedStorage
from .tensor import Tensor, _release_host_buffer
from .view import TensorView

__all__ = [
    "AllocationGroup",
    "DescriptorSlot",
    "GroupTensorRef",
    "group_into_host",
    "group_into_vec",
    "promote_tensor",
    "tensor_from_owner",
]


# ------------------------------------------------------------------------ the tensor branch
class GroupTensorRef(NotCopyable):
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
            raise host_refusal(op, self.owner)
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
    return _sole_tensor(owner, record_for(op, owner, 0, dt, sh, 0))


def _sole_tensor(owner: OwnedStorage, record: DescriptorRecord) -> Tensor:
    """A tensor over ``record`` (owner 0) in a new private group holding just ``owner``."""
    group = AllocationGroup()
    group._append(owner, record)
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
        root_dtype = check_host_entry(op, st, t._dtype, t._shape)
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


class AllocationGroup(GroupTables):
    """Owners and the descriptors that point at them, and the tensors they came from.

    Build one with `AllocationGroup.from_tensors` or ``AllocationGroup()`` (empty).
    Not copyable or picklable (it owns memory). The tables and the operations
    that need no tensor (``append_group``, ``add_descriptor``, ``descriptor``,
    ``snapshot``, ...) are `GroupTables`'.
    """

    __slots__ = ()

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
            self._refuse_aliases(
                op, [(e.host if e.host is not None else e.ref, e.memory) for e in incoming]
            )
            # Everything is checked: from here on nothing can fail half way.
            return [self._commit(op, entry) for entry in incoming]

    def _prepare(self, op: str, index: int, t: Any) -> _Incoming:
        if not isinstance(t, Tensor):
            raise ValidationError(
                op,
                f"entry {index} is a {type(t).__name__}, not a Tensor",
                kind="NOT_A_TENSOR",
                index=index,
            )
        st = t._live(op)
        if st.__class__ is HostBuffer:
            check_host_entry(op, st, t._dtype, t._shape)
            st.check_exclusive(op)
            return _Incoming(t, st, None, memory_of(st, None))
        if not isinstance(st, GroupTensorRef):
            raise ValidationError(
                op,
                f"{type(st).__name__} cannot enter an allocation group; download() it to a "
                "plain host tensor first",
                kind="UNSUPPORTED_STORAGE",
                index=index,
            )
        st.owner.check_exclusive(op)
        return _Incoming(t, None, st, owner_memory(st.owner))

    def _commit(self, op: str, entry: _Incoming) -> DescriptorSlot:
        t = entry.tensor
        if entry.host is not None:
            owner = import_host_vec(entry.host, dtype_of_array(entry.host.flat, op))
            index = len(self._allocations)
            record = record_for(op, owner, index, t._dtype, t._shape, 0)
        else:
            ref = entry.ref
            assert ref is not None
            owner = ref.owner
            index = len(self._allocations)
            record = ref.record.with_owner(index)
            ref.group._vacate_all()
        t._move(op)
        return self._append(owner, record)

    def read_view(self, slot: DescriptorSlot | int) -> TensorView:
        """A read-only `TensorView` of one descriptor. Ownership: **borrows** (an alias).

        Provider memory that is not host addressable is refused (`HostAccessError`):
        take the tensor out and ``map_read()`` or ``download()`` it.
        """
        op = StorageOperation.READ_VIEW.value
        owner, rec = self._owner_of(op, slot)
        if not owner.host_addressable:
            raise host_refusal(op, owner)
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
        owner, rec = self._take(StorageOperation.TAKE_TENSOR.value, slot)
        return _sole_tensor(owner, rec)


_services.register_group(promote_tensor, group_into_host, group_into_vec)
