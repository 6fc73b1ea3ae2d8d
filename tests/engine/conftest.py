"""Shared fixtures for the engine tests: engines, addresses, and a fake allocation domain.

The fake domain is written here on purpose: it exercises the engine against the
storage interface of docs/internals.md only (``placement``, ``allocation_domain``,
``allocation_id``, ``host_addressable``, ``host_buffer``, ``duplicate``), so the
engine tests do not depend on the real domains.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.errors import HostAccessError
from tenferro.placement import MemoryKind, Placement
from tenferro.storage.host import HostBuffer
from tenferro.storage.identity import AllocationDomainId, AllocationId
from tenferro.tensor import Tensor


class FakeProviderStorage:
    """Provider memory: not host addressable, but mappable (like managed memory)."""

    __slots__ = ("_buf", "allocation_domain", "allocation_id", "host_addressable", "placement")

    def __init__(self, buf: HostBuffer, domain: AllocationDomainId, ident: AllocationId) -> None:
        self._buf = buf
        self.allocation_domain = domain
        self.allocation_id = ident
        self.host_addressable = False
        self.placement = Placement(MemoryKind.MANAGED, None, None)

    def host_buffer(self, op: str, mapped: bool) -> tuple[HostBuffer, int]:
        if not mapped:
            raise HostAccessError(
                op,
                "backend storage cannot be borrowed as host data; download explicitly first",
                kind="UNSUPPORTED",
            )
        return self._buf, 0

    def duplicate(self, tensor: Tensor, op: str) -> Tensor:  # pragma: no cover - unused
        raise HostAccessError(op, "not supported by the fake", kind="UNSUPPORTED")


class FakeDomain:
    """A minimal SharedTensorAllocationDomain: id() and allocate(dtype, shape)."""

    def __init__(self) -> None:
        self._id = AllocationDomainId.fresh()
        self._ids = itertools.count(1)
        self.allocations = 0

    def id(self) -> AllocationDomainId:
        return self._id

    def allocate(self, dtype: Any, shape: Any) -> Tensor:
        dt = tfr.DType(np.dtype(dtype.numpy if isinstance(dtype, tfr.DType) else dtype).name)
        shape = tuple(shape)
        n = int(np.prod(shape, dtype=np.int64))
        flat = np.empty(n, dtype=dt.numpy)
        self.allocations += 1
        storage = FakeProviderStorage(
            HostBuffer(flat, flat), self._id, AllocationId(next(self._ids))
        )
        return Tensor._wrap(shape, dt, storage)

    def tensor(self, values: Any, shape: Any = None) -> Tensor:
        """A domain tensor holding ``values`` (column-major)."""
        arr = np.asarray(values)
        shape = tuple(shape) if shape is not None else arr.shape
        t = self.allocate(tfr.DType(arr.dtype.name), shape)
        with t.map_write() as w:
            w.array[...] = arr.reshape(shape, order="F")
        return t


@pytest.fixture
def fake_domain() -> FakeDomain:
    return FakeDomain()


@pytest.fixture
def eng() -> Iterator[tfr.CpuEngine]:
    """A fresh engine with a known byte cap (independent of the environment)."""
    yield tfr.CpuEngine(buffer_limit_bytes=100 * 2**20)


def address(t: Tensor) -> int:
    """The buffer address of a tensor (the alias used to read it dies at once)."""
    return int(t.with_host_read(lambda s: s.ctypes.data))


@pytest.fixture
def addr() -> Callable[[Tensor], int]:
    return address


def f64(shape: tuple[int, ...], seed: int = 0) -> Tensor:
    """A column-major F64 tensor of random values (adopted, zero copy)."""
    rng = np.random.default_rng(seed)
    return tfr.from_numpy(np.asfortranarray(rng.random(shape)))


@pytest.fixture
def rand() -> Callable[..., Tensor]:
    return f64
