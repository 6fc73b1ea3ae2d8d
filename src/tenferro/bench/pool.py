"""The pool under load: a mixed workload's peak memory and hit rate, and 256 MiB outputs.

* ``pool: mixed workload``: 2,000 outputs from 1 KiB to 64 MiB (1,000 steps, each
  ``exp`` of a prefix of a 64 MiB operand, then a full ``reduce_sum`` of that,
  the last two ``exp`` outputs and the last eight sums kept alive), run once
  with tenferro and once with numpy, each in a fresh process. ``extra`` holds
  the peak resident memory each run added (Linux ``VmHWM``, reset after the
  setup), their ratio, and the pool's hit rate. The medians are the runs' wall
  times (one run each: this case is about memory, not speed).
* ``pool: steady-state add of 64 / 256 MiB operands``: ``eng.add`` with the
  default cap (outputs dropped, and into one ``out=``) against ``np.add``
  allocating fresh outputs, and the bytes the pool then retains next to its cap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import numpy as np

from .engine import _tensor
from .harness import CaseResult, Target, time_case

__all__ = ["mixed_workload", "run"]

MIB = 2**20
#: The mixed workload: sizes (elements) from 1 KiB to 64 MiB of F64.
SMALLEST, LARGEST = 128, 8 * MIB
STEPS = 1000
DISTINCT_SIZES = 12


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset this process's peak RSS (Linux: ``clear_refs`` 5); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def mixed_workload(kind: str) -> dict[str, Any]:
    """Run the mixed workload with ``kind`` ("tenferro" or "numpy") in this process."""
    rng = np.random.default_rng(0)
    sizes = np.unique(
        np.exp(rng.uniform(np.log(SMALLEST), np.log(LARGEST), DISTINCT_SIZES)).astype(int)
    )
    sizes[-1] = LARGEST
    order = rng.choice(sizes, STEPS)
    x_np = np.asfortranarray(rng.random(LARGEST))
    eng: Any = None
    if kind == "tenferro":
        from ..engine import CpuEngine
        from ..tensor import from_numpy

        eng = CpuEngine()
        view = from_numpy(x_np).as_view()
        prefixes = {int(n): view.slice_view(slice(0, int(n))) for n in sizes}
    start_kib = _status_kib("VmRSS")
    supported = _reset_peak() and start_kib is not None
    kept: list[Any] = []
    sums: list[Any] = []
    t0 = time.perf_counter()
    for n in order:
        n = int(n)
        if kind == "tenferro":
            y = eng.exp(prefixes[n])
            s = eng.reduce_sum(y)
        else:
            y = np.exp(x_np[:n])
            s = np.sum(y)
        kept = [*kept[-1:], y]
        sums = [*sums[-7:], s]
        del y, s
    wall = time.perf_counter() - t0
    peak_kib = _status_kib("VmHWM")
    result: dict[str, Any] = {"wall_s": wall, "outputs": 2 * STEPS}
    if supported and peak_kib is not None and start_kib is not None:
        result["peak_added_bytes"] = (peak_kib - start_kib) * 1024
    if eng is not None:
        stats = eng.buffer_pool_cache_stats()
        result["hit_rate"] = stats.hit_rate
        result["misses"] = stats.misses
    return result


def _in_child(kind: str) -> dict[str, Any]:
    code = (
        "import json; from tenferro.bench.pool import mixed_workload as w; "
        f"print(json.dumps(w({kind!r})))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    loaded: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def run(quick: bool = False) -> list[CaseResult]:
    """The mixed workload (two child processes) and the 64 and 256 MiB steady-state loops."""
    from ..engine import CpuEngine

    results: list[CaseResult] = []
    tf = _in_child("tenferro")
    npr = _in_child("numpy")
    mixed = CaseResult(
        f"pool: mixed workload, {tf['outputs']} outputs of 1 KiB-64 MiB",
        "pool",
        tf["outputs"],
        {"tenferro": tf["wall_s"], "numpy": npr["wall_s"]},
    )
    mixed.extra["hit_rate"] = round(tf["hit_rate"], 4)
    if "peak_added_bytes" in tf and "peak_added_bytes" in npr:
        mixed.extra["peak_added_mib"] = {
            "tenferro": round(tf["peak_added_bytes"] / MIB, 1),
            "numpy": round(npr["peak_added_bytes"] / MIB, 1),
        }
        mixed.extra["peak_ratio"] = round(tf["peak_added_bytes"] / npr["peak_added_bytes"], 3)
        mixed.extra["note"] = (
            f"peak RSS {mixed.extra['peak_ratio']:.2f}x numpy's (target <= 1.1), "
            f"hit rate {tf['hit_rate']:.3f} (target >= 0.9)"
        )
    results.append(mixed)

    # -- large outputs: 64 and 256 MiB operands with the default cap ------------------
    eng = CpuEngine()  # default settings: the cap is the machine's share
    rng = np.random.default_rng(1)
    for mib in (64, 256):
        n = mib * MIB // 8
        a, a_np = _tensor(rng, (n,))
        b, b_np = _tensor(rng, (n,))
        out = eng.add(a, b)  # out= writes here, every iteration
        eng.add(a, b)  # the first dropped output: the loop's only allocation
        first = eng.buffer_pool_cache_stats()
        case = time_case(
            f"pool: steady-state add of {mib} MiB operands, outputs dropped (default cap)",
            [
                ("tenferro", lambda a=a, b=b: eng.add(a, b)),
                ("tenferro out=", lambda a=a, b=b, out=out: eng.add(a, b, out=out)),
                ("np.add", lambda a_np=a_np, b_np=b_np: np.add(a_np, b_np)),
            ],
            group="pool",
            size=n,
            repeats=3 if quick else 9,
            targets=[
                Target("tenferro", "np.add", 1 / 1.5),
                Target("tenferro out=", "np.add", 1 / 1.5),
            ],
        )
        after = eng.buffer_pool_cache_stats()
        case.extra["new_allocations_after_first"] = after.misses - first.misses
        case.extra["retained_mib"] = eng.buffer_pool_stats().capacity_bytes / MIB
        case.extra["limit_mib"] = eng.buffer_pool_limit_bytes / MIB
        results.append(case)
        del a, b, out, a_np, b_np
        eng.reset_buffer_pool()
    return results
