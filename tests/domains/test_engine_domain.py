"""Engines and the shared-memory domain: to_contiguous stays in the domain, arithmetic refuses.

These are the seed's domain facts ("domain engine to_contiguous ... allocation_id 2",
"add -> Err: ... download to host before CPU execution" on both engines), on the
shared-memory domain that ships instead of upstream's fake one.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import tenferro as tfr

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX shared memory")

DOWNLOAD_FIRST = "download to host before CPU execution"


@pytest.fixture
def domain() -> tfr.SharedMemoryDomain:
    return tfr.SharedMemoryDomain()


@pytest.fixture
def t(domain: tfr.SharedMemoryDomain) -> tfr.Tensor:
    x = domain.allocate(tfr.DType.F64, (2, 2))
    with x.map_write() as w:
        w.array[...] = [[1.0, 3.0], [2.0, 4.0]]
    return x


def test_to_contiguous_on_a_domain_engine_stays_in_the_domain(
    domain: tfr.SharedMemoryDomain, t: tfr.Tensor
) -> None:
    out = tfr.CpuEngine(allocation_domain=domain).to_contiguous(t)
    assert (out.allocation_domain, out.placement.memory_kind) == (
        domain.id(),
        tfr.MemoryKind.SHARED_HOST,
    )


def test_to_contiguous_in_the_domain_gets_a_new_allocation_id(
    domain: tfr.SharedMemoryDomain, t: tfr.Tensor
) -> None:
    out = tfr.CpuEngine(allocation_domain=domain).to_contiguous(t)
    assert (t.allocation_id, out.allocation_id) == (tfr.AllocationId(1), tfr.AllocationId(2))


def test_to_contiguous_in_the_domain_copies_the_values(
    domain: tfr.SharedMemoryDomain, t: tfr.Tensor
) -> None:
    out = tfr.CpuEngine(allocation_domain=domain).to_contiguous(t)
    assert out.with_host_read(lambda a: a.tolist()) == [1.0, 2.0, 3.0, 4.0]


def test_to_contiguous_in_the_domain_is_a_separate_shareable_segment(
    domain: tfr.SharedMemoryDomain, t: tfr.Tensor
) -> None:
    out = tfr.CpuEngine(allocation_domain=domain).to_contiguous(t)
    assert out.share_handle().name != t.share_handle().name


def test_to_contiguous_in_the_domain_is_a_counted_copy(
    domain: tfr.SharedMemoryDomain, t: tfr.Tensor
) -> None:
    eng = tfr.CpuEngine(allocation_domain=domain)
    before = tfr.copy_stats().copies
    eng.to_contiguous(t)
    assert tfr.copy_stats().copies - before == 1


def test_to_contiguous_on_a_plain_engine_refuses_shared_memory(t: tfr.Tensor) -> None:
    with pytest.raises(tfr.RuntimeStateError, match="requires source host placement"):
        tfr.CpuEngine().to_contiguous(t)


def test_add_on_a_domain_engine_refuses_shared_memory(
    domain: tfr.SharedMemoryDomain, t: tfr.Tensor
) -> None:
    with pytest.raises(tfr.RuntimeStateError, match=DOWNLOAD_FIRST):
        tfr.CpuEngine(allocation_domain=domain).add(t, t)


def test_add_on_a_plain_engine_refuses_shared_memory(t: tfr.Tensor) -> None:
    with pytest.raises(tfr.RuntimeStateError, match=DOWNLOAD_FIRST):
        tfr.CpuEngine().add(t, t)


def test_matmul_refuses_shared_memory(domain: tfr.SharedMemoryDomain, t: tfr.Tensor) -> None:
    with pytest.raises(tfr.RuntimeStateError, match=DOWNLOAD_FIRST):
        tfr.CpuEngine(allocation_domain=domain).matmul(t, t)


def test_an_attached_tensor_is_refused_by_arithmetic_too(t: tfr.Tensor) -> None:
    attached = tfr.SharedMemoryDomain.attach(t.share_handle())
    with pytest.raises(tfr.RuntimeStateError, match=DOWNLOAD_FIRST):
        tfr.CpuEngine().add(attached, attached)


def test_a_downloaded_copy_computes_normally(t: tfr.Tensor) -> None:
    h = t.download()
    assert tfr.CpuEngine().add(h, h).host_data().tolist() == [2.0, 4.0, 6.0, 8.0]


def test_a_refused_add_leaves_the_shared_tensor_readable(t: tfr.Tensor) -> None:
    with pytest.raises(tfr.RuntimeStateError):
        tfr.CpuEngine().add(t, t)
    assert t.with_host_read(lambda a: float(a.sum())) == 10.0


def test_a_promoted_engine_output_keeps_its_pool_link() -> None:
    eng = tfr.CpuEngine()
    a = tfr.Tensor.from_vec_col_major((64,), np.ones(64))
    eng.reset_buffer_pool()
    out = eng.add(a, a).promote()
    assert eng.buffer_pool_stats().buffers == 0
    del out
    assert eng.buffer_pool_stats().buffers == 1


def test_a_group_backed_host_tensor_is_a_valid_engine_input() -> None:
    p = tfr.Tensor.from_vec_col_major((3,), np.array([1.0, 2.0, 3.0])).promote()
    assert tfr.CpuEngine().add(p, p).host_data().tolist() == [2.0, 4.0, 6.0]
