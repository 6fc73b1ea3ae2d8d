"""tenferro's own versions of quimb's split kernels (``svd_truncated``, ``qr_stabilized``).

quimb registers a numba version of each for numpy; tenferro registers its own for
the ``tenferro`` backend (namespace/_autoray_quimb.py). Each must give what
quimb's composed default gives on the same tenferro array, for every option,
and must be what quimb's dispatch reaches, whichever of quimb and tenferro is
imported first.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.namespace import _autoray_quimb

qdec = pytest.importorskip("quimb.tensor.decomp")

SVD_ABSORBS = [
    None, "U,s,VH", 2, "s", -12, "lsqrt", -11, "VH", "rorthog", -10, "Us", "lfactor",
    -1, "Us,VH", "left", 0, "Usq,sqVH", "both", 1, "U,sVH", "right", 10, "U", "lorthog",
    11, "sVH", "rfactor", 12, "sqVH", "rsqrt",
]  # fmt: skip
CUTOFF_MODES = [1, 2, 3, 4, 5, 6, "abs", "rel", "sum2", "rsum2", "sum1", "rsum1"]
QR_ABSORBS = [1, "U,sVH", "right", 10, "U", "lorthog", 11, "sVH", "rfactor",
              -1, "Us,VH", "left", -11, "VH", "rorthog", -10, "Us", "lfactor"]  # fmt: skip
DTYPES = [np.float64, np.complex128, np.float32]
LAYOUTS = ["C view", "F owner", "F view", "strided view"]
SHAPES = [(9, 6), (6, 9), (7, 7)]


def _matrix(shape: tuple[int, int], dtype: Any, seed: int = 0) -> np.ndarray[Any, Any]:
    """A matrix whose singular values fall geometrically (2**-i), so every cutoff mode
    truncates somewhere inside the spectrum."""
    rng = np.random.default_rng(seed)
    m, n = shape
    k = min(m, n)

    def orth(rows: int) -> np.ndarray[Any, Any]:
        z = rng.standard_normal((rows, k))
        if np.dtype(dtype).kind == "c":
            z = z + 1j * rng.standard_normal((rows, k))
        return np.linalg.qr(z)[0]

    a = (orth(m) * 2.0 ** -np.arange(k)) @ orth(n).conj().T
    return a.astype(dtype)


def _tenferro(a: np.ndarray[Any, Any], layout: str) -> Any:
    if layout == "C view":
        return tfr.asarray(np.ascontiguousarray(a))
    if layout == "F owner":
        return tfr.asarray(np.asfortranarray(a))
    if layout == "F view":
        # The transpose of a C-ordered view: column-major over its whole buffer.
        return tfr.asarray(np.ascontiguousarray(a.T)).mT
    # A C-ordered view that starts inside its buffer: neither a whole C- nor F-ordered one.
    big = np.zeros((a.shape[0] + 1, a.shape[1]), dtype=a.dtype)
    big[1:] = a
    return tfr.asarray(big)[1:]


def _tol(dtype: Any) -> float:
    return 2e-5 if dtype is np.float32 else 1e-12


def _assert_same(ours: Any, ref: Any, dtype: Any) -> None:
    assert len(ours) == len(ref) == 3
    for a, b in zip(ours, ref, strict=True):
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert isinstance(a, (tfr.Tensor, tfr.TensorView))
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=_tol(dtype), atol=_tol(dtype))


def _refuse(name: str) -> Any:
    raise AssertionError(f"{name} fell back to quimb's composed function")


@contextmanager
def _only_tenferros() -> Iterator[None]:
    """Fail any call that would run quimb's composed function instead of tenferro's."""
    real = _autoray_quimb._composed
    _autoray_quimb._composed = _refuse
    try:
        yield
    finally:
        _autoray_quimb._composed = real


@pytest.fixture
def no_fallback() -> Iterator[None]:
    with _only_tenferros():
        yield


# ---------------------------------------------------------------------- svd_truncated
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=40, deadline=None)
@given(
    absorb=st.sampled_from(SVD_ABSORBS),
    cutoff_mode=st.sampled_from(CUTOFF_MODES),
    cutoff=st.sampled_from([-1.0, 0.0, 1e-10, 1e-3, 0.01, 0.2, 0.7]),
    max_bond=st.sampled_from([-1, 1, 2, 4, 20]),
    renorm=st.sampled_from([0, 1, 2]),
)
def test_svd_truncated_matches_quimbs_composed_function(
    shape: tuple[int, int],
    layout: str,
    dtype: Any,
    absorb: Any,
    cutoff_mode: Any,
    cutoff: float,
    max_bond: int,
    renorm: int,
) -> None:
    x = _tenferro(_matrix(shape, dtype), layout)
    opts = dict(
        cutoff=cutoff, cutoff_mode=cutoff_mode, max_bond=max_bond, absorb=absorb, renorm=renorm
    )
    ref_info: dict[str, Any] = {}
    ref = qdec.svd_truncated._default_fn(x, info=ref_info, **opts)
    info: dict[str, Any] = {}
    with _only_tenferros():
        ours = qdec.svd_truncated(x, info=info, **opts)  # quimb's dispatch reaches ours
    _assert_same(ours, ref, dtype)
    assert set(info) == {"error"}
    np.testing.assert_allclose(
        float(info["error"]), float(ref_info["error"]), rtol=_tol(dtype), atol=_tol(dtype)
    )


def test_svd_truncated_is_what_autoray_dispatches_for_tenferro() -> None:
    import autoray

    assert autoray.get_lib_fn("tenferro", "svd_truncated") is _autoray_quimb.svd_truncated
    assert autoray.get_lib_fn("tenferro", "qr_stabilized") is _autoray_quimb.qr_stabilized


def test_svd_truncated_error_is_zero_without_truncation(no_fallback: None) -> None:
    info: dict[str, Any] = {}
    x = _tenferro(_matrix((5, 4), np.float64), "C view")
    _, s, _ = qdec.svd_truncated(x, cutoff=-1.0, max_bond=-1, absorb=None, info=info)
    assert s.shape == (4,) and info == {"error": 0.0}


def test_svd_truncated_computes_no_error_unless_asked(no_fallback: None) -> None:
    x = _tenferro(_matrix((5, 4), np.float64), "C view")
    other = {"something_else": 1}
    qdec.svd_truncated(x, cutoff=0.1, absorb=0, info=other)
    assert other == {"something_else": 1}
    qdec.svd_truncated(x, cutoff=0.1, absorb=0, info=None)


def test_svd_truncated_error_is_a_tenferro_scalar_when_truncating(no_fallback: None) -> None:
    info: dict[str, Any] = {}
    a = _matrix((6, 5), np.float64)
    qdec.svd_truncated(tfr.asarray(a), max_bond=2, absorb=0, info=info)
    assert isinstance(info["error"], tfr.Tensor) and info["error"].shape == ()
    s = np.linalg.svd(a, compute_uv=False)
    assert abs(float(info["error"]) - np.sqrt(np.sum(s[2:] ** 2))) < 1e-13


@pytest.mark.parametrize("layout", ["C view", "F owner"])
def test_svd_truncated_makes_no_named_copy(layout: str, no_fallback: None) -> None:
    x = _tenferro(_matrix((9, 6), np.complex128), layout)
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        for absorb in (-1, 0, 1, None):
            qdec.svd_truncated(x, cutoff=1e-3, cutoff_mode=4, max_bond=3, absorb=absorb, renorm=2)
    assert tfr.copy_stats() == before


def test_svd_truncated_keeps_memory_order(no_fallback: None) -> None:
    # As quimb's composed function: C-ordered data gives C-ordered absorbed factors.
    a = _matrix((9, 6), np.float64)
    left, _, right = qdec.svd_truncated(tfr.asarray(a), max_bond=3, absorb=0)
    assert np.asarray(left).flags.c_contiguous and np.asarray(right).flags.c_contiguous
    left, _, right = qdec.svd_truncated(tfr.asarray(np.asfortranarray(a)), max_bond=3, absorb=0)
    assert isinstance(left, tfr.Tensor) and isinstance(right, tfr.Tensor)


def test_svd_truncated_of_a_batch_runs_quimbs_composed_function() -> None:
    a = np.stack([_matrix((5, 4), np.float64, seed) for seed in range(3)])
    x = tfr.asarray(a)
    ours = qdec.svd_truncated(x, cutoff=0.1, cutoff_mode=2, absorb=0)
    ref = qdec.svd_truncated._default_fn(x, cutoff=0.1, cutoff_mode=2, absorb=0)
    _assert_same(ours, ref, np.float64)


def test_svd_truncated_refuses_an_unknown_absorb_as_quimb_does() -> None:
    x = _tenferro(_matrix((5, 4), np.float64), "C view")
    with pytest.raises(KeyError):
        qdec.svd_truncated(x, absorb="sideways")


# ---------------------------------------------------------------------- qr_stabilized
@pytest.mark.parametrize("stabilized", [True, False])
@pytest.mark.parametrize("absorb", QR_ABSORBS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_stabilized_matches_quimbs_composed_function(
    dtype: Any,
    layout: str,
    shape: tuple[int, int],
    absorb: Any,
    stabilized: bool,
    no_fallback: None,
) -> None:
    x = _tenferro(_matrix(shape, dtype, seed=7), layout)
    ref = qdec.qr_stabilized._default_fn(x, absorb=absorb, stabilized=stabilized)
    ours = qdec.qr_stabilized(x, absorb=absorb, stabilized=stabilized)
    _assert_same(ours, ref, dtype)


@pytest.mark.parametrize("layout", ["C view", "F owner"])
def test_qr_stabilized_makes_no_named_copy(layout: str, no_fallback: None) -> None:
    x = _tenferro(_matrix((9, 6), np.complex128), layout)
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        for absorb in (1, -1, 10, 11):
            qdec.qr_stabilized(x, absorb=absorb)
    assert tfr.copy_stats() == before


def test_qr_stabilized_of_a_batch_runs_quimbs_composed_function() -> None:
    x = tfr.asarray(np.stack([_matrix((5, 4), np.float64, seed) for seed in range(3)]))
    _assert_same(
        qdec.qr_stabilized(x, absorb=1),
        qdec.qr_stabilized._default_fn(x, absorb=1),
        np.float64,
    )


def test_qr_stabilized_refuses_an_absorb_without_a_qr_form_as_quimb_does() -> None:
    x = _tenferro(_matrix((5, 4), np.float64), "C view")
    with pytest.raises(ValueError, match="Invalid absorb"):
        qdec.qr_stabilized(x, absorb=0)


# ---------------------------------------------------------------------- the compiled path
class _Boom(RuntimeError):
    pass


def _live(eng: tfr.CpuEngine) -> int:
    """The bytes ``eng``'s pool has handed out and not had back (returns drained first)."""
    eng.buffer_pool_stats()
    return int(eng._pool._out)


def _pooled_matrix(eng: tfr.CpuEngine, shape: tuple[int, int], layout: str) -> Any:
    """``(x, owner)``: a pooled tensor of ``eng`` and ``x``, itself or its C-ordered view."""
    a = _matrix(shape, np.float64, seed=3)
    t = eng.mul(tfr.asarray(np.asfortranarray(a if layout == "F owner" else a.T)), 1.0)
    assert t._st.recycler is not None
    return (t if layout == "F owner" else t.mT), t


SPLITS = {
    "svd_truncated": (
        "gesdd_run",
        lambda x: qdec.svd_truncated(x, cutoff=1e-10, cutoff_mode=4, max_bond=3, absorb=-1),
    ),
    "qr_stabilized": ("qr_run", lambda x: qdec.qr_stabilized(x, absorb=1)),
}


@pytest.mark.parametrize("layout", ["C view", "F owner"])
@pytest.mark.parametrize("split", list(SPLITS))
def test_a_split_leaves_only_its_results_live_in_the_pool(
    split: str, layout: str, no_fallback: None
) -> None:
    eng = tfr.CpuEngine()
    with eng:
        x, _ = _pooled_matrix(eng, (9, 6), layout)
        before = _live(eng)
        got = SPLITS[split][1](x)
        assert _live(eng) > before
        del got
        assert _live(eng) == before


@pytest.mark.parametrize("layout", ["C view", "F owner"])
@pytest.mark.parametrize("split", list(SPLITS))
def test_a_split_whose_lapack_call_raises_forgets_its_buffers_and_marks_its_operand(
    split: str, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenferro.engine.linalg import _kernels
    from tenferro.storage import host

    def boom(*args: Any) -> int:
        raise _Boom("lapack failed")

    eng = tfr.CpuEngine()
    with eng:
        x, owner = _pooled_matrix(eng, (9, 6), layout)
        before = _live(eng)
        monkeypatch.setattr(_kernels, SPLITS[split][0], boom)
        with pytest.raises(_Boom):
            SPLITS[split][1](x)
        assert _live(eng) == before
        assert owner._st.failed_read
        assert not host.reading


@pytest.mark.parametrize("split", list(SPLITS))
def test_a_split_of_a_matrix_under_a_write_borrow_is_refused(split: str) -> None:
    x = tfr.asarray(np.asfortranarray(_matrix((9, 6), np.float64)))
    with x.map_write(), pytest.raises(tfr.BorrowError):
        SPLITS[split][1](x)
    SPLITS[split][1](x)  # and works once the borrow has ended


def test_qr_stabilized_of_a_fresh_c_ordered_view_takes_no_root(no_fallback: None) -> None:
    x = tfr.asarray(np.ascontiguousarray(_matrix((9, 6), np.float64)))
    y = x * 1.0  # a fresh C-ordered result: no root until something reads it
    assert y._base is None
    q, _, r = qdec.qr_stabilized(y, absorb=1)
    assert y._base is None
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), np.asarray(x), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_svd_truncated_counts_a_float32_spectrum_in_float32(dtype: Any) -> None:
    # Singular values 1, 0.1 (rounded to the dtype), 0.01: an "abs" cutoff of 0.1 (a
    # Python float) is cast to the spectrum's dtype first, as numpy compares: in
    # float32 the second value equals the cutoff (not kept); in float64 likewise.
    a = np.diag(np.array([1.0, 0.1, 0.01], dtype=dtype))
    x = tfr.asarray(np.asfortranarray(a))
    opts = dict(cutoff=0.1, cutoff_mode=1, max_bond=-1, absorb=None)
    ref = qdec.svd_truncated._default_fn(x, **opts)
    with _only_tenferros():
        ours = qdec.svd_truncated(x, **opts)
    assert np.asarray(ours[1]).shape == np.asarray(ref[1]).shape == (1,)


# ---------------------------------------------------------------------- registration
_CHILD = """
import sys
{imports}
import autoray
from tenferro.namespace import _autoray_quimb as k
assert autoray.get_lib_fn("tenferro", "svd_truncated") is k.svd_truncated
assert autoray.get_lib_fn("tenferro", "qr_stabilized") is k.qr_stabilized
import numpy as np, tenferro as tfr
import quimb.tensor as qtn
mps = qtn.MPS_rand_state(6, bond_dim=4, seed=1)
mps.apply_to_arrays(lambda a: tfr.asarray(np.array(a)))
mps.compress(max_bond=2)
print("ok")
"""


@pytest.mark.parametrize(
    "imports",
    [
        "import quimb.tensor\nimport tenferro",
        "import tenferro\nimport quimb.tensor",
        "import tenferro\nimport autoray\nimport tenferro.autodiff\nimport quimb.tensor",
        "import quimb.tensor\nimport tenferro\nimport tenferro.autodiff",
    ],
    ids=["quimb first", "tenferro first", "autodiff before quimb", "autodiff after quimb"],
)
def test_the_kernels_are_registered_whichever_is_imported_first(imports: str) -> None:
    code = textwrap.dedent(_CHILD).format(imports=imports)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")


def test_importing_tenferro_imports_neither_quimb_nor_autoray() -> None:
    code = "import sys, tenferro; print('quimb' in sys.modules, 'autoray' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]
