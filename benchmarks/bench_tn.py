"""TRG and DMRG written with tenferro against the same algorithms in plain numpy.

Usage: ``python benchmarks/bench_tn.py [--quick] [--repeats N] [--json PATH]``.

Cases (full / quick):

* TRG, 2D Ising at T_c, chi 24, 12 steps / chi 12, 8 steps:
  ``examples/trg_ising.py`` against ``benchmarks/trg_numpy.py``;
* DMRG, Heisenberg L = 32, D = 64, 2 sweeps / L = 12, D = 16, 2 sweeps:
  ``examples/dmrg_heisenberg.py`` against ``benchmarks/dmrg_numpy.py``.

Each run is a fresh child process (so peak memory is the run's own), the
contenders alternate (tenferro, numpy, numpy, tenferro, ...) and the median
wall time is reported, with the ratio tenferro / numpy (target <= 0.9). Peak
memory: the run's peak resident set size above the resident size before it
(``VmHWM - VmRSS``, imports excluded; this sees LAPACK's malloc'd workspace in
numpy too), and the largest traced allocation total (``tracemalloc``, a
separate run; it counts the engine's pooled LAPACK workspace but not the
workspace numpy.linalg mallocs, so it favours numpy). Both programs must agree
on the result. Children run with one BLAS thread (``OPENBLAS_NUM_THREADS=1``),
the same for both.
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


def _child(case: str, who: str, params: dict[str, int], trace: bool) -> dict[str, Any]:
    """Run one algorithm in this process (the child side)."""
    import resource
    import time
    import tracemalloc

    sys.path.insert(0, str(ROOT / "examples"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    # Imports (and the engine) come before the measured region: only the run counts.
    if who == "tenferro":
        import dmrg_heisenberg as dmrg
        import trg_ising as trg

        import tenferro

        eng = tenferro.CpuEngine()
    else:
        import dmrg_numpy as dmrg  # type: ignore[no-redef]
        import trg_numpy as trg  # type: ignore[no-redef]
    rss_before = _status_kib("VmRSS")
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    if case == "trg" and who == "tenferro":
        value = trg.run_trg(TC, params["chi"], params["steps"], eng, exact=False)["lnz_per_site"]
    elif case == "trg":
        value = trg.run_trg(TC, params["chi"], params["steps"])
    elif who == "tenferro":
        value = dmrg.run_dmrg(params["length"], params["bond_dim"], params["sweeps"], eng)["energy"]
    else:
        value = dmrg.run_dmrg(params["length"], params["bond_dim"], params["sweeps"])
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # The run's own peak: the high-water mark minus the resident size before the
    # run (imports differ between the two programs; this leaves them out).
    run_peak_kib = _status_kib("VmHWM") - rss_before
    return {
        "seconds": seconds,
        "value": value,
        "traced_peak_bytes": peak,
        "max_rss_kib": rss_kib,
        "run_peak_rss_kib": run_peak_kib,
    }


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
        runs: dict[str, list[dict[str, Any]]] = {"tenferro": [], "numpy": []}
        for rep in range(args.repeats):
            order = ("tenferro", "numpy") if rep % 2 == 0 else ("numpy", "tenferro")
            for who in order:
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
                "run_peak_rss_kib": max(r["run_peak_rss_kib"] for r in rs),
            }
        ratio = row["tenferro"]["median_seconds"] / row["numpy"]["median_seconds"]
        mem = row["tenferro"]["run_peak_rss_kib"] / max(row["numpy"]["run_peak_rss_kib"], 1)
        row["time_ratio"] = ratio
        row["run_peak_rss_ratio"] = mem
        report.append(row)
        tf, npy = row["tenferro"], row["numpy"]
        print(
            f"{case} {params}: tenferro {tf['median_seconds']:.3f} s, numpy "
            f"{npy['median_seconds']:.3f} s, ratio {ratio:.3f} (target <= 0.9: "
            f"{'met' if ratio <= 0.9 else 'missed'}); run peak RSS tenferro "
            f"{tf['run_peak_rss_kib'] / 1024:.1f} MiB vs numpy "
            f"{npy['run_peak_rss_kib'] / 1024:.1f} MiB (ratio {mem:.2f}); traced peak "
            f"{tf['traced_peak_bytes'] / 2**20:.1f} vs {npy['traced_peak_bytes'] / 2**20:.1f} MiB; "
            f"values {tf['value']:.12f} / {npy['value']:.12f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
