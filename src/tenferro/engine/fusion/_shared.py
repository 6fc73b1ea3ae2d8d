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
