"""tensordot and 2-D matmul run a planned product on the operands' memory: a repeated
call validates nothing and calls no engine entry point, the result's memory order is
the one the general path gives, and tensor operands are still pinned and checked."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine import CpuEngine
from tenferro.errors import BorrowError, ValidationError
from tenferro.namespace import _contraction


def _arr(shape: tuple[int, ...], order: str, seed: int) -> tuple[Any, np.ndarray[Any, Any]]:
    x = np.array(np.random.default_rng(seed).standard_normal(shape), order=order)
    return tfr.asarray(x.copy(order=order)), x


def test_a_repeated_tensordot_neither_validates_nor_calls_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (a, na), (b, nb) = _arr((3, 4, 5), "C", 0), _arr((3, 4, 2), "C", 1)
    tfr.tensordot(a, b, axes=([0, 1], [0, 1]))
    calls: list[str] = []
    real_axes = _contraction._tensordot_axes
    monkeypatch.setattr(
        _contraction, "_tensordot_axes", lambda *a: calls.append("axes") or real_axes(*a)
    )
    monkeypatch.setattr(CpuEngine, "dot_general", lambda *a, **k: calls.append("engine"))
    got = tfr.tensordot(a, b, axes=([0, 1], [0, 1]))
    assert calls == []
    np.testing.assert_allclose(np.asarray(got), np.tensordot(na, nb, ([0, 1], [0, 1])))


def test_a_repeated_matmul_of_c_ordered_matrices_calls_no_engine_matmul(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (a, na), (b, nb) = _arr((4, 3), "C", 0), _arr((3, 5), "C", 1)
    a @ b
    monkeypatch.setattr(CpuEngine, "matmul", lambda *a, **k: pytest.fail("engine called"))
    got = a @ b
    assert isinstance(got, tfr.TensorView)
    np.testing.assert_allclose(np.asarray(got), na @ nb)


@pytest.mark.parametrize(("oa", "ob"), list(itertools.product("CF", "CF")))
def test_the_planned_product_keeps_the_general_paths_memory_order(oa: str, ob: str) -> None:
    (a, na), (b, nb) = _arr((3, 4, 5), oa, 0), _arr((5, 4, 2), ob, 1)
    got = np.asarray(tfr.tensordot(a, b, axes=([2, 1], [0, 1])))
    np.testing.assert_allclose(got, np.tensordot(na, nb, ([2, 1], [0, 1])))
    # Both C-ordered: a C-ordered result (numpy's); otherwise the engine's column-major.
    assert got.flags.c_contiguous if oa == ob == "C" else got.flags.f_contiguous


def test_a_tensordot_of_strided_slices_matches_numpy() -> None:
    (a, na), (b, nb) = _arr((6, 8), "C", 0), _arr((7, 5), "C", 1)
    for _ in range(2):
        got = tfr.tensordot(a[::2, 1:], b, axes=1)
        np.testing.assert_allclose(np.asarray(got), np.tensordot(na[::2, 1:], nb, 1))


def test_a_planned_product_still_refuses_an_exclusively_borrowed_tensor() -> None:
    a = tfr.asarray(np.asfortranarray(np.ones((3, 3))))
    b = tfr.asarray(np.asfortranarray(np.ones((3, 3))))
    a @ b
    with a.map_write(), pytest.raises(BorrowError):
        a @ b


def test_a_bool_axes_pair_is_not_served_from_the_int_plan() -> None:
    (a, _), (b, _) = _arr((3, 3), "C", 0), _arr((3, 3), "C", 1)
    tfr.tensordot(a, b, axes=([1], [0]))
    with pytest.raises(ValidationError):
        tfr.tensordot(a, b, axes=([True], [0]))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.lists(st.integers(1, 4), min_size=0, max_size=2),
    st.sampled_from("CF"),
    st.sampled_from("CF"),
    st.integers(0, 3),
)
def test_a_planned_tensordot_matches_numpy(
    contracted: list[int], free: list[int], oa: str, ob: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    na = np.array(rng.standard_normal((*free, *contracted)), order=oa)
    nb = np.array(rng.standard_normal((*contracted, 2)), order=ob)
    a, b = tfr.asarray(na.copy(order=oa)), tfr.asarray(nb.copy(order=ob))
    n = len(contracted)
    for _ in range(2):  # the planning call and the planned one
        got = tfr.tensordot(a, b, axes=n)
        np.testing.assert_allclose(np.asarray(got), np.tensordot(na, nb, n), rtol=1e-12)


def test_a_transposing_tensordot_reuses_its_pooled_scratch() -> None:
    (a, na), (b, nb) = _arr((6, 5, 4), "C", 0), _arr((4, 5, 3), "C", 1)
    eng = tfr.default_engine()
    for _ in range(3):  # plan, then settle the pool
        tfr.tensordot(a, b, axes=([1, 2], [1, 0]))
    before = eng._pool.cache_stats().misses
    for _ in range(20):
        got = tfr.tensordot(a, b, axes=([1, 2], [1, 0]))
    # Every scratch buffer and output came back to the pool and was handed out again.
    assert eng._pool.cache_stats().misses == before
    np.testing.assert_allclose(np.asarray(got), np.tensordot(na, nb, ([1, 2], [1, 0])))


def test_a_permutation_built_anew_each_call_is_checked_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.namespace import _manipulation

    x, nx = _arr((2, 3, 4), "C", 0)
    tfr.transpose(x, tuple([2, 0, 1]))
    calls: list[object] = []
    real = _manipulation.normalize_axis
    monkeypatch.setattr(_manipulation, "normalize_axis", lambda *a: calls.append(a) or real(*a))
    got = tfr.transpose(x, tuple([2, 0, 1]))  # an equal tuple, a new object
    assert calls == []
    np.testing.assert_array_equal(np.asarray(got), np.transpose(nx, (2, 0, 1)))


def test_a_bool_permutation_is_not_served_from_the_int_one() -> None:
    x, _ = _arr((2, 3), "C", 0)
    tfr.permute_dims(x, tuple([1, 0]))
    with pytest.raises(ValidationError):
        tfr.permute_dims(x, (True, False))
