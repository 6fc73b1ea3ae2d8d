"""`tenferro.distributed` reads equations with the engine's einsum parser (no cluster)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

cotengra = pytest.importorskip("cotengra")

import tenferro as tfr  # noqa: E402
from tenferro.distributed import contract, sliced_tree  # noqa: E402


def _tensors(*shapes: tuple[int, ...]) -> tuple[list[Any], list[tfr.Tensor]]:
    rng = np.random.default_rng(len(shapes))
    arrays = [np.asfortranarray(rng.standard_normal(s)) for s in shapes]
    return arrays, [tfr.from_numpy(a) for a in arrays]


def test_an_ellipsis_names_the_leading_axes_as_in_einsum() -> None:
    arrays, ts = _tensors((2, 3, 4, 5), (2, 3, 5, 4))
    eq = "...ij,...jk->...ik"
    got = contract(eq, *ts, memory_budget=1 << 20, progress=False)
    np.testing.assert_allclose(got.to_numpy(), np.einsum(eq, *arrays), rtol=1e-12)


def test_an_ellipsis_with_an_implicit_output_keeps_numpys_order() -> None:
    arrays, ts = _tensors((4, 2, 3), (4, 2, 3))
    eq = "a...,a..."
    got = contract(eq, *ts, memory_budget=1 << 20, progress=False)
    np.testing.assert_allclose(got.to_numpy(), np.einsum(eq, *arrays), rtol=1e-12)


def test_an_ellipsis_equation_is_sliced_within_the_budget() -> None:
    arrays, ts = _tensors((6, 6, 6), (6, 6, 6))
    eq = "...ab,...bc->..."
    budget = 6 * 6 * 8  # below the 6 x 6 x 6 intermediate: something must be sliced
    tree = sliced_tree(eq, *ts, memory_budget=budget)
    assert tree.max_size() * 8 <= budget
    got = contract(eq, *ts, memory_budget=budget, optimize=tree, progress=False)
    np.testing.assert_allclose(got.to_numpy(), np.einsum(eq, *arrays), rtol=1e-12)


@pytest.mark.parametrize("eq", ["ij,jk->ii", "ij,jk->x", "i-j,jk"])
def test_malformed_subscripts_are_the_same_error_kind_as_einsum(eq: str) -> None:
    _, ts = _tensors((2, 3), (3, 4))
    with pytest.raises(tfr.ValidationError) as engine_err:
        tfr.default_engine().einsum(eq, *ts)
    with pytest.raises(tfr.ValidationError) as err:
        contract(eq, *ts, memory_budget=1 << 20, progress=False)
    assert err.value.kind == engine_err.value.kind == "SUBSCRIPTS"
