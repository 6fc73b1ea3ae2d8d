"""The namespace's write rule: indexed in-place updates, and ``x op= y`` on shared views.

Both sides are tested: the values client code gets (numpy's), and that no live
alias ever sees its memory change.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr


def values(x: Any) -> np.ndarray[Any, Any]:
    return np.array(np.asarray(x))


# ---------------------------------------------------------------------- x[key] op= v
def test_indexed_add_gives_numpys_values() -> None:
    z = tfr.zeros((3,))
    z[0] += 1
    np.testing.assert_array_equal(values(z), [1.0, 0.0, 0.0])


def test_indexed_multiply_of_a_column_gives_numpys_values() -> None:
    ref = np.arange(6.0).reshape(2, 3)
    m = tfr.asarray(ref.copy())
    m[:, 1] *= 2
    ref[:, 1] *= 2
    np.testing.assert_array_equal(values(m), ref)


def test_indexed_update_of_an_owner_copies_nothing() -> None:
    x = tfr.asarray([1.0, 2.0, 3.0])
    with tfr.forbid_copies():
        x[1:] -= 1.0
        x[0] *= 4.0
    np.testing.assert_array_equal(values(x), [4.0, 1.0, 2.0])


def test_refused_indexed_update_changes_nothing() -> None:
    x = tfr.asarray([1.0, 2.0, 3.0])
    live = x[2:]
    with pytest.raises(tfr.BorrowError):
        x[0] += 5.0
    np.testing.assert_array_equal(values(x), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(values(live), [3.0])


def test_refused_indexed_update_of_another_kind_changes_nothing() -> None:
    x = tfr.asarray([1, 2, 3], dtype=tfr.int32)
    with pytest.raises(tfr.PromotionError):
        x[0] += 0.5
    np.testing.assert_array_equal(values(x), [1, 2, 3])


def test_storing_a_different_region_of_the_same_array_is_still_refused() -> None:
    x = tfr.asarray([1.0, 2.0, 3.0])
    with pytest.raises(tfr.BorrowError):
        x[0:1] = x[1:2]
    np.testing.assert_array_equal(values(x), [1.0, 2.0, 3.0])


@given(
    start=st.integers(0, 3),
    stop=st.integers(0, 4),
    scalar=st.integers(-3, 3),
    opname=st.sampled_from(["iadd", "isub", "imul"]),
)
def test_indexed_updates_match_numpy(start: int, stop: int, scalar: int, opname: str) -> None:
    op = getattr(operator, opname)
    ref = np.arange(12.0).reshape(4, 3)
    t = tfr.asarray(ref.copy())
    key = (slice(start, stop), 1)
    tmp = t[key]
    t[key] = op(tmp, float(scalar))
    del tmp
    r = ref[key]
    ref[key] = op(r, float(scalar))
    np.testing.assert_array_equal(values(t), ref)


# ---------------------------------------------------------------------- x op= y on shared views
def test_in_place_operator_on_a_shared_view_gives_numpys_values() -> None:
    t = tfr.asarray(np.arange(6.0).reshape(2, 3))
    v = t.T
    other = t[0]
    v *= 2.0
    np.testing.assert_array_equal(values(v), np.arange(6.0).reshape(2, 3).T * 2)
    del other


def test_in_place_operator_on_a_shared_view_leaves_every_other_alias_unchanged() -> None:
    t = tfr.asarray(np.arange(6.0).reshape(2, 3))
    sibling = t[:, 1]
    held = np.asarray(t)
    snapshot = held.copy()
    v = t[1]
    v += 100.0
    np.testing.assert_array_equal(held, snapshot)
    np.testing.assert_array_equal(values(sibling), snapshot[:, 1])
    np.testing.assert_array_equal(values(v), snapshot[1] + 100.0)
    del held, sibling
    np.testing.assert_array_equal(values(t), snapshot)


def test_in_place_operator_on_a_shared_view_copies_nothing() -> None:
    t = tfr.ones((3, 3))
    other = t[0]
    v = t[1:]
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        v -= 1.0
    assert tfr.copy_stats() == before
    np.testing.assert_array_equal(values(v), np.zeros((2, 3)))
    del other


def test_in_place_operator_keeps_the_same_view_object() -> None:
    t = tfr.ones((2, 2))
    other = t[0]
    v = t[1]
    same = v

    def scale(a: Any) -> None:
        a *= 3.0

    scale(v)
    assert same is v
    np.testing.assert_array_equal(values(same), [3.0, 3.0])
    del other


def test_after_the_update_the_view_no_longer_blocks_the_owner() -> None:
    t = tfr.zeros((2,))
    v = t[:]
    other = t[1:]
    v += 1.0
    del other
    t[0] = 5.0  # v now lives in its own buffer: not an alias of t
    np.testing.assert_array_equal(values(t), [5.0, 0.0])
    np.testing.assert_array_equal(values(v), [1.0, 1.0])


def test_an_owner_with_live_views_still_refuses_in_place_operators() -> None:
    t = tfr.asarray([1.0, 2.0])
    v = t[:1]
    with pytest.raises(tfr.BorrowError):
        t += 1.0
    np.testing.assert_array_equal(values(t), [1.0, 2.0])
    np.testing.assert_array_equal(values(v), [1.0])


def test_a_broadcast_view_is_still_refused() -> None:
    b = tfr.broadcast_to(tfr.asarray([1.0, 2.0]), (2, 2))
    with pytest.raises(tfr.BorrowError):
        b += 1.0


def test_the_only_alias_still_writes_the_owners_memory() -> None:
    t = tfr.ones((2, 3))
    row = t[1]
    row *= 4.0
    del row
    np.testing.assert_array_equal(values(t), [[1.0, 1.0, 1.0], [4.0, 4.0, 4.0]])


@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 4),
    data=st.data(),
)
def test_no_live_alias_ever_sees_an_in_place_update(rows: int, cols: int, data: Any) -> None:
    ref = np.arange(float(rows * cols)).reshape(rows, cols)
    t = tfr.asarray(ref.copy())
    views = [t[i] for i in range(rows)] + [t.T, t[:, ::-1]]
    held = [np.asarray(v).copy() for v in views]
    target = data.draw(st.sampled_from(range(len(views))))
    v = views[target]
    expected = held[target] * 2.0 + 1.0
    v *= 2.0
    v += 1.0
    for i, (w, h) in enumerate(zip(views, held, strict=True)):
        if i != target:
            np.testing.assert_array_equal(values(w), h)
    np.testing.assert_array_equal(values(v), expected)
