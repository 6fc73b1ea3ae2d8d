"""Repeated contractions reuse their validated plan (no axis normalisation, no planning)."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import contraction, gemm
from tenferro.namespace import _contraction


def test_a_repeated_dot_general_does_not_plan_again(monkeypatch: pytest.MonkeyPatch) -> None:
    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.ones((3, 4), order="F"))
    b = tfr.from_numpy(np.ones((4, 5), order="F"))
    eng.dot_general(a, b, contracting=((1,), (0,)))
    calls: list[object] = []
    monkeypatch.setattr(
        contraction, "make_dot_plan", lambda *a: calls.append(a) or gemm.make_dot_plan(*a)
    )
    got = eng.dot_general(a, b, contracting=((1,), (0,)))
    assert not calls
    np.testing.assert_allclose(got.to_numpy(), np.full((3, 5), 4.0))


def test_a_bool_axis_is_refused_even_after_the_int_axis_was_planned() -> None:
    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.ones((3, 4), order="F"))
    b = tfr.from_numpy(np.ones((4, 4), order="F"))
    eng.dot_general(a, b, contracting=((1,), (1,)))
    with pytest.raises(tfr.ValidationError):
        eng.dot_general(a, b, contracting=((True,), (1,)))


def test_a_repeated_tensordot_does_not_validate_its_axes_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = tfr.asarray(np.ones((3, 4, 5)))
    b = tfr.asarray(np.ones((5, 4, 2)))
    tfr.tensordot(a, b, axes=([1, 2], [1, 0]))
    calls: list[object] = []
    real = _contraction._tensordot_axes
    monkeypatch.setattr(
        _contraction, "_tensordot_axes", lambda *args: calls.append(args) or real(*args)
    )
    got = tfr.tensordot(a, b, axes=([1, 2], [1, 0]))
    assert not calls
    np.testing.assert_allclose(np.asarray(got), np.full((3, 2), 20.0))
    with pytest.raises(tfr.ValidationError):
        tfr.tensordot(a, b, axes=([1, 2], [1, 1]))  # still validated when new
