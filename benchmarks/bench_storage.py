"""Adopt a 1 GiB buffer into a tensor and hand it back, against np.copy of the same buffer.

Run: ``.venv/bin/python benchmarks/bench_storage.py [--quick]`` (also part of
``python -m tenferro bench``). ``--quick`` uses 64 MiB. Prints the medians and the
ratio tenferro / np.copy, in significant digits and as a speed-up (e.g.
``0.00104 (958x faster)``): adopting and returning cost microseconds whatever the
size, a copy costs a pass over every byte.
"""

from __future__ import annotations

import sys

from tenferro.bench.harness import print_results
from tenferro.bench.storage import run


def main() -> None:
    print_results(run(quick="--quick" in sys.argv[1:]))


if __name__ == "__main__":
    main()
