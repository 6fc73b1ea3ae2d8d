"""The programs benchmarks/bench_autodiff.py differentiates compute what they claim (an MPS
energy against the dense Hamiltonian, a PEPS norm against the dense state), and their
tenferro gradients agree with finite differences."""

from __future__ import annotations

import string
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from ad_checks import check_grad
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    return load_script("benchmarks/bench_autodiff.py", "_bench_autodiff")


@pytest.fixture(scope="module")
def bench() -> Any:
    return _load()


def _dense_heisenberg(n: int) -> np.ndarray[Any, Any]:
    sx = np.array([[0, 1], [1, 0]]) / 2
    sy = np.array([[0, -1j], [1j, 0]]) / 2
    sz = np.diag([0.5, -0.5])
    h = np.zeros((2**n, 2**n), dtype=complex)
    for i in range(n - 1):
        for s in (sx, sy, sz):
            ops = [np.eye(2)] * n
            ops[i] = s
            ops[i + 1] = s
            term = ops[0]
            for o in ops[1:]:
                term = np.kron(term, o)
            h += term
    return h.real


def test_mps_energy_is_the_dense_expectation_value(bench: Any) -> None:
    sites = bench.mps_inputs(5, 3)
    psi = sites[0]
    for s in sites[1:]:
        psi = np.tensordot(psi, s, axes=([-1], [0]))
    psi = psi.reshape(-1)
    h = _dense_heisenberg(5)
    w = tfr.asarray(bench.heisenberg_mpo())
    got = float(bench.mps_energy(tfr, [tfr.asarray(s) for s in sites], w))
    assert got == pytest.approx(psi @ h @ psi / (psi @ psi), rel=1e-12)


def test_peps_norm_is_the_dense_norm(bench: Any) -> None:
    side = 3
    sites = bench.peps_inputs(side, 2)
    letters = iter(string.ascii_letters)
    bonds: dict[Any, str] = {}

    def bond(key: Any) -> str:
        if key not in bonds:
            bonds[key] = next(letters)
        return bonds[key]

    terms, phys = [], ""
    for i in range(side):
        for j in range(side):
            p = next(letters)
            phys += p
            terms.append(
                p
                + bond(("v", i - 1, j))
                + bond(("v", i, j))
                + bond(("h", i, j - 1))
                + bond(("h", i, j))
            )
    psi = np.einsum(",".join(terms) + "->" + phys, *sites, optimize=True)
    got = float(bench.peps_norm(tfr, [tfr.asarray(s) for s in sites]))
    assert got == pytest.approx(float(np.sum(psi * psi)), rel=1e-12)


def test_benchmark_gradients_match_finite_differences(bench: Any) -> None:
    w = tfr.asarray(bench.heisenberg_mpo())
    mps = [tfr.asarray(s) for s in bench.mps_inputs(4, 3)]
    check_grad(lambda *s: bench.mps_energy(tfr, list(s), w), mps)
    peps = [tfr.asarray(s) for s in bench.peps_inputs(2, 2)]
    check_grad(lambda *s: bench.peps_norm(tfr, list(s)), peps)
