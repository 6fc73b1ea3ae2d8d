"""Alternating worker processes of two tenferro revisions (the revisions benchmarks).

Each round starts one worker per revision, swapping which goes first every
round, so the machine's drift hits both alike. A worker is this same script run
with ``--worker`` and the revision's ``src`` first on ``PYTHONPATH``; it prints
one JSON object (row -> contender -> seconds) as its last line.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["alternate", "median_ratio", "median_time", "shown"]

Runs = dict[str, list[dict[str, dict[str, float]]]]


def alternate(script: str, old: str, new: str, rounds: int, worker_args: list[str]) -> Runs:
    """Run ``rounds`` rounds of ``script --worker *worker_args`` on ``old`` and ``new``."""
    runs: Runs = {"before": [], "after": []}
    for r in range(rounds):
        order = [("before", old), ("after", new)]
        for label, src in order if r % 2 == 0 else reversed(order):
            env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
            proc = subprocess.run(
                [sys.executable, script, "--worker", *worker_args],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            runs[label].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1}/{rounds}: {label} done", file=sys.stderr, flush=True)
    return runs


def median_ratio(per_round: list[dict[str, dict[str, float]]], row: str, other: str) -> str:
    """The median over rounds of tenferro's time over ``other``'s in ``row``, or "-"."""
    if other not in per_round[0][row]:
        return "-"
    return f"{statistics.median(x[row]['tenferro'] / x[row][other] for x in per_round):.2f}"


def shown(seconds: float) -> str:
    """A time in µs below a millisecond, else in ms."""
    return f"{seconds * 1e6:.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def median_time(fns: dict[str, Callable[[], Any]], reps: int, inner: int) -> dict[str, float]:
    """Each callable's median seconds per call: two warm-up calls each, then ``reps``
    samples of ``inner`` calls, the contenders interleaved (the order reversed every
    other sample), with the garbage collector off as timeit and
    tenferro.bench.harness run (a full collection of torch's large heap would land
    on whichever contender allocates tracked objects)."""
    for f in fns.values():
        f()
        f()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    gc.collect()
    gc.disable()
    try:
        for rep in range(reps):
            order = list(fns.items()) if rep % 2 == 0 else list(reversed(fns.items()))
            for k, f in order:
                t0 = time.perf_counter()
                for _ in range(inner):
                    f()
                samples[k].append((time.perf_counter() - t0) / inner)
    finally:
        gc.enable()
    return {k: statistics.median(v) for k, v in samples.items()}
