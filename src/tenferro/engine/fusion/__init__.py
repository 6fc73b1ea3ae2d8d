"""Fused elementwise expressions: ``eng.evaluate("exp(a + b) * c", a=..., b=..., c=...)``.

The expression is parsed with `ast`, checked against a whitelist (names,
numeric literals, ``+ - * / **``, unary ``-``/``+``, one comparison, and the
calls ``exp log sin cos tanh sqrt abs maximum minimum where``) and typed with the
same rules as the elementwise operations (equal dtypes, weak literals, integer
``/`` is floor division, comparisons give BOOL). Anything else is a
`ValidationError` (kind UNSUPPORTED_EXPRESSION) naming the part it cannot fuse.

It then runs in one pass over memory into one pooled output. Two executors:

* ``backend="auto"`` (the default) picks per call: numexpr for expressions made
  only of ``+ - * /`` on F64/C64 operands of at least `AUTO_NUMEXPR_MIN`
  elements (where it measured faster) when numexpr has at least the engine's
  threads, the tiled executor otherwise; plain
  operands below `SMALL` elements run on the calling thread through the small
  path's kernel: Python source generated once per expression (`kernel._kernel_source`)
  that checks and pins exactly these operands and calls exactly these ufuncs,
  so a call costs numpy's ufunc dispatches plus a fixed ~2 µs.
* ``backend="tiled"``: the compiled program runs over
  cache-sized tiles (`TILE` elements), each step a numpy ufunc writing into a
  small per-worker register (pooled scratch, reused for every tile) and the
  last step writing the output tile. Intermediates never exist at full size,
  and tiles are shared among the engine's worker threads (numpy releases the
  GIL inside its loops). numpy's SIMD ``exp``/``log``/``sqrt`` kernels are
  several times faster than numexpr's on builds without Intel VML, which is
  why this is the default.
* ``backend="numexpr"``: one numexpr call with ``out=`` the pooled output
  (compiled `NumExpr` objects cached per expression and dtypes). Supported for
  F64 and C64 operands; integer division, complex ``abs`` and
  ``maximum``/``minimum`` differ in numexpr and are refused there.

Compiled programs are cached per (expression, operand names and dtypes), the
small path's kernels per (expression, dtypes), the one in use looked up by the
expression alone (it checks the dtypes itself).

Integer ``/`` and ``**`` check their values tile by tile (a zero divisor, a
negative exponent), after earlier tiles were written; with ``out=`` such a
program runs into a pooled buffer that is copied into ``out`` only on success.

The package holds one concern per module, lowest first:

=================  ==============================================================
``_shared``        the operation's name in errors, aliases, the unsupported-part error
``folding``        constant folding (and the bound on folded integer powers)
``compiler``       the parser and type checker, register allocation: a `_Program`
``to_numexpr``     the numexpr translation (``backend="numexpr"``)
``programs``       the cache of compiled programs
``backend``        the choice ``backend="auto"`` makes
``tiles``          the tiled executor and the integer steps' value checks
``workers``        the thread pool the tiled executor's chunks run on
``kernel``         the small path's code generator and its kernel caches
``ops``            `FusionOps`, the mixin `CpuEngine` gets ``evaluate`` from
=================  ==============================================================

The package keeps the single namespace the former module had: the names below
are re-exported, and rebinding one on the package (a tunable such as
`SMALL_TILE`, a cache, a test's stand-in for a function) rebinds it in every
module of the package that holds it, so the code that reads it sees the new value.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from ..elementwise import _NUMERIC as _NUMERIC  # the operand dtypes of + - * / **
from . import _shared, backend, compiler, folding, kernel, ops, programs, tiles, to_numexpr, workers
from ._shared import (
    OP as OP,
)
from .backend import (
    AUTO_NUMEXPR_MIN as AUTO_NUMEXPR_MIN,
)
from .backend import (
    _choose as _choose,
)
from .compiler import (
    _BINARY_FUNCS as _BINARY_FUNCS,
)
from .compiler import (
    _BINOPS as _BINOPS,
)
from .compiler import (
    _CMPOPS as _CMPOPS,
)
from .compiler import (
    _UNARY_FUNCS as _UNARY_FUNCS,
)
from .compiler import (
    _compile as _compile,
)
from .compiler import (
    _Program as _Program,
)
from .folding import (
    MAX_FOLD_BITS as MAX_FOLD_BITS,
)
from .kernel import (
    SMALL as SMALL,
)
from .kernel import (
    SMALL_SPLIT as SMALL_SPLIT,
)
from .kernel import (
    SMALL_TILE as SMALL_TILE,
)
from .kernel import (
    _built as _built,
)
from .kernel import (
    _kernel_source as _kernel_source,
)
from .kernel import (
    _kernels as _kernels,
)
from .kernel import (
    _small_kernel as _small_kernel,
)
from .ops import (
    FusionOps as FusionOps,
)
from .programs import (
    _program as _program,
)
from .programs import (
    _programs as _programs,
)
from .tiles import (
    TILE as TILE,
)
from .tiles import (
    _run_tiles as _run_tiles,
)
from .workers import (
    _parallel as _parallel,
)

__all__ = ["FusionOps"]

_PARTS = (_shared, folding, compiler, to_numexpr, programs, backend, tiles, workers, kernel, ops)


class _Package(types.ModuleType):
    """This package as a module whose rebound names reach the modules that use them."""

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("__"):
            for part in _PARTS:
                if name in part.__dict__:
                    setattr(part, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
