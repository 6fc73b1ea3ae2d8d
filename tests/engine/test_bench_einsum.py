"""The einsum-benchmark section: its data, and one small instance end to end (no timing checked)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from tenferro.bench import einsum as bench
from tenferro.cli import BENCH_MODULES
from tenferro.engine.einsum.parser import parse
from tenferro.engine.einsum.paths import normalize_path

ROOT = Path(__file__).resolve().parents[2]


def test_the_fourteen_upstream_instances_are_kept_as_data() -> None:
    insts = bench.instances()
    assert len(insts) == 14
    assert {i["dtype"] for i in insts} == {"float64"}


@pytest.mark.parametrize("inst", bench.instances(), ids=lambda i: i["name"])
def test_every_instance_parses_and_its_path_contracts_it_to_one_tensor(inst: dict) -> None:
    shapes = [tuple(s) for s in inst["shapes"]]
    spec = parse("bench", inst["subscripts"], shapes)
    assert len(normalize_path("bench", [tuple(c) for c in inst["opt_flops"]], len(spec.terms))) > 0


def test_quick_skips_the_slow_instances() -> None:
    quick = {i["name"] for i in bench.selected(quick=True)}
    assert quick and not quick & bench.SLOW
    assert len(bench.selected()) == 14


def test_an_instance_reports_ratio_target_and_memory() -> None:
    seen: list[str] = []
    (case,) = bench.run(names=["bin_matmul_256"], on_instance=seen.append)
    assert seen == ["bin_matmul_256"]
    assert set(case.medians) >= {"tenferro", "opt_einsum"}
    ((target, ratio, _),) = case.target_results()
    assert (target.contender, target.baseline, target.max_ratio) == ("tenferro", "opt_einsum", 0.5)
    assert ratio > 0
    assert case.extra["relative_error"] <= 1e-8
    assert case.extra["largest_live_bytes"] == 256 * 256 * 8
    assert case.extra["peak_traced_bytes"] >= case.extra["largest_live_bytes"]


def test_the_cli_has_an_einsum_section() -> None:
    assert "einsum" in BENCH_MODULES


def test_the_script_prints_a_table_and_writes_a_plot(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plot = tmp_path / "einsum.png"
    argv = ["bench_einsum.py", "--plot", str(plot), "bin_matmul_256"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "benchmarks" / "bench_einsum.py"), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "bin_matmul_256" in out and "<= 0.5" in out
    assert plot.stat().st_size > 0


def test_the_path_live_set_counts_intermediates_and_output_alive_together() -> None:
    # ac (from ab, bc) is still alive while its product with cd, ad, is written.
    shapes = [(2, 3), (3, 4), (4, 5)]
    assert bench.path_live_elements("ab,bc,cd->ad", shapes, [(0, 1), (0, 1)]) == 2 * 4 + 2 * 5
    # A product that keeps the batch: its result is the output, one live value.
    assert bench.path_live_elements("bij,bjk->bik", [(4, 2, 3), (4, 3, 5)], [(0, 1)]) == 40


def test_the_path_live_set_does_not_depend_on_the_output_order() -> None:
    shapes = [(4, 2, 3), (4, 3, 5)]
    live = bench.path_live_elements("bij,bjk->bik", shapes, [(0, 1)])
    assert bench.path_live_elements("bij,bjk->kib", shapes, [(0, 1)]) == live
