"""One failure policy for pooled buffers (docs/internals.md, "Failure policy").

A refused or failed engine call never changes whether its operands' buffers can
be pooled: a buffer goes back to the pool at its death unless an internal array
over its memory (kept by a traceback's frames) is still alive then.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tenferro as tfr


def _pooled_operand(eng: tfr.CpuEngine) -> tfr.Tensor:
    x = tfr.from_numpy(np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    return eng.add(x, x)  # an engine output: its buffer goes back to eng's pool


def test_a_refused_call_leaves_its_operands_buffer_poolable() -> None:
    eng = tfr.CpuEngine()
    a = _pooled_operand(eng)
    other = tfr.from_numpy(np.ones((3, 2), dtype=np.float32, order="F"))
    with pytest.raises(tfr.DTypeError) as err:
        eng.dot_general(a, other, contracting=((1,), (0,)))  # refused inside Reads
    del err
    gc.collect()
    del a
    assert eng.buffer_pool_stats().buffers == 1


def test_a_kept_traceback_keeps_the_operands_buffer_out_of_the_pool() -> None:
    eng = tfr.CpuEngine()
    a = _pooled_operand(eng)
    other = tfr.from_numpy(np.ones((3, 2), dtype=np.float32, order="F"))
    with pytest.raises(tfr.DTypeError) as err:
        eng.dot_general(a, other, contracting=((1,), (0,)))
    # The traceback's frames hold `a`'s internal (writable) array.
    held = [
        v
        for tb in _frames(err.value.__traceback__)
        for v in tb.tb_frame.f_locals.values()
        if isinstance(v, np.ndarray) and np.shares_memory(v, np.asarray(a))
    ]
    assert held
    del a
    assert eng.buffer_pool_stats().buffers == 0  # never handed to another tensor
    del held, err


def test_a_failed_namespace_hot_path_leaves_the_operands_poolable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eng = tfr.CpuEngine()
    with eng:
        a = _pooled_operand(eng)
        zero = a - a
        with pytest.raises(FloatingPointError), np.errstate(invalid="raise"):
            tfr.divide(zero, zero)  # 0/0 raises inside the hot path's ufunc
        gc.collect()
        before = eng.buffer_pool_stats().buffers
        del zero
        assert eng.buffer_pool_stats().buffers == before + 1


def _frames(tb: object) -> list[object]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next  # type: ignore[attr-defined]
    return out
