"""The one place where linear algebra touches engine internals.

Every linalg operation runs as ``run_call(engine, op, kernel, operands...)``:

* operands are read through the engine's `Reads` (pinned, no copy, no alias);
* ``call.output(shape, dtype)`` takes an uninitialised pooled buffer for a result
  and returns its F-ordered array; results are handed out, in the order they
  were taken, as tensors that recycle to the pool on drop (`EngineBase._wrap`);
* ``call.scratch(n, dtype)`` takes a pooled scratch buffer (LAPACK's overwritten
  input copy, its workspace) that goes back to the pool when the call ends;
* if the kernel raises, every pooled buffer of the call goes back to the pool
  and no tensor is produced.

Kept in one module so that a refactor of the engine internals (`Reads`,
`EngineBase._output` / ``wrap`` / ``give_back``, the pool's ``acquire`` /
``recycle``) is adapted here alone.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from ...dtype import DType
from ...layout import shape_size
from ...tensor import Tensor
from .._base import EngineBase, Reads

__all__ = ["Array", "LinalgCall", "Shape", "run_call"]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]


class LinalgCall:
    """The pooled outputs and scratch buffers of one linear-algebra call."""

    __slots__ = ("_eng", "_named", "_outs", "_reads", "_scratch", "op")

    def __init__(self, eng: EngineBase, op: str) -> None:
        self._eng = eng
        self.op = op
        self._reads = Reads()
        # (owner, flat, shape, dtype) of each result, in the order they were taken.
        self._outs: list[tuple[Array, Array, Shape, DType]] = []
        self._scratch: list[Array] = []
        # Scratch reused across the matrices of one call, by name (see `reused`).
        self._named: dict[str, Array] = {}

    def operand(self, x: Any) -> tuple[Array, DType, Shape]:
        """``(array, dtype, shape)`` of a tensor or view, borrowed for the call."""
        return self._reads.operand(x, self.op)

    def output(self, shape: Shape, dtype: DType) -> Array:
        """An uninitialised pooled result, as an F-ordered array the kernel must fill."""
        owner, flat = self._eng._output(dtype, shape_size(shape))
        self._outs.append((owner, flat, shape, dtype))
        return flat if len(shape) == 1 else flat.reshape(shape, order="F")

    def scratch(self, n: int, dtype: np.dtype[Any]) -> Array:
        """``n`` uninitialised pooled elements of ``dtype``, given back when the call ends."""
        owner: Array = self._eng._pool.acquire(dtype, n)
        self._scratch.append(owner)
        return owner if owner.shape[0] == n else owner[:n]

    def reused(self, name: str, n: int, dtype: np.dtype[Any]) -> Array:
        """Like `scratch`, but one buffer per ``name`` for the whole call.

        For helpers run once per matrix of a batch: they ask for the same buffer
        each time instead of taking a new one per matrix.
        """
        buf = self._named.get(name)
        if buf is None or buf.shape[0] != n or buf.dtype != dtype:
            buf = self._named[name] = self.scratch(n, dtype)
        return buf

    def matrix_scratch(self, m: int, n: int, dtype: np.dtype[Any]) -> Array:
        """A pooled F-ordered ``m x n`` scratch matrix (LAPACK overwrites it in place)."""
        return self.scratch(m * n, dtype).reshape((m, n), order="F")

    def _results(self) -> tuple[Tensor, ...]:
        eng = self._eng
        outs = self._outs
        self._outs = []
        return tuple(eng._wrap(shape, dt, owner, flat) for owner, flat, shape, dt in outs)

    def _fail(self) -> None:
        eng = self._eng
        outs = self._outs
        self._outs = []
        # INVARIANT: run_call cleared the failed kernel's frames first, so no array
        # over these buffers survives in the traceback (the rule EngineBase._run keeps
        # by dropping instead).
        for owner, *_ in outs:
            eng._pool.recycle(owner, 0)

    def _close(self) -> None:
        pool = self._eng._pool
        scratch = self._scratch
        self._scratch = []
        self._named.clear()
        for owner in scratch:
            pool.recycle(owner, 0)
        self._reads.release()


def run_call(
    eng: EngineBase, op: str, kernel: Callable[..., None], *args: Any, **kwargs: Any
) -> tuple[Tensor, ...]:
    """Run ``kernel(call, *args, **kwargs)`` and hand out the outputs it took.

    On failure the kernel's frames are cleared (so no array over a pooled buffer
    survives in the traceback) and every pooled buffer goes back to the pool
    before the error propagates.
    """
    call = LinalgCall(eng, op)
    try:
        kernel(call, *args, **kwargs)
    except BaseException as exc:
        # INVARIANT: the kernel's frame has finished, so clearing it drops its
        # arrays over our buffers before the pool may hand them out again.
        traceback.clear_frames(exc.__traceback__)
        call._fail()
        call._close()
        raise
    # Scratch goes back only after the kernel's frame (and its arrays) is gone.
    call._close()
    return call._results()
