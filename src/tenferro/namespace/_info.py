"""Data type functions, the inspection API, devices, ``repr`` and in-place operators."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..dtype import CATEGORIES, DType, as_dtype, promote_types
from ..errors import PromotionError, TenferroError, ValidationError
from ..layout import shape_size
from ..view import TensorView
from ._adapter import ARRAY_TYPES, storage_kind, try_read_for_repr
from ._core import check_array, is_py_scalar, scalar_dtype
from ._cow import update_in_place
from ._refusals import numpy_call

API_VERSION = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
CPU = "cpu"

Shape = tuple[int, ...]

#: The standard's dtype names and the `DType` member each one is.
DTYPE_NAMES: dict[str, DType] = {d.value: d for d in DType}


def array_namespace(api_version: str | None) -> Any:
    """The `tenferro` module (this array API namespace)."""
    if api_version is not None and api_version not in _VERSIONS:
        raise ValidationError(
            "Tensor.__array_namespace__",
            f"api_version {api_version!r} is not supported; use one of {_VERSIONS}",
            kind="UNSUPPORTED_VERSION",
        )
    return sys.modules["tenferro"]


def device_of(x: Any) -> str:
    return CPU


def to_device(x: Any, device: Any, stream: Any) -> Any:
    """``x`` itself on ``"cpu"``; tenferro's arrays live in host memory."""
    if not (isinstance(device, str) and device == CPU):  # an array's != is elementwise
        raise ValidationError(
            "Tensor.to_device",
            f"device {device!r} is not available; tenferro arrays live on 'cpu'",
            kind="INVALID_DEVICE",
        )
    return x


class _Info:
    """``tenferro.__array_namespace_info__()``: what this namespace supports."""

    __slots__ = ()

    def capabilities(self) -> dict[str, Any]:
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": 64,
        }

    def default_device(self) -> str:
        return CPU

    def devices(self) -> list[str]:
        return [CPU]

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType]:
        return {
            "real floating": DType.F64,
            "complex floating": DType.C64,
            "integral": DType.I64,
            "indexing": DType.I64,
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, DType]:
        return {name: d for name, d in DTYPE_NAMES.items() if kind is None or isdtype(d, kind)}


def __array_namespace_info__() -> _Info:
    """The array API inspection object (devices, dtypes, capabilities)."""
    return _Info()


class finfo_object(NamedTuple):
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


class iinfo_object(NamedTuple):
    bits: int
    max: int
    min: int
    dtype: DType


def _dtype_of(x: Any, op: str) -> DType:
    return x.dtype if isinstance(x, ARRAY_TYPES) else as_dtype(x, op)


def finfo(type: Any, /) -> finfo_object:
    """Machine limits of a floating dtype (or an array's)."""
    dt = _dtype_of(type, "tenferro.finfo")
    f = numpy_call("tenferro.finfo", np.finfo, dt.numpy)
    return finfo_object(
        int(f.bits),
        float(f.eps),
        float(f.max),
        float(f.min),
        float(f.smallest_normal),
        dt.real if dt.is_complex else dt,
    )


def iinfo(type: Any, /) -> iinfo_object:
    """Limits of an integer dtype (or an array's)."""
    dt = _dtype_of(type, "tenferro.iinfo")
    i = numpy_call("tenferro.iinfo", np.iinfo, dt.numpy)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), dt)


_KINDS = {
    "bool": CATEGORIES["bool"],
    "signed integer": CATEGORIES["signed integer"],
    "unsigned integer": CATEGORIES["unsigned integer"],
    "integral": CATEGORIES["integer"],
    "real floating": CATEGORIES["real floating"],
    "complex floating": CATEGORIES["complex floating"],
    "numeric": CATEGORIES["numeric"],
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is ``kind`` (a dtype, a kind name, or a tuple of them)."""
    op = "tenferro.isdtype"
    dt = as_dtype(dtype, op)
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValidationError(op, f"unknown dtype kind {kind!r}", kind="INVALID_ARGUMENT")
        return dt in _KINDS[kind]
    return dt is as_dtype(kind, op)


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype the array API's promotion gives for arrays, dtypes and Python scalars."""
    op = "tenferro.result_type"
    dt: DType | None = None
    scalars = []
    for a in arrays_and_dtypes:
        if is_py_scalar(a):
            scalars.append(a)
            continue
        d = _dtype_of(a, op)
        dt = d if dt is None else promote_types(dt, d, op)
    if dt is None:
        raise ValidationError(
            op, "at least one array or dtype is required", kind="INVALID_ARGUMENT"
        )
    for s in scalars:
        dt = scalar_dtype(s, dt, op)
    return dt


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether ``from_`` (a dtype or array) promotes to ``to`` without leaving its kind."""
    op = "tenferro.can_cast"
    a = _dtype_of(from_, op)
    b = as_dtype(to, op)
    try:
        return promote_types(a, b, op) is b
    except PromotionError:
        return False


# ---------------------------------------------------------------------- repr
def array_repr(x: Any) -> str:
    """``Tensor([[1., 2.], [3., 4.]], dtype=float64)``: values row by row, like numpy."""
    kind = storage_kind(x)
    name = "Tensor" if kind == "owner" else type(x).__name__
    dt = x.dtype.value
    arr = try_read_for_repr(x)
    if arr is None:
        return f"{name}(<not readable now: exclusively borrowed>, shape={x.shape}, dtype={dt})"
    body = np.array2string(arr, separator=", ", prefix=name + "(", threshold=200)
    del arr
    tail = (
        f"dtype={dt}"
        if kind == "owner"
        else f"dtype={dt}, view: strides={x.strides}, offset={x.offset}"
    )
    return f"{name}({body}, {tail})"


# ---------------------------------------------------------------------- in-place
def _predicted(fn: Callable[[Any, Any], Any], x: Any, other: Any) -> tuple[Shape, DType] | None:
    """The shape and dtype ``fn(x, other)`` will have, or None where that is not known
    without computing (an operand ``fn`` refuses itself, with its own message).

    Elementwise operators follow broadcasting and the promotion rules
    (`result_type`); ``matmul`` of two arrays of at least two dimensions keeps the
    rows of ``x`` and the columns of ``other``.
    """
    if isinstance(other, ARRAY_TYPES):
        oshape = other.shape
    elif is_py_scalar(other):
        oshape = ()
    else:
        return None
    try:
        dt = result_type(x, other)
        if getattr(fn, "__name__", "") == "matmul":
            if len(x.shape) < 2 or len(oshape) < 2 or x.shape[-1] != oshape[-2]:
                return None
            batch = np.broadcast_shapes(x.shape[:-2], oshape[:-2])
            return (*batch, x.shape[-2], oshape[-1]), dt
        return np.broadcast_shapes(x.shape, oshape), dt
    except (TenferroError, ValueError):
        return None


def _mismatch(op: str, x: Any, shape: Any, dt: DType) -> PromotionError:
    return PromotionError(
        op,
        f"the result ({dt.value}, shape {tuple(shape)}) does not fit the array "
        f"being updated ({x.dtype.value}, shape {x.shape}); use the operator "
        "without '=' to get a new array",
        kind="INPLACE_MISMATCH",
    )


def inplace(fn: Callable[[Any, Any], Any], x: Any, other: Any) -> Any:
    """``x op= other``: computes ``fn(x, other)`` into a pooled output, then writes it
    into ``x`` under an exclusive borrow; a view whose buffer other aliases share
    takes the result's buffer instead (`_cow`). The result must keep ``x``'s shape
    and dtype; every refusal comes before anything changes.

    A refused call changes no accounting (issue 23): a result that cannot fit is
    refused before it is computed (`_predicted`), as is a write into a broadcast
    view; a result refused after it was computed (a borrow held elsewhere, or a
    shape only the computation tells) is given back to the pool before the error
    leaves, so the error's traceback does not keep it counted as live.
    """
    op = f"tenferro.__i{getattr(fn, '__name__', 'op')}__"
    check_array(x, op)
    predicted = _predicted(fn, x, other)
    if predicted is not None and (predicted[0] != x.shape or predicted[1] is not x.dtype):
        raise _mismatch(op, x, *predicted)
    if x.__class__ is TensorView and 0 in x._strides and shape_size(x._shape) > 1:
        x._write_exclusive(op, _never)  # refuses a broadcast view before computing
    res = fn(x, other)
    from ._adapter import compute  # the read of res happens inside the borrow of x

    def fn_write(arr: Any) -> None:
        compute(op, lambda v: np.copyto(arr, v), (res,))

    try:
        if res.shape != x.shape or res.dtype is not x.dtype:
            raise _mismatch(op, x, res.shape, res.dtype)
        update_in_place(x, res, op, fn_write)
    except BaseException as exc:
        # The finished frames below (and this one's `res`, also in `fn_write`'s cell)
        # hold the result: cleared, it goes back to the pool now, not when the
        # caller drops the error.
        traceback.clear_frames(exc.__traceback__)
        del res
        raise
    return x


def _never(arr: Any) -> None:  # pragma: no cover - `write` refuses before calling it
    raise AssertionError("a broadcast view was written")


def to_numpy(x: Any, /) -> np.ndarray[Any, Any]:
    """A read-only numpy array of ``x``'s values. Ownership: **borrows** (zero copy)."""
    check_array(x, "tenferro.to_numpy")
    return np.asarray(x)
