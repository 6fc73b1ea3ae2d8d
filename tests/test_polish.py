"""Everyday polish from issue 21: linalg's public names, the REPL hint in alias errors."""

from __future__ import annotations

import pytest

import tenferro as tfr


def test_linalg_lists_only_its_functions_and_result_types() -> None:
    names = dir(tfr.linalg)
    assert "svd" in names and "SVDResult" in names
    for helper in ("np", "Tensor", "TensorView", "default_engine", "compute", "emit", "Any"):
        assert helper not in names


def test_an_alias_refusal_names_the_repl_history_as_a_holder() -> None:
    t = tfr.asarray([1.0, 2.0])
    _held = t[:1]
    with pytest.raises(tfr.BorrowError) as err:
        t[1] = 0.0
    assert "_, __, ___" in str(err.value) and "Out.clear()" in str(err.value)
