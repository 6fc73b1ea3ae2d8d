"""The README's main-line example runs and its printed claims hold."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_main_line_runs_without_a_copy() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no python example"
    code = blocks[0] + "\nassert tfr.copy_stats() == (0, 0)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "CopyStats(copies=0, bytes=0)" in lines[0]
    assert lines[1] == "True"  # the second matmul reused the pooled block
