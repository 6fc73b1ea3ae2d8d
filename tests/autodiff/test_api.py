"""The functional API: argnums, pytrees, has_aux, vjp/jvp/hvp shapes, stop_gradient,
checkpoint, complex convention, typed errors and the dispatch hook."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
import tenferro.autodiff as ad
from ad_checks import check_grad


def _x(n: int = 4, seed: int = 0) -> Any:
    return tfr.asarray(np.random.default_rng(seed).standard_normal(n))


def test_grad_of_sum_of_squares_is_twice_the_input() -> None:
    x = _x()
    np.testing.assert_allclose(
        tfr.to_numpy(ad.grad(lambda v: tfr.sum(v * v))(x)), 2 * tfr.to_numpy(x)
    )


def test_argnums_tuple_returns_one_gradient_per_argument() -> None:
    a, b = _x(3, 1), _x(3, 2)
    ga, gb = ad.grad(lambda a, b: tfr.sum(a * b), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(tfr.to_numpy(ga), tfr.to_numpy(b))
    np.testing.assert_allclose(tfr.to_numpy(gb), tfr.to_numpy(a))


def test_gradients_follow_the_pytree_of_the_argument() -> None:
    params = {"w": [_x(3, 1), _x(3, 2)], "b": (_x(1, 3),)}

    def f(p: Any) -> Any:
        return tfr.sum(p["w"][0] * p["w"][1]) + tfr.sum(p["b"][0] ** 2)

    g = ad.grad(f)(params)
    assert set(g) == {"w", "b"} and isinstance(g["w"], list) and isinstance(g["b"], tuple)
    np.testing.assert_allclose(tfr.to_numpy(g["w"][0]), tfr.to_numpy(params["w"][1]))
    np.testing.assert_allclose(tfr.to_numpy(g["b"][0]), 2 * tfr.to_numpy(params["b"][0]))


def test_has_aux_returns_the_auxiliary_value_untraced() -> None:
    (_value, aux), _g = ad.value_and_grad(lambda x: (tfr.sum(x * x), x * 3), has_aux=True)(_x())
    assert type(aux) is tfr.Tensor
    np.testing.assert_allclose(tfr.to_numpy(aux), 3 * tfr.to_numpy(_x()))


def test_unused_argument_gets_a_zero_gradient() -> None:
    g = ad.grad(lambda a, b: tfr.sum(a), argnums=1)(_x(), _x(2))
    np.testing.assert_array_equal(tfr.to_numpy(g), np.zeros(2))


def test_python_float_argument_is_differentiable() -> None:
    assert float(ad.grad(lambda k: tfr.exp(k * 2.0))(0.5)) == pytest.approx(2 * np.exp(1.0))


def test_vjp_with_a_tuple_output_takes_a_tuple_cotangent() -> None:
    x = _x(3)
    _out, pullback = ad.vjp(lambda x: (x * 2, tfr.sum(x)), x)
    (g,) = pullback((tfr.ones((3,)), tfr.asarray(1.0)))
    np.testing.assert_allclose(tfr.to_numpy(g), 3 * np.ones(3))
    with pytest.raises(tfr.ValidationError):
        pullback(tfr.ones((3,)))


def test_jvp_is_the_directional_derivative() -> None:
    x = _x(3)
    _out, t = ad.jvp(lambda x: tfr.sin(x), (x,), (tfr.ones((3,)),))
    np.testing.assert_allclose(tfr.to_numpy(t), np.cos(tfr.to_numpy(x)))


def test_hvp_of_a_quartic() -> None:
    x, v = _x(3, 4), _x(3, 5)
    (h,) = ad.hvp(lambda x: tfr.sum(x**4), (x,), (v,))
    np.testing.assert_allclose(tfr.to_numpy(h), 12 * tfr.to_numpy(x) ** 2 * tfr.to_numpy(v))


def test_third_derivative_by_nesting_grad() -> None:
    def d(f: Any) -> Any:
        return ad.grad(f)

    x = tfr.asarray(0.7)
    assert float(d(d(d(tfr.sin)))(x)) == pytest.approx(-np.cos(0.7))


def test_stop_gradient_blocks_the_derivative() -> None:
    x = _x(3)
    g = ad.grad(lambda x: tfr.sum(x * ad.stop_gradient(x)))(x)
    np.testing.assert_allclose(tfr.to_numpy(g), tfr.to_numpy(x))


def test_checkpoint_gives_the_same_gradient_and_second_derivative() -> None:
    def block(x: Any) -> Any:
        return tfr.tanh(tfr.matmul(x, x.mT)) * 2.0

    def plain(x: Any) -> Any:
        return tfr.sum(block(x) ** 2)

    def saved(x: Any) -> Any:
        return tfr.sum(ad.checkpoint(block)(x) ** 2)

    x = tfr.asarray(np.random.default_rng(3).standard_normal((3, 2)))
    np.testing.assert_allclose(tfr.to_numpy(ad.grad(saved)(x)), tfr.to_numpy(ad.grad(plain)(x)))
    v = (tfr.ones((3, 2)),)
    np.testing.assert_allclose(
        tfr.to_numpy(ad.hvp(saved, (x,), v)[0]), tfr.to_numpy(ad.hvp(plain, (x,), v)[0])
    )
    check_grad(saved, [x])


def test_complex_gradient_is_d_re_plus_i_d_im() -> None:
    # L = |z|^2 = re^2 + im^2: dL/dRe + i dL/dIm = 2 z (JAX's grad would give 2 conj(z)).
    z = tfr.asarray(np.array([1.0 + 2.0j, -0.5 + 0.25j]))
    g = ad.grad(lambda z: tfr.sum(tfr.real(z * tfr.conj(z))))(z)
    np.testing.assert_allclose(tfr.to_numpy(g), 2 * tfr.to_numpy(z))
    # L = Im(z): the gradient points along +i.
    g = ad.grad(lambda z: tfr.sum(tfr.imag(z)))(z)
    np.testing.assert_allclose(tfr.to_numpy(g), [1j, 1j])


def test_grad_of_a_non_scalar_is_a_typed_error() -> None:
    with pytest.raises(tfr.ValidationError) as info:
        ad.grad(lambda x: x * 2)(_x())
    assert "real floating scalar" in str(info.value)


def test_function_without_a_rule_is_a_typed_error_naming_it() -> None:
    with pytest.raises(tfr.ValidationError) as info:
        ad.grad(lambda x: tfr.sum(tfr.sort(x)))(_x())
    assert info.value.kind == "NOT_DIFFERENTIABLE" and "tenferro.sort" in str(info.value)


def test_non_differentiable_functions_give_constants() -> None:
    def f(x: Any) -> Any:
        i = tfr.argmax(x)
        mask = x > 0
        return tfr.sum(tfr.where(mask, x, 0.0)) + tfr.astype(i, tfr.float64) * 0.0

    x = tfr.asarray(np.array([-1.0, 2.0, 3.0]))
    np.testing.assert_allclose(tfr.to_numpy(ad.grad(f)(x)), [0.0, 1.0, 1.0])


def test_tensor_operators_with_a_tracer_on_the_right_dispatch() -> None:
    c = tfr.asarray(np.array([1.0, 2.0]))
    g = ad.grad(lambda x: tfr.sum(c * x + c @ x - c / (x + 3.0)))(tfr.asarray(np.array([0.5, 1.0])))
    x = np.array([0.5, 1.0])
    # c @ x is a scalar broadcast over both elements of the sum: it counts twice.
    np.testing.assert_allclose(tfr.to_numpy(g), 3 * np.array([1, 2]) + [1, 2] / (x + 3) ** 2)


def test_array_api_code_written_against_xp_is_differentiable() -> None:
    def softmax_loss(x: Any) -> Any:
        xp = x.__array_namespace__()
        z = x - xp.max(x, axis=-1, keepdims=True)
        p = xp.exp(z) / xp.sum(xp.exp(z), axis=-1, keepdims=True)
        return -xp.sum(xp.log(p[..., 0]))

    check_grad(softmax_loss, [tfr.asarray(np.random.default_rng(5).standard_normal((3, 4)))])
