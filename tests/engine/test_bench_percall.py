"""The per-call and fusion benchmarks run (quick mode) and report their rows and
targets; the CLI table gains a torch column when torch was timed. No timing is checked."""

from __future__ import annotations

from typing import Any

import pytest

from tenferro.bench import percall
from tenferro.bench.harness import CaseResult, Target
from tenferro.cli import main


@pytest.fixture(scope="module")
def results() -> list[CaseResult]:
    return percall.run(quick=True)


@pytest.mark.parametrize(
    "family",
    [
        "add",
        "exp",
        "sum",
        "matmul",
        "transpose",
        "to_contiguous(transpose_view)",
        "reshape_view",
        "slice_view",
        "einsum",
        "tfr.add",
        "a + b",
        "a * 2.0",
        "tfr.exp",
        "tfr.sum",
        "axis-0 sum (tfr.sum)",
        "tfr.matmul",
        "a @ b",
        "x[0:2, :]",
        "tfr.permute_dims",
        "tfr.reshape",
    ],
)
def test_every_family_has_a_per_call_row_at_16_and_4096_elements(
    results: list[CaseResult], family: str
) -> None:
    rows = [r for r in results if r.name.startswith(family) and r.group.startswith("per call")]
    assert sorted(r.size for r in rows) == [16, 4096]
    for r in rows:
        assert Target("tenferro", "numpy", 2.5) in r.targets
        assert all(m > 0 for m in r.medians.values())


def test_large_strided_copies_cover_both_sizes_and_a_permute(results: list[CaseResult]) -> None:
    names = [r.name for r in results if r.group == "large strided copies"]
    assert any("256x256" in n for n in names) and any("2048x2048" in n for n in names)
    assert any(n.startswith("permute") for n in names)


def test_torch_is_a_contender_exactly_when_it_is_installed(results: list[CaseResult]) -> None:
    has_torch = percall.load_torch() is not None
    assert all(("torch" in r.medians) == has_torch for r in results)


def test_the_cli_table_shows_tenferro_over_torch_when_torch_was_timed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tenferro.cli as cli

    def fake(quick: bool = False) -> list[CaseResult]:
        return [CaseResult("fake op", "per call", 16, {"tenferro": 1e-6, "torch": 4e-6})]

    def modules(names: Any) -> list[tuple[str, Any]]:
        return [("percall", fake)]

    monkeypatch.setattr(cli, "_load_bench_modules", modules)
    assert main(["bench", "--quick", "--only", "percall"]) == 0
    out = capsys.readouterr().out
    assert "tenferro / torch" in out and "0.250" in out


def test_the_cli_table_has_no_torch_column_without_torch_results(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tenferro.cli as cli

    def fake(quick: bool = False) -> list[CaseResult]:
        return [CaseResult("fake op", "per call", 16, {"tenferro": 1e-6, "numpy": 2e-6})]

    monkeypatch.setattr(cli, "_load_bench_modules", lambda names: [("percall", fake)])
    assert main(["bench", "--quick", "--only", "percall"]) == 0
    assert "torch" not in capsys.readouterr().out
