"""Run a client case module in a fresh interpreter with ``SCIPY_ARRAY_API=1``.

scipy reads ``SCIPY_ARRAY_API`` once, when it is first imported, and the rest of
the test session has imported it long before; scikit-learn's array API dispatch
refuses to run without it. So the cases run in a child pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def run_cases(module: str) -> None:
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(HERE / module),
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=--import-mode=importlib",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
