"""The registration points through which lower layers reach upper ones."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro import _services
from tenferro.storage.host import HostBuffer
from tenferro.storage.recycler import Recycler


@pytest.mark.parametrize(
    "slot",
    ["default_engine", "export_dlpack", "dlpack_device", "share_handle", "promote", "host_tensor"],
)
def test_import_tenferro_fills_every_service_slot(slot: str) -> None:
    assert not getattr(_services, slot).__name__.startswith("_no_")


def test_an_empty_slot_raises_a_typed_error_naming_the_module_to_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_services, "promote", _services._no_promote)
    t = tfr.from_numpy(np.ones(2))
    with pytest.raises(tfr.RuntimeStateError) as err:
        t.promote()
    assert err.value.kind == "SERVICE_NOT_REGISTERED"
    assert "tenferro.group" in str(err.value)
    assert not t.is_moved


def test_the_views_isinstance_check_sees_the_registered_tensor_class() -> None:
    assert _services.tensor_type is tfr.Tensor


class _CountingRecycler:
    """A recycler that is not a pool: storage needs nothing but `recycle`."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None:
        self.calls.append((owner.ctypes.data, aliases))


def test_a_dropped_buffer_calls_its_recyclers_one_method_once() -> None:
    recycler = _CountingRecycler()
    assert isinstance(recycler, Recycler)
    owner = np.empty(8)
    address = owner.ctypes.data
    buf = HostBuffer(owner, owner[:4], weakref.ref(recycler))
    del buf, owner
    assert recycler.calls == [(address, 0)]


def test_the_engines_pool_is_a_recycler() -> None:
    assert isinstance(tfr.BufferPool(), Recycler)


def test_a_buffer_whose_recycler_is_gone_is_simply_freed() -> None:
    recycler = _CountingRecycler()
    owner = np.empty(8)
    buf = HostBuffer(owner, owner, weakref.ref(recycler))
    del recycler
    del buf  # nothing to call, nothing raised
