"""Tensor operators with numpy values and Python scalars on the left.

``np.float64(2) * t`` reaches ``Tensor.__array_ufunc__``, which runs the operator
on the default engine (numpy used to compute an ndarray through ``__array__``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.tensor import Tensor


def t_(values: Any, dtype: Any = None) -> Tensor:
    return tfr.from_numpy(np.asfortranarray(np.array(values, dtype=dtype)))


def test_a_numpy_scalar_on_the_left_runs_on_the_engine() -> None:
    t = t_([1.0, 2.0])
    eng = tfr.CpuEngine()
    with eng:
        out = np.float64(2.0) * t
    assert isinstance(out, Tensor)
    assert out.to_numpy().tolist() == [2.0, 4.0]
    assert eng.buffer_pool_cache_stats().misses == 1  # the output came from eng's pool


def test_a_numpy_integer_on_the_left_keeps_the_tensors_dtype() -> None:
    out = np.int64(10) - t_([1, 2], np.int32)
    assert isinstance(out, Tensor)
    assert out.dtype is tfr.DType.I32
    assert out.to_numpy().tolist() == [9, 8]


def test_a_python_scalar_raised_to_a_tensor_runs_on_the_engine() -> None:
    out = 2 ** t_([1.0, 3.0])
    assert isinstance(out, Tensor)
    assert out.to_numpy().tolist() == [2.0, 8.0]


def test_an_ndarray_on_the_left_gives_a_tensor() -> None:
    # Issue 21: numpy operands are borrowed for the call on either side.
    t = t_([1.0, 2.0, 3.0])
    out = np.ones(3) + t
    assert isinstance(out, tfr.Tensor)
    assert out.to_numpy().tolist() == [2.0, 3.0, 4.0]


def test_an_ndarray_matmul_a_tensor_gives_a_tensor() -> None:
    t = tfr.from_numpy(np.ones((2, 2), order="F"))
    out = np.ones((2, 2)) @ t
    assert isinstance(out, tfr.Tensor)
    assert out.to_numpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_numpy_still_reads_a_tensor_through_asarray_and_dlpack() -> None:
    t = t_([0.0, 1.0])
    assert np.asarray(t).tolist() == [0.0, 1.0]
    assert np.from_dlpack(t).tolist() == [0.0, 1.0]
    np.testing.assert_allclose(np.exp(np.asarray(t)), [1.0, np.e])


def test_other_numpy_ufuncs_read_a_tensor_through_a_borrow() -> None:
    t = t_([0.0, 1.0])
    got = np.exp(t)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, [1.0, np.e])
    assert float(np.sum(t)) == 1.0
    del got
    with t.map_write():  # no borrow outlived the calls
        pass


def test_numpy_cannot_write_into_a_tensor() -> None:
    t = t_([0.0, 1.0])
    with pytest.raises(tfr.ValidationError) as err:
        np.exp(np.zeros(2), out=t)
    assert err.value.kind == "INVALID_OUT"
    assert t.to_numpy().tolist() == [0.0, 1.0]
