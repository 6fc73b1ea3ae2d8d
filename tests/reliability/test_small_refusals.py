"""The smaller findings of issue 23 (item 6), one test each.

(The failed ``view[key] = v`` whose array stayed writable in the traceback is
tested with the view writes, tests/reliability/test_view_threads.py.)
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr


def _owner() -> Any:
    return tfr.asarray(np.asfortranarray(np.arange(4.0).reshape(2, 2)))


@pytest.mark.parametrize("how", [pickle.dumps, copy.deepcopy, copy.copy])
def test_a_read_guard_cannot_be_pickled_or_copied(how: Callable[[Any], Any]) -> None:
    t = _owner()
    before = tfr.copy_stats()
    with t.map_read() as g, pytest.raises(tfr.NotCopyableError):
        how(g)
    assert tfr.copy_stats() == before


def test_a_read_guard_is_not_copied_even_under_forbid_copies() -> None:
    t = _owner()
    with t.map_read() as g, tfr.forbid_copies(), pytest.raises(tfr.NotCopyableError):
        pickle.dumps(g)


def test_a_write_guard_cannot_be_pickled() -> None:
    t = _owner()
    with t.map_write() as g, pytest.raises(tfr.NotCopyableError):
        pickle.dumps(g)


def test_namespace_einsum_refuses_an_invalid_path_as_the_engine_does() -> None:
    a, b = tfr.ones((2, 3)), tfr.ones((3, 2))
    with pytest.raises(tfr.ValidationError) as eng_err:
        tfr.default_engine().einsum("ij,jk->ik", a, b, optimize=[(0, 5)])
    with pytest.raises(tfr.ValidationError) as ns_err:
        tfr.einsum("ij,jk->ik", a, b, optimize=[(0, 5)])
    assert ns_err.value.kind == eng_err.value.kind == "INVALID_PATH"


def test_from_vec_col_major_of_a_2d_tensor_as_bool_is_a_typed_error() -> None:
    with pytest.raises(tfr.ValidationError):
        tfr.Tensor.from_vec_col_major((1,), tfr.ones((2, 2)), dtype="bool")
