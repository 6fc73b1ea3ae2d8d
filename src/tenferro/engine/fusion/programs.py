"""The compiled programs, cached per (expression, operand names and dtypes, backend)
and bounded (`_MAX_PROGRAMS`; the cache is cleared when full)."""

from __future__ import annotations

import threading
from typing import Any

from ...dtype import DType
from ...errors import ValidationError
from ._shared import OP, _not_a_string
from .compiler import _compile, _Program
from .to_numexpr import _compile_numexpr

_cache_lock = threading.Lock()
_programs: dict[tuple[Any, ...], _Program] = {}
_MAX_PROGRAMS = 512


def _program(expr: str, dtypes: dict[str, DType], backend: str) -> _Program:
    if not isinstance(expr, str):
        raise _not_a_string(expr)
    key = (expr, tuple(sorted(dtypes.items(), key=lambda kv: kv[0])), backend)
    prog = _programs.get(key)
    if prog is None:
        try:
            prog = _compile(expr, dtypes)
            if backend == "numexpr":
                _compile_numexpr(expr, dtypes, prog)
        except (RecursionError, MemoryError):
            # The parser and the tree walks recurse once per nesting level.
            raise ValidationError(
                OP,
                f"the expression ({len(expr)} characters) is nested too deeply to compile; "
                "split it into several evaluate calls",
                kind="TOO_DEEP",
            ) from None
        with _cache_lock:
            if len(_programs) >= _MAX_PROGRAMS:
                _programs.clear()
            _programs[key] = prog
    return prog
