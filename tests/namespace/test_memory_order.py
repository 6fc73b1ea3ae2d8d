"""Memory order follows the data (docs/namespace.md): C-ordered in, C-ordered out."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr


def c_array(shape: tuple[int, ...], seed: int = 0) -> tfr.TensorView:
    x = tfr.asarray(np.random.default_rng(seed).random(shape))
    assert isinstance(x, tfr.TensorView)
    return x


def is_c_ordered(x: object) -> bool:
    return isinstance(x, tfr.TensorView) and np.asarray(x).flags.c_contiguous


@pytest.mark.parametrize(
    "fn",
    [
        lambda xp, a, b: a + b,
        lambda xp, a, b: a * 2.0,
        lambda xp, a, b: 1.0 - a,
        lambda xp, a, b: xp.exp(a),
        lambda xp, a, b: xp.abs(a),
        lambda xp, a, b: a > b,
        lambda xp, a, b: xp.where(a > b, a, b),
        lambda xp, a, b: xp.clip(a, 0.2, 0.8),
        lambda xp, a, b: xp.sum(a, axis=1),
        lambda xp, a, b: xp.max(a, axis=0, keepdims=True),
        lambda xp, a, b: xp.mean(a, axis=-1),
    ],
)
def test_c_ordered_operands_give_a_c_ordered_result_with_numpys_values(fn: object) -> None:
    a, b = c_array((3, 4, 5)), c_array((3, 4, 5), 1)
    got = fn(tfr, a, b)  # type: ignore[operator]
    want = fn(np, np.asarray(a), np.asarray(b))  # type: ignore[operator]
    np.testing.assert_allclose(np.asarray(got), want)
    assert is_c_ordered(got)


def test_column_major_owners_stay_column_major_owners() -> None:
    a = tfr.asarray(np.asfortranarray(np.ones((3, 4))))
    assert isinstance(a + a, tfr.Tensor)
    assert isinstance(tfr.sum(a, axis=1), tfr.Tensor)


def test_tensordot_and_matmul_of_c_ordered_operands_are_c_ordered() -> None:
    a, b = c_array((3, 4, 5)), c_array((5, 4, 2), 1)
    got = tfr.tensordot(a, b, axes=([1, 2], [1, 0]))
    np.testing.assert_allclose(
        np.asarray(got), np.tensordot(np.asarray(a), np.asarray(b), ([1, 2], [1, 0]))
    )
    assert is_c_ordered(got)
    m, n = c_array((4, 3)), c_array((3, 2), 1)
    np.testing.assert_allclose(np.asarray(m @ n), np.asarray(m) @ np.asarray(n))
    assert is_c_ordered(m @ n)


def test_qr_and_svd_of_a_c_ordered_matrix_give_c_ordered_factors() -> None:
    a = c_array((6, 4))
    q, r = tfr.linalg.qr(a)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), np.asarray(a), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r), np.linalg.qr(np.asarray(a))[1], atol=1e-12)
    assert is_c_ordered(q) and is_c_ordered(r)
    u, s, vh = tfr.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(
        (np.asarray(u) * np.asarray(s)) @ np.asarray(vh), np.asarray(a), atol=1e-12
    )
    assert is_c_ordered(u) and is_c_ordered(vh)


def test_an_mps_qr_sweep_on_c_ordered_data_makes_no_named_copy() -> None:
    rng = np.random.default_rng(0)
    sites = [tfr.asarray(rng.random(s)) for s in [(1, 2, 4), (4, 2, 8), (8, 2, 4), (4, 2, 1)]]
    before = tfr.copy_stats().copies
    for i in range(len(sites) - 1):
        dl, d, dr = sites[i].shape
        q, r = tfr.linalg.qr(tfr.reshape(sites[i], (dl * d, dr)))
        sites[i] = tfr.reshape(q, (dl, d, q.shape[1]))
        sites[i + 1] = tfr.tensordot(r, sites[i + 1], axes=1)
    assert tfr.copy_stats().copies == before


def test_a_row_major_reshape_of_a_c_ordered_result_is_a_view() -> None:
    a = c_array((4, 6))
    r = tfr.reshape(a * 2.0, (2, 2, 6))
    assert isinstance(r, tfr.TensorView)
    np.testing.assert_allclose(np.asarray(r), (np.asarray(a) * 2.0).reshape(2, 2, 6))


def test_a_dropped_c_ordered_result_goes_back_to_the_pool() -> None:
    eng = tfr.CpuEngine()
    with eng:
        a = c_array((4, 4))
        r = a + a
        del r
        assert eng.buffer_pool_stats().buffers == 1
