"""Elementwise operations: arithmetic, math functions, comparisons and ``where``.

Operands are tensors or views of equal shape and dtype, or Python scalars. A
scalar is *weak*: it takes the tensor's dtype, and is refused when that would
lose information (a float scalar with an integer tensor, a complex scalar with
a real one, an integer out of range). There is no implicit broadcasting or
promotion: use `broadcast_in_dim` and `convert` explicitly.

Every kernel is one numpy ufunc call with ``out=`` set to the uninitialised
pooled output; a ufunc writes every element of ``out`` when all operands have
``out``'s shape (or are scalars), which is what the checks here guarantee.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol, cast

import numpy as np

from ..dtype import DType, scalar_as_dtype
from ..errors import DTypeError, ValidationError
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ._base import EngineBase, Reads, dtype_mismatch, is_scalar, not_a_tensor
from ._core import Kernel
from ._core import binary as _core_binary
from ._core import scalar as _core_scalar
from ._core import unary as _core_unary
from .large import LARGE_MIN as _LARGE_MIN
from .large import binary as _large_binary

__all__ = ["ElementwiseOps"]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

_BOOL = DType.BOOL
_F = frozenset({DType.F32, DType.F64})
_C = frozenset({DType.C32, DType.C64})
_I = frozenset({DType.I32, DType.I64})
_FLOATING = _F | _C
_NUMERIC = _F | _C | _I
_REAL = _F | _I | {_BOOL}
_ALL = frozenset(DType)
# Tuples for the hot path: `in` on a tuple compares enum members by identity.
_NUMERIC_T = tuple(d for d in DType if d is not DType.BOOL)
_FLOATING_T = (DType.F64, DType.F32, DType.C64, DType.C32)
# abs keeps the dtype only for real inputs (a complex input gives its real dtype).
_REAL_NUM_T = (DType.F64, DType.F32, DType.I64, DType.I32)

_np_fdiv = np.floor_divide


class _Spec:
    """One elementwise operation: its name, ufunc, accepted dtypes and result dtype."""

    __slots__ = ("allowed", "hint", "name", "op", "result", "ufunc")

    def __init__(
        self,
        name: str,
        ufunc: Any,
        allowed: frozenset[DType],
        result: DType | None = None,
        hint: str = "",
    ) -> None:
        self.name = name
        self.op = f"CpuEngine.{name}"
        self.ufunc = ufunc
        self.allowed = allowed
        self.result = result
        self.hint = hint


_CONVERT_HINT = "convert it first, e.g. eng.convert(t, tfr.DType.F64)"
_ADD = _Spec("add", np.add, _NUMERIC)
_SUB = _Spec("sub", np.subtract, _NUMERIC)
_MUL = _Spec("mul", np.multiply, _NUMERIC)
_DIV = _Spec("div", np.true_divide, _NUMERIC)
_POW = _Spec("pow", np.power, _NUMERIC)
_MAX = _Spec("maximum", np.maximum, _REAL, hint="complex numbers have no order")
_MIN = _Spec("minimum", np.minimum, _REAL, hint="complex numbers have no order")
_EQ = _Spec("equal", np.equal, _ALL, _BOOL)
_NE = _Spec("not_equal", np.not_equal, _ALL, _BOOL)
_LT = _Spec("less", np.less, _REAL, _BOOL, "complex numbers have no order")
_LE = _Spec("less_equal", np.less_equal, _REAL, _BOOL, "complex numbers have no order")
_GT = _Spec("greater", np.greater, _REAL, _BOOL, "complex numbers have no order")
_GE = _Spec("greater_equal", np.greater_equal, _REAL, _BOOL, "complex numbers have no order")
_NEG = _Spec("neg", np.negative, _NUMERIC)
_ABS = _Spec("abs", np.absolute, _NUMERIC)
_EXP = _Spec("exp", np.exp, _FLOATING, hint=_CONVERT_HINT)
_LOG = _Spec("log", np.log, _FLOATING, hint=_CONVERT_HINT)
_SIN = _Spec("sin", np.sin, _FLOATING, hint=_CONVERT_HINT)
_COS = _Spec("cos", np.cos, _FLOATING, hint=_CONVERT_HINT)
_TANH = _Spec("tanh", np.tanh, _FLOATING, hint=_CONVERT_HINT)
_SQRT = _Spec("sqrt", np.sqrt, _FLOATING, hint=_CONVERT_HINT)

#: Each spec's ufunc as the compiled hot paths call it: its `Kernel` (numpy's inner
#: loop run directly, engine/_loops.pxi). A method reads its ufunc at each call and
#: looks it up here, so a ufunc replaced in a method's closure (a test's waiting
#: kernel) is called as it is.
_KERNELS: dict[Any, Any] = {
    s.ufunc: Kernel(s.ufunc)
    for s in (
        *(_ADD, _SUB, _MUL, _DIV, _POW, _MAX, _MIN, _EQ, _NE, _LT, _LE, _GT, _GE),
        *(_NEG, _ABS, _EXP, _LOG, _SIN, _COS, _TANH, _SQRT),
    )
}


# ---------------------------------------------------------------------- checks
def _dtype_error(spec: _Spec, dt: DType) -> ValidationError:
    allowed = ", ".join(d.name for d in DType if d in spec.allowed)
    hint = f"; {spec.hint}" if spec.hint else ""
    return DTypeError(
        spec.op,
        f"{spec.name} does not accept dtype {dt.name} (accepted: {allowed}){hint}",
        kind="UNSUPPORTED_DTYPE",
        dtype=dt,
    )


def weak_scalar(value: Any, dt: DType, op: str) -> Any:
    """``value`` as a numpy scalar of ``dt`` (weak typing): `dtype.scalar_as_dtype`,
    after the two exact cases the hot paths meet most."""
    vt = type(value)
    if vt is float and (dt is DType.F64 or dt is DType.C64):
        return value  # exact: numpy reads a Python float as float64
    if vt is int and dt is DType.I64 and -(2**63) <= value < 2**63:
        return value  # exact, and numpy reads a Python int weakly as the tensor's int64
    return scalar_as_dtype(value, dt, op, hint=", or convert the tensor (eng.convert) first")


def _shape_error(op: str, s1: Shape, s2: Shape) -> ValidationError:
    return ValidationError(
        op,
        f"operand shapes differ: {s1} and {s2}; elementwise operands must have equal "
        "shapes (broadcast explicitly with eng.broadcast_in_dim)",
        kind="SHAPE_MISMATCH",
        shapes=(s1, s2),
    )


def _check_int_divisor(op: str, divisor: Any) -> None:
    if not np.all(divisor):
        raise ValidationError(
            op,
            "integer division by zero; integer div is floor division and has no value "
            "for a zero divisor (check the divisor, or convert to a float dtype)",
            kind="DIVISION_BY_ZERO",
        )


# ---------------------------------------------------------------------- fast path
class _BinaryOp(Protocol):
    """The signature a type checker sees for ``eng.add`` and the other binary operations."""

    def __call__(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor: ...


class _BinaryMethod(Protocol):
    """A function stored on the class: looked up on an engine, it binds like a method."""

    def __get__(self, obj: object, owner: type | None = None) -> _BinaryOp: ...


class _UnaryOp(Protocol):
    """The signature a type checker sees for ``eng.neg`` and the other unary operations."""

    def __call__(self, a: Any, out: Tensor | None = None) -> Tensor: ...


class _UnaryMethod(Protocol):
    """A function stored on the class: looked up on an engine, it binds like a method."""

    def __get__(self, obj: object, owner: type | None = None) -> _UnaryOp: ...


def _binary_method(spec: _Spec, fast: tuple[DType, ...], doc: str) -> _BinaryMethod:
    """A binary method with a hot path for two plain host tensors of one shape, no out=.

    The hot path is the compiled per-operation protocol (`_core.binary`: pin
    both buffers, then check for a writer, read both ``HostBuffer.flat`` arrays
    directly, take a buffer from the pool, one ufunc call, wrap, unpin).
    Anything else (views, scalars,
    ``out=``, group storage, dtypes outside ``fast``, a borrowed operand,
    errors) goes through `ElementwiseOps._binary`.
    """
    ufunc = spec.ufunc

    def method(self: ElementwiseOps, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        if out is None and a.__class__ is Tensor and b.__class__ is Tensor:
            sa = a._st
            sb = b._st
            dt = a._dtype
            if (
                sa.__class__ is HostBuffer
                and sb.__class__ is HostBuffer
                and dt is b._dtype
                and dt in fast
            ) and a._shape == b._shape:
                # The per-operation protocol, compiled (engine/_core.pyx): pin both,
                # check for a writer, pooled output, one ufunc call, wrap, unpin.
                # Both operands hold exactly n elements (plain host INVARIANT, equal
                # shapes), so the ufunc writes every element of the output.
                kernel = (
                    _KERNELS.get(ufunc, ufunc)
                    if len(sa.flat) < _LARGE_MIN
                    else partial(_large_binary, ufunc)
                )
                r = _core_binary(kernel, a, b, dt, self)
                if r is not None:
                    return r
        elif out is None:
            # One plain host tensor and a Python float or int (operators like
            # `t * 2.0`, `1 - t`): the scalar is converted once, weakly.
            ca = a.__class__
            cb = b.__class__
            if ca is Tensor and (cb is float or cb is int):
                r = self._fast_scalar(spec, ufunc, fast, a, b, False)
                if r is not None:
                    return r
            elif cb is Tensor and (ca is float or ca is int):
                r = self._fast_scalar(spec, ufunc, fast, b, a, True)
                if r is not None:
                    return r
        return self._binary(spec, a, b, out)

    method.__name__ = spec.name
    method.__qualname__ = f"CpuEngine.{spec.name}"
    method.__doc__ = doc
    # A plain function (it binds as a method); the cast only names its signature.
    return cast(_BinaryMethod, method)


def _unary_method(spec: _Spec, fast: tuple[DType, ...], doc: str) -> _UnaryMethod:
    """A unary method with a hot path for one plain host tensor, no out=.

    The same compiled protocol as `_binary_method` (`_core.unary`)
    for the dtypes in ``fast``, whose result dtype is the input's. Anything else
    (views, ``out=``, group storage, other dtypes, a borrowed operand, errors)
    goes through `ElementwiseOps._unary`.
    """
    ufunc = spec.ufunc

    def method(self: ElementwiseOps, a: Any, out: Tensor | None = None) -> Tensor:
        if out is None and a.__class__ is Tensor:
            sa = a._st
            dt = a._dtype
            if sa.__class__ is HostBuffer and dt in fast:
                # The per-operation protocol, compiled (engine/_core.pyx). The input
                # holds exactly n elements (plain host INVARIANT) and the result has
                # its dtype: the ufunc writes every element of the output.
                r = _core_unary(_KERNELS.get(ufunc, ufunc), a, dt, self)
                if r is not None:
                    return r
        return self._unary(spec, a, out)

    method.__name__ = spec.name
    method.__qualname__ = f"CpuEngine.{spec.name}"
    method.__doc__ = doc
    # A plain function (it binds as a method); the cast only names its signature.
    return cast(_UnaryMethod, method)


# ---------------------------------------------------------------------- the mixin
class ElementwiseOps(EngineBase):
    """Elementwise methods of `CpuEngine` (mixed in; see the module docstring)."""

    __slots__ = ()

    def _fast_scalar(
        self,
        spec: _Spec,
        ufunc: Any,
        fast: tuple[DType, ...],
        t: Tensor,
        value: Any,
        scalar_first: bool,
    ) -> Tensor | None:
        """A plain host tensor with a Python scalar, or None for the general path."""
        st = t._st
        dt = t._dtype
        if st.__class__ is not HostBuffer or dt not in fast:
            return None
        scalar = weak_scalar(value, dt, spec.op)
        # The per-operation protocol, compiled (engine/_core.pyx). The tensor holds
        # exactly n elements and the scalar broadcasts: the ufunc writes all of them.
        r: Tensor | None = _core_scalar(
            _KERNELS.get(ufunc, ufunc), t, scalar, scalar_first, dt, self
        )
        return r

    # -- general paths ---------------------------------------------------------------------
    def _binary(self, spec: _Spec, a: Any, b: Any, out: Any) -> Tensor:
        op = spec.op
        a_scalar = is_scalar(a)
        b_scalar = is_scalar(b)
        if a_scalar and b_scalar:
            raise ValidationError(
                op,
                "at least one operand must be a tensor (both are scalars); use Python "
                "arithmetic for scalars",
                kind="INVALID_OPERAND",
                operand_type=type(a).__name__,
            )
        with Reads() as reads:
            if a_scalar:
                yb, dt, shape = reads.operand(b, op)
                xa: Any = weak_scalar(a, dt, op)
            else:
                xa, dt, shape = reads.operand(a, op)
                if b_scalar:
                    yb = weak_scalar(b, dt, op)
                else:
                    yb, dt2, shape2 = reads.operand(b, op)
                    if dt2 is not dt:
                        raise dtype_mismatch(op, dt, dt2)
                    if shape2 != shape:
                        raise _shape_error(op, shape, shape2)
            if dt not in spec.allowed:
                raise _dtype_error(spec, dt)
            ufunc = spec.ufunc
            if spec is _DIV and dt in _I:
                _check_int_divisor(op, yb)
                ufunc = _np_fdiv
            elif spec is _POW and dt in _I and np.any(np.less(yb, 0)):
                raise ValidationError(
                    op,
                    "an integer tensor cannot be raised to a negative integer power; convert "
                    "it to a float dtype first",
                    kind="NEGATIVE_INTEGER_POWER",
                )
            result = spec.result or dt

            def kernel(nd: Array) -> None:
                # Every operand has nd's shape or is a scalar: the ufunc writes all of nd.
                _large_binary(ufunc, xa, yb, nd)

            return self._run(op, shape, result, kernel, out, reads, in_place_ok=True)

    def _unary(self, spec: _Spec, a: Any, out: Any) -> Tensor:
        op = spec.op
        with Reads() as reads:
            x, dt, shape = reads.operand(a, op)
            if dt not in spec.allowed:
                raise _dtype_error(spec, dt)
            result = dt.real if spec is _ABS else dt
            ufunc = spec.ufunc

            def kernel(nd: Array) -> None:
                # x has nd's shape: the ufunc writes every element of nd.
                ufunc(x, out=nd)

            return self._run(op, shape, result, kernel, out, reads, in_place_ok=True)

    # -- arithmetic ------------------------------------------------------------------------
    add = _binary_method(
        _ADD, _NUMERIC_T, "``a + b`` elementwise into a pooled output (or ``out=``)."
    )

    sub = _binary_method(_SUB, _NUMERIC_T, "``a - b`` elementwise.")

    mul = _binary_method(_MUL, _NUMERIC_T, "``a * b`` elementwise.")

    div = _binary_method(
        _DIV,
        _FLOATING_T,
        """``a / b`` elementwise; on integer dtypes this is floor division (``//``).

        Integer division by zero raises `ValidationError` (kind DIVISION_BY_ZERO);
        float division follows IEEE (``inf``/``nan``).
        """,
    )

    def pow(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """``a ** b`` elementwise (integer tensors: non-negative exponents only)."""
        return self._binary(_POW, a, b, out)

    def maximum(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """Elementwise maximum (NaN propagates); not defined for complex dtypes."""
        return self._binary(_MAX, a, b, out)

    def minimum(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """Elementwise minimum (NaN propagates); not defined for complex dtypes."""
        return self._binary(_MIN, a, b, out)

    # -- comparisons (BOOL results) --------------------------------------------------------
    def equal(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """``a == b`` elementwise, as a BOOL tensor."""
        return self._binary(_EQ, a, b, out)

    def not_equal(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """``a != b`` elementwise, as a BOOL tensor."""
        return self._binary(_NE, a, b, out)

    def less(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """``a < b`` elementwise, as a BOOL tensor."""
        return self._binary(_LT, a, b, out)

    def less_equal(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """``a <= b`` elementwise, as a BOOL tensor."""
        return self._binary(_LE, a, b, out)

    def greater(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """``a > b`` elementwise, as a BOOL tensor."""
        return self._binary(_GT, a, b, out)

    def greater_equal(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """``a >= b`` elementwise, as a BOOL tensor."""
        return self._binary(_GE, a, b, out)

    # -- unary -----------------------------------------------------------------------------
    neg = _unary_method(_NEG, _NUMERIC_T, "``-a`` elementwise.")

    abs = _unary_method(
        _ABS,
        _REAL_NUM_T,
        "``|a|`` elementwise; a complex tensor gives its real dtype (C64 -> F64).",
    )

    exp = _unary_method(_EXP, _FLOATING_T, "``exp(a)`` elementwise (float and complex dtypes).")

    log = _unary_method(
        _LOG, _FLOATING_T, "Natural logarithm elementwise (float and complex dtypes)."
    )

    sin = _unary_method(_SIN, _FLOATING_T, "``sin(a)`` elementwise (float and complex dtypes).")

    cos = _unary_method(_COS, _FLOATING_T, "``cos(a)`` elementwise (float and complex dtypes).")

    tanh = _unary_method(_TANH, _FLOATING_T, "``tanh(a)`` elementwise (float and complex dtypes).")

    sqrt = _unary_method(_SQRT, _FLOATING_T, "Square root elementwise (float and complex dtypes).")

    # -- selection -------------------------------------------------------------------------
    def where(self, cond: Any, x: Any, y: Any, out: Tensor | None = None) -> Tensor:
        """``x`` where ``cond`` is true, else ``y``; ``cond`` is a BOOL tensor.

        ``x`` and ``y`` are tensors of ``cond``'s shape and one dtype, or scalars
        (at least one of them a tensor).
        """
        op = "CpuEngine.where"
        if is_scalar(cond):
            raise not_a_tensor(op, cond, "cond")
        with Reads() as reads:
            c, cdt, shape = reads.operand(cond, op)
            if cdt is not _BOOL:
                raise DTypeError(
                    op,
                    f"cond must be a BOOL tensor, got {cdt.name}; build one with a comparison "
                    "(eng.less, eng.equal, ...)",
                    kind="DTYPE_MISMATCH",
                    dtype=cdt,
                )
            if is_scalar(x) and is_scalar(y):
                raise ValidationError(
                    op,
                    "x and y cannot both be scalars: their dtype would be ambiguous; make one "
                    "of them a tensor",
                    kind="INVALID_OPERAND",
                    operand_type=type(x).__name__,
                )
            dt: DType | None = None
            arrays: list[Any] = [None, None]
            for i, v in enumerate((x, y)):
                if is_scalar(v):
                    continue
                arr, vdt, vshape = reads.operand(v, op)
                if vshape != shape:
                    raise _shape_error(op, shape, vshape)
                if dt is not None and vdt is not dt:
                    raise dtype_mismatch(op, dt, vdt)
                dt = vdt
                arrays[i] = arr
            assert dt is not None
            for i, v in enumerate((x, y)):
                if arrays[i] is None:
                    arrays[i] = weak_scalar(v, dt, op)
            xa, ya = arrays

            def kernel(nd: Array) -> None:
                # The first copy writes every element of nd; the second overwrites the
                # elements selected by cond.
                np.copyto(nd, ya)
                np.copyto(nd, xa, where=c)

            return self._run(op, shape, dt, kernel, out, reads, in_place_ok=False)
