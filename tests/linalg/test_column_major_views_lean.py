"""A column-major matrix view that covers its whole buffer (a transposed C-ordered
result, quimb's fused legs) is factorised on the engine's lean LAPACK path, as its
owner would be, with the same results the general path gives."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import linalg as engine_linalg


def _f_view(shape: tuple[int, int], seed: int = 0) -> tuple[tfr.TensorView, np.ndarray]:
    x = np.random.default_rng(seed).standard_normal(shape)
    # The transpose of a C-ordered array: a column-major view of the whole buffer.
    v = tfr.asarray(np.ascontiguousarray(x.T)).T
    assert isinstance(v, tfr.TensorView)
    return v, x


@pytest.mark.parametrize("shape", [(32, 24), (8, 24)])
def test_svd_of_a_whole_column_major_view_takes_the_lean_path(
    monkeypatch: pytest.MonkeyPatch, shape: tuple[int, int]
) -> None:
    v, x = _f_view(shape)
    monkeypatch.setattr(engine_linalg, "run_call", lambda *a: pytest.fail("general path"))
    u, s, vh = tfr.linalg.svd(v, full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(x, compute_uv=False))
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s) @ np.asarray(vh), x, atol=1e-12)


def test_qr_of_a_whole_column_major_view_takes_the_lean_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    v, x = _f_view((32, 16))
    monkeypatch.setattr(engine_linalg, "run_call", lambda *a: pytest.fail("general path"))
    q, r = tfr.linalg.qr(v)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), x, atol=1e-12)
    np.testing.assert_array_equal(np.triu(np.asarray(r)), np.asarray(r))


def test_a_column_major_slice_is_still_factorised_on_the_general_path() -> None:
    v, x = _f_view((32, 24))
    part = v[:16]  # column-major strides, but not the whole buffer
    s = tfr.linalg.svd(part, full_matrices=False)[1]
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(x[:16], compute_uv=False))
