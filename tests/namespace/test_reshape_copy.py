"""`reshape` of an owner whose layout needs a copy (issue 20's owner row-major reshape):
one named copy, read under the engine's pin, with numpy's values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr

SHAPES = [(24,), (4, 6), (6, -1), (2, 12), (3, 2, 4), (-1,)]


@given(shape=st.sampled_from(SHAPES))
def test_an_f_ordered_owner_reshapes_to_numpys_values_with_one_named_copy(
    shape: tuple[int, ...],
) -> None:
    x = np.asfortranarray(np.arange(24.0).reshape(2, 3, 4))
    t = tfr.asarray(x.copy(order="F"))
    before = tfr.copy_stats()
    r = tfr.reshape(t, shape)
    after = tfr.copy_stats()
    assert np.array_equal(np.asarray(r), np.reshape(x, shape))
    assert after.copies - before.copies == 1
    assert after.bytes - before.bytes == 24 * 8


def test_an_owner_reshape_that_needs_a_copy_is_refused_under_forbid_copies() -> None:
    t = tfr.asarray(np.asfortranarray(np.ones((3, 4))))
    before = tfr.copy_stats()
    with pytest.raises(tfr.CopyForbiddenError), tfr.forbid_copies():
        tfr.reshape(t, (12,))
    assert tfr.copy_stats().copies == before.copies


def test_an_owner_reshape_that_needs_a_copy_is_refused_while_it_is_borrowed_for_writing() -> None:
    t = tfr.asarray(np.asfortranarray(np.ones((3, 4))))
    before = tfr.copy_stats()
    with pytest.raises(tfr.BorrowError), t.map_write():
        tfr.reshape(t, (12,))
    assert tfr.copy_stats().copies == before.copies
