"""Moves and named copies of whole tensors: into_vec_col_major, into_host, duplicate."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr


def addr(a: np.ndarray) -> int:
    return int(a.ctypes.data)


# -- into_vec_col_major ------------------------------------------------------------------
def test_into_vec_col_major_returns_the_very_same_array() -> None:
    data = np.arange(4.0)
    t = tfr.Tensor.from_vec_col_major((2, 2), data)
    shape, vec = t.into_vec_col_major()
    assert (shape, vec is data) == ((2, 2), True)


def test_into_vec_col_major_makes_the_array_writable_again() -> None:
    data = np.arange(4.0)
    _, vec = tfr.Tensor.from_vec_col_major((4,), data).into_vec_col_major()
    vec[0] = 10.0
    assert data[0] == 10.0


def test_into_vec_col_major_does_not_copy() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.ones(3))
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        t.into_vec_col_major()
    assert tfr.copy_stats() == before


def test_into_vec_col_major_of_an_adopted_nd_array_gives_its_memory_as_1d() -> None:
    arr = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    shape, vec = tfr.from_numpy(arr).into_vec_col_major()
    assert (shape, vec.ndim, addr(vec)) == ((2, 3), 1, addr(arr))
    assert arr.flags.writeable
    assert vec.tolist() == arr.reshape(-1, order="F").tolist()


def test_into_vec_col_major_of_a_built_tensor_is_writable() -> None:
    _, vec = tfr.Tensor.from_vec_col_major((3,), [1.0, 2.0, 3.0]).into_vec_col_major()
    vec[1] = 0.0
    assert vec.tolist() == [1.0, 0.0, 3.0]


def test_into_vec_col_major_of_a_duplicate_returns_the_duplicates_buffer() -> None:
    dup = tfr.Tensor.from_vec_col_major((3,), np.ones(3)).duplicate()
    address = addr(dup.host_data())
    _, vec = dup.into_vec_col_major()
    assert (addr(vec), vec.flags.writeable) == (address, True)


def test_into_vec_col_major_moves_the_tensor() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.ones(2))
    t.into_vec_col_major()
    assert t.is_moved


# Every use of a moved tensor raises MovedTensorError naming the move.
USES: list[tuple[str, Callable[[tfr.Tensor], Any]]] = [
    ("shape", lambda t: t.shape),
    ("dtype", lambda t: t.dtype),
    ("ndim", lambda t: t.ndim),
    ("size", lambda t: t.size),
    ("nbytes", lambda t: t.nbytes),
    ("strides", lambda t: t.strides),
    ("placement", lambda t: t.placement),
    ("allocation_domain", lambda t: t.allocation_domain),
    ("allocation_id", lambda t: t.allocation_id),
    ("is_group_backed", lambda t: t.is_group_backed),
    ("host_data", lambda t: t.host_data()),
    ("map_read", lambda t: t.map_read()),
    ("map_write", lambda t: t.map_write()),
    ("with_host_read", lambda t: t.with_host_read(len)),
    ("to_numpy", lambda t: t.to_numpy()),
    ("asarray", np.asarray),
    ("as_view", lambda t: t.as_view()),
    ("as_view_mut", lambda t: t.as_view_mut()),
    ("duplicate", lambda t: t.duplicate()),
    ("into_vec_col_major", lambda t: t.into_vec_col_major()),
    ("into_host", lambda t: t.into_host()),
    ("len", len),
]


@pytest.mark.parametrize(("name", "use"), USES, ids=[u[0] for u in USES])
def test_any_use_of_a_moved_tensor_names_the_move(
    name: str, use: Callable[[tfr.Tensor], Any]
) -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.ones(2))
    t.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError) as err:
        use(t)
    assert err.value.moved_by == "Tensor.into_vec_col_major"
    assert "Tensor.into_vec_col_major" in str(err.value)


def test_repr_of_a_moved_tensor_says_so() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.ones(2))
    t.into_vec_col_major()
    assert repr(t) == "Tensor(<moved by Tensor.into_vec_col_major>)"


def test_into_vec_col_major_is_refused_while_an_alias_lives_and_moves_nothing() -> None:
    data = np.ones(3)
    t = tfr.Tensor.from_vec_col_major((3,), data)
    alias = t.host_data()
    with pytest.raises(tfr.BorrowError) as err:
        t.into_vec_col_major()
    assert (err.value.op, err.value.aliases) == ("Tensor.into_vec_col_major", 1)
    assert not t.is_moved
    assert not data.flags.writeable
    del alias
    _, vec = t.into_vec_col_major()
    assert vec is data


def test_into_vec_col_major_is_refused_during_an_exclusive_borrow() -> None:
    t = tfr.Tensor.from_vec_col_major((3,), np.ones(3))
    with t.map_write(), pytest.raises(tfr.BorrowError):
        t.into_vec_col_major()
    assert not t.is_moved


# -- into_host ------------------------------------------------------------------------------
def test_into_host_of_a_host_tensor_moves_it_into_a_tensor_with_the_same_buffer() -> None:
    data = np.arange(3.0)
    t = tfr.Tensor.from_vec_col_major((3,), data)
    h = t.into_host()
    assert t.is_moved
    assert addr(h.host_data()) == addr(data)
    with pytest.raises(tfr.MovedTensorError, match=r"Tensor\.into_host"):
        t.host_data()


# -- duplicate --------------------------------------------------------------------------------
def test_duplicate_gives_a_new_buffer_with_the_same_values_and_placement() -> None:
    data = np.arange(6.0)
    t = tfr.Tensor.from_vec_col_major((2, 3), data)
    d = t.duplicate()
    assert addr(d.host_data()) != addr(data)
    assert (d.shape, d.dtype, d.placement) == (t.shape, t.dtype, t.placement)
    assert d.host_data().tolist() == data.tolist()


def test_duplicate_is_independent_of_the_original() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.zeros(2))
    d = t.duplicate()
    with d.map_write() as w:
        w.array[0] = 1.0
    assert (t.host_data()[0], d.host_data()[0]) == (0.0, 1.0)


def test_duplicate_leaves_the_original_usable_and_unaliased() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.zeros(2))
    t.duplicate()
    with t.map_write():
        pass


# -- implicit copies are refused ----------------------------------------------------------
@pytest.mark.parametrize(
    "implicit",
    [copy.copy, copy.deepcopy, pickle.dumps],
    ids=["copy", "deepcopy", "pickle"],
)
def test_implicit_copies_are_refused_with_the_named_alternatives(implicit) -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.zeros(2))
    with pytest.raises(tfr.BorrowError, match="duplicate") as err:
        implicit(t)
    assert err.value.kind == "NOT_COPYABLE"


def test_into_vec_col_major_of_an_adopted_view_returns_the_view_and_thaws_its_base() -> None:
    big = np.arange(10.0)
    view = big[2:6]
    _, vec = tfr.Tensor.from_vec_col_major((4,), view).into_vec_col_major()
    assert vec is view
    assert (vec.flags.writeable, big.flags.writeable) == (True, True)


def test_into_vec_col_major_thaws_every_array_it_froze_in_a_base_chain() -> None:
    base = np.arange(8.0)
    middle = base.view(_Sub)
    view = middle[2:6]
    _, vec = tfr.Tensor.from_vec_col_major((4,), view).into_vec_col_major()
    assert [a.flags.writeable for a in (vec, middle, base)] == [True, True, True]


def test_into_vec_col_major_of_an_f_ordered_reshape_thaws_its_base() -> None:
    arr = np.arange(6.0).reshape(2, 3, order="F")
    _, vec = tfr.from_numpy(arr).into_vec_col_major()
    assert (arr.flags.writeable, arr.base.flags.writeable, vec.flags.writeable) == (
        True,
        True,
        True,
    )


def test_a_returned_base_can_be_adopted_again() -> None:
    big = np.arange(10.0)
    tfr.Tensor.from_vec_col_major((4,), big[2:6]).into_vec_col_major()
    t = tfr.Tensor.from_vec_col_major((10,), big)
    assert addr(t.host_data()) == addr(big)


def test_into_vec_col_major_of_a_promoted_view_thaws_its_base() -> None:
    big = np.arange(10.0)
    view = big[2:6]
    _, vec = tfr.Tensor.from_vec_col_major((4,), view).promote().into_vec_col_major()
    assert (vec is view, big.flags.writeable) == (True, True)


class _Sub(np.ndarray):
    """A subclass, so that numpy keeps a three-array base chain: view -> middle -> base."""
