"""What every part of the fused evaluator shares: the operation's name in its
errors, the array and shape aliases, and the error for a part it cannot fuse."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ...errors import ValidationError

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

OP = "CpuEngine.evaluate"


def _unsupported(node: ast.AST, why: str) -> ValidationError:
    part = ast.unparse(node)
    return ValidationError(
        OP,
        f"cannot fuse {part!r}: {why}",
        kind="UNSUPPORTED_EXPRESSION",
        part=part,
    )


def _not_a_string(expr: object) -> ValidationError:
    """The error for an expression that is not a ``str`` (kind SYNTAX; its
    ``expression`` is None: the error keeps no reference to the caller's object)."""
    return ValidationError(
        OP,
        f"the expression must be a string, got {type(expr).__name__}",
        kind="SYNTAX",
        expression=None,
    )
