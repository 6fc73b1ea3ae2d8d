"""The QR of a C-ordered matrix runs ?geqrf on a transposed copy (not the LQ of its
column-major owner) and hands Q and R out C-ordered, as numpy's are."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import CpuEngine


@pytest.mark.parametrize("shape", [(64, 32), (32, 64), (5, 5), (7, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_qr_of_a_c_ordered_matrix_gives_c_ordered_factors(
    monkeypatch: pytest.MonkeyPatch, shape: tuple[int, int], mode: str, dtype: type
) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    if dtype is np.complex128:
        x = x + 1j * rng.standard_normal(shape)
    monkeypatch.setattr(CpuEngine, "lq", lambda *a, **k: pytest.fail("LQ used"))
    q, r = tfr.linalg.qr(tfr.asarray(x.copy()), mode=mode)
    qn, rn = np.linalg.qr(x, mode=mode)
    nq, nr = np.asarray(q), np.asarray(r)
    tol = 1e-4 if dtype is np.float32 else 1e-10
    assert nq.shape == qn.shape and nr.shape == rn.shape
    assert nq.flags.c_contiguous and nr.flags.c_contiguous
    np.testing.assert_allclose(nq @ nr, x, atol=10 * tol)
    np.testing.assert_allclose(np.abs(nq), np.abs(qn), atol=10 * tol)
    np.testing.assert_array_equal(np.triu(nr), nr)
