"""Large elementwise outputs: numexpr's threaded pass where it is exact, pooled across a loop.

`engine/large.py` hands ``+ - * /`` of two large F32/F64 arrays to numexpr. These
tests pin what it must keep: numpy's exact values, the plain ufunc for everything
else (and for operands that overlap the output with a shift), and the pool's
large-output policy (one buffer reused by a steady-state loop, never more than
the cap retained). Nothing here is timed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import elementwise, large

OPS = [(np.add, "add"), (np.subtract, "sub"), (np.multiply, "mul"), (np.true_divide, "div")]


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> int:
    """Route operands of 64 elements and more through `large.binary`'s numexpr pass."""
    monkeypatch.setattr(large, "LARGE_MIN", 64)
    monkeypatch.setattr(elementwise, "_LARGE_MIN", 64)
    return 64


@pytest.fixture
def numexpr_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ufuncs `large.binary` handed to numexpr, in order."""
    calls: list[Any] = []
    kernel = large._numexpr_kernel

    def spy(ufunc: Any, dtype: np.dtype[Any]) -> Any:
        nex = kernel(ufunc, dtype)
        if nex is not None:
            calls.append(ufunc)
        return nex

    monkeypatch.setattr(large, "_numexpr_kernel", spy)
    return calls


def _special(n: int, dtype: Any, seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 1e3).astype(dtype)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310 if dtype == np.float64 else 1e-40]
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("ufunc", "name"), OPS)
def test_large_arithmetic_equals_numpy_bit_for_bit(
    small_threshold: int, numexpr_calls: list[Any], ufunc: Any, name: str, dtype: Any
) -> None:
    eng = tfr.CpuEngine()
    x, y = _special(300, dtype, 0), _special(300, dtype, 1)[::-1].copy()
    with np.errstate(all="ignore"):
        expected = ufunc(x, y)
        got = getattr(eng, name)(tfr.from_numpy(x), tfr.from_numpy(y)).to_numpy()
    assert numexpr_calls == [ufunc]
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_an_in_place_out_takes_the_numexpr_pass(
    small_threshold: int, numexpr_calls: list[Any]
) -> None:
    eng = tfr.CpuEngine()
    x = np.arange(100.0)
    a, b = tfr.from_numpy(x.copy()), tfr.from_numpy(np.full(100, 2.0))
    eng.mul(a, b, out=a)
    assert numexpr_calls == [np.multiply]
    np.testing.assert_array_equal(a.to_numpy(), x * 2.0)


def test_an_operand_overlapping_out_with_a_shift_keeps_the_ufunc(
    small_threshold: int, numexpr_calls: list[Any]
) -> None:
    base = np.arange(200.0)
    out = base[1:101]
    expected = np.add(base[:100], base[100:200])
    large.binary(np.add, base[:100], base[100:200], out)
    assert numexpr_calls == []
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    ("ufunc", "dtype"),
    [(np.add, np.int64), (np.power, np.float64), (np.maximum, np.float64), (np.add, np.complex128)],
)
def test_other_operations_and_dtypes_keep_the_ufunc(
    small_threshold: int, numexpr_calls: list[Any], ufunc: Any, dtype: Any
) -> None:
    x = np.arange(1, 101).astype(dtype)
    out = np.empty_like(x)
    large.binary(ufunc, x, x, out)
    assert numexpr_calls == []
    np.testing.assert_array_equal(out, ufunc(x, x))


def test_a_scalar_operand_keeps_the_ufunc(small_threshold: int, numexpr_calls: list[Any]) -> None:
    eng = tfr.CpuEngine()
    x = np.arange(100.0)
    got = eng.add(tfr.from_numpy(x), 1.5).to_numpy()
    assert numexpr_calls == []
    np.testing.assert_array_equal(got, x + 1.5)


def test_operands_below_the_threshold_keep_the_ufunc(numexpr_calls: list[Any]) -> None:
    eng = tfr.CpuEngine()
    x = tfr.from_numpy(np.arange(1000.0))
    eng.add(x, x)
    assert numexpr_calls == []


def test_a_steady_state_loop_of_large_outputs_reuses_one_buffer(small_threshold: int) -> None:
    # The large-output policy: a released output is retained (it is under the cap)
    # and handed straight back, so the loop allocates only in its first iteration.
    eng = tfr.CpuEngine(buffer_limit_bytes=1 << 20)
    a = tfr.from_numpy(np.arange(20_000.0))
    addresses = set()
    for _ in range(5):
        y = eng.add(a, a)
        addresses.add(y.with_host_read(lambda s: s.ctypes.data))
        del y
    stats = eng.buffer_pool_cache_stats()
    assert (stats.misses, stats.hits) == (1, 4)
    assert len(addresses) == 1
    assert eng.buffer_pool_stats().capacity_bytes <= eng.buffer_pool_limit_bytes


def test_a_large_output_above_the_cap_is_never_retained(small_threshold: int) -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=100_000)
    a = tfr.from_numpy(np.arange(20_000.0))  # 160,000 bytes: over the cap
    for _ in range(3):
        del_me = eng.add(a, a)
        del del_me
    assert eng.buffer_pool_stats().capacity_bytes == 0
    assert eng.buffer_pool_cache_stats().hits == 0


def test_a_strided_view_operand_into_out_equals_numpy(
    small_threshold: int, numexpr_calls: list[Any]
) -> None:
    eng = tfr.CpuEngine()
    rng = np.random.default_rng(3)
    x, y = rng.random((40, 30)), rng.random((40, 30))
    flipped = tfr.from_numpy(np.asfortranarray(x)).as_view()
    flipped = flipped.slice_view((slice(None), slice(None, None, -1)))
    out = tfr.from_numpy(np.zeros((40, 30), order="F"))
    eng.sub(flipped, tfr.from_numpy(np.asfortranarray(y)), out=out)
    assert numexpr_calls == [np.subtract]
    np.testing.assert_array_equal(out.to_numpy(), x[:, ::-1] - y)
