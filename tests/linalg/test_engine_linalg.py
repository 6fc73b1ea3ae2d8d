"""Engine linear algebra against numpy.linalg / scipy.linalg, identities, typed failures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr

Array = np.ndarray[Any, Any]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _tol(dtype: Any) -> float:
    return 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> Array:
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return np.asfortranarray(a.astype(dtype))


def tensor(a: Array) -> tfr.Tensor:
    """Adopt a private Fortran-ordered copy (the test keeps ``a`` for comparisons)."""
    return tfr.from_numpy(np.array(a, order="F", copy=True))


def hermitian(rng: np.random.Generator, n: int, dtype: Any, batch: tuple[int, ...] = ()) -> Array:
    a = rand(rng, (n, n, *batch), dtype)
    h = a + np.conj(np.swapaxes(a, 0, 1))
    return np.asfortranarray(h)


def spd(rng: np.random.Generator, n: int, dtype: Any) -> Array:
    a = rand(rng, (n, n), dtype)
    return np.asfortranarray(a @ a.conj().T + n * np.eye(n, dtype=dtype))


def lead(x: Array, core: int = 2) -> Array:
    """A trailing-batch array [core..., B...] as numpy's leading-batch [B..., core...]."""
    nb = x.ndim - core
    return np.moveaxis(x, tuple(range(core)), tuple(range(nb, nb + core)))


@pytest.fixture
def eng() -> tfr.CpuEngine:
    return tfr.CpuEngine()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


shapes = st.tuples(st.integers(0, 6), st.integers(0, 6))
batches = st.sampled_from([(), (2,), (3, 2)])
dtypes = st.sampled_from(DTYPES)


# ---------------------------------------------------------------------- SVD
@given(shape=shapes, batch=batches, dtype=dtypes, seed=st.integers(0, 2**16))
def test_svd_reconstructs_and_matches_numpy_singular_values(
    shape: tuple[int, int], batch: tuple[int, ...], dtype: Any, seed: int
) -> None:
    eng = tfr.CpuEngine()
    a = rand(np.random.default_rng(seed), (*shape, *batch), dtype)
    u, s, vh = (x.to_numpy() for x in eng.svd(tensor(a)))
    k = min(shape)
    assert u.shape == (shape[0], k, *batch) and vh.shape == (k, shape[1], *batch)
    assert s.dtype == np.empty(0, dtype).real.dtype
    ul, sl, vl = lead(u), lead(s, 1), lead(vh)
    np.testing.assert_allclose((ul * sl[..., None, :]) @ vl, lead(a), atol=_tol(dtype) * 10)
    np.testing.assert_allclose(sl, np.linalg.svd(lead(a), compute_uv=False), atol=_tol(dtype) * 10)
    # Descending.
    assert np.all(np.diff(sl, axis=-1) <= 1e-6)


def test_svd_full_matrices_gives_square_unitary_factors(eng: tfr.CpuEngine, rng: Any) -> None:
    a = rand(rng, (5, 3), np.complex128)
    u, s, vh = (x.to_numpy() for x in eng.svd(tensor(a), full_matrices=True))
    assert u.shape == (5, 5) and vh.shape == (3, 3)
    np.testing.assert_allclose(u.conj().T @ u, np.eye(5), atol=1e-12)
    np.testing.assert_allclose(vh @ vh.conj().T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(u[:, :3] * s @ vh, a, atol=1e-12)


def test_svd_of_empty_matrix_with_full_matrices_gives_identities(eng: tfr.CpuEngine) -> None:
    u, s, vh = eng.svd(tfr.from_numpy(np.empty((0, 3), order="F")), full_matrices=True)
    assert s.shape == (0,)
    np.testing.assert_array_equal(vh.to_numpy(), np.eye(3))
    assert u.shape == (0, 0)


def test_svdvals_matches_scipy(eng: tfr.CpuEngine, rng: Any) -> None:
    a = rand(rng, (7, 4), np.float64)
    np.testing.assert_allclose(eng.svdvals(tensor(a)).to_numpy(), sla.svdvals(a), rtol=1e-12)


def test_svd_of_ill_conditioned_matrix_matches_numpy(eng: tfr.CpuEngine) -> None:
    h = sla.hilbert(12)
    s = eng.svdvals(tensor(h)).to_numpy()
    np.testing.assert_allclose(s, np.linalg.svd(h, compute_uv=False), rtol=1e-6, atol=1e-17)


def test_svd_truncated_keeps_max_rank_and_reports_discarded_weight(
    eng: tfr.CpuEngine, rng: Any
) -> None:
    a = rand(rng, (8, 6), np.float64)
    full = np.linalg.svd(a, compute_uv=False)
    u, s, vh, disc = eng.svd_truncated(tensor(a), max_rank=3)
    assert u.shape == (8, 3) and s.shape == (3,) and vh.shape == (3, 6)
    np.testing.assert_allclose(s.to_numpy(), full[:3], rtol=1e-12)
    np.testing.assert_allclose(float(disc.to_numpy()), np.sum(full[3:] ** 2), rtol=1e-12)
    # U S Vh is the best rank-3 approximation: its error is the discarded weight.
    err = np.linalg.norm(u.to_numpy() * s.to_numpy() @ vh.to_numpy() - a) ** 2
    np.testing.assert_allclose(err, np.sum(full[3:] ** 2), rtol=1e-9)


def test_svd_truncated_relative_and_absolute_cutoffs(eng: tfr.CpuEngine) -> None:
    a = np.asfortranarray(np.diag([10.0, 1.0, 0.05, 0.001]))
    rel = eng.svd_truncated(tensor(a), cutoff=0.004)  # drops s < 0.04
    assert rel.S.to_numpy().tolist() == [10.0, 1.0, 0.05]
    absolute = eng.svd_truncated(tensor(a), cutoff=0.5, cutoff_mode="absolute")
    assert absolute.S.to_numpy().tolist() == [10.0, 1.0]
    np.testing.assert_allclose(float(absolute.discarded.to_numpy()), 0.05**2 + 0.001**2)


def test_svd_truncated_batch_zeroes_values_beyond_each_matrix_rank(eng: tfr.CpuEngine) -> None:
    a = np.zeros((3, 3, 2), order="F")
    a[:, :, 0] = np.diag([4.0, 2.0, 1.0])
    a[:, :, 1] = np.diag([4.0, 1e-9, 1e-10])
    _u, s, _vh, disc = eng.svd_truncated(tensor(a), cutoff=1e-6)
    assert s.shape == (3, 2)
    np.testing.assert_allclose(s.to_numpy()[:, 1], [4.0, 0.0, 0.0])
    np.testing.assert_allclose(disc.to_numpy(), [0.0, 1e-18 + 1e-20])


def test_svd_truncated_refuses_bad_max_rank(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="max_rank"):
        eng.svd_truncated(tensor(np.eye(2)), max_rank=0)


# ---------------------------------------------------------------------- QR, LQ
@given(shape=shapes, batch=batches, dtype=dtypes, mode=st.sampled_from(["reduced", "complete"]))
def test_qr_reconstructs_with_orthonormal_q(
    shape: tuple[int, int], batch: tuple[int, ...], dtype: Any, mode: str
) -> None:
    eng = tfr.CpuEngine()
    a = rand(np.random.default_rng(7), (*shape, *batch), dtype)
    q, r = (lead(x.to_numpy()) for x in eng.qr(tensor(a), mode))
    m, n = shape
    qc = m if mode == "complete" else min(m, n)
    assert q.shape[-2:] == (m, qc) and r.shape[-2:] == (qc, n)
    np.testing.assert_allclose(q @ r, lead(a), atol=_tol(dtype) * 10)
    eye = np.broadcast_to(np.eye(qc), (*q.shape[:-2], qc, qc))
    np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, eye, atol=_tol(dtype) * 10)
    np.testing.assert_array_equal(np.tril(r, -1), 0)


@given(shape=shapes, dtype=dtypes, mode=st.sampled_from(["reduced", "complete"]))
def test_lq_reconstructs_with_orthonormal_rows(
    shape: tuple[int, int], dtype: Any, mode: str
) -> None:
    eng = tfr.CpuEngine()
    a = rand(np.random.default_rng(8), shape, dtype)
    lo, q = (x.to_numpy() for x in eng.lq(tensor(a), mode))
    np.testing.assert_allclose(lo @ q, a, atol=_tol(dtype) * 10)
    np.testing.assert_allclose(q @ q.conj().T, np.eye(q.shape[0]), atol=_tol(dtype) * 10)
    np.testing.assert_array_equal(np.triu(lo, 1), 0)


def test_qr_matches_numpy_up_to_signs(eng: tfr.CpuEngine, rng: Any) -> None:
    a = rand(rng, (6, 4), np.float64)
    r = eng.qr(tensor(a)).R.to_numpy()
    np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(a).R), atol=1e-12)


def test_qr_refuses_unknown_mode(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="mode"):
        eng.qr(tensor(np.eye(2)), "r")


# ---------------------------------------------------------------------- eigenproblems
@given(n=st.integers(0, 6), batch=batches, dtype=dtypes, uplo=st.sampled_from(["L", "U"]))
def test_eigh_matches_numpy_and_diagonalises(
    n: int, batch: tuple[int, ...], dtype: Any, uplo: str
) -> None:
    eng = tfr.CpuEngine()
    h = hermitian(np.random.default_rng(3), n, dtype, batch)
    w, v = (x.to_numpy() for x in eng.eigh(tensor(h), uplo))
    wl, vl, hl = lead(w, 1), lead(v), lead(h)
    np.testing.assert_allclose(wl, np.linalg.eigvalsh(hl, UPLO=uplo), atol=_tol(dtype) * 20)
    np.testing.assert_allclose(hl @ vl, vl * wl[..., None, :], atol=_tol(dtype) * 20 * max(1, n))
    np.testing.assert_allclose(eng.eigvalsh(tensor(h), uplo).to_numpy(), w, atol=_tol(dtype) * 20)


def test_eigh_reads_only_the_requested_triangle(eng: tfr.CpuEngine, rng: Any) -> None:
    h = hermitian(rng, 4, np.float64)
    junk = h.copy(order="F")
    junk[np.triu_indices(4, 1)] = 99.0
    np.testing.assert_allclose(
        eng.eigvalsh(tensor(junk), "L").to_numpy(), np.linalg.eigvalsh(h), atol=1e-12
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_satisfies_a_v_equals_v_w(eng: tfr.CpuEngine, rng: Any, dtype: Any) -> None:
    a = rand(rng, (5, 5, 2), dtype)
    w, v = (x.to_numpy() for x in eng.eig(tensor(a)))
    assert np.iscomplexobj(w) and np.iscomplexobj(v)
    for b in range(2):
        np.testing.assert_allclose(
            a[:, :, b] @ v[:, :, b], v[:, :, b] * w[:, b], atol=_tol(dtype) * 50
        )
        np.testing.assert_allclose(
            np.sort_complex(w[:, b]), np.sort_complex(np.linalg.eigvals(a[:, :, b])),
            atol=_tol(dtype) * 50,
        )  # fmt: skip


# ---------------------------------------------------------------------- Cholesky, solve, inv, det
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_scipy(eng: tfr.CpuEngine, rng: Any, dtype: Any, upper: bool) -> None:
    a = spd(rng, 5, dtype)
    c = eng.cholesky(tensor(a), upper=upper).to_numpy()
    np.testing.assert_allclose(c, sla.cholesky(a, lower=not upper), atol=_tol(dtype) * 10)


@given(n=st.integers(0, 6), k=st.integers(0, 3), batch=batches, dtype=dtypes)
def test_solve_matches_numpy(n: int, k: int, batch: tuple[int, ...], dtype: Any) -> None:
    eng = tfr.CpuEngine()
    r = np.random.default_rng(11)
    a = np.asfortranarray(
        rand(r, (n, n, *batch), dtype) + 4 * np.eye(n, dtype=dtype)[(..., *([None] * len(batch)))]
    )
    b = rand(r, (n, k, *batch), dtype)
    x = eng.solve(tensor(a), tensor(b)).to_numpy()
    np.testing.assert_allclose(lead(a) @ lead(x), lead(b), atol=_tol(dtype) * 10)


def test_solve_with_vector_rhs(eng: tfr.CpuEngine, rng: Any) -> None:
    a = rand(rng, (4, 4), np.float64) + 4 * np.eye(4)
    b = rng.standard_normal(4)
    x = eng.solve(tensor(a), tensor(b)).to_numpy()
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12)


def test_inv_det_slogdet_match_numpy(eng: tfr.CpuEngine, rng: Any) -> None:
    for dtype in DTYPES:
        a = rand(rng, (4, 4, 3), dtype)
        al = lead(a)
        np.testing.assert_allclose(
            lead(eng.inv(tensor(a)).to_numpy()), np.linalg.inv(al), rtol=_tol(dtype) * 100
        )
        np.testing.assert_allclose(
            eng.det(tensor(a)).to_numpy(), np.linalg.det(al), rtol=_tol(dtype) * 100
        )
        sign, logabs = eng.slogdet(tensor(a))
        ref = np.linalg.slogdet(al)
        np.testing.assert_allclose(sign.to_numpy(), ref.sign, rtol=_tol(dtype) * 100)
        np.testing.assert_allclose(logabs.to_numpy(), ref.logabsdet, rtol=_tol(dtype) * 100)


def test_det_of_singular_matrix_is_zero_and_slogdet_minus_inf(eng: tfr.CpuEngine) -> None:
    a = np.asfortranarray([[1.0, 2.0], [2.0, 4.0]])
    assert float(eng.det(tensor(a)).to_numpy()) == 0.0
    sign, logabs = eng.slogdet(tensor(a))
    assert float(sign.to_numpy()) == 0.0 and float(logabs.to_numpy()) == -np.inf


def test_det_of_empty_matrix_is_one(eng: tfr.CpuEngine) -> None:
    assert float(eng.det(tfr.from_numpy(np.empty((0, 0), order="F"))).to_numpy()) == 1.0


# ---------------------------------------------------------------------- lstsq, pinv, norms, expm
@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_matches_numpy(eng: tfr.CpuEngine, rng: Any, dtype: Any) -> None:
    a = rand(rng, (7, 4), dtype)
    b = rand(rng, (7, 2), dtype)
    x, res, rank, sv = eng.lstsq(tensor(a), tensor(b))
    ref = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(x.to_numpy(), ref[0], atol=_tol(dtype) * 10)
    np.testing.assert_allclose(res.to_numpy(), ref[1], rtol=_tol(dtype) * 10)
    assert int(rank.to_numpy()) == ref[2]
    np.testing.assert_allclose(sv.to_numpy(), ref[3], rtol=_tol(dtype) * 10)


def test_lstsq_of_rank_deficient_matrix_reports_rank_and_nan_residuals(
    eng: tfr.CpuEngine,
) -> None:
    a = np.asfortranarray(np.outer([1.0, 2.0, 3.0], [1.0, 1.0]))
    out = eng.lstsq(tensor(a), tensor(np.array([1.0, 2.0, 3.0])))
    assert int(out.rank.to_numpy()) == 1
    assert np.isnan(out.residuals.to_numpy()).all()
    np.testing.assert_allclose(out.solution.to_numpy(), np.linalg.pinv(a) @ [1.0, 2.0, 3.0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv_matches_numpy(eng: tfr.CpuEngine, rng: Any, dtype: Any) -> None:
    a = rand(rng, (5, 3, 2), dtype)
    p = eng.pinv(tensor(a)).to_numpy()
    assert p.shape == (3, 5, 2)
    np.testing.assert_allclose(lead(p), np.linalg.pinv(lead(a)), atol=_tol(dtype) * 10)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norm_matches_numpy(eng: tfr.CpuEngine, rng: Any, ord: Any) -> None:
    a = rand(rng, (4, 3, 2), np.complex128)
    np.testing.assert_allclose(
        eng.matrix_norm(tensor(a), ord).to_numpy(),
        np.linalg.matrix_norm(lead(a), ord=ord),
        rtol=1e-12,
    )


def test_vector_norm_matches_numpy(eng: tfr.CpuEngine, rng: Any) -> None:
    a = rand(rng, (4, 3, 2), np.float64)
    np.testing.assert_allclose(float(eng.vector_norm(tensor(a)).to_numpy()), np.linalg.norm(a))
    np.testing.assert_allclose(
        eng.vector_norm(tensor(a), axes=(0, 2), ord=1).to_numpy(),
        np.linalg.vector_norm(a, axis=(0, 2), ord=1),
    )


def test_expm_matches_scipy(eng: tfr.CpuEngine, rng: Any) -> None:
    a = rand(rng, (4, 4, 2), np.complex128) * 0.3
    e = eng.expm(tensor(a)).to_numpy()
    for b in range(2):
        np.testing.assert_allclose(e[:, :, b], sla.expm(a[:, :, b]), rtol=1e-12)


# ---------------------------------------------------------------------- ownership
def test_inputs_are_left_unchanged(eng: tfr.CpuEngine, rng: Any) -> None:
    a = spd(rng, 5, np.float64)
    t = tensor(a)
    for op in (
        eng.svd,
        eng.qr,
        eng.lq,
        eng.eigh,
        eng.eig,
        eng.cholesky,
        eng.inv,
        eng.det,
        eng.pinv,
    ):
        op(t)
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_linalg_runs_under_forbid_copies(eng: tfr.CpuEngine, rng: Any) -> None:
    t = tensor(spd(rng, 6, np.float64))
    before = tfr.copy_stats().copies
    with tfr.forbid_copies():
        eng.svd(t)
        eng.svd_truncated(t, max_rank=2)
        eng.qr(t)
        eng.eigh(t)
        eng.solve(t, t)
    assert tfr.copy_stats().copies == before


def test_repeated_svd_reaches_pool_steady_state(eng: tfr.CpuEngine, rng: Any) -> None:
    t = tensor(rand(rng, (20, 12), np.float64))
    eng.svd_truncated(t, max_rank=5)
    misses = eng.buffer_pool_cache_stats().misses
    for _ in range(5):
        eng.svd_truncated(t, max_rank=5)
    assert eng.buffer_pool_cache_stats().misses == misses


def test_views_are_accepted_as_operands(eng: tfr.CpuEngine, rng: Any) -> None:
    a = rand(rng, (4, 6), np.float64)
    v = tensor(a).as_view().transpose_view((1, 0))
    np.testing.assert_allclose(eng.svdvals(v).to_numpy(), np.linalg.svd(a.T, compute_uv=False))


# ---------------------------------------------------------------------- typed failures
def test_singular_solve_raises_linalg_error_naming_op_and_batch_index(
    eng: tfr.CpuEngine,
) -> None:
    a = np.zeros((2, 2, 3), order="F")
    a[:, :, 0] = np.eye(2)
    a[:, :, 2] = np.eye(2)
    with pytest.raises(tfr.LinAlgError) as info:
        eng.solve(tensor(a), tensor(np.ones((2, 1, 3), order="F")))
    err = info.value
    assert isinstance(err, np.linalg.LinAlgError) and isinstance(err, tfr.TenferroError)
    assert err.op == "CpuEngine.solve" and err.kind == "SINGULAR"
    assert err.batch_index == (1,) and "(1,)" in str(err)


def test_numpy_code_catches_tenferro_linalg_error(eng: tfr.CpuEngine) -> None:
    with pytest.raises(np.linalg.LinAlgError):
        eng.inv(tensor(np.zeros((3, 3))))


def test_cholesky_of_indefinite_matrix_raises_not_positive_definite(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.LinAlgError) as info:
        eng.cholesky(tensor(np.diag([1.0, -1.0])))
    assert info.value.kind == "NOT_POSITIVE_DEFINITE" and info.value.batch_index == ()


def test_svd_of_nan_matrix_raises_linalg_error(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.LinAlgError, match="NaN"):
        eng.svd(tensor(np.full((3, 3), np.nan)))


def test_failed_call_gives_every_pooled_buffer_back(eng: tfr.CpuEngine) -> None:
    bad = tensor(np.zeros((16, 16)))
    good = tensor(np.eye(16))
    eng.inv(good)  # warm: the output buffer is now in the pool
    misses = eng.buffer_pool_cache_stats().misses
    with pytest.raises(tfr.LinAlgError):
        eng.inv(bad)
    eng.inv(good)
    assert eng.buffer_pool_cache_stats().misses == misses
    assert eng.buffer_pool_cache_stats().refused_aliased == 0


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda e: e.svd(tensor(np.arange(4).reshape(2, 2))), "UNSUPPORTED_DTYPE"),
        (lambda e: e.svd(tensor(np.ones(3))), "INVALID_RANK"),
        (lambda e: e.inv(tensor(np.ones((2, 3)))), "NOT_SQUARE"),
        (lambda e: e.solve(tensor(np.eye(2)), tensor(np.ones((3, 1)))), "SHAPE_MISMATCH"),
        (
            lambda e: e.solve(tensor(np.eye(2)), tensor(np.ones((2, 1), np.float32))),
            "DTYPE_MISMATCH",
        ),
        (lambda e: e.eigh(tensor(np.eye(2)), "X"), "INVALID_UPLO"),
        (lambda e: e.matrix_norm(tensor(np.eye(2)), 3), "INVALID_ORD"),
    ],
)
def test_bad_input_raises_validation_error(eng: tfr.CpuEngine, call: Any, kind: str) -> None:
    with pytest.raises(tfr.ValidationError) as info:
        call(eng)
    assert info.value.kind == kind and info.value.op.startswith("CpuEngine.")


def test_eigensolver_refuses_nan_before_lapack(eng: tfr.CpuEngine) -> None:
    # syevd cannot converge on NaN entries (info > 0); they are refused before it runs.
    with pytest.raises(tfr.LinAlgError) as info:
        eng.eigh(tensor(np.full((4, 4), np.nan)))
    assert info.value.kind == "NOT_FINITE" and info.value.op == "CpuEngine.eigh"


@pytest.mark.parametrize(
    "call",
    [
        lambda eng, a, junk: eng.eigh(a, junk),
        lambda eng, a, junk: eng.eigvalsh(a, junk),
        lambda eng, a, junk: eng.qr(a, junk),
        lambda eng, a, junk: eng.svd_truncated(a, cutoff_mode=junk),
        lambda eng, a, junk: eng.matrix_norm(a, junk),
    ],
    ids=["eigh uplo", "eigvalsh uplo", "qr mode", "svd_truncated cutoff_mode", "matrix_norm ord"],
)
def test_an_array_as_a_mode_argument_is_a_typed_error(eng: tfr.CpuEngine, call: Any) -> None:
    # Found by the fuzz: `mode not in (...)` with a numpy array compares
    # elementwise and let numpy's raw "truth value is ambiguous" ValueError out.
    a = tfr.from_numpy(np.asfortranarray(np.eye(3)))
    with pytest.raises(tfr.ValidationError):
        call(eng, a, np.arange(6.0))
