"""The namespace's einsum follows the data's memory order (docs/namespace.md): operands
are planned where they lie, and a product whose order is not the subscripts' comes
back as a permuted view of it instead of a transposing copy (engine/einsum/memory.py).
`CpuEngine.einsum` keeps its meaning: an owner in the order the subscripts name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.einsum import executor, memory, plan_for
from tenferro.engine.einsum.steps import FINAL, PERMUTE
from tenferro.namespace import _contraction

Array = np.ndarray[Any, Any]


def _rand(shape: tuple[int, ...], seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal(shape)


def _memory_plan(subscripts: str, *operands: Any) -> memory.MemoryPlan:
    _, mp = _contraction._einsum_plan(subscripts, operands)
    assert isinstance(mp, memory.MemoryPlan)
    return mp


def test_a_product_in_another_order_comes_back_as_a_permuted_view() -> None:
    x, y = _rand((9, 9, 9, 9)), _rand((9, 9, 9), 1)
    a, b = tfr.asarray(np.asfortranarray(x)), tfr.asarray(np.asfortranarray(y))
    # The engine transposes this product into the order named (a FINAL step).
    assert plan_for("t", "abcd,aYX->YbcdX", (x.shape, y.shape), "auto").steps[-1].kind == FINAL
    before = tfr.copy_stats()
    got = tfr.einsum("abcd,aYX->YbcdX", a, b)
    assert tfr.copy_stats() == before
    assert isinstance(got, tfr.TensorView)
    assert got.shape == (9, 9, 9, 9, 9)
    np.testing.assert_allclose(np.asarray(got), np.einsum("abcd,aYX->YbcdX", x, y), atol=1e-12)
    last = _memory_plan("abcd,aYX->YbcdX", a, b).plan.steps[-1]
    assert last.kind not in (FINAL, PERMUTE)


def test_the_engine_einsum_still_returns_an_owner_in_the_order_named() -> None:
    x, y = _rand((9, 9, 9, 9)), _rand((9, 9, 9), 1)
    eng = tfr.CpuEngine()
    a, b = tfr.from_numpy(np.asfortranarray(x)), tfr.from_numpy(np.asfortranarray(y))
    got = eng.einsum("abcd,aYX->YbcdX", a, b)
    assert type(got) is tfr.Tensor
    np.testing.assert_allclose(got.to_numpy(), np.einsum("abcd,aYX->YbcdX", x, y), atol=1e-12)


def test_a_small_output_is_written_in_the_order_named() -> None:
    # Below memory.VIEW_MIN elements a transposition costs less than a view's life.
    x, y = _rand((3, 3, 3)), _rand((3, 3, 3), 1)
    got = tfr.einsum("abc,aYX->YbcX", tfr.asarray(np.asfortranarray(x)), tfr.asarray(y.T).T)
    assert type(got) is tfr.Tensor
    np.testing.assert_allclose(np.asarray(got), np.einsum("abc,aYX->YbcX", x, y), atol=1e-12)


def test_c_ordered_operands_are_planned_in_their_memory_order() -> None:
    x, y = _rand((9, 9, 9, 9)), _rand((9, 9, 9), 1)
    a, b = tfr.asarray(x), tfr.asarray(y)  # C-ordered: axis-reversed views
    mp = _memory_plan("abcd,aYX->YbcdX", a, b)
    assert mp.perms == ((3, 2, 1, 0), (2, 1, 0))
    got = tfr.einsum("abcd,aYX->YbcdX", a, b)
    np.testing.assert_allclose(np.asarray(got), np.einsum("abcd,aYX->YbcdX", x, y), atol=1e-12)


def test_a_permuted_result_feeds_the_next_einsum_without_a_transposing_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x, y = _rand((9, 9, 9, 9)), _rand((9, 9, 9), 1)
    a, b = tfr.asarray(np.asfortranarray(x)), tfr.asarray(np.asfortranarray(y))
    v = tfr.einsum("abcd,aYX->YbcdX", a, b)
    assert isinstance(v, tfr.TensorView)
    # Contracting the view's fastest axes (its memory order is b c d Y X) reads it
    # in place: no operand is transposed into scratch.
    copies: list[object] = []
    real = executor._copy
    monkeypatch.setattr(executor, "_copy", lambda *args: copies.append(args) or real(*args))
    z = _rand((9, 9, 9), 2)
    got = tfr.einsum("YbcdX,bcd->YX", v, tfr.asarray(np.asfortranarray(z)))
    assert not copies
    want = np.einsum("YbcdX,bcd->YX", np.einsum("abcd,aYX->YbcdX", x, y), z)
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-9)


def test_a_permuted_result_goes_back_to_the_pool_when_dropped() -> None:
    eng = tfr.default_engine()
    x, y = _rand((9, 9, 9, 9)), _rand((9, 9, 9), 1)
    a, b = tfr.asarray(np.asfortranarray(x)), tfr.asarray(np.asfortranarray(y))
    for _ in range(3):
        del_me = tfr.einsum("abcd,aYX->YbcdX", a, b)
        del del_me
    held = eng.buffer_pool_stats()
    misses = eng.buffer_pool_cache_stats().misses
    for _ in range(5):
        v = tfr.einsum("abcd,aYX->YbcdX", a, b)
        del v
    assert eng.buffer_pool_stats() == held
    assert eng.buffer_pool_cache_stats().misses == misses


def test_memory_perm_finds_permutations_of_compact_column_major_arrays() -> None:
    assert memory.memory_perm((2, 3, 4), (12, 4, 1)) == (2, 1, 0)
    assert memory.memory_perm((2, 3, 4), (1, 2, 6)) is None  # already column-major
    assert memory.memory_perm((2, 3, 4), (3, 1, 6)) == (1, 0, 2)
    assert memory.memory_perm((2, 1, 4), (4, 99, 1)) == (2, 0, 1)  # size-1 axes last
    assert memory.memory_perm((2, 3), (6, 2)) is None  # a slice with gaps
    assert memory.memory_perm((2, 3), (0, 1)) is None  # a broadcast


_SUBSCRIPTS = [
    "abcd,aYX->YbcdX",
    "abc,cd->dba",
    "ij,jk->ki",
    "abc,bcd,de->eab",
    "...ij,...jk->k...i",
    "aab,bc->ca",
    "abc,c->ba",
]


def _operand(x: Array, layout: int) -> Any:
    if layout == 0:
        return tfr.asarray(np.asfortranarray(x))
    if layout == 1:
        return tfr.asarray(np.ascontiguousarray(x))
    # A permuted view of a column-major owner: memory order reversed pairs of axes.
    perm = tuple(range(x.ndim))[::-1]
    owner = tfr.asarray(np.asfortranarray(np.transpose(x, perm)))
    return tfr.permute_dims(owner, perm)


@settings(max_examples=60, deadline=None)
@given(
    which=st.sampled_from(_SUBSCRIPTS),
    dim=st.integers(1, 14),
    layouts=st.lists(st.integers(0, 2), min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_einsum_in_memory_order_matches_numpy_for_any_operand_layout(
    which: str, dim: int, layouts: list[int], seed: int
) -> None:
    lhs = which.split("->")[0].split(",")
    rng = np.random.default_rng(seed)
    arrays = []
    for term in lhs:
        shape = [dim + (ord(ch) % 3) for ch in term if ch != "."]
        if "..." in term:
            shape = [2, *shape]
        arrays.append(rng.standard_normal(tuple(shape)))
    ops = [_operand(x, layouts[i % 3]) for i, x in enumerate(arrays)]
    got = tfr.einsum(which, *ops)
    np.testing.assert_allclose(np.asarray(got), np.einsum(which, *arrays), atol=1e-9)


def test_a_chain_of_einsums_on_permuted_results_makes_no_named_copy() -> None:
    x, y, z = _rand((9, 9, 9, 9)), _rand((9, 9, 9), 1), _rand((9, 9, 9, 9), 2)
    a, b, c = tfr.asarray(x), tfr.asarray(y), tfr.asarray(z)  # C-ordered views
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        v = tfr.einsum("abcd,aYX->YbcdX", a, b)
        w = tfr.einsum("YbcdX,bcdZ->YXZ", v, c)
    assert tfr.copy_stats() == before
    want = np.einsum("YbcdX,bcdZ->YXZ", np.einsum("abcd,aYX->YbcdX", x, y), z)
    np.testing.assert_allclose(np.asarray(w), want, atol=1e-9)
