"""`storage._fields.address`: the first element's address through the buffer protocol
(what linalg hands LAPACK), equal to what ctypes says."""

from __future__ import annotations

import numpy as np
import pytest

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
