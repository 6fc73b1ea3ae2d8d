"""An engine's thread count reaches every BLAS the process uses, scipy's included."""

from __future__ import annotations

import json
import subprocess
import sys

PROGRAM = """
import json, sys
import tenferro as tfr
assert "scipy.linalg" not in sys.modules  # nothing has loaded scipy's LAPACK yet
eng = tfr.CpuEngine(threads=1)
import scipy.linalg  # what the engine's linalg and user code load
from threadpoolctl import threadpool_info
blas = [(i["filepath"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps(blas))
"""


def test_a_blas_loaded_after_the_engine_runs_the_engines_thread_count() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    blas = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(blas) >= 1
    assert all(n == 1 for _, n in blas), blas
