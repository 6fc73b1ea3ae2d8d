"""Property tests for every engine factorisation the SVD/QR/eigh suites do not cover.

Each test draws a matrix shape (empty dimensions included), a trailing batch,
one of the four LAPACK dtypes and a conditioning: random entries, or singular
values spread over ``decades`` orders of magnitude (``A = U diag(s) V^H`` with
random unitary U and V). The engine's result is compared with numpy's (or
scipy's) on the leading-batch view of the same data, or checked against the
identity it must satisfy, within a tolerance scaled by the dtype's epsilon and
by the condition number where the quantity is not backward stable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr

Array = np.ndarray[Any, Any]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]

batches = st.sampled_from([(), (2,), (3, 2)])
dtypes = st.sampled_from(DTYPES)
sizes = st.integers(0, 6)
seeds = st.integers(0, 2**16)
# 0: random entries; k > 0: singular values from 1 down to 10^-k.
decades = st.sampled_from([0, 0, 3, 6])
# The arguments of `matrices` for an m x n stack.
MATRICES = {
    "m": sizes,
    "n": sizes,
    "batch": batches,
    "dtype": dtypes,
    "seed": seeds,
    "decade": decades,
}


def eps(dtype: Any) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def lead(x: Array, core: int = 2) -> Array:
    """A trailing-batch array ``[core..., B...]`` as numpy's ``[B..., core...]``."""
    nb = x.ndim - core
    return np.moveaxis(x, tuple(range(core)), tuple(range(nb, nb + core)))


def trail(x: Array, core: int = 2) -> Array:
    """numpy's ``[B..., core...]`` as tenferro's ``[core..., B...]``, F-ordered."""
    nb = x.ndim - core
    return np.asfortranarray(np.moveaxis(x, tuple(range(nb, nb + core)), tuple(range(core))))


def unitary(rng: np.random.Generator, n: int, dtype: Any) -> Array:
    z = rng.standard_normal((n, n))
    if np.issubdtype(dtype, np.complexfloating):
        z = z + 1j * rng.standard_normal((n, n))
    q, _ = np.linalg.qr(z)
    return q


def matrices(seed: int, m: int, n: int, batch: tuple[int, ...], dtype: Any, decade: int) -> Array:
    """Leading-batch ``[B..., m, n]`` matrices of ``dtype`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    count = int(np.prod(batch, dtype=int))
    out = np.empty((count, m, n), dtype=np.result_type(dtype, np.float64))
    k = min(m, n)
    for i in range(count):
        if decade and k:
            s = np.logspace(0, -decade, k)
            out[i] = (unitary(rng, m, dtype)[:, :k] * s) @ unitary(rng, n, dtype)[:k, :]
        else:
            z = rng.standard_normal((m, n))
            if np.issubdtype(dtype, np.complexfloating):
                z = z + 1j * rng.standard_normal((m, n))
            out[i] = z
    return out.astype(dtype).reshape((*batch, m, n))


def tensor(a_lead: Array, core: int = 2) -> tfr.Tensor:
    return tfr.from_numpy(trail(a_lead, core))


def cond(a: Array) -> float:
    """The largest 2-norm condition number in a stack (1 for empty matrices)."""
    if a.size == 0:
        return 1.0
    s = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    return float(np.max(s[..., 0] / np.maximum(s[..., -1], 1e-300)))


@given(n=sizes, batch=batches, dtype=dtypes, seed=seeds, decade=decades)
def test_eig_satisfies_a_v_equals_v_w_with_unit_vectors(
    n: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int
) -> None:
    a = matrices(seed, n, n, batch, dtype, decade)
    w, v = tfr.CpuEngine().eig(tensor(a))
    wl, vl = lead(w.to_numpy(), 1), lead(v.to_numpy())
    assert np.iscomplexobj(wl) and wl.shape == (*batch, n)
    scale = max(1.0, float(np.abs(a).max(initial=0.0)))
    tol = 200 * n * eps(dtype) * scale
    np.testing.assert_allclose(a @ vl, vl * wl[..., None, :], atol=tol)
    if n:
        np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1.0, rtol=100 * eps(dtype))


@given(n=sizes, batch=batches, dtype=dtypes, seed=seeds, decade=decades, upper=st.booleans())
def test_cholesky_reconstructs_and_matches_numpy(
    n: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int, upper: bool
) -> None:
    g = matrices(seed, n, n, batch, dtype, decade)
    # Hermitian positive definite, condition number up to 10^(2 decade) + n shift.
    a = (g @ np.conj(np.swapaxes(g, -1, -2)) + np.eye(n, dtype=dtype)).astype(dtype)
    c = lead(tfr.CpuEngine().cholesky(tensor(a), upper=upper).to_numpy())
    ref = np.linalg.cholesky(a, upper=upper)
    tol = 100 * n * eps(dtype) * max(1.0, float(np.abs(a).max(initial=0.0)))
    np.testing.assert_allclose(c, ref, atol=tol)
    product = np.conj(np.swapaxes(c, -1, -2)) @ c if upper else c @ np.conj(np.swapaxes(c, -1, -2))
    np.testing.assert_allclose(product, a, atol=tol)


@given(n=sizes, batch=batches, dtype=dtypes, seed=seeds, decade=decades)
def test_inv_is_an_inverse_to_within_the_condition_number(
    n: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int
) -> None:
    a = matrices(seed, n, n, batch, dtype, decade)
    x = lead(tfr.CpuEngine().inv(tensor(a)).to_numpy())
    tol = 100 * max(n, 1) * eps(dtype) * cond(a)
    np.testing.assert_allclose(a @ x, np.broadcast_to(np.eye(n), a.shape), atol=tol)


@given(n=sizes, batch=batches, dtype=dtypes, seed=seeds, decade=decades)
def test_det_and_slogdet_match_numpy(
    n: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int
) -> None:
    a = matrices(seed, n, n, batch, dtype, decade)
    eng = tfr.CpuEngine()
    t = tensor(a)
    sign, logabs = eng.slogdet(t)
    ref = np.linalg.slogdet(a)
    # Both come from an LU factorisation (their pivots may differ): the relative
    # error of det is about n eps cond(A), and so is log|det|'s absolute error.
    err = 50 * max(n, 1) * eps(dtype) * cond(a)
    np.testing.assert_allclose(logabs.to_numpy(), ref.logabsdet, atol=err)
    if err < 0.5:  # the sign is determined
        np.testing.assert_allclose(sign.to_numpy(), ref.sign, atol=err)
        np.testing.assert_allclose(eng.det(t).to_numpy(), np.linalg.det(a), rtol=err)


@given(
    m=sizes,
    n=sizes,
    k=st.integers(1, 3),
    batch=batches,
    dtype=dtypes,
    seed=seeds,
    decade=st.sampled_from([0, 3]),
)
def test_lstsq_matches_numpy_on_full_rank_matrices(
    m: int, n: int, k: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int
) -> None:
    a = matrices(seed, m, n, batch, dtype, decade)
    b = matrices(seed + 1, m, k, batch, dtype, 0)
    x, res, rank, sv = tfr.CpuEngine().lstsq(tensor(a), tensor(b))
    xl = lead(x.to_numpy())
    tol = 100 * max(m, n, 1) * eps(dtype) * cond(a)
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    for idx in np.ndindex(*batch):
        ref = np.linalg.lstsq(a[idx], b[idx], rcond=None)
        np.testing.assert_allclose(
            xl[idx], ref[0], atol=tol * scale * max(1.0, np.abs(ref[0]).max(initial=0.0))
        )
        assert int(rank.to_numpy()[idx]) == ref[2]
        np.testing.assert_allclose(
            lead(sv.to_numpy(), 1)[idx], ref[3], atol=100 * max(m, n, 1) * eps(dtype)
        )
        if m > n and ref[2] == n:
            np.testing.assert_allclose(
                lead(res.to_numpy(), 1)[idx], ref[1], atol=tol * scale * scale * m
            )


@given(**MATRICES)
def test_pinv_satisfies_the_penrose_conditions(
    m: int, n: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int
) -> None:
    a = matrices(seed, m, n, batch, dtype, decade)
    p = lead(tfr.CpuEngine().pinv(tensor(a)).to_numpy())
    assert p.shape == (*batch, n, m)
    tol = 100 * max(m, n, 1) * eps(dtype) * cond(a)
    np.testing.assert_allclose(a @ p @ a, a, atol=tol)
    np.testing.assert_allclose(p @ a @ p, p, atol=tol * max(1.0, float(np.abs(p).max(initial=0.0))))


@given(**MATRICES, ord=st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]))
def test_matrix_norm_matches_numpy(
    m: int, n: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int, ord: Any
) -> None:
    a = matrices(seed, m, n, batch, dtype, decade)
    got = tfr.CpuEngine().matrix_norm(tensor(a), ord).to_numpy()
    try:
        ref = np.linalg.matrix_norm(a, ord=ord)
    except ValueError:
        # numpy has no minimum over an empty axis (ord -1, -2, -inf on some empty
        # shapes); every norm of an empty matrix is 0 here (docs/linalg.md).
        assert not a.size
        np.testing.assert_array_equal(got, 0.0)
        return
    # Singular values carry an absolute error of about eps * s[0] (the smallest one,
    # ord -2, is not relatively accurate): the tolerance scales with ||A||_F >= s[0].
    scale = float(np.max(np.linalg.matrix_norm(a, ord="fro"), initial=0.0))
    tol = 100 * max(m, n, 1) * eps(dtype)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale)


@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    dtype=dtypes,
    seed=seeds,
    ord=st.sampled_from([2, 1, np.inf, -np.inf, 3.0, 0]),
)
def test_vector_norm_over_all_elements_matches_numpy(
    shape: list[int], dtype: Any, seed: int, ord: Any
) -> None:
    a = matrices(seed, int(np.prod(shape)), 1, (), dtype, 0).reshape(shape, order="F")
    if not a.size and ord == -np.inf:
        return  # numpy refuses the minimum of nothing
    got = tfr.CpuEngine().vector_norm(tfr.from_numpy(np.asfortranarray(a)), ord=ord).to_numpy()
    np.testing.assert_allclose(got, np.linalg.vector_norm(a, ord=ord), rtol=100 * eps(dtype))


@given(n=sizes, batch=batches, dtype=dtypes, seed=seeds)
def test_expm_matches_scipy(n: int, batch: tuple[int, ...], dtype: Any, seed: int) -> None:
    a = matrices(seed, n, n, batch, dtype, 0) * 0.5
    e = lead(tfr.CpuEngine().expm(tensor(a)).to_numpy())
    for idx in np.ndindex(*batch):
        ref = sla.expm(a[idx])
        np.testing.assert_allclose(
            e[idx],
            ref,
            atol=1000 * max(n, 1) * eps(dtype) * max(1.0, float(np.abs(ref).max(initial=0.0))),
        )


@given(**MATRICES, complete=st.booleans())
def test_lq_reconstructs_with_orthonormal_rows(
    m: int, n: int, batch: tuple[int, ...], dtype: Any, seed: int, decade: int, complete: bool
) -> None:
    a = matrices(seed, m, n, batch, dtype, decade)
    lo, q = tfr.CpuEngine().lq(tensor(a), mode="complete" if complete else "reduced")
    ll, ql = lead(lo.to_numpy()), lead(q.to_numpy())
    rows = n if complete else min(m, n)
    assert ql.shape == (*batch, rows, n)
    tol = 100 * max(m, n, 1) * eps(dtype)
    np.testing.assert_allclose(ll @ ql, a, atol=tol * max(1.0, float(np.abs(a).max(initial=0.0))))
    np.testing.assert_allclose(
        ql @ np.conj(np.swapaxes(ql, -1, -2)),
        np.broadcast_to(np.eye(rows), (*batch, rows, rows)),
        atol=tol,
    )
    # L is lower triangular.
    np.testing.assert_array_equal(np.triu(ll, 1), 0)
