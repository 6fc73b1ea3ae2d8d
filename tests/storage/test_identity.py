"""Allocation identities: keys, domain ids from the global counter, host imports."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr
from tenferro.storage.identity import AllocationKey, RootResourceIdentity
from tenferro.storage.span import RootResourceExtent


def host(n: int = 3) -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major((n,), np.arange(float(n)))


def test_allocation_keys_are_equal_when_domain_and_local_id_are() -> None:
    a = AllocationKey(tfr.AllocationDomainId(1), tfr.AllocationId(2))
    b = AllocationKey(tfr.AllocationDomainId(1), tfr.AllocationId(2))
    assert (a == b, hash(a) == hash(b)) == (True, True)


def test_allocation_key_refuses_plain_integers() -> None:
    with pytest.raises(tfr.ValidationError):
        AllocationKey(1, 2)  # type: ignore[arg-type]


def test_fresh_domain_ids_increase() -> None:
    a = tfr.AllocationDomainId.fresh()
    b = tfr.AllocationDomainId.fresh()
    assert b.value == a.value + 1


def test_allocation_id_from_backend_id_wraps_the_number() -> None:
    assert tfr.AllocationId.from_backend_id(42) == tfr.AllocationId(42)


def test_root_identity_exposes_its_key_and_whole_span() -> None:
    key = AllocationKey(tfr.AllocationDomainId(5), tfr.AllocationId(1))
    ident = RootResourceIdentity(RootResourceExtent(key, 0, 24, 8))
    assert (ident.key, ident.root_span().byte_len) == (key, 24)


def test_plain_host_tensors_have_no_identity() -> None:
    t = host()
    assert (t.allocation_domain, t.allocation_id) == (None, None)


def test_importing_a_host_buffer_into_a_group_mints_a_fresh_domain_id() -> None:
    before = tfr.AllocationDomainId.fresh()
    t = host().promote()
    assert t.allocation_domain == tfr.AllocationDomainId(before.value + 1)


def test_each_imported_host_buffer_is_its_own_domain() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([host(), host()])
    a, b = (group.allocation_key(s) for s in slots)
    assert (a.domain != b.domain, a.local != b.local) == (True, True)


def test_domain_ids_count_host_imports_before_a_domain_is_made() -> None:
    # The seed's fact: two host imports, then a domain, take three consecutive ids.
    before = tfr.AllocationDomainId.fresh()
    _group, _ = tfr.AllocationGroup.from_tensors([host(), host()])
    domain = tfr.SharedMemoryDomain()
    assert domain.id() == tfr.AllocationDomainId(before.value + 3)


def test_group_backed_tensor_reports_the_key_of_its_owner() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([host()])
    key = group.allocation_key(slots[0])
    t = group.take_tensor(slots[0])
    assert (t.allocation_domain, t.allocation_id) == (key.domain, key.local)
