"""Sliced lattice contraction on a Dask LocalCluster: tenferro vs the cotengra + Dask loop.

Run: ``.venv/bin/python benchmarks/bench_distributed.py [--quick] [--bond N]`` (also
``python -m tenferro bench --only distributed``). Prints medians, ratios and
each contender's per-worker peak memory.
"""

from __future__ import annotations

import sys

from tenferro.bench.distributed import run
from tenferro.bench.harness import print_results


def main() -> None:
    args = sys.argv[1:]
    bond = int(args[args.index("--bond") + 1]) if "--bond" in args else None
    results = run(quick="--quick" in args, bond=bond)
    print_results(results)
    for r in results:
        for key in ("peak_worker_bytes", "bytes_sent"):
            if key in r.extra:
                print(f"    {key}: {r.extra[key]}")


if __name__ == "__main__":
    main()
