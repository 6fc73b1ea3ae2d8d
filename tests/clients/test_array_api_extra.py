"""array-api-extra and array-api-compat on tenferro arrays, against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr

xpx = pytest.importorskip("array_api_extra")
compat = pytest.importorskip("array_api_compat")


def t(a: Any) -> Any:
    return tfr.asarray(np.array(a))


def val(x: Any) -> Any:
    assert isinstance(x, (tfr.Tensor, tfr.TensorView)), type(x)
    return np.asarray(x)


@pytest.mark.parametrize("copy", [False, None, True])
@pytest.mark.parametrize("method", ["set", "add", "subtract", "multiply", "divide", "power"])
def test_at_updates_match_numpy(method: str, copy: bool | None) -> None:
    ref = np.array([1.0, 2.0, 3.0, 4.0])
    x = t(ref)
    out = getattr(xpx.at(x)[1:3], method)(2.0, copy=copy)
    expected = getattr(xpx.at(ref.copy())[1:3], method)(2.0, copy=True)
    np.testing.assert_allclose(val(out), expected)
    if copy is True:
        np.testing.assert_array_equal(val(x), ref)  # the input is untouched


def test_at_with_an_integer_index_and_copy_false_updates_in_place() -> None:
    x = t([1.0, 2.0, 3.0])
    out = xpx.at(x)[1].multiply(5.0, copy=False)
    assert out is x
    np.testing.assert_array_equal(val(x), [1.0, 10.0, 3.0])


def test_at_with_a_mask_matches_numpy() -> None:
    ref = np.array([1.0, -2.0, 3.0, -4.0])
    x = t(ref)
    out = xpx.at(x)[x < 0].set(0.0)
    np.testing.assert_array_equal(val(out), np.where(ref < 0, 0.0, ref))


def test_a_refused_at_update_changes_nothing() -> None:
    x = t([1.0, 2.0, 3.0])
    live = x[1:]
    with pytest.raises(tfr.BorrowError):
        xpx.at(x)[0].add(1.0, copy=False)
    np.testing.assert_array_equal(val(x), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(val(live), [2.0, 3.0])


CASES: dict[str, tuple[Any, Any]] = {
    "atleast_nd": (lambda a: xpx.atleast_nd(a, ndim=3), np.arange(4.0)),
    "cov": (xpx.cov, np.arange(12.0).reshape(3, 4) ** 1.5),
    "expand_dims": (lambda a: xpx.expand_dims(a, axis=(0, 2)), np.arange(4.0)),
    "kron": (lambda a: xpx.kron(a, a), np.arange(4.0).reshape(2, 2)),
    "nunique": (xpx.nunique, np.array([1.0, 2.0, 2.0, 5.0])),
    "pad": (lambda a: xpx.pad(a, 2), np.arange(3.0)),
    "setdiff1d": (lambda a: xpx.setdiff1d(a, a[:2]), np.array([3.0, 1.0, 2.0, 5.0])),
    "sinc": (xpx.sinc, np.linspace(-2.0, 2.0, 9)),
    "create_diagonal": (xpx.create_diagonal, np.arange(3.0)),
    "broadcast_shapes": (
        lambda a: np.array(xpx.broadcast_shapes(a.shape, (1, 4))),
        np.ones((3, 1)),
    ),
    "isclose": (lambda a: xpx.isclose(a, a + 1e-12), np.arange(4.0)),
    "one_hot": (lambda a: xpx.one_hot(a, 4), np.array([0, 3, 1])),
    "apply_where": (
        lambda a: xpx.apply_where(a > 1, a, lambda v: v * 2, fill_value=0.0),
        np.arange(4.0),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_array_api_extra_function_matches_numpy(name: str) -> None:
    fn, data = CASES[name]
    ours = fn(t(data))
    ref = fn(data.copy())
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref))


def test_array_api_compat_sees_tenferro_as_its_own_namespace() -> None:
    x = t([1.0, 2.0])
    assert compat.array_namespace(x) is tfr
    assert compat.is_array_api_obj(x)
    assert compat.device(x) == "cpu"
    assert compat.size(x) == 2
