"""Every family of freshly computed C-ordered results is a root-less fresh view (issue 20).

Reductions, factorisations, contractions and einsum's permuted results hand out a
view over a new pooled buffer that nothing else holds (`engine._core.c_view`,
`permuted_view`), as the elementwise paths do (tests/test_fresh_views.py): no
read root until something reads or derives from it, the buffer back in the pool
when the view dies, and a counted alias from its first read on. The planned
products read such a view's buffer without taking its root.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine.interface import c_view
from tenferro.namespace._adapter import write

_rng = np.random.default_rng(7)
_X3 = _rng.standard_normal((3, 4, 5))
_M = _rng.standard_normal((6, 4))
_N = _rng.standard_normal((4, 5))


def _sum(x: Any, y: Any) -> tuple[Any, Any]:
    return tfr.sum(x, axis=1), np.sum(_X3, axis=1)


def _prod(x: Any, y: Any) -> tuple[Any, Any]:
    return tfr.prod(x, axis=2), np.prod(_X3, axis=2)


def _mean(x: Any, y: Any) -> tuple[Any, Any]:
    return tfr.mean(x, axis=0), np.mean(_X3, axis=0)


def _qr_q(x: Any, y: Any) -> tuple[Any, Any]:
    q, r = tfr.linalg.qr(y)
    return q, _M @ np.linalg.inv(np.asarray(r))


def _qr_r(x: Any, y: Any) -> tuple[Any, Any]:
    q, r = tfr.linalg.qr(y)
    return r, np.asarray(q).T @ _M


def _svd_u(x: Any, y: Any) -> tuple[Any, Any]:
    u, s, vh = tfr.linalg.svd(y, full_matrices=False)
    return u, _M @ np.asarray(vh).T / np.asarray(s)


def _svd_vh(x: Any, y: Any) -> tuple[Any, Any]:
    u, s, vh = tfr.linalg.svd(y, full_matrices=False)
    return vh, (np.asarray(u).T @ _M) / np.asarray(s)[:, None]


def _svd_truncated(x: Any, y: Any) -> tuple[Any, Any]:
    u, s, vh, _ = tfr.linalg.svd_truncated(y, max_rank=3)
    return u, _M @ np.asarray(vh).T / np.asarray(s)


def _matmul(x: Any, y: Any) -> tuple[Any, Any]:
    return y @ tfr.asarray(_N), _M @ _N


def _tensordot(x: Any, y: Any) -> tuple[Any, Any]:
    return tfr.tensordot(x, tfr.asarray(_N), axes=([1], [0])), np.tensordot(
        _X3, _N, axes=([1], [0])
    )


_X4 = _rng.standard_normal((9, 9, 9, 9))
_Y3 = _rng.standard_normal((9, 9, 9))


def _einsum(x: Any, y: Any) -> tuple[Any, Any]:
    # Column-major operands whose product is in another order than the output's:
    # the permuted view of the product (engine/einsum/memory.py).
    f, g = tfr.asarray(np.asfortranarray(_X4)), tfr.asarray(np.asfortranarray(_Y3))
    return tfr.einsum("abcd,aYX->YbcdX", f, g), np.einsum("abcd,aYX->YbcdX", _X4, _Y3)


FAMILIES: dict[str, Callable[[Any, Any], tuple[Any, Any]]] = {
    "sum": _sum,
    "prod": _prod,
    "mean": _mean,
    "qr_q": _qr_q,
    "qr_r": _qr_r,
    "svd_u": _svd_u,
    "svd_vh": _svd_vh,
    "svd_truncated": _svd_truncated,
    "matmul": _matmul,
    "tensordot": _tensordot,
    "einsum": _einsum,
}


def _fresh(name: str) -> tuple[Any, Any]:
    return FAMILIES[name](tfr.asarray(_X3), tfr.asarray(_M))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_fresh_result_holds_no_root_and_has_numpys_values(name: str) -> None:
    r, want = _fresh(name)
    assert type(r) is tfr.TensorView
    assert r._base is None
    assert r._source._root is None
    assert r._source.alias_count() == 0
    np.testing.assert_allclose(np.asarray(r), want, atol=1e-10)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_view_derived_from_a_fresh_result_is_counted_with_it(name: str) -> None:
    r, want = _fresh(name)
    first = r[0]
    assert r._base is not None
    assert r._source.alias_count() == 2
    np.testing.assert_allclose(np.asarray(first), want[0], atol=1e-10)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_writing_a_fresh_result_is_refused_while_a_view_of_it_lives(name: str) -> None:
    r, _ = _fresh(name)
    first = r[0]

    def fn(arr: Any) -> None:
        arr[...] = 0.0

    with pytest.raises(tfr.BorrowError):
        write(r, "test.write", fn)
    del first
    write(r, "test.write", fn)
    assert not np.asarray(r).any()


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_dropped_fresh_result_goes_back_to_the_pool(name: str) -> None:
    eng = tfr.default_engine()
    x, y = tfr.asarray(_X3), tfr.asarray(_M)
    for _ in range(3):
        FAMILIES[name](x, y)
    held = eng.buffer_pool_stats()
    misses = eng.buffer_pool_cache_stats().misses
    for _ in range(5):
        FAMILIES[name](x, y)
    assert eng.buffer_pool_stats() == held
    assert eng.buffer_pool_cache_stats().misses == misses


def test_a_planned_product_reads_a_fresh_view_without_taking_its_root() -> None:
    a, b = tfr.asarray(_M), tfr.asarray(_N)
    r = a @ b
    s = r @ tfr.asarray(_N.T)
    t = tfr.tensordot(r, tfr.asarray(_N.T), axes=1)
    assert r._base is None
    assert r._source._root is None
    np.testing.assert_allclose(np.asarray(s), _M @ _N @ _N.T, atol=1e-10)
    np.testing.assert_allclose(np.asarray(t), _M @ _N @ _N.T, atol=1e-10)


def test_a_planned_product_of_a_fresh_view_with_itself_reads_it_once() -> None:
    sq = tfr.asarray(_rng.standard_normal((4, 4)))
    r = sq @ sq
    want = np.asarray(sq) @ np.asarray(sq)
    got = r @ r
    assert r._base is None
    np.testing.assert_allclose(np.asarray(got), want @ want, atol=1e-10)


def test_c_view_of_a_buffer_already_borrowed_holds_the_root() -> None:
    t = tfr.asarray(np.asfortranarray(_M))
    held = t.as_view()
    v = c_view(t)
    assert v._base is not None
    assert v._source.alias_count() == 2
    np.testing.assert_allclose(np.asarray(v), _M.T)
    del held


def test_a_repeated_product_of_views_runs_its_cached_plan_in_one_compiled_call() -> None:
    from tenferro.engine._core import matmul2
    from tenferro.namespace import _contraction

    a = tfr.asarray(_rng.standard_normal((3, 7)))
    b = tfr.asarray(_rng.standard_normal((7, 2)))
    plans: dict[Any, Any] = {}
    assert matmul2(a, b, plans, _contraction._MATMUL) is None  # nothing planned yet
    first = a @ b  # plans it
    again = matmul2(a, b, _contraction._DOT, _contraction._MATMUL)
    assert type(again) is tfr.TensorView
    assert again._base is None
    np.testing.assert_allclose(np.asarray(again), np.asarray(first), atol=1e-12)
