"""Differentiable TRG (examples/trg_ising.py): energy and specific heat of the 2D Ising
model by grad and grad-of-grad through twenty truncated SVDs with degenerate singular
values, against Onsager's exact solution (closed forms with scipy's elliptic integrals,
checked here against a difference quotient of Onsager's ln Z)."""

from __future__ import annotations

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


@pytest.mark.parametrize("k", [0.40, 0.46, 0.50])
def test_onsager_closed_forms_match_differences_of_onsager_lnz(trg: Any, k: float) -> None:
    def f(x: float) -> float:
        return float(trg.onsager_lnz(1.0 / x))

    h = 1e-4
    u = -(f(k + h) - f(k - h)) / (2 * h)
    c = k * k * (f(k + h) - 2 * f(k) + f(k - h)) / h**2
    assert math.isclose(trg.onsager_energy(k), u, rel_tol=1e-6)
    assert math.isclose(trg.onsager_specific_heat(k), c, rel_tol=1e-5)


def test_trg_energy_and_specific_heat_by_autodiff_match_onsager(trg: Any) -> None:
    # One coupling keeps CI short; `python examples/trg_ising.py --thermo 0.40 0.46 0.50`
    # prints all three (docs/autodiff.md has the table).
    r = trg.thermodynamics(0.50, chi=16, steps=20)
    assert abs(r["u"] - r["exact_u"]) <= 1e-4
    assert abs(r["c"] - r["exact_c"]) / r["exact_c"] <= 3e-3
