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


@given(shape=st.sampled_from(SHAPES), perm=st.sampled_from([(0, 2, 1), (2, 1, 0), (1, 0, 2)]))
def test_a_strided_view_reshapes_to_numpys_values_as_an_owner_with_one_named_copy(
    shape: tuple[int, ...], perm: tuple[int, int, int]
) -> None:
    x = np.arange(24.0).reshape(2, 3, 4)
    v = tfr.permute_dims(tfr.asarray(x.copy()), perm)
    want = np.reshape(np.transpose(x, perm), shape)
    before = tfr.copy_stats()
    r = tfr.reshape(v, shape)
    after = tfr.copy_stats()
    assert np.array_equal(np.asarray(r), want)
    if not np.shares_memory(np.reshape(np.transpose(x, perm), shape), x):
        assert isinstance(r, tfr.Tensor)
        assert after.copies - before.copies == 1
        assert after.bytes - before.bytes == 24 * 8


def test_a_strided_view_reshape_is_one_read_of_the_view_not_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.namespace import _manipulation

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(_manipulation, "compute", refuse)
    x = np.arange(24.0).reshape(2, 3, 4)
    v = tfr.permute_dims(tfr.asarray(x.copy()), (0, 2, 1))
    r = tfr.reshape(v, (8, 3))
    assert np.array_equal(np.asarray(r), np.transpose(x, (0, 2, 1)).reshape(8, 3))


def test_a_strided_view_reshape_that_needs_a_copy_is_refused_under_forbid_copies() -> None:
    v = tfr.permute_dims(tfr.asarray(np.ones((2, 3, 4))), (0, 2, 1))
    before = tfr.copy_stats()
    with pytest.raises(tfr.CopyForbiddenError), tfr.forbid_copies():
        tfr.reshape(v, (8, 3))
    assert tfr.copy_stats().copies == before.copies


def test_a_strided_view_reshape_with_copy_false_is_refused() -> None:
    v = tfr.permute_dims(tfr.asarray(np.ones((2, 3, 4))), (0, 2, 1))
    with pytest.raises(tfr.ValidationError, match="copy=False"):
        tfr.reshape(v, (8, 3), copy=False)
