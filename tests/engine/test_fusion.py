"""Fused evaluation: results, the whitelist and its errors, typing, tiles, threads, backends."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import fusion
from tenferro.tensor import Tensor

R = Callable[..., Tensor]
D = tfr.DType


def t_(values: Any, dtype: Any = None) -> Tensor:
    return tfr.from_numpy(np.asfortranarray(np.array(values, dtype=dtype)))


@pytest.mark.parametrize(
    ("expr", "ref"),
    [
        ("exp(a + b) * c", lambda a, b, c: np.exp(a + b) * c),
        ("a * b + c", lambda a, b, c: a * b + c),
        ("-a / (b + 1) - c ** 2", lambda a, b, c: -a / (b + 1) - c**2),
        (
            "sqrt(a) + log(b + 1) + sin(c) * cos(a) - tanh(b)",
            lambda a, b, c: np.sqrt(a) + np.log(b + 1) + np.sin(c) * np.cos(a) - np.tanh(b),
        ),
        (
            "maximum(a, b) - minimum(b, c) + abs(a - c)",
            lambda a, b, c: np.maximum(a, b) - np.minimum(b, c) + np.abs(a - c),
        ),
        ("where(a > b, a, c)", lambda a, b, c: np.where(a > b, a, c)),
        ("where(a > 0.5, 1.0, 0.0) * c", lambda a, b, c: np.where(a > 0.5, 1.0, 0.0) * c),
        ("a + b + c + a * b * c", lambda a, b, c: a + b + c + a * b * c),
        ("+a", lambda a, b, c: a),
        ("2 * 3 * a", lambda a, b, c: 6 * a),
        ("exp(1.0) * a", lambda a, b, c: np.e * a),
    ],
)
def test_fused_results_match_numpy(eng: tfr.CpuEngine, rand: R, expr: str, ref: Any) -> None:
    a, b, c = rand((7, 5), 1), rand((7, 5), 2), rand((7, 5), 3)
    names = {n: t for n, t in zip("abc", (a, b, c), strict=True) if n in expr}
    out = eng.evaluate(expr, **names)
    np.testing.assert_allclose(
        out.to_numpy(), ref(a.to_numpy(), b.to_numpy(), c.to_numpy()), rtol=1e-12
    )


def test_a_huge_constant_power_is_refused_without_computing_it(eng: tfr.CpuEngine) -> None:
    # 7 ** 7 ** 9 has about 113 million bits: folding it took ~47 s.
    start = time.perf_counter()
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a + 7 ** 7 ** 9", a=t_([1.0]))
    assert time.perf_counter() - start < 5
    assert err.value.kind == "SCALAR_OUT_OF_RANGE"
    assert "7 ** 7 ** 9" in str(err.value)


def test_a_constant_power_that_fits_is_still_folded(eng: tfr.CpuEngine) -> None:
    out = eng.evaluate("a * 2 ** 62 + 10 ** 400 / 10 ** 399", a=t_([1.0]))
    assert out.to_numpy().tolist() == [2.0**62 + 10.0]


def test_a_folded_constant_with_more_digits_than_repr_allows_is_out_of_range(
    eng: tfr.CpuEngine,
) -> None:
    # 4800 digits: Python refuses to turn it into a string for the message.
    expr = "a + 10 ** 1200 * 10 ** 1200 * 10 ** 1200 * 10 ** 1200"
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate(expr, a=t_([1], np.int64))
    assert err.value.kind == "SCALAR_OUT_OF_RANGE"


def test_abs_of_a_huge_constant_folds_to_a_typed_error(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a + abs(-(10 ** 400))", a=t_([1.0]))
    assert err.value.kind == "SCALAR_OUT_OF_RANGE"


def test_a_comparison_gives_bool(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3,))
    out = eng.evaluate("a >= 0.5", a=a)
    assert out.dtype is D.BOOL
    assert out.to_numpy().tolist() == (a.to_numpy() >= 0.5).tolist()


def test_large_inputs_run_in_tiles_on_several_threads(rand: R) -> None:
    n = fusion.SMALL + 5 * fusion.TILE + 17  # past the whole-array path; a ragged last tile
    eng = tfr.CpuEngine(threads=None)
    a, b, c = rand((n,), 1), rand((n,), 2), rand((n,), 3)
    out = eng.evaluate("exp(a + b) * c", a=a, b=b, c=c)
    np.testing.assert_allclose(
        out.to_numpy(), np.exp(a.to_numpy() + b.to_numpy()) * c.to_numpy(), rtol=1e-12
    )


def test_strided_views_run_in_slabs(eng: tfr.CpuEngine, rand: R) -> None:
    big = rand((300, 400), 1)
    v = big.as_view().slice_view((slice(None, None, 2), slice(None, None, -1)))
    w = rand((400, 150), 2).as_view().transpose_view((1, 0))
    out = eng.evaluate("v * w + 1", v=v, w=w)
    np.testing.assert_allclose(out.to_numpy(), v.to_numpy() * w.to_numpy() + 1)


def test_float32_literals_are_weak(eng: tfr.CpuEngine) -> None:
    out = eng.evaluate("a * 0.5 + 1", a=t_([2.0, 4.0], np.float32))
    assert out.dtype is D.F32 and out.to_numpy().tolist() == [2.0, 3.0]


def test_integer_division_is_floor_division(eng: tfr.CpuEngine) -> None:
    out = eng.evaluate("a / b", a=t_([7, -7], np.int64), b=t_([2, 2], np.int64))
    assert out.to_numpy().tolist() == [3, -4]


def test_integer_division_by_zero_is_a_typed_error(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a / 0", a=t_([1], np.int64))
    assert err.value.kind == "DIVISION_BY_ZERO"


def test_complex_abs_gives_real(eng: tfr.CpuEngine) -> None:
    out = eng.evaluate("abs(z) * 2", z=t_([3 + 4j]))
    assert out.dtype is D.F64 and out.to_numpy().tolist() == [10.0]


@pytest.mark.parametrize(
    ("expr", "part"),
    [
        ("a[0] + b", "a[0]"),
        ("a.T * b", "a.T"),
        ("a // b", "a // b"),
        ("a % b", "a % b"),
        ("a and b", "a and b"),
        ("a < b < 1", "a < b < 1"),
        ("foo(a) + b", "foo(a)"),
        ("np.exp(a) + b", "np.exp(a)"),
        ("exp(a, b)", "exp(a, b)"),
        ("(lambda: a)() + b", "(lambda: a)()"),
        ("'x' + a + b", "'x'"),
        ("a @ b", "a @ b"),
        ("exp(x=a) + b", "exp(x=a)"),
    ],
)
def test_an_unsupported_part_is_named(eng: tfr.CpuEngine, rand: R, expr: str, part: str) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate(expr, a=rand((2,), 1), b=rand((2,), 2))
    assert err.value.kind == "UNSUPPORTED_EXPRESSION"
    assert err.value.part == part
    assert repr(part) in str(err.value)


def test_a_syntax_error_is_a_validation_error(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a +", a=rand((2,)))
    assert err.value.kind == "SYNTAX"


def test_an_unknown_name_is_refused(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a + q", a=rand((2,)))
    assert err.value.kind == "UNKNOWN_NAME" and err.value.name == "q"


def test_an_unused_operand_is_refused(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a + 1", a=rand((2,)), b=rand((2,)))
    assert err.value.kind == "UNUSED_OPERAND"


def test_an_expression_without_operands_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("1 + 2")
    assert err.value.kind == "NO_OPERAND"


def test_mixed_dtypes_are_refused_naming_the_part(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a + b * 2", a=t_([1.0]), b=t_([1.0], np.float32))
    assert err.value.part == "a + b * 2"


def test_unequal_shapes_are_refused(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a + b", a=rand((2,)), b=rand((3,)))
    assert err.value.kind == "SHAPE_MISMATCH"


def test_math_on_integers_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="exp"):
        eng.evaluate("exp(a)", a=t_([1], np.int32))


def test_fused_output_into_out_even_when_out_is_an_operand(eng: tfr.CpuEngine) -> None:
    acc = t_([1.0, 2.0])
    assert eng.evaluate("acc * 2 + x", acc=acc, x=t_([1.0, 1.0]), out=acc) is acc
    assert acc.to_numpy().tolist() == [3.0, 5.0]


def test_a_zero_divisor_in_a_late_tile_leaves_out_unchanged(eng: tfr.CpuEngine) -> None:
    n = 300_000  # several tiles: the zero sits in the last one
    b = np.ones(n, dtype=np.int64)
    b[-1] = 0
    out = t_(np.full(n, -7, dtype=np.int64))
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a / b", a=t_(np.ones(n, dtype=np.int64)), b=t_(b), out=out)
    assert err.value.kind == "DIVISION_BY_ZERO"
    assert (out.to_numpy() == -7).all()


def test_a_negative_exponent_in_a_late_tile_leaves_an_in_place_operand_unchanged(
    eng: tfr.CpuEngine,
) -> None:
    n = 300_000
    e = np.full(n, 2, dtype=np.int64)
    e[-1] = -1
    a = t_(np.full(n, 3, dtype=np.int64))
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a ** e", a=a, e=t_(e), out=a)
    assert err.value.kind == "NEGATIVE_INTEGER_POWER"
    assert (a.to_numpy() == 3).all()


def test_a_checked_expression_still_writes_out_when_it_succeeds(eng: tfr.CpuEngine) -> None:
    a = t_([7, -7], np.int64)
    assert eng.evaluate("a / 2 + a ** 2", a=a, out=a) is a
    assert a.to_numpy().tolist() == [3 + 49, -4 + 49]
    del a
    assert eng.buffer_pool_stats().buffers >= 1  # the staged result went back to the pool


def test_a_final_where_cannot_write_over_its_operands(eng: tfr.CpuEngine) -> None:
    a = t_([1.0, 2.0])
    with pytest.raises(tfr.BorrowError):
        eng.evaluate("where(a > 1.5, a, 0.0)", a=a, out=a)


def test_registers_are_reused_for_where_without_clobbering(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((50,), 1), rand((50,), 2)
    out = eng.evaluate("where(a > b, a * 2, b * 3) + 1", a=a, b=b)
    x, y = a.to_numpy(), b.to_numpy()
    np.testing.assert_allclose(out.to_numpy(), np.where(x > y, x * 2, y * 3) + 1)


def test_programs_are_cached(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3,))
    eng.evaluate("a * 3 + 1", a=a)
    key = ("a * 3 + 1", (("a", D.F64),), "tiled")
    prog = fusion._programs[key]
    eng.evaluate("a * 3 + 1", a=a)
    assert fusion._programs[key] is prog


def test_the_numexpr_backend_matches(eng: tfr.CpuEngine, rand: R) -> None:
    a, b, c = rand((64,), 1), rand((64,), 2), rand((64,), 3)
    out = eng.evaluate("exp(a + b) * c", a=a, b=b, c=c, backend="numexpr")
    np.testing.assert_allclose(
        out.to_numpy(), np.exp(a.to_numpy() + b.to_numpy()) * c.to_numpy(), rtol=1e-12
    )
    del out
    assert eng.buffer_pool_stats().buffers == 1


def test_the_numexpr_backend_refuses_what_numexpr_does_differently(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError):
        eng.evaluate("a / b", a=t_([1], np.int64), b=t_([1], np.int64), backend="numexpr")
    with pytest.raises(tfr.ValidationError, match="maximum"):
        eng.evaluate("maximum(a, 1.0)", a=t_([1.0]), backend="numexpr")


def test_an_unknown_backend_is_refused(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a", a=rand((2,)), backend="gpu")
    assert err.value.kind == "INVALID_BACKEND"


def test_a_rank0_expression(eng: tfr.CpuEngine) -> None:
    s = tfr.Tensor.from_vec_col_major((), np.array([2.0]))
    out = eng.evaluate("s * s + 1", s=s)
    assert out.shape == () and out.host_data().tolist() == [5.0]


def test_fusion_refuses_backend_buffers(eng: tfr.CpuEngine, fake_domain: Any) -> None:
    with pytest.raises(tfr.RuntimeStateError, match="download"):
        eng.evaluate("a * 2", a=fake_domain.tensor([1.0]))


def test_the_engine_guide_states_the_tile_size_the_code_uses() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "engine.md").read_text()
    sizes = re.findall(r"tiles of (\d+) elements", guide)
    assert sizes == [str(fusion.TILE)]
