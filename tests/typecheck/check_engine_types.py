"""Checked by mypy (`make typecheck`): operations have real signatures, not ``Any``.

pytest runs it too (tests/engine/test_engine_surface.py), where `assert_type` is a no-op.
"""

from __future__ import annotations

from typing import assert_type

import numpy as np

import tenferro as tfr


def engine_operations_return_tensors() -> None:
    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.ones((2, 2), order="F"))
    b = tfr.from_numpy(np.ones((2, 2), order="F"))
    assert_type(eng.add(a, b), tfr.Tensor)
    assert_type(eng.sub(a, b), tfr.Tensor)
    assert_type(eng.mul(a, 2.0), tfr.Tensor)
    assert_type(eng.div(a, b, out=None), tfr.Tensor)
    assert_type(eng.pow(a, b), tfr.Tensor)
    assert_type(eng.matmul(a, b), tfr.Tensor)
    assert_type(eng.neg(a), tfr.Tensor)
