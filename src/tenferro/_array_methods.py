"""`ArrayMethods`: the array API's operators and dunders, shared by `Tensor` and views.

This module sits at the tensor layer, below the namespace functions that do the
work (`tenferro.namespace`); those register themselves here when they are
imported (`register`), so a lower layer never imports a higher one. Every
operator is one call into the registered namespace, which runs on the calling
thread's default engine and returns a pooled output (or, for basic indexing
and transposes, a view that never copies).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

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
        x = self if not args else _ns.getitem(self, args[0] if len(args) == 1 else args)
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
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return _ns.reshape(self, tuple(shape), copy=copy)

    def copy(self) -> Any:
        """A new array with the same values: **copies** (named, counted)."""
        return _ns.copy(self)

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """`tenferro.astype`: another dtype **computes**; the same dtype copies (counted)
        with ``copy=True`` and returns ``self`` with ``copy=False``."""
        return _ns.astype(self, dtype, copy=copy)

    def transpose(self, *axes: Any) -> Any:
        """The axes reversed, or in the order ``axes``: **borrows** (a view, no copy)."""
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = tuple(axes[0])
        if not axes:
            x: Any = self
            axes = tuple(range(x.ndim - 1, -1, -1))
        return _ns.permute_dims(self, tuple(axes))

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        """Two axes exchanged: **borrows** (a view, no copy)."""
        return _ns.swapaxes(self, axis1, axis2)

    def squeeze(self, axis: Any = None) -> Any:
        """Length-one axes removed (all of them by default): **borrows** (a view)."""
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

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.sum`: **computes** a pooled output."""
        return _ns.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.prod`: **computes** a pooled output."""
        return _ns.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.max`: **computes** a pooled output."""
        return _ns.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.min`: **computes** a pooled output."""
        return _ns.min(self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.mean`: **computes** a pooled output."""
        return _ns.mean(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.any`: **computes** a pooled output."""
        return _ns.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        """`tenferro.all`: **computes** a pooled output."""
        return _ns.all(self, axis=axis, keepdims=keepdims)

    # -- scipy's linear-operator protocol (``scipy.sparse.linalg.eigsh(x)``) --------------------
    # scipy's iterative solvers (and quimb's sparse split drivers and local eigensolvers,
    # which hand them any array that is not an ndarray) accept an object with ``shape``,
    # ``dtype`` and ``matvec``: each product runs on the engine; the array is not copied.
    def matvec(self, v: Any) -> Any:
        """``self @ v`` for a vector (or a one-column matrix): **computes**."""
        return _ns.matmul(self, v)

    def rmatvec(self, v: Any) -> Any:
        """``conj(self).T @ v``: **computes**."""
        return _ns.matmul(_ns.conj(self.mT), v)

    def matmat(self, m: Any) -> Any:
        """``self @ m``: **computes**."""
        return _ns.matmul(self, m)

    def rmatmat(self, m: Any) -> Any:
        """``conj(self).T @ m``: **computes**."""
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
    "__matmul__": "matmul",
    "__neg__": "negative",
    "__getitem__": "getitem",
}
