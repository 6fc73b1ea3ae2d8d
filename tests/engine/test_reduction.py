"""Reductions: axes, result dtypes, empty reductions, out=."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.tensor import Tensor

R = Callable[..., Tensor]
D = tfr.DType


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("reduce_sum", np.sum),
        ("reduce_prod", np.prod),
        ("reduce_max", np.max),
        ("reduce_min", np.min),
        ("reduce_mean", np.mean),
    ],
)
@pytest.mark.parametrize("axes", [None, (0,), (1,), (0, 2), (-1,), 1])
def test_reductions_match_numpy(
    eng: tfr.CpuEngine, rand: R, name: str, ref: Any, axes: Any
) -> None:
    a = rand((3, 4, 2))
    out = getattr(eng, name)(a, axes)
    np_axes = axes if axes is None or isinstance(axes, int) else tuple(axes)
    np.testing.assert_allclose(out.to_numpy(), ref(a.to_numpy(), axis=np_axes))


def test_axes_none_reduces_to_rank0(eng: tfr.CpuEngine, rand: R) -> None:
    out = eng.reduce_sum(rand((3, 4)))
    assert out.shape == ()


def test_an_empty_axes_tuple_is_the_identity(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 4))
    out = eng.reduce_sum(a, ())
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.to_numpy(), a.to_numpy())


def test_mean_of_integers_is_f64(eng: tfr.CpuEngine) -> None:
    out = eng.reduce_mean(tfr.from_numpy(np.array([1, 2], dtype=np.int32)))
    assert out.dtype is D.F64 and out.host_data().tolist() == [1.5]


def test_mean_of_integers_over_no_axis_converts(eng: tfr.CpuEngine) -> None:
    out = eng.reduce_mean(tfr.from_numpy(np.array([1, 2], dtype=np.int64)), ())
    assert out.dtype is D.F64 and out.host_data().tolist() == [1.0, 2.0]


def test_sum_of_bool_counts_as_i64(eng: tfr.CpuEngine) -> None:
    out = eng.reduce_sum(tfr.from_numpy(np.array([True, True, False])))
    assert out.dtype is D.I64 and out.host_data().tolist() == [2]


def test_integer_sum_keeps_its_dtype(eng: tfr.CpuEngine) -> None:
    out = eng.reduce_sum(tfr.from_numpy(np.array([1, 2, 3], dtype=np.int32)))
    assert out.dtype is D.I32 and out.host_data().tolist() == [6]


def test_max_of_bool_is_any(eng: tfr.CpuEngine) -> None:
    out = eng.reduce_max(tfr.from_numpy(np.array([False, True])))
    assert out.dtype is D.BOOL and out.host_data().tolist() == [True]


def test_max_propagates_nan(eng: tfr.CpuEngine) -> None:
    out = eng.reduce_max(tfr.from_numpy(np.array([1.0, np.nan, 3.0])))
    assert np.isnan(out.host_data()[0])


def test_sum_of_an_empty_axis_is_zero(eng: tfr.CpuEngine) -> None:
    e = tfr.from_numpy(np.empty((0, 3), order="F"))
    assert eng.reduce_sum(e, (0,)).to_numpy().tolist() == [0.0, 0.0, 0.0]
    assert eng.reduce_prod(e, (0,)).to_numpy().tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min", "reduce_mean"])
def test_an_empty_reduction_without_identity_is_refused(eng: tfr.CpuEngine, name: str) -> None:
    e = tfr.from_numpy(np.empty((0, 3), order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        getattr(eng, name)(e, (0,))
    assert err.value.kind == "EMPTY_REDUCTION"


def test_max_of_complex_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="complex"):
        eng.reduce_max(tfr.from_numpy(np.array([1j])))


@pytest.mark.parametrize("axes", [(3,), (0, 0), (True,), ("a",)])
def test_bad_axes_are_refused(eng: tfr.CpuEngine, rand: R, axes: Any) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.reduce_sum(rand((2, 2)), axes)
    assert err.value.kind == "INVALID_AXES"


def test_reductions_take_strided_views(eng: tfr.CpuEngine, rand: R) -> None:
    v = rand((6, 4)).as_view().slice_view((slice(None, None, -3), slice(None)))
    np.testing.assert_allclose(eng.reduce_sum(v, (1,)).to_numpy(), v.to_numpy().sum(1))


def test_reduction_into_out(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 4))
    out = tfr.from_numpy(np.zeros(4))
    assert eng.reduce_mean(a, (0,), out=out) is out
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy().mean(0))
