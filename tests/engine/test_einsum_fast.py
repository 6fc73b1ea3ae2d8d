"""The binary einsum fast path (einsum/fast.py) gives the general path's results and
refusals, and takes over only where both operands are read in place."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.einsum import fast

CASES = [
    ("ij,jk->ik", (4, 5), (5, 3)),
    ("ji,jk->ik", (5, 4), (5, 3)),
    ("ij,kj->ik", (4, 5), (3, 5)),
    ("ij,jk->ki", (4, 5), (5, 3)),
    ("ijb,jkb->ikb", (3, 4, 6), (4, 2, 6)),
    ("bij,bjk->bik", (6, 3, 4), (6, 4, 2)),
    ("ij,ij->ij", (7, 3), (7, 3)),
    ("i,j->ij", (5,), (3,)),
    ("i,i->", (6,), (6,)),
    ("ijk,jkl->il", (2, 3, 4), (3, 4, 5)),
    ("ij,jk", (3, 0), (0, 2)),
]


def col(arr: np.ndarray) -> tfr.Tensor:
    return tfr.from_numpy(np.array(arr, order="F"))


def _operands(sa: tuple, sb: tuple, dtype: type, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.random(sa) + (1j * rng.random(sa) if np.dtype(dtype).kind == "c" else 0)
    b = rng.random(sb) + (1j * rng.random(sb) if np.dtype(dtype).kind == "c" else 0)
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize(("subs", "sa", "sb"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_repeated_binary_einsum_matches_numpy(
    eng: tfr.CpuEngine, subs: str, sa: tuple, sb: tuple, dtype: type
) -> None:
    a, b = _operands(sa, sb, dtype)
    want = np.einsum(subs, a, b)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for _ in range(3):  # the first call plans and records, the later ones take the record
        got = eng.einsum(subs, col(a), col(b))
        assert got.dtype.numpy == dtype
        np.testing.assert_allclose(got.to_numpy(), want, rtol=tol, atol=tol)


def test_a_plain_matrix_product_gets_a_fast_record(eng: tfr.CpuEngine) -> None:
    a, b = col(np.ones((4, 5))), col(np.ones((5, 3)))
    eng.einsum("ij,jk->ik", a, b)
    assert isinstance(fast.lookup(("ij,jk->ik", "auto", (4, 5), (5, 3))), fast.Binary)


def test_a_product_that_needs_a_transposition_gets_no_fast_record(eng: tfr.CpuEngine) -> None:
    a, b = col(np.ones((6, 3, 4))), col(np.ones((6, 4, 2)))
    eng.einsum("bij,bjk->bik", a, b)
    assert fast.lookup(("bij,bjk->bik", "auto", (6, 3, 4), (6, 4, 2))) is False


def test_the_fast_path_refuses_an_operand_being_written(eng: tfr.CpuEngine) -> None:
    a, b = col(np.ones((4, 4))), col(np.ones((4, 4)))
    eng.einsum("ij,jk->ik", a, b)
    with b.map_write(), pytest.raises(tfr.BorrowError) as err:
        eng.einsum("ij,jk->ik", a, b)
    assert err.value.kind == "EXCLUSIVELY_BORROWED"


def test_the_fast_path_refuses_unequal_dtypes_like_the_general_path(eng: tfr.CpuEngine) -> None:
    a = col(np.ones((4, 4)))
    eng.einsum("ij,jk->ik", a, a)
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum("ij,jk->ik", a, col(np.ones((4, 4), dtype=np.float32)))
    assert err.value.kind == "DTYPE_MISMATCH"


def test_the_fast_path_gives_its_output_back_to_the_pool(eng: tfr.CpuEngine) -> None:
    a, b = col(np.ones((4, 4))), col(np.ones((4, 4)))
    eng.einsum("ij,jk->ik", a, b)
    before = eng.buffer_pool_cache_stats().hits
    eng.einsum("ij,jk->ik", a, b)
    eng.einsum("ij,jk->ik", a, b)
    assert eng.buffer_pool_cache_stats().hits == before + 2


def test_the_fast_path_reads_a_moved_operand_as_the_general_path_does(eng: tfr.CpuEngine) -> None:
    a, b = col(np.ones((4, 4))), col(np.ones((4, 4)))
    eng.einsum("ij,jk->ik", a, b)
    a.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        eng.einsum("ij,jk->ik", a, b)


@settings(max_examples=40, deadline=None)
@given(
    st.permutations("ijk"),
    st.permutations("jkl"),
    st.sampled_from(["il", "li", "ikl", "lik", "ijl"]),
    st.tuples(*[st.integers(1, 4)] * 4),
)
def test_binary_einsum_through_the_record_matches_numpy(
    ta: list, tb: list, out: str, dims: tuple
) -> None:
    eng = tfr.CpuEngine()
    sizes = dict(zip("ijkl", dims, strict=True))
    subs = f"{''.join(ta)},{''.join(tb)}->{out}"
    a = np.random.default_rng(1).random([sizes[c] for c in ta])
    b = np.random.default_rng(2).random([sizes[c] for c in tb])
    want = np.einsum(subs, a, b)
    first = eng.einsum(subs, col(a), col(b)).to_numpy()
    second = eng.einsum(subs, col(a), col(b)).to_numpy()
    np.testing.assert_allclose(first, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(second, want, rtol=1e-12, atol=1e-12)
