"""numpy spellings that autoray's callers (quimb, cotengra) use beyond the standard.

Each is a thin layer over the standard functions of this namespace, with
their ownership effect (stated on each).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..copies import check_copy, count_copy
from ..dtype import DType
from ..tensor import Tensor
from ..view import TensorViewMut
from ._adapter import ARRAY_TYPES, Result, compute, emit, is_owner
from ._core import check_array, dtype_arg, operand_dtype
from ._creation import asarray
from ._elementwise import FUNCTIONS
from ._manipulation import reshape
from ._reductions import cumulative_prod, cumulative_sum

__all__ = [
    "allclose",
    "ascontiguousarray",
    "asfortranarray",
    "complex",
    "copy",
    "cumprod",
    "cumsum",
    "isclose",
    "pad",
    "ravel",
]

_COMPLEX_OF = {DType.F32: DType.C32, DType.F64: DType.C64}


def complex(re: Any, im: Any, /) -> Result:
    """``re + 1j * im`` for real arrays (broadcast, promoted). Ownership: **computes**."""
    op = "tenferro.complex"
    dt = operand_dtype((re, im), op)
    out = _COMPLEX_OF.get(dt, dt if dt.is_complex else DType.C64)
    return emit(op, compute(op, lambda r, i: np.asarray(r + 1j * i, dtype=out.numpy), (re, im)))


def pad(x: Any, pad_width: Any, /, mode: str = "constant", **kwargs: Any) -> Result:
    """numpy's ``pad``. Ownership: **computes** a new pooled output."""
    op = "tenferro.pad"
    check_array(x, op)
    return emit(op, compute(op, lambda a: np.pad(a, pad_width, mode=mode, **kwargs), (x,)))  # type: ignore[call-overload]


def isclose(a: Any, b: Any, /, rtol: float = 1e-05, atol: float = 1e-08) -> Result:
    """numpy's ``isclose`` (bool array). Ownership: **computes** a pooled output."""
    op = "tenferro.isclose"
    return emit(op, compute(op, lambda p, q: np.isclose(p, q, rtol=rtol, atol=atol), (a, b)))


def allclose(a: Any, b: Any, /, rtol: float = 1e-05, atol: float = 1e-08) -> bool:
    """numpy's ``allclose``: a Python bool. Ownership: **borrows** (reads only)."""
    op = "tenferro.allclose"
    return bool(compute(op, lambda p, q: np.allclose(p, q, rtol=rtol, atol=atol), (a, b)))


def copy(x: Any, /) -> Result:
    """A new array with ``x``'s values. Ownership: **copies** (named, counted)."""
    return cast(Result, asarray(x, copy=True))  # copy=True: a new array, never x


def asfortranarray(x: Any, /) -> Result:
    """``x`` as a compact column-major owner: an owner is returned as it is
    (**borrows** nothing new); a view **copies** (named, counted)."""
    op = "tenferro.asfortranarray"
    if not isinstance(x, ARRAY_TYPES):
        x = asarray(x)
    if is_owner(x):
        return cast(Tensor, x)
    check_copy(op, x.size * x.dtype.itemsize)
    res = compute(op, lambda a: np.asfortranarray(a), (x,))
    count_copy(x.size * x.dtype.itemsize)
    return emit(op, res)


def ascontiguousarray(x: Any, /) -> Result | TensorViewMut:
    """numpy's ``ascontiguousarray``: ``x`` itself when it is an array (tenferro
    arrays are read through their strides, so no layout needs forcing)."""
    return cast(Result | TensorViewMut, x) if isinstance(x, ARRAY_TYPES) else asarray(x)


def ravel(x: Any, /) -> Result:
    """``reshape(x, (-1,))``: a view when the strides allow, else a counted copy."""
    return reshape(x, (-1,))


def cumsum(x: Any, /, axis: int | None = None, dtype: Any = None) -> Result:
    """numpy's ``cumsum``: running sums along ``axis`` (``None``: of the flattened
    array). Ownership: **computes** a pooled output."""
    if axis is None:
        # Checked before ravel, which may copy: a refused call copies nothing.
        check_array(x, "tenferro.cumsum")
        dtype_arg(dtype, "tenferro.cumsum")
        return cumulative_sum(ravel(x), axis=0, dtype=dtype)
    return cumulative_sum(x, axis=axis, dtype=dtype)


def cumprod(x: Any, /, axis: int | None = None, dtype: Any = None) -> Result:
    """numpy's ``cumprod``: running products along ``axis`` (``None``: of the
    flattened array). Ownership: **computes** a pooled output."""
    if axis is None:
        # Checked before ravel, which may copy: a refused call copies nothing.
        check_array(x, "tenferro.cumprod")
        dtype_arg(dtype, "tenferro.cumprod")
        return cumulative_prod(ravel(x), axis=0, dtype=dtype)
    return cumulative_prod(x, axis=axis, dtype=dtype)


#: numpy's names for the standard's elementwise functions.
ALIASES: dict[str, Any] = {
    "absolute": FUNCTIONS["abs"],
    "arccos": FUNCTIONS["acos"],
    "arccosh": FUNCTIONS["acosh"],
    "arcsin": FUNCTIONS["asin"],
    "arcsinh": FUNCTIONS["asinh"],
    "arctan": FUNCTIONS["atan"],
    "arctan2": FUNCTIONS["atan2"],
    "arctanh": FUNCTIONS["atanh"],
    "conjugate": FUNCTIONS["conj"],
    "power": FUNCTIONS["pow"],
    "true_divide": FUNCTIONS["divide"],
}
