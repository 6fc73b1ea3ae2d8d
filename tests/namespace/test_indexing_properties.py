"""Basic indexing is numpy's, as views that never copy; writes land where numpy's do."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tenferro as tfr

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


def source(shape: tuple[int, ...], order: str) -> tuple[np.ndarray, object]:
    """Reference values, and a tenferro array over a copy laid out in ``order``."""
    ref = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    return ref, tfr.asarray(np.array(ref, order=order))  # type: ignore[call-overload]


@given(shape=shapes, order=st.sampled_from("CF"), data=st.data())
def test_basic_indexing_matches_numpy_without_copying(
    shape: tuple[int, ...], order: str, data: st.DataObject
) -> None:
    ref, t = source(shape, order)
    key = data.draw(hnp.basic_indices(shape, allow_newaxis=True))
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        v = t[key]  # type: ignore[index]
    assert tfr.copy_stats() == before
    assert isinstance(v, tfr.TensorView)
    np.testing.assert_array_equal(np.asarray(v), ref[key])


@given(shape=shapes, order=st.sampled_from("CF"), data=st.data())
def test_indexing_a_view_again_matches_numpy(
    shape: tuple[int, ...], order: str, data: st.DataObject
) -> None:
    ref, t = source(shape, order)
    first = data.draw(hnp.basic_indices(shape, allow_newaxis=True))
    inner = ref[first]
    second = data.draw(hnp.basic_indices(inner.shape, allow_newaxis=True))
    np.testing.assert_array_equal(np.asarray(t[first][second]), inner[second])  # type: ignore[index]


@given(shape=shapes, data=st.data())
def test_setitem_writes_the_elements_numpy_writes(
    shape: tuple[int, ...], data: st.DataObject
) -> None:
    ref, _ = source(shape, "F")
    t = tfr.asarray(np.asfortranarray(ref.copy()))
    key = data.draw(hnp.basic_indices(shape, allow_newaxis=True))
    expected = ref.copy()
    expected[key] = -1.0
    t[key] = -1.0  # type: ignore[index]
    np.testing.assert_array_equal(np.asarray(t), expected)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), data=st.data())
def test_permute_and_reshape_views_match_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    ref, t = source(shape, "C")
    perm = data.draw(st.permutations(range(len(shape))))
    with tfr.forbid_copies():
        p = tfr.permute_dims(t, tuple(perm))
        r = tfr.reshape(t, (-1,))
    np.testing.assert_array_equal(np.asarray(p), np.transpose(ref, perm))
    np.testing.assert_array_equal(np.asarray(r), ref.reshape(-1))


def test_writing_through_a_view_is_refused_while_another_view_lives() -> None:
    t = tfr.zeros((2, 2))
    a = t[0]
    b = t[1]
    with pytest.raises(tfr.BorrowError):
        a[0] = 1.0
    del b
    a[0] = 1.0
    np.testing.assert_array_equal(np.asarray(a), [1.0, 0.0])


def test_in_place_operator_on_a_view_updates_the_owner() -> None:
    t = tfr.ones((2, 3))
    row = t[1]
    row *= 4.0
    del row
    np.testing.assert_array_equal(np.asarray(t), [[1.0, 1.0, 1.0], [4.0, 4.0, 4.0]])
