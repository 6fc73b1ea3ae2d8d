"""Elementwise operations: values, weak scalars, dtype rules, out=, refusals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.tensor import Tensor

D = tfr.DType


def t_(values: Any, dtype: Any = None) -> Tensor:
    return tfr.from_numpy(np.asfortranarray(np.array(values, dtype=dtype)))


def test_add_of_two_tensors(eng: tfr.CpuEngine) -> None:
    out = eng.add(t_([1.0, 2.0]), t_([10.0, 20.0]))
    assert out.to_numpy().tolist() == [11.0, 22.0]
    assert out.dtype is D.F64


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("add", np.add),
        ("sub", np.subtract),
        ("mul", np.multiply),
        ("div", np.true_divide),
        ("pow", np.power),
        ("maximum", np.maximum),
        ("minimum", np.minimum),
    ],
)
def test_binary_ops_match_numpy_on_matrices(
    eng: tfr.CpuEngine, rand: Callable[..., Tensor], name: str, ref: Any
) -> None:
    a, b = rand((5, 3), 1), rand((5, 3), 2)
    np.testing.assert_allclose(getattr(eng, name)(a, b).to_numpy(), ref(a.to_numpy(), b.to_numpy()))


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("equal", np.equal),
        ("not_equal", np.not_equal),
        ("less", np.less),
        ("less_equal", np.less_equal),
        ("greater", np.greater),
        ("greater_equal", np.greater_equal),
    ],
)
def test_comparisons_return_bool(eng: tfr.CpuEngine, name: str, ref: Any) -> None:
    a, b = t_([1, 2, 3], np.int32), t_([3, 2, 1], np.int32)
    out = getattr(eng, name)(a, b)
    assert out.dtype is D.BOOL
    assert out.to_numpy().tolist() == ref(a.to_numpy(), b.to_numpy()).tolist()


@pytest.mark.parametrize("name", ["neg", "abs", "exp", "log", "sin", "cos", "tanh", "sqrt"])
def test_unary_ops_match_numpy(eng: tfr.CpuEngine, rand: Callable[..., Tensor], name: str) -> None:
    a = rand((4, 2))
    ref = {"neg": np.negative, "abs": np.abs}.get(name) or getattr(np, name)
    np.testing.assert_allclose(getattr(eng, name)(a).to_numpy(), ref(a.to_numpy()))


def test_abs_of_complex_gives_the_real_dtype(eng: tfr.CpuEngine) -> None:
    out = eng.abs(t_([3 + 4j, -1j]))
    assert out.dtype is D.F64
    assert out.to_numpy().tolist() == [5.0, 1.0]


def test_a_python_scalar_takes_the_tensors_dtype(eng: tfr.CpuEngine) -> None:
    out = eng.mul(t_([1.5, 2.0], np.float32), 2.0)
    assert out.dtype is D.F32
    assert out.to_numpy().tolist() == [3.0, 4.0]


def test_an_int_scalar_works_with_a_float_tensor(eng: tfr.CpuEngine) -> None:
    assert eng.add(t_([0.5]), 1).to_numpy().tolist() == [1.5]


def test_the_scalar_may_come_first(eng: tfr.CpuEngine) -> None:
    assert eng.sub(10, t_([1, 2], np.int64)).to_numpy().tolist() == [9, 8]


def test_a_float_scalar_with_an_integer_tensor_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.add(t_([1, 2], np.int32), 0.5)
    assert err.value.kind == "SCALAR_DTYPE"
    assert eng.buffer_pool_cache_stats().misses == 0


def test_a_complex_scalar_with_a_real_tensor_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="complex scalar"):
        eng.mul(t_([1.0]), 1j)


def test_an_integer_scalar_out_of_range_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.add(t_([1], np.int32), 2**40)
    assert err.value.kind == "SCALAR_OUT_OF_RANGE"


def test_a_finite_scalar_overflowing_float32_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="out of range"):
        eng.add(t_([1.0], np.float32), 1e300)


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.complex128])
def test_a_huge_integer_scalar_is_refused_as_out_of_range(eng: tfr.CpuEngine, dtype: Any) -> None:
    # 10**5000 has more digits than Python will turn into a string.
    with pytest.raises(tfr.ValidationError) as err:
        eng.add(t_([1], dtype), -(10**5000))
    assert err.value.kind == "SCALAR_OUT_OF_RANGE"
    assert "digits" in str(err.value)


def test_two_scalars_are_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="at least one operand must be a tensor"):
        eng.add(1, 2)


def test_unequal_shapes_are_refused_with_a_broadcast_hint(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="broadcast_in_dim") as err:
        eng.add(t_([1.0, 2.0]), t_([1.0, 2.0, 3.0]))
    assert err.value.kind == "SHAPE_MISMATCH"


def test_unequal_dtypes_are_refused_without_promotion(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.add(t_([1.0]), t_([1.0], np.float32))
    assert err.value.kind == "DTYPE_MISMATCH"
    assert err.value.op == "CpuEngine.add"


def test_arithmetic_on_bool_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.add(t_([True]), t_([False]))
    assert err.value.kind == "UNSUPPORTED_DTYPE"


def test_math_functions_refuse_integers_with_a_convert_hint(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="convert"):
        eng.exp(t_([1, 2], np.int64))


def test_maximum_refuses_complex(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="no order"):
        eng.maximum(t_([1j]), t_([2j]))


def test_integer_div_is_floor_division(eng: tfr.CpuEngine) -> None:
    out = eng.div(t_([7, -7, 6], np.int64), t_([2, 2, -4], np.int64))
    assert out.dtype is D.I64
    assert out.to_numpy().tolist() == [3, -4, -2]


def test_integer_division_by_zero_is_a_typed_error(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.div(t_([1, 2], np.int32), t_([1, 0], np.int32))
    assert err.value.kind == "DIVISION_BY_ZERO"


def test_integer_division_by_a_zero_scalar_is_a_typed_error(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="division by zero"):
        eng.div(t_([1, 2], np.int32), 0)


def test_float_division_by_zero_follows_ieee(eng: tfr.CpuEngine) -> None:
    with np.errstate(divide="ignore"):
        out = eng.div(t_([1.0, -1.0]), t_([0.0, 0.0]))
    assert out.to_numpy().tolist() == [np.inf, -np.inf]


def test_integer_pow_with_a_negative_exponent_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.pow(t_([2, 3], np.int64), t_([1, -1], np.int64))
    assert err.value.kind == "NEGATIVE_INTEGER_POWER"


def test_where_selects_elementwise(eng: tfr.CpuEngine) -> None:
    cond = t_([True, False, True])
    out = eng.where(cond, t_([1.0, 2.0, 3.0]), t_([-1.0, -2.0, -3.0]))
    assert out.to_numpy().tolist() == [1.0, -2.0, 3.0]


def test_where_takes_a_scalar_branch(eng: tfr.CpuEngine) -> None:
    out = eng.where(t_([True, False]), t_([5, 6], np.int32), 0)
    assert out.dtype is D.I32 and out.to_numpy().tolist() == [5, 0]


def test_where_needs_a_bool_condition(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="BOOL"):
        eng.where(t_([1, 0]), t_([1.0, 2.0]), t_([3.0, 4.0]))


def test_where_refuses_two_scalar_branches(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="both be scalars"):
        eng.where(t_([True]), 1.0, 2.0)


def test_views_with_any_strides_are_accepted(
    eng: tfr.CpuEngine, rand: Callable[..., Tensor]
) -> None:
    a = rand((6, 5))
    v = a.as_view().slice_view((slice(None, None, -2), slice(1, None, 2))).transpose_view((1, 0))
    w = rand((2, 3), 7)
    out = eng.add(v, w)
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out.to_numpy(), v.to_numpy() + w.to_numpy())


def test_the_output_is_compact_column_major(
    eng: tfr.CpuEngine, rand: Callable[..., Tensor]
) -> None:
    v = rand((3, 4)).as_view().transpose_view((1, 0))
    out = eng.neg(v)
    assert out.shape == (4, 3) and out.strides == (1, 4)
    np.testing.assert_array_equal(out.host_data(), (-v.to_numpy()).reshape(-1, order="F"))


def test_out_overwrites_an_owner_and_returns_it(eng: tfr.CpuEngine) -> None:
    out = t_([0.0, 0.0])
    got = eng.add(t_([1.0, 2.0]), t_([3.0, 4.0]), out=out)
    assert got is out and out.to_numpy().tolist() == [4.0, 6.0]
    assert eng.buffer_pool_cache_stats().misses == 0


def test_out_may_be_one_of_the_inputs_for_elementwise_ops(eng: tfr.CpuEngine) -> None:
    acc = t_([1.0, 2.0])
    eng.add(acc, t_([10.0, 10.0]), out=acc)
    eng.mul(acc, 2.0, out=acc)
    assert acc.to_numpy().tolist() == [22.0, 24.0]


def test_out_with_the_wrong_shape_is_refused_and_left_unchanged(eng: tfr.CpuEngine) -> None:
    out = t_([7.0, 7.0, 7.0])
    with pytest.raises(tfr.ValidationError) as err:
        eng.add(t_([1.0, 2.0]), t_([3.0, 4.0]), out=out)
    assert err.value.kind == "OUT_MISMATCH"
    assert out.to_numpy().tolist() == [7.0, 7.0, 7.0]


def test_out_with_the_wrong_dtype_is_refused(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="dtype"):
        eng.less(t_([1.0]), t_([2.0]), out=t_([0.0]))


def test_out_must_be_a_tensor(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.add(t_([1.0]), t_([1.0]), out=np.zeros(1))  # type: ignore[arg-type]
    assert err.value.kind == "INVALID_OUT"


def test_out_with_a_live_alias_is_a_borrow_error(eng: tfr.CpuEngine) -> None:
    out = t_([0.0])
    alias = out.host_data()
    with pytest.raises(tfr.BorrowError):
        eng.add(t_([1.0]), t_([1.0]), out=out)
    assert alias.tolist() == [0.0]


def test_out_array_is_frozen_after_the_write(eng: tfr.CpuEngine) -> None:
    out = t_([0.0, 0.0])
    eng.add(t_([1.0, 2.0]), t_([3.0, 4.0]), out=out)
    with out.map_write() as w:  # no borrow was left behind
        w.array[0] = 9.0
    assert out.to_numpy().tolist() == [9.0, 6.0]


def test_numpy_arrays_are_not_operands(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="from_numpy") as err:
        eng.add(np.ones(2), t_([1.0, 1.0]))
    assert err.value.kind == "INVALID_OPERAND"


def test_a_moved_tensor_is_refused(eng: tfr.CpuEngine) -> None:
    a = t_([1.0])
    a.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        eng.add(a, t_([1.0]))


def test_an_input_under_an_exclusive_borrow_is_refused(eng: tfr.CpuEngine) -> None:
    a = t_([1.0])
    with a.map_write(), pytest.raises(tfr.BorrowError):
        eng.add(a, t_([1.0]))


def test_a_backend_buffer_is_refused_with_a_download_hint(
    eng: tfr.CpuEngine, fake_domain: Any
) -> None:
    d = fake_domain.tensor([1.0, 2.0])
    with pytest.raises(tfr.RuntimeStateError) as err:
        eng.add(d, t_([1.0, 1.0]))
    assert str(err.value) == (
        "CpuEngine.add: CPU backend received backend buffer; download to host before CPU "
        "execution (t.download())"
    )
    np.testing.assert_array_equal(eng.add(d.download(), t_([1.0, 1.0])).to_numpy(), [2.0, 3.0])


def test_zero_size_tensors_work(eng: tfr.CpuEngine) -> None:
    e = tfr.from_numpy(np.empty((0, 3), order="F"))
    assert eng.add(e, e).shape == (0, 3)
    assert eng.buffer_pool_cache_stats().misses == 0


def test_rank0_tensors_work(eng: tfr.CpuEngine) -> None:
    s = tfr.Tensor.from_vec_col_major((), np.array([3.0]))
    out = eng.mul(s, s)
    assert out.shape == () and out.host_data().tolist() == [9.0]


def test_group_backed_host_tensors_are_read_in_place(eng: tfr.CpuEngine) -> None:
    promoted = t_([1.0, 2.0]).promote()
    assert promoted.is_group_backed
    assert eng.add(promoted, promoted).to_numpy().tolist() == [2.0, 4.0]
    assert eng.matmul(
        tfr.from_numpy(np.ones((1, 2), order="F")), eng.reshape(promoted, (2, 1))
    ).to_numpy().tolist() == [[3.0]]
