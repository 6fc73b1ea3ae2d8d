"""The compiled steps of the SVD (`engine/linalg/_calls.pyx`) and the namespace's short way
to the lean SVD (issue 20): same answers, same refusals, same ownership as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.linalg._calls import all_finite
from tenferro.engine.linalg._common import finite
from tenferro.engine.linalg._lapack import ptr
from tenferro.errors import LinAlgError
from tenferro.storage import host

Array = np.ndarray[Any, Any]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SINGLE = {np.float32: True, np.complex64: True, np.float64: False, np.complex128: False}


def _rand(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> Array:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


# ---------------------------------------------------------------------- all_finite
@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    order=st.sampled_from("CF"),
    bad=st.sampled_from([None, np.inf, -np.inf, np.nan, 1e300]),
    where=st.integers(0, 80),
    imag=st.booleans(),
)
def test_all_finite_agrees_with_numpy_entry_by_entry(
    dtype: Any, shape: tuple[int, int], order: str, bad: Any, where: int, imag: bool
) -> None:
    a = np.array(_rand(shape, dtype), order=order)
    if bad is not None:
        idx = np.unravel_index(where % a.size, shape)
        value = complex(0, bad) if imag and np.iscomplexobj(a) else bad
        with np.errstate(over="ignore"):
            a[idx] = value  # 1e300 overflows to inf in single precision
    assert all_finite(a, SINGLE[dtype]) == bool(np.isfinite(a).all())


def test_all_finite_refuses_an_array_that_is_not_contiguous() -> None:
    with pytest.raises((ValueError, BufferError)):
        all_finite(np.ones((4, 4))[:, ::2], False)


@pytest.mark.parametrize("column, expected", [(1, True), (2, False)])
def test_finite_reads_a_strided_matrix_entry_by_entry(column: int, expected: bool) -> None:
    a = np.ones((3, 4))
    a[0, column] = np.nan
    assert finite(a[:, ::2]) is expected


def test_finite_checks_other_dtypes_entry_by_entry() -> None:
    assert finite(np.array([1.0, np.inf], dtype=np.float16)) is False
    assert finite(np.arange(4)) is True


# ---------------------------------------------------------------------- ptr
@pytest.mark.parametrize(
    "make",
    [
        lambda: np.zeros(7),
        lambda: np.asfortranarray(np.zeros((3, 5))),
        lambda: np.zeros((3, 5)),
        lambda: np.zeros(6)[2:],
    ],
    ids=["flat", "f-ordered", "c-ordered", "offset"],
)
def test_ptr_is_the_address_numpy_reports(make: Any) -> None:
    a = make()
    assert ptr(a) == a.ctypes.data
    a.flags.writeable = False
    assert ptr(a) == a.ctypes.data


# ---------------------------------------------------------------------- namespace svd
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (40, 30)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_of_a_c_ordered_view_matches_numpy(
    dtype: Any, shape: tuple[int, int], full: bool
) -> None:
    a = _rand(shape, dtype, 3)
    x = tfr.asarray(a.copy())
    assert isinstance(x, tfr.TensorView)
    u, s, vh = tfr.linalg.svd(x, full_matrices=full)
    tol = 1e-4 if SINGLE[dtype] else 1e-10
    un, sn, _ = np.linalg.svd(a, full_matrices=full)
    np.testing.assert_allclose(np.asarray(s), sn, rtol=tol, atol=tol)
    assert np.asarray(u).shape == un.shape
    k = len(sn)
    rebuilt = (np.asarray(u)[:, :k] * np.asarray(s)) @ np.asarray(vh)[:k]
    np.testing.assert_allclose(rebuilt, a, rtol=tol, atol=tol * 10)
    # C-ordered factors, as numpy's: a row-major reshape of them is a view.
    assert tfr.reshape(vh, (-1,)).__class__ is tfr.TensorView
    np.testing.assert_array_equal(a, np.asarray(x))  # the operand is untouched


def test_svd_of_a_sliced_view_matches_numpy() -> None:
    a = _rand((6, 8), np.float64, 4)
    x = tfr.asarray(a.copy())[1:5, ::2]
    _, s, _ = tfr.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a[1:5, ::2])[1], rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (64, 16)])
def test_svd_of_a_c_ordered_view_with_nan_is_refused_typed_and_gives_buffers_back(
    shape: tuple[int, int],
) -> None:
    eng = tfr.CpuEngine()
    a = _rand(shape, np.float64)
    a[2, 1] = np.nan
    x = tfr.asarray(a)
    for _ in range(2):
        with eng, pytest.raises(LinAlgError) as info:
            tfr.linalg.svd(x, full_matrices=False)
    assert info.value.kind == "NOT_FINITE"
    assert "svd" in str(info.value)
    misses = eng.buffer_pool_cache_stats().misses
    with eng, pytest.raises(LinAlgError):
        tfr.linalg.svd(x, full_matrices=False)
    assert eng.buffer_pool_cache_stats().misses == misses  # every buffer came back
    assert not host.reading
    np.testing.assert_array_equal(np.asarray(x), a)


def test_svd_of_a_c_ordered_view_runs_an_engine_subclass_own_svd() -> None:
    calls: list[Any] = []

    class Traced(tfr.CpuEngine):
        def svd(self, a: Any, full_matrices: bool = False) -> Any:
            calls.append(a.shape)
            return super().svd(a, full_matrices)

    x = tfr.asarray(_rand((4, 3), np.float64))
    with Traced():
        _, s, _ = tfr.linalg.svd(x, full_matrices=False)
    assert calls == [(3, 4)]  # the column-major owner of the C-ordered view
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(np.asarray(x))[1], rtol=1e-12)


def test_svd_results_of_a_c_ordered_view_go_back_to_the_pool_on_drop() -> None:
    eng = tfr.CpuEngine()
    x = tfr.asarray(_rand((6, 4), np.float64))
    with eng:
        u, s, vh = tfr.linalg.svd(x, full_matrices=False)
    retained = eng.buffer_pool_stats().buffers  # the call's scratch, given back
    del u, s, vh
    assert eng.buffer_pool_stats().buffers == retained + 3


# ---------------------------------------------------------------------- tall: svd_rows
def _mirror(x: Any) -> Any:
    from tenferro.namespace._adapter import mirror

    return mirror(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("full", [False, True])
def test_a_tall_c_ordered_svd_takes_lapacks_tall_path_with_the_mirror_paths_values(
    dtype: Any, full: bool
) -> None:
    from tenferro.engine.linalg import _lean

    eng = tfr.CpuEngine()
    x = tfr.asarray(_rand((48, 24), dtype, 5))
    rows = _lean.svd_rows(eng, _mirror(x), full)
    wide = _lean.svd(eng, _mirror(x), full, True)
    assert rows is not None and wide is not None
    assert [t.shape for t in rows] == [t.shape for t in wide]
    tol = 1e-4 if SINGLE[dtype] else 1e-12
    np.testing.assert_allclose(np.asarray(rows[1]), np.asarray(wide[1]), rtol=tol, atol=tol)
    # (Vh^T, S, U^T) of x: U^T's rows and Vh^T's columns span what the mirror's do.
    k = 24
    u_t, vh_t = np.asarray(rows[2])[:k], np.asarray(rows[0])[:, :k]
    rebuilt = (u_t.T * np.asarray(rows[1])) @ vh_t.T
    np.testing.assert_allclose(rebuilt, np.asarray(x), rtol=tol * 10, atol=tol * 100)


@pytest.mark.parametrize("shape", [(4, 9), (5, 5), (9, 4), (32, 31)])
def test_a_square_wide_or_small_c_ordered_svd_keeps_the_mirrors_own_path(
    shape: tuple[int, int],
) -> None:
    from tenferro.engine.linalg import _lean

    x = tfr.asarray(_rand(shape, np.float64))
    assert _lean.svd_rows(tfr.CpuEngine(), _mirror(x), False) is None


def test_a_tall_svd_that_does_not_converge_is_refused_typed_and_gives_buffers_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.engine.linalg import _kernels, _svd

    # Both paths see LAPACK report no convergence (info > 0).
    monkeypatch.setattr(_kernels, "gesdd_run", lambda *args: 1)
    monkeypatch.setattr(_svd, "gesdd_run", lambda *args: 1)
    eng = tfr.CpuEngine()
    x = tfr.asarray(_rand((64, 16), np.float64))
    for _ in range(2):
        with eng, pytest.raises(LinAlgError) as info:
            tfr.linalg.svd(x, full_matrices=False)
    assert info.value.kind == "NOT_CONVERGED"
    misses = eng.buffer_pool_cache_stats().misses
    with eng, pytest.raises(LinAlgError):
        tfr.linalg.svd(x, full_matrices=False)
    assert eng.buffer_pool_cache_stats().misses == misses
    assert not host.reading


class _Boom(RuntimeError):
    pass


def test_a_tall_svd_that_raises_drops_its_buffers_and_marks_the_operand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.engine.linalg import _kernels
    from tenferro.engine.pool import BufferPoolStats

    def boom(*args: Any) -> int:
        raise _Boom("gesdd failed")

    monkeypatch.setattr(_kernels, "gesdd_run", boom)
    eng = tfr.CpuEngine()
    x = tfr.asarray(_rand((64, 16), np.float64))
    with eng, pytest.raises(_Boom):
        tfr.linalg.svd(x, full_matrices=False)
    assert eng.buffer_pool_stats() == BufferPoolStats(0, 0)  # dropped, not pooled
    assert x._source.failed_read
    assert not host.reading


# ---------------------------------------------------------------------- qr_run
def _bits(t: Any) -> bytes:
    return np.ascontiguousarray(np.asarray(t)).tobytes()


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    m=st.integers(1, 40),
    n=st.integers(1, 40),
    mode=st.sampled_from(["reduced", "complete"]),
    seed=st.integers(0, 2**16),
)
def test_the_compiled_lean_qr_gives_the_general_paths_bits(
    dtype: Any, m: int, n: int, mode: str, seed: int
) -> None:
    # The general path runs f2py's ?geqrf/?orgqr with the same workspace sizes: the
    # compiled call (on the owner, and on a C-ordered view: transposed) must match it.
    a = _rand((m, n), dtype, seed)
    eng = tfr.CpuEngine()
    want = eng.qr(tfr.from_numpy(np.array(a, order="F")).as_view(), mode)
    owner = eng.qr(tfr.from_numpy(np.array(a, order="F")), mode)
    with eng:
        view = tfr.linalg.qr(tfr.asarray(a.copy()), mode=mode)
    for got in (owner, view):
        for x, y in zip(got, want, strict=True):
            assert x.shape == y.shape and x.dtype == y.dtype
            assert _bits(x) == _bits(y)


def _qr_plan(rows: bool, m: int = 6, n: int = 4) -> Any:
    from tenferro.dtype import DType
    from tenferro.engine.linalg import _kernels

    return _kernels.qr_plan(DType.F64, m, n, min(m, n), rows)


@pytest.mark.parametrize("short", ["a", "scratch", "q", "r"])
@pytest.mark.parametrize("rows", [False, True])
def test_qr_run_refuses_a_buffer_smaller_than_its_plan(short: str, rows: bool) -> None:
    from tenferro.engine.linalg._calls import qr_run

    plan = _qr_plan(rows)
    sizes = {"a": 24, "scratch": plan.scratch, "q": 24, "r": 16}
    arrays = {k: np.zeros(v - (k == short)) for k, v in sizes.items()}
    with pytest.raises(ValueError, match="the plan needs"):
        qr_run(plan, arrays["a"], arrays["scratch"], arrays["q"], arrays["r"])


@pytest.mark.parametrize(
    "args",
    [(0, 4, 4, 1, 1, 8), (6, 4, 5, 1, 1, 8), (6, 4, 4, 0, 1, 8), (6, 4, 4, 1, 1, 2)],
    ids=["empty", "columns of Q", "workspace", "itemsize"],
)
def test_a_qr_plan_refuses_a_shape_it_cannot_serve(args: tuple[int, ...]) -> None:
    from tenferro.engine.linalg._calls import QrPlan

    m, n, qc, lw_qr, lw_org, size = args
    with pytest.raises(ValueError, match="QrPlan"):
        QrPlan(0, 0, m, n, qc, lw_qr, lw_org, size, False)


def test_a_lean_qr_that_lapack_refuses_takes_the_general_path_and_gives_buffers_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.engine.linalg import _kernels

    monkeypatch.setattr(_kernels, "qr_run", lambda *args: -1)
    eng = tfr.CpuEngine()
    a = _rand((7, 5), np.float64, 6)
    x = tfr.asarray(a.copy())
    for _ in range(2):
        with eng:
            q, r = tfr.linalg.qr(x)
        np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
        del q, r
    misses = eng.buffer_pool_cache_stats().misses
    with eng:
        tfr.linalg.qr(x)
    assert eng.buffer_pool_cache_stats().misses == misses
    assert not host.reading


# ---------------------------------------------------------------------- the return lane
@pytest.mark.parametrize(
    ("call", "shape"),
    [
        (lambda x: tfr.linalg.svd(x, full_matrices=False), (4, 9)),
        (lambda x: tfr.linalg.svd(x, full_matrices=True), (4, 9)),
        (lambda x: tfr.linalg.svd(x, full_matrices=False), (64, 32)),
        (lambda x: tfr.linalg.qr(x), (9, 4)),
        (lambda x: tfr.linalg.qr(x, mode="complete"), (4, 9)),
    ],
    ids=["svd wide", "svd wide full", "svd tall (rows)", "qr", "qr complete"],
)
def test_a_repeated_namespace_factorisation_takes_every_buffer_from_the_return_lane(
    call: Any, shape: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Buffers are taken in the order the namespace hands the results out, so the
    # results' release (a tuple drops last to first) leaves each on top of the lane
    # when the next call asks for it: no request takes the pool's lock (the lane's
    # hand-out and return are lock-free; every other step of the pool locks).
    eng = tfr.CpuEngine()
    x = tfr.asarray(_rand(shape, np.float64))
    with eng:
        call(x)
        pool = eng._pool
        locked: list[None] = []
        real = pool._lock

        class CountingLock:
            def acquire(self, *args: Any) -> bool:
                locked.append(None)
                return bool(real.acquire(*args))

            def release(self) -> None:
                real.release()

            def __enter__(self) -> bool:
                return self.acquire()

            def __exit__(self, *exc: object) -> None:
                self.release()

        monkeypatch.setattr(pool, "_lock", CountingLock())
        for _ in range(3):
            call(x)
    assert locked == []


# ---------------------------------------------------------------------- gesdd_run
@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    m=st.integers(1, 24),
    n=st.integers(1, 24),
    full=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_the_lean_svd_gives_the_general_paths_bits(
    dtype: Any, m: int, n: int, full: bool, seed: int
) -> None:
    # The lean path hands gesdd_run its arrays and the matrix to copy; the general
    # path copies in numpy and passes addresses: the same call must give the same bits.
    a = _rand((m, n), dtype, seed)
    eng = tfr.CpuEngine()
    want = eng.svd(tfr.from_numpy(np.array(a, order="F")).as_view(), full_matrices=full)
    got = eng.svd(tfr.from_numpy(np.array(a, order="F")), full_matrices=full)
    for x, y in zip(got, want, strict=True):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert _bits(x) == _bits(y)
    values = eng.svdvals(tfr.from_numpy(np.array(a, order="F")))
    assert _bits(values) == _bits(eng.svdvals(tfr.from_numpy(np.array(a, order="F")).as_view()))


@pytest.mark.parametrize("short", ["scratch", "matrix"])
def test_gesdd_run_refuses_a_scratch_or_matrix_smaller_than_its_plan(short: str) -> None:
    from tenferro.dtype import DType
    from tenferro.engine.linalg._calls import gesdd_run
    from tenferro.engine.linalg._svd import gesdd_plan

    plan = gesdd_plan(DType.F64, b"S", 6, 4)
    scratch = np.zeros(plan.scratch - (short == "scratch"))
    a = np.zeros(24 - (short == "matrix"))
    u, s, vt = np.zeros(24), np.zeros(4), np.zeros(16)
    with pytest.raises(ValueError, match="the plan needs"):
        gesdd_run(plan, scratch, s, u, vt, a)


# ---------------------------------------------------------------------- namespace eigh
@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    n=st.integers(1, 24),
    uplo=st.sampled_from(["L", "U"]),
    hermitian=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_eigh_of_a_c_ordered_view_gives_the_general_paths_bits(
    dtype: Any, n: int, uplo: str, hermitian: bool, seed: int
) -> None:
    # Not Hermitian: eigh reads only the triangle UPLO names, which must be the same one.
    a = _rand((n, n), dtype, seed)
    if hermitian:
        a = (a + a.conj().T).astype(dtype)
    eng = tfr.CpuEngine()
    x = tfr.asarray(a.copy())
    want_w, want_v = eng.eigh(x, uplo)  # a view: the general path
    want_values = eng.eigvalsh(x, uplo)
    with eng:
        w, v = tfr.linalg.eigh(x, UPLO=uplo)
        values = tfr.linalg.eigvalsh(x, UPLO=uplo)
    assert type(v) is tfr.Tensor and v.shape == (n, n) and v.dtype == want_v.dtype
    assert _bits(w) == _bits(want_w) and _bits(v) == _bits(want_v)
    assert _bits(values) == _bits(want_values)
    np.testing.assert_array_equal(np.asarray(x), a)  # the operand is untouched


def test_eigh_of_a_c_ordered_view_takes_the_lean_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import tenferro.engine.linalg as engine_linalg

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(engine_linalg, "run_call", general)
    a = _rand((5, 5), np.float64)
    x = tfr.asarray((a + a.T).copy())
    w, _v = tfr.linalg.eigh(x)
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a + a.T), rtol=1e-12)
    tfr.linalg.eigvalsh(x)


@pytest.mark.parametrize("call", [tfr.linalg.eigh, tfr.linalg.eigvalsh], ids=["eigh", "eigvalsh"])
def test_eigh_of_a_c_ordered_view_with_nan_is_refused_typed_and_gives_buffers_back(
    call: Any,
) -> None:
    eng = tfr.CpuEngine()
    a = np.eye(4)
    a[3, 1] = np.nan  # in the lower triangle, which UPLO='L' reads
    x = tfr.asarray(a)
    for _ in range(2):
        with eng, pytest.raises(LinAlgError) as info:
            call(x)
    assert info.value.kind == "NOT_FINITE"
    misses = eng.buffer_pool_cache_stats().misses
    with eng, pytest.raises(LinAlgError):
        call(x)
    assert eng.buffer_pool_cache_stats().misses == misses
    assert not host.reading
