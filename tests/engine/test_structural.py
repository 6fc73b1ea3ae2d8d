"""Structural ops, named copies (to_contiguous, convert, cast) and the allocation domain."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.tensor import Tensor

R = Callable[..., Tensor]
D = tfr.DType


def t_(values: Any, dtype: Any = None) -> Tensor:
    return tfr.from_numpy(np.asfortranarray(np.array(values, dtype=dtype)))


def test_transpose_permutes_axes(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((2, 3, 4))
    out = eng.transpose(a, (2, 0, 1))
    assert out.shape == (4, 2, 3)
    np.testing.assert_array_equal(out.to_numpy(), a.to_numpy().transpose(2, 0, 1))


def test_transpose_refuses_a_non_permutation(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError):
        eng.transpose(rand((2, 3)), (0, 0))


def test_reshape_keeps_column_major_order(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((2, 6))
    out = eng.reshape(a, (3, 4))
    np.testing.assert_array_equal(out.to_numpy(), a.to_numpy().reshape((3, 4), order="F"))
    np.testing.assert_array_equal(out.host_data(), a.host_data())


def test_reshape_infers_one_minus_one(eng: tfr.CpuEngine, rand: R) -> None:
    assert eng.reshape(rand((2, 6)), (-1, 3)).shape == (4, 3)


def test_reshape_of_a_strided_view(eng: tfr.CpuEngine, rand: R) -> None:
    v = rand((4, 6)).as_view().transpose_view((1, 0))
    out = eng.reshape(v, (24,))
    np.testing.assert_array_equal(out.to_numpy(), v.to_numpy().reshape(-1, order="F"))


@pytest.mark.parametrize("shape", [(5,), (-1, -1), (-1, 5), ("a",)])
def test_reshape_refuses_wrong_sizes(eng: tfr.CpuEngine, rand: R, shape: Any) -> None:
    with pytest.raises(tfr.ValidationError):
        eng.reshape(rand((2, 6)), shape)


def test_broadcast_in_dim_repeats_along_new_and_unit_axes(eng: tfr.CpuEngine) -> None:
    v = t_([1.0, 2.0])
    out = eng.broadcast_in_dim(v, (2, 3), (0,))
    assert out.to_numpy().tolist() == [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    row = t_([[1.0, 2.0, 3.0]])  # 1 x 3
    out = eng.broadcast_in_dim(row, (2, 3), (0, 1))
    assert out.to_numpy().tolist() == [[1.0, 2.0, 3.0]] * 2


def test_broadcast_in_dim_with_unsorted_dims_transposes(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 2))
    out = eng.broadcast_in_dim(a, (2, 4, 3), (2, 0))
    np.testing.assert_array_equal(
        out.to_numpy(), np.broadcast_to(a.to_numpy().T[:, None, :], (2, 4, 3))
    )


@pytest.mark.parametrize(
    ("shape", "dims"), [((3,), (0,)), ((2, 3), (0, 1)), ((2, 3), (2,)), ((2, 3), (0, 0))]
)
def test_broadcast_in_dim_refuses_bad_dims(eng: tfr.CpuEngine, shape: Any, dims: Any) -> None:
    with pytest.raises(tfr.ValidationError):
        eng.broadcast_in_dim(t_([1.0, 2.0]), shape, dims)


@pytest.mark.parametrize("dims", [(False,), (True,), [np.bool_(False)]])
def test_broadcast_in_dim_refuses_bools_as_dims(eng: tfr.CpuEngine, dims: Any) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.broadcast_in_dim(t_([1.0, 2.0]), (2, 3), dims)
    assert err.value.kind == "INVALID_AXES"


def test_concatenate_joins_along_an_axis(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((2, 3), 1), rand((2, 1), 2)
    out = eng.concatenate([a, b.as_view()], axis=1)
    np.testing.assert_array_equal(
        out.to_numpy(), np.concatenate([a.to_numpy(), b.to_numpy()], axis=1)
    )


def test_concatenate_refuses_mismatched_pieces(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.concatenate([rand((2, 3)), rand((3, 3))], axis=1)
    assert err.value.kind == "SHAPE_MISMATCH"
    with pytest.raises(tfr.ValidationError):
        eng.concatenate([], axis=0)


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_and_triu_match_numpy(eng: tfr.CpuEngine, rand: R, k: int) -> None:
    a = rand((4, 5))
    np.testing.assert_array_equal(eng.tril(a, k).to_numpy(), np.tril(a.to_numpy(), k))
    np.testing.assert_array_equal(eng.triu(a, k).to_numpy(), np.triu(a.to_numpy(), k))


def test_tril_batches_over_trailing_axes(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 3, 2))
    out = eng.tril(a).to_numpy()
    for i in range(2):
        np.testing.assert_array_equal(out[:, :, i], np.tril(a.to_numpy()[:, :, i]))


def test_tril_keeps_nan_in_the_kept_triangle(eng: tfr.CpuEngine) -> None:
    a = t_([[np.nan, np.nan], [np.nan, np.nan]])
    out = eng.tril(a).to_numpy()
    assert np.isnan(out[1, 0]) and out[0, 1] == 0.0


def test_extract_diagonal_puts_the_diagonal_first(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 4, 2))
    out = eng.extract_diagonal(a)
    assert out.shape == (3, 2)
    np.testing.assert_array_equal(out.to_numpy(), np.diagonal(a.to_numpy(), 0, 0, 1).T)
    np.testing.assert_array_equal(
        eng.extract_diagonal(a, offset=1).to_numpy(), np.diagonal(a.to_numpy(), 1, 0, 1).T
    )


def test_structural_ops_are_computations_not_copies(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 3))
    with tfr.forbid_copies():
        eng.transpose(a, (1, 0))
        eng.reshape(a, (9,))
        eng.broadcast_in_dim(a, (3, 3, 2), (0, 1))
        eng.concatenate([a, a])
        eng.tril(a)
        eng.extract_diagonal(a)
        eng.add(a, a)
        eng.matmul(a, a)
        eng.reduce_sum(a)


@pytest.mark.parametrize("name", ["to_contiguous", "convert", "cast"])
def test_named_copies_are_counted_and_forbidden_in_forbid_copies(
    eng: tfr.CpuEngine, rand: R, name: str
) -> None:
    a = rand((3, 3))
    args = () if name == "to_contiguous" else (D.F64,)
    before = tfr.copy_stats()
    getattr(eng, name)(a, *args)
    after = tfr.copy_stats()
    assert after.copies - before.copies == 1 and after.bytes - before.bytes == 72
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        getattr(eng, name)(a, *args)
    assert eng.buffer_pool_stats().buffers == 1  # the forbidden copy took no buffer


def test_a_refused_convert_is_not_counted_as_a_copy(eng: tfr.CpuEngine) -> None:
    t = t_([1.0, 2.5])
    before = tfr.copy_stats()
    with pytest.raises(tfr.ValidationError, match="cannot be represented"):
        eng.convert(t, D.I64)
    assert tfr.copy_stats() == before


def test_a_copy_refused_by_its_out_tensor_is_not_counted(eng: tfr.CpuEngine) -> None:
    t = t_([1.0, 2.0])
    out = t_([0.0, 0.0], np.float32)
    alias = out.host_data()
    before = tfr.copy_stats()
    with pytest.raises(tfr.BorrowError):
        eng.cast(t, D.F32, out=out)
    with pytest.raises(tfr.BorrowError):
        eng.to_contiguous(t_([1.0, 2.0], np.float32), out=out)
    assert tfr.copy_stats() == before
    del alias


def test_to_contiguous_of_a_strided_view(eng: tfr.CpuEngine, rand: R) -> None:
    v = rand((4, 6)).as_view().slice_view((slice(1, None, 2), slice(None, None, -1)))
    out = eng.to_contiguous(v)
    assert out.strides == (1, 2)
    np.testing.assert_array_equal(out.to_numpy(), v.to_numpy())


def test_convert_widens_exactly(eng: tfr.CpuEngine) -> None:
    out = eng.convert(t_([1, -2], np.int32), D.F32)
    assert out.dtype is D.F32 and out.to_numpy().tolist() == [1.0, -2.0]


@pytest.mark.parametrize(
    ("values", "src", "target", "bad_index"),
    [
        ([1.0, 2.5], np.float64, D.I32, (1,)),
        ([1.0, np.nan], np.float64, D.I64, (1,)),
        ([1.0, np.inf], np.float64, D.I32, (1,)),
        ([3e9, 1.0], np.float64, D.I32, (0,)),
        ([2**31, 0], np.int64, D.I32, (0,)),
        ([2**53 + 1, 0], np.int64, D.F64, (0,)),
        ([2**63 - 1, 0], np.int64, D.F64, (0,)),
        ([16777217, 0], np.int32, D.F32, (0,)),
        ([1 + 0j, 1 + 1j], np.complex128, D.F64, (1,)),
        ([0, 2], np.int64, D.BOOL, (1,)),
        ([1e300, 1.0], np.float64, D.F32, (0,)),
        ([1e300 + 0j], np.complex128, D.C32, (0,)),
    ],
)
def test_convert_refuses_a_value_it_would_change(
    eng: tfr.CpuEngine, values: list, src: Any, target: tfr.DType, bad_index: tuple
) -> None:
    t = t_(values, src)
    with pytest.raises(tfr.ValidationError) as err:
        eng.convert(t, target)
    assert err.value.kind == "LOSSY_CONVERSION"
    assert err.value.index == bad_index
    assert str(bad_index) in str(err.value)


def test_convert_allows_rounding_to_a_narrower_float(eng: tfr.CpuEngine) -> None:
    out = eng.convert(t_([0.1, np.nan, -np.inf]), D.F32)
    got = out.to_numpy()
    assert got[0] == np.float32(0.1) and np.isnan(got[1]) and got[2] == -np.inf


def test_convert_allows_large_exact_integers_as_floats(eng: tfr.CpuEngine) -> None:
    out = eng.convert(t_([2**60, -(2**62)], np.int64), D.F64)
    assert out.to_numpy().tolist() == [2.0**60, -(2.0**62)]


def test_convert_names_the_first_bad_element_in_column_major_order(eng: tfr.CpuEngine) -> None:
    t = t_([[1.0, 0.5], [0.25, 2.0]])  # column-major: 1.0, 0.25, 0.5, 2.0
    with pytest.raises(tfr.ValidationError) as err:
        eng.convert(t, D.I64)
    assert err.value.index == (1, 0) and err.value.value == 0.25


def test_a_refused_convert_into_out_leaves_out_unchanged(eng: tfr.CpuEngine) -> None:
    out = t_([7, 7], np.int64)
    with pytest.raises(tfr.ValidationError):
        eng.convert(t_([1.0, 1.5]), D.I64, out=out)
    assert out.to_numpy().tolist() == [7, 7]
    eng.convert(t_([1.0, 3.0]), D.I64, out=out)
    assert out.to_numpy().tolist() == [1, 3]


def test_cast_is_explicitly_lossy(eng: tfr.CpuEngine) -> None:
    assert eng.cast(t_([1.9, -1.9]), D.I32).to_numpy().tolist() == [1, -1]
    assert eng.cast(t_([1 + 5j]), D.F64).to_numpy().tolist() == [1.0]


def test_convert_accepts_numpy_dtypes(eng: tfr.CpuEngine) -> None:
    assert eng.convert(t_([1, 2], np.int32), np.float64).dtype is D.F64


def test_convert_refuses_unknown_dtypes(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.convert(t_([1.0]), np.float16)
    assert err.value.kind == "UNSUPPORTED_DTYPE"


# -- allocation domains ---------------------------------------------------------------------
def test_a_domain_engine_copies_a_domain_tensor_within_the_domain(fake_domain: Any) -> None:
    eng = tfr.CpuEngine(allocation_domain=fake_domain)
    src = fake_domain.tensor([1.0, 2.0, 3.0, 4.0], (2, 2))
    out = eng.to_contiguous(src)
    assert out.allocation_domain == fake_domain.id()
    assert out.allocation_id is not None and out.allocation_id != src.allocation_id
    assert out.placement == src.placement
    with out.map_read() as r:
        assert r.array.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    with pytest.raises(tfr.HostAccessError):
        out.host_data()


def test_a_domain_copy_is_a_named_copy(fake_domain: Any) -> None:
    eng = tfr.CpuEngine(allocation_domain=fake_domain)
    src = fake_domain.tensor([1.0, 2.0])
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        eng.to_contiguous(src)


def test_an_engine_without_the_domain_refuses_to_copy_its_tensors(
    eng: tfr.CpuEngine, fake_domain: Any
) -> None:
    src = fake_domain.tensor([1.0, 2.0])
    with pytest.raises(tfr.RuntimeStateError) as err:
        eng.to_contiguous(src)
    assert str(err.value).startswith(
        "CpuEngine.to_contiguous: CPU backend requires source host placement, got MANAGED"
    )


def test_an_engine_with_another_domain_refuses_too(fake_domain: Any) -> None:
    other = type(fake_domain)()
    eng = tfr.CpuEngine(allocation_domain=other)
    with pytest.raises(tfr.RuntimeStateError, match="source host placement"):
        eng.to_contiguous(fake_domain.tensor([1.0]))


def test_a_domain_engine_still_refuses_domain_inputs_to_other_ops(fake_domain: Any) -> None:
    eng = tfr.CpuEngine(allocation_domain=fake_domain)
    src = fake_domain.tensor([1.0, 2.0])
    with pytest.raises(tfr.RuntimeStateError, match="CPU backend received backend buffer"):
        eng.add(src, src)
    with pytest.raises(tfr.RuntimeStateError, match="download"):
        eng.transpose(src, (0,))
