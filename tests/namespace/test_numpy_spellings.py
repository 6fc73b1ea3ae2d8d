"""numpy spellings and array methods autoray callers reach, against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr

REF = np.arange(24.0).reshape(2, 3, 4)


def t() -> Any:
    return tfr.asarray(REF.copy())


def val(x: Any) -> Any:
    assert isinstance(x, (tfr.Tensor, tfr.TensorView)), type(x)
    return np.asarray(x)


def test_swapaxes_is_a_view_matching_numpy() -> None:
    x = t()
    with tfr.forbid_copies():
        s = tfr.swapaxes(x, 0, -1)
    np.testing.assert_array_equal(val(s), np.swapaxes(REF, 0, -1))


def test_indices_matches_numpy() -> None:
    np.testing.assert_array_equal(val(tfr.indices((2, 3))), np.indices((2, 3)))
    sparse = tfr.indices((2, 3), sparse=True)
    for a, b in zip(sparse, np.indices((2, 3), sparse=True), strict=True):
        np.testing.assert_array_equal(val(a), b)


@pytest.mark.parametrize("sections", [2, [1, 3], [0, 4]])
def test_split_gives_views_matching_numpy(sections: Any) -> None:
    x = t()
    with tfr.forbid_copies():
        parts = tfr.split(x, sections, axis=2)
    for a, b in zip(parts, np.split(REF, sections, axis=2), strict=True):
        np.testing.assert_array_equal(val(a), b)


def test_array_split_allows_unequal_sections() -> None:
    for a, b in zip(tfr.array_split(t(), 3, axis=2), np.array_split(REF, 3, axis=2), strict=True):
        np.testing.assert_array_equal(val(a), b)


def test_split_into_unequal_sections_is_refused() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.split(t(), 3, axis=2)


def test_take_with_python_ints_and_lists() -> None:
    np.testing.assert_array_equal(val(tfr.take(t(), 1, axis=1)), np.take(REF, 1, axis=1))
    np.testing.assert_array_equal(val(tfr.take(t(), [2, 0], axis=2)), np.take(REF, [2, 0], axis=2))
    with pytest.raises(IndexError):
        tfr.take(t(), 5, axis=1)


def test_random_with_a_seed_matches_numpys_generator() -> None:
    ours = tfr.random.default_rng(4).normal(1.0, 2.0, (3, 2))
    np.testing.assert_array_equal(val(ours), np.random.default_rng(4).normal(1.0, 2.0, (3, 2)))
    u = tfr.random.default_rng(1).uniform(size=5, dtype=tfr.float32)
    assert u.dtype == tfr.float32
    with pytest.raises(tfr.DTypeError):
        tfr.random.normal(size=2, dtype=tfr.int64)


def test_autoray_finds_the_new_spellings() -> None:
    ar = pytest.importorskip("autoray")
    x = t()
    np.testing.assert_array_equal(val(ar.do("swapaxes", x, 0, 1)), np.swapaxes(REF, 0, 1))
    np.testing.assert_array_equal(val(ar.do("indices", (2, 2), like=x)), np.indices((2, 2)))
    m = tfr.asarray(np.array([[4.0, 1.0], [2.0, 3.0]]))
    p, lo, up = ar.do("scipy.linalg.lu", m)
    np.testing.assert_allclose(val(p) @ val(lo) @ val(up), np.asarray(m))
    np.testing.assert_allclose(
        val(ar.do("scipy.linalg.expm", m)), __import__("scipy.linalg").linalg.expm(np.asarray(m))
    )
    tri = tfr.asarray(np.array([[2.0, 0.0], [1.0, 4.0]]))
    sol = ar.do("scipy.linalg.solve_triangular", tri, tfr.asarray([2.0, 9.0]), lower=True)
    np.testing.assert_allclose(val(sol), [1.0, 2.0])
    a = tfr.asarray(np.random.default_rng(0).normal(size=(8, 6)))
    u, s, vh = ar.do("linalg.rsvd", a, 3)
    np.testing.assert_allclose(val(s), np.linalg.svd(np.asarray(a))[1][:3], rtol=1e-8)
    assert u.shape == (8, 3) and vh.shape == (3, 6)


# ---------------------------------------------------------------------- array methods
def test_methods_match_numpy() -> None:
    x = t()
    assert x.sum().item() == REF.sum()
    np.testing.assert_array_equal(val(x.max(axis=0)), REF.max(axis=0))
    np.testing.assert_array_equal(val(x.min(axis=(0, 2))), REF.min(axis=(0, 2)))
    np.testing.assert_allclose(val(x.mean(axis=1)), REF.mean(axis=1))
    np.testing.assert_array_equal(val(x.transpose()), REF.transpose())
    np.testing.assert_array_equal(val(x.transpose(1, 0, 2)), REF.transpose(1, 0, 2))
    np.testing.assert_array_equal(val(x.reshape(6, 4)), REF.reshape(6, 4))
    np.testing.assert_array_equal(val(x.reshape((4, 6))), REF.reshape((4, 6)))
    np.testing.assert_array_equal(val(x.ravel()), REF.ravel())
    np.testing.assert_array_equal(val(x.flatten()), REF.flatten())
    assert x.tolist() == REF.tolist()
    assert x.item(1, 2, 3) == REF.item(1, 2, 3)
    assert x.astype(tfr.float32).dtype == np.float32
    np.testing.assert_array_equal(val((x * 1j).conj()), (REF * 1j).conj())


def test_view_methods_stay_views_and_copies_are_counted() -> None:
    x = t()
    with tfr.forbid_copies():
        x.transpose()
        x.reshape(6, 4)  # C-ordered data: a view
        x.swapaxes(0, 1)
    before = tfr.copy_stats().copies
    c = x.copy()
    f = x.flatten()
    assert tfr.copy_stats().copies == before + 2
    np.testing.assert_array_equal(val(c), REF)
    np.testing.assert_array_equal(val(f), REF.ravel())


def test_format_of_a_0d_array_formats_its_value() -> None:
    e = tfr.sum(tfr.asarray([0.25, 0.5]))
    assert f"{e:.3f}" == "0.750"
    assert f"{e}" == format(0.75)
    with pytest.raises(TypeError):
        f"{tfr.asarray([1.0, 2.0]):.3f}"


def test_scipy_eigsh_takes_a_tensor_as_a_linear_operator() -> None:
    import scipy.sparse.linalg as spla

    a = np.diag(np.arange(1.0, 31.0))
    w = spla.eigsh(tfr.asarray(a.copy()), k=2, which="SA", return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(w), [1.0, 2.0])


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.sum(keepdims="yes"),
        lambda x: x.max(axis=1.5),
        lambda x: x.reshape(2.5, 2),
        lambda x: x.transpose("a"),
        lambda x: x.sum(out=np.zeros(())),
        lambda x: x.matvec(np.ones(7)),
        lambda x: x.item("0"),
    ],
)
def test_methods_refuse_bad_arguments_typed_and_change_nothing(call: Any) -> None:
    x = tfr.asarray(np.arange(4.0).reshape(2, 2))
    before = tfr.copy_stats()
    with pytest.raises(tfr.ValidationError):
        call(x)
    assert tfr.copy_stats() == before
    np.testing.assert_array_equal(val(x), np.arange(4.0).reshape(2, 2))


def test_a_refused_copy_counts_nothing() -> None:
    x = tfr.asarray([1.0, 2.0])
    with x.as_view_mut():
        before = tfr.copy_stats()
        for call in (x.copy, x.flatten, lambda: tfr.reshape(x, (2,), copy=True)):
            with pytest.raises(tfr.BorrowError):
                call()
        assert tfr.copy_stats() == before
