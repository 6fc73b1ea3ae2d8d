"""Small runs of the two tensor-network examples (and their plain-numpy references)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from script_loader import load_script

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path) -> ModuleType:
    return load_script(str(path.relative_to(ROOT)), f"_example_{path.stem}")


@pytest.fixture(scope="module")
def trg() -> Any:
    return _load(ROOT / "examples" / "trg_ising.py")


@pytest.fixture(scope="module")
def dmrg() -> Any:
    return _load(ROOT / "examples" / "dmrg_heisenberg.py")


def test_trg_at_tc_approaches_onsager(trg: Any) -> None:
    result = trg.run_trg(trg.TC, chi=8, steps=12)
    assert result["relative_error"] < 1e-3
    assert math.isclose(result["exact_lnz_per_site"], 0.9296953983416, rel_tol=1e-12)


def test_trg_matches_the_plain_numpy_reference(trg: Any) -> None:
    reference = _load(ROOT / "benchmarks" / "trg_numpy.py")
    ours = trg.run_trg(2.5, chi=6, steps=10, exact=False)["lnz_per_site"]
    assert math.isclose(ours, reference.run_trg(2.5, 6, 10), rel_tol=1e-12)


@pytest.mark.parametrize("svd", ["gram", "gesdd"])
def test_both_trg_svd_routes_match_the_numpy_reference_at_tc(trg: Any, svd: str) -> None:
    # At T_c the spectrum is widest; chi 10 keeps values down to about 1e-3 of s[0].
    reference = _load(ROOT / "benchmarks" / "trg_numpy.py")
    ours = trg.run_trg(trg.TC, chi=10, steps=10, exact=False, svd=svd)
    assert ours["svd_method"] == svd
    assert math.isclose(ours["lnz_per_site"], reference.run_trg(trg.TC, 10, 10), rel_tol=1e-12)


def test_trg_loop_makes_no_copy_and_no_allocation_after_warmup(trg: Any) -> None:
    result = trg.run_trg(trg.TC, chi=6, steps=trg.WARMUP + 4, exact=False)
    assert result["copies_in_loop"] == 0
    assert result["allocations_per_step_after_warmup"] == 0


def test_dmrg_matches_exact_diagonalisation(dmrg: Any) -> None:
    result = dmrg.run_dmrg(length=8, bond_dim=16, sweeps=3)
    assert abs(result["energy"] - dmrg.exact_energy(8)) < 1e-9


def test_dmrg_matches_the_plain_numpy_reference(dmrg: Any) -> None:
    reference = _load(ROOT / "benchmarks" / "dmrg_numpy.py")
    ours = dmrg.run_dmrg(length=8, bond_dim=4, sweeps=2)["energy"]
    assert math.isclose(ours, reference.run_dmrg(8, 4, 2), rel_tol=1e-10)


def test_dmrg_loop_makes_no_copy_and_no_allocation_after_warmup(dmrg: Any) -> None:
    result = dmrg.run_dmrg(length=6, bond_dim=8, sweeps=dmrg.WARMUP_SWEEPS + 1)
    assert result["copies_in_loop"] == 0
    assert result["allocations_per_bond_step_after_warmup"] == 0


def test_trg_command_line_writes_json_and_plot(trg: Any, tmp_path: Path, capsys: Any) -> None:
    out, png = tmp_path / "trg.json", tmp_path / "trg.png"
    assert trg.main(["--chi", "4", "--steps", "6", "--json", str(out), "--plot", str(png)]) == 0
    data = json.loads(out.read_text())
    assert data["result"]["chi"] == 4 and len(data["by_chi"]) == 1
    assert png.stat().st_size > 0
    assert "ln Z per site" in capsys.readouterr().out


def test_dmrg_command_line_writes_json_and_plot(dmrg: Any, tmp_path: Path, capsys: Any) -> None:
    out, png = tmp_path / "dmrg.json", tmp_path / "dmrg.png"
    argv = ["--length", "6", "--bond-dim", "8", "--sweeps", "2", "--json", str(out)]
    assert dmrg.main([*argv, "--plot", str(png)]) == 0
    data = json.loads(out.read_text())
    assert data["abs_error"] < 1e-9
    assert png.stat().st_size > 0
    assert "energy" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["trg", "dmrg"])
def test_examples_have_help(name: str, trg: Any, dmrg: Any, capsys: Any) -> None:
    module = trg if name == "trg" else dmrg
    with pytest.raises(SystemExit) as info:
        module.main(["--help"])
    assert info.value.code == 0
    assert "--json" in capsys.readouterr().out


def test_dmrg_with_truncation_stays_variational(dmrg: Any) -> None:
    # L = 14 at D = 8 truncates every middle bond: the energy must stay above the
    # exact one (a Lanczos basis that lost orthogonality would go below it).
    result = dmrg.run_dmrg(length=14, bond_dim=8, sweeps=2)
    exact = dmrg.exact_energy(14)
    assert exact - 1e-10 <= result["energy"] < exact + 1e-3
    assert max(result["max_discarded_weight_per_sweep"]) < 1e-3
