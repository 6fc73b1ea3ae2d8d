"""Namespace benchmarks: ``tenferro.add`` & co. against numpy and the engine method.

Each case times, side by side and interleaved on the same memory, the array
API function (``tenferro.add(a, b)``), the engine method it stands on
(``eng.add(a, b)``; for ``getitem`` the view API, ``as_view().slice_view``)
and numpy on read-only views of the same buffers, at 16, 4096 and 1M
elements (``matmul``: square matrices of about that many elements). Reported:
ratios to numpy, and ``overhead_us``, the namespace layer's cost per call over
the engine method (target: at most 0.3 µs, checked on the 16-element cases,
where it is not hidden by the kernel).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .harness import CaseResult, Target, time_case

__all__ = ["run"]

SIZES = (16, 4096, 1 << 20)
QUICK_SIZES = (16, 4096)
OVERHEAD_TARGET_S = 0.3e-6


def _cases(tfr: Any, eng: Any, n: int, rng: np.random.Generator) -> list[tuple[str, Any]]:
    a_np = np.asfortranarray(rng.random(n))
    b_np = np.asfortranarray(rng.random(n))
    a = tfr.asarray(a_np)  # adopts: numpy and tenferro read the same memory
    b = tfr.asarray(b_np)
    side = max(1, math.isqrt(n))
    m_np = np.asfortranarray(rng.random((side, side)))
    m = tfr.asarray(m_np)
    a_ro, b_ro, m_ro = np.asarray(a), np.asarray(b), np.asarray(m)
    return [
        ("add", (lambda: tfr.add(a, b), lambda: eng.add(a, b), lambda: np.add(a_ro, b_ro))),
        (
            "multiply",
            (lambda: tfr.multiply(a, b), lambda: eng.mul(a, b), lambda: np.multiply(a_ro, b_ro)),
        ),
        ("exp", (lambda: tfr.exp(a), lambda: eng.exp(a), lambda: np.exp(a_ro))),
        ("sum", (lambda: tfr.sum(a), lambda: eng.reduce_sum(a, (0,)), lambda: np.sum(a_ro))),
        (
            f"matmul {side}x{side}",
            (lambda: tfr.matmul(m, m), lambda: eng.matmul(m, m), lambda: np.matmul(m_ro, m_ro)),
        ),
        (
            "getitem [1:]",
            (lambda: a[1:], lambda: a.as_view().slice_view(slice(1, None)), lambda: a_ro[1:]),
        ),
    ]


def run(quick: bool = False) -> list[CaseResult]:
    """Time every case at every size; ``quick`` skips the 1M size (ratios noisy)."""
    import tenferro as tfr

    from ..engine import default_engine

    eng = default_engine()
    rng = np.random.default_rng(0)
    results: list[CaseResult] = []
    for n in QUICK_SIZES if quick else SIZES:
        for name, (ns, engine, numpy) in _cases(tfr, eng, n, rng):
            heavy = n >= (1 << 20)
            inner = 2 if heavy else (50 if quick else 500)
            if name.startswith("matmul") and heavy:
                inner = 1
            fns: list[tuple[str, Callable[[], Any]]] = [
                ("tenferro", ns),
                ("engine", engine),
                ("numpy", numpy),
            ]
            case = time_case(
                f"namespace {name}, {n} f64",
                fns,
                group="namespace",
                size=n,
                repeats=5 if quick or heavy else 11,
                inner=inner,
            )
            engine_s = case.medians["engine"]
            if n == 16 and engine_s > 0:
                # "at most 0.3 µs over the engine method", as the ratio it allows here.
                case.targets.append(
                    Target("tenferro", "engine", (engine_s + OVERHEAD_TARGET_S) / engine_s)
                )
            overhead = case.medians["tenferro"] - engine_s
            case.extra["overhead_us"] = overhead * 1e6
            case.extra["overhead_target_us"] = OVERHEAD_TARGET_S * 1e6
            case.extra["ratio_to_numpy"] = case.ratio("tenferro", "numpy")
            results.append(case)
    return results
