"""The lean path of the engine's linalg (one plain host matrix, `_lean`) keeps every rule.

Each operation is run twice on the same data: on the tensor itself (the lean
path) and on a view of it (views always take the general path, `run_call`).
The two must agree; the lean path must pin and check its operands, take its
results from the pool, leave the operands untouched, raise the general path's
typed errors, give every buffer back after a LAPACK failure, and drop its
buffers (never pool them) and mark the operands never-to-pool when something
raises half-way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.linalg import _lean
from tenferro.engine.pool import BufferPoolStats
from tenferro.storage import host

Array = np.ndarray[Any, Any]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
EMPTY = BufferPoolStats(0, 0)


def _tensor(a: Array) -> tfr.Tensor:
    return tfr.from_numpy(np.array(a, order="F", copy=True))


def _engine_output(eng: tfr.CpuEngine, a: Array) -> tfr.Tensor:
    """A pooled tensor holding ``a`` (its buffer goes back to ``eng``'s pool on drop)."""
    t = eng.mul(_tensor(a), 1.0)
    assert t._st.recycler is not None
    return t


def _rand(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> Array:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return np.asfortranarray(a.astype(dtype))


def _spd(n: int, dtype: Any) -> Array:
    a = _rand((n, n), dtype, 1)
    return np.asfortranarray((a @ a.conj().T + n * np.eye(n)).astype(dtype))


def _tol(dtype: Any) -> float:
    return 2e-4 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-11


def _arrays(result: Any) -> list[Array]:
    items = result if isinstance(result, tuple) else (result,)
    return [np.array(x.to_numpy()) for x in items]


# (name, call on the engine with the operands, operands built from a dtype)
N = 7
CASES: list[tuple[str, Callable[..., Any], Callable[[Any], tuple[Array, ...]]]] = [
    ("det", lambda e, a: e.det(a), lambda d: (_rand((N, N), d),)),
    ("slogdet", lambda e, a: e.slogdet(a), lambda d: (_rand((N, N), d),)),
    ("inv", lambda e, a: e.inv(a), lambda d: (_rand((N, N), d),)),
    ("cholesky", lambda e, a: e.cholesky(a), lambda d: (_spd(N, d),)),
    ("cholesky upper", lambda e, a: e.cholesky(a, upper=True), lambda d: (_spd(N, d),)),
    ("solve", lambda e, a, b: e.solve(a, b), lambda d: (_rand((N, N), d), _rand((N, 3), d, 2))),
    (
        "solve vector",
        lambda e, a, b: e.solve(a, b),
        lambda d: (_rand((N, N), d), _rand((N,), d, 2)),
    ),
    ("eigh", lambda e, a: e.eigh(a), lambda d: (_spd(N, d),)),
    ("eigh upper", lambda e, a: e.eigh(a, "U"), lambda d: (_spd(N, d),)),
    ("eigvalsh", lambda e, a: e.eigvalsh(a), lambda d: (_spd(N, d),)),
    ("eig", lambda e, a: e.eig(a), lambda d: (_rand((N, N), d),)),
    ("qr tall", lambda e, a: e.qr(a), lambda d: (_rand((N + 3, N), d),)),
    ("qr wide complete", lambda e, a: e.qr(a, "complete"), lambda d: (_rand((N, N + 3), d),)),
    ("svd", lambda e, a: e.svd(a), lambda d: (_rand((N + 2, N), d),)),
    ("svd full", lambda e, a: e.svd(a, full_matrices=True), lambda d: (_rand((N, N + 2), d),)),
    ("svdvals", lambda e, a: e.svdvals(a), lambda d: (_rand((N, N + 2), d),)),
    ("matrix_norm 2", lambda e, a: e.matrix_norm(a, 2), lambda d: (_rand((N, N), d),)),
    ("matrix_norm -2", lambda e, a: e.matrix_norm(a, -2), lambda d: (_rand((N, N), d),)),
    ("matrix_norm nuc", lambda e, a: e.matrix_norm(a, "nuc"), lambda d: (_rand((N, N), d),)),
    ("matrix_norm fro", lambda e, a: e.matrix_norm(a), lambda d: (_rand((N, N), d),)),
    (
        "lstsq tall",
        lambda e, a, b: e.lstsq(a, b),
        lambda d: (_rand((N + 3, N), d), _rand((N + 3, 2), d, 2)),
    ),
    (
        "lstsq wide vector",
        lambda e, a, b: e.lstsq(a, b),
        lambda d: (_rand((N, N + 3), d), _rand((N,), d, 2)),
    ),
    ("expm", lambda e, a: e.expm(a), lambda d: (0.1 * _rand((N, N), d),)),
    ("pinv tall", lambda e, a: e.pinv(a), lambda d: (_rand((N + 3, N), d),)),
    ("pinv wide rtol", lambda e, a: e.pinv(a, 0.5), lambda d: (_rand((N, N + 3), d),)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "call", "make"), CASES, ids=IDS)
def test_the_lean_path_gives_the_general_paths_results(
    name: str, call: Callable[..., Any], make: Callable[[Any], tuple[Array, ...]], dtype: Any
) -> None:
    eng = tfr.CpuEngine()
    data = make(dtype)
    lean = _arrays(call(eng, *(_tensor(x) for x in data)))
    general = _arrays(call(eng, *(_tensor(x).as_view() for x in data)))
    assert len(lean) == len(general)
    for got, want in zip(lean, general, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=_tol(dtype), atol=_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "call", "make"), CASES, ids=IDS)
def test_plain_host_matrices_never_reach_the_general_path(
    name: str,
    call: Callable[..., Any],
    make: Callable[[Any], tuple[Array, ...]],
    dtype: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tenferro.engine.linalg as engine_linalg

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(engine_linalg, "run_call", general)
    call(tfr.CpuEngine(), *(_tensor(x) for x in make(dtype)))


@pytest.mark.parametrize(("name", "call", "make"), CASES, ids=IDS)
def test_the_lean_path_leaves_its_operands_untouched_and_unpinned(
    name: str, call: Callable[..., Any], make: Callable[[Any], tuple[Array, ...]]
) -> None:
    eng = tfr.CpuEngine()
    data = make(np.float64)
    operands = [_tensor(x) for x in data]
    call(eng, *operands)
    for t, x in zip(operands, data, strict=True):
        np.testing.assert_array_equal(t.to_numpy(), x)
        assert t._st.recycler is None or t._st.readers() == 0
    assert not host.reading


@pytest.mark.parametrize(("name", "call", "make"), CASES, ids=IDS)
def test_the_lean_path_reaches_a_pool_steady_state(
    name: str, call: Callable[..., Any], make: Callable[[Any], tuple[Array, ...]]
) -> None:
    eng = tfr.CpuEngine()
    operands = [_tensor(x) for x in make(np.float64)]
    call(eng, *operands)  # results dropped at once: their buffers go back
    misses = eng.buffer_pool_cache_stats().misses
    hits = eng.buffer_pool_cache_stats().hits
    for _ in range(3):
        call(eng, *operands)
    stats = eng.buffer_pool_cache_stats()
    assert stats.misses == misses and stats.hits > hits


def test_lean_results_are_pooled_tensors_that_recycle_on_drop() -> None:
    eng = tfr.CpuEngine()
    u, s, vh = eng.svd(_tensor(_rand((6, 4), np.float64)))
    retained = eng.buffer_pool_stats().buffers  # the call's scratch, given back
    del u, s, vh
    assert eng.buffer_pool_stats().buffers == retained + 3


# ---------------------------------------------------------------------- typed failures
FAILURES: list[tuple[str, Callable[[tfr.CpuEngine], Any], str, str]] = [
    (
        "solve",
        lambda e: e.solve(_tensor(np.zeros((4, 4))), _tensor(np.ones((4, 2)))),
        "SINGULAR",
        "CpuEngine.solve",
    ),
    ("inv", lambda e: e.inv(_tensor(np.zeros((4, 4)))), "SINGULAR", "CpuEngine.inv"),
    (
        "cholesky",
        lambda e: e.cholesky(_tensor(np.diag([1.0, -1.0, 2.0]))),
        "NOT_POSITIVE_DEFINITE",
        "CpuEngine.cholesky",
    ),
    ("svd", lambda e: e.svd(_tensor(np.full((3, 3), np.nan))), "NOT_FINITE", "CpuEngine.svd"),
    (
        "svdvals",
        lambda e: e.svdvals(_tensor(np.full((3, 3), np.nan))),
        "NOT_FINITE",
        "CpuEngine.svdvals",
    ),
    (
        "matrix_norm 2",
        lambda e: e.matrix_norm(_tensor(np.full((3, 3), np.nan)), 2),
        "NOT_FINITE",
        "CpuEngine.matrix_norm",
    ),
    ("eigh", lambda e: e.eigh(_tensor(np.full((4, 4), np.nan))), "NOT_FINITE", "CpuEngine.eigh"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "kind", "op"), FAILURES, ids=[f[0] for f in FAILURES])
def test_a_lean_lapack_failure_raises_the_typed_error_naming_the_operation(
    name: str, call: Callable[[tfr.CpuEngine], Any], kind: str, op: str
) -> None:
    with pytest.raises(tfr.LinAlgError) as info:
        call(tfr.CpuEngine())
    err = info.value
    assert isinstance(err, np.linalg.LinAlgError) and isinstance(err, tfr.TenferroError)
    assert err.kind == kind and err.op == op and err.batch_index == ()


@pytest.mark.parametrize(("name", "call", "kind", "op"), FAILURES, ids=[f[0] for f in FAILURES])
def test_a_lean_lapack_failure_gives_every_pooled_buffer_back(
    name: str, call: Callable[[tfr.CpuEngine], Any], kind: str, op: str
) -> None:
    eng = tfr.CpuEngine()
    with pytest.raises(tfr.LinAlgError):
        call(eng)
    misses = eng.buffer_pool_cache_stats().misses
    with pytest.raises(tfr.LinAlgError):
        call(eng)
    assert eng.buffer_pool_cache_stats().misses == misses
    assert eng.buffer_pool_cache_stats().refused_aliased == 0
    assert not host.reading


def test_a_singular_lean_solve_leaves_both_operands_poolable() -> None:
    eng = tfr.CpuEngine()
    a, b = _engine_output(eng, np.zeros((3, 3))), _engine_output(eng, np.ones((3, 1)))
    with pytest.raises(tfr.LinAlgError):
        eng.solve(a, b)
    # The general path raised after clearing the kernel's frames: nothing of the
    # operands survives in the traceback, so their buffers may still be pooled.
    assert a._st.recycler is not None and b._st.recycler is not None


def test_a_lean_det_of_a_singular_matrix_is_zero_not_an_error() -> None:
    assert float(tfr.CpuEngine().det(_tensor(np.ones((3, 3)))).to_numpy()) == 0.0


# ---------------------------------------------------------------------- the failure rule
class _Boom(RuntimeError):
    pass


def _failing_f2py(name: str, dt: Any) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise _Boom(f"{name} failed")

    return fn


@pytest.mark.parametrize(
    ("call", "reads_b"),
    [
        (lambda e, a, b: e.det(a), False),
        (lambda e, a, b: e.inv(a), False),
        (lambda e, a, b: e.eigh(a), False),
        (lambda e, a, b: e.solve(a, b), True),
        (lambda e, a, b: e.lstsq(a, b), True),
    ],
    ids=["det", "inv", "eigh", "solve", "lstsq"],
)
def test_a_lean_kernel_that_raises_drops_its_buffers_and_never_pools_its_operands(
    call: Callable[..., Any], reads_b: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_lean, "f2py", _failing_f2py)
    eng = tfr.CpuEngine()
    a = _engine_output(eng, _spd(4, np.float64))
    b = _engine_output(eng, _rand((4, 2), np.float64))
    with pytest.raises(_Boom):
        call(eng, a, b)
    assert eng.buffer_pool_stats() == EMPTY  # taken, then dropped: nothing came back
    assert a._st.failed_read  # the traceback may hold its internal array (new policy)
    assert b._st.failed_read == reads_b
    assert not host.reading


def test_a_lean_svd_that_raises_drops_its_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    from tenferro.engine.linalg import _kernels

    def boom(*args: Any) -> int:
        raise _Boom("gesdd failed")

    monkeypatch.setattr(_kernels, "gesdd_run", boom)
    eng = tfr.CpuEngine()
    a = _engine_output(eng, _rand((5, 4), np.float64))
    with pytest.raises(_Boom):
        eng.svd(a)
    assert eng.buffer_pool_stats() == EMPTY
    assert a._st.failed_read  # new failure policy: marked, not unpooled for good
    assert not host.reading


@pytest.mark.parametrize(
    "call",
    [
        lambda e, a: e.qr(a),
        lambda e, a: tfr.linalg.qr(a.as_view().transpose_view((1, 0))),
    ],
    ids=["qr", "qr of a C-ordered view"],
)
def test_a_lean_qr_that_raises_drops_its_buffers_and_never_pools_its_operand(
    call: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lean QR's LAPACK calls are one compiled call (`_calls.qr_run`), no longer
    # f2py's wrappers: the failure rule is checked on that call.
    from tenferro.engine.linalg import _kernels

    def boom(*args: Any) -> int:
        raise _Boom("qr failed")

    monkeypatch.setattr(_kernels, "qr_run", boom)
    eng = tfr.CpuEngine()
    a = _engine_output(eng, _rand((5, 4), np.float64))
    with pytest.raises(_Boom), eng:
        call(eng, a)
    assert eng.buffer_pool_stats() == EMPTY
    assert a._st.failed_read
    assert not host.reading


# ---------------------------------------------------------------------- borrows
@pytest.mark.parametrize(
    "call",
    [
        lambda e, t: e.det(t),
        lambda e, t: e.svd(t),
        lambda e, t: e.eigh(t),
        lambda e, t: e.solve(t, t),
        lambda e, t: e.lstsq(t, t),
        lambda e, t: e.matrix_norm(t, 2),
    ],
    ids=["det", "svd", "eigh", "solve", "lstsq", "norm2"],
)
def test_a_lean_call_on_a_matrix_under_a_write_borrow_is_refused(
    call: Callable[..., Any],
) -> None:
    eng = tfr.CpuEngine()
    t = _tensor(_spd(3, np.float64))
    with t.map_write(), pytest.raises(tfr.BorrowError):
        call(eng, t)
    assert not host.reading
    call(eng, t)  # and works once the borrow has ended


def test_a_lean_solve_with_the_right_hand_side_under_a_write_borrow_is_refused() -> None:
    eng = tfr.CpuEngine()
    a, b = _tensor(_spd(3, np.float64)), _tensor(np.ones((3, 2)))
    with b.map_write(), pytest.raises(tfr.BorrowError):
        eng.solve(a, b)
    assert not host.reading


# ---------------------------------------------------------------------- invariants
@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 9),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from([np.float64, np.complex128]),
)
def test_lean_slogdet_and_det_agree_with_numpy(n: int, seed: int, dtype: Any) -> None:
    a = _rand((n, n), dtype, seed)
    eng = tfr.CpuEngine()
    sign, logabs = eng.slogdet(_tensor(a))
    ref = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.to_numpy(), ref.sign, atol=1e-8)
    np.testing.assert_allclose(logabs.to_numpy(), ref.logabsdet, atol=1e-8)
    np.testing.assert_allclose(eng.det(_tensor(a)).to_numpy(), np.linalg.det(a), rtol=1e-8)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_lean_slogdet_is_exact_where_the_diagonal_product_leaves_the_range(scale: float) -> None:
    a = np.asfortranarray(np.diag(np.full(8, scale)) * np.array([1, -1, 1, 1, 1, 1, 1, 1]))
    sign, logabs = tfr.CpuEngine().slogdet(_tensor(a))
    assert float(sign.to_numpy()) == -1.0
    np.testing.assert_allclose(float(logabs.to_numpy()), 8 * np.log(scale), rtol=1e-14)


def test_lean_eig_of_a_rotation_pairs_conjugate_eigenvectors() -> None:
    c, s = np.cos(0.3), np.sin(0.3)
    a = np.asfortranarray([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 2.0]])
    w, v = tfr.CpuEngine().eig(_tensor(a))
    wn, vn = w.to_numpy(), v.to_numpy()
    np.testing.assert_allclose(a @ vn, vn * wn, atol=1e-12)
    assert sorted(np.round(wn.imag, 12)) == sorted(np.round([s, -s, 0.0], 12))


def _outstanding(eng: tfr.CpuEngine) -> int:
    s = eng.buffer_pool_cache_stats()
    return s.hits + s.misses - s.recycled - s.refused_aliased


@pytest.mark.parametrize(
    "call",
    [
        lambda eng, a, junk: eng.cholesky(a, upper=junk),
        lambda eng, a, junk: eng.svd(a, full_matrices=junk),
    ],
    ids=["cholesky upper", "svd full_matrices"],
)
def test_a_junk_flag_is_refused_before_any_buffer_is_taken(call: Any) -> None:
    # Found by the fuzz: a many-element tensor as a flag raised inside the lean
    # body, after its buffers were taken, so they were dropped, never given back.
    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.asfortranarray(2.0 * np.eye(4)))
    junk = tfr.asarray([1.0, 2.0, 3.0])
    before = _outstanding(eng)
    with pytest.raises(tfr.TenferroError):
        call(eng, a, junk)
    assert _outstanding(eng) == before
    assert host.reading == []
