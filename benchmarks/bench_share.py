"""Hand a 256 MiB tensor to a worker process: share handle vs pickling the numpy array.

Run: ``.venv/bin/python benchmarks/bench_share.py [--quick]`` (also part of
``python -m tenferro bench``). Prints the medians and the ratio.
"""

from __future__ import annotations

import sys

from tenferro.bench.domains import run
from tenferro.bench.harness import print_results


def main() -> None:
    print_results(run(quick="--quick" in sys.argv[1:]))


if __name__ == "__main__":
    main()
