"""The host facts of the seed chapter, measured there on tenferro-rs 0.8.0."""

from __future__ import annotations

import numpy as np

import tenferro as tfr


def seed_tensor() -> tuple[tfr.Tensor, np.ndarray]:
    data = np.array([1.0, 2.0, 3.0, 4.0])
    return tfr.Tensor.from_vec_col_major((2, 2), data), data


def test_from_vec_col_major_keeps_vec_buffer() -> None:
    t, data = seed_tensor()
    assert t.host_data().ctypes.data == data.ctypes.data


def test_host_tensor_has_no_allocation_identity_and_the_default_placement() -> None:
    t, _ = seed_tensor()
    assert (t.allocation_domain, t.allocation_id) == (None, None)
    assert t.placement == tfr.Placement(
        memory_kind=tfr.MemoryKind.UNPINNED_HOST, device=None, cpu_affinity=None
    )


def test_as_view_shares_buffer() -> None:
    t, data = seed_tensor()
    assert t.as_view().to_numpy().ctypes.data == data.ctypes.data


def test_duplicate_new_buffer() -> None:
    t, data = seed_tensor()
    assert t.duplicate().host_data().ctypes.data != data.ctypes.data


def test_map_read_on_a_host_tensor_reads_the_values() -> None:
    t, _ = seed_tensor()
    with t.map_read() as g:
        assert g.array.reshape(-1, order="F").tolist() == [1.0, 2.0, 3.0, 4.0]


def test_with_host_read_sum_is_10() -> None:
    t, _ = seed_tensor()
    assert t.with_host_read(lambda s: s.sum()) == 10.0


def test_into_vec_col_major_shape_2_2_same_vec_buffer() -> None:
    t, data = seed_tensor()
    shape, vec = t.into_vec_col_major()
    assert (list(shape), vec is data, vec.ctypes.data == data.ctypes.data) == ([2, 2], True, True)


def test_multi_slice_columns_split_rows_none_and_column_writes_land() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 2), np.zeros(4))
    with t.as_view_mut() as mv:
        assert mv.try_multi_slice_mut((0, slice(None)), (1, slice(None))) is None
        halves = mv.try_multi_slice_mut((slice(None), 0), (slice(None), 1))
        assert halves is not None
        halves[0].set((1,), 1.0)
        halves[1].set((0,), 2.0)
    assert t.host_data().tolist() == [0.0, 1.0, 2.0, 0.0]
