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
  path's kernel: Python source generated once per expression (`_kernel_source`)
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
"""

from __future__ import annotations

import ast
import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import DTypeError, ValidationError
from ..layout import shape_size
from ..storage import host as _host
from ..storage.host import HostBuffer
from ..storage.recycler import never_pool
from ..tensor import Tensor
from ._base import EngineBase, Reads, check_out
from .elementwise import _ALL, _FLOATING, _NUMERIC, _REAL, weak_scalar

__all__ = ["FusionOps"]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

OP = "CpuEngine.evaluate"
#: Elements per tile: 32768 x 8 bytes = 256 KiB per stream, so three operands, a
#: register and the output tile (1.25 MiB) stay in one core's 2 MiB L2 cache;
#: measured side by side on 16M f64 against 4096-65536 (`python -m tenferro bench
#: --only fusion`), 16K-32K were fastest and 64K about 10% slower.
TILE = 32768

#: Below this many elements, plain host operands run the program on the calling
#: thread (the small path's kernel, `_kernel_source`): over whole arrays below
#: `SMALL_SPLIT` elements, over `SMALL_TILE` tiles above; no thread hand-off, none of
#: the general path's bookkeeping. This is numpy's own eager evaluation without its
#: allocations (registers and output come from the pool, the last step ends in
#: place), so it is never slower than numpy beyond a fixed per-call cost. Measured
#: side by side from 128K to 1M elements, the tiled executor (slices, tiles, thread
#: hand-off) lost to numpy on + - * chains there (1.2-2x) while this path matched it;
#: from 1M numexpr's blocked threads win for + - * /.
SMALL = 1 << 20

_new = object.__new__
_reading = _host.reading  # bound by assignment: see elementwise.py

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


def _unsupported(node: ast.AST, why: str) -> ValidationError:
    part = ast.unparse(node)
    return ValidationError(
        OP,
        f"cannot fuse {part!r}: {why}",
        kind="UNSUPPORTED_EXPRESSION",
        part=part,
    )


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
                    f"the expression uses {node.id!r}, which is not among the operands "
                    f"({', '.join(sorted(self.dtypes)) or 'none'})",
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
            part=part,
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


def _compile(expr: str, dtypes: dict[str, DType]) -> _Program:
    if not isinstance(expr, str):
        raise ValidationError(
            OP, f"the expression must be a string, got {type(expr).__name__}", kind="SYNTAX"
        )
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


# ---------------------------------------------------------------------- numexpr translation
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
            )
    for kind, fn, _, _ in prog.instrs:
        if kind in ("nonzero", "nonneg") or (fn is np.absolute and DType.C64 in dtypes.values()):
            raise ValidationError(
                OP,
                "this expression's semantics differ in numexpr (integer division or complex "
                "abs); use the default backend",
                kind="UNSUPPORTED_EXPRESSION",
            )
    tree = ast.parse(expr.strip(), mode="eval")
    names = {n: f"v{i}" for i, n in enumerate(prog.inputs)}
    source = _to_numexpr(tree.body, names)
    signature = [(names[n], getType(np.empty(0, dtypes[n].numpy))) for n in prog.inputs]
    prog.nex = numexpr.NumExpr(source, signature)


_cache_lock = threading.Lock()
_programs: dict[tuple[Any, ...], _Program] = {}
_MAX_PROGRAMS = 512


def _program(expr: str, dtypes: dict[str, DType], backend: str) -> _Program:
    if not isinstance(expr, str):
        raise ValidationError(
            OP, f"the expression must be a string, got {type(expr).__name__}", kind="SYNTAX"
        )
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


#: The small path's kernels, one per expression (`_kernel_source`). The operand
#: names are those of the expression (an unused operand and an unknown name are
#: refused), so the expression alone keys the cache; the operands' dtypes are
#: checked by the kernel itself, and a kernel built for other dtypes says so
#: (`_REPLAN`) and is replaced by the one for these (`_built`, or a new one).
_kernels: dict[str, Any] = {}
#: Every kernel built, by (expression, operand names and numpy dtypes): a loop that
#: alternates dtypes swaps kernels in `_kernels` without building one again.
_built: dict[tuple[Any, ...], Any] = {}
#: What a kernel returns when an operand's dtype is not the one it was built for.
_REPLAN = object()
#: Elements per tile of the small path's tiled loop (`_kernel_source`, from
#: `SMALL_SPLIT` elements): 256 KiB per stream, so a tile's operands, register and
#: output stay in one core's L2 cache between steps. Measured side by side (kernels
#: alone, a shared 2-core machine with 2 MiB L2 per core, medians of 31): at 128K-512K
#: f64 elements, 32K tiles ran 4-6-op chains at 0.62-0.76 of numpy against 0.93-1.00
#: for the same ufuncs over whole arrays, and 2-op chains at 0.81-0.90 against
#: 0.93-0.96; 16K tiles were 2-5% slower and 8K tiles 10-20%; at 64K whole arrays won
#: (0.95 against 1.02 for a 4-op chain).
SMALL_TILE = 32768
SMALL_SPLIT = 4 * SMALL_TILE


def _nonzero(x: Array) -> None:
    """Refuse an integer divisor holding a zero (the "nonzero" step)."""
    if not np.all(x):
        raise ValidationError(
            OP,
            "integer division by zero; integer / is floor division and has "
            "no value for a zero divisor",
            kind="DIVISION_BY_ZERO",
        )


def _nonneg(x: Array) -> None:
    """Refuse a negative integer exponent (the "nonneg" step)."""
    if np.any(np.less(x, 0)):
        raise ValidationError(
            OP,
            "an integer cannot be raised to a negative power; convert to a float dtype first",
            kind="NEGATIVE_INTEGER_POWER",
        )


#: ufuncs whose output numpy wants as ``out=`` (a third positional is deprecated).
_OUT_BY_KEYWORD = frozenset(_BINARY_FUNCS.values())


def _step_lines(instrs: list[tuple[Any, ...]], local: list[str], env: dict[str, Any]) -> list[str]:
    """Python statements running ``instrs`` (`_slot_code`) over the locals ``local``.

    ``local[slot]`` names each slot's array; every function and constant is bound
    in ``env`` under a generated name, so the source holds no text of the caller's.
    """
    lines = []
    for i, (kind, fn, args, dst) in enumerate(instrs):
        a = [local[s] for s in args]
        if kind == "ufunc":
            env[f"F{i}"] = fn
            if len(a) == 1:
                lines.append(f"F{i}({a[0]}, {local[dst]})")
            elif fn in _OUT_BY_KEYWORD:
                lines.append(f"F{i}({a[0]}, {a[1]}, out={local[dst]})")
            else:
                # Positional out: a keyword costs numpy one dispatch more.
                lines.append(f"F{i}({a[0]}, {a[1]}, {local[dst]})")
        elif kind == "where":
            lines.append(f"copyto({local[dst]}, {a[2]})")
            lines.append(f"copyto({local[dst]}, {a[1]}, where={a[0]})")
        elif kind == "copy":
            lines.append(f"copyto({local[dst]}, {a[0]})")
        else:  # "nonzero" / "nonneg": checks that raise
            lines.append(f"_{kind}({a[0]})")
    return lines


def _kernel_source(prog: _Program, numpy_dtypes: list[np.dtype[Any]], env: dict[str, Any]) -> str:
    """The source of the small path's kernel for ``prog`` and these operand dtypes.

    ``kernel(operands, pool)`` returns ``(owner, flat, shape, dtype)`` for a pooled
    result, `_REPLAN` when an operand has another dtype, or None when the
    operands are not plain host tensors of one shape with 1 to `SMALL` - 1
    elements, or one is being written (the general path takes those, and raises
    every error). Straight-line code: the checks and the ufunc calls of this one
    expression, nothing looked up or looped over per call but the tiles.
    """
    instrs, consts = _slot_code(prog)
    nin = len(prog.inputs)
    nreg = len(prog.reg_dtypes)
    out_slot = nin + nreg
    # The register the last step reads becomes the output itself (a fresh buffer,
    # never an operand, on this path): the chain then ends in place, as numpy's
    # temporary elision does, and one stream of memory traffic less. Only after a
    # ufunc step (one pass, each element read before written) of the result dtype.
    alias = -1
    kind, _, args, dst = instrs[-1]
    if kind == "ufunc" and dst == out_slot:
        for s in args:
            if nin <= s < dst and prog.reg_dtypes[s - nin] == prog.dtype.numpy:
                alias = s - nin
                break
    regs = [r for r in range(nreg) if r != alias]
    for i, name in enumerate(prog.inputs):
        env[f"N{i}"] = name
        env[f"D{i}"] = numpy_dtypes[i]
    for r in regs:
        env[f"R{r}"] = prog.reg_dtypes[r]
    env["RESULT"] = prog.dtype
    env["RESULT_NP"] = prog.dtype.numpy
    for k, value in enumerate(consts):
        env[f"C{k}"] = value
    xs = [f"x{i}" for i in range(nin)]
    ts = [f"t{i}" for i in range(nin)]
    ss = [f"s{i}" for i in range(nin)]
    const_names = [f"C{k}" for k in range(len(consts))]

    def names(inputs: list[str], reg: str, out: str) -> list[str]:
        return [
            *inputs,
            *(out if r == alias else f"{reg}{r}" for r in range(nreg)),
            out,
            *const_names,
        ]

    whole = _step_lines(instrs, names(xs, "r", "o"), env)
    tiled = _step_lines(instrs, names([f"y{i}" for i in range(nin)], "g", "q"), env)
    # Sizes are the module's own integers, written as literals (a global costs a
    # dictionary lookup per use).
    split, tile = int(SMALL_SPLIT), int(SMALL_TILE)
    either = " or "
    # Every local that holds a pooled buffer or a writable view of one.
    held = " = ".join(["owner", "o", *(f"r{r}" for r in regs), *(f"h{r}" for r in regs)])
    pad = " " * 8
    src = [
        "def kernel(ops, pool):",
        f"    if len(ops) != {nin}:",
        "        return None",
        "    try:",
        *(f"        {ts[i]} = ops[N{i}]" for i in range(nin)),
        "    except KeyError:",
        "        return None",
        f"    if {either.join(f'{t}.__class__ is not Tensor' for t in ts)}:",
        "        return None",
        *(f"    {ss[i]} = {ts[i]}._st" for i in range(nin)),
        f"    if {either.join(f'{s}.__class__ is not HostBuffer' for s in ss)}:",
        "        return None",
        "    shape = t0._shape",
    ]
    if nin > 1:
        src += [
            f"    if {either.join(f'{t}._shape != shape' for t in ts[1:])}:",
            "        return None",
        ]
    src += [
        # Pin every operand, THEN check for a writer (see HostBuffer.pin).
        f"    pin = ({', '.join(ss)},)",
        "    reading.append(pin)",
        "    try:",
        f"        if {either.join(f'{s}.exclusive is not None' for s in ss)}:",
        "            return None  # the general path refuses it",
        *(f"        {xs[i]} = {ss[i]}.flat" for i in range(nin)),
        f"        if {either.join(f'{xs[i]}.dtype is not D{i}' for i in range(nin))}:",
        "            return REPLAN",
        "        n = len(x0)",
        f"        if not 0 < n < {int(SMALL)}:",
        "            return None",
        # The output first, as the general path does: a loop gets its last output's
        # buffer back (registers are given back first, so they are not the newest
        # released buffers when the output is dropped).
        f"{pad}{held} = None",
        "        try:",
        "            owner = pool.acquire(RESULT_NP, n)",
        "            o = owner if len(owner) == n else owner[:n]",
        *([f"            m = n if n < {split} else {tile}"] if regs else []),
        *(
            line
            for r in regs
            for line in (
                f"            h{r} = pool.acquire(R{r}, m)",
                f"            r{r} = h{r} if len(h{r}) == m else h{r}[:m]",
            )
        ),
        # Every operand holds exactly n elements (plain host INVARIANT, equal
        # shapes): the last step writes every element of o (of each tile of it).
        f"            if n < {split}:",
        *(f"                {line}" for line in whole),
        "            else:",
        f"                for s in range(0, n, {tile}):",
        f"                    e = s + {tile}",
        "                    if e > n:",
        "                        e = n",
        *(f"                        g{r} = r{r}[: n - s]" for r in regs),
        *(["                    else:"] if regs else []),
        *(f"                        g{r} = r{r}" for r in regs),
        *(f"                    y{i} = {xs[i]}[s:e]" for i in range(nin)),
        "                    q = o[s:e]",
        *(f"                    {line}" for line in tiled),
        "        except BaseException:",
        # Dropped, never pooled: the traceback keeps this frame, and with it
        # writable views of the output and the registers (EngineBase._run); the
        # pool stops counting them as live.
        f"            for d in ({', '.join(['owner', *(f'h{r}' for r in regs)])},):",
        "                if d is not None:",
        "                    pool.forget(d)",
        "            d = None",
        f"{pad}    {held} = None",
        f"            if n >= {split}:",
        f"                {' = '.join(['q', *(f'g{r}' for r in regs)])} = None",
        "            raise",
        *(f"        pool.recycle(h{r}, 0)" for r in regs),
        "        return owner, o, shape, RESULT",
        "    except BaseException:",
        # The traceback keeps the operands' internal arrays: never pool their
        # buffers (Reads.__exit__).
        *(f"        never_pool({s})" for s in ss),
        "        raise",
        "    finally:",
        "        reading.remove(pin)",
    ]
    return "\n".join(src) + "\n"


def _small_kernel(expr: str, dtypes: dict[str, DType], numpy_dtypes: dict[str, Any]) -> Any:
    """The small path's kernel for these operand dtypes (compiling the program if needed)."""
    prog = _program(expr, dtypes, "tiled")  # raises every expression error
    env: dict[str, Any] = {
        "Tensor": Tensor,
        "HostBuffer": HostBuffer,
        "reading": _reading,
        "never_pool": never_pool,
        "REPLAN": _REPLAN,
        "copyto": np.copyto,
        "_nonzero": _nonzero,
        "_nonneg": _nonneg,
    }
    source = _kernel_source(prog, [numpy_dtypes[name] for name in prog.inputs], env)
    # INVARIANT: the source is built from generated names only (operand names,
    # functions and constants are values in env), never from the caller's text.
    exec(compile(source, "<tenferro evaluate kernel>", "exec"), env)
    return env["kernel"]


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


# ---------------------------------------------------------------------- the tiled executor
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(
                    max_workers=max(1, min(32, os.cpu_count() or 1)),
                    thread_name_prefix="tenferro-fusion",
                )
    return _executor


def _slot_code(prog: _Program) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """The program with every argument as an index into one per-tile slot list.

    Slots: the inputs (in ``prog.inputs`` order), the registers, the output tile,
    then the constants. Built once per program (programs are cached).
    """
    code = prog.slot_code
    if code is not None:
        return code
    nin = len(prog.inputs)
    index = {name: i for i, name in enumerate(prog.inputs)}
    out_slot = nin + len(prog.reg_dtypes)
    consts: list[Any] = []

    def slot(ref: tuple[Any, ...]) -> int:
        if ref[0] == "in":
            return index[ref[1]]
        if ref[0] == "reg":
            return nin + int(ref[1])
        if ref[0] == "out":
            return out_slot
        consts.append(ref[1])
        return out_slot + len(consts)

    instrs = [
        (kind, fn, tuple(slot(a) for a in args), None if dst is None else slot(dst))
        for kind, fn, args, dst in prog.instrs
    ]
    prog.slot_code = code = (instrs, consts)
    return code


def _run_tiles(
    prog: _Program,
    pool: Any,
    inputs: list[Array],
    out: Array,
    start: int,
    stop: int,
    flat_mode: bool,
) -> None:
    """Run the program over tiles [start, stop) (elements, or last-axis slabs)."""
    instrs, consts = _slot_code(prog)
    inner = 1 if flat_mode or not out.ndim else shape_size(out.shape[:-1])
    tile = max(1, TILE // max(inner, 1))
    span = min(tile, max(stop - start, 1))
    regs: list[Array] = []
    try:
        for npd in prog.reg_dtypes:
            regs.append(pool.acquire(npd, max(span * inner, 1)))
        for s in range(start, stop, tile):
            e = min(s + tile, stop)
            if not out.ndim:
                slots = [*inputs]
                out_t = out
            elif flat_mode:
                slots = [x[s:e] for x in inputs]
                out_t = out[s:e]
            else:
                slots = [x[..., s:e] for x in inputs]
                out_t = out[..., s:e]
            m = out_t.size
            if out_t.ndim == 1:
                slots += [r[:m] for r in regs]
            else:
                slots += [r[:m].reshape(out_t.shape, order="F") for r in regs]
            slots.append(out_t)
            slots += consts
            # Every operand has the tile's shape (or is a scalar), so each step writes
            # every element of its target; the last step writes the output tile, and
            # the tiles cover the output exactly.
            _exec(instrs, slots)
    except BaseException:
        # Dropped, never pooled: the traceback keeps this frame's writable views of
        # the registers (slots; see EngineBase._run).
        regs.clear()
        raise
    for owner in regs:
        pool.recycle(owner, 0)


def _exec(instrs: list[tuple[Any, ...]], slots: list[Any]) -> None:
    """Run a slot program once over ``slots`` (operands of one shape, or scalars)."""
    for kind, fn, args, dst in instrs:
        if kind == "ufunc":
            # Every "ufunc" step is a numpy ufunc of one or two operands (no unpacking
            # of a list per step: this loop is most of a small expression's cost).
            if len(args) == 2:
                fn(slots[args[0]], slots[args[1]], out=slots[dst])
            else:
                fn(slots[args[0]], out=slots[dst])
        elif kind == "where":
            target = slots[dst]
            np.copyto(target, slots[args[2]])
            np.copyto(target, slots[args[1]], where=slots[args[0]])
        elif kind == "copy":
            np.copyto(slots[dst], slots[args[0]])
        elif kind == "nonzero":
            _nonzero(slots[args[0]])
        else:
            _nonneg(slots[args[0]])


# ---------------------------------------------------------------------- the mixin
class FusionOps(EngineBase):
    """The fused evaluator of `CpuEngine` (mixed in; see the module docstring)."""

    __slots__ = ()

    def evaluate(
        self,
        expr: str,
        /,
        *,
        out: Tensor | None = None,
        backend: str = "auto",
        **operands: Any,
    ) -> Tensor:
        """Evaluate an elementwise expression in one pass into one pooled output.

        ``eng.evaluate("exp(a + b) * c", a=ta, b=tb, c=tc)``: operands are tensors
        or views of one shape (literals are weak scalars); ``out`` and ``backend``
        are reserved names (``expr`` and ``self`` are ordinary operand names).
        Unsupported syntax raises `ValidationError` (kind UNSUPPORTED_EXPRESSION)
        naming the part that cannot be fused; an expression nested too deeply to
        compile is kind TOO_DEEP.
        """
        if not isinstance(expr, str):
            # INVARIANT: validated before the small path, whose cache key hashes it.
            raise ValidationError(
                OP, f"the expression must be a string, got {type(expr).__name__}", kind="SYNTAX"
            )
        if out is None and (backend == "auto" or backend == "tiled") and operands:
            # The small path: one generated kernel per expression (`_kernel_source`).
            kernel = _kernels.get(expr)
            got: Any = _REPLAN if kernel is None else kernel(operands, self._pool)
            if got is _REPLAN:
                got = self._plan_small(expr, operands)
            if got is not None:
                owner, flat, shape, dtype = got
                # INVARIANT: the same fields as tensor._pooled, inlined (the fixed cost
                # of a small call is what the fusion benchmark measures at 1K).
                t: Tensor = _new(Tensor)
                t._shape = shape
                t._dtype = dtype
                t._st = HostBuffer(owner, flat, self._recycler)
                t._moved = None
                return t
        if backend not in ("auto", "tiled", "numexpr"):
            raise ValidationError(
                OP,
                f"backend must be 'auto', 'tiled' or 'numexpr', got {backend!r}",
                kind="INVALID_BACKEND",
            )
        with Reads() as reads:
            return self._evaluate(reads, expr, out, backend, operands)

    def _plan_small(self, expr: str, operands: dict[str, Any]) -> tuple[Any, ...] | None:
        """Build the small path's kernel for these operands, cache it and run it (or None).

        Only plain host tensors get a kernel (anything else takes the general path,
        which also raises every error); the kernel replaces any earlier one for the
        same expression, so a loop that alternates dtypes swaps kernels on every
        switch (each is built once, and `_program` caches the compiled programs).
        """
        dtypes: dict[str, DType] = {}
        numpy_dtypes: dict[str, Any] = {}
        for name, t in operands.items():
            if t.__class__ is not Tensor or t._st.__class__ is not HostBuffer:
                return None
            dtypes[name] = t._dtype
            numpy_dtypes[name] = t._st.flat.dtype
        key = (expr, *sorted(numpy_dtypes.items()))
        kernel = _built.get(key)
        if kernel is None:
            kernel = _small_kernel(expr, dtypes, numpy_dtypes)  # raises every expression error
        with _cache_lock:
            if len(_built) >= _MAX_PROGRAMS:
                _built.clear()
                _kernels.clear()
            _built[key] = _kernels[expr] = kernel
        got = kernel(operands, self._pool)
        # A fresh kernel took these very dtype objects: it never asks to be rebuilt.
        return None if got is _REPLAN else got

    def _evaluate(
        self, reads: Reads, expr: str, out: Tensor | None, backend: str, operands: dict[str, Any]
    ) -> Tensor:
        arrays: dict[str, Array] = {}
        dtypes: dict[str, DType] = {}
        shape: Shape | None = None
        for name, value in operands.items():
            arr, dt, sh = reads.operand(value, OP)
            if shape is None:
                shape = sh
            elif sh != shape:
                raise ValidationError(
                    OP,
                    f"operand {name!r} has shape {sh}, others have {shape}; fused operands "
                    "need equal shapes (broadcast explicitly with eng.broadcast_in_dim)",
                    kind="SHAPE_MISMATCH",
                )
            arrays[name] = arr
            dtypes[name] = dt
        # Tensors (and compact views) run in flat tiles; strided views in slabs of
        # the last axis.
        compact = all(a.flags.f_contiguous for a in arrays.values())
        threads = self._threads or os.cpu_count() or 1
        if backend == "auto":
            backend = _choose(expr, dtypes, shape, threads)
        prog = _program(expr, dtypes, backend)
        assert shape is not None  # _compile refuses expressions without operands
        pool = self._pool

        if backend == "numexpr":
            names = prog.inputs
            nex = prog.nex

            def nex_kernel(nd: Array) -> None:
                # numexpr evaluates the whole expression over nd's shape and writes
                # every element of out.
                nex(
                    *[arrays[n] for n in names],
                    out=nd,
                    order="K",
                    casting="safe",
                    ex_uses_vml=False,
                )

            return self._run(OP, shape, prog.dtype, nex_kernel, out, reads, in_place_ok=True)

        ordered = [arrays[name] for name in prog.inputs]

        def kernel(nd: Array) -> None:
            if compact:
                flat_in = [v.reshape(-1, order="F") for v in ordered]
                flat_out = nd.reshape(-1, order="F")
                total = flat_out.shape[0]
                _parallel(prog, pool, flat_in, flat_out, total, True, threads)
            else:
                total = nd.shape[-1] if nd.ndim else 1
                _parallel(prog, pool, ordered, nd, total, False, threads)

        if out is not None and prog.checked:
            # The checks run tile by tile, after earlier tiles were written: compute
            # into a pooled buffer (given back if a check fails) and copy into out=
            # only on success, so a refused expression leaves out= as it was.
            check_out(out, shape, prog.dtype, OP)
            return self._run_staged(OP, shape, prog.dtype, kernel, out, reads, in_place_ok=True)
        # In place (out= also an operand) is safe when the last step is one ufunc: a
        # tile's earlier steps only write registers, and a ufunc reads each element
        # before writing it. A final `where` writes in two passes, so it is not.
        in_place = compact and prog.instrs[-1][0] != "where"
        return self._run(OP, shape, prog.dtype, kernel, out, reads, in_place_ok=in_place)


def _parallel(
    prog: _Program,
    pool: Any,
    inputs: list[Array],
    out: Array,
    total: int,
    flat_mode: bool,
    threads: int,
) -> None:
    per_unit = 1 if flat_mode else (shape_size(out.shape[:-1]) if out.ndim else 1)
    elements = total * per_unit
    workers = min(threads, elements // (2 * TILE)) if elements >= 4 * TILE else 1
    if workers <= 1 or total < 2:
        _run_tiles(prog, pool, inputs, out, 0, total, flat_mode)
        return
    workers = min(workers, total)
    # Contiguous chunks, each a whole number of tiles (so threads never share one).
    unit = TILE if flat_mode else max(1, TILE // max(per_unit, 1))
    tiles = -(-total // unit)
    bounds = [min(total, (tiles * w // workers) * unit) for w in range(workers + 1)]
    futures: list[Future[None]] = []
    executor = _workers()
    for w in range(1, workers):
        futures.append(
            executor.submit(
                _run_tiles, prog, pool, inputs, out, bounds[w], bounds[w + 1], flat_mode
            )
        )
    error: BaseException | None = None
    try:
        _run_tiles(prog, pool, inputs, out, bounds[0], bounds[1], flat_mode)
    except BaseException as exc:
        error = exc
    # INVARIANT: every worker has stopped writing into `out` before this returns or
    # raises (the caller may give the buffer back to the pool), even when the wait
    # itself is interrupted (Ctrl-C): then it waits again.
    for f in futures:
        while True:
            try:
                failure = f.exception()
                break
            except BaseException as interrupt:
                if error is None:
                    error = interrupt
        if failure is not None and error is None:
            error = failure
    if error is not None:
        raise error
