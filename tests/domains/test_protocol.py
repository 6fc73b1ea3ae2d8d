"""The domain protocol and provider memory: identity, refused host_data, mapped reads.

`FakeDomain` mirrors upstream's test domain (a buffer held by the provider, memory
kind MANAGED, mappable); `OpaqueDomain` is a provider that cannot map at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from provider_fakes import MANAGED, FakeBuffer
from tenferro.domains.base import tensor_from_backend_buffer
from tenferro.dtype import as_dtype
from tenferro.layout import shape_size
from tenferro.storage.identity import AllocationIdCounter


class FakeDomain:
    mappable = True

    def __init__(self) -> None:
        self._id = tfr.AllocationDomainId.fresh()
        self._ids = AllocationIdCounter()

    def id(self) -> tfr.AllocationDomainId:
        return self._id

    def allocate(self, dtype: Any, shape: Any) -> tfr.Tensor:
        dt = as_dtype(dtype)
        n = shape_size(shape)
        data = np.zeros(n, dtype=dt.numpy)
        buf = FakeBuffer(data, self._id, self._ids.next(), mappable=self.mappable, domain=self)
        return tensor_from_backend_buffer(buf, dt, shape)


class OpaqueDomain(FakeDomain):
    mappable = False


def filled(domain: FakeDomain, values: list[float]) -> tfr.Tensor:
    t = domain.allocate(tfr.DType.F64, (2, 2))
    t._st.owner.backend_buffer().data[:] = values
    return t


# -- the protocol -------------------------------------------------------------------------
def test_shared_memory_domain_implements_the_protocol() -> None:
    assert isinstance(tfr.SharedMemoryDomain(), tfr.SharedTensorAllocationDomain)


def test_a_user_domain_implements_the_protocol() -> None:
    assert isinstance(FakeDomain(), tfr.SharedTensorAllocationDomain)


def test_a_plain_object_is_not_a_domain() -> None:
    assert not isinstance(object(), tfr.SharedTensorAllocationDomain)


# -- identity and placement -----------------------------------------------------------------
def test_domain_tensor_reports_the_domain_id() -> None:
    d = FakeDomain()
    assert d.allocate(tfr.DType.F64, (2,)).allocation_domain == d.id()


def test_domain_tensors_get_consecutive_allocation_ids() -> None:
    d = FakeDomain()
    a, b = d.allocate(tfr.DType.F64, (1,)), d.allocate(tfr.DType.F64, (1,))
    assert (a.allocation_id, b.allocation_id) == (tfr.AllocationId(1), tfr.AllocationId(2))


def test_domain_tensor_has_the_domains_memory_kind() -> None:
    assert FakeDomain().allocate(tfr.DType.F64, (1,)).placement == MANAGED


def test_domain_tensor_is_group_backed() -> None:
    assert FakeDomain().allocate(tfr.DType.F64, (1,)).is_group_backed


def test_buffer_of_the_wrong_length_is_refused() -> None:
    d = FakeDomain()
    buf = FakeBuffer(np.zeros(3), d.id(), tfr.AllocationId(9), domain=d)
    with pytest.raises(tfr.ValidationError) as err:
        tensor_from_backend_buffer(buf, tfr.DType.F64, (2, 2))
    assert err.value.kind == "LENGTH_MISMATCH"


# -- reads ----------------------------------------------------------------------------------
def test_host_data_of_provider_memory_says_download_explicitly_first() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    with pytest.raises(
        tfr.HostAccessError,
        match=r"^Tensor\.host_data: backend storage cannot be borrowed as host data; "
        r"download explicitly first$",
    ):
        t.host_data()


def test_to_numpy_of_provider_memory_is_refused() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    with pytest.raises(tfr.HostAccessError):
        np.asarray(t)


def test_as_view_of_provider_memory_is_refused() -> None:
    with pytest.raises(tfr.HostAccessError):
        filled(FakeDomain(), [1, 2, 3, 4]).as_view()


def test_with_host_read_goes_through_the_providers_mapping() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    assert t.with_host_read(lambda a: a.tolist()) == [1.0, 2.0, 3.0, 4.0]


def test_public_map_read_works_on_mappable_provider_memory() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    with t.map_read() as g:
        assert g.array.tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_mapped_read_is_counted_as_an_alias() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    guard = t.map_read()
    with pytest.raises(tfr.BorrowError):
        t.map_write()
    guard.release()


def test_map_write_writes_provider_memory() -> None:
    t = FakeDomain().allocate(tfr.DType.F64, (3,))
    with t.map_write() as w:
        w.array[:] = [7.0, 8.0, 9.0]
    assert t._st.owner.backend_buffer().data.tolist() == [7.0, 8.0, 9.0]


def test_host_data_stays_refused_after_a_mapped_read() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    t.with_host_read(lambda a: None)
    with pytest.raises(tfr.HostAccessError):
        t.host_data()


def test_download_is_a_counted_plain_host_copy() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    before = tfr.copy_stats().copies
    h = t.download()
    assert (h.is_group_backed, h.host_data().tolist(), tfr.copy_stats().copies - before) == (
        False,
        [1.0, 2.0, 3.0, 4.0],
        1,
    )


def test_map_read_of_unmappable_memory_is_unsupported() -> None:
    t = OpaqueDomain().allocate(tfr.DType.F64, (2,))
    with pytest.raises(tfr.HostAccessError) as err:
        t.map_read()
    assert (err.value.op, err.value.kind) == ("Tensor.map_read", "UNSUPPORTED")


def test_with_host_read_of_unmappable_memory_is_unsupported() -> None:
    t = OpaqueDomain().allocate(tfr.DType.F64, (2,))
    with pytest.raises(tfr.HostAccessError) as err:
        t.with_host_read(lambda a: a)
    assert err.value.kind == "UNSUPPORTED"


# -- moves and copies of provider memory ------------------------------------------------------
def test_duplicate_stays_in_the_domain_with_a_new_allocation_id() -> None:
    d = FakeDomain()
    t = filled(d, [1, 2, 3, 4])
    dup = t.duplicate()
    assert (dup.allocation_domain, dup.allocation_id, dup.placement) == (
        d.id(),
        tfr.AllocationId(2),
        MANAGED,
    )


def test_duplicate_in_the_domain_copies_the_elements() -> None:
    dup = filled(FakeDomain(), [1, 2, 3, 4]).duplicate()
    assert dup.download().host_data().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_into_host_of_provider_memory_says_to_download() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    with pytest.raises(tfr.ReinterpretError, match=r"download\(\)"):
        t.into_host()


def test_into_vec_of_provider_memory_is_refused_and_moves_nothing() -> None:
    t = filled(FakeDomain(), [1, 2, 3, 4])
    with pytest.raises(tfr.ReinterpretError) as err:
        t.into_vec_col_major()
    assert (err.value.kind, t.is_moved) == ("NOT_HOST_OWNER", False)


def test_a_group_keeps_a_provider_tensors_identity() -> None:
    t = FakeDomain().allocate(tfr.DType.F64, (2,))
    key = (t.allocation_domain, t.allocation_id)
    group, slots = tfr.AllocationGroup.from_tensors([t])
    k = group.allocation_key(slots[0])
    assert (k.domain, k.local) == key


def test_group_read_view_of_provider_memory_is_refused() -> None:
    group, slots = tfr.AllocationGroup.from_tensors([FakeDomain().allocate(tfr.DType.F64, (2,))])
    with pytest.raises(tfr.HostAccessError):
        group.read_view(slots[0])
