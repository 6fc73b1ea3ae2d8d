"""Gradients and Hessian-vector products against torch.autograd on the same programs
(skipped when torch is not installed). torch's complex gradients follow the same
convention as tenferro's (dL/dRe + i dL/dIm), so they compare directly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
import tenferro.autodiff as ad

torch = pytest.importorskip("torch")


class _Torch:
    """The handful of namespace spellings the programs below use, on torch tensors."""

    linalg = torch.linalg
    sum = staticmethod(torch.sum)
    sin = staticmethod(torch.sin)
    exp = staticmethod(torch.exp)
    log = staticmethod(torch.log)
    tanh = staticmethod(torch.tanh)
    abs = staticmethod(torch.abs)
    real = staticmethod(torch.real)
    conj = staticmethod(torch.conj)
    einsum = staticmethod(torch.einsum)
    matmul = staticmethod(torch.matmul)

    @staticmethod
    def tensordot(a: Any, b: Any, axes: Any) -> Any:
        return torch.tensordot(a, b, dims=axes)

    @staticmethod
    def eye(n: int) -> Any:
        return torch.eye(n, dtype=torch.float64)


def _abs2(xp: Any, x: Any) -> Any:
    return xp.real(x * xp.conj(x))


def _program_elementwise(xp: Any, a: Any, b: Any) -> Any:
    y = xp.tanh(xp.sin(a) * b + 0.5) / (1.5 + _abs2(xp, b))
    return xp.sum(_abs2(xp, y)) + xp.sum(xp.real(xp.exp(a * 0.3)))


def _program_contractions(xp: Any, a: Any, b: Any) -> Any:
    c = xp.einsum("ij,jk->ik", a, b.mT)
    d = xp.tensordot(a, b, axes=([1], [1]))
    e = xp.matmul(a.mT, b)
    return xp.sum(_abs2(xp, c + d)) + xp.sum(_abs2(xp, e))


def _program_svd(xp: Any, a: Any, b: Any) -> Any:
    u, s, vh = xp.linalg.svd(a + b, full_matrices=False)
    p = xp.matmul(u[:, :2], xp.conj(u[:, :2].mT))
    return xp.sum(s**2) + xp.sum(xp.real(p)) + xp.sum(xp.abs(vh) ** 2 * xp.real(a[: vh.shape[0]]))


def _program_qr_eigh(xp: Any, a: Any, b: Any) -> Any:
    q, r = xp.linalg.qr(a)
    h = xp.matmul(xp.conj(b.mT), b)
    w, v = xp.linalg.eigh(h)
    return (
        xp.sum(xp.real(q * xp.conj(b)))
        + xp.sum(_abs2(xp, r))
        + xp.sum(w**2)
        + xp.sum(xp.abs(v[:, -1]) ** 2 * xp.real(a[:, 0][: v.shape[0]]))
    )


def _program_solve_det(xp: Any, a: Any, b: Any) -> Any:
    n = a.shape[1]
    m = xp.matmul(a.mT, a) * 0.1 + 2.0 * xp.eye(n)
    x = xp.linalg.solve(m, b.mT)
    _sign, logabs = xp.linalg.slogdet(m)
    chol = xp.linalg.cholesky(xp.matmul(xp.conj(m.mT), m))
    return (
        xp.sum(_abs2(xp, x))
        + logabs
        + xp.sum(_abs2(xp, xp.linalg.inv(m)))
        + xp.sum(_abs2(xp, chol))
        + xp.real(xp.linalg.det(m))
    )


def _program_expm_norms(xp: Any, a: Any, b: Any) -> Any:
    n = a.shape[1]
    sq = xp.matmul(a.mT, b) * 0.2
    e = xp.linalg.matrix_exp(sq) if xp is _Torch else xp.linalg.expm(sq)
    return (
        xp.sum(_abs2(xp, e))
        + xp.linalg.matrix_norm(a)
        + xp.linalg.matrix_norm(sq, ord="nuc")
        + xp.linalg.vector_norm(b[:, : n - 1])
    )


PROGRAMS: dict[str, Callable[..., Any]] = {
    "elementwise": _program_elementwise,
    "contractions": _program_contractions,
    "svd": _program_svd,
    "qr_eigh": _program_qr_eigh,
    "solve_det_cholesky_inv": _program_solve_det,
    "expm_norms": _program_expm_norms,
}


def _inputs(complex_: bool, seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((5, 4))
    b = rng.standard_normal((5, 4))
    if complex_:
        a = a + 1j * rng.standard_normal((5, 4))
        b = b + 1j * rng.standard_normal((5, 4))
    return a, b


def _torch_grads(program: Callable[..., Any], a: Any, b: Any) -> list[np.ndarray[Any, Any]]:
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    loss = program(_Torch, ta, tb)
    ga, gb = torch.autograd.grad(loss, (ta, tb))
    return [ga.numpy(), gb.numpy()]


@pytest.mark.parametrize("complex_", [False, True], ids=["f64", "c128"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_matches_torch_autograd(name: str, complex_: bool) -> None:
    program = PROGRAMS[name]
    a, b = _inputs(complex_, 11)
    expected = _torch_grads(program, a, b)
    got = ad.grad(lambda x, y: program(tfr, x, y), argnums=(0, 1))(tfr.asarray(a), tfr.asarray(b))
    for g, e in zip(got, expected, strict=False):
        np.testing.assert_allclose(tfr.to_numpy(g), e, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["elementwise", "svd", "qr_eigh"])
def test_hessian_vector_product_matches_torch(name: str) -> None:
    program = PROGRAMS[name]
    a, b = _inputs(False, 12)
    va, vb = _inputs(False, 13)
    _, (ha, hb) = torch.autograd.functional.hvp(
        lambda x, y: program(_Torch, x, y),
        (torch.tensor(a), torch.tensor(b)),
        (torch.tensor(va), torch.tensor(vb)),
    )
    got = ad.hvp(
        lambda x, y: program(tfr, x, y),
        (tfr.asarray(a), tfr.asarray(b)),
        (tfr.asarray(va), tfr.asarray(vb)),
    )
    np.testing.assert_allclose(tfr.to_numpy(got[0]), ha.numpy(), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(tfr.to_numpy(got[1]), hb.numpy(), rtol=1e-7, atol=1e-8)
