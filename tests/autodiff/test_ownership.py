"""A trace keeps the ownership model's promises: saved values are read borrows (a write
into one is refused at the write), intermediates come from the engine's pool and go back
to it, and nothing of a trace outlives its pullback and results."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
import tenferro.autodiff as ad


def _loss(x: Any) -> Any:
    y = tfr.sin(x) * x
    _u, s, _vh = tfr.linalg.svd(tfr.reshape(y, (3, 4)), full_matrices=False)
    return tfr.sum(s) + tfr.sum(tfr.exp(y) * y)


def test_writing_a_saved_input_before_the_backward_pass_is_refused_at_the_write() -> None:
    x = tfr.asarray(np.linspace(0.1, 1.2, 12))
    _, _pullback = ad.vjp(lambda x: tfr.sum(tfr.sin(x)), x)
    with pytest.raises(tfr.BorrowError):
        x[0] = 5.0
    assert float(x[0]) == pytest.approx(0.1)  # the refused write changed nothing


def test_in_place_operator_on_a_saved_input_is_refused() -> None:
    x = tfr.asarray(np.linspace(0.1, 1.2, 12))
    _, _pullback = ad.vjp(lambda x: tfr.sum(x * x), x)
    with pytest.raises(tfr.BorrowError):
        x += 1.0


def test_the_input_is_writable_again_once_the_pullback_is_dropped() -> None:
    x = tfr.asarray(np.linspace(0.1, 1.2, 12))
    _, pullback = ad.vjp(lambda x: tfr.sum(tfr.sin(x)), x)
    (g,) = pullback(tfr.asarray(1.0))
    np.testing.assert_allclose(tfr.to_numpy(g), np.cos(np.linspace(0.1, 1.2, 12)))
    del pullback, g
    x[0] = 5.0
    assert float(x[0]) == 5.0


def test_writing_a_constant_the_trace_saved_is_refused() -> None:
    w = tfr.asarray(np.linspace(0.1, 1.2, 12))
    x = tfr.asarray(np.ones(12))
    _, pullback = ad.vjp(lambda x: tfr.sum(x * w), x)
    with pytest.raises(tfr.BorrowError):
        w[3] = 0.0
    del pullback
    w[3] = 0.0


def test_writing_into_a_traced_array_is_a_typed_error() -> None:
    def f(x: Any) -> Any:
        x[0] = 1.0
        return tfr.sum(x)

    with pytest.raises(tfr.ValidationError) as info:
        ad.grad(f)(tfr.asarray(np.ones(3)))
    assert info.value.kind == "NOT_DIFFERENTIABLE"


def test_tracers_and_nodes_die_with_the_call() -> None:
    seen: list[Any] = []

    def f(x: Any) -> Any:
        y = tfr.sin(x) * x
        seen.extend([weakref.ref(x), weakref.ref(y), weakref.ref(y.node)])
        return tfr.sum(y)

    value, g = ad.value_and_grad(f)(tfr.asarray(np.linspace(0.0, 1.0, 5)))
    # Reference counting alone frees them: the tape has no cycles.
    assert all(r() is None for r in seen)
    del value, g


def test_pool_steady_state_is_unchanged_after_many_calls() -> None:
    eng = tfr.CpuEngine()
    x = tfr.asarray(np.linspace(0.1, 1.2, 12))
    with eng:
        for _ in range(3):
            value, g = ad.value_and_grad(_loss)(x)
            del value, g
        before = eng.buffer_pool_stats()
        cache = eng.buffer_pool_cache_stats()
        for _ in range(20):
            value, g = ad.value_and_grad(_loss)(x)
            del value, g
        assert eng.buffer_pool_stats() == before
        # Every buffer of the trace went back to the pool (none released while still
        # borrowed) and was taken from it again: no new allocation after the warm-up.
        assert eng.buffer_pool_cache_stats().misses == cache.misses
        assert eng.buffer_pool_cache_stats().refused_aliased == cache.refused_aliased
        assert eng.buffer_pool_cache_stats().hits > 0


def test_second_order_traces_also_die() -> None:
    seen: list[Any] = []

    def f(x: Any) -> Any:
        seen.append(weakref.ref(x))
        return tfr.sum(tfr.exp(x) * x)

    h = ad.hvp(f, (tfr.asarray(np.linspace(0.0, 1.0, 4)),), (tfr.asarray(np.ones(4)),))
    assert all(r() is None for r in seen)
    x = np.linspace(0.0, 1.0, 4)
    np.testing.assert_allclose(tfr.to_numpy(h[0]), np.exp(x) * (x + 2))


@pytest.mark.parametrize(
    "reshaping",
    [
        lambda y: tfr.reshape(y, (6,)),
        lambda y: tfr.expand_dims(y, axis=0),
        lambda y: tfr.squeeze(tfr.reshape(y, (1, 6)), axis=0),
    ],
)
def test_a_reshape_in_the_trace_does_not_keep_its_input_alive(reshaping: Any) -> None:
    # Its backward needs only the input's shape; holding the input would keep an
    # intermediate's pooled buffer alive until the pullback is dropped.
    held: list[Any] = []

    def f(x: Any) -> Any:
        y = x * 2.0  # keeps x and the constant, not y
        held.append(weakref.ref(y.primal))
        return tfr.sum(reshaping(y))

    _value, pullback = ad.vjp(f, tfr.ones((2, 3)))
    assert held[0]() is None
    (g,) = pullback(tfr.asarray(1.0))
    np.testing.assert_allclose(np.asarray(g.to_numpy()), np.full((2, 3), 2.0))
