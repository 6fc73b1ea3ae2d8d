"""The numexpr translation: a type-checked expression as numexpr source, compiled
into a `NumExpr` object for ``backend="numexpr"`` (F64 and C64 only; integer
division and complex ``abs`` differ there and are refused)."""

from __future__ import annotations

import ast

import numpy as np

from ...dtype import DType
from ...errors import DTypeError, ValidationError
from ._shared import OP, _unsupported
from .compiler import _BINARY_FUNCS, _BINOPS, _CMPOPS, _Program


def _to_numexpr(node: ast.AST, names: dict[str, str]) -> str:
    """The numexpr source of an already type-checked tree (operands renamed v0, v1...)."""
    if isinstance(node, ast.Name):
        return names[node.id]
    if isinstance(node, ast.Constant):
        return repr(node.value)
    if isinstance(node, ast.UnaryOp):
        return (
            f"({'-' if isinstance(node.op, ast.USub) else '+'}{_to_numexpr(node.operand, names)})"
        )
    if isinstance(node, ast.BinOp):
        sym = _BINOPS[type(node.op)][0]
        return f"({_to_numexpr(node.left, names)} {sym} {_to_numexpr(node.right, names)})"
    if isinstance(node, ast.Compare):
        sym = _CMPOPS[type(node.ops[0])][0]
        return f"({_to_numexpr(node.left, names)} {sym} {_to_numexpr(node.comparators[0], names)})"
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    if node.func.id in _BINARY_FUNCS:
        raise _unsupported(node, "maximum/minimum are not available with backend='numexpr'")
    args = ", ".join(_to_numexpr(a, names) for a in node.args)
    return f"{node.func.id}({args})"


def _compile_numexpr(expr: str, dtypes: dict[str, DType], prog: _Program) -> None:
    import numexpr
    from numexpr.necompiler import getType

    for name, dt in dtypes.items():
        if dt not in (DType.F64, DType.C64):
            raise DTypeError(
                OP,
                f"backend='numexpr' takes F64 and C64 operands, got {name}: {dt.name}; use "
                "the default backend",
                kind="UNSUPPORTED_DTYPE",
                dtype=dt,
            )
    for kind, fn, _, _ in prog.instrs:
        if kind in ("nonzero", "nonneg") or (fn is np.absolute and DType.C64 in dtypes.values()):
            raise ValidationError(
                OP,
                "this expression's semantics differ in numexpr (integer division or complex "
                "abs); use the default backend",
                kind="UNSUPPORTED_EXPRESSION",
                part=expr,
            )
    tree = ast.parse(expr.strip(), mode="eval")
    names = {n: f"v{i}" for i, n in enumerate(prog.inputs)}
    source = _to_numexpr(tree.body, names)
    signature = [(names[n], getType(np.empty(0, dtypes[n].numpy))) for n in prog.inputs]
    prog.nex = numexpr.NumExpr(source, signature)
