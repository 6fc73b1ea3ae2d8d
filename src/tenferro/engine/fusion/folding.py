"""Constant folding: the value of an operator or function over two literals, and
the bound that refuses an integer power too large to fold."""

from __future__ import annotations

import ast
import math
from typing import Any

from ...errors import ValidationError
from ._shared import OP

#: Integer constant powers are folded up to this many bits. Every dtype holds
#: less (F64 reaches about 2**1024); the bound keeps `7 ** 7 ** 9` from running
#: for a minute before it is refused.
MAX_FOLD_BITS = 4096


def _check_power(node: ast.AST, a: Any, b: Any) -> None:
    """Refuse folding an integer power whose result would exceed `MAX_FOLD_BITS`."""
    if not (isinstance(a, int) and isinstance(b, int)) or b <= 0 or -1 <= a <= 1:
        return  # floats overflow on their own; 0, 1, -1 and negative powers stay small
    try:
        bits = b * math.log2(abs(a))
    except OverflowError:  # b beyond any float: far past the bound
        bits = math.inf
    if bits > MAX_FOLD_BITS:
        part = ast.unparse(node)
        raise ValidationError(
            OP,
            f"cannot fuse {part!r}: the constant would have {_show_bits(bits)} bits, beyond "
            f"any dtype (integer powers are folded up to {MAX_FOLD_BITS} bits); use a "
            "smaller constant",
            kind="SCALAR_OUT_OF_RANGE",
            scalar=part,
            dtype=None,  # beyond every dtype
        )


def _show_bits(bits: float) -> str:
    return f"about {bits:.3g}" if math.isfinite(bits) else f"more than {MAX_FOLD_BITS}"


def _fold(sym: str, a: Any, b: Any) -> Any:
    if sym == "+":
        return a + b
    if sym == "-":
        return a - b
    if sym == "*":
        return a * b
    if sym == "/":
        return a / b
    if sym == "**":
        return a**b
    if sym == "maximum":
        return max(a, b)
    if sym == "minimum":
        return min(a, b)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[sym]
