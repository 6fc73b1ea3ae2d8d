"""numpy spellings for autoray's callers: same values as numpy's functions."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr

X = np.array([[0.5, -0.25], [0.75, 0.125]])


def t() -> tfr.Tensor:
    return tfr.asarray(np.asfortranarray(X.copy()))


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("transpose", lambda xp, a: xp.transpose(a)),
        ("conj", lambda xp, a: xp.conj(a)),
        ("real", lambda xp, a: xp.real(a)),
        ("diag", lambda xp, a: xp.diag(a)),
        ("trace", lambda xp, a: xp.trace(a)),
        ("dot", lambda xp, a: xp.dot(a, a)),
        ("outer", lambda xp, a: xp.outer(a, a)),
        ("kron", lambda xp, a: xp.kron(a, a)),
        ("clip", lambda xp, a: xp.clip(a, -0.1, 0.6)),
        ("arccos", lambda xp, a: xp.arccos(a)),
        ("power", lambda xp, a: xp.power(a, 2.0)),
        ("pad", lambda xp, a: xp.pad(a, 1)),
        ("ravel", lambda xp, a: xp.ravel(a)),
        ("isclose", lambda xp, a: xp.isclose(a, a)),
        ("concatenate", lambda xp, a: xp.concatenate([a, a], axis=1)),
    ],
)
def test_numpy_style_function_matches_numpy(name: str, call: object) -> None:
    expected = call(np, X.copy())  # type: ignore[operator]
    got = call(tfr, t())  # type: ignore[operator]
    np.testing.assert_allclose(np.asarray(got), expected)


def test_complex_builds_complex_values_from_two_real_arrays() -> None:
    out = tfr.complex(tfr.asarray([1.0], dtype=tfr.float32), tfr.asarray([2.0], dtype=tfr.float32))
    assert out.dtype is tfr.complex64
    assert complex(out[0]) == 1 + 2j


def test_allclose_returns_a_python_bool() -> None:
    assert tfr.allclose(t(), t()) is True


def test_copy_is_a_counted_copy() -> None:
    before = tfr.copy_stats().copies
    tfr.copy(t())
    assert tfr.copy_stats().copies == before + 1


def test_asfortranarray_returns_an_owner_and_copies_only_views() -> None:
    owner = t()
    assert tfr.asfortranarray(owner) is owner
    before = tfr.copy_stats().copies
    fixed = tfr.asfortranarray(owner.T)
    assert isinstance(fixed, tfr.Tensor)
    assert tfr.copy_stats().copies == before + 1
    np.testing.assert_array_equal(np.asarray(fixed), X.T)


def test_to_numpy_is_a_read_only_borrow() -> None:
    owner = t()
    arr = tfr.to_numpy(owner)
    assert not arr.flags.writeable
    assert np.shares_memory(arr, np.asarray(owner))
