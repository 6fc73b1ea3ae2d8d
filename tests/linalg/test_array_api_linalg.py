"""``tenferro.linalg``: array API signatures, leading batch dims as views, numpy-style norm."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
import tenferro.linalg as la

Array = np.ndarray[Any, Any]


def tensor(a: Array) -> tfr.Tensor:
    return tfr.from_numpy(np.array(a, order="F", copy=True))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(5)


def test_svd_defaults_to_full_matrices_as_the_standard_says(rng: Any) -> None:
    a = rng.standard_normal((5, 3))
    u, s, vh = la.svd(tensor(a))
    assert (u.shape, s.shape, vh.shape) == ((5, 5), (3,), (3, 3))
    thin = la.svd(tensor(a), full_matrices=False)
    assert thin.U.shape == (5, 3)
    np.testing.assert_allclose(thin.U.to_numpy() * thin.S.to_numpy() @ thin.Vh.to_numpy(), a)


def test_batched_svd_returns_leading_batch_views_of_pooled_results(rng: Any) -> None:
    a = rng.standard_normal((4, 5, 3))  # (batch, M, N), as the array API lays it out
    u, s, vh = la.svd(tensor(a), full_matrices=False)
    assert isinstance(u, tfr.TensorView)
    assert u.shape == (4, 5, 3) and s.shape == (4, 3) and vh.shape == (4, 3, 3)
    un, sn, vn = np.asarray(u), np.asarray(s), np.asarray(vh)
    np.testing.assert_allclose((un * sn[:, None, :]) @ vn, a, atol=1e-12)


def test_batched_input_is_read_through_a_view_without_copies(rng: Any) -> None:
    t = tensor(rng.standard_normal((3, 4, 4)))
    before = tfr.copy_stats().copies
    with tfr.forbid_copies():
        la.qr(t)
        la.eigvalsh(t)
    assert tfr.copy_stats().copies == before


def test_qr_eigh_cholesky_solve_inv_match_numpy(rng: Any) -> None:
    a = rng.standard_normal((2, 4, 4))
    h = a + np.swapaxes(a, -1, -2)
    p = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    q, r = la.qr(tensor(a))
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
    w, _v = la.eigh(tensor(h))
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(h), atol=1e-12)
    np.testing.assert_allclose(np.asarray(la.eigvalsh(tensor(h))), np.linalg.eigvalsh(h))
    np.testing.assert_allclose(np.asarray(la.cholesky(tensor(p))), np.linalg.cholesky(p))
    np.testing.assert_allclose(
        np.asarray(la.cholesky(tensor(p), upper=True)),
        np.swapaxes(np.linalg.cholesky(p), -1, -2),
        atol=1e-12,
    )
    b = rng.standard_normal((2, 4, 2))
    np.testing.assert_allclose(np.asarray(la.solve(tensor(p), tensor(b))), np.linalg.solve(p, b))
    np.testing.assert_allclose(np.asarray(la.inv(tensor(p))), np.linalg.inv(p))
    np.testing.assert_allclose(la.det(tensor(a)).to_numpy(), np.linalg.det(a))
    _sign, logabs = la.slogdet(tensor(a))
    np.testing.assert_allclose(logabs.to_numpy(), np.linalg.slogdet(a).logabsdet)
    np.testing.assert_allclose(np.asarray(la.pinv(tensor(a))), np.linalg.pinv(a), atol=1e-10)
    np.testing.assert_allclose(np.asarray(la.svdvals(tensor(a))), np.linalg.svdvals(a))


def test_solve_with_one_dimensional_rhs(rng: Any) -> None:
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3)
    np.testing.assert_allclose(la.solve(tensor(a), tensor(b)).to_numpy(), np.linalg.solve(a, b))


@pytest.mark.parametrize(
    ("shape1", "shape2"),
    [
        ((3, 4, 4), (1, 4, 2)),
        ((1, 4, 4), (3, 4, 2)),
        ((2, 1, 4, 4), (3, 4, 1)),
        ((4, 4), (2, 4, 3)),
        ((3, 4, 4), (4, 0)),
    ],
)
def test_solve_broadcasts_the_batch_dimensions(
    rng: Any, shape1: tuple[int, ...], shape2: tuple[int, ...]
) -> None:
    a = rng.standard_normal(shape1) + 4 * np.eye(4)
    b = rng.standard_normal(shape2)
    x = la.solve(tfr.asarray(a), tfr.asarray(b))
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b))


def test_solve_with_a_batch_and_a_vector_solves_each_matrix_for_it(rng: Any) -> None:
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3)
    x = la.solve(tfr.asarray(a), tfr.asarray(b))
    assert x.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b[:, None])[..., 0])


def test_solve_refuses_batches_that_do_not_broadcast(rng: Any) -> None:
    a = tfr.asarray(rng.standard_normal((3, 4, 4)))
    b = tfr.asarray(rng.standard_normal((2, 4, 1)))
    with pytest.raises(tfr.ValidationError, match=r"linalg\.solve.*do not broadcast"):
        la.solve(a, b)


def test_pinv_with_an_rtol_array_cuts_each_matrix_at_its_own_tolerance(rng: Any) -> None:
    x = rng.standard_normal((3, 4, 5))
    rtol = np.array([1e-3, 0.5, 0.9])
    p = la.pinv(tfr.asarray(x), rtol=tfr.asarray(rtol))
    assert p.shape == (3, 5, 4)
    np.testing.assert_allclose(np.asarray(p), np.linalg.pinv(x, rcond=rtol), atol=1e-12)


def test_pinv_with_a_complex_stack_and_a_broadcast_rtol_matches_numpy(rng: Any) -> None:
    x = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    p = la.pinv(tfr.asarray(x), rtol=tfr.asarray(np.array([0.1])))
    np.testing.assert_allclose(np.asarray(p), np.linalg.pinv(x, rcond=0.1), atol=1e-12)


def test_pinv_borrows_a_numpy_rtol_like_a_tenferro_one(rng: Any) -> None:
    x = rng.standard_normal((3, 4, 4))
    rtol = np.array([1e-3, 0.5, 0.9])
    p = la.pinv(tfr.asarray(x), rtol=rtol)
    np.testing.assert_allclose(np.asarray(p), np.linalg.pinv(x, rcond=rtol), atol=1e-12)


@pytest.mark.parametrize("rtol", ["0.1", True])
def test_pinv_refuses_an_rtol_that_is_neither_a_number_nor_an_array(rng: Any, rtol: Any) -> None:
    with pytest.raises(tfr.ValidationError, match=r"linalg\.pinv.*rtol"):
        la.pinv(tensor(rng.standard_normal((2, 2))), rtol=rtol)


def test_matrix_and_vector_norms_match_numpy(rng: Any) -> None:
    a = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(la.matrix_norm(tensor(a)).to_numpy(), np.linalg.matrix_norm(a))
    kept = la.matrix_norm(tensor(a), keepdims=True, ord=1)
    assert kept.shape == (2, 1, 1)
    np.testing.assert_allclose(np.asarray(kept), np.linalg.matrix_norm(a, ord=1, keepdims=True))
    np.testing.assert_allclose(
        la.vector_norm(tensor(a), axis=1, ord=3).to_numpy(),
        np.linalg.vector_norm(a, axis=1, ord=3),
    )


@pytest.mark.parametrize(
    ("kwargs", "shape"),
    [
        ({}, (3, 4)),
        ({"ord": "fro"}, (3, 4)),
        ({"ord": 2}, (3, 4)),
        ({"ord": 1}, (4,)),
        ({"axis": 0}, (3, 4)),
        ({"axis": (0, 2), "ord": "nuc"}, (3, 4, 2)),
    ],
)
def test_norm_follows_numpy_linalg_norm(rng: Any, kwargs: dict[str, Any], shape: Any) -> None:
    a = rng.standard_normal(shape)
    np.testing.assert_allclose(
        np.asarray(la.norm(tensor(a), **kwargs)), np.linalg.norm(a, **kwargs), rtol=1e-12
    )


def test_matrix_rank_and_transpose(rng: Any) -> None:
    a = np.outer(rng.standard_normal(4), rng.standard_normal(3))
    assert la.matrix_rank(tensor(a)) == 1
    t = la.matrix_transpose(tensor(a))
    assert isinstance(t, tfr.TensorView) and t.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(t), a.T)


def test_matmul_and_lstsq_and_expm(rng: Any) -> None:
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2))
    np.testing.assert_allclose(la.matmul(tensor(a), tensor(b)).to_numpy(), a @ b)
    sol = la.lstsq(tensor(b), tensor(rng.standard_normal((4, 1))))
    assert sol.solution.shape == (2, 1)
    m = 0.1 * rng.standard_normal((3, 3))
    import scipy.linalg

    np.testing.assert_allclose(la.expm(tensor(m)).to_numpy(), scipy.linalg.expm(m))


def test_functions_run_on_the_engine_chosen_with_with(rng: Any) -> None:
    eng = tfr.CpuEngine()
    t = tensor(rng.standard_normal((6, 6)))
    with eng:
        la.svd(t)
    assert eng.buffer_pool_cache_stats().misses > 0


def test_a_numpy_operand_is_borrowed_and_gives_a_tenferro_result() -> None:
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    s = la.svdvals(a)
    assert isinstance(s, (tfr.Tensor, tfr.TensorView))
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a, compute_uv=False))
    assert a.flags.writeable  # borrowed for the call, not adopted (frozen)


def test_non_array_input_is_a_typed_error() -> None:
    with pytest.raises(tfr.ValidationError):
        la.svd("not an array")


def test_eig_and_lq_are_available(rng: Any) -> None:
    a = rng.standard_normal((3, 3))
    w, v = la.eig(tensor(a))
    np.testing.assert_allclose(a @ v.to_numpy(), v.to_numpy() * w.to_numpy(), atol=1e-12)
    lo, q = la.lq(tensor(a))
    np.testing.assert_allclose(lo.to_numpy() @ q.to_numpy(), a, atol=1e-12)
