"""TRG and DMRG written with tenferro against the same algorithms in plain numpy.

Usage: ``python benchmarks/bench_tn.py [--quick] [--repeats N] [--json PATH]``.

Cases (full / quick):

* TRG, 2D Ising at T_c, chi 24, 12 steps / chi 12, 8 steps:
  ``examples/trg_ising.py`` against ``benchmarks/trg_numpy.py``;
* DMRG, Heisenberg L = 32, D = 64, 2 sweeps / L = 12, D = 16, 2 sweeps:
  ``examples/dmrg_heisenberg.py`` against ``benchmarks/dmrg_numpy.py``.

TRG has two tenferro contenders, one per route of ``eng.svd_truncated``:
``tenferro`` (``method="gram"``, the example's default: only the chi leading
singular triplets) and ``tenferro-gesdd`` (the full ``?gesdd`` SVD, then the
cut: the same LAPACK work as the numpy program's ``np.linalg.svd`` followed by
slicing, which is the natural numpy program).

Each run is a fresh child process (so peak memory is the run's own), the
contenders take turns in a rotating order (so none always runs first or
last) and the median wall time is reported, with the ratio to numpy (target
<= 0.9). Peak memory, measured the same way for every contender:

* run peak RSS: the child first imports everything either side may use
  (numpy, scipy.linalg and its LAPACK/BLAS modules, opt_einsum, tenferro),
  then resets the kernel's high-water mark (``5`` into
  ``/proc/self/clear_refs``), reads ``VmRSS``, runs, and reports
  ``VmHWM - VmRSS``: the most resident memory the run itself added. It sees
  everything: numpy arrays, the engine's pool, and the workspace LAPACK gets
  from ``malloc`` inside ``numpy.linalg``;
* traced peak: the largest total of live Python-traced allocations
  (``tracemalloc``, a separate run). It counts every numpy array and pooled
  buffer, but not the workspace numpy.linalg mallocs in C, so it favours numpy.
  The pool's buffers are numpy arrays, so it counts the ones the pool retains
  while free as well as those in use: memory the process holds either way
  (the pool keeps at most its footprint budget, the live peak plus
  max(1/16, 1 MiB), see docs/engine.md), where numpy's freed arrays go back to
  malloc and leave the count. ``pool_retained_bytes_at_end`` is what the pool
  still holds once the run's tensors are gone.

Both programs must agree on the result. Children run with one BLAS thread
(``OPENBLAS_NUM_THREADS=1``), the same for all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TC = 2.269185314213022

CASES = {
    "trg": {"full": {"chi": 24, "steps": 12}, "quick": {"chi": 12, "steps": 8}},
    "dmrg": {
        "full": {"length": 32, "bond_dim": 64, "sweeps": 2},
        "quick": {"length": 12, "bond_dim": 16, "sweeps": 2},
    },
}


#: The contenders of each case (the first tenferro one is the one the ratios name).
WHO = {"trg": ("tenferro", "tenferro-gesdd", "numpy"), "dmrg": ("tenferro", "numpy")}


def _child(case: str, who: str, params: dict[str, int], trace: bool) -> dict[str, Any]:
    """Run one algorithm in this process (the child side)."""
    import resource
    import time
    import tracemalloc

    sys.path.insert(0, str(ROOT / "examples"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    # Imports (and the engine) come before the measured region: only the run counts.
    # Both sides import the same libraries first (tenferro loads scipy's LAPACK
    # lazily on its first factorisation, which would otherwise count as the run's).
    import opt_einsum  # noqa: F401
    import scipy.linalg  # noqa: F401
    from scipy.linalg import cython_blas, cython_lapack  # noqa: F401

    import tenferro

    extra: dict[str, Any] = {}
    if who.startswith("tenferro"):
        import dmrg_heisenberg as dmrg
        import trg_ising as trg

        eng = tenferro.CpuEngine()
    else:
        import dmrg_numpy as dmrg  # type: ignore[no-redef]
        import trg_numpy as trg  # type: ignore[no-redef]
    reset = _reset_peak()
    rss_before = _status_kib("VmRSS")
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    if case == "trg" and who.startswith("tenferro"):
        svd = "gesdd" if who == "tenferro-gesdd" else "gram"
        out = trg.run_trg(TC, params["chi"], params["steps"], eng, exact=False, svd=svd)
        value = out["lnz_per_site"]
        extra = {k: out[k] for k in ("allocations_per_step_after_warmup", "pool_hit_rate")}
    elif case == "trg":
        value = trg.run_trg(TC, params["chi"], params["steps"])
    elif who == "tenferro":
        # One warm-up sweep: the initial MPS already has its final bond dimensions, so
        # the second sweep shows the steady state (allocations per bond step).
        out = dmrg.run_dmrg(params["length"], params["bond_dim"], params["sweeps"], eng, warmup=1)
        value = out["energy"]
        extra = {k: out[k] for k in ("allocations_per_bond_step_after_warmup", "pool_hit_rate")}
    else:
        value = dmrg.run_dmrg(params["length"], params["bond_dim"], params["sweeps"])
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # The run's own peak: the high-water mark (reset just before the run) minus the
    # resident size before the run.
    run_peak_kib = _status_kib("VmHWM") - rss_before
    if trace:
        tracemalloc.stop()
    retained = eng.buffer_pool_stats().capacity_bytes if who.startswith("tenferro") else 0
    return {
        "seconds": seconds,
        "value": value,
        "traced_peak_bytes": peak,
        "max_rss_kib": rss_kib,
        "run_peak_rss_kib": run_peak_kib,
        "hwm_reset": reset,
        "pool_retained_bytes_at_end": retained,
        **extra,
    }


def _reset_peak() -> bool:
    """Reset this process's ``VmHWM`` to its current RSS (Linux ``clear_refs``); False if not."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _status_kib(field: str) -> int:
    """A ``/proc/self/status`` memory field in KiB (Linux)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _spawn(case: str, who: str, params: dict[str, int], trace: bool) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", case, who, json.dumps(params)]
    if trace:
        cmd.append("--trace")
    # One BLAS thread for both contenders: on a shared machine, oversubscribed
    # BLAS threads make either side several times slower at random.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="TRG and DMRG: tenferro vs plain numpy")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=sorted(CASES))
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        case, who, params = args.child
        print(json.dumps(_child(case, who, json.loads(params), args.trace)))
        return 0
    report = []
    for case, sizes in CASES.items():
        if args.only and case != args.only:
            continue
        params = sizes["quick" if args.quick else "full"]
        who_all = WHO[case]
        runs: dict[str, list[dict[str, Any]]] = {who: [] for who in who_all}
        for rep in range(args.repeats):
            # Rotate the order, so that no contender always runs first or last.
            shift = rep % len(who_all)
            for who in who_all[shift:] + who_all[:shift]:
                runs[who].append(_spawn(case, who, params, False))
        traced = {who: _spawn(case, who, params, True) for who in runs}
        row: dict[str, Any] = {"case": case, "params": params}
        for who, rs in runs.items():
            row[who] = {
                "median_seconds": statistics.median(r["seconds"] for r in rs),
                "seconds": [r["seconds"] for r in rs],
                "value": rs[0]["value"],
                "traced_peak_bytes": traced[who]["traced_peak_bytes"],
                "max_rss_kib": max(r["max_rss_kib"] for r in rs),
                "run_peak_rss_kib": statistics.median(r["run_peak_rss_kib"] for r in rs),
                "hwm_reset": all(r["hwm_reset"] for r in rs),
                **{k: rs[0][k] for k in rs[0] if k.startswith(("allocations", "pool_"))},
            }
        npy = row["numpy"]
        print(f"{case} {params} ({args.repeats} runs each, medians):")
        for who in who_all:
            r = row[who]
            ratio = r["median_seconds"] / npy["median_seconds"]
            mem = r["run_peak_rss_kib"] / max(npy["run_peak_rss_kib"], 1)
            traced_ratio = r["traced_peak_bytes"] / max(npy["traced_peak_bytes"], 1)
            r["time_ratio"] = ratio
            r["run_peak_rss_ratio"] = mem
            r["traced_peak_ratio"] = traced_ratio
            pool = "".join(
                f", {k} {'n/a' if v is None else format(v, '.4g')}"
                for k, v in r.items()
                if k.startswith(("allocations", "pool_"))
            )
            print(
                f"  {who:15s} {r['median_seconds']:7.3f} s  time ratio {ratio:.3f}  "
                f"run peak RSS {r['run_peak_rss_kib'] / 1024:6.1f} MiB (ratio {mem:.2f})  "
                f"traced peak {r['traced_peak_bytes'] / 2**20:6.1f} MiB (ratio "
                f"{traced_ratio:.2f})  value {r['value']:.12f}{pool}"
            )
        report.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
