"""SVD and eigh gradients at equal and zero singular values / eigenvalues: finite, and equal to
central finite differences for losses that do not depend on the basis chosen inside a
degenerate subspace (where JAX's rule gives NaN and PyTorch's breaks on repeated zeros)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
import tenferro.autodiff as ad
from ad_checks import check_grad, check_hvp


def _orthonormal(rng: np.random.Generator, n: int, complex_: bool) -> np.ndarray[Any, Any]:
    a = rng.standard_normal((n, n))
    if complex_:
        a = a + 1j * rng.standard_normal((n, n))
    q, _ = np.linalg.qr(a)
    return q


def _with_spectrum(values: list[float], m: int, n: int, complex_: bool, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    u = _orthonormal(rng, m, complex_)[:, : len(values)]
    v = _orthonormal(rng, n, complex_)[:, : len(values)]
    return u @ np.diag(values) @ v.conj().T


def _projector_loss(k: int, b: np.ndarray[Any, Any]) -> Any:
    """Re tr(U_k U_k^H B) + sum(s^3): invariant under rotations inside any degenerate block
    that lies wholly inside the leading k (or wholly outside)."""
    bt = tfr.asarray(b)

    def f(a: Any) -> Any:
        u, s, _vh = tfr.linalg.svd(a, full_matrices=False)
        uk = u[:, :k]
        p = tfr.matmul(uk, tfr.conj(uk.mT))
        return tfr.sum(tfr.real(p * tfr.conj(bt))) + tfr.sum(s**3)

    return f


@pytest.mark.parametrize("complex_", [False, True], ids=["f64", "c128"])
def test_svd_gradient_with_equal_singular_values_matches_finite_differences(complex_: bool) -> None:
    a = _with_spectrum([3.0, 2.0, 2.0, 1.0], 5, 4, complex_)
    b = np.random.default_rng(5).standard_normal((5, 5))
    f = _projector_loss(3, b)
    g = ad.grad(f)(tfr.asarray(a))
    assert np.all(np.isfinite(tfr.to_numpy(g)))
    check_grad(f, [tfr.asarray(a)], rtol=1e-5)


@pytest.mark.parametrize("complex_", [False, True], ids=["f64", "c128"])
def test_svd_gradient_with_repeated_zero_singular_values_matches_finite_differences(
    complex_: bool,
) -> None:
    a = _with_spectrum([2.0, 1.0, 0.0, 0.0], 6, 4, complex_)
    b = np.random.default_rng(6).standard_normal((6, 6))
    f = _projector_loss(2, b)
    g = ad.grad(f)(tfr.asarray(a))
    assert np.all(np.isfinite(tfr.to_numpy(g)))
    check_grad(f, [tfr.asarray(a)], rtol=1e-5)


def test_svd_of_a_multiple_of_an_orthogonal_matrix_has_a_finite_exact_gradient() -> None:
    # Every singular value equal: ||A||_F^2 through the SVD is 2A.
    a = 2.0 * _orthonormal(np.random.default_rng(1), 4, False)

    def f(x: Any) -> Any:
        u, s, vh = tfr.linalg.svd(x)
        rec = tfr.matmul(u * s, vh)
        return tfr.sum(rec * rec)

    g = ad.grad(f)(tfr.asarray(a))
    np.testing.assert_allclose(tfr.to_numpy(g), 2 * a, atol=1e-10)


def _projector3(bt: Any) -> Any:
    def f(x: Any) -> Any:
        u = tfr.linalg.svd(x)[0][:, :3]
        return tfr.sum(tfr.matmul(u, u.mT) * bt)

    return f


def test_second_derivative_through_an_exactly_degenerate_svd_is_finite() -> None:
    # Exact there only to first order: the second derivative needs divided differences
    # (f(s_i) - f(s_j)) / (s_i - s_j) inside the degenerate block, which a rule-level
    # broadening cannot recover (docs/autodiff.md, "Degenerate spectra").
    a = tfr.asarray(_with_spectrum([3.0, 2.0, 2.0, 1.0], 4, 4, False))
    f = _projector3(tfr.asarray(np.random.default_rng(7).standard_normal((4, 4))))
    h = ad.hvp(f, (a,), (tfr.asarray(np.random.default_rng(9).standard_normal((4, 4))),))
    assert np.all(np.isfinite(tfr.to_numpy(h[0])))


def test_second_derivative_through_a_nearly_degenerate_svd_matches_finite_differences() -> None:
    a = _with_spectrum([3.0, 2.0, 2.0 - 1e-3, 1.0], 4, 4, False)
    f = _projector3(tfr.asarray(np.random.default_rng(7).standard_normal((4, 4))))
    check_hvp(f, [tfr.asarray(a)], rtol=1e-4, h=1e-6)


@pytest.mark.parametrize("complex_", [False, True], ids=["f64", "c128"])
def test_eigh_gradient_with_equal_eigenvalues_matches_finite_differences(complex_: bool) -> None:
    rng = np.random.default_rng(2)
    q = _orthonormal(rng, 4, complex_)
    a = q @ np.diag([-1.0, 0.5, 0.5, 2.0]) @ q.conj().T
    b = tfr.asarray(rng.standard_normal((4, 4)))

    def f(x: Any) -> Any:
        h = (x + tfr.conj(x.mT)) * 0.5
        w, v = tfr.linalg.eigh(h)
        top = v[:, 3:]
        p = tfr.matmul(top, tfr.conj(top.mT))
        return tfr.sum(w**3) + tfr.sum(tfr.real(p) * b)

    g = ad.grad(f)(tfr.asarray(a))
    assert np.all(np.isfinite(tfr.to_numpy(g)))
    check_grad(f, [tfr.asarray(a)], rtol=1e-5)


def test_broadening_is_settable() -> None:
    a = tfr.asarray(_with_spectrum([3.0, 2.0, 2.0 + 1e-4, 1.0], 4, 4, False))
    f = _projector_loss(3, np.random.default_rng(3).standard_normal((4, 4)))
    before = ad.config.eps
    try:
        g_default = tfr.to_numpy(ad.grad(f)(a))
        ad.config.eps = 1e-2
        g_wide = tfr.to_numpy(ad.grad(f)(a))
    finally:
        ad.config.eps = before
    assert ad.config.eps == 1e-12
    assert np.all(np.isfinite(g_wide))
    assert not np.allclose(g_default, g_wide)


def test_truncated_svd_gradient_is_that_of_the_kept_triplets() -> None:
    # L depends on A only through the kept triplets; the reference differentiates the
    # same function numerically.
    a = tfr.asarray(np.random.default_rng(4).standard_normal((6, 5)))
    w = tfr.asarray(np.random.default_rng(8).standard_normal((6, 5)))

    def f(x: Any) -> Any:
        u, s, vh, _ = tfr.linalg.svd_truncated(x, max_rank=2)
        return tfr.sum(tfr.matmul(u * s, vh) * w)

    check_grad(f, [a], rtol=1e-5)
