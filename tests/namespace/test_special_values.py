"""Special values where the standard and numpy's loops differ."""

from __future__ import annotations

import math

import numpy as np

import tenferro as tfr

INF = math.inf
NAN = math.nan


def test_floor_divide_of_an_infinity_by_a_finite_number_is_infinite() -> None:
    out = tfr.floor_divide(tfr.asarray([INF, -INF, INF]), tfr.asarray([2.0, 2.0, -2.0]))
    np.testing.assert_array_equal(np.asarray(out), [INF, -INF, -INF])


def test_floor_divide_by_an_infinity_of_the_other_sign_is_negative_zero() -> None:
    out = np.asarray(tfr.asarray([1.0, -1.0]) // tfr.asarray([-INF, INF]))
    np.testing.assert_array_equal(out, [0.0, 0.0])
    assert np.signbit(out).all()


def test_floor_divide_of_finite_floats_is_numpys() -> None:
    np.testing.assert_array_equal(np.asarray(tfr.asarray([1.0, -7.0]) // 0.1), [9.0, -70.0])


def test_complex_expm1_special_values() -> None:
    z = tfr.asarray([complex(INF, 0.0), complex(-INF, INF), complex(NAN, 0.0)])
    out = np.asarray(tfr.expm1(z))
    assert out[0] == complex(INF, 0.0)
    assert out[1] == complex(-1.0, 0.0)
    assert math.isnan(out[2].real) and out[2].imag == 0.0


def test_complex_expm1_is_accurate_near_zero() -> None:
    z = 1e-12 + 1e-12j
    got = complex(tfr.expm1(tfr.asarray([z]))[0])
    np.testing.assert_allclose(got, np.expm1(np.complex128(z)), rtol=1e-12)
