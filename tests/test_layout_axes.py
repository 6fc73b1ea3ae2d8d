"""Axis normalisation: numpy's `normalize_axis_tuple`, with tenferro's typed refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.lib.array_utils import normalize_axis_tuple as np_normalize

import tenferro as tfr
from tenferro.layout import normalize_axis, normalize_axis_tuple


@given(ndim=st.integers(1, 6), data=st.data())
def test_valid_axes_normalise_as_numpy_does(ndim: int, data: st.DataObject) -> None:
    axes = data.draw(st.lists(st.integers(-ndim, ndim - 1), max_size=ndim))
    if len({a % ndim for a in axes}) != len(axes):
        return  # duplicates: refused (tested below)
    assert normalize_axis_tuple(axes, ndim, "op") == np_normalize(axes, ndim)


def test_a_single_int_is_one_axis() -> None:
    assert normalize_axis_tuple(-1, 3, "op") == (2,)
    assert normalize_axis(np.int64(-3), 3, "op") == 0


@pytest.mark.parametrize("bad", [True, 1.0, "0", None])
def test_a_non_integer_axis_is_a_validation_error(bad: object) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        normalize_axis_tuple((0, bad), 3, "Op.x")
    assert err.value.kind == "INVALID_AXES"
    assert not isinstance(err.value, IndexError)


def test_an_axis_out_of_range_is_also_an_index_error() -> None:
    with pytest.raises(IndexError) as err:
        normalize_axis(3, 3, "Op.x", kind="INVALID_AXIS")
    assert isinstance(err.value, tfr.ValidationError)
    assert err.value.kind == "INVALID_AXIS"
    assert err.value.axis == 3


def test_a_repeated_axis_is_refused_unless_allowed() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        normalize_axis_tuple((0, -3), 3, "Op.x", duplicate_kind="DUPLICATE_AXES")
    assert err.value.kind == "DUPLICATE_AXES"
    assert normalize_axis_tuple((0, -3), 3, "Op.x", allow_duplicates=True) == (0, 0)


def test_a_rank_zero_operand_has_no_axis() -> None:
    with pytest.raises(IndexError):
        normalize_axis(0, 0, "Op.x")
