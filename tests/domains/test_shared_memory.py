"""SharedMemoryDomain in one process: identity, mapped access, handles and segment lifetime."""

from __future__ import annotations

import dataclasses
import gc
import os
import pickle
from multiprocessing import resource_tracker
from typing import Any

import numpy as np
import pytest

import tenferro as tfr

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX shared memory")

SHM_DIR = "/dev/shm"
SHARED = tfr.Placement(tfr.MemoryKind.SHARED_HOST)


def segment_exists(name: str) -> bool:
    if not os.path.isdir(SHM_DIR):
        pytest.skip("no /dev/shm to inspect on this platform")
    return os.path.exists(os.path.join(SHM_DIR, name))


def shared(values: list[float], domain: tfr.SharedMemoryDomain | None = None) -> tfr.Tensor:
    t = (domain or tfr.SharedMemoryDomain()).allocate(tfr.DType.F64, (len(values),))
    with t.map_write() as w:
        w.array[:] = values
    return t


# -- the domain ----------------------------------------------------------------------------
def test_allocate_gives_a_shared_host_tensor() -> None:
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F32, (2, 3))
    assert (t.shape, t.dtype, t.placement) == ((2, 3), tfr.DType.F32, SHARED)


def test_allocations_share_the_domain_id_and_get_fresh_allocation_ids() -> None:
    d = tfr.SharedMemoryDomain()
    a, b = d.allocate(tfr.DType.F64, (1,)), d.allocate(tfr.DType.F64, (1,))
    assert (a.allocation_domain, b.allocation_domain, a.allocation_id, b.allocation_id) == (
        d.id(),
        d.id(),
        tfr.AllocationId(1),
        tfr.AllocationId(2),
    )


def test_allocate_with_a_bad_shape_is_a_validation_error() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (-1,))


def test_allocate_with_an_unknown_dtype_is_a_validation_error() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.SharedMemoryDomain().allocate("float16", (1,))


def test_an_empty_tensor_can_be_allocated_and_read() -> None:
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (0, 3))
    assert t.with_host_read(lambda a: a.size) == 0


def test_a_domain_cannot_be_pickled() -> None:
    with pytest.raises(tfr.RuntimeStateError) as err:
        pickle.dumps(tfr.SharedMemoryDomain())
    assert err.value.kind == "NOT_PICKLABLE"


# -- access ---------------------------------------------------------------------------------
def test_host_data_of_a_shared_tensor_is_refused() -> None:
    with pytest.raises(tfr.HostAccessError, match="download explicitly first"):
        shared([1, 2]).host_data()


def test_map_read_reads_through_the_mapping() -> None:
    t = shared([1, 2, 3])
    with t.map_read() as g:
        assert g.array.tolist() == [1.0, 2.0, 3.0]


def test_with_host_read_reads_through_the_mapping() -> None:
    assert shared([1, 2, 3]).with_host_read(lambda a: float(a.sum())) == 6.0


def test_map_write_is_refused_while_a_mapped_read_lives() -> None:
    t = shared([1, 2])
    guard = t.map_read()
    with pytest.raises(tfr.BorrowError):
        t.map_write()
    guard.release()


def test_download_is_a_plain_host_copy() -> None:
    h = shared([1, 2]).download()
    assert (h.placement, h.allocation_id, h.host_data().tolist()) == (
        tfr.Placement(),
        None,
        [1.0, 2.0],
    )


def test_duplicate_stays_in_the_domain_with_a_new_allocation_id() -> None:
    d = tfr.SharedMemoryDomain()
    t = shared([1, 2], d)
    dup = t.duplicate()
    assert (dup.allocation_domain, dup.allocation_id, dup.with_host_read(list)) == (
        d.id(),
        tfr.AllocationId(2),
        [1.0, 2.0],
    )


def test_copy_from_an_array_is_a_counted_copy_in_column_major_order() -> None:
    before = tfr.copy_stats().copies
    t = tfr.SharedMemoryDomain().copy_from(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert (t.with_host_read(list), tfr.copy_stats().copies - before) == (
        [1.0, 3.0, 2.0, 4.0],
        1,
    )


def test_copy_from_a_tensor_keeps_the_elements() -> None:
    src = tfr.Tensor.from_vec_col_major((2, 2), np.arange(4.0))
    assert tfr.SharedMemoryDomain().copy_from(src).with_host_read(list) == [0.0, 1.0, 2.0, 3.0]


def test_copy_from_is_refused_inside_forbid_copies() -> None:
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        tfr.SharedMemoryDomain().copy_from(np.zeros(2))


# -- handles --------------------------------------------------------------------------------
def test_share_handle_is_small_and_picklable() -> None:
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (1024, 1024))
    h = t.share_handle()
    assert (pickle.loads(pickle.dumps(h)) == h, len(pickle.dumps(h)) < 512) == (True, True)


def test_share_handle_of_a_host_tensor_is_refused() -> None:
    t = tfr.Tensor.from_vec_col_major((1,), np.zeros(1))
    with pytest.raises(tfr.RuntimeStateError) as err:
        t.share_handle()
    assert err.value.kind == "NOT_SHARED_MEMORY"


def test_share_handle_is_refused_during_an_exclusive_borrow() -> None:
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (2,))
    with t.map_write(), pytest.raises(tfr.BorrowError):
        t.share_handle()


def test_attach_maps_the_same_memory_without_copying() -> None:
    t = shared([1, 2, 3])
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        a = tfr.SharedMemoryDomain.attach(t.share_handle())
    assert (a.with_host_read(list), tfr.copy_stats()) == ([1.0, 2.0, 3.0], before)


def test_attach_sees_later_writes_of_the_owner() -> None:
    t = shared([1, 2])
    a = tfr.SharedMemoryDomain.attach(t.share_handle())
    with t.map_write() as w:
        w.array[0] = 5.0
    assert a.with_host_read(list) == [5.0, 2.0]


def test_attached_tensor_has_the_same_allocation_identity() -> None:
    t = shared([1])
    a = tfr.SharedMemoryDomain.attach(t.share_handle())
    assert (a.allocation_domain, a.allocation_id, a.placement) == (
        t.allocation_domain,
        t.allocation_id,
        SHARED,
    )


def test_attached_tensor_is_read_only() -> None:
    t = shared([1])
    a = tfr.SharedMemoryDomain.attach(t.share_handle())
    with pytest.raises(tfr.BorrowError) as err:
        a.map_write()
    assert err.value.kind == "READ_ONLY"


def test_the_owner_cannot_map_write_while_an_in_process_readers_array_lives() -> None:
    t = shared([1, 2])
    a = tfr.SharedMemoryDomain.attach(t.share_handle())
    guard = a.map_read()
    with pytest.raises(tfr.BorrowError) as err:
        t.map_write()
    assert (err.value.kind, guard.array.tolist()) == ("ALIASED", [1.0, 2.0])


def test_an_in_process_reader_cannot_map_read_while_the_owner_writes() -> None:
    t = shared([1, 2])
    a = tfr.SharedMemoryDomain.attach(t.share_handle())
    with t.map_write(), pytest.raises(tfr.BorrowError) as err:
        a.map_read()
    assert err.value.kind == "EXCLUSIVELY_BORROWED"


def test_attached_arrays_cannot_be_made_writable() -> None:
    t = shared([1])
    a = tfr.SharedMemoryDomain.attach(t.share_handle())
    with a.map_read() as g, pytest.raises(ValueError):
        g.array.flags.writeable = True


def test_attached_tensor_cannot_be_duplicated_in_place() -> None:
    t = shared([1])
    a = tfr.SharedMemoryDomain.attach(t.share_handle())
    with pytest.raises(tfr.HostAccessError) as err:
        a.duplicate()
    assert err.value.kind == "FOREIGN_DOMAIN"


def test_attach_of_a_handle_whose_shape_exceeds_the_segment_is_refused() -> None:
    h = shared([1, 2]).share_handle()
    with pytest.raises(tfr.AccessError) as err:
        tfr.SharedMemoryDomain.attach(dataclasses.replace(h, shape=(1000,)))
    assert (err.value.op, err.value.kind) == ("SharedMemoryDomain.attach", "LENGTH_MISMATCH")


@pytest.mark.parametrize("dtype", ["float64", np.dtype("float16"), None])
def test_attach_of_a_handle_whose_dtype_is_not_a_tenferro_dtype_is_refused(dtype: Any) -> None:
    h = shared([1, 2]).share_handle()
    with pytest.raises(tfr.ValidationError) as err:
        tfr.SharedMemoryDomain.attach(dataclasses.replace(h, dtype=dtype))
    assert (err.value.op, err.value.kind) == ("SharedMemoryDomain.attach", "INVALID_HANDLE")


@pytest.mark.parametrize(
    "field, value",
    [
        ("name", 7),
        ("name", ""),
        ("shape", (-1,)),
        ("shape", "2"),
        ("segment_bytes", "16"),
        ("segment_bytes", True),
        ("domain", -1),
        ("allocation", 1.0),
        ("owner_pid", None),
    ],
)
def test_attach_of_a_malformed_handle_is_a_validation_error_naming_attach(
    field: str, value: Any
) -> None:
    h = shared([1, 2]).share_handle()
    with pytest.raises(tfr.ValidationError) as err:
        tfr.SharedMemoryDomain.attach(dataclasses.replace(h, **{field: value}))
    assert err.value.op == "SharedMemoryDomain.attach"


def test_share_handle_records_the_owners_pid() -> None:
    assert shared([1]).share_handle().owner_pid == os.getpid()


def test_attach_of_something_else_is_a_validation_error() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.SharedMemoryDomain.attach("psm_x")  # type: ignore[arg-type]


def test_attach_does_not_register_the_segment_with_the_resource_tracker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A registered reader would have its tracker unlink the owner's segment at exit.
    t = shared([1])
    h = t.share_handle()
    calls: list[Any] = []
    monkeypatch.setattr(resource_tracker, "register", lambda *a: calls.append(a))
    a = tfr.SharedMemoryDomain.attach(h)
    del a
    gc.collect()
    assert calls == []


# -- segment lifetime -------------------------------------------------------------------------
def test_segment_exists_while_the_owner_tensor_lives() -> None:
    t = shared([1])
    assert segment_exists(t.share_handle().name)


def test_dropping_the_last_owner_tensor_unlinks_the_segment() -> None:
    t = shared([1])
    name = t.share_handle().name
    del t
    gc.collect()
    assert not segment_exists(name)


def test_a_reader_keeps_its_mapping_after_the_owner_drops() -> None:
    t = shared([1, 2])
    h = t.share_handle()
    a = tfr.SharedMemoryDomain.attach(h)
    del t
    gc.collect()
    assert (segment_exists(h.name), a.with_host_read(list)) == (False, [1.0, 2.0])


def test_an_array_borrowed_from_the_owner_outlives_the_tensor() -> None:
    t = shared([3, 4])
    guard = t.map_read()
    arr = guard.array
    del t, guard
    gc.collect()
    assert arr.tolist() == [3.0, 4.0]


def test_attach_after_the_owner_dropped_is_segment_gone() -> None:
    t = shared([1])
    h = t.share_handle()
    del t
    gc.collect()
    with pytest.raises(tfr.HostAccessError) as err:
        tfr.SharedMemoryDomain.attach(h)
    assert err.value.kind == "SEGMENT_GONE"


def test_a_group_holding_the_tensor_keeps_the_segment() -> None:
    t = shared([1])
    name = t.share_handle().name
    group, slots = tfr.AllocationGroup.from_tensors([t])
    assert segment_exists(name)
    taken = group.take_tensor(slots[0])
    del group
    gc.collect()
    assert segment_exists(name)
    del taken
    gc.collect()
    assert not segment_exists(name)
