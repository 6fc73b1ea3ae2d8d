"""Invariants of the slice plan and of in-process sliced contraction (no cluster)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

cotengra = pytest.importorskip("cotengra")

import tenferro as tfr  # noqa: E402
from tenferro.distributed import contract, sliced_tree  # noqa: E402
from tenferro.distributed._contract import _groups  # noqa: E402
from tenferro.distributed._plan import build_plan  # noqa: E402


@given(st.integers(1, 500), st.integers(1, 40))
def test_groups_cover_every_slice_once_in_order(nslices: int, ngroups: int) -> None:
    groups = _groups(nslices, ngroups)
    assert groups[0][0] == 0 and groups[-1][1] == nslices
    assert all(a < b for a, b in groups)
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(groups))
    sizes = [b - a for a, b in groups]
    assert max(sizes) - min(sizes) <= 1


def _ring(n: int, d: int) -> tuple[str, list[tfr.Tensor]]:
    letters = "abcdefgh"[:n]
    eq = ",".join(letters[k] + letters[(k + 1) % n] for k in range(n)) + "->"
    rng = np.random.default_rng(n * 100 + d)
    return eq, [tfr.from_numpy(np.asfortranarray(rng.standard_normal((d, d)))) for _ in range(n)]


@settings(max_examples=15)
@given(st.integers(3, 6), st.integers(2, 6), st.integers(1, 4))
def test_slice_values_enumerate_every_combination_once(n: int, d: int, shrink: int) -> None:
    eq, ts = _ring(n, d)
    plan, _ = build_plan(eq, ts, max(8, d * d * 8 // (2**shrink)), "greedy")
    combos = {plan.slice_values(s) for s in range(plan.nslices)}
    assert len(combos) == plan.nslices == int(np.prod([size for _, size in plan.sliced]))


@settings(max_examples=15)
@given(st.integers(3, 6), st.integers(2, 6), st.integers(0, 4))
def test_in_process_contract_equals_einsum_under_any_reachable_budget(
    n: int, d: int, shrink: int
) -> None:
    eq, ts = _ring(n, d)
    budget = max(8, d * d * 8 // (2**shrink))
    got, report = contract(eq, *ts, memory_budget=budget, progress=False, return_report=True)
    want: Any = np.einsum(eq, *[t.to_numpy() for t in ts])
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12)
    assert report.largest_intermediate_bytes <= budget


def test_sliced_tree_meets_the_budget_it_was_given() -> None:
    eq, ts = _ring(5, 8)
    tree = sliced_tree(eq, *ts, memory_budget=64)
    assert tree.max_size() * 8 <= 64
    assert tree.nslices > 1
