"""`ArrayMethods`: the array API's operators and dunders, shared by `Tensor` and views.

This module sits at the tensor layer, below the namespace functions that do the
work (`tenferro.namespace`); those register themselves here when they are
imported (`register`), so a lower layer never imports a higher one. Every
operator is one call into the registered namespace, which runs on the calling
thread's default engine and returns a pooled output (or, for basic indexing
and transposes, a view that never copies).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any, ClassVar

from .errors import ValidationError

__all__ = ["ArrayMethods", "array_repr", "register"]

# The namespace module (`tenferro.namespace`), set by `register` at import time.
_ns: Any = None


def register(namespace: Any) -> None:
    """Install the namespace the operators delegate to (called once by the namespace).

    The operators in `_DIRECT` become the namespace functions themselves (a
    function stored on the class binds like a method, ``a + b`` calls
    ``add(a, b)``): one Python call per operator instead of two, on the
    per-call path of small tensors. Their delegating definitions below stay as
    what runs before registration and as the documentation of the protocol.
    """
    global _ns
    _ns = namespace
    for method, name in _DIRECT.items():
        setattr(ArrayMethods, method, getattr(namespace, name))


def array_repr(x: Any) -> str:
    """``repr`` of a tensor or view: its values in their shape, its dtype and ownership."""
    return _ns.array_repr(x)  # type: ignore[no-any-return]


class ArrayMethods:
    """The array API's array object protocol, mixed into `Tensor` and the views.

    Ownership: binary and unary operators compute pooled outputs; ``x[key]``
    with ints, slices, ``...`` and ``None`` **borrows** (a view, no copy), with
    integer arrays or boolean masks it **copies** (named, counted);
    ``x[key] = v`` and the in-place operators (``+=`` ...) **borrow x
    exclusively** for the write.
    """

    __slots__ = ()

    # Elementwise equality makes arrays unhashable, as numpy's are.
    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    # -- attributes --------------------------------------------------------------
    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The `tenferro` module: the array API namespace of this array."""
        return _ns.array_namespace(api_version)

    @property
    def device(self) -> Any:
        """The device the elements live on: always ``"cpu"`` for host memory."""
        return _ns.device_of(self)

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        """Itself on ``"cpu"`` (borrows nothing new); other devices are refused."""
        return _ns.to_device(self, device, stream)

    @property
    def T(self) -> Any:
        """The reversed-axes view of a rank-2 array (no copy)."""
        return _ns.array_T(self)

    @property
    def mT(self) -> Any:
        """The view with the last two axes swapped (no copy)."""
        return _ns.matrix_transpose(self)

    # -- arithmetic ----------------------------------------------------------------
    def __add__(self, other: Any) -> Any:
        return _ns.add(self, other)

    def __radd__(self, other: Any) -> Any:
        return _ns.add(other, self)

    def __iadd__(self, other: Any) -> Any:
        return _ns.inplace(_ns.add, self, other)

    def __sub__(self, other: Any) -> Any:
        return _ns.subtract(self, other)

    def __rsub__(self, other: Any) -> Any:
        return _ns.subtract(other, self)

    def __isub__(self, other: Any) -> Any:
        return _ns.inplace(_ns.subtract, self, other)

    def __mul__(self, other: Any) -> Any:
        return _ns.multiply(self, other)

    def __rmul__(self, other: Any) -> Any:
        return _ns.multiply(other, self)

    def __imul__(self, other: Any) -> Any:
        return _ns.inplace(_ns.multiply, self, other)

    def __truediv__(self, other: Any) -> Any:
        return _ns.divide(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _ns.divide(other, self)

    def __itruediv__(self, other: Any) -> Any:
        return _ns.inplace(_ns.divide, self, other)

    def __floordiv__(self, other: Any) -> Any:
        return _ns.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _ns.floor_divide(other, self)

    def __ifloordiv__(self, other: Any) -> Any:
        return _ns.inplace(_ns.floor_divide, self, other)

    def __mod__(self, other: Any) -> Any:
        return _ns.remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        return _ns.remainder(other, self)

    def __imod__(self, other: Any) -> Any:
        return _ns.inplace(_ns.remainder, self, other)

    def __pow__(self, other: Any) -> Any:
        return _ns.pow(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _ns.pow(other, self)

    def __ipow__(self, other: Any) -> Any:
        return _ns.inplace(_ns.pow, self, other)

    def __matmul__(self, other: Any) -> Any:
        return _ns.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _ns.matmul(other, self)

    def __imatmul__(self, other: Any) -> Any:
        return _ns.inplace(_ns.matmul, self, other)

    def __neg__(self) -> Any:
        return _ns.negative(self)

    def __pos__(self) -> Any:
        return _ns.positive(self)

    def __abs__(self) -> Any:
        return _ns.abs(self)

    # -- bitwise -------------------------------------------------------------------
    def __and__(self, other: Any) -> Any:
        return _ns.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Any:
        return _ns.bitwise_and(other, self)

    def __iand__(self, other: Any) -> Any:
        return _ns.inplace(_ns.bitwise_and, self, other)

    def __or__(self, other: Any) -> Any:
        return _ns.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Any:
        return _ns.bitwise_or(other, self)

    def __ior__(self, other: Any) -> Any:
        return _ns.inplace(_ns.bitwise_or, self, other)

    def __xor__(self, other: Any) -> Any:
        return _ns.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Any:
        return _ns.bitwise_xor(other, self)

    def __ixor__(self, other: Any) -> Any:
        return _ns.inplace(_ns.bitwise_xor, self, other)

    def __lshift__(self, other: Any) -> Any:
        return _ns.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> Any:
        return _ns.bitwise_left_shift(other, self)

    def __ilshift__(self, other: Any) -> Any:
        return _ns.inplace(_ns.bitwise_left_shift, self, other)

    def __rshift__(self, other: Any) -> Any:
        return _ns.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> Any:
        return _ns.bitwise_right_shift(other, self)

    def __irshift__(self, other: Any) -> Any:
        return _ns.inplace(_ns.bitwise_right_shift, self, other)

    def __invert__(self) -> Any:
        return _ns.bitwise_invert(self)

    # -- comparisons (elementwise, bool results) -----------------------------------------
    # Anything that is neither an array nor a Python scalar compares by identity
    # (NotImplemented lets Python fall back), so `t in [f, g]` and `t == None`
    # keep their everyday meaning instead of raising.
    def __eq__(self, other: object) -> Any:
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _ns.equal(self, other)

    def __ne__(self, other: object) -> Any:
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _ns.not_equal(self, other)

    def __lt__(self, other: Any) -> Any:
        return _ns.less(self, other)

    def __le__(self, other: Any) -> Any:
        return _ns.less_equal(self, other)

    def __gt__(self, other: Any) -> Any:
        return _ns.greater(self, other)

    def __ge__(self, other: Any) -> Any:
        return _ns.greater_equal(self, other)

    # -- indexing ---------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        return _ns.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _ns.setitem(self, key, value)

    def __iter__(self) -> Iterator[Any]:
        """Views of the sub-arrays along the first axis (each borrows, no copy)."""
        return _ns.iterate(self)  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return _ns.length(self)  # type: ignore[no-any-return]

    # -- Python scalars (one-element arrays only) --------------------------------------
    def __bool__(self) -> bool:
        return bool(_ns.scalar_value(self, "__bool__"))

    def __int__(self) -> int:
        return int(_ns.scalar_value(self, "__int__"))

    def __float__(self) -> float:
        return float(_ns.scalar_value(self, "__float__"))

    def __complex__(self) -> complex:
        return complex(_ns.scalar_value(self, "__complex__"))

    def __index__(self) -> int:
        return int(_ns.index_value(self))

    # -- numpy's array methods (each the namespace function, with its ownership) -------------
    def __format__(self, spec: str) -> str:
        """``f"{x:.6f}"``: a one-element array formats its element; an empty spec gives
        ``str(x)``; other specs on larger arrays are a `TypeError`, as numpy's."""
        x: Any = self
        if x.size == 1:
            return format(_ns.scalar_value(self, "__format__"), spec)
        if spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return str(self)

    def item(self, *args: Any) -> Any:
        """The element as a Python scalar: of a one-element array, or at ``args`` (an
        index). Reads it."""
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        idx = _ints("Tensor.item", "an index", args)
        x = self if not idx else _ns.getitem(self, idx)
        return _ns.scalar_value(x, "item")

    def tolist(self) -> Any:
        """The values as nested Python lists (a 0-d array: its scalar). Reads them."""
        return _ns.to_list(self)

    def conj(self) -> Any:
        """The complex conjugate (`tenferro.conj`): **computes** a pooled output."""
        return _ns.conj(self)

    def conjugate(self) -> Any:
        """The complex conjugate (`tenferro.conj`): **computes** a pooled output."""
        return _ns.conj(self)

    def reshape(self, *shape: Any, copy: bool | None = None) -> Any:
        """`tenferro.reshape` (``x.reshape(2, 3)`` or ``x.reshape((2, 3))``): a view when
        the strides allow, else a named, counted copy."""
        op = "Tensor.reshape"
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if copy is not None:
            _flag(op, "copy", copy)
        return _ns.reshape(self, _ints(op, "shape", shape), copy=copy)

    def copy(self) -> Any:
        """A new array with the same values: **copies** (named, counted)."""
        return _ns.copy(self)

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """`tenferro.astype`: another dtype **computes**; the same dtype copies (counted)
        with ``copy=True`` and returns ``self`` with ``copy=False``."""
        return _ns.astype(self, dtype, copy=_flag("Tensor.astype", "copy", copy))

    def transpose(self, *axes: Any) -> Any:
        """The axes reversed, or in the order ``axes``: **borrows** (a view, no copy)."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        perm = _ints("Tensor.transpose", "axes", axes)
        if not perm:
            x: Any = self
            perm = tuple(range(x.ndim - 1, -1, -1))
        return _ns.permute_dims(self, perm)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        """Two axes exchanged: **borrows** (a view, no copy)."""
        op = "Tensor.swapaxes"
        return _ns.swapaxes(self, _int(op, "axis1", axis1), _int(op, "axis2", axis2))

    def squeeze(self, axis: Any = None) -> Any:
        """Length-one axes removed (all of them by default): **borrows** (a view)."""
        axis = _axis("Tensor.squeeze", axis)
        if axis is None:
            x: Any = self
            axis = tuple(i for i, d in enumerate(x.shape) if d == 1)
        return _ns.squeeze(self, axis=axis)

    def ravel(self) -> Any:
        """The elements in row-major order, 1-D: a view when the strides allow, else a
        named, counted copy (`tenferro.ravel`)."""
        return _ns.ravel(self)

    def flatten(self) -> Any:
        """A 1-D copy of the elements in row-major order: **copies** (named, counted), as
        numpy's ``flatten`` always does."""
        return _ns.reshape(self, (-1,), copy=True)

    def sum(
        self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
    ) -> Any:
        """`tenferro.sum`: **computes** a pooled output (``out=`` is refused)."""
        op = "Tensor.sum"
        _no_out(op, out)
        k = _flag(op, "keepdims", keepdims)
        return _ns.sum(self, axis=_axis(op, axis), dtype=dtype, keepdims=k)

    def prod(
        self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
    ) -> Any:
        """`tenferro.prod`: **computes** a pooled output (``out=`` is refused)."""
        op = "Tensor.prod"
        _no_out(op, out)
        k = _flag(op, "keepdims", keepdims)
        return _ns.prod(self, axis=_axis(op, axis), dtype=dtype, keepdims=k)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.max`: **computes** a pooled output (``out=`` is refused)."""
        op = "Tensor.max"
        _no_out(op, out)
        k = _flag(op, "keepdims", keepdims)
        return _ns.max(self, axis=_axis(op, axis), keepdims=k)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.min`: **computes** a pooled output (``out=`` is refused)."""
        op = "Tensor.min"
        _no_out(op, out)
        k = _flag(op, "keepdims", keepdims)
        return _ns.min(self, axis=_axis(op, axis), keepdims=k)

    def mean(
        self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
    ) -> Any:
        """`tenferro.mean` (of ``astype(self, dtype)`` when a dtype is given): **computes**
        a pooled output (``out=`` is refused)."""
        op = "Tensor.mean"
        _no_out(op, out)
        k = _flag(op, "keepdims", keepdims)
        ax = _axis(op, axis)
        x = self if dtype is None else _ns.astype(self, dtype)
        return _ns.mean(x, axis=ax, keepdims=k)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.any`: **computes** a pooled output (``out=`` is refused)."""
        op = "Tensor.any"
        _no_out(op, out)
        k = _flag(op, "keepdims", keepdims)
        return _ns.any(self, axis=_axis(op, axis), keepdims=k)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.all`: **computes** a pooled output (``out=`` is refused)."""
        op = "Tensor.all"
        _no_out(op, out)
        k = _flag(op, "keepdims", keepdims)
        return _ns.all(self, axis=_axis(op, axis), keepdims=k)

    # -- scipy's linear-operator protocol (``scipy.sparse.linalg.eigsh(x)``) --------------------
    # scipy's iterative solvers (and quimb's sparse split drivers and local eigensolvers,
    # which hand them any array that is not an ndarray) accept an object with ``shape``,
    # ``dtype`` and ``matvec``: each product runs on the engine; the array is not copied.
    def matvec(self, v: Any) -> Any:
        """``self @ v`` for a vector (or a one-column matrix): **computes**."""
        _operand("Tensor.matvec", self, v, False)
        return _ns.matmul(self, v)

    def rmatvec(self, v: Any) -> Any:
        """``conj(self).T @ v``: **computes**."""
        _operand("Tensor.rmatvec", self, v, True)
        return _ns.matmul(_ns.conj(self.mT), v)

    def matmat(self, m: Any) -> Any:
        """``self @ m``: **computes**."""
        _operand("Tensor.matmat", self, m, False)
        return _ns.matmul(self, m)

    def rmatmat(self, m: Any) -> Any:
        """``conj(self).T @ m``: **computes**."""
        _operand("Tensor.rmatmat", self, m, True)
        return _ns.matmul(_ns.conj(self.mT), m)

    def to_dense(self) -> Any:
        """The array itself (it is dense): what quimb's drivers ask of an operator."""
        return self


_COMPARABLE = (ArrayMethods, bool, int, float, complex)

#: Operators whose namespace function takes ``(self, other)`` (or ``self``) in that
#: order and has no extra rule of the operator's own (unlike ``==``, reflected and
#: in-place operators): `register` installs the function as the method.
_DIRECT = {
    "__add__": "add",
    "__sub__": "subtract",
    "__mul__": "multiply",
    "__truediv__": "divide",
    "__matmul__": "matmul_operator",
    "__neg__": "negative",
    "__lt__": "less",
    "__le__": "less_equal",
    "__gt__": "greater",
    "__ge__": "greater_equal",
    "__getitem__": "getitem",
}


# -- argument checks of the numpy-style methods (typed refusals before any work) ---------------
def _flag(op: str, name: str, value: Any) -> bool:
    if value is True or value is False or type(value).__name__ == "bool_":
        return bool(value)
    raise ValidationError(
        op, f"{name} must be True or False, got {value!r}", kind="INVALID_ARGUMENT"
    )


def _int(op: str, what: str, value: Any) -> int:
    if isinstance(value, (bool, ArrayMethods)):
        raise ValidationError(op, f"{what} must be an int, got {value!r}", kind="INVALID_ARGUMENT")
    try:
        return operator.index(value)
    except TypeError:
        raise ValidationError(
            op, f"{what} must be an int, got {value!r}", kind="INVALID_ARGUMENT"
        ) from None


def _ints(op: str, what: str, values: Any) -> tuple[int, ...]:
    if not isinstance(values, (tuple, list)):
        raise ValidationError(
            op, f"{what} must be ints or one tuple of ints, got {values!r}", kind="INVALID_ARGUMENT"
        )
    return tuple(_int(op, what, v) for v in values)


def _axis(op: str, axis: Any) -> Any:
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return _ints(op, "axis", axis)
    return _int(op, "axis", axis)


def _no_out(op: str, out: Any) -> None:
    if out is not None:
        raise ValidationError(
            op,
            "out= is not supported: tenferro computes into a new pooled output; assign it "
            "with x[...] = result if it must land in an existing array",
            kind="INVALID_OUT",
        )


def _operand(op: str, self: Any, v: Any, rows: bool) -> None:
    """Refuse a linear-operator product whose shapes do not match, before any work."""
    if self.ndim != 2:
        raise ValidationError(
            op,
            f"a linear operator is a matrix; this array has rank {self.ndim}",
            kind="INVALID_RANK",
            shape=self.shape,
        )
    shape = getattr(v, "shape", None)
    if not isinstance(shape, tuple) or len(shape) not in (1, 2):
        raise ValidationError(
            op,
            f"expected a vector or matrix operand, got {type(v).__name__}",
            kind="INVALID_OPERAND",
            operand_type=type(v).__name__,
        )
    need = self.shape[0] if rows else self.shape[1]
    if shape[0] != need:
        raise ValidationError(
            op,
            f"the operand's first axis has length {shape[0]}; this operator needs {need}",
            kind="SHAPE_MISMATCH",
            shapes=(self.shape, shape),
        )
