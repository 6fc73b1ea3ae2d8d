"""Indexing: ``x[key]``, ``x[key] = v``, ``take``, ``take_along_axis``, iteration, scalars.

Basic indexing (ints, slices with any step, ``...``, ``None``) **borrows**: a
view over the same buffer, never a copy. Integer-array and boolean-mask keys
**copy** the selected elements (a named copy, counted, refused under
`forbid_copies`). ``x[key] = v`` **borrows x exclusively** for the write.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..copies import check_copy, count_copy
from ..dtype import DType, promote_types
from ..engine._core import bind_getitem as _bind_getitem
from ..engine._core import getitem as _core_getitem
from ..engine.interface import pinned, view_of
from ..errors import (
    BorrowError,
    DTypeError,
    IndexOutOfRangeError,
    PromotionError,
    ValidationError,
    numpy_refusal,
)
from ..layout import col_major_strides
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ._adapter import (
    ARRAY_TYPES,
    Reads,
    Result,
    compute,
    derive_view,
    descriptor,
    emit,
    read_all,
    shares_buffer,
    write,
)
from ._core import check_array, is_py_scalar, normalize_axis, scalar_dtype, scalar_to


def _is_basic(item: Any) -> bool:
    return (
        item is None
        or item is Ellipsis
        or isinstance(item, slice)
        or (isinstance(item, int) and not isinstance(item, bool))
        or isinstance(item, np.integer)
    )


def _basic_key(key: Any, op: str) -> tuple[Any, ...] | None:
    """``key`` as a tuple of basic items (ints normalised), or None for an advanced key."""
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for item in items:
        if isinstance(item, ARRAY_TYPES) and item.ndim == 0 and item.dtype.is_integer:
            item = operator.index(item)
        if not _is_basic(item):
            return None
        if isinstance(item, np.integer):
            item = int(item)
        elif isinstance(item, slice):
            item = slice(*(_bound(p) for p in (item.start, item.stop, item.step)))
        out.append(item)
    return tuple(out)


def _bound(part: Any) -> Any:
    """A slice bound: None or anything with ``__index__`` (0-d integer arrays too)."""
    if part is None or isinstance(part, int):
        return part
    try:
        return operator.index(part)
    except TypeError:
        return part  # reported by _check_basic


def _check_basic(key: tuple[Any, ...], shape: tuple[int, ...], op: str) -> None:
    """numpy's rules, raised as typed errors before any array exists."""
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise ValidationError(
            op, "an index can have only one ellipsis", kind="INVALID_INDEX", index=key
        )
    real = [k for k in key if k is not None and k is not Ellipsis]
    if len(real) > len(shape):
        raise IndexOutOfRangeError(
            op,
            f"too many indices ({len(real)}) for an array of rank {len(shape)}",
            kind="INVALID_INDEX",
        )
    # Align the axes: items before the ellipsis from the left, after it from the right.
    if Ellipsis in key:
        pos = key.index(Ellipsis)
        head = [k for k in key[:pos] if k is not None]
        tail = [k for k in key[pos + 1 :] if k is not None]
        pairs = list(zip(head, shape, strict=False))
        pairs += list(zip(tail, shape[len(shape) - len(tail) :], strict=False))
    else:
        pairs = list(zip(real, shape, strict=False))
    for k, dim in pairs:
        if isinstance(k, int) and not -dim <= k < dim:
            raise IndexOutOfRangeError(
                op,
                f"index {k} is out of range for an axis of size {dim}",
                index=k,
                size=dim,
            )
        if isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if part is not None and not isinstance(part, (int, np.integer)):
                    raise ValidationError(
                        op,
                        f"slice entries must be ints, got {k!r}",
                        kind="INVALID_INDEX",
                        index=key,
                    )
            if k.step == 0:
                raise ValidationError(
                    op, "slice step cannot be zero", kind="INVALID_INDEX", index=key
                )


def _getitem_general(x: Any, key: Any) -> Any:
    """``x[key]`` for every key the compiled `getitem` (`engine._core.getitem`: one int
    or a plain basic key on a tensor or shared view) declines: it selects, copies or
    raises the typed error."""
    op = "tenferro.__getitem__"
    items = key if key.__class__ is tuple else (key,)
    for i in items:
        if i.__class__ not in _PLAIN:
            break
    else:
        # The common case (ints, slices of ints, None, ...): checked while selecting.
        if isinstance(x, Tensor):
            # Checked against the tensor's own descriptor before anything is made;
            # then one view, whose fresh descriptor is replaced in place.
            x._live(op)
            shape = x._shape
            sel_shape, sel_strides, sel_offset = _select(
                items, shape, col_major_strides(shape), 0, op
            )
            # The selection's offset is relative to where the tensor starts in its buffer.
            return view_of(x, sel_shape, sel_strides, sel_offset)
        shape, strides, offset = descriptor(x)
        return derive_view(x, *_select(items, shape, strides, offset, op))
    basic = _basic_key(key, op)
    if basic is not None:
        check_array(x, op)
        shape, strides, offset = descriptor(x)
        return derive_view(x, *_select(basic, shape, strides, offset, op))
    return _advanced(x, key, op)


_PLAIN = (int, slice, type(None), type(Ellipsis))

_bind_getitem(_getitem_general)
#: ``x[key]``. Basic keys **borrow** (a view); array and mask keys **copy** (counted).
#: Compiled (`engine._core.getitem`): one int or a plain basic key on a tensor or
#: shared view is one call; everything else is `_getitem_general`.
getitem = _core_getitem


def _select(
    key: tuple[Any, ...], shape: tuple[int, ...], strides: tuple[int, ...], offset: int, op: str
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The descriptor ``x[key]`` selects for a basic key (numpy's rules), checking it.

    Nothing is created before the checks pass, so a refused key changes nothing.
    """
    n_real = 0
    n_ell = 0
    for k in key:
        if k is Ellipsis:
            n_ell += 1
        elif k is not None:
            n_real += 1
    rank = len(shape)
    if n_ell > 1:
        raise ValidationError(
            op, "an index can have only one ellipsis", kind="INVALID_INDEX", index=key
        )
    if n_real > rank:
        raise IndexOutOfRangeError(
            op,
            f"too many indices ({n_real}) for an array of rank {rank}",
            kind="INVALID_INDEX",
        )
    if n_ell:
        pos = next(i for i, k in enumerate(key) if k is Ellipsis)  # `is`: no __eq__
        key = key[:pos] + (slice(None),) * (rank - n_real) + key[pos + 1 :]
    elif n_real < rank:
        key = key + (slice(None),) * (rank - n_real)
    out_shape: list[int] = []
    out_strides: list[int] = []
    axis = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            out_strides.append(0)
            continue
        dim = shape[axis]
        stride = strides[axis]
        axis += 1
        if k.__class__ is slice:
            if k.step == 0:
                raise ValidationError(
                    op, "slice step cannot be zero", kind="INVALID_INDEX", index=key
                )
            try:
                start, stop, step = k.indices(dim)
            except TypeError:
                raise ValidationError(
                    op,
                    f"slice entries must be ints, got {k!r}",
                    kind="INVALID_INDEX",
                    index=key,
                ) from None
            length = len(range(start, stop, step))
            if length:
                offset += start * stride
            out_shape.append(length)
            out_strides.append(stride * step)
        else:
            if not -dim <= k < dim:
                raise IndexOutOfRangeError(
                    op, f"index {k} is out of range for an axis of size {dim}", index=k, size=dim
                )
            offset += (k % dim) * stride
    return tuple(out_shape), tuple(out_strides), offset


def _np_key(key: Any, op: str) -> tuple[Any, list[Any]]:
    """The key with tenferro arrays as placeholders; returns (key, arrays)."""
    items = key if isinstance(key, tuple) else (key,)
    arrays = [i for i in items if isinstance(i, ARRAY_TYPES)]
    for item in items:
        if isinstance(item, ARRAY_TYPES):
            if not (item.dtype.is_integer or item.dtype.name == "BOOL"):
                raise ValidationError(
                    op,
                    f"index arrays must be integer or bool, got {item.dtype.value}",
                    kind="INVALID_INDEX",
                    index=key,
                )
        elif not (_is_basic(item) or isinstance(item, (bool, list, np.ndarray))):
            raise ValidationError(
                op,
                f"index entries must be ints, slices, ..., None, or integer/bool arrays, "
                f"got {item!r}",
                kind="INVALID_INDEX",
                index=key,
            )
    return items, arrays


def _advanced(x: Any, key: Any, op: str) -> Any:
    op = "tenferro.__getitem__(array index)"
    items, arrays = _np_key(key, op)

    def run(a: Any, *vals: Any) -> Any:
        it = iter(vals)
        k = tuple(next(it) if isinstance(i, ARRAY_TYPES) else i for i in items)
        try:
            return np.array(a[k if isinstance(key, tuple) else k[0]])
        except IndexError as exc:
            raise IndexOutOfRangeError(op, str(exc)) from None

    # The selection is a physical copy of the chosen elements: named and counted
    # (and refused under forbid_copies) before it is made.
    check_copy(op, 0)
    res = compute(op, run, (x, *arrays))
    count_copy(res.nbytes)
    return emit(op, res)


def setitem(x: Any, key: Any, value: Any) -> None:
    """``x[key] = value``: **borrows x exclusively** for the write (refused while any
    other alias of its buffer is alive). A value that is the view ``x[key]`` itself
    (the second half of ``x[key] += v``) writes nothing. ``value`` is an array or a Python scalar
    whose dtype does not promote beyond ``x``'s."""
    op = "tenferro.__setitem__"
    check_array(x, op)
    dt = x.dtype
    if isinstance(value, ARRAY_TYPES):
        if promote_types(dt, value.dtype, op) is not dt:
            raise PromotionError(
                op,
                f"cannot store {value.dtype.value} values in a {dt.value} array",
                kind="NO_PROMOTION",
                dtypes=(dt, value.dtype),
            )
        if shares_buffer(x, value):
            if _same_elements(x, key, value):
                # ``x[k] op= v`` is ``t = x[k]; t op= v; x[k] = t``: the update already
                # went through the view ``t``, so storing it back writes nothing.
                return
            raise BorrowError(
                op,
                "the value is a view of the array being written; copy it first "
                "(tenferro.asarray(value, copy=True), a named copy)",
                kind="OUT_ALIASES_INPUT",
            )
    elif is_py_scalar(value):
        if scalar_dtype(value, dt, op) is not dt:
            raise PromotionError(
                op,
                f"cannot store a complex value in a {dt.value} array",
                kind="SCALAR_DTYPE",
                dtype=dt,
            )
        value = scalar_to(value, dt, op)
    else:
        raise ValidationError(
            op,
            f"value must be a tenferro array or a Python scalar, got {type(value).__name__}",
            kind="INVALID_VALUE",
            value=value,
        )
    basic = _basic_key(key, op)
    if basic is not None:
        _check_basic(basic, x.shape, op)
        k: Any = basic
        arrays: list[Any] = []
        items: tuple[Any, ...] = ()
    else:
        items, arrays = _np_key(key, op)

    def fn(arr: Any) -> None:
        with Reads() as reads:
            vals = read_all(reads, (value, *arrays), op)
            kk = k if basic is not None else _fill(items, vals[1:], key)
            try:
                arr[kk] = vals[0]
            except (ValueError, IndexError) as exc:
                raise ValidationError(op, str(exc), kind="INVALID_INDEX", index=key) from None
            except TypeError as exc:  # numpy refuses the key's or value's type
                raise numpy_refusal(op, exc) from None

    write(x, op, fn)


def _same_elements(x: Any, key: Any, value: Any) -> bool:
    """Whether ``value`` is exactly the view ``x[key]`` (same buffer, dtype and layout)."""
    if isinstance(value, Tensor) or _basic_key(key, "tenferro.__setitem__") is None:
        return False
    target = getitem(x, key)
    return bool(
        target._source is value._source
        and target.dtype is value.dtype
        and target.shape == value.shape
        and (target.strides == value.strides or target.size <= 1)
        and target.offset == value.offset
    )


def _fill(items: tuple[Any, ...], vals: list[Any], key: Any) -> Any:
    it = iter(vals)
    k = tuple(next(it) if isinstance(i, ARRAY_TYPES) else i for i in items)
    return k if isinstance(key, tuple) else k[0]


def iterate(x: Any) -> Iterator[Any]:
    """Views of ``x[0]``, ``x[1]``, ... (each **borrows**)."""
    check_array(x, "tenferro.__iter__")
    if x.ndim == 0:
        raise DTypeError("tenferro.__iter__", "iteration over a 0-d array", kind="INVALID_TYPE")
    return (getitem(x, i) for i in range(x.shape[0]))


def length(x: Any) -> int:
    """``len(x)``: the length of the first axis."""
    if x.ndim == 0:
        raise DTypeError("tenferro.__len__", "len() of a 0-d array", kind="INVALID_TYPE")
    return int(x.shape[0])


def scalar_value(x: Any, name: str) -> Any:
    """The one element of a one-element array as a Python scalar (reads it).

    A one-element plain host tensor (``float(norm)``, ``bool(tfr.any(...))`` in an
    algorithm's loop) is read directly: pin, check for a writer, take the
    element (the general path's engine read costs about 10 us more). Anything
    else, and a tensor being written, goes through the general path, which
    raises the typed errors.
    """
    if x.__class__ is Tensor:
        st = x._st
        # INVARIANT: a plain host tensor's flat array holds exactly its elements.
        if st.__class__ is HostBuffer and len(st.flat) == 1:
            # The per-operation protocol, compiled (engine/_core.pyx): pin, check for
            # a writer (None: the general path refuses it), read, unpin.
            value = pinned(_item, st, (st.flat,))
            if value is not None:
                return value
    op = f"Tensor.{name}"
    check_array(x, op)
    n = x.size
    if n != 1:
        raise ValidationError(
            op,
            f"only a one-element array converts to a Python scalar; this one has {n} "
            "elements (reduce it first, e.g. tenferro.any or tenferro.sum)",
            kind="AMBIGUOUS_TRUTH" if name == "__bool__" else "NOT_SCALAR",
            size=n,
        )
    return compute(op, lambda a: a.reshape(-1)[0].item(), (x,))


def _item(flat: Any) -> Any:
    """The first element of ``flat`` as a Python scalar (never None)."""
    return flat[0].item()


def index_value(x: Any) -> int:
    """``operator.index(x)`` for a 0-d integer array."""
    op = "Tensor.__index__"
    check_array(x, op)
    if x.ndim != 0 or not x.dtype.is_integer:
        raise TypeError(f"{op}: only 0-d integer arrays can be used as an index")
    return int(scalar_value(x, "__index__"))


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Result:
    """Elements of ``x`` at integer ``indices`` along ``axis``. Ownership: **computes**.

    ``indices`` is an integer array, or (numpy's spelling, quimb's ``isel``) a
    Python int, which drops the axis, or a list of ints."""
    op = "tenferro.take"
    check_array(x, op)
    if isinstance(indices, (int, np.integer)) and not isinstance(indices, bool):
        indices = operator.index(indices)
        ax0 = 0 if axis is None else normalize_axis(axis, x.ndim, op)
        if axis is None and x.ndim != 1:
            x = _flat(x)
        try:
            return emit(op, compute(op, lambda a: np.take(a, indices, axis=ax0), (x,)))
        except IndexError as exc:
            raise IndexOutOfRangeError(op, str(exc)) from None
    # The axis is checked before a list of indices becomes a pooled array: a refused
    # call computes nothing.
    if axis is None:
        if x.ndim != 1:
            raise ValidationError(
                op, "axis is required for arrays of rank > 1", kind="INVALID_AXIS"
            )
        axis = 0
    ax = normalize_axis(axis, x.ndim, op)
    if isinstance(indices, (list, tuple)):
        from ._creation import asarray

        indices = asarray(indices, dtype=DType.I64) if indices else asarray([], dtype=DType.I64)
    check_array(indices, op, "indices")
    try:
        return emit(op, compute(op, lambda a, i: np.take(a, i, axis=ax), (x, indices)))
    except IndexError as exc:
        raise IndexOutOfRangeError(op, str(exc)) from None


def _flat(x: Any) -> Any:
    from ._manipulation import reshape

    return reshape(x, (-1,))


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Result:
    """Elements picked along ``axis`` by ``indices`` (numpy's rule). Ownership: **computes**."""
    op = "tenferro.take_along_axis"
    check_array(x, op)
    check_array(indices, op, "indices")
    ax = normalize_axis(axis, x.ndim, op)
    try:
        return emit(op, compute(op, lambda a, i: np.take_along_axis(a, i, axis=ax), (x, indices)))
    except (IndexError, ValueError) as exc:
        raise IndexOutOfRangeError(op, str(exc)) from None


__all__ = [
    "getitem",
    "index_value",
    "iterate",
    "length",
    "scalar_value",
    "setitem",
    "take",
    "take_along_axis",
]
