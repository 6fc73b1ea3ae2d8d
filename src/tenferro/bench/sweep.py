"""Size sweeps for the plot: engine time against numpy's over a range of sizes."""

from __future__ import annotations

import numpy as np

from .engine import _tensor
from .harness import CaseResult, time_case

__all__ = ["run"]


def run(quick: bool = False) -> list[CaseResult]:
    from ..engine import CpuEngine

    eng = CpuEngine()
    rng = np.random.default_rng(0)
    results: list[CaseResult] = []
    add_sizes = [2**k for k in (range(10, 23, 4) if quick else range(10, 23, 2))]
    for n in add_sizes:
        a, a_np = _tensor(rng, (n,))
        b, b_np = _tensor(rng, (n,))
        results.append(
            time_case(
                f"add n={n}",
                [
                    ("tenferro", lambda a=a, b=b: eng.add(a, b)),
                    ("numpy", lambda x=a_np, y=b_np: np.add(x, y)),
                ],
                group="sweep: add f64",
                size=n,
                repeats=5 if quick else 11,
                inner=max(1, 2**16 // n),
            )
        )
    for m in [16, 64, 256] if quick else [16, 32, 64, 128, 256, 512]:
        a, a_np = _tensor(rng, (m, m))
        b, b_np = _tensor(rng, (m, m))
        results.append(
            time_case(
                f"matmul {m}x{m}",
                [
                    ("tenferro", lambda a=a, b=b: eng.matmul(a, b)),
                    ("numpy", lambda x=a_np, y=b_np: np.matmul(x, y)),
                ],
                group="sweep: matmul f64",
                size=m,
                repeats=5 if quick else 11,
                inner=max(1, 2**18 // (m * m * m) + 1),
            )
        )
    return results
