"""Shared checks of tenferro.autodiff: derivatives against central finite differences.

The reference is the function's own values (numpy arithmetic on perturbed
inputs, evaluated by tenferro without tracing): nothing of the derivative
machinery is involved, so a wrong rule cannot agree with it by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tenferro as tfr
import tenferro.autodiff as ad


def weights(shape: tuple[int, ...], index: int, complex_: bool) -> np.ndarray[Any, Any]:
    """Fixed random weights for output ``index`` of ``shape`` (the same on every call)."""
    rng = np.random.default_rng(1000 + 31 * index + 7 * len(shape) + sum(shape))
    w = rng.standard_normal(shape)
    if complex_:
        w = w + 1j * rng.standard_normal(shape)
    return w


def scalarize(out: Any) -> Any:
    """A real scalar loss of any output: ``sum(Re(y * W))`` over the arrays of ``out``."""
    leaves = list(out) if isinstance(out, (tuple, list)) else [out]
    total: Any = None
    for i, y in enumerate(leaves):
        if not hasattr(y, "dtype") or not (y.dtype.is_float or y.dtype.is_complex):
            continue
        w = tfr.asarray(weights(tuple(y.shape), i, y.dtype.is_complex))
        term = tfr.sum(tfr.real(y * w)) if y.dtype.is_complex else tfr.sum(y * w)
        total = term if total is None else total + term
    return total


def make_array(
    rng: np.random.Generator, shape: tuple[int, ...], complex_: bool, layout: str
) -> Any:
    """A tenferro array of ``shape``: a column-major owner, an adopted C-ordered array
    (a permuted view) or a strided view of a larger owner."""

    def draw(s: tuple[int, ...]) -> np.ndarray[Any, Any]:
        a = rng.standard_normal(s)
        if complex_:
            a = a + 1j * rng.standard_normal(s)
        return a

    if layout == "C":
        return tfr.asarray(np.ascontiguousarray(draw(shape)))
    if layout == "strided" and len(shape) >= 1:
        big = tfr.asarray(np.asfortranarray(draw((2 * shape[0], *shape[1:]))))
        return big[::2]
    return tfr.asarray(np.asfortranarray(draw(shape)))


def _numpy(x: Any) -> np.ndarray[Any, Any]:
    return np.array(tfr.to_numpy(x))


def _directions(rng: np.random.Generator, args: Sequence[Any]) -> list[np.ndarray[Any, Any]]:
    out = []
    for a in args:
        d = rng.standard_normal(tuple(a.shape))
        if a.dtype.is_complex:
            d = d + 1j * rng.standard_normal(tuple(a.shape))
        out.append(d)
    return out


def _shifted(args: Sequence[Any], ds: Sequence[Any], h: float) -> list[Any]:
    return [tfr.asarray(_numpy(a) + h * d) for a, d in zip(args, ds, strict=False)]


def _inner(g: Any, d: np.ndarray[Any, Any]) -> float:
    return float(np.sum(np.real(np.conj(_numpy(g)) * d)))


def check_grad(
    f: Callable[..., Any], args: Sequence[Any], seed: int = 0, rtol: float = 2e-5, h: float = 1e-6
) -> None:
    """The gradient of real scalar ``f`` against a central difference along a random direction."""
    rng = np.random.default_rng(seed)
    nums = tuple(range(len(args)))
    grads = ad.grad(f, argnums=nums)(*args)
    for g, a in zip(grads, args, strict=False):
        assert tuple(g.shape) == tuple(a.shape)
        assert g.dtype == a.dtype
    ds = _directions(rng, args)
    fd = (float(f(*_shifted(args, ds, h))) - float(f(*_shifted(args, ds, -h)))) / (2 * h)
    an = sum(_inner(g, d) for g, d in zip(grads, ds, strict=False))
    scale = max(1.0, abs(fd), abs(float(f(*args))))
    assert abs(fd - an) <= rtol * scale, (fd, an)


def check_hvp(
    f: Callable[..., Any], args: Sequence[Any], seed: int = 1, rtol: float = 2e-4, h: float = 1e-5
) -> None:
    """``hvp`` (reverse over reverse) against a central difference of the gradient."""
    rng = np.random.default_rng(seed)
    nums = tuple(range(len(args)))
    vs = _directions(rng, args)
    ds = _directions(rng, args)
    hv = ad.hvp(f, tuple(args), tuple(tfr.asarray(v) for v in vs))
    g_plus = ad.grad(f, argnums=nums)(*_shifted(args, vs, h))
    g_minus = ad.grad(f, argnums=nums)(*_shifted(args, vs, -h))
    fd = sum(
        (_inner(gp, d) - _inner(gm, d)) / (2 * h)
        for gp, gm, d in zip(g_plus, g_minus, ds, strict=False)
    )
    an = sum(_inner(x, d) for x, d in zip(hv, ds, strict=False))
    scale = max(1.0, abs(fd))
    assert abs(fd - an) <= rtol * scale, (fd, an)


def check_jvp(
    f: Callable[..., Any], args: Sequence[Any], seed: int = 2, rtol: float = 2e-5, h: float = 1e-6
) -> None:
    """``jvp`` of ``f`` against a central difference of its (scalarized) value."""
    rng = np.random.default_rng(seed)
    ts = _directions(rng, args)
    value, tangent = ad.jvp(f, tuple(args), tuple(tfr.asarray(t) for t in ts))
    fd = (float(f(*_shifted(args, ts, h))) - float(f(*_shifted(args, ts, -h)))) / (2 * h)
    scale = max(1.0, abs(fd), abs(float(value)))
    assert abs(fd - float(tangent)) <= rtol * scale, (fd, float(tangent))
