"""Distributed benchmark: a sliced lattice contraction on a Dask LocalCluster.

One 2D lattice network (a partition-function-like scalar) whose unsliced
contraction needs more memory than the budget, so cotengra slices it; both
contenders follow the very same sliced tree on the same cluster:

* ``tenferro``: `tenferro.distributed.contract` (operands to each worker once,
  slice groups on each worker's pooled engine, pairwise sums on the workers);
* ``cotengra+dask``: the hand-written loop users write today,
  ``client.submit(tree.contract_slice, arrays, i)`` for every slice, then one
  task summing the results (every task carries the operands).

A second case times `contract` on a 1-worker and a 2-worker cluster (the
speed-up; the machine has few cores and may be shared, so read it as such).
Each worker's peak memory growth during one run (``tracemalloc``: numpy's
buffers included; the engine's pool emptied first, so tenferro pays for its
working set too) is measured in one separate run per contender and printed
next to the timings. Needs the ``distributed`` extra.
"""

from __future__ import annotations

import os
import tracemalloc
import warnings
from typing import Any

import numpy as np

from .harness import CaseResult, Target, time_case

__all__ = ["lattice", "run"]


def lattice(side: int, bond: int, seed: int = 1) -> tuple[str, list[np.ndarray[Any, Any]]]:
    """A ``side`` x ``side`` lattice network with bond dimension ``bond``: (eq, F arrays)."""
    import cotengra as ctg

    inputs, output, shapes, _ = ctg.utils.lattice_equation(
        [side, side], d_min=bond, d_max=bond, seed=seed
    )
    eq = ",".join("".join(t) for t in inputs) + "->" + "".join(output)
    rng = np.random.default_rng(seed)
    # Positive entries: no cancellation between slices, so a relative tolerance is meaningful.
    return eq, [np.asarray(rng.uniform(0.0, 2.0 / bond, s), order="F") for s in shapes]


def _trace_start() -> None:
    if not tracemalloc.is_tracing():
        tracemalloc.start()


def _trace_reset(dask_worker: Any = None) -> int:
    """Empty the tenferro engine's pool, restart the peak; returns the traced bytes now.

    The pool is emptied so that a measured run pays for its working set like the
    hand-written loop does, instead of reusing buffers kept from an earlier run.
    """
    plugin = getattr(dask_worker, "plugins", {}).get("tenferro-engine")
    if plugin is not None and getattr(plugin, "engine", None) is not None:
        plugin.engine.reset_buffer_pool()
    tracemalloc.reset_peak()
    return int(tracemalloc.get_traced_memory()[0])


def _trace_peak() -> int:
    return int(tracemalloc.get_traced_memory()[1])


def _peak_per_worker(client: Any, fn: Any) -> int:
    """The largest growth of any worker's traced memory during one call of ``fn``."""
    base = client.run(_trace_reset)
    fn()
    peaks = client.run(_trace_peak)
    return int(max(peaks[addr] - base[addr] for addr in peaks))


def _spin(n: int) -> int:
    """Pure-Python work that holds one core (the cluster's parallel-capacity probe)."""
    x = 0
    for i in range(n):
        x += i
    return x


def _parallel_efficiency(client: Any, n: int) -> float:
    """Two workers' throughput on independent work over one worker's (2.0: two free cores)."""
    import time

    from distributed import wait

    t0 = time.perf_counter()
    client.submit(_spin, n, pure=False).result()
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    wait([client.submit(_spin, n, pure=False) for _ in range(2)])  # type: ignore[no-untyped-call]
    two = time.perf_counter() - t0
    return 2 * one / two


def run(quick: bool = False, bond: int | None = None) -> list[CaseResult]:
    """The two cases; ``bond`` overrides the lattice's bond dimension (10, quick: 8)."""
    try:
        import distributed
    except ModuleNotFoundError:
        return []  # the distributed extra is not installed
    import tenferro as tfr
    from tenferro.distributed import contract, sliced_tree

    side, default_bond, fraction = (4, 8, 8) if quick else (4, 10, 4)
    bond = bond or default_bond
    eq, arrays = lattice(side, bond)
    operands = [tfr.from_numpy(a.copy(order="F")) for a in arrays]
    whole = sliced_tree(eq, *operands, memory_budget=1 << 40).max_size() * 8
    budget = whole // fraction
    tree = sliced_tree(eq, *operands, memory_budget=budget)
    # cotengra's own contraction along the tree (np.einsum's greedy path can need
    # far more memory and time on lattices).
    expected = float(tree.contract(arrays))
    repeats = 3 if quick else 5

    results = []
    opts = dict(threads_per_worker=1, processes=True, dashboard_address=None)
    with (
        warnings.catch_warnings(),
        distributed.LocalCluster(n_workers=2, **opts) as cluster2,  # type: ignore[no-untyped-call]
        distributed.Client(cluster2) as c2,  # type: ignore[no-untyped-call]
        distributed.LocalCluster(n_workers=1, **opts) as cluster1,  # type: ignore[no-untyped-call]
        distributed.Client(cluster1) as c1,  # type: ignore[no-untyped-call]
    ):
        # The hand-written loop puts the operands into every task: Dask warns.
        warnings.simplefilter("ignore")
        for c in (c1, c2):
            c.run(_trace_start)

        def ours(client: Any) -> Any:
            def go() -> None:
                t = contract(eq, *operands, client=client, optimize=tree, progress=False)
                if not np.isclose(float(t.to_numpy()), expected, rtol=1e-9):
                    raise AssertionError("tenferro.distributed.contract: wrong value")

            return go

        def theirs() -> None:
            futures = [
                c2.submit(tree.contract_slice, arrays, i, pure=False) for i in range(tree.nslices)
            ]
            total = c2.submit(sum, futures, pure=False).result()
            if not np.isclose(float(total), expected, rtol=1e-9):
                raise AssertionError("cotengra + dask loop: wrong value")

        # Memory first (one run each, after a warm-up run), then the interleaved timings.
        ours(c2)()
        theirs()
        peak_ours = _peak_per_worker(c2, ours(c2))
        peak_theirs = _peak_per_worker(c2, theirs)
        for c in (c1, c2):
            c.run(tracemalloc.stop)
        _, report = contract(
            eq, *operands, client=c2, optimize=tree, progress=False, return_report=True
        )
        name = f"{side}x{side} lattice, bond {bond}: {tree.nslices} slices, budget {budget} B"
        r = time_case(
            f"{name}, 2 workers",
            [("tenferro", ours(c2)), ("cotengra+dask", theirs)],
            group="distributed",
            size=tree.nslices,
            repeats=repeats,
            warmup=1,
            targets=[Target("tenferro", "cotengra+dask", 1.0)],
        )
        r.extra.update(
            peak_worker_bytes={"tenferro": peak_ours, "cotengra+dask": peak_theirs},
            bytes_sent={
                "tenferro": report.bytes_sent_to_workers,
                "cotengra+dask": tree.nslices * sum(a.nbytes for a in arrays),
            },
            unsliced_bytes=whole,
            budget_bytes=budget,
            transport=report.transport,
            cpus=os.cpu_count(),
        )
        results.append(r)
        efficiency = _parallel_efficiency(c2, 2_000_000)
        results.append(
            time_case(
                f"{name}, tenferro on 2 workers vs 1 (probe: 2 workers run independent "
                f"work {efficiency:.2f}x as fast as 1 on this machine now)",
                [("2 workers", ours(c2)), ("1 worker", ours(c1))],
                group="distributed",
                size=tree.nslices,
                repeats=repeats,
                warmup=1,
                targets=[Target("2 workers", "1 worker", 0.75)],
            )
        )
    return results
