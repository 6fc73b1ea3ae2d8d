"""Engine benchmarks against numpy and opt_einsum, printed as ratios.

Usage: ``python benchmarks/bench_engine.py [--quick]``. Each case interleaves
the contenders' repetitions and reports medians; see `tenferro.bench.engine`.
"""

from __future__ import annotations

import sys

from tenferro.bench.engine import run
from tenferro.bench.harness import print_results


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    results = run(quick=quick)
    print_results(results)
    for r in results:
        for key, value in r.extra.items():
            print(f"    {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
