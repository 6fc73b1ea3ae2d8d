"""The engine benchmark runs (quick mode) and reports every target; no timing is checked."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from tenferro.bench import engine as bench

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results() -> list:
    return bench.run(quick=True)


def test_every_issue_target_has_a_case(results: list) -> None:
    targets = {(t.contender, t.baseline, round(t.max_ratio, 3)) for r in results for t in r.targets}
    assert targets == {
        ("tenferro", "np.matmul", 1.15),
        ("tenferro", "np.add", 2.0),
        ("tenferro", "np.add", round(1 / 1.5, 3)),
        ("tenferro", "numpy", round(1 / 1.8, 3)),
        ("tenferro", "opt_einsum", 1.1),
        ("tenferro", "np.einsum", 1.0),
    }


def test_every_case_reports_positive_medians_and_ratios(results: list) -> None:
    for r in results:
        assert all(m > 0 for m in r.medians.values())
        assert all(ratio > 0 for _, ratio, _ in r.target_results())


def test_the_steady_state_loop_allocates_only_once(results: list) -> None:
    steady = next(r for r in results if r.name.startswith("steady-state"))
    assert steady.extra["new_allocations_after_first"] == 0
    assert steady.extra["hit_rate_after_first"] == 1.0


def test_the_einsum_case_covers_at_least_eight_networks(results: list) -> None:
    case = next(r for r in results if r.name.startswith("einsum"))
    assert len(case.extra["ratio_to_opt_einsum_per_network"]) >= 8


def test_the_script_prints_the_ratios(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_engine.py", "--quick"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "benchmarks" / "bench_engine.py"), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "tenferro/np.matmul <= 1.15" in out and "ratio" in out
