"""The backend choice of ``backend="auto"``: numexpr or the tiled executor, by
expression, dtypes, size and threads."""

from __future__ import annotations

import numpy as np

from ...dtype import DType
from ...layout import shape_size
from ._shared import Shape
from .programs import _program

#: ``backend="auto"`` hands arithmetic-only F64/C64 expressions of at least this many
#: elements to numexpr: measured side by side on a quiet machine (2 cores; `python -m
#: tenferro bench --only fusion`), numexpr's blocked, threaded virtual machine beats
#: the tiled executor on chains of + - * / from 4M elements (a 4-op chain at 0.38 of
#: numpy at 4M and 0.29 at 16M, against 0.50 and 0.36), and loses at 1M (0.94 against
#: 0.48 with two threads, 0.87 against 0.79 with one), where its per-call setup and
#: thread hand-off are a visible share; numpy's SIMD exp/log/sqrt make the tiled
#: executor faster for anything with a function call (numexpr without Intel VML).
AUTO_NUMEXPR_MIN = 1 << 22
_ARITHMETIC = frozenset({np.add, np.subtract, np.multiply, np.true_divide, np.negative})
_NUMEXPR_DTYPES = frozenset({DType.F64, DType.C64})


def _choose(expr: str, dtypes: dict[str, DType], shape: Shape | None, threads: int) -> str:
    """The executor ``backend="auto"`` uses for this expression, dtypes and shape.

    ``threads``: what the tiled executor would use. numexpr's thread count is
    process-wide (an engine made with ``threads=1`` sets it for every engine), and
    numexpr on fewer threads than the tiled executor loses to it (a 4-op chain at
    16M: 0.57 of numpy on one numexpr thread, 0.36 tiled on two).
    """
    if shape is None or shape_size(shape) < AUTO_NUMEXPR_MIN:
        return "tiled"
    if not all(dt in _NUMEXPR_DTYPES for dt in dtypes.values()):
        return "tiled"
    import numexpr

    if numexpr.get_num_threads() < threads:
        return "tiled"
    prog = _program(expr, dtypes, "tiled")
    if all(kind == "ufunc" and fn in _ARITHMETIC for kind, fn, _, _ in prog.instrs):
        return "numexpr"
    return "tiled"
