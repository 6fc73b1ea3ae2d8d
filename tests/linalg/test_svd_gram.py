"""``svd_truncated(method="gram")``: the selective route, against numpy's full SVD.

The accuracy the docs state (docs/linalg.md, "The selective route"): with
``s`` numpy's singular values and ``r`` the kept rank,

* U and Vh orthonormal to working precision;
* ``|s_i^2 - s~_i^2| <= C eps s_0^2`` for the kept values (so values well above
  ``sqrt(eps) s_0`` are accurate to about ``eps s_0^2 / s_i`` and smaller ones only
  to about ``sqrt(eps) s_0``);
* ``||A - U S Vh||_F^2 <= sum_{i >= r} s_i^2 + C eps s_0^2``;
* ``discarded`` within ``C eps ||A||_F^2`` of ``sum_{i >= r} s_i^2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr

Array = np.ndarray[Any, Any]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _eps(dtype: Any) -> float:
    return float(np.finfo(np.empty(0, dtype).real.dtype).eps)


def _matrix(
    rng: np.random.Generator, m: int, n: int, dtype: Any, decades: float, rank: int
) -> Array:
    """``U diag(s) V^H`` with ``s`` spread over ``decades`` decades and ``rank`` nonzeros."""
    k = min(m, n)

    def unitary(size: int) -> Array:
        z = rng.standard_normal((size, size))
        if np.issubdtype(dtype, np.complexfloating):
            z = z + 1j * rng.standard_normal((size, size))
        q, _ = np.linalg.qr(z)
        return q

    s = np.logspace(0, -decades, k) if k else np.zeros(0)
    s[rank:] = 0
    a = (unitary(m)[:, :k] * s) @ unitary(n)[:k].conj()
    return np.asfortranarray(a.astype(dtype))


def _tensor(a: Array) -> tfr.Tensor:
    return tfr.from_numpy(np.array(a, order="F", copy=True))


def _check(a: Array, r: int, result: Any, dtype: Any) -> None:
    m, n = a.shape
    k = min(m, n)
    u, s, vh, disc = (x.to_numpy() for x in result)
    kept = min(r, k)
    assert u.shape == (m, kept) and s.shape == (kept,) and vh.shape == (kept, n)
    ref = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    s0 = float(ref[0]) if k else 0.0
    eps = _eps(dtype)
    c = 50.0 * max(m, n, 1)
    orth = c * eps
    np.testing.assert_allclose(u.conj().T @ u, np.eye(kept), atol=orth)
    np.testing.assert_allclose(vh @ vh.conj().T, np.eye(kept), atol=orth)
    assert np.all(np.diff(s) <= orth * max(s0, 1.0))
    np.testing.assert_allclose(s**2, ref[:kept] ** 2, rtol=0, atol=c * eps * s0**2 + 1e-300)
    tail = float(np.sum(ref[kept:] ** 2))
    err = float(np.linalg.norm(a.astype(np.complex128) - (u * s) @ vh) ** 2)
    assert err <= tail + c * eps * s0**2 + 1e-300
    fro2 = float(np.sum(ref**2))
    assert abs(float(disc) - tail) <= c * eps * fro2 + 1e-300


@given(
    m=st.integers(1, 9),
    n=st.integers(1, 9),
    r=st.integers(1, 10),
    dtype=st.sampled_from(DTYPES),
    decades=st.sampled_from([0.0, 2.0, 6.0, 12.0]),
    deficient=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_gram_route_meets_its_stated_accuracy_on_random_and_ill_conditioned_inputs(
    m: int, n: int, r: int, dtype: Any, decades: float, deficient: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    k = min(m, n)
    a = _matrix(rng, m, n, dtype, decades, k // 2 if deficient else k)
    result = tfr.CpuEngine().svd_truncated(_tensor(a), max_rank=r, method="gram")
    _check(a, r, result, dtype)


@given(
    batch=st.sampled_from([(2,), (3, 2)]),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_gram_route_on_a_batch_matches_each_matrix_alone(
    batch: tuple[int, ...], dtype: Any, seed: int
) -> None:
    eng = tfr.CpuEngine()
    rng = np.random.default_rng(seed)
    a = np.zeros((6, 4, *batch), dtype, order="F")
    for idx in np.ndindex(*batch):
        a[(slice(None), slice(None), *idx)] = _matrix(rng, 6, 4, dtype, 3.0, 4)
    u, s, vh, disc = (x.to_numpy() for x in eng.svd_truncated(_tensor(a), 2, method="gram"))
    for idx in np.ndindex(*batch):
        one = eng.svd_truncated(_tensor(a[(slice(None), slice(None), *idx)]), 2, method="gram")
        mat = (slice(None), slice(None), *idx)
        np.testing.assert_allclose(s[(slice(None), *idx)], one.S.to_numpy(), rtol=1e-5)
        np.testing.assert_allclose(
            (u[mat] * s[(slice(None), *idx)]) @ vh[mat],
            (one.U.to_numpy() * one.S.to_numpy()) @ one.Vh.to_numpy(),
            atol=1e-4,
        )
        np.testing.assert_allclose(disc[idx], one.discarded.to_numpy(), atol=1e-5)


def test_gram_and_gesdd_agree_on_a_large_matrix_with_decaying_spectrum() -> None:
    # The TRG case in small: 144 x 144, 12 kept of a geometric spectrum.
    rng = np.random.default_rng(7)
    a = _matrix(rng, 144, 144, np.float64, 8.0, 144)
    eng = tfr.CpuEngine()
    gram = eng.svd_truncated(_tensor(a), max_rank=12, method="gram")
    exact = eng.svd_truncated(_tensor(a), max_rank=12, method="gesdd")
    np.testing.assert_allclose(gram.S.to_numpy(), exact.S.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        np.abs(gram.U.to_numpy().T @ exact.U.to_numpy()), np.eye(12), atol=1e-9
    )
    np.testing.assert_allclose(
        float(gram.discarded.to_numpy()), float(exact.discarded.to_numpy()), rtol=1e-9
    )


def test_gram_route_applies_the_cutoff_to_the_leading_values() -> None:
    a = np.asfortranarray(np.diag([10.0, 1.0, 0.05, 0.001, 1e-4]))
    eng = tfr.CpuEngine()
    rel = eng.svd_truncated(_tensor(a), max_rank=4, cutoff=0.004, method="gram")
    np.testing.assert_allclose(rel.S.to_numpy(), [10.0, 1.0, 0.05], rtol=1e-12)
    np.testing.assert_allclose(float(rel.discarded.to_numpy()), 0.001**2 + 1e-8, rtol=1e-6)
    absolute = eng.svd_truncated(_tensor(a), cutoff=0.5, cutoff_mode="absolute", method="gram")
    np.testing.assert_allclose(absolute.S.to_numpy(), [10.0, 1.0], rtol=1e-12)


def test_gram_route_gives_orthonormal_factors_for_a_zero_matrix() -> None:
    u, s, vh, disc = tfr.CpuEngine().svd_truncated(
        _tensor(np.zeros((5, 3), order="F")), max_rank=2, method="gram"
    )
    np.testing.assert_array_equal(s.to_numpy(), [0.0, 0.0])
    np.testing.assert_allclose(u.to_numpy().T @ u.to_numpy(), np.eye(2), atol=1e-15)
    np.testing.assert_allclose(vh.to_numpy() @ vh.to_numpy().T, np.eye(2), atol=1e-15)
    assert float(disc.to_numpy()) == 0.0


def test_gram_route_of_an_empty_matrix_is_empty() -> None:
    u, s, vh, disc = tfr.CpuEngine().svd_truncated(
        _tensor(np.zeros((0, 3), order="F")), max_rank=2, method="gram"
    )
    assert u.shape == (0, 0) and s.shape == (0,) and vh.shape == (0, 3)
    assert float(disc.to_numpy()) == 0.0


@pytest.mark.parametrize("value", [np.nan, np.inf, 1e200])
def test_gram_route_refuses_non_finite_or_overflowing_input(value: float) -> None:
    eng = tfr.CpuEngine()
    a = np.eye(4, order="F")
    a[1, 2] = value
    with pytest.raises(tfr.LinAlgError) as info:
        eng.svd_truncated(_tensor(a), max_rank=2, method="gram")
    assert info.value.kind == "NOT_FINITE" and "gesdd" in str(info.value)
    # The exact route still handles what only overflows the Gram matrix.
    if value == 1e200:
        s = eng.svd_truncated(_tensor(a), max_rank=2).S.to_numpy()
        np.testing.assert_allclose(s[0], 1e200)


def test_gram_route_leaves_input_unchanged_and_runs_under_forbid_copies() -> None:
    eng = tfr.CpuEngine()
    a = _matrix(np.random.default_rng(3), 7, 11, np.complex128, 4.0, 7)
    t = _tensor(a)
    with tfr.forbid_copies():
        eng.svd_truncated(t, max_rank=3, method="gram")
        eng.svd_truncated(t.as_view(), max_rank=3, method="gram")
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_gram_route_reaches_a_pool_steady_state() -> None:
    eng = tfr.CpuEngine()
    t = _tensor(_matrix(np.random.default_rng(4), 40, 30, np.float64, 5.0, 30))
    eng.svd_truncated(t, max_rank=5, method="gram")
    misses = eng.buffer_pool_cache_stats().misses
    for _ in range(3):
        eng.svd_truncated(t, max_rank=5, method="gram")
    assert eng.buffer_pool_cache_stats().misses == misses


def test_gram_route_failure_gives_every_pooled_buffer_back() -> None:
    eng = tfr.CpuEngine()
    good = _tensor(np.eye(6, order="F"))
    bad = np.eye(6, order="F")
    bad[0, 0] = np.nan
    eng.svd_truncated(good, max_rank=2, method="gram")
    misses = eng.buffer_pool_cache_stats().misses
    with pytest.raises(tfr.LinAlgError):
        eng.svd_truncated(_tensor(bad), max_rank=2, method="gram")
    eng.svd_truncated(good, max_rank=2, method="gram")
    assert eng.buffer_pool_cache_stats().misses == misses
    assert eng.buffer_pool_cache_stats().refused_aliased == 0


def test_unknown_method_is_refused() -> None:
    with pytest.raises(tfr.ValidationError) as info:
        tfr.CpuEngine().svd_truncated(_tensor(np.eye(2, order="F")), method="arpack")
    assert info.value.kind == "INVALID_MODE" and "gram" in str(info.value)


def test_per_shape_workspace_caches_start_over_when_full() -> None:
    from tenferro.engine.linalg import _lapack

    cache: dict[int, int] = {}
    for i in range(_lapack.SHAPE_CACHE_SIZE + 5):
        assert _lapack.remember(cache, i, i * 2) == i * 2
    assert len(cache) == 5 and cache[_lapack.SHAPE_CACHE_SIZE + 4] == 2 * (
        _lapack.SHAPE_CACHE_SIZE + 4
    )
