"""Allocation groups: the seed's facts, slots, shared owners, moves, and group-backed reads."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.storage.host import HostBuffer
from tenferro.storage.root import DeviceAccessRequest


def addr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


def vec(*values: float) -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major((len(values),), np.array(values, dtype=np.float64))


def two() -> tuple[tfr.AllocationGroup, list[tfr.DescriptorSlot]]:
    return tfr.AllocationGroup.from_tensors([vec(1, 2, 3), vec(4, 5)])


# -- the seed's facts ---------------------------------------------------------------------
def test_from_tensors_of_two_plain_tensors_counts_two_allocations_and_two_descriptors() -> None:
    group, _ = two()
    assert (group.allocation_count, group.descriptor_count) == (2, 2)


def test_from_tensors_returns_one_slot_per_tensor_in_order() -> None:
    _, slots = two()
    assert slots == [tfr.DescriptorSlot(0), tfr.DescriptorSlot(1)]


def test_group_repr_shows_both_counts() -> None:
    group, _ = two()
    assert repr(group) == "AllocationGroup(allocation_count=2, descriptor_count=2)"


def test_read_views_have_the_tensors_shapes() -> None:
    group, _ = two()
    assert [list(v.shape) for v in group.read_views()] == [[3], [2]]


def test_read_view_shows_the_elements() -> None:
    group, slots = two()
    assert group.read_view(slots[1]).to_numpy().tolist() == [4.0, 5.0]


def test_from_tensors_moves_each_tensor() -> None:
    t = vec(1, 2)
    tfr.AllocationGroup.from_tensors([t])
    with pytest.raises(tfr.MovedTensorError, match=r"AllocationGroup\.from_tensors"):
        t.host_data()


def test_from_tensors_copies_no_element() -> None:
    t = vec(1, 2, 3)
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        tfr.AllocationGroup.from_tensors([t])
    assert tfr.copy_stats() == before


def test_take_tensor_returns_the_same_buffer() -> None:
    data = np.array([1.0, 2.0, 3.0])
    address = addr(data)
    group, slots = tfr.AllocationGroup.from_tensors([tfr.Tensor.from_vec_col_major((3,), data)])
    t = group.take_tensor(slots[0])
    assert addr(t.host_data()) == address


def test_taken_tensor_is_still_group_backed() -> None:
    group, slots = two()
    assert group.take_tensor(slots[0]).is_group_backed


def test_taken_tensor_into_host_is_a_reinterpret_error() -> None:
    group, slots = two()
    t = group.take_tensor(slots[0])
    with pytest.raises(
        tfr.ReinterpretError, match="the tensor is group-backed rather than plain host storage"
    ):
        t.into_host()


def test_taken_tensor_stays_usable_after_a_refused_into_host() -> None:
    group, slots = two()
    t = group.take_tensor(slots[0])
    with pytest.raises(tfr.ReinterpretError):
        t.into_host()
    assert t.host_data().tolist() == [1.0, 2.0, 3.0]


def test_counts_do_not_shrink_after_a_take() -> None:
    group, slots = two()
    group.take_tensor(slots[0])
    assert (group.allocation_count, group.descriptor_count) == (2, 2)


def test_second_take_of_a_slot_is_descriptor_slot_vacant() -> None:
    group, slots = two()
    group.take_tensor(slots[0])
    with pytest.raises(tfr.GroupError, match="descriptor slot 0 is vacant") as err:
        group.take_tensor(slots[0])
    assert (err.value.kind, err.value.slot) == ("DESCRIPTOR_SLOT_VACANT", 0)


def test_take_leaves_both_table_cells_vacant() -> None:
    group, slots = two()
    group.take_tensor(slots[0])
    snap = group.snapshot()
    assert (snap.owners[0].vacant, snap.descriptors[0].vacant, snap.owners[1].vacant) == (
        True,
        True,
        False,
    )


def test_a_taken_slot_is_never_reused() -> None:
    group, slots = two()
    group.take_tensor(slots[0])
    assert group.append_tensor(vec(9)) == tfr.DescriptorSlot(2)


def test_read_view_of_a_vacant_slot_is_descriptor_slot_vacant() -> None:
    group, slots = two()
    group.take_tensor(slots[1])
    with pytest.raises(tfr.GroupError) as err:
        group.read_view(slots[1])
    assert err.value.kind == "DESCRIPTOR_SLOT_VACANT"


def test_read_views_skips_vacant_slots() -> None:
    group, slots = two()
    group.take_tensor(slots[0])
    assert ([list(v.shape) for v in group.read_views()], group.slots()) == ([[2]], [slots[1]])


def test_slot_past_the_table_is_descriptor_slot_out_of_bounds() -> None:
    group, _ = two()
    with pytest.raises(tfr.GroupError) as err:
        group.take_tensor(tfr.DescriptorSlot(5))
    assert (err.value.kind, err.value.descriptor_count) == ("DESCRIPTOR_SLOT_OUT_OF_BOUNDS", 2)


def test_a_slot_that_is_not_an_index_is_a_validation_error() -> None:
    group, _ = two()
    with pytest.raises(tfr.ValidationError):
        group.read_view("0")  # type: ignore[arg-type]


# -- DescriptorSlot -------------------------------------------------------------------------
def test_descriptor_slot_is_an_index() -> None:
    slot = tfr.DescriptorSlot(3)
    assert (slot.index, int(slot), [10, 11, 12, 13][slot]) == (3, 3, 13)


def test_descriptor_slot_is_frozen() -> None:
    slot = tfr.DescriptorSlot(0)
    with pytest.raises(AttributeError):
        slot.index = 1  # type: ignore[misc]


def test_descriptor_slot_refuses_a_negative_index() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.DescriptorSlot(-1)


def test_a_plain_int_works_as_a_slot() -> None:
    group, _ = two()
    assert group.read_view(1).shape == (2,)


# -- shared owners and add_descriptor ---------------------------------------------------------
def test_add_descriptor_puts_a_second_tensor_on_the_same_owner() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(0, 1, 2, 3, 4, 5)])
    second = group.add_descriptor(slots[0], tfr.DType.F64, (2,), byte_offset=32)
    assert (group.read_view(second).to_numpy().tolist(), group.allocation_count) == ([4.0, 5.0], 1)


def test_add_descriptor_views_share_the_owners_memory() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(0, 1, 2, 3)])
    second = group.add_descriptor(slots[0], tfr.DType.F64, (2, 2))
    assert addr(group.read_view(second).to_numpy()) == addr(group.read_view(slots[0]).to_numpy())


def test_add_descriptor_may_read_real_bytes_as_complex() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3, 4)])
    c = group.add_descriptor(slots[0], tfr.DType.C64, (1,), byte_offset=16)
    assert group.read_view(c).to_numpy().tolist() == [3 + 4j]


def test_add_descriptor_past_the_owner_is_an_access_error() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3)])
    with pytest.raises(tfr.AccessError) as err:
        group.add_descriptor(slots[0], tfr.DType.F64, (2,), byte_offset=16)
    assert err.value.kind == "INVALID_LAYOUT"


def test_add_descriptor_off_an_element_boundary_is_an_access_error() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3)])
    with pytest.raises(tfr.AccessError):
        group.add_descriptor(slots[0], tfr.DType.F64, (1,), byte_offset=4)


def test_add_descriptor_of_an_incompatible_dtype_is_dtype_mismatch() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3)])
    with pytest.raises(tfr.AccessError) as err:
        group.add_descriptor(slots[0], tfr.DType.I64, (1,))
    assert err.value.kind == "DTYPE_MISMATCH"


def test_a_refused_add_descriptor_leaves_the_tables_unchanged() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3)])
    with pytest.raises(tfr.AccessError):
        group.add_descriptor(slots[0], tfr.DType.F64, (4,))
    assert group.descriptor_count == 1


@pytest.mark.parametrize("bad", ["a", None, 8.0, True, False])
def test_add_descriptor_with_a_byte_offset_that_is_not_an_int_is_an_access_error(
    bad: object,
) -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3)])
    with pytest.raises(tfr.AccessError, match="byte_offset must be an int") as err:
        group.add_descriptor(slots[0], tfr.DType.F64, (1,), byte_offset=bad)  # type: ignore[arg-type]
    assert (err.value.op, err.value.kind, group.descriptor_count) == (
        "AllocationGroup.add_descriptor",
        "INVALID_LAYOUT",
        1,
    )


def test_add_descriptor_takes_a_numpy_integer_byte_offset() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3)])
    tail = group.add_descriptor(slots[0], tfr.DType.F64, (1,), byte_offset=np.int64(16))
    assert group.read_view(tail).to_numpy().tolist() == [3.0]


def test_complex_view_of_an_odd_real_buffer_is_refused() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3)])
    with pytest.raises(tfr.GroupError) as err:
        group.add_descriptor(slots[0], tfr.DType.C64, (1,))
    assert err.value.kind == "INVALID_LAYOUT"


def test_take_of_a_shared_owner_is_shared_owner() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3, 4)])
    group.add_descriptor(slots[0], tfr.DType.F64, (2,), byte_offset=16)
    with pytest.raises(tfr.GroupError) as err:
        group.take_tensor(slots[0])
    assert (err.value.kind, err.value.sharing) == ("SHARED_OWNER", (1,))


def test_a_refused_take_leaves_the_slot_live() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3, 4)])
    group.add_descriptor(slots[0], tfr.DType.F64, (2,), byte_offset=16)
    with pytest.raises(tfr.GroupError):
        group.take_tensor(slots[0])
    assert group.read_view(slots[0]).shape == (4,)


# -- refused imports move nothing -------------------------------------------------------------
def test_the_same_tensor_twice_is_aliased_allocation() -> None:
    t = vec(1, 2)
    with pytest.raises(tfr.GroupError) as err:
        tfr.AllocationGroup.from_tensors([t, t])
    assert (err.value.kind, t.is_moved) == ("ALIASED_ALLOCATION", False)


def test_tensors_over_overlapping_memory_are_aliased_allocation() -> None:
    shared = bytearray(np.arange(8.0).tobytes())  # not an ndarray: adoption cannot freeze it
    a = tfr.Tensor.from_vec_col_major((5,), np.frombuffer(shared, count=5))
    b = tfr.Tensor.from_vec_col_major((5,), np.frombuffer(shared, offset=3 * 8))
    with pytest.raises(tfr.GroupError) as err:
        tfr.AllocationGroup.from_tensors([a, b])
    assert (err.value.kind, a.is_moved, b.is_moved) == ("ALIASED_ALLOCATION", False, False)


def test_appending_memory_the_group_already_owns_is_aliased_allocation() -> None:
    shared = bytearray(np.arange(8.0).tobytes())  # not an ndarray: adoption cannot freeze it
    a = tfr.Tensor.from_vec_col_major((4,), np.frombuffer(shared, count=4))
    b = tfr.Tensor.from_vec_col_major((6,), np.frombuffer(shared, offset=2 * 8))
    group, _ = tfr.AllocationGroup.from_tensors([a])
    with pytest.raises(tfr.GroupError) as err:
        group.append_tensor(b)
    assert (err.value.kind, b.is_moved, group.descriptor_count) == ("ALIASED_ALLOCATION", False, 1)


def test_a_live_alias_refuses_from_tensors_and_moves_nothing() -> None:
    a, b = vec(1), vec(2)
    alias = b.host_data()
    with pytest.raises(tfr.BorrowError):
        tfr.AllocationGroup.from_tensors([a, b])
    del alias
    assert (a.is_moved, b.is_moved) == (False, False)


def test_a_non_tensor_entry_is_a_validation_error_that_moves_nothing() -> None:
    a = vec(1)
    with pytest.raises(tfr.ValidationError) as err:
        tfr.AllocationGroup.from_tensors([a, np.zeros(2)])  # type: ignore[list-item]
    assert (err.value.index, a.is_moved) == (1, False)


def test_a_moved_entry_is_a_moved_tensor_error_that_moves_nothing() -> None:
    a, b = vec(1), vec(2)
    b.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        tfr.AllocationGroup.from_tensors([a, b])
    assert a.is_moved is False


def test_a_single_tensor_instead_of_a_list_is_a_validation_error() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.AllocationGroup.from_tensors(vec(1))  # type: ignore[arg-type]


# -- append -------------------------------------------------------------------------------
def test_append_tensor_returns_the_next_slot() -> None:
    group, _ = two()
    assert group.append_tensor(vec(7, 8)) == tfr.DescriptorSlot(2)


def test_append_group_moves_the_other_groups_entries_in() -> None:
    group, _ = two()
    other, _ = tfr.AllocationGroup.from_tensors([vec(6), vec(7, 8)])
    slots = group.append_group(other)
    assert (slots, [v.shape for v in group.read_views()]) == (
        [tfr.DescriptorSlot(2), tfr.DescriptorSlot(3)],
        [(3,), (2,), (1,), (2,)],
    )


def test_append_group_keeps_shared_owners_shared() -> None:
    group, _ = two()
    other, oslots = tfr.AllocationGroup.from_tensors([vec(1, 2, 3, 4)])
    other.add_descriptor(oslots[0], tfr.DType.F64, (2,), byte_offset=16)
    slots = group.append_group(other)
    with pytest.raises(tfr.GroupError) as err:
        group.take_tensor(slots[0])
    assert (err.value.kind, group.allocation_count) == ("SHARED_OWNER", 3)


def test_an_appended_group_is_moved() -> None:
    group, _ = two()
    other, oslots = tfr.AllocationGroup.from_tensors([vec(6)])
    group.append_group(other)
    with pytest.raises(tfr.GroupError) as err:
        other.read_view(oslots[0])
    assert err.value.kind == "GROUP_MOVED"


MOVED_GROUP_USES = {
    "append_tensor": lambda g: g.append_tensor(vec(9)),
    "append_group (as the target)": lambda g: g.append_group(two()[0]),
    "append_group (as the source)": lambda g: two()[0].append_group(g),
    "add_descriptor": lambda g: g.add_descriptor(0, tfr.DType.F64, (1,)),
    "allocation_count": lambda g: g.allocation_count,
    "descriptor_count": lambda g: g.descriptor_count,
    "slots": lambda g: g.slots(),
    "descriptor": lambda g: g.descriptor(0),
    "allocation_key": lambda g: g.allocation_key(0),
    "read_view": lambda g: g.read_view(0),
    "read_views": lambda g: g.read_views(),
    "take_tensor": lambda g: g.take_tensor(0),
    "prepare_device_access": lambda g: g.prepare_device_access(
        0, DeviceAccessRequest(tfr.AllocationDomainId(1), tfr.AllocationId(1), 8, 8)
    ),
    "snapshot": lambda g: g.snapshot(),
}


@pytest.mark.parametrize("use", MOVED_GROUP_USES.values(), ids=MOVED_GROUP_USES.keys())
def test_every_public_method_of_an_appended_group_is_group_moved(use: Any) -> None:
    group, _ = two()
    other, _ = tfr.AllocationGroup.from_tensors([vec(6)])
    group.append_group(other)
    with pytest.raises(tfr.GroupError) as err:
        use(other)
    assert (err.value.kind, err.value.moved_by) == ("GROUP_MOVED", "AllocationGroup.append_group")


def test_an_appended_group_repr_says_it_was_moved() -> None:
    group, _ = two()
    other, _ = tfr.AllocationGroup.from_tensors([vec(6)])
    group.append_group(other)
    assert repr(other) == "AllocationGroup(<moved by AllocationGroup.append_group>)"


def test_appending_a_group_to_itself_is_refused() -> None:
    group, _ = two()
    with pytest.raises(tfr.GroupError) as err:
        group.append_group(group)
    assert err.value.kind == "SAME_GROUP"


def test_a_taken_tensor_keeps_its_identity_when_it_enters_another_group() -> None:
    group, slots = two()
    key = group.allocation_key(slots[0])
    t = group.take_tensor(slots[0])
    other, oslots = tfr.AllocationGroup.from_tensors([t])
    assert (other.allocation_key(oslots[0]), t.is_moved) == (key, True)


# -- groups own memory --------------------------------------------------------------------
def test_a_group_cannot_be_pickled() -> None:
    group, _ = two()
    with pytest.raises(tfr.GroupError) as err:
        pickle.dumps(group)
    assert err.value.kind == "NOT_COPYABLE"


def test_a_group_cannot_be_copied() -> None:
    group, _ = two()
    with pytest.raises(tfr.GroupError):
        copy.deepcopy(group)


def test_take_is_refused_while_a_read_view_of_that_owner_lives() -> None:
    group, slots = two()
    view = group.read_view(slots[0])
    with pytest.raises(tfr.BorrowError):
        group.take_tensor(slots[0])
    del view
    assert group.take_tensor(slots[0]).shape == (3,)


# -- promote ----------------------------------------------------------------------------------
def test_promote_keeps_the_buffer() -> None:
    data = np.arange(4.0)
    address = addr(data)
    t = tfr.Tensor.from_vec_col_major((2, 2), data).promote()
    assert (addr(t.host_data()), t.is_group_backed) == (address, True)


def test_promote_copies_no_element() -> None:
    t = vec(1, 2, 3)
    with tfr.forbid_copies():
        p = t.promote()
    assert p.shape == (3,)


def test_promote_moves_the_tensor() -> None:
    t = vec(1)
    t.promote()
    with pytest.raises(tfr.MovedTensorError, match=r"Tensor\.promote"):
        t.shape  # noqa: B018


def test_promote_is_refused_while_an_alias_lives_and_moves_nothing() -> None:
    t = vec(1, 2)
    alias = t.host_data()
    with pytest.raises(tfr.BorrowError):
        t.promote()
    del alias
    assert t.is_moved is False


def test_promoted_host_tensor_keeps_host_placement() -> None:
    assert vec(1).promote().placement == tfr.Placement(tfr.MemoryKind.UNPINNED_HOST)


def test_promoting_a_group_backed_tensor_keeps_its_identity() -> None:
    p = vec(1, 2).promote()
    key = (p.allocation_domain, p.allocation_id)
    q = p.promote()
    assert ((q.allocation_domain, q.allocation_id), p.is_moved) == (key, True)


class FakePool:
    """Records what a HostBuffer hands back when its owner is dropped."""

    _lane_bytes = -1  # no return lane: every release goes through recycle()

    def __init__(self) -> None:
        self.recycled: list[tuple[int, int]] = []

    def recycle(self, owner: np.ndarray, aliases: int) -> None:
        self.recycled.append((addr(owner), aliases))


def pooled(pool: FakePool, n: int = 4) -> tfr.Tensor:
    arr = np.zeros(n)
    return tfr.Tensor._wrap((n,), tfr.DType.F64, HostBuffer(arr, arr, weakref.ref(pool)))  # type: ignore[arg-type]


def test_a_promoted_engine_output_keeps_its_pool_link() -> None:
    pool = FakePool()
    t = pooled(pool)
    address = addr(t._st.flat)
    p = t.promote()
    del t
    assert pool.recycled == []
    del p
    gc.collect()
    assert pool.recycled == [(address, 0)]


def test_into_vec_of_a_promoted_output_clears_the_pool_link() -> None:
    pool = FakePool()
    p = pooled(pool).promote()
    _, arr = p.into_vec_col_major()
    del p, arr
    gc.collect()
    assert pool.recycled == []


# -- the read API on group-backed tensors ---------------------------------------------------
def group_backed(*values: float) -> tfr.Tensor:
    return vec(*values).promote()


def test_group_backed_host_data_is_read_only() -> None:
    with pytest.raises(ValueError):
        group_backed(1, 2).host_data()[0] = 5.0


def test_group_backed_map_read_is_column_major() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 2), np.arange(4.0)).promote()
    with t.map_read() as g:
        assert g.array.tolist() == [[0.0, 2.0], [1.0, 3.0]]


def test_group_backed_with_host_read_sees_the_elements() -> None:
    assert group_backed(1, 2, 3).with_host_read(lambda a: float(a.sum())) == 6.0


def test_group_backed_to_numpy_borrows_without_copying() -> None:
    t = group_backed(1, 2)
    with tfr.forbid_copies():
        assert np.asarray(t).tolist() == [1.0, 2.0]


def test_group_backed_as_view_transposes() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 3), np.arange(6.0)).promote()
    assert t.as_view().transpose_view((1, 0)).to_numpy().tolist() == [
        [0.0, 1.0],
        [2.0, 3.0],
        [4.0, 5.0],
    ]


def test_group_backed_map_write_writes_the_owners_buffer() -> None:
    t = group_backed(1, 2)
    with t.map_write() as w:
        w.array[1] = 9.0
    assert t.host_data().tolist() == [1.0, 9.0]


def test_group_backed_map_write_is_refused_while_an_alias_lives() -> None:
    t = group_backed(1, 2)
    alias = t.host_data()
    with pytest.raises(tfr.BorrowError) as err:
        t.map_write()
    assert (err.value.kind, alias.tolist()) == ("ALIASED", [1.0, 2.0])


def test_group_backed_duplicate_is_a_plain_host_copy() -> None:
    t = group_backed(1, 2)
    before = tfr.copy_stats().copies
    d = t.duplicate()
    assert (d.is_group_backed, d.host_data().tolist(), tfr.copy_stats().copies - before) == (
        False,
        [1.0, 2.0],
        1,
    )


def test_group_backed_into_vec_hands_back_the_callers_array() -> None:
    data = np.arange(3.0)
    t = tfr.Tensor.from_vec_col_major((3,), data).promote()
    shape, out = t.into_vec_col_major()
    assert (shape, out is data, out.flags.writeable, t.is_moved) == ((3,), True, True, True)


def test_group_backed_into_vec_is_refused_while_an_alias_lives() -> None:
    t = group_backed(1, 2)
    alias = t.host_data()
    with pytest.raises(tfr.BorrowError):
        t.into_vec_col_major()
    del alias
    assert t.is_moved is False


def test_group_backed_repr_names_the_identity() -> None:
    t = group_backed(1)
    assert f"allocation_id={t.allocation_id!r}" in repr(t)


def test_a_group_backed_tensor_cannot_be_pickled() -> None:
    with pytest.raises(tfr.TenferroError):
        pickle.dumps(group_backed(1))


class ForeignStorage:
    """A storage kind groups do not know (e.g. another library's device buffer)."""

    placement = tfr.Placement(tfr.MemoryKind.DEVICE)
    allocation_domain = None
    allocation_id = None
    host_addressable = False


def test_a_tensor_over_a_foreign_storage_cannot_enter_a_group() -> None:
    a = vec(1)
    foreign = tfr.Tensor._wrap((1,), tfr.DType.F64, ForeignStorage())
    with pytest.raises(tfr.ValidationError) as err:
        tfr.AllocationGroup.from_tensors([a, foreign])
    assert (err.value.kind, a.is_moved, foreign.is_moved) == ("UNSUPPORTED_STORAGE", False, False)
