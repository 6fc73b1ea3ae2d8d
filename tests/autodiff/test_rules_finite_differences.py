"""Every derivative rule against central finite differences: first order (grad), second
order (hvp, reverse over reverse) and forward mode (jvp), over hypothesis-drawn shapes,
real and complex float64, on column-major owners, adopted C-ordered arrays and strided
views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
import tenferro.autodiff as ad  # noqa: F401  (installs the hook)
from ad_checks import check_grad, check_hvp, check_jvp, make_array, scalarize

Builder = Callable[[Any, bool, str, list[int]], tuple[Callable[..., Any], list[Any]]]
CASES: dict[str, tuple[Builder, bool]] = {}  # name -> (builder, complex supported)


def case(name: str, complex_ok: bool = True) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        CASES[name] = (fn, complex_ok)
        return fn

    return register


def arr(rng: Any, shape: tuple[int, ...], c: bool, layout: str) -> Any:
    return make_array(rng, shape, c, layout)


def pos(rng: Any, shape: tuple[int, ...], layout: str, lo: float = 0.5) -> Any:
    a = lo + rng.random(shape)
    return tfr.asarray(np.ascontiguousarray(a) if layout == "C" else np.asfortranarray(a))


def unit(rng: Any, shape: tuple[int, ...], layout: str) -> Any:
    a = rng.uniform(-0.8, 0.8, shape)
    return tfr.asarray(np.ascontiguousarray(a) if layout == "C" else np.asfortranarray(a))


# ---------------------------------------------------------------------------- elementwise
_ANY = ["exp", "sin", "cos", "tanh", "square", "negative", "sinh", "cosh", "conj", "real"]
for _n in _ANY:

    def _b(rng: Any, c: bool, lay: str, d: list[int], _n: str = _n) -> Any:
        f = getattr(tfr, _n)
        return (lambda x: scalarize(f(x))), [arr(rng, (d[0], d[1]), c, lay)]

    case(f"unary.{_n}")(_b)

for _n in ["log", "sqrt", "reciprocal", "log1p", "log2", "log10", "expm1", "tan", "atan", "asinh"]:

    def _b2(rng: Any, c: bool, lay: str, d: list[int], _n: str = _n) -> Any:
        f = getattr(tfr, _n)
        x = (
            pos(rng, (d[0], d[1]), lay)
            if not c
            else tfr.asarray(
                np.asarray(pos(rng, (d[0], d[1]), lay)) + 0.3j * rng.standard_normal((d[0], d[1]))
            )
        )
        return (lambda x: scalarize(f(x))), [x]

    case(f"unary.{_n}", complex_ok=_n in ("log", "sqrt", "reciprocal"))(_b2)

for _n in ["asin", "acos", "atanh"]:

    def _b3(rng: Any, c: bool, lay: str, d: list[int], _n: str = _n) -> Any:
        f = getattr(tfr, _n)
        return (lambda x: scalarize(f(x))), [unit(rng, (d[0], d[1]), lay)]

    case(f"unary.{_n}", complex_ok=False)(_b3)


@case("unary.acosh", complex_ok=False)
def _acosh(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    return (lambda x: scalarize(tfr.acosh(x))), [pos(rng, (d[0],), lay, lo=1.5)]


@case("unary.imag", complex_ok=True)
def _imag(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    return (lambda x: scalarize(tfr.imag(x))), [arr(rng, (d[0], d[1]), True, lay)]


@case("unary.abs")
def _abs(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    return (lambda x: scalarize(tfr.abs(x))), [arr(rng, (d[0], d[1]), c, lay)]


for _n in ["add", "subtract", "multiply", "divide"]:

    def _bb(rng: Any, c: bool, lay: str, d: list[int], _n: str = _n) -> Any:
        f = getattr(tfr, _n)
        a = arr(rng, (d[0], 1, d[1]), c, lay)
        b = arr(rng, (d[2], d[1]), False, lay)
        if _n == "divide":
            b = pos(rng, (d[2], d[1]), lay)
        return (lambda a, b: scalarize(f(a, b))), [a, b]

    case(f"binary.{_n}")(_bb)


@case("binary.operators_and_scalars")
def _ops(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    return (lambda a, b: scalarize((2.0 * a - b / 3.0) * (a + 1.5) - (-a) @ b.mT @ a)), [
        arr(rng, (d[0], d[1]), c, lay),
        arr(rng, (d[0], d[1]), c, lay),
    ]


@case("binary.pow", complex_ok=False)
def _pow(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    return (lambda a, b: scalarize(a**b + a**2 + a**0.5)), [
        pos(rng, (d[0], d[1]), lay),
        arr(rng, (d[1],), False, lay),
    ]


for _n in ["maximum", "minimum", "atan2", "hypot", "logaddexp"]:

    def _bm(rng: Any, c: bool, lay: str, d: list[int], _n: str = _n) -> Any:
        f = getattr(tfr, _n)
        return (lambda a, b: scalarize(f(a, b))), [
            arr(rng, (d[0], d[1]), False, lay),
            arr(rng, (d[1],), False, lay),
        ]

    case(f"binary.{_n}", complex_ok=False)(_bm)


@case("where_and_clip", complex_ok=False)
def _where(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any, b: Any) -> Any:
        return scalarize(tfr.where(a > 0, a * b, b) + tfr.clip(a, -0.5, 0.5))

    return f, [arr(rng, (d[0], d[1]), c, lay), arr(rng, (d[1],), c, lay)]


# ---------------------------------------------------------------------------- reductions
for _n in ["sum", "mean", "prod", "max", "min", "var", "std"]:

    def _br(rng: Any, c: bool, lay: str, d: list[int], _n: str = _n) -> Any:
        f = getattr(tfr, _n)

        def g(x: Any) -> Any:
            return scalarize((f(x, axis=1), f(x, axis=(0, 2), keepdims=True), f(x)))

        x = arr(rng, (d[0] + 1, d[1] + 1, d[2] + 1), c, lay)
        if _n == "prod":
            x = pos(rng, (d[0], d[1], d[2]), lay)
        return g, [x]

    case(f"reduce.{_n}", complex_ok=_n in ("sum", "mean", "prod"))(_br)


@case("reduce.cumulative_sum")
def _cumsum(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    return (lambda x: scalarize(tfr.cumulative_sum(x, axis=1))), [arr(rng, (d[0], d[1]), c, lay)]


# ---------------------------------------------------------------------------- manipulation
@case("manip.shape_ops")
def _shape_ops(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(x: Any) -> Any:
        y = tfr.reshape(x, (d[0] * d[1], d[2]))
        z = tfr.permute_dims(x, (2, 0, 1))
        w = tfr.expand_dims(tfr.flip(x, axis=1), axis=0)
        v = tfr.squeeze(w, axis=0)
        m = tfr.moveaxis(x, 0, -1)
        r = tfr.roll(x, 1, axis=1)
        t = x.mT
        return scalarize((y, z, v, m, r, t, tfr.broadcast_to(x, (2, d[0], d[1], d[2]))))

    return f, [arr(rng, (d[0], d[1], d[2]), c, lay)]


@case("manip.concat_stack_unstack")
def _concat(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any, b: Any) -> Any:
        parts = tfr.unstack(a, axis=1)
        return scalarize(
            (tfr.concat([a, b], axis=1), tfr.stack([a, a * b[:, :1]], axis=2), parts[0] * parts[-1])
        )

    return f, [arr(rng, (d[0], d[1]), c, lay), arr(rng, (d[0], d[2]), c, lay)]


@case("manip.tril_triu_astype")
def _tri(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any) -> Any:
        return scalarize((tfr.tril(a, k=-1), tfr.triu(a), tfr.astype(a, tfr.complex128)))

    return f, [arr(rng, (d[0], d[1]), c, lay)]


@case("index.basic")
def _basic(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any) -> Any:
        return scalarize((a[1:, ::2], a[0], a[..., -1], a[None, :, 1:2], a[::-1]))

    return f, [arr(rng, (d[0] + 1, d[1] + 1), c, lay)]


@case("index.advanced")
def _advanced(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    idx = tfr.asarray(np.array([0, min(d[0], d[1]), 0, 1]))

    def f(a: Any) -> Any:
        return scalarize((a[idx], tfr.take(a, idx, axis=0), a[a.shape[0] - 1, idx[:2]]))

    return f, [arr(rng, (d[0] + 1, d[1] + 1), c, lay)]


# ---------------------------------------------------------------------------- contractions
@case("contract.matmul")
def _matmul(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any, b: Any, v: Any) -> Any:
        return scalarize((tfr.matmul(a, b), a @ v, v @ b, tfr.matmul(v, v)))

    return f, [
        arr(rng, (2, d[0], d[1]), c, lay),
        arr(rng, (d[1], d[1]), c, lay),
        arr(rng, (d[1],), c, lay),
    ]


@case("contract.tensordot_vecdot")
def _tensordot(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any, b: Any) -> Any:
        return scalarize(
            (
                tfr.tensordot(a, b, axes=([2, 0], [0, 1])),
                tfr.tensordot(a, b, axes=1),
                tfr.vecdot(a[:, :, 0], b[0], axis=-1),
            )
        )

    return f, [arr(rng, (d[0], d[1], d[2]), c, lay), arr(rng, (d[2], d[0], d[1]), c, lay)]


@case("contract.einsum")
def _einsum(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any, b: Any, s: Any) -> Any:
        return scalarize(
            (
                tfr.einsum("ijk,kl->ijl", a, b),
                tfr.einsum("...k,kl->...l", a, b),
                tfr.einsum("ii->i", s),
                tfr.einsum("ij,ij->", s, s),
                tfr.einsum("ijk,kl", a, b),
                tfr.einsum("ii", s),
            )
        )

    return f, [
        arr(rng, (d[0], d[1], d[2]), c, lay),
        arr(rng, (d[2], d[1]), c, lay),
        arr(rng, (d[1], d[1]), c, lay),
    ]


@case("contract.dot_outer_trace_diagonal")
def _dot(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any, v: Any) -> Any:
        return scalarize(
            (tfr.dot(a, v), tfr.outer(v, v), tfr.trace(a), tfr.diagonal(a, 1), tfr.linalg.trace(a))
        )

    return f, [arr(rng, (d[0], d[0]), c, lay), arr(rng, (d[0],), c, lay)]


# ---------------------------------------------------------------------------- linalg
def _gauge_free_svd(u: Any, s: Any, vh: Any) -> Any:
    """A loss of an SVD that does not depend on the singular vectors' phases."""
    rec = tfr.matmul(u * tfr.expand_dims(s, axis=-2), vh)
    return scalarize((tfr.abs(u) ** 2, tfr.abs(vh) ** 2, s, rec))


@case("linalg.svd_thin")
def _svd(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any) -> Any:
        return _gauge_free_svd(*tfr.linalg.svd(a, full_matrices=False))

    return f, [arr(rng, (d[0] + 1, d[1] + 1), c, lay)]


@case("linalg.svd_batched_wide")
def _svd_b(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any) -> Any:
        return _gauge_free_svd(*tfr.linalg.svd(a, full_matrices=False))

    return f, [arr(rng, (2, d[0] + 1, d[0] + d[1] + 1), c, lay)]


@case("linalg.svd_full_svdvals")
def _svd_full(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any) -> Any:
        u, s, vh = tfr.linalg.svd(a)
        k = s.shape[-1]
        return _gauge_free_svd(u[:, :k], s, vh[:k]) + scalarize(tfr.linalg.svdvals(a))

    return f, [arr(rng, (d[0] + 2, d[1] + 1), c, lay)]


@case("linalg.svd_truncated")
def _svd_trunc(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any) -> Any:
        u, s, vh, discarded = tfr.linalg.svd_truncated(a, max_rank=2)
        return _gauge_free_svd(u, s, vh) + discarded

    return f, [arr(rng, (d[0] + 2, d[1] + 2), c, lay)]


@case("linalg.svd_truncated_batched")
def _svd_trunc_b(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any) -> Any:
        u, s, vh, discarded = tfr.linalg.svd_truncated(a, max_rank=2)
        return _gauge_free_svd(u, s, vh) + scalarize(discarded)

    return f, [arr(rng, (2, d[0] + 2, d[1] + 2), c, lay)]


@case("linalg.qr")
def _qr(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(a: Any, w: Any) -> Any:
        return scalarize((*tfr.linalg.qr(a), *tfr.linalg.qr(w)))

    return f, [arr(rng, (d[0] + d[1], d[1]), c, lay), arr(rng, (d[0], d[0] + d[1]), c, lay)]


@case("linalg.eigh_eigvalsh")
def _eigh(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(x: Any) -> Any:
        a = x + tfr.conj(x.mT)
        w, v = tfr.linalg.eigh(a)
        return scalarize((w, tfr.abs(v) ** 2, tfr.linalg.eigvalsh(a * a)))

    return f, [arr(rng, (d[0] + 1, d[0] + 1), c, lay)]


@case("linalg.cholesky")
def _chol(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    n = d[0] + 1

    def f(x: Any) -> Any:
        a = tfr.matmul(x, tfr.conj(x.mT)) + n * tfr.eye(n)
        return scalarize((tfr.linalg.cholesky(a), tfr.linalg.cholesky(a, upper=True)))

    return f, [arr(rng, (n, n), c, lay)]


@case("linalg.solve_inv")
def _solve(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    n = d[0] + 1

    def f(x: Any, b: Any, v: Any) -> Any:
        a = x + 3 * n * tfr.eye(n)
        return scalarize((tfr.linalg.solve(a, b), tfr.linalg.solve(a, v), tfr.linalg.inv(a)))

    return f, [arr(rng, (n, n), c, lay), arr(rng, (n, d[1]), c, lay), arr(rng, (n,), c, lay)]


@case("linalg.det_slogdet")
def _det(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    n = d[0] + 1

    def f(x: Any) -> Any:
        a = x + 2 * tfr.eye(n)
        sign, logabs = tfr.linalg.slogdet(a)
        return scalarize((tfr.linalg.det(a), logabs, sign))

    return f, [arr(rng, (n, n), c, lay)]


@case("linalg.norms")
def _norms(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(x: Any) -> Any:
        return scalarize(
            (
                tfr.linalg.matrix_norm(x),
                tfr.linalg.matrix_norm(x, ord="nuc"),
                tfr.linalg.matrix_norm(x, ord=2),
                tfr.linalg.matrix_norm(x, ord=1),
                tfr.linalg.matrix_norm(x, ord=float("inf")),
                tfr.linalg.vector_norm(x),
                tfr.linalg.vector_norm(x, axis=0, ord=3),
            )
        )

    return f, [arr(rng, (d[0] + 1, d[1] + 1), c, lay)]


@case("linalg.expm")
def _expm(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    def f(x: Any) -> Any:
        return scalarize(tfr.linalg.expm(x * 0.5))

    return f, [arr(rng, (d[0] + 1, d[0] + 1), c, lay)]


@case("linalg.pinv")
def _pinv(rng: Any, c: bool, lay: str, d: list[int]) -> Any:
    return (lambda x: scalarize(tfr.linalg.pinv(x))), [arr(rng, (d[0] + 2, d[1] + 1), c, lay)]


# ---------------------------------------------------------------------------- the tests
_PARAMS = [
    pytest.param(name, cplx, id=f"{name}-{'c128' if cplx else 'f64'}")
    for name, (_, ok) in sorted(CASES.items())
    for cplx in ((False, True) if ok else (False,))
]

_draws = st.tuples(
    st.integers(0, 2**31 - 1),
    st.sampled_from(["F", "C", "strided"]),
    st.lists(st.integers(1, 3), min_size=3, max_size=3),
)


@pytest.mark.parametrize(("name", "cplx"), _PARAMS)
@settings(max_examples=4)
@given(draw=_draws)
def test_grad_matches_central_differences(name: str, cplx: bool, draw: Any) -> None:
    seed, layout, dims = draw
    f, args = CASES[name][0](np.random.default_rng(seed), cplx, layout, dims)
    check_grad(f, args, seed=seed)


@pytest.mark.parametrize(("name", "cplx"), _PARAMS)
@settings(max_examples=2)
@given(draw=_draws)
def test_hvp_matches_central_differences_of_the_gradient(name: str, cplx: bool, draw: Any) -> None:
    seed, layout, dims = draw
    f, args = CASES[name][0](np.random.default_rng(seed), cplx, layout, dims)
    check_hvp(f, args, seed=seed)


@pytest.mark.parametrize(("name", "cplx"), _PARAMS)
@settings(max_examples=2)
@given(draw=_draws)
def test_jvp_matches_central_differences(name: str, cplx: bool, draw: Any) -> None:
    seed, layout, dims = draw
    f, args = CASES[name][0](np.random.default_rng(seed), cplx, layout, dims)
    check_jvp(f, args, seed=seed)
