"""Size sweeps for the plot: engine time against numpy's over a range of sizes."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .harness import CaseResult, time_case

__all__ = ["run"]


def run(quick: bool = False) -> list[CaseResult]:
    from ..engine import CpuEngine

    eng = CpuEngine()
    results: list[CaseResult] = []
    add_sizes = [2**k for k in (range(10, 23, 4) if quick else range(10, 23, 2))]
    for n in add_sizes:
        a_np = np.random.default_rng(0).random(n)
        b_np = np.random.default_rng(1).random(n)
        a = Tensor.from_vec_col_major((n,), a_np.copy())
        b = Tensor.from_vec_col_major((n,), b_np.copy())
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
        a_np = np.asfortranarray(np.random.default_rng(2).random((m, m)))
        b_np = np.asfortranarray(np.random.default_rng(3).random((m, m)))
        a = Tensor.from_vec_col_major((m, m), a_np.reshape(-1, order="F").copy())
        b = Tensor.from_vec_col_major((m, m), b_np.reshape(-1, order="F").copy())
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
