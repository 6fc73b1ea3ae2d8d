"""`python -m tenferro demo` walks the main line and checks every fact it prints."""

from __future__ import annotations

import subprocess
import sys


def test_demo_exits_0_and_reports_that_all_facts_hold() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tenferro", "demo"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "facts hold" in done.stdout
    assert "from_vec_col_major keeps the buffer: True" in done.stdout
