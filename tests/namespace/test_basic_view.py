"""The compiled basic-index path (`engine._core.basic_view`, issue 20): the view it
gives is `_indexing._select`'s descriptor over the same buffer, and every key that
`_select` refuses is left to it (None)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.interface import basic_view
from tenferro.namespace import _indexing

_ENTRY = st.one_of(
    st.integers(-5, 5),
    st.builds(
        slice,
        st.none() | st.integers(-6, 6),
        st.none() | st.integers(-6, 6),
        st.none() | st.integers(-3, 3),
    ),
    st.none(),
    st.just(Ellipsis),
)


@settings(max_examples=300, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    order=st.sampled_from(["F", "C"]),
    key=st.lists(_ENTRY, max_size=4).map(tuple),
)
def test_a_basic_key_selects_what_the_python_selection_selects(
    shape: list[int], order: str, key: tuple[Any, ...]
) -> None:
    n = np.array(np.arange(float(np.prod(shape))).reshape(shape), order=order)
    x = tfr.asarray(n)
    desc = _indexing.descriptor(x)
    try:
        want: Any = _indexing._select(key, *desc, "t")
    except tfr.TenferroError:
        want = None
    got = basic_view(x, key)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert (got.shape, got.strides, got._offset) == want
    np.testing.assert_array_equal(np.asarray(got), n[key])


def test_a_huge_int_index_is_left_to_the_typed_refusal() -> None:
    x = tfr.asarray(np.ones((3, 4)))
    assert basic_view(x, (2**70, 0)) is None
