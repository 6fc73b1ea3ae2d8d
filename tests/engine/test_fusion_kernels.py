"""The small path of `evaluate`: one generated kernel per expression.

Plain host operands below `fusion.SMALL` elements run a kernel built once per
expression (`fusion._kernel_source`); these tests pin what it must keep from the
general path: numpy's values, the cache, typed refusals, the failure rule, and
tile-sized scratch from `fusion.SMALL_SPLIT` elements.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.dtype import DType
from tenferro.engine import fusion


def col(arr: np.ndarray) -> tfr.Tensor:
    return tfr.from_numpy(np.asfortranarray(arr))


@contextmanager
def small_tiles(tile: int) -> Iterator[None]:
    """Kernels built inside use ``tile``-element tiles from 4 tiles up (fresh cache)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fusion, "SMALL_TILE", tile)
        mp.setattr(fusion, "SMALL_SPLIT", 4 * tile)
        mp.setattr(fusion, "_kernels", {})
        mp.setattr(fusion, "_built", {})
        yield


#: (expression, its numpy spelling, operand names)
EXPRESSIONS: list[tuple[str, Any, str]] = [
    ("a * b + c", lambda a, b, c: a * b + c, "abc"),
    ("((a * b + c) * a - b) * c + a", lambda a, b, c: ((a * b + c) * a - b) * c + a, "abc"),
    ("exp(a + b) * c", lambda a, b, c: np.exp(a + b) * c, "abc"),
    # A register that is not the output (exp(a) lives while a * b is computed).
    ("a * b + exp(a)", lambda a, b: a * b + np.exp(a), "ab"),
    ("where(a > b, a, b) - 1", lambda a, b: np.where(a > b, a, b) - 1, "ab"),
    ("maximum(a, 0.5) * 2", lambda a: np.maximum(a, 0.5) * 2, "a"),
    ("a", lambda a: a, "a"),
]


def _operands(names: str, n: int, seed: int) -> tuple[dict[str, tfr.Tensor], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    arrays = [rng.random(n) for _ in names]
    return {k: col(v.copy()) for k, v in zip(names, arrays, strict=True)}, arrays


@pytest.mark.parametrize(("expr", "ref", "names"), EXPRESSIONS)
def test_a_small_kernel_matches_numpy(eng: tfr.CpuEngine, expr: str, ref: Any, names: str) -> None:
    ops, arrays = _operands(names, 300, 1)
    got = eng.evaluate(expr, **ops)
    np.testing.assert_allclose(got.to_numpy(), ref(*arrays), rtol=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    case=st.sampled_from(EXPRESSIONS),
    n=st.integers(min_value=1, max_value=600),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_the_tiled_small_kernel_matches_numpy_at_every_size(
    case: tuple[str, Any, str], n: int, seed: int
) -> None:
    # 32-element tiles from 128 elements: whole arrays, whole tiles and ragged last tiles.
    expr, ref, names = case
    with small_tiles(32):
        eng = tfr.CpuEngine()
        ops, arrays = _operands(names, n, seed)
        got = eng.evaluate(expr, **ops)
        np.testing.assert_allclose(got.to_numpy(), ref(*arrays), rtol=1e-15)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The expressions whose kernels are built from now on (the caches start empty)."""
    monkeypatch.setattr(fusion, "_kernels", {})
    monkeypatch.setattr(fusion, "_built", {})
    built: list[str] = []
    build = fusion._small_kernel

    def counting(expr: str, *args: Any) -> Any:
        built.append(expr)
        return build(expr, *args)

    monkeypatch.setattr(fusion, "_small_kernel", counting)
    return built


def test_a_repeated_expression_builds_its_kernel_once(
    eng: tfr.CpuEngine, builds: list[str]
) -> None:
    ops, (a, b, c) = _operands("abc", 50, 2)
    for _ in range(5):
        got = eng.evaluate("a * b + c", **ops)
        np.testing.assert_allclose(got.to_numpy(), a * b + c, rtol=1e-15)
    assert builds == ["a * b + c"]


def test_alternating_dtypes_build_each_kernel_once(eng: tfr.CpuEngine, builds: list[str]) -> None:
    x64 = col(np.array([1.0, 2.0]))
    x32 = col(np.array([1.0, 2.0], dtype=np.float32))
    for _ in range(3):
        assert eng.evaluate("x * 2", x=x64).to_numpy().dtype == np.float64
        got = eng.evaluate("x * 2", x=x32).to_numpy()
        assert got.dtype == np.float32 and got.tolist() == [2.0, 4.0]
    assert builds == ["x * 2", "x * 2"]


def test_a_kernel_reads_its_operands_by_name_whatever_the_keyword_order(
    eng: tfr.CpuEngine,
) -> None:
    a, b = col(np.array([5.0, 7.0])), col(np.array([1.0, 2.0]))
    assert eng.evaluate("a - b", a=a, b=b).to_numpy().tolist() == [4.0, 5.0]
    assert eng.evaluate("a - b", b=b, a=a).to_numpy().tolist() == [4.0, 5.0]


def test_other_operand_names_than_the_kernels_are_refused_by_name(eng: tfr.CpuEngine) -> None:
    a, b = col(np.array([1.0, 2.0])), col(np.array([3.0, 4.0]))
    eng.evaluate("a * b", a=a, b=b)  # builds the kernel
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a * b", a=a, c=b)
    assert err.value.kind == "UNKNOWN_NAME"
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a * b", a=a, b=b, c=b)
    assert err.value.kind == "UNUSED_OPERAND"
    assert a.to_numpy().tolist() == [1.0, 2.0] and b.to_numpy().tolist() == [3.0, 4.0]


def test_a_kernel_leaves_unequal_shapes_to_the_general_path(eng: tfr.CpuEngine) -> None:
    eng.evaluate("a + b", a=col(np.ones(3)), b=col(np.ones(3)))  # builds the kernel
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a + b", a=col(np.ones(3)), b=col(np.ones(4)))
    assert err.value.kind == "SHAPE_MISMATCH"


def test_a_failing_small_kernel_drops_its_output_and_marks_its_operands_failed_read(
    eng: tfr.CpuEngine,
) -> None:
    x = col(np.array([4, 6, 8], dtype=np.int64))
    a = eng.add(x, x)  # pooled operands: their buffers would go back to eng's pool
    b = eng.sub(x, col(np.array([2, 6, 4], dtype=np.int64)))  # holds a zero
    before = eng.buffer_pool_stats()
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a / b", a=a, b=b)
    assert err.value.kind == "DIVISION_BY_ZERO"
    assert eng.buffer_pool_stats() == before  # the output was dropped, not pooled
    # The one failure policy (docs/internals.md), now that the small path runs in the
    # compiled core: the operands are marked, pooled at their death only if no internal
    # array over them survives (this test asserted the old policy, recycler cleared).
    assert a._st.failed_read and b._st.failed_read


def test_the_tiled_small_kernel_takes_tile_sized_scratch(eng: tfr.CpuEngine) -> None:
    # a * b + exp(a) keeps exp(a) in a register that is not the output.
    n = fusion.SMALL_SPLIT + fusion.SMALL_TILE + 17
    ops, (a, b) = _operands("ab", n, 3)
    got = eng.evaluate("a * b + exp(a)", **ops)
    np.testing.assert_allclose(got.to_numpy(), a * b + np.exp(a), rtol=1e-15)
    del got
    # Retained: the output (n elements) and one register of one tile.
    assert eng.buffer_pool_stats().capacity_bytes == 8 * (n + fusion.SMALL_TILE)


def test_operand_names_and_constants_never_enter_a_kernels_source() -> None:
    dtypes = {"alpha": DType.F64, "beta": DType.F64}
    prog = fusion._program("alpha * 2.5 + beta", dtypes, "tiled")
    env: dict[str, Any] = {}
    source = fusion._kernel_source(prog, [np.dtype(np.float64)] * 2, env)
    assert "alpha" not in source and "beta" not in source and "2.5" not in source
    assert {"alpha", "beta", 2.5} <= set(env.values())
