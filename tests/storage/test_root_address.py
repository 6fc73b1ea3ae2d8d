"""A read root lends numpy exactly the buffer's memory (its address, compiled)."""

from __future__ import annotations

import numpy as np
import pytest

from tenferro.borrow import make_read_root
from tenferro.storage._fields import address


@pytest.mark.parametrize(
    "arr",
    [np.arange(8.0), np.arange(8.0)[3:], np.zeros(0), np.arange(6, dtype=np.complex64)],
    ids=["whole", "offset", "empty", "complex64"],
)
def test_address_is_the_first_elements_address(arr: np.ndarray) -> None:
    assert address(arr) == arr.ctypes.data


def test_address_reads_a_read_only_array() -> None:
    arr = np.arange(4.0)
    arr.flags.writeable = False
    assert address(arr) == arr.ctypes.data


def test_a_read_root_of_an_offset_slice_sees_its_memory() -> None:
    base = np.arange(8.0)
    part = base[3:]
    root = make_read_root(part, address(part))
    assert root.ctypes.data == part.ctypes.data
    assert root.tolist() == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert not root.flags.writeable
