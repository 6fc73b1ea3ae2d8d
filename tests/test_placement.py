"""Placements, memory kinds and allocation identities."""

from __future__ import annotations

import dataclasses
import threading

import pytest

import tenferro as tfr


def test_memory_kinds_are_the_five_of_the_design() -> None:
    assert {k.name for k in tfr.MemoryKind} == {
        "DEVICE",
        "PINNED_HOST",
        "UNPINNED_HOST",
        "MANAGED",
        "SHARED_HOST",
    }


def test_default_placement_is_unpinned_host_without_device_or_affinity() -> None:
    assert tfr.Placement() == tfr.Placement(tfr.MemoryKind.UNPINNED_HOST, None, None)


def test_placement_fields_are_named() -> None:
    p = tfr.Placement(tfr.MemoryKind.DEVICE, 1, 3)
    assert (p.memory_kind, p.device, p.cpu_affinity) == (tfr.MemoryKind.DEVICE, 1, 3)


def test_placement_is_frozen() -> None:
    p = tfr.Placement()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.device = 1  # type: ignore[misc]


def test_equal_placements_hash_alike() -> None:
    a = tfr.Placement(tfr.MemoryKind.MANAGED, None, 2)
    b = tfr.Placement(tfr.MemoryKind.MANAGED, None, 2)
    assert a == b
    assert len({a, b}) == 1


def test_placement_refuses_a_memory_kind_that_is_not_a_memory_kind() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Placement("unpinned_host")  # type: ignore[arg-type]
    assert err.value.op == "Placement"
    assert err.value.kind == "INVALID_PLACEMENT"


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0"])
def test_placement_refuses_a_device_that_is_not_a_non_negative_int(bad: object) -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.Placement(tfr.MemoryKind.DEVICE, bad)  # type: ignore[arg-type]


def test_placement_refuses_a_negative_cpu_affinity() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.Placement(tfr.MemoryKind.UNPINNED_HOST, None, -2)


def test_fresh_domain_ids_are_distinct_and_increasing() -> None:
    a, b = tfr.AllocationDomainId.fresh(), tfr.AllocationDomainId.fresh()
    assert a != b
    assert a < b


def test_fresh_domain_ids_are_unique_across_threads() -> None:
    seen: list[tfr.AllocationDomainId] = []
    lock = threading.Lock()

    def take() -> None:
        got = [tfr.AllocationDomainId.fresh() for _ in range(200)]
        with lock:
            seen.extend(got)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1600


def test_allocation_ids_compare_by_value() -> None:
    assert tfr.AllocationId(3) == tfr.AllocationId(3)
    assert tfr.AllocationId(2) < tfr.AllocationId(3)


def test_plain_host_tensor_has_the_default_placement() -> None:
    t = tfr.Tensor.from_vec_col_major((1,), [1.0])
    assert t.placement == tfr.Placement()
