"""Engine benchmarks: one case per target of issue 3, side by side in one process.

Every case times tenferro and its baseline on the same arrays (the numpy arrays
are read-only views of the tensors' own memory), interleaved, and reports
medians and the ratio tenferro / baseline against its target:

* ``matmul 64x64 f64``: ``eng.matmul`` <= 1.15x ``np.matmul``;
* ``add 4096 f64``: ``eng.add`` <= 2x ``np.add``;
* ``steady-state add 4M f64``: a loop of ``eng.add`` on 32 MiB operands with the
  outputs dropped, >= 1.5x faster than ``np.add`` allocating fresh outputs, with
  no allocation after the first iteration (``extra``: misses, hit rate);
* ``fusion exp(a + b) * c 4M f64``: ``eng.evaluate`` >= 1.8x faster than numpy;
* ``einsum networks``: the total over nine tensor-network contractions <= 1.1x
  ``opt_einsum.contract`` and below ``np.einsum(optimize=True)``.

Outputs are dropped inside each timed call, so tenferro's time includes
handing the buffer back to the pool, and numpy's includes freeing its array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor import Tensor, from_numpy
from .harness import CaseResult, Target, time_case

__all__ = ["NETWORKS", "run"]

Array = np.ndarray[Any, Any]


def _tensor(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Tensor, Array]:
    """A random F64 tensor and a read-only numpy view of the same memory."""
    t = from_numpy(np.asfortranarray(rng.random(shape)))
    return t, t.to_numpy()


#: (name, subscripts, shapes at full size, shapes in quick mode)
NETWORKS: list[tuple[str, str, list[tuple[int, ...]], list[tuple[int, ...]]]] = [
    (
        "matrix chain",
        "ab,bc,cd,de->ae",
        [(300, 200), (200, 400), (400, 100), (100, 300)],
        [(60, 40), (40, 80), (80, 20), (20, 60)],
    ),
    (
        "MPS environment",
        "ab,asc,bsd->cd",
        [(96, 96), (96, 4, 96), (96, 4, 96)],
        [(24, 24), (24, 4, 24), (24, 4, 24)],
    ),
    (
        "MPO environment",
        "abc,asd,bste,ctf->def",
        # np.einsum(optimize=True) takes ~0.2 s here (5 s at bond 48): kept small.
        [(32, 4, 32), (32, 2, 32), (4, 2, 2, 4), (32, 2, 32)],
        [(12, 4, 12), (12, 2, 12), (4, 2, 2, 4), (12, 2, 12)],
    ),
    (
        "batched matmul (trailing batch)",
        "ijb,jkb->ikb",
        [(64, 64, 48), (64, 64, 48)],
        [(16, 16, 8), (16, 16, 8)],
    ),
    ("partial trace", "ijjk->ik", [(40, 40, 40, 40)], [(10, 10, 10, 10)]),
    ("outer product", "i,j->ij", [(1200,), (1000,)], [(120,), (100,)]),
    ("3rd-order x matrix", "abc,cd->abd", [(64, 64, 64), (64, 96)], [(16, 16, 16), (16, 24)]),
    (
        "4th-order pair",
        "abcd,cdef->abef",
        [(20, 20, 20, 20), (20, 20, 20, 20)],
        [(6, 6, 6, 6), (6, 6, 6, 6)],
    ),
    ("triangle trace", "ij,jk,ki->", [(300, 300)] * 3, [(40, 40)] * 3),
]


def run(quick: bool = False) -> list[CaseResult]:
    """Run every engine case; ``quick`` uses small sizes (a smoke run, ratios noisy)."""
    import opt_einsum

    from ..engine import CpuEngine

    rng = np.random.default_rng(0)
    results: list[CaseResult] = []
    reps = 5 if quick else 15

    # -- main line: matmul 64x64 -------------------------------------------------------
    eng = CpuEngine()
    a, a_np = _tensor(rng, (64, 64))
    b, b_np = _tensor(rng, (64, 64))
    results.append(
        time_case(
            "matmul 64x64 f64",
            [("tenferro", lambda: eng.matmul(a, b)), ("np.matmul", lambda: np.matmul(a_np, b_np))],
            group="engine",
            size=64,
            repeats=reps,
            inner=20 if quick else 200,
            targets=[Target("tenferro", "np.matmul", 1.15)],
        )
    )

    # -- main line: add 4096 -----------------------------------------------------------
    x, x_np = _tensor(rng, (4096,))
    y, y_np = _tensor(rng, (4096,))
    results.append(
        time_case(
            "add 4096 f64",
            [("tenferro", lambda: eng.add(x, y)), ("np.add", lambda: np.add(x_np, y_np))],
            group="engine",
            size=4096,
            repeats=reps,
            inner=100 if quick else 2000,
            targets=[Target("tenferro", "np.add", 2.0)],
        )
    )

    # -- steady state: 4M-element add, outputs dropped -----------------------------------
    # The sizes even in quick mode: a smaller operand would fit numpy's
    # allocator caches and hide what the case is about (fresh 32 MiB outputs).
    n = 1 << 22
    big_a, big_a_np = _tensor(rng, (n,))
    big_b, big_b_np = _tensor(rng, (n,))
    steady = CpuEngine()
    steady.add(big_a, big_b)  # the first iteration: the only allocation
    first = steady.buffer_pool_cache_stats()
    case = time_case(
        f"steady-state add {n} f64 ({n * 8 >> 20} MiB), outputs dropped",
        [
            ("tenferro", lambda: steady.add(big_a, big_b)),
            ("np.add", lambda: np.add(big_a_np, big_b_np)),
        ],
        group="engine",
        size=n,
        repeats=reps,
        inner=1 if quick else 3,
        targets=[Target("tenferro", "np.add", 1 / 1.5)],
    )
    after = steady.buffer_pool_cache_stats()
    calls = after.hits + after.misses - first.hits - first.misses
    case.extra["new_allocations_after_first"] = after.misses - first.misses
    case.extra["hit_rate_after_first"] = (after.hits - first.hits) / calls if calls else 1.0
    results.append(case)

    # -- fusion ------------------------------------------------------------------------
    c, c_np = _tensor(rng, (n,))
    fused = CpuEngine()
    results.append(
        time_case(
            f"fusion exp(a + b) * c, {n} f64",
            [
                ("tenferro", lambda: fused.evaluate("exp(a + b) * c", a=big_a, b=big_b, c=c)),
                ("numpy", lambda: np.exp(big_a_np + big_b_np) * c_np),
            ],
            group="engine",
            size=n,
            repeats=reps,
            inner=1,
            targets=[Target("tenferro", "numpy", 1 / 1.8)],
        )
    )

    # -- einsum networks ---------------------------------------------------------------
    ein = CpuEngine()
    nets = []
    for name, subs, full, small in NETWORKS:
        pairs = [_tensor(rng, s) for s in (small if quick else full)]
        nets.append((name, subs, [p[0] for p in pairs], [p[1] for p in pairs]))

    def run_all(fn: Callable[[str, list[Any], list[Array]], Any]) -> Callable[[], None]:
        def go() -> None:
            for _, subs, ts, arrs in nets:
                fn(subs, ts, arrs)

        return go

    contenders = [
        ("tenferro", run_all(lambda s, ts, arrs: ein.einsum(s, *ts))),
        ("opt_einsum", run_all(lambda s, ts, arrs: opt_einsum.contract(s, *arrs))),
        ("np.einsum", run_all(lambda s, ts, arrs: np.einsum(s, *arrs, optimize=True))),
    ]
    case = time_case(
        f"einsum: {len(nets)} tensor networks, total",
        contenders,
        group="engine",
        size=len(nets),
        repeats=reps,
        inner=1,
        targets=[
            Target("tenferro", "opt_einsum", 1.1),
            Target("tenferro", "np.einsum", 1.0),
        ],
    )
    per_net = {}
    for name, subs, ts, arrs in nets:
        sub = time_case(
            f"einsum {name}",
            [
                ("tenferro", lambda s=subs, t=ts: ein.einsum(s, *t)),
                ("opt_einsum", lambda s=subs, a=arrs: opt_einsum.contract(s, *a)),
            ],
            group="engine-einsum-detail",
            repeats=3 if quick else 7,
        )
        per_net[name] = round(sub.ratio("tenferro", "opt_einsum"), 3)
    case.extra["ratio_to_opt_einsum_per_network"] = per_net
    results.append(case)
    return results
