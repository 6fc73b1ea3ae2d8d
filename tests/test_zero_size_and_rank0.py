"""Zero-size and rank-0 tensors work everywhere a tensor does."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr

SHAPES = [(), (0,), (3, 0), (0, 2, 0), (1, 1, 1)]


def make(shape: tuple[int, ...]) -> tuple[tfr.Tensor, np.ndarray]:
    data = np.arange(int(np.prod(shape))) + 1.0
    return tfr.Tensor.from_vec_col_major(shape, data), data


@pytest.fixture(params=SHAPES, ids=str)
def made(request: pytest.FixtureRequest) -> tuple[tfr.Tensor, np.ndarray]:
    return make(request.param)


def test_properties(made: tuple[tfr.Tensor, np.ndarray]) -> None:
    t, data = made
    assert (t.size, t.nbytes, len(t.strides)) == (data.size, data.nbytes, t.ndim)


def test_reads(made: tuple[tfr.Tensor, np.ndarray]) -> None:
    t, data = made
    assert t.host_data().tolist() == data.tolist()
    assert t.to_numpy().shape == t.shape
    assert np.asarray(t).shape == t.shape
    with t.map_read() as g:
        assert g.array.shape == t.shape
    assert t.with_host_read(lambda s: s.size) == data.size


def test_writes(made: tuple[tfr.Tensor, np.ndarray]) -> None:
    t, _ = made
    with t.map_write() as w:
        w.array[...] = 5.0
    assert all(v == 5.0 for v in t.host_data())
    with t.as_view_mut() as mv:
        mv.to_numpy()[...] = 6.0
    assert all(v == 6.0 for v in t.host_data())


def test_views(made: tuple[tfr.Tensor, np.ndarray]) -> None:
    t, data = made
    ref = data.reshape(t.shape, order="F")
    v = t.as_view()
    perm = tuple(reversed(range(t.ndim)))
    np.testing.assert_array_equal(v.transpose_view(perm).to_numpy(), ref.transpose(perm))
    np.testing.assert_array_equal(v.slice_view(...).to_numpy(), ref[...])
    assert v.reshape_view((t.size,)).shape == (t.size,)
    assert v.duplicate().shape == t.shape
    assert v.to_col_major().shape == t.shape


def test_copies_and_moves(made: tuple[tfr.Tensor, np.ndarray]) -> None:
    t, data = made
    assert t.duplicate().host_data().tolist() == data.tolist()
    assert t.to_numpy(copy=True).shape == t.shape
    expected_shape = t.shape
    shape, vec = t.into_vec_col_major()
    assert (shape, vec is data) == (expected_shape, True)


def test_from_numpy_round_trip(made: tuple[tfr.Tensor, np.ndarray]) -> None:
    t, _ = made
    arr = np.zeros(t.shape, order="F")
    u = tfr.from_numpy(arr)
    assert u.shape == arr.shape
    assert tfr.from_numpy(np.zeros(t.shape), copy=True).shape == t.shape


def test_rank_0_tensor_holds_one_element() -> None:
    t = tfr.Tensor.from_vec_col_major((), np.array([3.5]))
    assert (t.shape, t.ndim, t.size, t.strides) == ((), 0, 1, ())
    assert t.to_numpy().item() == 3.5
    assert t.as_view().get(()) == 3.5


def test_zero_size_tensor_from_an_empty_list() -> None:
    t = tfr.Tensor.from_vec_col_major((0, 4), [])
    assert (t.shape, t.dtype, t.host_data().size) == ((0, 4), tfr.DType.F64, 0)


def test_rank_0_row_major_import() -> None:
    assert tfr.Tensor.from_vec_row_major((), [2.0]).to_numpy().item() == 2.0


def test_multi_slice_of_an_empty_tensor_splits() -> None:
    t, _ = make((0, 2))
    with t.as_view_mut() as mv:
        assert mv.try_multi_slice_mut((slice(None), 0), (slice(None), 1)) is not None
