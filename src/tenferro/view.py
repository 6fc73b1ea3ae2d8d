"""Strided views: `TensorView` (shared) and `TensorViewMut` (exclusive).

A view is a descriptor (shape, strides and offset in elements) over a tensor's
buffer. View transforms change the descriptor only; they never copy. A view
holds the buffer's root array, so while it is alive it counts as an alias.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _array_methods, _services
from ._array_methods import ArrayMethods
from .alloc import host_empty
from .copies import NotCopyable, check_copy, count_copy
from .dtype import DType, scalar_as_dtype, scalar_kind, show_scalar
from .errors import (
    NUMPY_REFUSALS,
    PASSED_ON,
    BorrowError,
    DTypeError,
    ValidationError,
    numpy_refusal,
)
from .guards import ExclusiveBorrow, _array_protocol
from .layout import (
    col_major_strides,
    element_interval,
    is_compact_col_major,
    normalize_perm,
    normalize_shape,
    shape_size,
    strict_index,
)
from .storage.host import HostBuffer

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["TensorView", "TensorViewMut", "ufunc_at_refusal", "ufunc_on_borrows"]

Shape = tuple[int, ...]

_new = object.__new__

#: Entries a layout cache of this module (byte strides, reshapes) holds before it is
#: cleared: every layout a program reuses, bounded for one that makes new ones.
_CACHE_ENTRIES = 4096


class _ViewBase(ArrayMethods, NotCopyable):
    __slots__ = ("_dtype", "_offset", "_shape", "_source", "_strides")

    _dtype: DType
    _shape: Shape
    _strides: Shape
    _offset: int
    _source: Any

    _kind = "TensorView"

    # -- descriptor ---------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return self._shape

    @property
    def strides(self) -> Shape:
        """Strides in elements (may be negative or zero-free gaps)."""
        return self._strides

    @property
    def offset(self) -> int:
        """Element offset of index (0, ..., 0) in the buffer."""
        return self._offset

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return shape_size(self._shape)

    @property
    def is_contiguous(self) -> bool:
        """True for a compact column-major view (what `duplicate` and reshape accept)."""
        return is_compact_col_major(self._shape, self._strides)

    def _root(self, op: str) -> np.ndarray[Any, Any]:
        raise NotImplementedError

    def _derive(self, shape: Shape, strides: Shape, offset: int, dtype: DType | None = None) -> Any:
        raise NotImplementedError

    def _typed_root(self, op: str) -> np.ndarray[Any, Any]:
        """The root reinterpreted as this view's dtype (views hold the untyped root)."""
        root = self._root(op)
        if self._dtype.numpy != root.dtype:
            root = root.view(self._dtype.numpy)
        return root

    def _strided(self, op: str) -> np.ndarray[Any, Any]:
        root = self._root(op)
        want = self._dtype.numpy
        if root.dtype is not want and root.dtype != want:
            root = root.view(want)
        shape = self._shape
        if 0 in shape:
            return root[0:0].reshape(shape)
        isz = root.itemsize
        key = (self._strides, isz)
        strides = _byte_strides.get(key)
        if strides is None:
            strides = tuple([s * isz for s in self._strides])
            if len(_byte_strides) >= _CACHE_ENTRIES:
                _byte_strides.clear()
            _byte_strides[key] = strides
        return np.ndarray(shape, want, root, self._offset * isz, strides)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy ufuncs read a view through a shared borrow (``np.asarray(view)``);
        ``ufunc.at`` and ``out=`` a view are refused: numpy would write through it."""
        if method == "at":
            raise ufunc_at_refusal(ufunc)
        tensor = _services.tensor_type  # `Tensor` sits above the views: it registers
        if any(isinstance(x, tensor) for x in inputs):
            return NotImplemented  # the tensor's own protocol handles mixed operands
        res = _services.mixed_ufunc(ufunc, method, inputs, kwargs)
        if res is not NotImplemented:
            return res  # a numpy operand next to the view: the namespace's function
        return ufunc_on_borrows(ufunc, method, inputs, kwargs)

    # -- transforms (descriptor only) -----------------------------------------------------
    def transpose_view(self, perm: Any) -> Any:
        """Permute axes. No copy."""
        p = normalize_perm(perm, len(self._shape), f"{self._kind}.transpose_view")
        return self._derive(
            tuple(self._shape[i] for i in p), tuple(self._strides[i] for i in p), self._offset
        )

    def slice_view(self, index: Any) -> Any:
        """numpy-style basic indexing with ints, slices (any non-zero step) and ``...``."""
        idx = index if isinstance(index, tuple) else (index,)
        shape = self._shape
        rank = len(shape)
        n_ell = 0
        for item in idx:
            if item is Ellipsis:
                n_ell += 1
        if n_ell > 1:
            raise ValidationError(
                f"{self._kind}.slice_view",
                "an index can only have one ellipsis (...); use at most one",
                kind="INVALID_INDEX",
                index=index,
            )
        n_real = len(idx) - n_ell
        if n_real > rank:
            raise ValidationError(
                f"{self._kind}.slice_view",
                f"too many indices ({n_real}) for a rank-{rank} view; pass at most {rank}",
                kind="INVALID_INDEX",
                index=index,
            )
        if n_ell:
            pos = next(i for i, x in enumerate(idx) if x is Ellipsis)  # `is`: no __eq__
            fill = (slice(None),) * (rank - n_real)
            idx = idx[:pos] + fill + idx[pos + 1 :]
        elif n_real < rank:
            idx = idx + (slice(None),) * (rank - n_real)
        out_shape: list[int] = []
        out_strides: list[int] = []
        offset = self._offset
        strides = self._strides
        for axis in range(rank):
            item = idx[axis]
            dim = shape[axis]
            stride = strides[axis]
            if item.__class__ is slice:
                if item.step is not None and _is_zero(item.step):
                    raise ValidationError(
                        f"{self._kind}.slice_view",
                        f"slice step cannot be zero (axis {axis}); use a non-zero step "
                        "(a negative step walks backwards)",
                        kind="INVALID_INDEX",
                        index=index,
                    )
                try:
                    # Slices clamp to the axis like numpy's; only integer indices raise.
                    start, stop, step = item.indices(dim)
                except TypeError:
                    raise ValidationError(
                        f"{self._kind}.slice_view",
                        f"slice start, stop and step must be ints or None, got {item!r}",
                        kind="INVALID_INDEX",
                        index=index,
                    ) from None
                length = len(range(start, stop, step))
                if length:
                    offset += start * stride
                out_shape.append(length)
                # An axis of one element (or none) never steps: keeping its stride stops
                # a huge step (2**63) from making a stride numpy cannot represent.
                out_strides.append(stride * step if length > 1 else stride)
                continue
            if item.__class__ is int:
                i = item
            else:
                i = _index_entry(f"{self._kind}.slice_view", item, index)
            if not -dim <= i < dim:
                raise _out_of_range(f"{self._kind}.slice_view", index, i, axis, dim)
            offset += (i % dim) * stride
        return self._derive(tuple(out_shape), tuple(out_strides), offset)

    def reshape_view(self, shape: Any) -> Any:
        """Reinterpret a compact column-major view with a new shape. No copy."""
        isz = self._dtype.itemsize
        hit = None
        if shape.__class__ is tuple:
            try:
                hit = _reshapes.get((shape, isz))
            except TypeError:  # an unhashable entry (a slice): normalize_shape refuses it
                hit = None
        if hit is not None:
            # An equal shape was checked before: its size and strides. Only a tuple
            # of exact ints is the same shape (a bool or a float entry compares
            # equal to an int), and a compact source view needs nothing else checked.
            for d in shape:
                if d.__class__ is not int:
                    break
            else:
                size, strides = hit
                own = self._shape
                if size == shape_size(own) and self._strides == col_major_strides(own):
                    return self._derive(shape, strides, self._offset)
        op = f"{self._kind}.reshape_view"
        new = normalize_shape(shape, op, isz)
        if len(_reshapes) >= _CACHE_ENTRIES:
            _reshapes.clear()
        _reshapes[(new, isz)] = (shape_size(new), col_major_strides(new))
        if shape_size(new) != self.size:
            raise ValidationError(
                op,
                f"cannot reshape {self._shape} ({self.size} elements) to {new} "
                f"({shape_size(new)} elements); the new shape must have as many elements",
                kind="LENGTH_MISMATCH",
            )
        if not self.is_contiguous:
            raise ValidationError(
                op,
                f"the view (shape {self._shape}, strides {self._strides}) is not compact "
                "column-major, so it cannot be reshaped without a copy; call to_col_major() "
                "first (a named copy)",
                kind="NOT_CONTIGUOUS",
            )
        return self._derive(new, col_major_strides(new), self._offset)

    def as_real_view(self) -> Any:
        """View a complex tensor as real: a leading axis of 2 (re, im), doubled strides."""
        op = f"{self._kind}.as_real_view"
        if not self._dtype.is_complex:
            raise DTypeError(
                op,
                f"as_real_view needs a complex view (C32 or C64), got {self._dtype.name}",
                kind="DTYPE_MISMATCH",
                dtype=self._dtype,
            )
        return self._derive(
            (2, *self._shape),
            (1, *(2 * s for s in self._strides)),
            2 * self._offset,
            self._dtype.real,
        )

    def _position(self, op: str, index: Any) -> int:
        """The buffer offset (in elements) of the one element a full integer index names.

        One int per axis (a bare int for a 1-D view, ``()`` for rank 0). Anything that
        would select several elements in numpy (bools, slices, lists, arrays, ``...``,
        None) and non-integers are INVALID_INDEX; ints outside an axis are
        INDEX_OUT_OF_RANGE. `get` and `TensorViewMut.set` both check through here.
        """
        idx = index if isinstance(index, tuple) else (index,)
        rank = len(self._shape)
        if len(idx) != rank:
            example = "()" if rank == 0 else f"({', '.join('0' * rank)}{',' if rank == 1 else ''})"
            raise ValidationError(
                op,
                f"a full index has one int per axis ({rank} for this view), got "
                f"{len(idx)} {'entry' if len(idx) == 1 else 'entries'}; pass e.g. {example} "
                "(slice_view selects parts)",
                kind="INVALID_INDEX",
                index=index,
            )
        pos = self._offset
        for axis, (item, dim, stride) in enumerate(
            zip(idx, self._shape, self._strides, strict=True)
        ):
            try:
                i = strict_index(item)
            except TypeError:
                raise ValidationError(
                    op,
                    f"index entries must be ints, got {item!r} for axis {axis}; bools, "
                    "slices, lists, arrays and ... select several elements: use slice_view "
                    "for those",
                    kind="INVALID_INDEX",
                    index=index,
                ) from None
            if not -dim <= i < dim:
                raise _out_of_range(op, index, i, axis, dim)
            pos += (i % dim) * stride
        return pos

    def get(self, index: Any) -> Any:
        """The element at a full integer index, as a Python scalar."""
        op = f"{self._kind}.get"
        pos = self._position(op, index)
        return self._typed_root(op)[pos].item()

    # -- named copies -----------------------------------------------------------------------
    def duplicate(self) -> Tensor:
        """A new tensor with a copy of a compact column-major view.

        Ownership: **copies** (named, counted). Strided views raise
        `ValidationError`: use `to_col_major` to materialise them.
        """
        op = f"{self._kind}.duplicate"
        if not self.is_contiguous:
            raise ValidationError(
                op,
                f"the view (strides {self._strides}) is not contiguous; use to_col_major() "
                "to materialise a strided view (a named copy)",
                kind="NOT_CONTIGUOUS",
            )
        return self._materialise(op)

    def to_col_major(self) -> Tensor:
        """Materialise any view into a new compact column-major tensor.

        Ownership: **copies** (named, counted).
        """
        return self._materialise(f"{self._kind}.to_col_major")

    def _materialise(self, op: str) -> Tensor:
        # Refused (forbid_copies) before the source array exists, as in
        # Tensor._copy_flat; counted only once made, so a failed read counts nothing.
        nbytes = self.size * self._dtype.itemsize
        check_copy(op, nbytes)
        flat = host_empty(op, self.size, self._dtype.numpy)
        dst = flat if len(self._shape) == 1 else flat.reshape(self._shape, order="F")
        np.copyto(dst, self._strided(op))
        count_copy(nbytes)
        # `Tensor` sits above the views (it imports them): it registers its constructor.
        return _services.host_tensor(self._shape, self._dtype, HostBuffer(flat, flat))

    def __repr__(self) -> str:
        """The values in their shape (row-major display), dtype and the view's layout."""
        return _array_methods.array_repr(self)


#: `reshape_view`'s checked shapes: ``(size, strides)`` per (shape, itemsize).
_reshapes: dict[tuple[Shape, int], tuple[int, Shape]] = {}

#: Byte strides per (element strides, itemsize): every array a view hands out needs
#: them, and the loop costs as much as the numpy array itself.
_byte_strides: dict[tuple[Shape, int], Shape] = {}


class TensorView(_ViewBase):
    """A shared, read-only strided view of a tensor's buffer. Ownership: **borrows**."""

    __slots__ = ("_base",)
    _kind = "TensorView"
    #: The buffer's read root, or None for a *fresh* result view that nothing has read
    #: yet (`engine._core`'s C-ordered paths): its buffer then has no root at all, and
    #: the view is the only object that holds the buffer, so there is no other alias
    #: to count. Every use of the memory goes through `_root`, which takes the root
    #: first: from then on the view is a counted alias as any other.
    _base: np.ndarray[Any, Any] | None

    @classmethod
    def _make(
        cls,
        root: np.ndarray[Any, Any],
        dtype: DType,
        shape: Shape,
        strides: Shape,
        offset: int,
        source: Any,
    ) -> TensorView:
        v = object.__new__(cls)
        v._base = root  # holding the root makes this view a counted alias
        v._dtype = dtype
        v._shape = shape
        v._strides = strides
        v._offset = offset
        v._source = source
        return v

    def _root(self, op: str) -> np.ndarray[Any, Any]:
        root = self._base
        if root is None:
            # A fresh result read (or derived from) for the first time: the buffer's
            # one root (`HostBuffer.read_root` makes it once, under its lock).
            root = self._base = self._source.read_root()
        return root

    def _derive(
        self, shape: Shape, strides: Shape, offset: int, dtype: DType | None = None
    ) -> TensorView:
        # INVARIANT: every view holds the root itself (never a dtype view of it), so
        # each live view is exactly one alias in the root's reference count; a fresh
        # view takes the root before anything derived from it exists.
        root = self._base
        if root is None:
            root = self._root("TensorView._derive")
        # `_make`'s body, inlined: every view transform and basic index derives a view,
        # and a classmethod call costs as much as the rest of the derivation.
        v = _new(TensorView)
        v._base = root  # holding the root makes this view a counted alias
        v._dtype = dtype or self._dtype
        v._shape = shape
        v._strides = strides
        v._offset = offset
        v._source = self._source
        return v

    def _write_exclusive(self, op: str, fn: Any) -> None:
        """Call ``fn(arr)`` with a writable array of this view's elements under an
        exclusive borrow of its buffer (the namespace's writes through a view).

        The view keeps its own shared alias (counted as the writer's own) and
        borrows the buffer exclusively, refused while any *other* alias is alive.
        The array is frozen when the borrow ends, so one that outlives ``fn`` (in
        a traceback) can no longer write.
        """
        if 0 in self._strides and shape_size(self._shape) > 1:
            raise BorrowError(
                op,
                "this view repeats elements (a broadcast, stride 0), so writing it is "
                "ambiguous; write the array it was broadcast from, or materialise it first",
                kind="BROADCAST_VIEW",
            )
        src = self._source
        if src.__class__ is not HostBuffer:
            raise BorrowError(
                op,
                "writing through a view of group-backed storage is not supported; write the "
                "tensor itself (map_write) instead",
                kind="UNSUPPORTED",
            )
        # INVARIANT: the view keeps its state for the whole write. Other threads may
        # read it or derive views from it meanwhile (a derived view holds the root, so
        # it is a counted alias from the moment it exists), so the view must never be
        # half-changed: it does not give up its alias; the borrow is told that one
        # alias, the root this view holds (every view holds the buffer's one root,
        # never a view of it), is the writer's own. Every other live alias refuses the
        # write, and a reader racing with it is refused by the `exclusive` flag.
        own = 1 if self._root(op) is src.read_root() else 0
        borrow = ExclusiveBorrow(src, op, own_aliases=own)
        arr: Any = None
        try:
            wroot = borrow.root(op)
            if wroot.dtype != self._dtype.numpy:
                wroot = wroot.view(self._dtype.numpy)
            isz = wroot.itemsize
            # Handed out: the borrow freezes it when it ends, so an `arr` that a failed
            # `fn` leaves in its traceback can no longer write (the owner path's rule).
            arr = borrow.hand_out(
                np.ndarray(
                    self._shape,
                    wroot.dtype,
                    buffer=wroot,
                    offset=self._offset * isz,
                    strides=tuple(s * isz for s in self._strides),
                )
            )
            del wroot
            fn(arr)
        finally:
            arr = None
            borrow.end()

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """The strided numpy view: read-only, zero copy."""
        return self._strided("TensorView.to_numpy")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        # A refused conversion is decided before any array exists, so the
        # exception's traceback cannot keep an alias alive.
        return _array_protocol(
            "TensorView.__array__", self._dtype, self.size, self.to_numpy, dtype, copy
        )

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export the strided view as a read-only DLPack capsule (a live alias)."""
        arr = self._strided("TensorView.__dlpack__")
        return _services.export_dlpack(self, arr, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class TensorViewMut(_ViewBase):
    """An exclusive, writable strided view, valid while its borrow lasts.

    The view returned by `Tensor.as_view_mut` owns the borrow and is a context
    manager; views derived from it (slices, `try_multi_slice_mut` halves) share it.
    """

    __slots__ = ("_borrow", "_owns")
    _kind = "TensorViewMut"
    _borrow: ExclusiveBorrow
    _owns: bool

    @classmethod
    def _make_root(
        cls,
        borrow: ExclusiveBorrow,
        dtype: DType,
        shape: Shape,
        strides: Shape,
        offset: int,
        source: Any,
    ) -> TensorViewMut:
        v = cls._make(borrow, dtype, shape, strides, offset, source)
        v._owns = True
        return v

    @classmethod
    def _make(
        cls,
        borrow: ExclusiveBorrow,
        dtype: DType,
        shape: Shape,
        strides: Shape,
        offset: int,
        source: Any,
    ) -> TensorViewMut:
        v = object.__new__(cls)
        v._borrow = borrow
        v._owns = False
        v._dtype = dtype
        v._shape = shape
        v._strides = strides
        v._offset = offset
        v._source = source
        return v

    def _root(self, op: str) -> np.ndarray[Any, Any]:
        return self._borrow.root(op)

    def _derive(
        self, shape: Shape, strides: Shape, offset: int, dtype: DType | None = None
    ) -> TensorViewMut:
        return TensorViewMut._make(
            self._borrow, dtype or self._dtype, shape, strides, offset, self._source
        )

    def __enter__(self) -> TensorViewMut:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._owns:
            self._borrow.end()

    def release(self) -> None:
        """End the exclusive borrow (leaving the ``with`` block does this)."""
        self._borrow.end()

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """The strided numpy view, writable until the borrow ends (then read-only)."""
        return self._borrow.hand_out(self._strided("TensorViewMut.to_numpy"))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        return _array_protocol(
            "TensorViewMut.__array__", self._dtype, self.size, self.to_numpy, dtype, copy
        )

    def set(self, index: Any, value: Any) -> None:
        """Write one number at a full integer index (one int per axis, as `get` takes).

        The index is checked as `get` checks it, and ``value`` must be a number
        (bool, int, float, complex, a numpy scalar or a 0-d array) that the dtype
        holds: one of a higher kind (a float for an integer tensor, a complex for a
        real one) is refused rather than truncated (SCALAR_DTYPE), as is one out of
        the dtype's range (SCALAR_OUT_OF_RANGE). A refused call writes nothing.
        """
        op = "TensorViewMut.set"
        # Everything is checked before the writable root is touched: a traceback
        # would otherwise keep it alive as an alias once the borrow ends.
        pos = self._position(op, index)
        scalar = _element_value(op, value, self._dtype)
        self._typed_root(op)[pos] = scalar

    def try_multi_slice_mut(self, a: Any, b: Any) -> tuple[TensorViewMut, TensorViewMut] | None:
        """Two mutable views when their element intervals are disjoint, else None.

        The test compares the lowest-to-highest element offsets each slice can
        touch: the two columns of a 2x2 column-major matrix split, its two rows
        (offsets {0, 2} and {1, 3}) do not.
        """
        self._borrow.root("TensorViewMut.try_multi_slice_mut")
        left: TensorViewMut = self.slice_view(a)
        right: TensorViewMut = self.slice_view(b)
        ia = element_interval(left._shape, left._strides, left._offset)
        ib = element_interval(right._shape, right._strides, right._offset)
        if ia is not None and ib is not None and not (ia[1] < ib[0] or ib[1] < ia[0]):
            return None
        return left, right


def _element_value(op: str, value: Any, dtype: DType) -> Any:
    """``value`` as a numpy scalar of ``dtype``, or a `ValidationError` (nothing written).

    The engine's scalar rule (`dtype.scalar_as_dtype`), for numbers only.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if scalar_kind(value) is None:
        raise ValidationError(
            op,
            f"the value must be one number (bool, int, float or complex), got "
            f"{type(value).__name__} {show_scalar(value)}; pass a scalar (to write many "
            "elements, write into to_numpy() of the mutable view)",
            kind="INVALID_VALUE",
            value=value,
        )
    return scalar_as_dtype(
        value,
        dtype,
        op,
        noun="value",
        hint=" (convert it yourself, e.g. round(value) or value.real, if the loss is intended)",
    )


def _index_entry(op: str, item: Any, index: Any) -> int:
    """An index entry that is not a slice, as an int (refusing bools and non-integers)."""
    if isinstance(item, bool):
        raise ValidationError(
            op,
            f"boolean index {item!r} cannot make a view; use ints and slices",
            kind="INVALID_INDEX",
            index=index,
        )
    try:
        return operator.index(item)
    except TypeError:
        raise ValidationError(
            op,
            f"index entries must be ints, slices or ... (new axes, arrays and masks "
            f"cannot make a strided view), got {item!r}",
            kind="INVALID_INDEX",
            index=index,
        ) from None


def _out_of_range(op: str, index: Any, i: int, axis: int, dim: int) -> ValidationError:
    return ValidationError(
        op,
        f"use -{dim}..{dim - 1}" if dim else "the axis is empty",
        kind="INDEX_OUT_OF_RANGE",
        entry=i,
        index=index,
        axis=axis,
        size=dim,
    )


def _is_zero(step: Any) -> bool:
    try:
        return operator.index(step) == 0
    except TypeError:
        return False  # not an int: `slice.indices` reports it


def ufunc_at_refusal(ufunc: Any) -> ValidationError:
    """The error for ``ufunc.at`` on a tensor or view (it would write in place).

    numpy's ``ufunc.at`` writes into its first operand without checking the
    read-only flag of a borrowed array (numpy 2.4), and on a read-only shared
    mapping it crashes the process, so it is refused whatever the operands.
    """
    return ValidationError(
        f"numpy.{getattr(ufunc, '__name__', ufunc)}.at",
        "ufunc.at writes in place, and numpy cannot write into a tensor or view; compute "
        "with the engine, or write under t.map_write() (e.g. np.add.at(w.array, ...))",
        kind="INVALID_OUT",
    )


def ufunc_on_borrows(
    ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Run a numpy ufunc with every tensor and view input read through a shared borrow.

    The borrows live only for the call. ``out=`` a tensor or view is refused
    (`ValidationError` kind INVALID_OUT) before anything is read: numpy would
    write through it. `Tensor.__array_ufunc__` (`tenferro.engine.ufuncs`) and the
    views' protocol both end here.
    """
    readable = (_ViewBase, _services.tensor_type)
    outs = kwargs.get("out")
    if outs is not None:
        for o in outs if isinstance(outs, tuple) else (outs,):
            if isinstance(o, readable):
                raise ValidationError(
                    f"numpy.{ufunc.__name__}",
                    "numpy cannot write into a tensor or view through out=; use the "
                    "engine's out= (an exclusive borrow), write under t.map_write(), or "
                    "into np.asarray() of a mutable view",
                    kind="INVALID_OUT",
                )
    # Shared borrows, alive only for this call: numpy reads the elements in place.
    arrays = [np.asarray(x) if isinstance(x, readable) else x for x in inputs]
    # where= (any keyword but out=) a tensor is read the same way: handed to numpy
    # as it is, numpy would call back into this function for it without end.
    kw = {k: np.asarray(v) if isinstance(v, readable) else v for k, v in kwargs.items()}
    try:
        return getattr(ufunc, method)(*arrays, **kw)
    except BaseException as exc:
        del arrays, kw  # a traceback must not keep the borrows alive
        if isinstance(exc, PASSED_ON) or not isinstance(exc, NUMPY_REFUSALS):
            raise
        raise numpy_refusal(f"numpy.{ufunc.__name__}", exc) from None
