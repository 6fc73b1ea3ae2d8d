"""``tenferro.linalg``'s products: the array API extension names, against array-api-strict."""

from __future__ import annotations

from typing import Any

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr
import tenferro.linalg as la

Array = np.ndarray[Any, Any]

EXTENSION_NAMES = ("cross", "diagonal", "matrix_power", "outer", "tensordot", "trace", "vecdot")


def both(a: Array) -> tuple[Any, Any]:
    """The same values as a tenferro array and an array-api-strict array."""
    return tfr.asarray(a), xps.asarray(a)


def same(ours: Any, theirs: Any, **tol: float) -> None:
    ref = np.asarray(theirs)
    got = np.asarray(ours)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, **tol)


@pytest.mark.parametrize("name", EXTENSION_NAMES)
def test_the_extension_exports_every_standard_name(name: str) -> None:
    assert callable(getattr(la, name)) and name in la.__all__
    assert getattr(tfr.linalg, name) is getattr(la, name)


batch_shapes = st.sampled_from([(), (2,), (2, 3)])
dtypes = st.sampled_from([np.float64, np.float32, np.complex128, np.int64])


def _values(seed: int, shape: tuple[int, ...], dtype: Any) -> Array:
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.integers(-4, 5, size=shape)
    return a


@given(batch=batch_shapes, dtype=dtypes, offset=st.integers(-3, 3), seed=st.integers(0, 99))
def test_trace_and_diagonal_use_the_last_two_axes(
    batch: tuple[int, ...], dtype: Any, offset: int, seed: int
) -> None:
    a = _values(seed, (*batch, 3, 4), dtype)
    ours, theirs = both(a)
    same(la.trace(ours, offset=offset), xps.linalg.trace(theirs, offset=offset))
    same(la.diagonal(ours, offset=offset), xps.linalg.diagonal(theirs, offset=offset))


def test_trace_accumulates_small_integers_in_the_default_integer() -> None:
    ours, theirs = both(np.full((2, 2), 100, np.int8))
    same(la.trace(ours), xps.linalg.trace(theirs))
    same(la.trace(ours, dtype=tfr.float64), xps.linalg.trace(theirs, dtype=xps.float64))


@given(batch=batch_shapes, dtype=dtypes, seed=st.integers(0, 99))
def test_cross_broadcasts_and_matches_strict(batch: tuple[int, ...], dtype: Any, seed: int) -> None:
    a = _values(seed, (*batch, 3), dtype)
    b = _values(seed + 1, (3,), dtype)
    (ta, sa), (tb, sb) = both(a), both(b)
    same(la.cross(ta, tb), xps.linalg.cross(sa, sb))


def test_cross_along_another_axis() -> None:
    a = _values(1, (3, 2), np.float64)
    b = _values(2, (3, 2), np.float64)
    (ta, sa), (tb, sb) = both(a), both(b)
    same(la.cross(ta, tb, axis=-2), xps.linalg.cross(sa, sb, axis=-2))


@given(
    batch=batch_shapes,
    dtype=st.sampled_from([np.float64, np.complex128]),
    n=st.integers(-3, 4),
    seed=st.integers(0, 99),
)
def test_matrix_power_matches_strict(batch: tuple[int, ...], dtype: Any, n: int, seed: int) -> None:
    a = _values(seed, (*batch, 3, 3), dtype) + 10 * np.eye(3, dtype=dtype)  # invertible
    ours, theirs = both(a)
    same(la.matrix_power(ours, n), xps.linalg.matrix_power(theirs, n), rtol=1e-10)


def test_outer_and_vecdot_and_tensordot_match_strict() -> None:
    x = _values(3, (4,), np.float64)
    y = _values(4, (5,), np.float64)
    (tx, sx), (ty, sy) = both(x), both(y)
    same(la.outer(tx, ty), xps.linalg.outer(sx, sy))
    m = _values(5, (2, 4), np.complex128)
    v = _values(6, (4,), np.complex128)
    (tm, sm), (tv, sv) = both(m), both(v)
    same(la.vecdot(tm, tv), xps.linalg.vecdot(sm, sv))
    p = _values(7, (2, 3, 4), np.float64)
    q = _values(8, (3, 4, 5), np.float64)
    (tp, sp), (tq, sq) = both(p), both(q)
    same(la.tensordot(tp, tq, axes=2), xps.linalg.tensordot(sp, sq, axes=2))


def test_inputs_are_left_unchanged() -> None:
    a = _values(9, (2, 3, 3), np.float64) + 5 * np.eye(3)
    t = tfr.asarray(a.copy())
    la.trace(t)
    la.diagonal(t)
    la.matrix_power(t, -1)
    np.testing.assert_array_equal(np.asarray(t), a)


@pytest.mark.parametrize(
    ("call", "error", "kind"),
    [
        (
            lambda: la.outer(tfr.asarray(np.ones((2, 2))), tfr.asarray(np.ones(2))),
            "V",
            "INVALID_RANK",
        ),
        (lambda: la.trace(tfr.asarray(np.ones(3))), "V", "INVALID_RANK"),
        (lambda: la.diagonal(tfr.asarray(np.ones(3))), "V", "INVALID_RANK"),
        (lambda: la.cross(tfr.asarray(np.ones(2)), tfr.asarray(np.ones(2))), "V", "DIM_MISMATCH"),
        (
            lambda: la.cross(tfr.asarray(np.ones(3)), tfr.asarray(np.ones(3)), axis=0),
            "V",
            "INVALID_AXIS",
        ),
        (lambda: la.matrix_power(tfr.asarray(np.ones((2, 3))), 2), "V", "NOT_SQUARE"),
        (lambda: la.matrix_power(tfr.asarray(np.eye(2)), 1.5), "V", "INVALID_ARGUMENT"),
        (
            lambda: la.matrix_power(tfr.asarray(np.eye(2, dtype=np.int64)), 2),
            "P",
            "UNSUPPORTED_DTYPE",
        ),
        (lambda: la.matrix_power(tfr.asarray(np.zeros((2, 2))), -1), "L", "SINGULAR"),
    ],
)
def test_bad_input_raises_a_typed_error_naming_the_function(
    call: Any, error: str, kind: str
) -> None:
    expected = {"V": tfr.ValidationError, "P": tfr.TenferroError, "L": tfr.LinAlgError}[error]
    with pytest.raises(expected) as info:
        call()
    assert info.value.kind == kind
    assert "linalg." in str(info.value) or "tenferro." in str(info.value)


@given(
    batch=batch_shapes,
    shape=st.sampled_from([(4, 3), (3, 5), (3, 3)]),
    rank=st.integers(0, 3),
    seed=st.integers(0, 99),
)
def test_matrix_rank_is_an_int64_array_over_the_batch_as_in_strict(
    batch: tuple[int, ...], shape: tuple[int, int], rank: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    m, n = shape
    a = rng.standard_normal((*batch, m, rank)) @ rng.standard_normal((*batch, rank, n))
    ours, theirs = both(a)
    same(la.matrix_rank(ours), xps.linalg.matrix_rank(theirs))


def test_matrix_rank_takes_an_rtol_array_per_matrix() -> None:
    a = np.stack([np.diag([1.0, 0.5, 1e-3]), np.diag([1.0, 0.5, 1e-3])])
    rtol = np.array([1e-6, 1e-2])
    ours, theirs = both(a)
    same(
        la.matrix_rank(ours, rtol=tfr.asarray(rtol)),
        xps.linalg.matrix_rank(theirs, rtol=xps.asarray(rtol)),
    )


def test_matrix_rank_of_empty_matrices_is_zero() -> None:
    # (array-api-strict raises numpy's zero-size reduction error here.)
    rank = la.matrix_rank(tfr.asarray(np.zeros((2, 0, 3))))
    assert rank.shape == (2,) and np.asarray(rank).tolist() == [0, 0]
