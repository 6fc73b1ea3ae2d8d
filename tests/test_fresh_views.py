"""Fresh C-ordered results hold no read root until something reads them (issue 20).

The compiled elementwise paths give a C-ordered input a C-ordered result view over
a new pooled buffer that nothing else holds, so the view starts without the
buffer's read root (nothing to count). Whatever reads or derives from it takes
the root first, and from then on it is a counted alias like every other view.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.namespace._adapter import write


def _c_pair() -> tuple[Any, Any]:
    a = tfr.asarray(np.arange(12.0).reshape(3, 4))
    b = tfr.asarray(np.ones((3, 4)))
    return a, b


def test_a_fresh_c_ordered_sum_of_views_holds_no_root() -> None:
    a, b = _c_pair()
    r = a + b
    assert type(r) is tfr.TensorView
    assert r._base is None
    assert r._source._root is None
    assert r._source.alias_count() == 0


def test_reading_a_fresh_result_makes_it_a_counted_alias() -> None:
    a, _ = _c_pair()
    r = a * 2.0
    arr = np.asarray(r)
    assert arr.tolist() == (np.arange(12.0).reshape(3, 4) * 2.0).tolist()
    assert r._base is not None
    assert r._source.alias_count() == 2  # the view and the array it handed out
    del arr
    assert r._source.alias_count() == 1


def test_a_view_derived_from_a_fresh_result_is_counted_with_it() -> None:
    a, _ = _c_pair()
    r = tfr.exp(a)
    row = r[1]
    assert r._source.alias_count() == 2
    assert np.asarray(row).tolist() == np.exp(np.arange(4.0, 8.0)).tolist()


def test_writing_a_fresh_result_is_refused_while_a_view_derived_from_it_lives() -> None:
    a, b = _c_pair()
    r = a - b
    row = r[0]

    def fn(arr: Any) -> None:
        arr[...] = 0.0

    with pytest.raises(tfr.BorrowError):
        write(r, "test.write", fn)
    assert np.asarray(row).tolist() == [-1.0, 0.0, 1.0, 2.0]
    del row
    write(r, "test.write", fn)
    assert np.asarray(r).tolist() == [[0.0] * 4] * 3


def test_a_fresh_result_used_as_an_operand_keeps_its_values() -> None:
    a, b = _c_pair()
    r = (a + b) * 3.0 - a
    want = (np.arange(12.0).reshape(3, 4) + 1.0) * 3.0 - np.arange(12.0).reshape(3, 4)
    assert type(r) is tfr.TensorView
    assert np.asarray(r).tolist() == want.tolist()
