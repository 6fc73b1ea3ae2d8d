"""The per-call fast paths of the engine's linalg: Frobenius/2-norms by BLAS dot, slogdet signs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr

Array = np.ndarray[Any, Any]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _tensor(a: Array) -> tfr.Tensor:
    return tfr.from_numpy(np.array(a, order="F", copy=True))


def _exact_fro(a: Array) -> float:
    """The Frobenius norm in extended precision, scaled so nothing overflows."""
    x = np.abs(a.astype(np.clongdouble)).ravel()
    top = x.max()
    return 0.0 if top == 0 else float(top * np.sqrt(np.sum((x / top) ** 2)))


def _sample(dtype: Any, scale: float, shape: tuple[int, ...] = (6, 5)) -> Array:
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shape) * scale
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape) * scale
    return np.asfortranarray(a.astype(dtype))


def _tol(dtype: Any) -> float:
    return 1e-6 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-14


@pytest.mark.parametrize("dtype", DTYPES)
def test_frobenius_norm_matches_numpy_on_ordinary_input(dtype: Any) -> None:
    a = _sample(dtype, 1.0)
    got = float(tfr.CpuEngine().matrix_norm(_tensor(a)).to_numpy())
    np.testing.assert_allclose(got, np.linalg.norm(a), rtol=_tol(dtype) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", [0.75, -0.75])
def test_frobenius_norm_is_exact_where_the_sum_of_squares_overflows_or_underflows(
    dtype: Any, exponent: float
) -> None:
    # About 1e+-231 in F64 (1e+-28 in F32): the squares leave the exponent range,
    # so a plain sqrt(dot) returns inf or loses every digit.
    scale = float(np.finfo(dtype).max) ** exponent
    a = _sample(dtype, scale)
    got = float(tfr.CpuEngine().matrix_norm(_tensor(a)).to_numpy())
    np.testing.assert_allclose(got, _exact_fro(a), rtol=_tol(dtype) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_norm_is_exact_on_ill_scaled_input(dtype: Any) -> None:
    big = float(np.finfo(dtype).max) ** 0.75
    a = _sample(dtype, big, (4, 3, 2))
    got = float(tfr.CpuEngine().vector_norm(_tensor(a)).to_numpy())
    np.testing.assert_allclose(got, _exact_fro(a), rtol=_tol(dtype) * 10)


def test_frobenius_norm_of_a_zero_matrix_is_zero() -> None:
    assert float(tfr.CpuEngine().matrix_norm(_tensor(np.zeros((3, 4)))).to_numpy()) == 0.0


def test_frobenius_norm_propagates_nan_and_inf() -> None:
    eng = tfr.CpuEngine()
    a = np.zeros((3, 3))
    a[1, 2] = np.nan
    assert np.isnan(float(eng.matrix_norm(_tensor(a)).to_numpy()))
    a[1, 2] = np.inf
    assert float(eng.matrix_norm(_tensor(a)).to_numpy()) == np.inf


def test_frobenius_norm_of_a_transposed_view_matches_numpy() -> None:
    eng = tfr.CpuEngine()
    a = _sample(np.float64, 1e200, (5, 3))
    t = _tensor(a)
    v = t.as_view().transpose_view((1, 0))
    got = float(eng.matrix_norm(v).to_numpy())
    np.testing.assert_allclose(got, _exact_fro(a), rtol=1e-14)


@settings(max_examples=40, deadline=None)
@given(
    scale_exp=st.integers(min_value=-300, max_value=300),
    m=st.integers(min_value=1, max_value=6),
    n=st.integers(min_value=1, max_value=6),
)
def test_frobenius_norm_is_accurate_at_every_f64_scale(scale_exp: int, m: int, n: int) -> None:
    a = _sample(np.float64, 10.0**scale_exp, (m, n))
    got = float(tfr.CpuEngine().matrix_norm(_tensor(a)).to_numpy())
    np.testing.assert_allclose(got, _exact_fro(a), rtol=1e-13)


@pytest.mark.parametrize("dtype", DTYPES)
def test_slogdet_sign_counts_negative_pivots(dtype: Any) -> None:
    a = np.asfortranarray(np.diag([-1.0, -2.0, 3.0, -0.5]).astype(dtype))
    sign, logabs = tfr.CpuEngine().slogdet(_tensor(a))
    ref = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.to_numpy(), ref.sign)
    np.testing.assert_allclose(logabs.to_numpy(), ref.logabsdet, rtol=_tol(dtype) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_slogdet_of_singular_matrix_is_zero_sign_without_warnings(dtype: Any) -> None:
    a = np.asfortranarray(np.array([[1.0, 2.0], [2.0, 4.0]]).astype(dtype))
    with np.errstate(all="raise"):
        sign, logabs = tfr.CpuEngine().slogdet(_tensor(a))
    assert complex(sign.to_numpy()) == 0 and float(logabs.to_numpy()) == -np.inf


def test_slogdet_of_nan_matrix_is_nan_as_numpy() -> None:
    sign, logabs = tfr.CpuEngine().slogdet(_tensor(np.array([[np.nan]])))
    assert np.isnan(float(sign.to_numpy())) and np.isnan(float(logabs.to_numpy()))


def test_slogdet_of_huge_determinant_has_finite_log() -> None:
    a = np.asfortranarray(np.diag(np.full(40, 1e20)))
    sign, logabs = tfr.CpuEngine().slogdet(_tensor(a))
    assert float(sign.to_numpy()) == 1.0
    np.testing.assert_allclose(float(logabs.to_numpy()), 40 * np.log(1e20), rtol=1e-14)


@pytest.mark.parametrize("shape", [(7, 4, 2), (4, 7, 2), (5, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_r_is_exactly_upper_triangular_and_reconstructs(
    shape: tuple[int, ...], mode: str
) -> None:
    a = _sample(np.complex128, 1.0, shape)
    q, r = tfr.CpuEngine().qr(_tensor(a), mode=mode)
    qn, rn = q.to_numpy(), r.to_numpy()
    for idx in np.ndindex(*shape[2:]):
        rb = rn[(slice(None), slice(None), *idx)]
        assert not np.tril(rb, -1).any()
        qb = qn[(slice(None), slice(None), *idx)]
        np.testing.assert_allclose(qb @ rb, a[(slice(None), slice(None), *idx)], atol=1e-12)


@pytest.mark.parametrize("shape", [(7, 4, 2), (4, 7, 2), (5, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_lq_l_is_exactly_lower_triangular_and_reconstructs(
    shape: tuple[int, ...], mode: str
) -> None:
    a = _sample(np.float64, 1.0, shape)
    lo, q = tfr.CpuEngine().lq(_tensor(a), mode=mode)
    ln, qn = lo.to_numpy(), q.to_numpy()
    for idx in np.ndindex(*shape[2:]):
        lb = ln[(slice(None), slice(None), *idx)]
        assert not np.triu(lb, 1).any()
        qb = qn[(slice(None), slice(None), *idx)]
        np.testing.assert_allclose(lb @ qb, a[(slice(None), slice(None), *idx)], atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_frobenius_norm_of_a_matrix_is_a_rank0_real_tensor_from_the_pool(dtype: Any) -> None:
    eng = tfr.CpuEngine()
    t = _tensor(_sample(dtype, 1.0))
    first = eng.matrix_norm(t)
    assert first.shape == () and first.dtype.numpy == np.dtype(dtype).type(0).real.dtype
    value = float(first.to_numpy())
    del first
    hits = eng.buffer_pool_cache_stats().hits
    again = eng.matrix_norm(t)
    assert eng.buffer_pool_cache_stats().hits == hits + 1
    assert float(again.to_numpy()) == value


def test_frobenius_norm_of_a_matrix_under_a_write_borrow_is_refused() -> None:
    eng = tfr.CpuEngine()
    t = _tensor(_sample(np.float64, 1.0))
    with t.map_write(), pytest.raises(tfr.BorrowError):
        eng.matrix_norm(t)
    assert float(eng.matrix_norm(t).to_numpy()) > 0
