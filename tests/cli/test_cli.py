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


def test_debug_is_accepted_after_the_command() -> None:
    with pytest.raises(CliError):
        main(["bench", "--only", "nonsense", "--debug"])


def test_a_bad_output_path_is_refused_before_any_benchmark_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tenferro.cli as cli

    def must_not_run(names: object) -> None:
        raise AssertionError("benchmarks ran before the output path was checked")

    monkeypatch.setattr(cli, "_load_bench_modules", must_not_run)
    assert main(["bench", "--quick", "--json", "/nonexistent-folder/x.json"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_a_multi_line_error_is_printed_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tenferro.cli as cli

    def broken(args: object) -> int:
        raise RuntimeError("first line\n  second line\n")

    monkeypatch.setattr(cli, "_info", broken)
    assert main(["info"]) == 1
    err = capsys.readouterr().err
    assert err == "tenferro info: error: first line second line\n"


def test_demo_fails_with_one_line_when_a_fact_does_not_hold(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tenferro.demo.storage as storage_section

    def false_fact(f: object) -> None:
        f.check("a fact that does not hold", 1, 2)  # type: ignore[attr-defined]

    monkeypatch.setattr(storage_section, "run", false_fact)
    assert main(["demo"]) == 1
    err = capsys.readouterr().err.strip()
    assert "1 of" in err and "did not hold" in err
    assert "\n" not in err


def test_bench_domains_runs_quick_and_reports_the_share_ratio(tmp_path: Path) -> None:
    out = tmp_path / "share.json"
    assert main(["bench", "--quick", "--only", "domains", "--json", str(out)]) == 0
    (case,) = json.loads(out.read_text())["results"]
    assert case["group"] == "domains"
    assert 0 < case["targets"][0]["ratio"] < 1


def test_console_script_runs() -> None:
    script = Path(sys.executable).with_name("tenferro")
    if not script.exists():
        pytest.skip("the tenferro console script is not installed next to this python")
    proc = subprocess.run([str(script), "info"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert "numpy" in proc.stdout


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    import tenferro

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"tenferro {tenferro.__version__}"


def test_info_json_is_machine_readable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["numpy"]
    assert payload["cpus"] >= 1
    assert "engine" in payload["engine"]
    assert "libraries" in payload


def test_missed_targets_are_listed_with_a_reason() -> None:
    from tenferro.bench.harness import CaseResult, Target
    from tenferro.cli import missed_target_lines

    noisy = CaseResult(
        "noisy",
        "g",
        1,
        {"tenferro": 1.2, "numpy": 1.0},
        [Target("tenferro", "numpy", 1.1)],
        samples={"tenferro": [1.0, 1.2, 1.3, 1.4, 1.05], "numpy": [1.0] * 5},
    )
    slow = CaseResult(
        "slow",
        "g",
        1,
        {"tenferro": 3.0, "numpy": 1.0},
        [Target("tenferro", "numpy", 1.5)],
        samples={"tenferro": [3.0] * 5, "numpy": [1.0] * 5},
    )
    met = CaseResult(
        "met", "g", 1, {"tenferro": 1.0, "numpy": 1.0}, [Target("tenferro", "numpy", 2.0)]
    )
    lines = missed_target_lines([noisy, slow, met])
    assert len(lines) == 2
    assert lines[0].startswith("noisy: tenferro/numpy = 1.200, target <= 1.1")
    assert "within this run's noise" in lines[0]
    assert lines[1].startswith("slow: tenferro/numpy = 3.000, target <= 1.5")
    assert "2.00x slower than the target allows" in lines[1]
