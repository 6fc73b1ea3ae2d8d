"""Property tests: random shapes, dtypes and view chains agree with numpy and never copy."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr

DTYPES = list(tfr.DType)


def values(n: int, dtype: tfr.DType) -> np.ndarray:
    """n distinct-ish values of ``dtype`` (distinct except for BOOL)."""
    base = np.arange(n)
    if dtype is tfr.DType.BOOL:
        return (base % 3 == 1).astype(np.bool_)
    if dtype.is_complex:
        return (base + 1j * (base + 1000)).astype(dtype.numpy)
    return base.astype(dtype.numpy)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@st.composite
def tensors(draw: st.DrawFn, shape_strategy: Any = shapes) -> tuple[tfr.Tensor, np.ndarray]:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shape_strategy)
    data = values(int(np.prod(shape, dtype=np.int64)), dtype)
    t = tfr.Tensor.from_vec_col_major(shape, data)
    return t, data.reshape(shape, order="F")


def index_for(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A numpy basic index (ints and slices, any steps) valid for ``shape``."""
    out: list[Any] = []
    for dim in shape[: draw(st.integers(0, len(shape)))]:
        if dim and draw(st.booleans()):
            out.append(draw(st.integers(-dim, dim - 1)))
        else:
            bound = st.none() | st.integers(-dim - 2, dim + 2)
            step = st.none() | st.integers(-3, 3).filter(bool)
            out.append(slice(draw(bound), draw(bound), draw(step)))
    return tuple(out)


def first_address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


@given(st.data(), tensors())
def test_view_chains_agree_with_numpy_and_never_copy(
    data: st.DataObject, made: tuple[tfr.Tensor, np.ndarray]
) -> None:
    t, ref = made
    before = tfr.copy_stats()
    exact = True  # while True, `ref` is a numpy view of the same memory
    with tfr.forbid_copies():
        view = t.as_view()
        for _ in range(data.draw(st.integers(1, 5))):
            choices = ["transpose", "slice"]
            if view.is_contiguous:
                choices.append("reshape")
            if view.dtype.is_complex:
                choices.append("as_real")
            op = data.draw(st.sampled_from(choices))
            if op == "transpose":
                perm = data.draw(st.permutations(range(view.ndim)))
                view, ref = view.transpose_view(perm), ref.transpose(perm)
            elif op == "slice":
                index = index_for(data.draw, view.shape)
                # `...` keeps numpy's result a view even when every axis is an int.
                view, ref = view.slice_view(index), ref[(*index, ...)]
            elif op == "reshape":
                new = data.draw(st.sampled_from([(view.size,), (1, view.size), view.shape[::-1]]))
                if int(np.prod(new, dtype=np.int64)) != view.size:
                    new = (view.size,)
                view, ref = view.reshape_view(new), ref.reshape(new, order="F")
            else:
                view, ref = view.as_real_view(), np.stack([ref.real, ref.imag])
                exact = False
            got = view.to_numpy()
            assert got.shape == ref.shape
            assert got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref)
            assert not got.flags.writeable
            if exact and ref.size:
                assert first_address(got) == first_address(ref)
                assert all(
                    g == r
                    for g, r, d in zip(got.strides, ref.strides, ref.shape, strict=True)
                    if d > 1
                )
            if ref.size:
                where = tuple(data.draw(st.integers(0, d - 1)) for d in ref.shape)
                assert view.get(where) == ref[where].item()
            del got
    assert tfr.copy_stats() == before


@given(st.data(), tensors())
def test_to_col_major_of_any_view_is_numpys_fortran_copy(
    data: st.DataObject, made: tuple[tfr.Tensor, np.ndarray]
) -> None:
    t, ref = made
    index = index_for(data.draw, ref.shape)
    picked = ref[(*index, ...)]
    perm = data.draw(st.permutations(range(picked.ndim)))
    m = t.as_view().slice_view(index).transpose_view(perm).to_col_major()
    expected = np.array(picked.transpose(perm), order="F")
    assert m.shape == expected.shape
    np.testing.assert_array_equal(m.to_numpy(), expected)
    np.testing.assert_array_equal(m.host_data(), expected.reshape(-1, order="F"))


@given(st.sampled_from(DTYPES), shapes)
def test_adopt_and_return_keeps_the_same_buffer_and_values(
    dtype: tfr.DType, shape: tuple[int, ...]
) -> None:
    data = values(int(np.prod(shape, dtype=np.int64)), dtype)
    expected = data.copy()
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        t = tfr.Tensor.from_vec_col_major(shape, data)
        np.testing.assert_array_equal(t.to_numpy(), expected.reshape(shape, order="F"))
        out_shape, vec = t.into_vec_col_major()
    assert (out_shape, vec is data, vec.flags.writeable) == (shape, True, True)
    np.testing.assert_array_equal(vec, expected)
    assert tfr.copy_stats() == before


@given(st.sampled_from(DTYPES), shapes)
def test_row_major_import_agrees_with_numpy_c_order(
    dtype: tfr.DType, shape: tuple[int, ...]
) -> None:
    data = values(int(np.prod(shape, dtype=np.int64)), dtype)
    t = tfr.Tensor.from_vec_row_major(shape, data)
    np.testing.assert_array_equal(t.to_numpy(), data.reshape(shape))


@given(st.data(), tensors(nonempty_shapes))
def test_multi_slice_splits_exactly_when_element_intervals_are_disjoint(
    data: st.DataObject, made: tuple[tfr.Tensor, np.ndarray]
) -> None:
    t, _ = made
    shape = t.shape
    positions = np.arange(t.size).reshape(shape, order="F")
    a = index_for(data.draw, shape)
    b = index_for(data.draw, shape)
    pa, pb = positions[a].ravel(), positions[b].ravel()
    overlap = pa.size and pb.size and not (pa.max() < pb.min() or pb.max() < pa.min())
    expected = t.to_numpy().copy()
    with t.as_view_mut() as mv:
        halves = mv.try_multi_slice_mut(a, b)
        assert (halves is None) == bool(overlap)
        if halves is not None:
            assert not set(pa.tolist()) & set(pb.tolist())
            left, right = halves
            fill_a, fill_b = values(2, t.dtype)[::-1] if t.dtype is tfr.DType.BOOL else (7, 9)
            left.to_numpy()[...] = fill_a
            right.to_numpy()[...] = fill_b
            expected[a] = fill_a
            expected[b] = fill_b
    np.testing.assert_array_equal(t.to_numpy(), expected)


ALIAS_KINDS = [
    lambda t: t.host_data(),
    lambda t: t.host_data()[::2],
    lambda t: t.to_numpy(),
    lambda t: np.asarray(t),
    lambda t: t.map_read(),
    lambda t: t.as_view(),
    lambda t: t.as_view().slice_view(0),
    lambda t: t.as_view().to_numpy(),
]


@given(
    st.lists(st.integers(0, len(ALIAS_KINDS) - 1), max_size=12),
    st.randoms(use_true_random=False),
)
def test_the_alias_count_is_exact_while_aliases_come_and_go(kinds: list[int], rnd: Any) -> None:
    t = tfr.Tensor.from_vec_col_major((3, 2), np.zeros(6))
    held = [ALIAS_KINDS[k](t) for k in kinds]

    def reported() -> int:
        try:
            with t.map_write():
                return 0
        except tfr.BorrowError as err:
            return int(err.aliases)

    while True:
        assert reported() == len(held)
        if not held:
            break
        held.pop(rnd.randrange(len(held)))
