"""quimb on tenferro arrays, against the same calls on numpy arrays.

Issue 21's quimb rows: TEBD, DMRG1, DMRG2 (Heisenberg, L = 10), a circuit's
default ``local_expectation``, ``isel``, ``measure``, every ``split`` method
that takes a rectangular matrix, ``gauge_all_simple``, ``randomize``,
``partial_trace``, ``compute_marginal``, ``full_simplify``, and formatting a
0-d result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr

qu = pytest.importorskip("quimb")
qtn = pytest.importorskip("quimb.tensor")

L = 10
ARRAYS = (tfr.Tensor, tfr.TensorView)


def t(a: Any) -> Any:
    return tfr.asarray(np.array(a))


def on_tenferro(tn: Any) -> Any:
    tn.apply_to_arrays(t)
    return tn


def val(x: Any) -> Any:
    return np.asarray(x)


# ---------------------------------------------------------------------- algorithms
@pytest.mark.parametrize("cls", ["DMRG1", "DMRG2"])
def test_dmrg_heisenberg_matches_numpy(cls: str) -> None:
    solver = getattr(qtn, cls)
    p0 = qtn.MPS_rand_state(L, 4, seed=3)
    ref = solver(qtn.MPO_ham_heis(L), bond_dims=[8, 16], p0=p0.copy())
    ref.solve(max_sweeps=4, verbosity=0)
    ours = solver(on_tenferro(qtn.MPO_ham_heis(L)), bond_dims=[8, 16], p0=on_tenferro(p0.copy()))
    ours.solve(max_sweeps=4, verbosity=0)
    assert isinstance(ours.energy, ARRAYS)
    assert abs(float(ours.energy) - float(ref.energy)) < 1e-9
    assert f"{ours.energy:.6f}" == f"{ref.energy:.6f}"


def test_tebd_heisenberg_matches_numpy() -> None:
    def evolve(psi0: Any) -> Any:
        tebd = qtn.TEBD(psi0, qtn.ham_1d_heis(L), progbar=False)
        tebd.update_to(0.3, dt=0.05, order=2)
        return tebd.pt

    ref = evolve(qtn.MPS_neel_state(L))
    ours = evolve(on_tenferro(qtn.MPS_neel_state(L)))
    assert all(isinstance(x.data, ARRAYS) for x in ours)
    zz = qu.pauli("Z") & qu.pauli("Z")
    for i in (0, 4):
        e_ref = ref.local_expectation(zz, (i, i + 1))
        e = ours.local_expectation(t(zz), (i, i + 1))
        assert abs(complex(e) - complex(e_ref)) < 1e-10
    assert abs(complex(ours.H @ ours) - complex(ref.H @ ref)) < 1e-10


def _circuit(n: int = 4) -> Any:
    c = qtn.Circuit(n)
    for i in range(n):
        c.apply_gate("H", i)
    for i in range(n - 1):
        c.apply_gate("CNOT", i, i + 1)
    c.apply_gate("RZ", 0.3, 2)
    c.apply_gate("RX", 0.7, 0)
    return c


def test_circuit_local_expectation_default_simplify_matches_numpy() -> None:
    zz = qu.pauli("Z") & qu.pauli("Z")
    ref = _circuit().local_expectation(zz, (0, 1))
    c = _circuit()
    c.psi.apply_to_arrays(t)
    ours = c.local_expectation(t(zz), (0, 1))
    assert isinstance(ours, ARRAYS)
    assert abs(complex(ours) - complex(ref)) < 1e-12


def test_circuit_compute_marginal_and_partial_trace_match_numpy() -> None:
    ref = _circuit().compute_marginal([0, 2])
    c = _circuit()
    c.psi.apply_to_arrays(t)
    np.testing.assert_allclose(val(c.compute_marginal([0, 2])), ref, atol=1e-12)
    ref_rho = _circuit().partial_trace([0, 1])
    c2 = _circuit()
    c2.psi.apply_to_arrays(t)
    np.testing.assert_allclose(val(c2.partial_trace([0, 1])), ref_rho, atol=1e-12)


# ---------------------------------------------------------------------- tensor-network calls
def _mps() -> Any:
    return qtn.MPS_rand_state(6, 4, seed=1)


def test_isel_matches_numpy() -> None:
    ref = _mps()
    ours = on_tenferro(_mps())
    a = ref.isel({ref.site_ind(0): 1})
    b = ours.isel({ours.site_ind(0): 1})
    assert abs(complex(b.H @ b) - complex(a.H @ a)) < 1e-12
    assert all(isinstance(x.data, ARRAYS) for x in b)


def test_measure_matches_numpy() -> None:
    outcome_ref, psi_ref = _mps().measure(2, seed=7)
    outcome, psi = on_tenferro(_mps()).measure(2, seed=7)
    assert outcome == outcome_ref
    assert abs(complex(psi.H @ psi) - complex(psi_ref.H @ psi_ref)) < 1e-12


@pytest.mark.parametrize(
    "method", ["svd", "eig", "lq", "qr", "svds", "isvd", "rsvd", "polar_right", "lu"]
)
def test_split_reconstructs_like_numpy(method: str) -> None:
    ref_t = _mps()[2]
    ours_t = on_tenferro(_mps())[2]
    opts: dict[str, Any] = {}
    if method in ("svd", "eig", "svds", "isvd", "rsvd"):
        opts = {"max_bond": 8, "cutoff": 0.0}
    ref = ref_t.split(left_inds=ref_t.inds[:1], method=method, **opts)
    ours = ours_t.split(left_inds=ours_t.inds[:1], method=method, **opts)
    np.testing.assert_allclose(
        val((ours ^ all).transpose(*ours_t.inds).data), ref_t.data, atol=1e-10
    )
    np.testing.assert_allclose(val((ref ^ all).transpose(*ref_t.inds).data), ref_t.data, atol=1e-10)


def test_gauge_all_simple_matches_numpy() -> None:
    ref = _mps()
    ref.gauge_all_simple()
    ours = on_tenferro(_mps())
    ours.gauge_all_simple()
    assert abs(complex(ours.H @ ours) - complex(ref.H @ ref)) < 1e-10


def test_randomize_with_a_seed_matches_numpy() -> None:
    ref = _mps()[1].randomize(seed=2)
    ours = on_tenferro(_mps())[1].randomize(seed=2)
    np.testing.assert_allclose(val(ours.data), ref.data)


def test_full_simplify_and_contract_match_numpy() -> None:
    a, b = _mps(), _mps()
    ref = (a.H & a).full_simplify() ^ all
    ours = (on_tenferro(b).H & b).full_simplify() ^ all
    assert abs(complex(ours) - complex(ref)) < 1e-12


def test_compress_matches_numpy() -> None:
    ref = _mps()
    ref.compress(max_bond=2)
    ours = on_tenferro(_mps())
    ours.compress(max_bond=2)
    assert abs(complex(ours.H @ ours) - complex(ref.H @ ref)) < 1e-10


def test_a_0d_result_formats_like_a_float() -> None:
    m = on_tenferro(_mps())
    assert f"{(m.H @ m):.6f}" == "1.000000"
