"""Issue 12's fusion and large-output rows for two revisions of tenferro, in one run.

Usage::

    git archive <old-commit> src | tar -x -C /tmp/old
    python benchmarks/bench_fusion_revisions.py /tmp/old/src src [--rounds 3] [--no-64m]

Each round starts one worker process per revision (alternating which goes
first). A worker times, on the same memory and interleaved:

* ``eng.evaluate`` (default engine and ``backend="auto"``) against eager numpy
  and ``numexpr.evaluate`` for chains of 2, 4 and 6 operations and ``exp(a + b)
  * c``, at 1K, 64K, 1M, 16M and 64M elements (F64);
* a steady-state loop of ``eng.add`` on 64 MiB and 256 MiB operands (the output
  dropped each iteration, default settings) against ``np.add`` allocating fresh;
* the pool's mixed workload (`tenferro.bench.pool.mixed_workload`, in a fresh
  process each): peak RSS against numpy's and the pool's hit rate.

The report gives, per row and revision, the median over the rounds of each
ratio (tenferro / numpy, tenferro / numexpr). The machine's noise hits both
revisions alike; read the ratios, not the absolute times.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
from collections.abc import Callable
from typing import Any

from _revisions import alternate, median_ratio, median_time, shown

EXPRESSIONS: dict[str, tuple[str, Callable[[Any, Any, Any], Any]]] = {
    "2 ops": ("a * b + c", lambda a, b, c: a * b + c),
    "4 ops": ("(a * b + c) * a - b", lambda a, b, c: (a * b + c) * a - b),
    "6 ops": ("((a * b + c) * a - b) * c + a", lambda a, b, c: ((a * b + c) * a - b) * c + a),
    "exp chain": ("exp(a + b) * c", lambda a, b, c: __import__("numpy").exp(a + b) * c),
}
SIZES = {"1K": 1 << 10, "64K": 1 << 16, "1M": 1 << 20, "16M": 1 << 24, "64M": 1 << 26}
STEADY = {"64 MiB": 64, "256 MiB": 256}


def _evaluate_rows(eng: Any, rng: Any, size: str) -> dict[str, dict[str, float]]:
    """Every expression at one size: tenferro, eager numpy and numexpr."""
    import numexpr

    import tenferro as tfr

    n = SIZES[size]
    ts = [tfr.from_numpy(rng.random(n)) for _ in range(3)]
    a, b, c = ts
    an, bn, cn = (t.to_numpy() for t in ts)
    local = {"a": an, "b": bn, "c": cn}
    inner = max(1, (1 << 20) // n)
    reps = 5 if n >= 1 << 24 else 11
    out = {}
    for label, (expr, eager) in EXPRESSIONS.items():
        out[f"evaluate {label} {size}"] = median_time(
            {
                "tenferro": lambda e=expr: eng.evaluate(e, a=a, b=b, c=c),
                "numpy": lambda f=eager: f(an, bn, cn),
                "numexpr": lambda e=expr: numexpr.evaluate(e, local_dict=local),
            },
            reps,
            inner,
        )
    return out


def _steady_row(eng: Any, rng: Any, mib: int) -> dict[str, float]:
    """A steady-state ``eng.add`` loop (outputs dropped) against ``np.add`` allocating."""
    import numpy as np

    import tenferro as tfr

    n = mib * 2**20 // 8
    a, b = tfr.from_numpy(rng.random(n)), tfr.from_numpy(rng.random(n))
    an, bn = a.to_numpy(), b.to_numpy()
    return median_time({"tenferro": lambda: eng.add(a, b), "numpy": lambda: np.add(an, bn)}, 7, 1)


def worker(sizes: list[str]) -> dict[str, dict[str, float]]:
    """Time every row with the tenferro on sys.path (run in a child process)."""
    import numpy as np

    import tenferro as tfr
    from tenferro.bench.pool import _in_child

    eng = tfr.CpuEngine()  # default settings, as a user gets them
    rng = np.random.default_rng(0)
    out: dict[str, dict[str, float]] = {}
    for size in sizes:
        out.update(_evaluate_rows(eng, rng, size))
        gc.collect()
    for label, mib in STEADY.items():
        out[f"steady add {label}"] = _steady_row(eng, rng, mib)
        eng.reset_buffer_pool()
        gc.collect()
    tf = _in_child("tenferro")
    npr = _in_child("numpy")
    mixed = {"hit_rate": tf["hit_rate"], "tenferro": tf["wall_s"], "numpy": npr["wall_s"]}
    if "peak_added_bytes" in tf and "peak_added_bytes" in npr:
        mixed["peak_ratio"] = tf["peak_added_bytes"] / npr["peak_added_bytes"]
    out["pool mixed workload"] = mixed
    return out


def main(argv: list[str]) -> int:
    sizes = list(SIZES)
    if "--no-64m" in argv:
        sizes.remove("64M")
    if argv and argv[0] == "--worker":
        print(json.dumps(worker(sizes)))
        return 0
    old, new = argv[0], argv[1]
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    extra = ["--no-64m"] if "--no-64m" in argv else []
    runs = alternate(__file__, old, new, rounds, extra)
    rows = list(runs["after"][0])
    print(f"{'row':28s} {'':6s} {'tenferro':>10s} {'/numpy':>8s} {'/numexpr':>9s} {'other':>24s}")
    for row in rows:
        for label in ("before", "after"):
            per = runs[label]
            if row not in per[0]:
                continue
            tf = statistics.median(x[row]["tenferro"] for x in per)
            vs_np = median_ratio(per, row, "numpy")
            vs_ne = median_ratio(per, row, "numexpr")
            other = ""
            if "hit_rate" in per[0][row]:
                hit = statistics.median(x[row]["hit_rate"] for x in per)
                peak = statistics.median(x[row].get("peak_ratio", float("nan")) for x in per)
                other = f"RSS/numpy {peak:.2f} hit {hit:.3f}"
            first = row if label == "before" else ""
            print(f"{first:28s} {label:6s} {shown(tf):>10s} {vs_np:>8s} {vs_ne:>9s} {other:>24s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
