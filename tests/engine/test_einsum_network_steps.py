"""Per-step costs of a network einsum: transposed copies run from their records, released
intermediates handed to the next step, and the operands pinned as one group.

Values against opt_einsum; what is counted (records, pool calls, pins) is counted,
never timed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import opt_einsum
import pytest

import tenferro as tfr
from tenferro.engine import contraction
from tenferro.engine.einsum import executor
from tenferro.engine.einsum.executor import _take, execute
from tenferro.engine.pool import BufferPool
from tenferro.storage import host


class _SpyPool:
    """A pool that records what the executor takes and gives back (a real one behind)."""

    def __init__(self, limit_bytes: int = 2**26) -> None:
        self.pool = BufferPool(limit_bytes)
        self.limit_bytes = limit_bytes
        self.taken: list[int] = []
        self.back: list[int] = []

    def acquire(self, dtype: Any, n: int) -> Any:
        self.taken.append(n)
        return self.pool.acquire(dtype, n)

    def recycle(self, owner: Any, aliases: int = 0) -> None:
        self.back.append(len(owner))
        self.pool.recycle(owner, aliases)


def _run(pool: _SpyPool, plan: Any, arrays: list[np.ndarray]) -> np.ndarray:
    """Run ``plan`` on ``arrays`` with ``pool``; the output is a plain array."""
    size = int(np.prod(plan.out_shape))
    out = np.empty(size).reshape(plan.out_shape, order="F")
    execute(pool, plan, arrays, np.dtype(np.float64), lambda: out)
    return out


def _arrays(shapes: Sequence[tuple[int, ...]], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.asfortranarray(rng.random(s)) for s in shapes]


def _check(eng: tfr.CpuEngine, subs: str, shapes: list[tuple[int, ...]], path: Any) -> Any:
    """Run ``subs`` through a compiled expression and compare it with opt_einsum."""
    expr = eng.contract_expression(subs, *shapes, optimize=path)
    arrays = _arrays(shapes)
    got = expr(*[tfr.from_numpy(a) for a in arrays])
    want = opt_einsum.contract(subs, *arrays, optimize=path)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12)
    return expr._plan


# -- transposed copies in the step records -------------------------------------------------
@pytest.mark.parametrize(
    ("subs", "shapes", "path"),
    [
        # The left operand's contracted indices sit around its free one.
        ("abc,acd->bd", [(4, 5, 6), (4, 6, 7)], [(0, 1)]),
        # An input read transposed in the middle of a chain.
        ("ab,cbd,de->ace", [(3, 4), (5, 4, 6), (6, 2)], [(0, 1), (0, 1)]),
        # An intermediate read transposed.
        ("ab,bcd,dce->ae", [(3, 4), (4, 5, 6), (6, 5, 7)], [(0, 1), (0, 1)]),
    ],
)
def test_a_step_reading_a_transposed_copy_runs_from_its_record(
    eng: tfr.CpuEngine, subs: str, shapes: list[tuple[int, ...]], path: Any
) -> None:
    plan = _check(eng, subs, shapes, path)
    assert all(r is not None for r in plan.fast)
    assert any(r.copy_a is not None or r.copy_b is not None for r in plan.fast)


def test_a_slab_transposition_is_copied_whole_when_that_stays_within_the_peak(
    eng: tfr.CpuEngine,
) -> None:
    # The copy of the right operand (20000 elements) is small next to the result.
    plan = _check(eng, "ab,cbd->acd", [(60, 2), (100, 2, 100)], [(0, 1)])
    op_b = plan.steps[0][4]
    assert op_b[5] is not None  # the planner made it in slabs
    (rec,) = plan.fast
    assert rec is not None and rec.copy_b is not None and rec.copy_b[3] == 20000


def test_a_slab_transposition_that_would_raise_the_peak_stays_in_slabs(
    eng: tfr.CpuEngine,
) -> None:
    # The right operand (500000 elements) is 25 times the result: a whole copy would
    # be most of the memory the contraction holds.
    plan = _check(eng, "ab,cbd->acd", [(2, 50), (100, 50, 100)], [(0, 1)])
    assert plan.steps[0][4][5] is not None
    assert plan.fast == [None]


def test_a_small_slab_transposition_is_copied_whole_even_above_the_peak(
    eng: tfr.CpuEngine,
) -> None:
    # The right operand (60000 elements) is 25 times the result, but no larger than
    # executor._WHOLE_COPY: one copy and one product beat seven narrow ones.
    plan = _check(eng, "ab,cbd->acd", [(2, 50), (60, 50, 20)], [(0, 1)])
    assert plan.steps[0][4][5] is not None  # the planner made it in slabs
    (rec,) = plan.fast
    assert rec is not None and rec.copy_b is not None and rec.copy_b[3] == 60000


def test_a_copy_record_serves_every_dtype(eng: tfr.CpuEngine) -> None:
    subs, shapes = "ab,cbd,de->ace", [(3, 4), (5, 4, 6), (6, 2)]
    expr = eng.contract_expression(subs, *shapes, optimize=[(0, 1), (0, 1)])
    for dtype in (np.float32, np.complex128):
        arrays = [a.astype(dtype) for a in _arrays(shapes)]
        got = expr(*[tfr.from_numpy(np.asfortranarray(a)) for a in arrays])
        want = opt_einsum.contract(subs, *arrays, optimize=[(0, 1), (0, 1)])
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5)


def test_a_failing_copy_step_pools_none_of_its_buffers(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    subs, shapes = "ab,cbd,de->ace", [(3, 4), (5, 4, 6), (6, 2)]
    plan = eng.contract_expression(subs, *shapes, optimize=[(0, 1), (0, 1)])._plan
    assert plan.fast[0] is not None and plan.fast[0].copy_b is not None
    pool = _SpyPool()

    def broken(*args: Any) -> None:
        raise FloatingPointError("kernel failed")

    monkeypatch.setattr(executor, "_dot", broken)
    monkeypatch.setattr(executor, "run_kernel", broken)
    with pytest.raises(FloatingPointError):
        _run(pool, plan, _arrays(shapes))
    # The step's result and the copy's scratch were taken, and neither went back.
    assert pool.taken == [plan.fast[0].size, 120]
    assert pool.back == []


# -- released intermediates handed to the next step ----------------------------------------
CHAIN = "ab,bc,cd,de,ef->af"
# Intermediates of 4 x 8, 4 x 7 and 4 x 6 elements, each consumed by the next step;
# the first is released when the third is made, and fits it (at most twice 24).
CHAIN_SHAPES = [(4, 8), (8, 8), (8, 7), (7, 6), (6, 2)]
CHAIN_PATH = [(0, 1), (0, 3), (0, 2), (0, 1)]


def test_a_released_intermediate_becomes_the_next_steps_result_without_the_pool(
    eng: tfr.CpuEngine,
) -> None:
    plan = eng.contract_expression(CHAIN, *CHAIN_SHAPES, optimize=CHAIN_PATH)._plan
    pool = _SpyPool()
    arrays = _arrays(CHAIN_SHAPES)
    got = _run(pool, plan, arrays)
    # Steps 1 and 2 take their results from the pool; step 3's is step 1's buffer,
    # handed over. Step 2's goes back before the output is made, step 3's (in the
    # 32-element buffer) after the last step.
    assert pool.taken == [32, 28]
    assert pool.back == [28, 32]
    want = opt_einsum.contract(CHAIN, *arrays, optimize=CHAIN_PATH)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_pool_that_retains_nothing_gets_no_buffer_handed_over(eng: tfr.CpuEngine) -> None:
    # Without retention a fresh result is allocated at its exact size; a handed-over
    # buffer could be twice that, which would raise the peak.
    plan = eng.contract_expression(CHAIN, *CHAIN_SHAPES, optimize=CHAIN_PATH)._plan
    pool = _SpyPool(limit_bytes=0)
    _run(pool, plan, _arrays(CHAIN_SHAPES))
    assert pool.taken == [32, 28, 24]
    assert pool.back == [32, 28, 24]


def test_take_removes_the_smallest_buffer_within_twice_the_request() -> None:
    spare = [np.empty(100), np.empty(45), np.empty(60)]
    got = _take(spare, 40)
    assert got is not None and len(got) == 45
    assert sorted(len(x) for x in spare) == [60, 100]  # the others stay on offer


def test_take_finds_nothing_too_small_or_more_than_twice_the_request() -> None:
    spare = [np.empty(30), np.empty(100)]
    assert _take(spare, 40) is None
    assert len(spare) == 2


# -- the operands of a network, pinned as one group ----------------------------------------
@contextmanager
def _held_execute(monkeypatch: pytest.MonkeyPatch, seen: list[Any]) -> Iterator[None]:
    """While the einsum's executor runs, record what the registry says about pins."""
    run = execute  # what contraction calls

    def watching(*args: Any) -> None:
        seen.append(list(host.reading))
        run(*args)

    monkeypatch.setattr(contraction, "execute", watching)
    yield


def test_a_network_einsum_pins_its_tensor_operands_as_one_entry(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, c = (tfr.from_numpy(x) for x in _arrays([(2, 3), (3, 4), (4, 2)]))
    seen: list[Any] = []
    with _held_execute(monkeypatch, seen):
        got = eng.einsum("ab,bc,cd->ad", a, b, c)
    assert seen == [[(a._st, b._st, c._st)]]
    assert [a._st.readers(), b._st.readers()] == [0, 0]
    assert not host.reading
    want = np.linalg.multi_dot([a.to_numpy(), b.to_numpy(), c.to_numpy()])
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12)


def test_a_tensor_read_twice_in_a_network_counts_as_two_readers(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = tfr.from_numpy(_arrays([(3, 3)])[0])
    counts: list[int] = []
    run = execute  # what contraction calls

    def watching(*args: Any) -> None:
        counts.append(a._st.readers())
        run(*args)

    monkeypatch.setattr(contraction, "execute", watching)
    eng.einsum("ab,bc,cd->ad", a, a, a)
    assert counts == [3]
    assert a._st.readers() == 0


def test_a_network_einsum_that_finds_a_writer_refuses_and_unpins(eng: tfr.CpuEngine) -> None:
    a, b, c = (tfr.from_numpy(x) for x in _arrays([(2, 3), (3, 4), (4, 2)]))
    with c.map_write():
        with pytest.raises(tfr.BorrowError) as err:
            eng.einsum("ab,bc,cd->ad", a, b, c)
        assert err.value.kind == "EXCLUSIVELY_BORROWED"
    assert not host.reading
    assert eng.einsum("ab,bc,cd->ad", a, b, c).shape == (2, 2)


def test_a_network_einsum_with_mixed_dtypes_is_refused_and_unpinned(eng: tfr.CpuEngine) -> None:
    a, b = (tfr.from_numpy(x) for x in _arrays([(2, 3), (3, 4)]))
    c = tfr.from_numpy(np.ones((4, 2), dtype=np.float32, order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum("ab,bc,cd->ad", a, b, c)
    assert err.value.kind == "DTYPE_MISMATCH"
    assert not host.reading


def test_a_steps_copy_scratch_becomes_the_next_steps_result(eng: tfr.CpuEngine) -> None:
    # Step 1 copies the (5, 4, 6) operand (120 elements) into scratch and makes a
    # 90-element result; step 2's 105-element result fits the scratch.
    subs, shapes = "ab,cbd,de,ef->acf", [(3, 4), (5, 4, 6), (6, 7), (7, 2)]
    path = [(0, 1), (0, 2), (0, 1)]
    plan = eng.contract_expression(subs, *shapes, optimize=path)._plan
    assert plan.fast[0] is not None and plan.fast[0].copy_b is not None
    pool = _SpyPool()
    arrays = _arrays(shapes)
    got = _run(pool, plan, arrays)
    assert pool.taken == [90, 120]
    want = opt_einsum.contract(subs, *arrays, optimize=path)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_network_einsum_writing_over_one_of_its_operands_is_refused(
    eng: tfr.CpuEngine,
) -> None:
    a, b, c = (tfr.from_numpy(x) for x in _arrays([(3, 3), (3, 3), (3, 3)]))
    before = c.to_numpy().copy()
    with pytest.raises(tfr.BorrowError) as err:
        eng.einsum("ab,bc,cd->ad", a, b, c, out=c)
    assert err.value.kind == "OUT_ALIASES_INPUT"
    np.testing.assert_array_equal(c.to_numpy(), before)
    assert not host.reading


def test_a_network_einsum_writes_a_separate_out(eng: tfr.CpuEngine) -> None:
    a, b, c = (tfr.from_numpy(x) for x in _arrays([(3, 3), (3, 3), (3, 3)]))
    out = tfr.from_numpy(np.zeros((3, 3), order="F"))
    assert eng.einsum("ab,bc,cd->ad", a, b, c, out=out) is out
    want = np.linalg.multi_dot([a.to_numpy(), b.to_numpy(), c.to_numpy()])
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-12)
    assert not host.reading
