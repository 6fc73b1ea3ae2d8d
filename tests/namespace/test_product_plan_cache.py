"""The namespace's einsum, matmul and vecdot keep their validated plan per (shapes,
dtypes, subscripts or axis): a repeated call neither validates, parses nor plans."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import contraction
from tenferro.namespace import _contraction


def _count(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[object]:
    calls: list[object] = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args: calls.append(args) or real(*args))
    return calls


def _c(shape: tuple[int, ...], seed: int = 0) -> tuple[Any, np.ndarray[Any, Any]]:
    x = np.random.default_rng(seed).standard_normal(shape)
    return tfr.asarray(x), x


def test_a_repeated_einsum_does_not_parse_or_plan_again(monkeypatch: pytest.MonkeyPatch) -> None:
    (a, na), (b, nb), (c, nc) = _c((3, 4)), _c((4, 5), 1), _c((5, 2), 2)
    tfr.einsum("ij,jk,kl->il", a, b, c)
    planner = _count(monkeypatch, _contraction, "_einsum_plan")
    engine_plans = _count(monkeypatch, contraction, "plan_for")
    splits = _count(monkeypatch, contraction, "split_call")
    got = tfr.einsum("ij,jk,kl->il", a, b, c)
    assert not planner and not engine_plans and not splits
    np.testing.assert_allclose(np.asarray(got), na @ nb @ nc)


def test_an_einsum_of_another_shape_plans_again(monkeypatch: pytest.MonkeyPatch) -> None:
    (a, na), (b, _nb) = _c((3, 4)), _c((4, 5), 1)
    tfr.einsum("ij,jk->ik", a, b)
    planner = _count(monkeypatch, _contraction, "_einsum_plan")
    (b2, nb2) = _c((4, 6), 3)
    got = tfr.einsum("ij,jk->ik", a, b2)
    assert len(planner) == 1
    np.testing.assert_allclose(np.asarray(got), na @ nb2)


def test_a_cached_einsum_plan_still_promotes_mixed_dtypes() -> None:
    a = tfr.asarray(np.ones((2, 3), dtype=np.float32))
    b = tfr.asarray(np.ones((3, 2)))
    for _ in range(2):
        got = tfr.einsum("ij,jk->ik", a, b)
        assert got.dtype == tfr.float64
        np.testing.assert_allclose(np.asarray(got), np.full((2, 2), 3.0))


def test_a_bad_einsum_is_refused_every_time() -> None:
    a, _ = _c((3, 4))
    for _ in range(2):
        with pytest.raises(tfr.ValidationError):
            tfr.einsum("ij,jk->ik", a, a)


def test_a_repeated_batched_matmul_does_not_validate_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (a, na), (b, nb) = _c((2, 3, 4)), _c((2, 4, 5), 1)
    tfr.matmul(a, b)
    planner = _count(monkeypatch, _contraction, "_matmul_plan")
    got = tfr.matmul(a, b)
    assert not planner
    np.testing.assert_allclose(np.asarray(got), na @ nb)
    tfr.matmul(a, _c((2, 4, 6), 2)[0])  # another shape: validated again
    assert len(planner) == 1


def test_a_mismatched_matmul_is_refused_every_time() -> None:
    a, _ = _c((2, 3, 4))
    for _ in range(2):
        with pytest.raises(tfr.ValidationError):
            tfr.matmul(a, a)


def test_a_repeated_vecdot_does_not_validate_again(monkeypatch: pytest.MonkeyPatch) -> None:
    (a, na), (b, nb) = _c((3, 4)), _c((3, 4), 1)
    tfr.vecdot(a, b)
    planner = _count(monkeypatch, _contraction, "_vecdot_plan")
    got = tfr.vecdot(a, b)
    assert not planner
    np.testing.assert_allclose(np.asarray(got), (na * nb).sum(-1))
    tfr.vecdot(a, b, axis=-2)  # another axis: validated again
    assert len(planner) == 1


def test_a_bool_axis_of_vecdot_is_not_served_from_the_int_axis_plan() -> None:
    a, _ = _c((3, 4))
    tfr.vecdot(a, a, axis=-1)
    with pytest.raises(tfr.ValidationError):
        tfr.vecdot(a, a, axis=True)


def test_the_product_plan_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_contraction, "_PLAN_CACHE_SIZE", 2)
    monkeypatch.setattr(_contraction, "_PLANS", {})
    for n in range(2, 7):
        tfr.vecdot(*(_c((n,))[0],) * 2)
    assert len(_contraction._PLANS) <= 2
