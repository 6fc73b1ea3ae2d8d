"""autoray dispatch on tenferro arrays: quimb and cotengra give numpy's values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tenferro as tfr

ar = pytest.importorskip("autoray")
qtn = pytest.importorskip("quimb.tensor")
ctg = pytest.importorskip("cotengra")


def to_tenferro(tn: object) -> object:
    """A copy of a quimb network whose arrays are tenferro arrays (adopted copies)."""
    out = tn.copy()  # type: ignore[attr-defined]
    out.apply_to_arrays(lambda x: tfr.asarray(np.array(x)))
    return out


def test_autoray_finds_the_tenferro_backend_and_its_functions() -> None:
    x = tfr.asarray(np.arange(6.0).reshape(2, 3))
    assert ar.infer_backend(x) == "tenferro"
    out = ar.do("tensordot", x, x, ((1,), (1,)))
    np.testing.assert_allclose(
        np.asarray(out), np.arange(6.0).reshape(2, 3) @ np.arange(6.0).reshape(2, 3).T
    )
    for name in ("transpose", "conj", "real", "imag", "trace", "diag", "sum", "reshape"):
        assert callable(ar.get_lib_fn("tenferro", name))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_quimb_mps_norm_equals_numpys(dtype: str) -> None:
    mps = qtn.MPS_rand_state(6, bond_dim=4, seed=7, dtype=dtype)
    expected = mps.H @ mps
    ours = to_tenferro(mps)
    got = ours.H @ ours  # type: ignore[attr-defined]
    assert isinstance(got, (tfr.Tensor, tfr.TensorView))
    np.testing.assert_allclose(complex(got), complex(expected), rtol=1e-10)


def test_quimb_2d_network_contracted_through_cotengra_equals_numpys() -> None:
    tn = qtn.TN2D_rand(3, 3, D=2, seed=5, dtype="float64")
    expected = tn.contract(all, optimize="greedy")
    ours = to_tenferro(tn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cotengra warns when optional optimisers are absent
        opt = ctg.HyperOptimizer(max_repeats=4, methods=["greedy"], progbar=False)
        got = ours.contract(all, optimize=opt)  # type: ignore[attr-defined]
    np.testing.assert_allclose(float(got), float(expected), rtol=1e-10)


def test_quimb_mps_compress_equals_numpys() -> None:
    linalg = getattr(tfr, "linalg", None)
    if linalg is None or not hasattr(linalg, "svd"):
        pytest.skip("tenferro.linalg.svd is not available yet")
    mps = qtn.MPS_rand_state(6, bond_dim=8, seed=3)
    expected = mps.copy()
    expected.compress(max_bond=4)
    ours = to_tenferro(mps)
    ours.compress(max_bond=4)  # type: ignore[attr-defined]
    np.testing.assert_allclose(
        complex(ours.H @ ours),  # type: ignore[attr-defined]
        complex(expected.H @ expected),
        rtol=1e-8,
    )


def test_autoray_reads_the_standards_dtype_names() -> None:
    x = tfr.asarray([1j])
    assert ar.get_dtype_name(x) == "complex128"
    assert ar.do("astype", tfr.asarray([1.0]), "float32").dtype is tfr.float32
