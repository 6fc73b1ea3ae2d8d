"""The executor's per-step view records (`executor.prepare`): values against opt_einsum."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

import tenferro as tfr
from tenferro.bench.einsum import instances, operands
from tenferro.engine.einsum.executor import Fast, _split_chunked, prepare
from tenferro.engine.gemm import SPLIT_K

CHAIN = "ab,bc,cd,de->ae"
CHAIN_SHAPES = [(3, 4), (4, 5), (5, 6), (6, 2)]


def _arrays(shapes: list[tuple[int, ...]], dtype: type, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        x = rng.random(s) + (1j * rng.random(s) if np.dtype(dtype).kind == "c" else 0)
        out.append(np.asfortranarray(x.astype(dtype)))
    return out


def test_a_chain_of_products_runs_every_step_from_its_record(eng: tfr.CpuEngine) -> None:
    expr = eng.contract_expression(CHAIN, *CHAIN_SHAPES, optimize="greedy")
    records = expr._plan.fast
    assert records is not None
    assert len(records) == len(expr._plan.steps)
    assert all(r is not None for r in records)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_recorded_steps_match_opt_einsum_for_each_dtype(eng: tfr.CpuEngine, dtype: type) -> None:
    arrays = _arrays(CHAIN_SHAPES, dtype)
    got = eng.einsum(CHAIN, *[tfr.from_numpy(a) for a in arrays], optimize="greedy")
    want = opt_einsum.contract(CHAIN, *arrays, optimize="greedy")
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_an_input_that_is_not_column_major_takes_the_general_path(eng: tfr.CpuEngine) -> None:
    arrays = _arrays(CHAIN_SHAPES, np.float64)
    tensors = [tfr.from_numpy(a) for a in arrays]
    # The first operand as a transposed view of a (4, 3) tensor: row-major strides.
    base = tfr.from_numpy(np.asfortranarray(arrays[0].T))
    first = base.as_view().transpose_view((1, 0))
    expr = eng.contract_expression(CHAIN, *CHAIN_SHAPES, optimize="greedy")
    got = expr(first, *tensors[1:])
    want = opt_einsum.contract(CHAIN, *arrays, optimize="greedy")
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12)


def test_records_are_made_when_the_plan_is_built_not_per_run(eng: tfr.CpuEngine) -> None:
    expr = eng.contract_expression(CHAIN, *CHAIN_SHAPES, optimize="greedy")
    records = expr._plan.fast
    arrays = _arrays(CHAIN_SHAPES, np.float64)
    expr(*[tfr.from_numpy(a) for a in arrays])
    assert expr._plan.fast is records
    assert [r is None for r in prepare(expr._plan)] == [r is None for r in records]


def test_the_mps_instance_with_split_sum_steps_matches_opt_einsum(eng: tfr.CpuEngine) -> None:
    inst = next(i for i in instances() if i["name"] == "str_mps_varying_inner_product_200")
    path = [tuple(c) for c in inst["opt_flops"]]
    arrays = operands(inst)
    expr = eng.contract_expression(inst["subscripts"], *[a.shape for a in arrays], optimize=path)
    plan = expr._plan
    split = [r for r, st in zip(plan.fast, plan.steps, strict=True) if r and st[5] == SPLIT_K]
    assert split  # the split-sum steps run from their records too
    assert any(r.chunk for r in split)  # the one at the path's peak sums in chunks
    got = expr(*[tfr.from_numpy(a) for a in arrays])
    want = opt_einsum.contract(inst["subscripts"], *arrays, optimize=path)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-10)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5])
def test_a_chunked_split_sum_equals_the_whole_sum(chunk: int) -> None:
    rng = np.random.default_rng(chunk)
    n_ct, bt, n, k, m = 7, 2, 3, 4, 5
    left = rng.random((n_ct, bt, k, m))
    right = rng.random((n_ct, bt, n, k))
    rec = Fast(0, None, None, (bt, n, m), bt * n * m, (chunk + 1, bt, n, m), ())
    rec.n_ct = n_ct
    rec.chunk = chunk
    parts = np.empty((chunk + 1, bt, n, m))
    out = np.full((bt, n, m), np.nan)
    _split_chunked(left, right, parts, out, rec)
    np.testing.assert_allclose(out, np.einsum("cbnk,cbkm->bnm", right, left), rtol=1e-12)


def test_a_general_steps_result_is_freed_before_the_recorded_steps_after_it() -> None:
    import tracemalloc

    # Step 1 reads a row-major operand (the general path); the steps after it run from
    # their records. Its result must go back (here: be freed, the engine keeps no
    # buffers) as soon as step 2 ran, not stay alive to the end.
    subs = "ab,bc,cd,de->ae"
    # The last step's output is the largest value: step 1's result alive then would
    # raise the peak by its size.
    shapes = [(300, 300), (300, 300), (300, 300), (300, 1000)]
    path = [(0, 1), (0, 2), (0, 1)]
    lean = tfr.CpuEngine(buffer_limit_bytes=0)
    expr = lean.contract_expression(subs, *shapes, optimize=path)
    assert all(r is not None for r in expr._plan.fast)
    arrays = _arrays(shapes, np.float64)
    tensors = [tfr.from_numpy(a) for a in arrays]
    first = tfr.from_numpy(np.asfortranarray(arrays[0].T)).as_view().transpose_view((1, 0))
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        got = expr(first, *tensors[1:])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The plan's live set, and Python objects (a few KiB).
    assert peak - base <= expr.largest_live_elements * 8 + 64 * 1024
    want = opt_einsum.contract(subs, *arrays, optimize=path)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-10)
