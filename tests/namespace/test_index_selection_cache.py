"""``x[i]`` with one int on a tensor or shared view is selected by the compiled core
(`engine._core.getitem`): no Python selection runs for it, whatever the descriptor,
and every refusal still happens on every call (the general path raises it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.namespace import _indexing


def _count_select(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = _indexing._select
    monkeypatch.setattr(_indexing, "_select", lambda *a: calls.append(a) or real(*a))
    return calls


@pytest.mark.parametrize("order", ["F", "C"])
def test_a_repeated_int_index_does_not_select_again(
    monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    n = np.array(np.arange(12.0).reshape(3, 4), order=order)
    x = tfr.asarray(n)
    x[1]
    calls = _count_select(monkeypatch)
    np.testing.assert_array_equal(np.asarray(x[1]), n[1])
    assert not calls


def test_an_int_index_of_a_view_at_another_offset_selects_in_the_compiled_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n = np.arange(24.0).reshape(2, 3, 4)
    x = tfr.asarray(n)
    y0, y1 = x[0], x[1]
    y0[1]
    calls = _count_select(monkeypatch)
    np.testing.assert_array_equal(np.asarray(y1[1]), n[1][1])  # y1: another offset
    np.testing.assert_array_equal(np.asarray(y1[-3]), n[1][-3])
    assert not calls


@pytest.mark.parametrize("order", ["F", "C"])
def test_an_out_of_range_int_is_refused_every_time(order: str) -> None:
    x = tfr.asarray(np.array(np.ones((3, 4)), order=order))
    x[2]
    for _ in range(2):
        with pytest.raises(tfr.IndexOutOfRangeError):
            x[3]


def test_a_moved_tensor_is_refused_after_its_selection_was_cached() -> None:
    x: Any = tfr.asarray(np.array(np.ones((3, 4)), order="F"))
    x[1]
    x.into_vec_col_major()
    with pytest.raises(tfr.MovedTensorError):
        x[1]


def test_an_exclusively_borrowed_tensor_is_refused_after_its_selection_was_cached() -> None:
    x: Any = tfr.asarray(np.array(np.ones((3, 4)), order="F"))
    x[1]
    with x.map_write(), pytest.raises(tfr.BorrowError):
        x[1]
