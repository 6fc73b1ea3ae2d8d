"""Creation functions: ``asarray`` (adopts where it can), ``zeros``, ``arange``, ...

Every function except ``asarray`` of an existing buffer creates a new pooled
tensor on the calling thread's default engine. ``asarray`` adopts a writable
numpy array without copying (and freezes the caller's handle), returns
tenferro arrays as they are, and copies (named, counted) only what cannot be
adopted; see docs/namespace.md.
"""

from __future__ import annotations

import operator
from typing import Any, cast

import numpy as np

from ..copies import check_copy, check_copy_flag, count_copy, record_copy
from ..dtype import DType, as_dtype, dtype_of_array
from ..errors import DTypeError, OutOfMemoryError, ValidationError
from ..tensor import from_numpy
from ..view import TensorViewMut
from ._adapter import ARRAY_TYPES, Result, adopt_c_ordered, compute, emit, emit_kernel
from ._core import check_array, check_category, dtype_arg, int_param
from ._refusals import numpy_call

Shape = tuple[int, ...]

# numpy's stubs cannot type calls with unpacked or runtime-chosen arguments.
_np: Any = np

#: numpy's limits: dimensions of an array, and the largest size of one.
_MAX_NDIM = 64
_MAX_DIM = 2**63 - 1

_DEFAULT_FLOAT = DType.F64
_DEFAULT_INT = DType.I64


def _shape(shape: Any, op: str) -> Shape:
    items = shape if isinstance(shape, (tuple, list)) else (shape,)
    try:
        # operator.index, not np.int64: a tensor or view passed as a dimension must be
        # refused without being read (np.int64 of one converts, and counts, a copy).
        out = tuple(d if isinstance(d, int) else operator.index(d) for d in items)
    except (TypeError, ValueError):
        raise ValidationError(
            op,
            f"shape must be an int or a tuple of ints, got {shape!r}",
            kind="INVALID_SHAPE",
            shape=shape,
        ) from None
    if any(d < 0 for d in out):
        raise ValidationError(
            op, f"shape {out} has a negative dimension", kind="INVALID_SHAPE", shape=out
        )
    if len(out) > _MAX_NDIM:
        raise ValidationError(
            op,
            f"shape has {len(out)} dimensions; at most {_MAX_NDIM} are supported",
            kind="INVALID_SHAPE",
            shape=out,
        )
    if any(d > _MAX_DIM for d in out):
        # numpy cannot even describe it, whatever the other dimensions (even 0).
        raise OutOfMemoryError(
            op,
            f"shape {out} has a dimension above {_MAX_DIM}, which cannot be allocated; "
            "ask for a smaller array",
            shape=out,
        )
    return out


def _check_device(device: Any, op: str) -> None:
    # INVARIANT: compare only a str (a numpy array's != is elementwise).
    if device is not None and not (isinstance(device, str) and device == "cpu"):
        raise ValidationError(
            op,
            f"device {device!r} is not available; tenferro arrays live on 'cpu'",
            kind="INVALID_DEVICE",
        )


def _filled(op: str, shape: Shape, dt: DType, value: Any) -> Result:
    def kernel(nd: Any) -> None:
        # fill writes every element of nd.
        nd.fill(value)

    return emit_kernel(op, shape, dt, kernel)


def _scalar_default(value: Any) -> DType:
    if isinstance(value, bool):
        return DType.BOOL
    if isinstance(value, int):
        return _DEFAULT_INT
    if isinstance(value, float):
        return _DEFAULT_FLOAT
    return DType.C64


# ---------------------------------------------------------------------- asarray
def asarray(
    obj: Any,
    /,
    *,
    dtype: Any = None,
    device: Any = None,
    copy: bool | None = None,
) -> Result | TensorViewMut:
    """An array from a tenferro array, a numpy array, a Python scalar or nested sequence.

    Ownership:

    * a tenferro array: returned as it is (**borrows** nothing new); ``copy=True``
      **copies** (named, counted); another ``dtype`` converts (a new pooled array);
    * a numpy array that is writable, contiguous (either order) and of a
      supported dtype: **adopts** it without copying and freezes the caller's
      handle (F-ordered: a `Tensor`; C-ordered: a permuted `TensorView` over a
      column-major owner of the reversed shape); anything else (read-only,
      strided, another dtype requested) **copies** (named, counted), refused
      with ``copy=False``;
    * Python scalars and (nested) sequences of numbers: **creates** a new pooled
      tensor (no buffer existed, so nothing is copied).
    """
    op = "tenferro.asarray"
    _check_device(device, op)
    flag: Any = copy
    if isinstance(flag, (*ARRAY_TYPES, np.ndarray)):
        check_copy_flag(op, flag, allow_none=True)  # refuses it: its truth is ambiguous
    want = dtype_arg(dtype, op)
    if isinstance(obj, ARRAY_TYPES):
        if want is not None and want is not obj.dtype:
            if copy is False:
                raise _copy_refused(op, "a different dtype was requested")
            return astype(obj, want)
        if copy:
            return _copy_array(obj, op)
        return cast(Result | TensorViewMut, obj)  # mypy reads ARRAY_TYPES as _ViewBase
    if isinstance(obj, np.ndarray) or (
        not isinstance(obj, (list, tuple))
        and (hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"))
    ):
        # Another library's array (or a tenferro guard): numpy's view of its memory,
        # adopted when that is writable, else a counted copy like any numpy array.
        return _from_numpy(np.asarray(obj), want, copy, op)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        return from_dlpack(obj, copy=copy)
    if copy is False:
        raise _copy_refused(op, "Python data has no buffer to share")
    return _build(obj, want, op)


def _copy_refused(op: str, why: str) -> ValidationError:
    return ValidationError(
        op,
        f"copy=False but {why}, so a copy would be needed; pass copy=None to allow it",
        kind="COPY_REQUIRED",
    )


def _copy_array(x: Any, op: str) -> Result:
    # Checked before, counted once made: a refused read (an exclusive borrow) counts nothing.
    nbytes = x.size * x.dtype.itemsize
    check_copy(f"{op}(copy=True)", nbytes)
    res = compute(op, lambda a: np.array(a, copy=True), (x,))
    count_copy(nbytes)
    return emit(op, res)


def _from_numpy(
    arr: np.ndarray[Any, Any], want: DType | None, copy: bool | None, op: str
) -> Result:
    dt = dtype_of_array(arr, op) if arr.dtype.kind not in "OUSV" else None
    if dt is None:
        raise DTypeError(
            op, f"unsupported array dtype {arr.dtype}", kind="UNSUPPORTED_DTYPE", dtype=arr.dtype
        )
    convert = want is not None and want is not dt
    adoptable = (
        not convert
        and not copy
        and arr.flags.writeable
        and (arr.flags.f_contiguous or arr.flags.c_contiguous)
    )
    if adoptable:
        try:
            if arr.flags.f_contiguous:
                return from_numpy(arr)
            return cast(Result, adopt_c_ordered(arr, op))
        except ValidationError:
            adoptable = False
    if copy is False:
        raise _copy_refused(op, "the array cannot be adopted (read-only, strided or converted)")
    target = want or dt
    record_copy(f"{op}(numpy copy)", arr.size * target.itemsize)
    return emit(op, arr.astype(target.numpy, copy=False))


def _build(obj: Any, want: DType | None, op: str) -> Result:
    if isinstance(obj, (bool, int, float, complex)):
        dt = want or _scalar_default(obj)
        return _filled(op, (), dt, _scalar_value(obj, dt, op))
    try:
        arr = np.array(_unwrap(obj), dtype=want.numpy if want is not None else None)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValidationError(
            op, f"data cannot be read as numbers ({exc})", kind="INVALID_DATA"
        ) from None
    if arr.dtype.kind in "OUSV":
        raise ValidationError(
            op, f"data holds {arr.dtype} values, not numbers", kind="INVALID_DATA"
        )
    if want is None and arr.dtype == np.float64 and arr.size == 0:
        arr = arr.astype(_DEFAULT_FLOAT.numpy)
    # Python data has no memory order: it becomes an owner (column-major).
    return emit(op, arr, follow_order=False)


def _unwrap(obj: Any) -> Any:
    """Nested sequences with tenferro arrays replaced by their values (0-d -> scalars)."""
    if isinstance(obj, ARRAY_TYPES):
        return compute("tenferro.asarray", lambda a: np.array(a), (obj,))
    if isinstance(obj, (list, tuple)):
        return [_unwrap(o) for o in obj]
    return obj


def _scalar_value(value: Any, dt: DType, op: str) -> Any:
    if isinstance(value, ARRAY_TYPES):
        # A one-element array's value (read); any other array is refused (typed).
        value = compute(op, lambda a: a.item(), (value,))
    try:
        with np.errstate(over="ignore"):
            out = dt.numpy.type(value)
        if isinstance(out, np.ndarray):  # a sequence: numpy's scalar types take one
            raise TypeError
        return out
    except (OverflowError, TypeError, ValueError):
        raise ValidationError(
            op, f"{value!r} cannot be stored as {dt.value}", kind="INVALID_DATA"
        ) from None


# ---------------------------------------------------------------------- filled arrays
def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Result:
    """A new pooled array of ``shape`` (zero-filled: pooled memory is never shown unwritten).

    Ownership: **creates** a new pooled tensor.
    """
    op = "tenferro.empty"
    _check_device(device, op)
    return _filled(op, _shape(shape, op), dtype_arg(dtype, op) or _DEFAULT_FLOAT, 0)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Result:
    """A new pooled array of zeros. Ownership: **creates** a new pooled tensor."""
    op = "tenferro.zeros"
    _check_device(device, op)
    return _filled(op, _shape(shape, op), dtype_arg(dtype, op) or _DEFAULT_FLOAT, 0)


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Result:
    """A new pooled array of ones. Ownership: **creates** a new pooled tensor."""
    op = "tenferro.ones"
    _check_device(device, op)
    return _filled(op, _shape(shape, op), dtype_arg(dtype, op) or _DEFAULT_FLOAT, 1)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Result:
    """A new pooled array filled with ``fill_value``. Ownership: **creates** a new tensor."""
    op = "tenferro.full"
    _check_device(device, op)
    if isinstance(fill_value, ARRAY_TYPES):
        fill_value = compute(op, lambda a: a[()].item(), (fill_value,))
    dt = dtype_arg(dtype, op) or _scalar_default(fill_value)
    return _filled(op, _shape(shape, op), dt, _scalar_value(fill_value, dt, op))


def _like(x: Any, dtype: Any, op: str) -> tuple[Shape, DType]:
    check_array(x, op)
    return x.shape, dtype_arg(dtype, op) or x.dtype


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Result:
    """A new pooled array with ``x``'s shape (zero-filled). Ownership: **creates**."""
    op = "tenferro.empty_like"
    _check_device(device, op)
    shape, dt = _like(x, dtype, op)
    return _filled(op, shape, dt, 0)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Result:
    """Zeros with ``x``'s shape and dtype. Ownership: **creates** a new pooled tensor."""
    op = "tenferro.zeros_like"
    _check_device(device, op)
    shape, dt = _like(x, dtype, op)
    return _filled(op, shape, dt, 0)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Result:
    """Ones with ``x``'s shape and dtype. Ownership: **creates** a new pooled tensor."""
    op = "tenferro.ones_like"
    _check_device(device, op)
    shape, dt = _like(x, dtype, op)
    return _filled(op, shape, dt, 1)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Result:
    """``fill_value`` with ``x``'s shape and dtype. Ownership: **creates** a new tensor."""
    op = "tenferro.full_like"
    _check_device(device, op)
    shape, dt = _like(x, dtype, op)
    return _filled(op, shape, dt, _scalar_value(fill_value, dt, op))


# ---------------------------------------------------------------------- ranges
def _bound(value: Any, name: str, op: str) -> Any:
    """An `arange` bound: a 0-d tenferro array read as its Python scalar; a larger one
    refused (INVALID_ARGUMENT) before numpy sees it (numpy would do arithmetic and
    comparisons on it, computing pooled temporaries, then fail on a truth value)."""
    if not isinstance(value, ARRAY_TYPES):
        return value
    if value.shape != ():
        raise ValidationError(
            op,
            f"{name} must be a number or a 0-d array, got an array of shape {value.shape}",
            kind="INVALID_ARGUMENT",
        )
    if value.dtype.is_integer:
        return operator.index(value)
    return complex(value) if value.dtype.is_complex else float(value)


def arange(
    start: Any,
    /,
    stop: Any = None,
    step: Any = 1,
    *,
    dtype: Any = None,
    device: Any = None,
) -> Result:
    """Evenly spaced values in ``[start, stop)``. Ownership: **creates** a pooled tensor."""
    op = "tenferro.arange"
    _check_device(device, op)
    if stop is None:
        start, stop = 0, start
    start = _bound(start, "start", op)
    stop = _bound(stop, "stop", op)
    step = _bound(step, "step", op)
    want = dtype_arg(dtype, op)
    if want is None:
        floats = any(isinstance(v, float) for v in (start, stop, step))
        want = _DEFAULT_FLOAT if floats else _DEFAULT_INT
    if isinstance(step, (int, float)) and step == 0:
        raise ValidationError(op, "step must not be zero", kind="INVALID_ARGUMENT")
    return emit(op, numpy_call(op, np.arange, start, stop, step, dtype=want.numpy))


def linspace(
    start: Any,
    stop: Any,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: Any = None,
    endpoint: bool = True,
) -> Result:
    """``num`` evenly spaced values from ``start`` to ``stop``. Ownership: **creates**."""
    op = "tenferro.linspace"
    _check_device(device, op)
    want = dtype_arg(dtype, op)
    if want is None:
        want = (
            DType.C64 if isinstance(start, complex) or isinstance(stop, complex) else _DEFAULT_FLOAT
        )
    check_category(op, want, "floating")
    return emit(
        op, numpy_call(op, np.linspace, start, stop, num, endpoint=endpoint, dtype=want.numpy)
    )


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: Any = None,
    device: Any = None,
) -> Result:
    """Ones on the ``k``-th diagonal, zeros elsewhere. Ownership: **creates** a pooled tensor."""
    op = "tenferro.eye"
    _check_device(device, op)
    dt = dtype_arg(dtype, op) or _DEFAULT_FLOAT
    n_rows = int_param(n_rows, "n_rows", op)
    n_cols = int_param(n_cols, "n_cols", op)
    k = int_param(k, "k", op)
    return emit(op, numpy_call(op, np.eye, n_rows, n_cols, k=k, dtype=dt.numpy))


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Result]:
    """Coordinate arrays from 1-D arrays. Ownership: **creates** one pooled tensor each."""
    op = "tenferro.meshgrid"
    for a in arrays:
        check_array(a, op)
    if indexing.__class__ is not str or indexing not in ("xy", "ij"):
        raise ValidationError(op, "indexing must be 'xy' or 'ij'", kind="INVALID_ARGUMENT")
    grids = compute(
        op,
        lambda *vals: [np.array(g) for g in _np.meshgrid(*vals, indexing=indexing)],
        arrays,
    )
    return [emit(op, g) for g in grids]


def _check_matrix(x: Any, op: str) -> None:
    if x.ndim < 2:
        raise ValidationError(
            op,
            f"needs an array of at least 2 dimensions (a matrix or a stack), got shape {x.shape}",
            kind="INVALID_RANK",
            shape=x.shape,
        )


def tril(x: Any, /, *, k: int = 0) -> Result:
    """The lower triangle (on and below the ``k``-th diagonal) of the last two axes.

    Ownership: **computes** a pooled output.
    """
    op = "tenferro.tril"
    check_array(x, op)
    _check_matrix(x, op)
    k = int_param(k, "k", op)
    return emit(op, compute(op, lambda a: np.tril(a, k), (x,)))


def triu(x: Any, /, *, k: int = 0) -> Result:
    """The upper triangle of the last two axes. Ownership: **computes** a pooled output."""
    op = "tenferro.triu"
    check_array(x, op)
    _check_matrix(x, op)
    k = int_param(k, "k", op)
    return emit(op, compute(op, lambda a: np.triu(a, k), (x,)))


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Result:
    """An array from a DLPack producer (`tenferro.interop.from_dlpack`'s rules).

    Ownership: the producer's memory is **adopted** (zero copy) when it is
    writable and column-major, otherwise ``copy=None`` **copies** (named,
    counted) and ``copy=False`` raises `InteropError`.
    """
    op = "tenferro.from_dlpack"
    _check_device(device, op)
    from ..interop import from_dlpack as _from_dlpack

    return _from_dlpack(x, copy=copy)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Result:
    """``x`` converted to ``dtype``.

    Ownership: another dtype **computes** a converted pooled array; the same
    dtype with ``copy=True`` **copies** (named, counted), with ``copy=False``
    returns ``x`` itself.
    """
    op = "tenferro.astype"
    check_array(x, op)
    _check_device(device, op)
    dt = as_dtype(dtype, op)
    if dt is x.dtype:
        return _copy_array(x, op) if copy else x
    if x.dtype.is_complex and not dt.is_complex:
        raise DTypeError(
            op,
            f"converting complex {x.dtype.value} to {dt.value} would drop the imaginary "
            "part; take tenferro.real(x) first",
            kind="UNSUPPORTED_DTYPE",
            dtype=dt,
        )
    return emit(op, compute(op, lambda a: a.astype(dt.numpy), (x,)))


#: numpy's spelling, for autoray's numpy-style callers.
array = asarray

__all__ = [
    "arange",
    "array",
    "asarray",
    "astype",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]
