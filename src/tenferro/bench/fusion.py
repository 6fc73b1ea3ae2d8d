"""``evaluate`` against eager numpy and numexpr, from 1K to 16M elements (64M in full).

Each case times ``eng.evaluate`` (default ``backend="auto"``), the same
expression in eager numpy (temporaries and all) and ``numexpr.evaluate``, side by
side on the same memory. Targets: never slower than eager numpy; at least 2x
faster for chains of 4+ operations from 16M elements.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .engine import _tensor
from .harness import CaseResult, Target, time_case

__all__ = ["EXPRESSIONS", "run"]

Array = np.ndarray[Any, Any]

#: (label, expression, its numpy spelling, number of operations)
EXPRESSIONS: list[tuple[str, str, Callable[[Array, Array, Array], Array], int]] = [
    ("2 ops", "a * b + c", lambda a, b, c: a * b + c, 2),
    ("4 ops", "(a * b + c) * a - b", lambda a, b, c: (a * b + c) * a - b, 4),
    ("6 ops", "((a * b + c) * a - b) * c + a", lambda a, b, c: ((a * b + c) * a - b) * c + a, 6),
    ("exp chain", "exp(a + b) * c", lambda a, b, c: np.exp(a + b) * c, 3),
]


def _cases_at(eng: Any, rng: np.random.Generator, n: int, quick: bool) -> list[CaseResult]:
    """Every expression at ``n`` elements."""
    import numexpr

    (a, an), (b, bn), (c, cn) = (_tensor(rng, (n,)) for _ in range(3))
    names = {"a": an, "b": bn, "c": cn}
    inner = max(1, (1 << 14 if quick else 1 << 18) // n)
    reps = 3 if n >= 1 << 24 else (5 if quick else 11)
    results: list[CaseResult] = []
    for label, expr, eager, ops in EXPRESSIONS:
        targets = [Target("tenferro", "numpy", 1.0)]
        if ops >= 4 and n >= 1 << 24:
            targets.append(Target("tenferro", "numpy", 0.5))
        results.append(
            time_case(
                f"evaluate {label} '{expr}', {n} f64",
                [
                    ("tenferro", partial(eng.evaluate, expr, a=a, b=b, c=c)),
                    ("numpy", partial(eager, an, bn, cn)),
                    ("numexpr", partial(numexpr.evaluate, expr, local_dict=names)),
                ],
                group="fusion",
                size=n,
                repeats=reps,
                inner=inner,
                targets=targets,
            )
        )
    return results


def run(quick: bool = False) -> list[CaseResult]:
    """Every expression at every size; ``quick``: 1K, 64K and 1M only."""
    from ..engine import CpuEngine

    eng = CpuEngine()
    rng = np.random.default_rng(0)
    sizes = [1 << 10, 1 << 16, 1 << 20] if quick else [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26]
    results: list[CaseResult] = []
    for n in sizes:
        results += _cases_at(eng, rng, n, quick)
    return results
