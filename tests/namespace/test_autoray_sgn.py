"""autoray's ``sgn`` for tenferro (quimb's stabilised QR): quimb's ``x / |x|`` with 1
where x is 0, computed in one call, in the operand's memory order."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr

autoray = pytest.importorskip("autoray")


def _quimb_sgn(x: np.ndarray) -> np.ndarray:
    x0 = x == 0
    return (x + x0) / (np.abs(x) + x0)


@pytest.mark.parametrize(
    "x",
    [
        np.array([1.5, -2.0, 0.0]),
        np.array([[1 + 1j, 0], [-2j, 3]]),
        np.array([0.5, 0.0], dtype=np.float32),
    ],
)
def test_sgn_gives_quimbs_values_bit_for_bit(x: np.ndarray) -> None:
    got = np.asarray(autoray.do("sgn", tfr.asarray(x.copy())))
    want = _quimb_sgn(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_sgn_of_a_c_ordered_matrix_is_c_ordered() -> None:
    got = autoray.do("sgn", tfr.asarray(np.array([[1.0, -2.0], [0.0, 3.0]])))
    assert isinstance(got, tfr.TensorView)
    assert np.asarray(got).flags.c_contiguous


def test_sgn_refuses_an_integer_array() -> None:
    with pytest.raises(tfr.PromotionError):
        autoray.do("sgn", tfr.asarray(np.array([3, 0, -4])))


def test_sgn_of_special_values_gives_quimbs_values_without_a_warning() -> None:
    import warnings

    x = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-320, -3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.asarray(autoray.do("sgn", tfr.asarray(x.copy())))
    with np.errstate(all="ignore"):
        want = _quimb_sgn(x)
    np.testing.assert_array_equal(got, want)


def test_sgn_of_owners_and_c_ordered_views_is_one_engine_call_not_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tenferro.namespace import _adapter

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(_adapter, "compute", refuse)
    for x in (np.array([1.5, -2.0, 0.0]), np.array([[1 + 1j, 0], [-2j, 3]])):
        for t in (tfr.asarray(np.asfortranarray(x)), tfr.asarray(np.ascontiguousarray(x))):
            got = autoray.do("sgn", t)
            assert type(got) is type(t)
            np.testing.assert_array_equal(np.asarray(got), _quimb_sgn(x))


def test_sgn_of_an_owner_borrowed_for_writing_is_refused() -> None:
    t = tfr.asarray(np.array([1.0, -1.0]))
    with pytest.raises(tfr.BorrowError), t.map_write():
        autoray.do("sgn", t)
