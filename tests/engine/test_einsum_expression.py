"""contract_expression: planned once, run many times; and einsum's plan cache."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine.einsum import plan_for, plans_built

SUBS = "abc,cd,bde->ae"
SHAPES = [(2, 3, 4), (4, 5), (3, 5, 6)]


def _operands(dtype: type = np.float64, seed: int = 0) -> tuple[list[np.ndarray], list]:
    rng = np.random.default_rng(seed)
    arrays = [np.asfortranarray(rng.random(s).astype(dtype)) for s in SHAPES]
    return arrays, [tfr.from_numpy(a) for a in arrays]


def test_an_expression_plans_once_and_only_runs_per_call(eng: tfr.CpuEngine) -> None:
    before = plans_built()
    expr = eng.contract_expression(SUBS, *SHAPES)
    assert plans_built() == before + 1
    for seed in range(5):
        arrays, tensors = _operands(seed=seed)
        got = expr(*tensors)
        np.testing.assert_allclose(got.to_numpy(), np.einsum(SUBS, *arrays), rtol=1e-12)
    assert plans_built() == before + 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_one_expression_serves_every_numeric_dtype(eng: tfr.CpuEngine, dtype: type) -> None:
    expr = eng.contract_expression(SUBS, *SHAPES)
    arrays, tensors = _operands(dtype)
    got = expr(*tensors)
    assert got.to_numpy().dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.to_numpy(), np.einsum(SUBS, *arrays), rtol=1e-5)


def test_an_expression_takes_strided_views(eng: tfr.CpuEngine) -> None:
    expr = eng.contract_expression("ij,jk->ik", (3, 4), (4, 2))
    rng = np.random.default_rng(3)
    a = tfr.from_numpy(np.asfortranarray(rng.random((4, 3))))
    b = tfr.from_numpy(np.asfortranarray(rng.random((4, 4))))
    av = a.as_view().transpose_view((1, 0))
    bv = b.as_view().slice_view((slice(None), slice(None, None, 2)))
    got = expr(av, bv)
    np.testing.assert_allclose(got.to_numpy(), av.to_numpy() @ bv.to_numpy(), rtol=1e-12)


def test_an_expression_writes_into_out(eng: tfr.CpuEngine) -> None:
    expr = eng.contract_expression(SUBS, *SHAPES)
    arrays, tensors = _operands()
    out = tfr.from_numpy(np.zeros((2, 6), order="F"))
    assert expr(*tensors, out=out) is out
    np.testing.assert_allclose(out.to_numpy(), np.einsum(SUBS, *arrays), rtol=1e-12)


def test_an_expression_refuses_other_shapes(eng: tfr.CpuEngine) -> None:
    expr = eng.contract_expression("ij,jk->ik", (3, 4), (4, 2))
    a = tfr.from_numpy(np.ones((3, 5), order="F"))
    b = tfr.from_numpy(np.ones((5, 2), order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        expr(a, b)
    assert err.value.kind == "DIM_MISMATCH"


def test_an_expression_reports_its_plan(eng: tfr.CpuEngine) -> None:
    expr = eng.contract_expression(SUBS, *SHAPES, optimize=[(0, 1), (0, 1)])
    assert expr.shapes == tuple(SHAPES)
    assert expr.out_shape == (2, 6)
    assert expr.path == [(0, 1), (2, 3)]  # SSA: inputs 0..2, then one id per result
    # The intermediate [a, b, d] (2*3*5) and the output (2*6) are alive together.
    assert expr.largest_live_elements == 2 * 3 * 5 + 2 * 6


@pytest.mark.parametrize("bad", [(2, -1), (2, "x"), 3])
def test_contract_expression_refuses_bad_shapes(eng: tfr.CpuEngine, bad: object) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.contract_expression("ij->i", bad)
    assert err.value.kind == "INVALID_SHAPE"


def test_einsum_plans_once_per_subscripts_shapes_and_path(eng: tfr.CpuEngine) -> None:
    _arrays, tensors = _operands()
    eng.einsum(SUBS, *tensors, optimize="greedy")
    before = plans_built()
    for _ in range(3):
        eng.einsum(SUBS, *tensors, optimize="greedy")
        eng.einsum(SUBS, *[t.as_view() for t in tensors], optimize="greedy")  # strides differ
    assert plans_built() == before
    eng.einsum(SUBS, *tensors, optimize=[(0, 1), (0, 1)])
    assert plans_built() == before + 1


def test_the_plan_cache_is_a_bounded_lru() -> None:
    assert plan_for.cache_info().maxsize == 1024


def test_intermediates_go_back_to_the_pool_before_the_next_step(eng: tfr.CpuEngine) -> None:
    # A chain of equal-size steps: each step's input goes back before the step after
    # next needs a buffer, so the chain needs two intermediate buffers, not five.
    ts = [tfr.from_numpy(np.asfortranarray(np.eye(16) * (i + 1))) for i in range(7)]
    path = [(0, 1)] + [(0, 5 - i) for i in range(5)]
    eng.einsum("ab,bc,cd,de,ef,fg,gh->ah", *ts, optimize=path)
    assert eng.buffer_pool_cache_stats().misses <= 3


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("abcd,dcbe->ea", [(5, 3, 4, 7), (7, 4, 3, 6)]),  # a range of the right operand's N
        ("ab,cbd,ed->ace", [(3, 4), (5, 4, 6), (7, 6)]),  # a range with a later index fixed
        ("xayb,bzy->axz", [(2, 3, 2, 5), (5, 7, 2)]),
        ("bij,bjk->bik", [(9, 5, 4), (9, 4, 7)]),  # ranges of the batch (uneven: 9 = 2*4+1)
        ("bxya,azb->xyzb", [(8, 2, 3, 4), (4, 5, 8)]),
    ],
)
def test_large_transpositions_made_slab_by_slab_give_numpys_value(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch, subscripts: str, shapes: list
) -> None:
    from tenferro.engine.einsum import planner

    monkeypatch.setattr(planner, "_SLAB_MIN", 1)  # every transposed copy is made in slabs
    expr = eng.contract_expression(subscripts, *shapes)
    slabbed = [op for st in expr._plan.steps if st[0] == planner.GEMM for op in st[3:5] if op[5]]
    assert slabbed or any(st[0] == planner.FINAL for st in expr._plan.steps)
    rng = np.random.default_rng(5)
    arrays = [np.asfortranarray(rng.random(s)) for s in shapes]
    got = expr(*[tfr.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(got.to_numpy(), np.einsum(subscripts, *arrays), rtol=1e-12)


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("bij,bjk->bik", [(9, 5, 4), (9, 4, 7)]),  # slabs of the batch (9 = 2*4 + 1)
        ("ij,jkl->lik", [(6, 4), (4, 9, 5)]),  # slabs of N or M
        ("iaj,jbk->kbia", [(3, 2, 4), (4, 5, 6)]),  # free indices interleaved in the output
        ("xb,byz->zbx", [(7, 3), (3, 4, 5)]),  # a batch index in the middle of the output
        ("pqr,rst->tqsp", [(5, 6, 2), (2, 3, 4)]),
    ],
)
def test_a_last_product_written_in_slabs_into_the_output_order_gives_numpys_value(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch, subscripts: str, shapes: list
) -> None:
    from tenferro.engine.einsum import planner

    monkeypatch.setattr(planner, "_SLAB_MIN", 1)  # every output large enough for slabs
    expr = eng.contract_expression(subscripts, *shapes)
    # The output order is reached by the operands' layouts or by slabs, never by a
    # whole transposition of the result.
    assert not any(st[0] == planner.PERMUTE for st in expr._plan.steps)
    rng = np.random.default_rng(6)
    arrays = [np.asfortranarray(rng.random(s)) for s in shapes]
    got = expr(*[tfr.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(got.to_numpy(), np.einsum(subscripts, *arrays), rtol=1e-12)


def test_a_last_product_in_slabs_holds_no_whole_result_next_to_the_output() -> None:
    # The plan's live set is the output (and the operands), not the output twice.
    from tenferro.engine.einsum import planner

    eng = tfr.CpuEngine()
    expr = eng.contract_expression("bij,bjk->bik", (32, 64, 64), (32, 64, 64))
    assert expr._plan.steps[-1][0] == planner.FINAL
    assert expr.largest_live_elements == 32 * 64 * 64


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        # The first product: the tail c, with a between the free s and c.
        ("sac,ab,sbcd->d", [(9, 8, 7), (8, 5), (9, 5, 7, 2)]),
        ("ab,sac,sbcd->d", [(8, 5), (9, 8, 7), (9, 5, 7, 2)]),  # the tailed one second
        ("sace,ab,sbced->d", [(9, 8, 3, 4), (8, 5), (9, 5, 3, 4, 2)]),  # a two-index tail
        ("sazc,abz,sbczd->d", [(9, 8, 3, 4), (8, 5, 3), (9, 5, 4, 3, 2)]),  # with a batch z
    ],
)
def test_a_product_batched_over_an_operands_tail_gives_numpys_value(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch, subscripts: str, shapes: list
) -> None:
    from tenferro.engine.einsum import planner

    monkeypatch.setattr(planner, "_TAIL_MIN", 1)
    expr = eng.contract_expression(subscripts, *shapes, optimize=[(0, 1), (0, 1)])
    first = expr._plan.steps[0]
    assert first[0] == planner.GEMM and len(first[6]) == 4  # (tail, bt, n, m)
    assert first[3][0] is None and first[4][0] is None  # no transposed copy
    rng = np.random.default_rng(7)
    arrays = [np.asfortranarray(rng.random(s)) for s in shapes]
    got = expr(*[tfr.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(got.to_numpy(), np.einsum(subscripts, *arrays), rtol=1e-12)


@pytest.mark.parametrize(
    ("subscripts", "shapes", "path"),
    [
        # b and m sit between the summed s and d: one product per d, then their sum.
        ("sbd,smd->bm", [(9, 4, 6), (9, 5, 6)], [(0, 1)]),
        ("sbdz,smdz->bm", [(9, 4, 6, 3), (9, 5, 6, 3)], [(0, 1)]),  # a two-index split
        ("sbzd,smzd->bmz", [(9, 4, 2, 6), (9, 5, 2, 6)], [(0, 1)]),  # with a batch z
        # The MPS pattern: the first product's result is asked for in a split order.
        ("cd,sac,sbd,be->ae", [(5, 6), (9, 4, 5), (9, 4, 6), (4, 3)], [(0, 1), (0, 2), (0, 1)]),
    ],
)
def test_a_product_split_over_its_last_summed_indices_gives_numpys_value(
    eng: tfr.CpuEngine, subscripts: str, shapes: list, path: list
) -> None:
    from tenferro.engine.einsum import planner
    from tenferro.engine.gemm import SPLIT_K

    expr = eng.contract_expression(subscripts, *shapes, optimize=path)
    split = [st for st in expr._plan.steps if st[0] == planner.GEMM and st[5] == SPLIT_K]
    assert split
    assert expr._plan.transposed_elements == 0
    rng = np.random.default_rng(8)
    arrays = [np.asfortranarray(rng.random(s)) for s in shapes]
    got = expr(*[tfr.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(got.to_numpy(), np.einsum(subscripts, *arrays), rtol=1e-12)
