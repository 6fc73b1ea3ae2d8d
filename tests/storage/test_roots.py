"""Alias roots are built in C (tenferro/_roots.pyx): exactly the buffer's memory, the
holder as base, and nothing that leads back to a writable or uncounted array."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tenferro._roots import root_over
from tenferro.borrow import make_read_root, make_write_root, seal_write_root


@pytest.mark.parametrize(
    "arr",
    [np.arange(8.0), np.arange(8.0)[3:], np.zeros(0), np.arange(6, dtype=np.complex64)],
    ids=["whole", "offset", "empty", "complex64"],
)
def test_a_read_root_lends_exactly_the_buffers_memory(arr: np.ndarray) -> None:
    root = make_read_root(arr)
    assert root.ctypes.data == arr.ctypes.data
    assert root.dtype == arr.dtype
    assert root.tolist() == arr.tolist()


def test_a_read_root_cannot_be_made_writable() -> None:
    root = make_read_root(np.arange(4.0))
    assert not root.flags.writeable
    with pytest.raises(ValueError):
        root.flags.writeable = True
    with pytest.raises(ValueError):
        root[1:].flags.writeable = True


def test_views_of_a_root_collapse_onto_it_and_are_counted() -> None:
    root = make_read_root(np.arange(4.0))
    before = sys.getrefcount(root)
    views = [root[1:], root.view(), root[::2]]
    assert all(v.base is root for v in views)
    assert sys.getrefcount(root) == before + len(views)


def test_the_holder_lends_the_memory_to_nobody() -> None:
    root = make_read_root(np.arange(4.0))
    holder = root.base
    assert not isinstance(holder, np.ndarray)
    with pytest.raises(TypeError):
        memoryview(holder)  # type: ignore[arg-type]
    # numpy makes a harmless 0-d object array of it, never an array over the memory.
    assert np.asarray(holder).dtype == object
    assert not hasattr(holder, "__array_interface__")


def test_a_root_keeps_its_memory_alive_after_the_flat_array_dies() -> None:
    flat = np.arange(5.0)
    root = make_read_root(flat)
    del flat
    assert root.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_write_root_writes_the_buffer_until_sealed() -> None:
    flat = np.zeros(3)
    wroot = make_write_root(flat)
    wroot[1] = 7.0
    assert flat[1] == 7.0
    seal_write_root(wroot)
    with pytest.raises(ValueError):
        wroot.flags.writeable = True


def test_a_strided_flat_array_is_refused() -> None:
    with pytest.raises(ValueError, match="contiguous"):
        root_over(np.arange(8.0)[::2], object(), False)
