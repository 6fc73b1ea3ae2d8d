"""The parser and type checker: an expression's `ast` checked against the whitelist,
typed with the elementwise operations' rules, and compiled into a `_Program`
(straight-line steps over inputs, registers and constants, registers allocated
so that a temporary's register is reused once its last reader ran). Constant
parts are folded on the way (`folding`)."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ...dtype import DType
from ...errors import ValidationError
from ..elementwise import _ALL, _FLOATING, _NUMERIC, _REAL, weak_scalar
from ._shared import OP, _not_a_string, _unsupported
from .folding import _check_power, _fold

_NATURAL = {bool: DType.BOOL, int: DType.I64, float: DType.F64, complex: DType.C64}

_UNARY_FUNCS = {
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "abs": np.absolute,
}
_BINARY_FUNCS = {"maximum": np.maximum, "minimum": np.minimum}
_BINOPS: dict[type, tuple[str, Any, frozenset[DType]]] = {
    ast.Add: ("+", np.add, _NUMERIC),
    ast.Sub: ("-", np.subtract, _NUMERIC),
    ast.Mult: ("*", np.multiply, _NUMERIC),
    ast.Div: ("/", np.true_divide, _NUMERIC),
    ast.Pow: ("**", np.power, _NUMERIC),
}
_CMPOPS: dict[type, tuple[str, Any, frozenset[DType]]] = {
    ast.Lt: ("<", np.less, _REAL),
    ast.LtE: ("<=", np.less_equal, _REAL),
    ast.Gt: (">", np.greater, _REAL),
    ast.GtE: (">=", np.greater_equal, _REAL),
    ast.Eq: ("==", np.equal, _ALL),
    ast.NotEq: ("!=", np.not_equal, _ALL),
}


# ---------------------------------------------------------------------- typed IR
class _Const:
    """A literal: weak (takes the other operand's dtype) until it meets a value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Val:
    """A computed value: the instruction index that produces it, and its dtype."""

    __slots__ = ("dtype", "ref")

    def __init__(self, ref: Any, dtype: DType) -> None:
        self.ref = ref  # ("in", name) or ("tmp", index)
        self.dtype = dtype


_Node = _Const | _Val


class _Program:
    """Straight-line code: instructions over inputs, temporaries and constants."""

    __slots__ = (
        "checked",
        "dtype",
        "inputs",
        "instrs",
        "nex",
        "reg_dtypes",
        "slot_code",
    )

    def __init__(self) -> None:
        # (kind, fn, args, dst); args are ("in", name) | ("reg", i) | ("const", v);
        # dst is ("reg", i) or ("out",).
        self.instrs: list[tuple[Any, ...]] = []
        self.inputs: list[str] = []
        self.reg_dtypes: list[np.dtype[Any]] = []
        self.dtype: DType = DType.F64
        # True when a step can refuse the values mid-way (integer division by
        # zero, a negative integer power): such a program never writes out= directly.
        self.checked = False
        self.nex: Any = None
        self.slot_code: tuple[list[tuple[Any, ...]], list[Any]] | None = None


class _Compiler:
    def __init__(self, dtypes: dict[str, DType]) -> None:
        self.dtypes = dtypes
        self.code: list[tuple[Any, ...]] = []  # (kind, fn, args, dtype)
        self.used: list[str] = []

    # -- helpers ------------------------------------------------------------------------
    def emit(self, kind: str, fn: Any, args: list[Any], dtype: DType) -> _Val:
        self.code.append((kind, fn, args, dtype))
        return _Val(("tmp", len(self.code) - 1), dtype)

    def arg(self, node: _Node, dtype: DType) -> Any:
        if isinstance(node, _Val):
            return node.ref
        return ("const", weak_scalar(node.value, dtype, OP))

    def unify(self, where: ast.AST, *nodes: _Node) -> DType | None:
        dtype: DType | None = None
        for n in nodes:
            if isinstance(n, _Val):
                if dtype is not None and n.dtype is not dtype:
                    raise _unsupported(
                        where,
                        f"operands have dtypes {dtype.name} and {n.dtype.name}; there is no "
                        "implicit promotion (convert one operand first)",
                    )
                dtype = n.dtype
        return dtype

    # -- the walk -----------------------------------------------------------------------
    def visit(self, node: ast.AST) -> _Node:
        if isinstance(node, ast.Name):
            if node.id not in self.dtypes:
                raise ValidationError(
                    OP,
                    f"the expression uses it, but the operands are "
                    f"{', '.join(sorted(self.dtypes)) or 'none'}",
                    kind="UNKNOWN_NAME",
                    name=node.id,
                )
            if node.id not in self.used:
                self.used.append(node.id)
            return _Val(("in", node.id), self.dtypes[node.id])
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, (bool, int, float, complex)):
                return _Const(v)
            raise _unsupported(node, "only numeric literals can be fused")
        if isinstance(node, ast.UnaryOp):
            x = self.visit(node.operand)
            if isinstance(node.op, ast.UAdd):
                return x
            if isinstance(node.op, ast.USub):
                if isinstance(x, _Const):
                    return _Const(-x.value)
                self.check(node, x.dtype, _NUMERIC, "negation")
                return self.emit("ufunc", np.negative, [x.ref], x.dtype)
            raise _unsupported(node, f"the operator {type(node.op).__name__} is not supported")
        if isinstance(node, ast.BinOp):
            entry = _BINOPS.get(type(node.op))
            if entry is None:
                raise _unsupported(node, f"the operator {type(node.op).__name__} is not supported")
            sym, ufunc, allowed = entry
            left = self.visit(node.left)
            right = self.visit(node.right)
            return self.binary(node, sym, ufunc, allowed, left, right)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise _unsupported(node, "chained comparisons are not supported")
            cmp_entry = _CMPOPS.get(type(node.ops[0]))
            if cmp_entry is None:
                raise _unsupported(
                    node, f"the comparison {type(node.ops[0]).__name__} is not supported"
                )
            sym, ufunc, allowed = cmp_entry
            left = self.visit(node.left)
            right = self.visit(node.comparators[0])
            return self.binary(node, sym, ufunc, allowed, left, right, DType.BOOL)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise _unsupported(node, f"{type(node).__name__} expressions are not supported")

    def check(self, where: ast.AST, dtype: DType, allowed: frozenset[DType], what: str) -> None:
        if dtype not in allowed:
            raise _unsupported(where, f"{what} does not accept dtype {dtype.name}")

    def binary(
        self,
        node: ast.AST,
        sym: str,
        ufunc: Any,
        allowed: frozenset[DType],
        left: _Node,
        right: _Node,
        result: DType | None = None,
    ) -> _Node:
        if isinstance(left, _Const) and isinstance(right, _Const):
            if sym == "**":
                _check_power(node, left.value, right.value)
            try:
                value = _fold(sym, left.value, right.value)
            except (ArithmeticError, ValueError, TypeError) as exc:
                raise _unsupported(node, f"the constant part fails: {exc}") from None
            return _Const(value)
        dtype = self.unify(node, left, right)
        assert dtype is not None
        self.check(node, dtype, allowed, f"{sym!r}")
        a = self.arg(left, dtype)
        b = self.arg(right, dtype)
        if sym == "/" and dtype in (DType.I32, DType.I64):
            self.code.append(("nonzero", None, [b], dtype))
            ufunc = np.floor_divide
        elif sym == "**" and dtype in (DType.I32, DType.I64):
            self.code.append(("nonneg", None, [b], dtype))
        return self.emit("ufunc", ufunc, [a, b], result or dtype)

    def call(self, node: ast.Call) -> _Node:
        if not isinstance(node.func, ast.Name):
            raise _unsupported(
                node,
                "only the functions exp, log, sin, cos, tanh, sqrt, abs, "
                "maximum, minimum and where can be called",
            )
        name = node.func.id
        if node.keywords:
            raise _unsupported(node, "keyword arguments are not supported")
        args = [self.visit(a) for a in node.args]
        if name in _UNARY_FUNCS:
            if len(args) != 1:
                raise _unsupported(node, f"{name} takes one argument")
            (x,) = args
            if isinstance(x, _Const):
                try:
                    value = _UNARY_FUNCS[name](x.value)
                except (ArithmeticError, ValueError, TypeError) as exc:
                    raise _unsupported(node, f"the constant part fails: {exc}") from None
                # numpy gives a numpy scalar, or a Python int for one beyond int64.
                return _Const(value.item() if isinstance(value, np.generic) else value)
            allowed = _NUMERIC if name == "abs" else _FLOATING
            self.check(node, x.dtype, allowed, name)
            result = x.dtype.real if name == "abs" else x.dtype
            return self.emit("ufunc", _UNARY_FUNCS[name], [x.ref], result)
        if name in _BINARY_FUNCS:
            if len(args) != 2:
                raise _unsupported(node, f"{name} takes two arguments")
            return self.binary(node, name, _BINARY_FUNCS[name], _REAL, args[0], args[1])
        if name == "where":
            if len(args) != 3:
                raise _unsupported(node, "where takes three arguments (cond, x, y)")
            cond, x, y = args
            if not isinstance(cond, _Val) or cond.dtype is not DType.BOOL:
                raise _unsupported(node, "the condition of where must be a BOOL value")
            dtype = self.unify(node, x, y)
            if dtype is None:
                # Two literals: they take their natural dtype (float -> F64, ...).
                assert isinstance(x, _Const) and isinstance(y, _Const)
                dtype = max(
                    (_NATURAL[type(x.value)], _NATURAL[type(y.value)]),
                    key=lambda d: ["BOOL", "I64", "F64", "C64"].index(d.name),
                )
            return self.emit(
                "where",
                None,
                [cond.ref, self.arg(x, dtype), self.arg(y, dtype)],
                dtype,
            )
        raise _unsupported(node, f"the function {name!r} is not supported")


def _compile(expr: str, dtypes: dict[str, DType]) -> _Program:
    if not isinstance(expr, str):
        raise _not_a_string(expr)
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte (Python 3.11)
        why = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise ValidationError(
            OP, f"cannot parse {expr!r}: {why}", kind="SYNTAX", expression=expr
        ) from None
    comp = _Compiler(dtypes)
    root = comp.visit(tree.body)
    if isinstance(root, _Const):
        raise ValidationError(
            OP,
            f"{expr!r} uses no operand, so it has no shape; use at least one tensor",
            kind="NO_OPERAND",
        )
    unused = sorted(set(dtypes) - set(comp.used))
    if unused:
        raise ValidationError(
            OP,
            f"operand(s) {', '.join(unused)} are not used by {expr!r}",
            kind="UNUSED_OPERAND",
            names=unused,
        )
    if root.ref[0] == "in":
        comp.emit("copy", None, [root.ref], root.dtype)
    return _allocate(comp, root.dtype)


def _allocate(comp: _Compiler, dtype: DType) -> _Program:
    """Register allocation: a temporary's register is reused once its last reader ran."""
    prog = _Program()
    prog.dtype = dtype
    prog.inputs = list(comp.used)
    code = comp.code
    last_use: dict[int, int] = {}
    for i, (_, _, args, _) in enumerate(code):
        for a in args:
            if a[0] == "tmp":
                last_use[a[1]] = i
    reg_of: dict[int, int] = {}
    free: dict[np.dtype[Any], list[int]] = {}
    # The last value-producing instruction writes the output.
    result_index = max(i for i, c in enumerate(code) if c[0] not in ("nonzero", "nonneg"))
    for i, (kind, fn, args, dt) in enumerate(code):
        new_args = [("reg", reg_of[a[1]]) if a[0] == "tmp" else a for a in args]
        dying = [reg_of[a[1]] for a in args if a[0] == "tmp" and last_use.get(a[1]) == i]
        if kind == "ufunc":
            # A ufunc may write over an input it reads (elementwise): registers
            # whose last reader is this instruction are free for its result.
            for r in dying:
                free.setdefault(prog.reg_dtypes[r], []).append(r)
            dying = []
        if kind in ("nonzero", "nonneg"):
            prog.instrs.append((kind, fn, new_args, None))
            prog.checked = True
            continue
        if i == result_index:
            dst: tuple[Any, ...] = ("out",)
        else:
            npd = dt.numpy
            pool = free.get(npd)
            if pool:
                r = pool.pop()
            else:
                r = len(prog.reg_dtypes)
                prog.reg_dtypes.append(npd)
            reg_of[i] = r
            dst = ("reg", r)
        prog.instrs.append((kind, fn, new_args, dst))
        # `where` writes its target in two passes: its inputs are freed only now.
        for r in dying:
            free.setdefault(prog.reg_dtypes[r], []).append(r)
    return prog
