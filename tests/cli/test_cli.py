"""The command line: info, bench (table, JSON, plot), one-line errors, --debug."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tenferro.cli import CliError, main


def test_info_prints_versions_and_threads(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "numpy" in out
    assert "threads" in out
    assert "SharedMemoryDomain" in out


def test_bench_writes_json_with_medians_and_ratios(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--only", "storage", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["quick"] is True
    (case,) = payload["results"]
    assert set(case["medians_s"]) == {"tenferro", "np.copy"}
    assert case["targets"][0]["ratio"] > 0
    assert payload["environment"]["numpy"]


def test_bench_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "bench.png"
    assert main(["bench", "--quick", "--only", "storage", "--plot", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 5000


def test_bench_plot_without_matplotlib_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    status = main(["bench", "--quick", "--only", "storage", "--plot", str(tmp_path / "x.png")])
    err = capsys.readouterr().err.strip()
    assert status == 1
    assert err.count("\n") == 0
    assert "tenferro[plot]" in err
    assert not (tmp_path / "x.png").exists()


def test_unknown_bench_group_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--only", "nonsense"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("tenferro bench: error: unknown benchmark group")
    assert "Traceback" not in err


def test_debug_flag_lets_the_traceback_through() -> None:
    with pytest.raises(CliError):
        main(["--debug", "bench", "--only", "nonsense"])


def test_missing_command_exits_with_usage() -> None:
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_module_entry_point_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tenferro", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert "demo" in proc.stdout and "bench" in proc.stdout and "info" in proc.stdout
