"""numpy's inner loops run directly by the compiled hot paths (`engine._core.Kernel`,
engine/_loops.pxi, issue 20): numpy's values bit for bit, numpy's floating-point
warnings and errors under every errstate, and the failure policy of the hot path,
for owners, C-ordered views, scalars and broadcasts."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.interface import Kernel

SPECIALS = [0.0, -0.0, 1.0, -1.5, 1e-310, 1e308, -1e308, np.inf, -np.inf, np.nan, 709.0, -800.0]


def _owner(arr: np.ndarray[Any, Any]) -> Any:
    return tfr.asarray(np.asfortranarray(arr))


def _same_bits(got: Any, want: np.ndarray[Any, Any]) -> None:
    g = np.asarray(got)
    assert g.dtype == want.dtype
    assert g.shape == want.shape
    assert np.ascontiguousarray(g).tobytes() == np.ascontiguousarray(want).tobytes()


# -- which loops are taken -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["f8", "f4", "c16", "c8"])
def test_the_float_and_complex_loops_of_add_and_exp_run_directly(dtype: str) -> None:
    assert Kernel(np.add).direct(dtype)
    assert Kernel(np.exp).direct(dtype)


def test_a_comparison_runs_its_bool_output_loop_directly() -> None:
    assert Kernel(np.less).direct("f8")


@pytest.mark.parametrize("dtype", ["g", ">f8", "O"])
def test_long_double_byte_swapped_and_object_inputs_keep_the_ufunc_call(dtype: str) -> None:
    assert not Kernel(np.add).direct(dtype)


def test_a_dtype_without_a_same_type_loop_keeps_the_ufunc_call() -> None:
    assert not Kernel(np.exp).direct("i8")  # numpy casts to float64 first


def test_a_loop_that_refuses_values_through_python_keeps_the_ufunc_call() -> None:
    # numpy's integer power raises ValueError for negative exponents from inside its loop.
    assert not Kernel(np.power).direct("i8")


def test_a_kernel_of_something_not_a_ufunc_is_refused() -> None:
    with pytest.raises(TypeError, match="ufunc with one output"):
        Kernel(len)
    with pytest.raises(TypeError, match="ufunc with one output"):
        Kernel(np.divmod)


def test_a_kernel_called_is_its_call() -> None:
    seen = []

    def call(a: Any, b: Any, out: Any) -> Any:
        seen.append(1)
        return np.maximum(a, b, out=out)

    k = Kernel(np.maximum, call)
    out = np.empty(2)
    k(np.ones(2), np.zeros(2), out)
    assert seen == [1]
    assert k.ufunc is np.maximum


# -- numpy's values ---------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(SPECIALS) | st.floats(-1e3, 1e3), min_size=16, max_size=16),
    st.lists(st.sampled_from(SPECIALS) | st.floats(-1e3, 1e3), min_size=16, max_size=16),
    st.sampled_from(["add", "subtract", "multiply", "divide", "less", "maximum", "pow"]),
    st.booleans(),
)
def test_a_binary_call_gives_numpys_bits(
    xs: list[float], ys: list[float], name: str, c_ordered: bool
) -> None:
    a = np.array(xs).reshape(4, 4)
    b = np.array(ys).reshape(4, 4)
    make = tfr.asarray if c_ordered else _owner
    with np.errstate(all="ignore"):
        want = getattr(np, {"pow": "power"}.get(name, name))(a, b)
        got = getattr(tfr, name)(make(a), make(b))
    _same_bits(got, want)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(SPECIALS) | st.floats(-1e3, 1e3), min_size=6, max_size=6),
    st.sampled_from(["exp", "negative", "sqrt", "log", "tanh", "abs"]),
)
def test_a_unary_call_gives_numpys_bits(xs: list[float], name: str) -> None:
    a = np.array(xs).reshape(2, 3)
    with np.errstate(all="ignore"):
        want = getattr(np, {"abs": "absolute"}.get(name, name))(a)
        _same_bits(getattr(tfr, name)(_owner(a)), want)
        _same_bits(getattr(tfr, name)(tfr.asarray(a)), want)


@pytest.mark.parametrize("value", [2.0, -0.0, 3, -(2**53), np.inf])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_a_python_scalar_operand_gives_numpys_bits(value: Any, dtype: Any) -> None:
    a = (np.arange(12.0) - 5.5).reshape(3, 4).astype(dtype)
    with np.errstate(all="ignore"):
        _same_bits(_owner(a) * value, a * value)
        _same_bits(value - tfr.asarray(a), value - a)
        if dtype is np.float64:
            _same_bits(tfr.asarray(a) < value, a < value)


def test_a_broadcast_gives_numpys_bits_in_either_memory_order() -> None:
    u = np.arange(12.0).reshape(4, 3) - 4.0
    s = np.array([0.5, -0.0, np.inf])
    want = u * s[None, :]
    with np.errstate(all="ignore"):
        _same_bits(tfr.asarray(u) * tfr.asarray(s)[None, :], want)
        _same_bits(_owner(u) * tfr.asarray(s), want)
        _same_bits(tfr.asarray(u)[:, :2] * tfr.asarray(s)[:2], u[:, :2] * s[:2])
        _same_bits(tfr.asarray(u)[1:2] * 2.0, u[1:2] * 2.0)
        _same_bits(tfr.asarray(u)[::2, ::-1] - tfr.asarray(s), u[::2, ::-1] - s)


def test_a_broadcast_of_reversed_stepped_and_rank_0_operands_gives_numpys_bits() -> None:
    base = np.arange(60.0).reshape(5, 12) / 7.0
    c = tfr.asarray(base)
    o = _owner(base)
    with np.errstate(all="ignore"):
        _same_bits(c[::-1, ::3] * o[1:3, :4][None, 0, :], base[::-1, ::3] * base[1:3, :4][0])
        _same_bits(o[:, ::-2] - c[2, ::-2], base[:, ::-2] - base[2, ::-2])
        _same_bits(tfr.asarray(np.float64(2.5)) * c[1:4, 2:3], np.float64(2.5) * base[1:4, 2:3])
        _same_bits(c[3, 4] / tfr.asarray(np.float64(-0.0)), base[3, 4] / np.float64(-0.0))
        _same_bits(1.5 - o[:2, None, :3], 1.5 - base[:2, None, :3])


def test_a_large_call_keeps_the_ufunc_and_its_values() -> None:
    a = np.linspace(-3, 3, 9000)
    _same_bits(tfr.exp(tfr.asarray(a)), np.exp(a))
    _same_bits(tfr.asarray(a) + tfr.asarray(a), a + a)


def test_an_unaligned_operand_gives_numpys_values() -> None:
    raw = np.zeros(8 * 16 + 1, dtype=np.uint8)
    a = np.frombuffer(raw.data, dtype=np.float64, count=16, offset=1)
    assert not a.flags.aligned
    a = a.reshape(4, 4)
    t = tfr.asarray(a)
    np.testing.assert_array_equal(np.asarray(t + t), a + a)


# -- numpy's floating-point rule -----------------------------------------------------------------
def _numpy_warnings(fn: Any) -> list[tuple[type, str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in seen]


@pytest.mark.parametrize("layout", [_owner, tfr.asarray])
def test_a_division_by_zero_warns_as_numpy_does(layout: Any) -> None:
    a = np.arange(16.0).reshape(4, 4)
    z = np.zeros((4, 4))
    want = _numpy_warnings(lambda: a / z)
    assert want
    assert _numpy_warnings(lambda: layout(a) / layout(z)) == want


def test_an_overflowing_scalar_product_warns_as_numpy_does() -> None:
    a = np.full((2, 2), 1e300)
    want = _numpy_warnings(lambda: a * 1e300)
    assert want
    assert _numpy_warnings(lambda: _owner(a) * 1e300) == want


def test_an_underflow_is_ignored_as_numpy_ignores_it() -> None:
    a = np.full((2, 2), -800.0)
    assert _numpy_warnings(lambda: tfr.exp(_owner(a))) == []
    assert np.all(np.asarray(tfr.exp(_owner(a))) == 0.0)


def test_an_invalid_value_under_errstate_ignore_is_silent() -> None:
    a = np.full((2, 2), -1.0)
    with np.errstate(all="ignore"):
        assert _numpy_warnings(lambda: tfr.sqrt(_owner(a))) == []


def test_errstate_raise_raises_numpys_error_and_changes_no_accounting() -> None:
    eng = tfr.default_engine()
    a = _owner(np.arange(4.0).reshape(2, 2))
    z = _owner(np.zeros((2, 2)))
    eng.buffer_pool_stats()  # drain the lane: the counters are settled
    before = eng._pool._out
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        a / z
    eng.buffer_pool_stats()
    assert eng._pool._out == before
    assert a._st.failed_read
    assert z._st.failed_read
    assert a._st.readers() == 0
    assert z._st.readers() == 0


def test_a_flag_in_a_call_with_warnings_silenced_leaves_no_warning_behind() -> None:
    a = np.arange(4.0).reshape(2, 2)
    z = np.zeros(2)
    # The broadcast path silences warnings as the general path does.
    assert _numpy_warnings(lambda: tfr.asarray(a) / tfr.asarray(z)) == []
    # The next call that raises no flag gives no warning either.
    assert _numpy_warnings(lambda: tfr.asarray(a) + tfr.asarray(a)) == []


# -- the engine's own elementwise methods ------------------------------------------------------
def test_the_engine_methods_hot_paths_call_their_ufuncs_kernel() -> None:
    from tenferro.engine import elementwise

    for ufunc in (np.add, np.multiply, np.exp, np.less):
        kernel = elementwise._KERNELS[ufunc]
        assert kernel.ufunc is ufunc
        assert kernel.direct("f8")


def test_an_engine_division_by_zero_warns_and_raises_as_numpy_does() -> None:
    eng = tfr.default_engine()
    a = np.arange(4.0).reshape(2, 2)
    z = np.zeros((2, 2))
    want = _numpy_warnings(lambda: a / z)
    assert _numpy_warnings(lambda: eng.div(_owner(a), _owner(z))) == want
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        eng.div(_owner(a), _owner(z))
    _same_bits(eng.mul(_owner(a), 2.0), a * 2.0)
    _same_bits(eng.exp(_owner(a)), np.exp(a))


def test_a_kernel_asked_first_by_many_threads_at_once_answers_each_alike() -> None:
    import threading

    kernel = Kernel(np.multiply)
    start = threading.Barrier(4)
    answers: list[bool] = []

    def ask() -> None:
        start.wait()
        answers.extend(kernel.direct(d) for d in ("f8", "c16", "f4", "i8"))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [True, True, True, True] * 4
