"""Storage benchmarks: adopting and returning a buffer costs O(1), not O(n)."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .harness import CaseResult, Target, time_case

__all__ = ["run"]


def run(quick: bool = False) -> list[CaseResult]:
    nbytes = (64 if quick else 1024) * 2**20
    n = nbytes // 8
    data = np.ones(n)
    holder = [data]

    def adopt_and_return() -> None:
        t = Tensor.from_vec_col_major((n,), holder[0])
        _, holder[0] = t.into_vec_col_major()

    def numpy_copy() -> None:
        np.copy(holder[0])

    label = f"adopt+return {nbytes >> 20} MiB f64"
    return [
        time_case(
            label,
            [("tenferro", adopt_and_return, 50), ("np.copy", numpy_copy, 1)],
            group="storage",
            size=n,
            repeats=5 if quick else 9,
            warmup=1,
            targets=[Target("tenferro", "np.copy", 0.01)],
        )
    ]
