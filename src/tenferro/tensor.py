"""`Tensor`: an owned, compact column-major tensor with checked borrows and moves.

A tensor's storage is either a `HostBuffer` (the host branch: one 1-D buffer plus
an optional recycler) or a reference into an `AllocationGroup` (the group branch).
Every public method states its ownership effect: adopts, borrows, moves or copies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import numpy as np

from . import _array_methods, _services
from ._array_methods import ArrayMethods
from .alloc import ALLOCATION_FAILURES, host_empty, out_of_memory
from .borrow import _WriteMemory, as_memoryview
from .copies import NotCopyable, check_copy, check_copy_flag, count_copy
from .dtype import DType, as_dtype, as_numpy_dtype, dtype_of_array
from .errors import (
    DTypeError,
    MovedTensorError,
    ValidationError,
)
from .guards import ExclusiveBorrow, HostReadGuard, HostWriteGuard
from .layout import col_major_strides, normalize_shape, shape_size
from .placement import HOST_PLACEMENT, Placement
from .storage.host import HostBuffer, read_only_refusal, shared_refusal
from .view import TensorView, TensorViewMut

if TYPE_CHECKING:
    from .storage.identity import AllocationDomainId, AllocationId

__all__ = ["Tensor", "from_numpy"]

R = TypeVar("R")
Shape = tuple[int, ...]


class Tensor(ArrayMethods, NotCopyable):
    """An owned tensor: a shape, a dtype and storage that it owns or lives in.

    Build one with `Tensor.from_vec_col_major` (adopts, zero copy), `from_numpy`
    or an engine operation. Read it with `host_data`, `map_read`, `to_numpy` or
    `np.asarray` (borrows, zero copy); write it under `map_write` or
    `as_view_mut` (exclusive borrows). Physical copies are explicit and counted.
    """

    __slots__ = ("__weakref__", "_dtype", "_moved", "_shape", "_st")

    _shape: Shape
    _dtype: DType
    _st: Any
    _moved: str | None

    def __init__(self) -> None:
        raise TypeError(
            "Tensor() cannot be called directly; use Tensor.from_vec_col_major, "
            "tenferro.from_numpy or an engine operation"
        )

    @classmethod
    def _wrap(cls, shape: Shape, dtype: DType, storage: Any) -> Tensor:
        """Internal constructor: no validation (callers have validated)."""
        t = object.__new__(cls)
        t._shape = shape
        t._dtype = dtype
        t._st = storage
        t._moved = None
        return t

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_vec_col_major(
        cls, shape: Sequence[int], data: Any, dtype: DType | Any = None
    ) -> Tensor:
        """Adopt a 1-D numpy array as a column-major tensor, without copying.

        Ownership: **adopts** ``data``. The tensor's buffer address equals the
        array's. The caller's handle is frozen (``data.flags.writeable`` becomes
        False) so it can still be read but can no longer change the tensor behind
        its back; `into_vec_col_major` gives it back writable. A Python sequence is
        also accepted: it is built into a new array once (not adopted).
        """
        op = "Tensor.from_vec_col_major"
        want = as_dtype(dtype, op) if dtype is not None else None
        if isinstance(data, np.ndarray):
            dt = dtype_of_array(data, op)
            if want is not None and want is not dt:
                raise DTypeError(
                    op,
                    f"data has dtype {dt.name} but dtype={want.name} was requested; adopting "
                    f"cannot convert: pass data.astype({want.numpy.name!r}) (a copy) instead",
                    kind="DTYPE_MISMATCH",
                    expected=want,
                    actual=dt,
                )
            if data.ndim != 1:
                raise ValidationError(
                    op,
                    "use tenferro.from_numpy for n-D arrays",
                    kind="NOT_1D",
                    data_shape=data.shape,
                )
            sh = normalize_shape(shape, op, dt.itemsize)
            _check_length(op, sh, data.shape[0])
            _check_adoptable(op, data)
            return cls._wrap(sh, dt, _adopt(data, data))
        arr, copied = _build_from_sequence(op, data, want)
        if arr.ndim != 1:
            raise ValidationError(
                op,
                "flatten it (column-major) or use tenferro.from_numpy(..., copy=True)",
                kind="NOT_1D",
                data_shape=arr.shape,
            )
        dt = dtype_of_array(arr, op)
        sh = normalize_shape(shape, op, dt.itemsize)
        _check_length(op, sh, arr.shape[0])
        if copied:
            count_copy(copied)  # the array-like's copy, counted now that the call succeeded
        return cls._wrap(sh, dt, HostBuffer(arr, arr))

    @classmethod
    def from_vec_row_major(
        cls, shape: Sequence[int], data: Any, dtype: DType | Any = None
    ) -> Tensor:
        """Build a column-major tensor from row-major (C-order) data.

        Ownership: **copies** (a named copy, counted): the elements are reordered
        into a new buffer. ``data`` is left untouched and writable.
        """
        op = "Tensor.from_vec_row_major"
        want = as_dtype(dtype, op) if dtype is not None else None
        arr, copied = (
            (data, 0) if isinstance(data, np.ndarray) else _build_from_sequence(op, data, want)
        )
        dt = dtype_of_array(arr, op)
        if want is not None and want is not dt:
            raise DTypeError(
                op,
                f"data has dtype {dt.name} but dtype={want.name} was requested",
                kind="DTYPE_MISMATCH",
                expected=want,
                actual=dt,
            )
        if arr.ndim != 1:
            raise ValidationError(
                op,
                "pass arr.reshape(-1) (row-major order)",
                kind="NOT_1D",
                data_shape=arr.shape,
            )
        sh = normalize_shape(shape, op, dt.itemsize)
        _check_length(op, sh, arr.shape[0])
        check_copy(op, arr.shape[0] * dt.itemsize)
        t = _col_major_copy(sh, dt, arr.reshape(sh), op)
        count_copy(arr.shape[0] * dt.itemsize)  # once made: a failed allocation copies nothing
        if copied:
            count_copy(copied)
        return t

    # ------------------------------------------------------------------ state checks
    def _live(self, op: str) -> Any:
        st = self._st
        if st is None:
            self._raise_moved(op)
        return st

    def _raise_moved(self, op: str) -> NoReturn:
        raise MovedTensorError(
            op,
            f"this tensor was moved by {self._moved}; use the value that operation returned",
            moved_by=self._moved,
        )

    def _move(self, op: str) -> Any:
        """Mark the tensor moved by ``op``; returns its former storage."""
        st = self._live(op)
        self._st = None
        self._moved = op
        return st

    def _resolve(self, op: str, mapped: bool = False) -> tuple[HostBuffer, int]:
        """The host buffer holding this tensor's elements, and the element offset in it.

        ``mapped=False`` is host_data semantics (refuse memory that is not plain host);
        ``mapped=True`` lets a host-mappable provider map it.
        """
        st = self._st
        if st.__class__ is HostBuffer:
            return st, 0
        if st is None:
            self._raise_moved(op)
        buf, offset = st.host_buffer(op, mapped)
        return buf, offset

    @property
    def is_moved(self) -> bool:
        """True once an operation has moved this tensor."""
        return self._st is None

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> Shape:
        # `_live`'s check inlined: quimb and autoray read these per call.
        if self._st is None:
            self._raise_moved("Tensor.shape")
        return self._shape

    @property
    def dtype(self) -> DType:
        # `_live`'s check inlined: quimb and autoray read these per call.
        if self._st is None:
            self._raise_moved("Tensor.dtype")
        return self._dtype

    @property
    def ndim(self) -> int:
        # `_live`'s check inlined: quimb and autoray read these per call.
        if self._st is None:
            self._raise_moved("Tensor.ndim")
        return len(self._shape)

    @property
    def size(self) -> int:
        # `_live`'s check inlined: quimb and autoray read these per call.
        if self._st is None:
            self._raise_moved("Tensor.size")
        return shape_size(self._shape)

    @property
    def nbytes(self) -> int:
        self._live("Tensor.nbytes")
        return shape_size(self._shape) * self._dtype.itemsize

    @property
    def strides(self) -> Shape:
        """Compact column-major strides, in elements."""
        self._live("Tensor.strides")
        return col_major_strides(self._shape)

    @property
    def placement(self) -> Placement:
        st = self._live("Tensor.placement")
        if st.__class__ is HostBuffer:
            return HOST_PLACEMENT
        placement: Placement = st.placement
        return placement

    @property
    def allocation_domain(self) -> AllocationDomainId | None:
        """The allocation domain, or None for plain host tensors (no identity)."""
        st = self._live("Tensor.allocation_domain")
        if st.__class__ is HostBuffer:
            return None
        return st.allocation_domain  # type: ignore[no-any-return]

    @property
    def allocation_id(self) -> AllocationId | None:
        """The allocation id within its domain, or None for plain host tensors."""
        st = self._live("Tensor.allocation_id")
        if st.__class__ is HostBuffer:
            return None
        return st.allocation_id  # type: ignore[no-any-return]

    @property
    def is_group_backed(self) -> bool:
        st = self._live("Tensor.is_group_backed")
        return st.__class__ is not HostBuffer

    # ------------------------------------------------------------------ shared borrows
    def _read_flat(self, op: str, mapped: bool = False) -> np.ndarray[Any, Any]:
        buf, offset = self._resolve(op, mapped)
        if buf.exclusive is not None:
            buf.check_shared(op)
        return self._alias_in(buf, offset, op)

    def _alias_in(self, buf: HostBuffer, offset: int, op: str) -> np.ndarray[Any, Any]:
        flat = buf.read_flat(self._dtype.numpy, offset, shape_size(self._shape))
        # INVARIANT: checked again *after* the alias exists (see begin_exclusive):
        # an exclusive borrow that began in between either counted it or is seen here.
        holder = buf.exclusive
        if holder is not None:
            del flat
            raise shared_refusal(op, holder)
        return flat

    def _copy_flat(self, op: str, mapped: bool = False) -> np.ndarray[Any, Any]:
        """A new writable 1-D copy of the elements (a named copy, recorded as ``op``).

        The copy is recorded (and refused inside `forbid_copies`) before any alias
        of the buffer exists, so a refusal's traceback cannot keep one alive.
        """
        buf, offset = self._resolve(op, mapped)
        if buf.exclusive is not None:
            buf.check_shared(op)
        check_copy(op, self.nbytes)
        flat = host_empty(op, shape_size(self._shape), self._dtype.numpy)
        np.copyto(flat, self._alias_in(buf, offset, op))
        count_copy(self.nbytes)  # once made: a refused borrow copies nothing
        return flat

    def _read_array(self, op: str, mapped: bool = False) -> np.ndarray[Any, Any]:
        flat = self._read_flat(op, mapped)
        shape = self._shape
        return flat if len(shape) == 1 else flat.reshape(shape, order="F")

    def host_data(self) -> np.ndarray[Any, Any]:
        """A read-only 1-D view of the elements in column-major order.

        Ownership: **borrows** (zero copy; a live alias). Refuses storage that is
        not plain host memory with `HostAccessError`: download explicitly first.
        """
        return self._read_flat("Tensor.host_data")

    def map_read(self) -> HostReadGuard:
        """A shared-borrow guard whose ``.array`` is the read-only column-major array.

        Ownership: **borrows**. Host-mappable provider memory is mapped; memory that
        cannot be mapped raises `HostAccessError` (kind UNSUPPORTED).
        """
        return HostReadGuard(self._read_array("Tensor.map_read", mapped=True))

    def with_host_read(self, fn: Callable[[np.ndarray[Any, Any]], R]) -> R:
        """Call ``fn`` with a read-only 1-D view of the elements and return its result.

        Ownership: **borrows** for the duration of the call; maps provider memory
        when the provider can.
        """
        if not callable(fn):
            raise ValidationError(
                "Tensor.with_host_read",
                f"fn must be a callable taking the array, got {type(fn).__name__}",
                kind="INVALID_ARGUMENT",
            )
        return fn(self._read_flat("Tensor.with_host_read", mapped=True))

    def to_numpy(self, copy: bool = False) -> np.ndarray[Any, Any]:
        """The elements as a column-major numpy array.

        Ownership: **borrows** (read-only, zero copy) by default; ``copy=True`` is a
        named copy into a new writable array.
        """
        check_copy_flag("Tensor.to_numpy", copy)
        if copy:
            flat = self._copy_flat("Tensor.to_numpy(copy=True)")
            return flat if len(self._shape) == 1 else flat.reshape(self._shape, order="F")
        return self._read_array("Tensor.to_numpy")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        op = "Tensor.__array__"
        self._live(op)
        check_copy_flag(op, copy, allow_none=True)
        # Decide (and raise) before borrowing: a traceback would keep the alias alive.
        if dtype is not None:
            dtype = as_numpy_dtype(dtype, op)
        convert = dtype is not None and dtype != self._dtype.numpy
        if convert and copy is False:
            raise ValidationError(
                op,
                f"converting {self._dtype.name} to {dtype} needs a copy but "
                "copy=False was given; pass copy=None or convert with the engine",
                kind="COPY_REQUIRED",
            )
        if convert:
            nbytes = shape_size(self._shape) * dtype.itemsize
            cop = f"{op}(dtype={dtype})"
            # Counted once made: a cast numpy refuses copies nothing.
            check_copy(cop, nbytes)
            try:
                converted = self._read_array(op).astype(dtype, order="F")
            except (TypeError, ValueError) as exc:
                raise DTypeError(
                    op,
                    f"numpy cannot convert {self._dtype.name} to {dtype} ({exc}); convert "
                    "with the engine (eng.convert / eng.cast) instead",
                    kind="UNSUPPORTED_DTYPE",
                    dtype=dtype,
                ) from None
            except ALLOCATION_FAILURES as exc:
                raise out_of_memory(op, shape_size(self._shape), dtype, exc) from None
            count_copy(nbytes)
            return converted
        if copy:
            return self._copy_flat(f"{op}(copy=True)").reshape(self._shape, order="F")
        return self._read_array(op)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export as a DLPack capsule: a read-only shared borrow (versioned, DLPack >= 1.0).

        Ownership: **borrows** (the capsule is a live alias) or, with ``copy=True``,
        **copies** into a buffer the consumer owns. See docs/interop.md.
        """
        return _services.export_dlpack(self, None, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return _services.dlpack_device(self)

    def as_view(self) -> TensorView:
        """A strided read-only view sharing the buffer. Ownership: **borrows**."""
        op = "Tensor.as_view"
        st = self._st
        # A plain host tensor is its own buffer at offset 0 (`_resolve`, inlined: views
        # are made on the per-call path of indexing and transposes).
        buf, offset = (st, 0) if st.__class__ is HostBuffer else self._resolve(op)
        if buf.exclusive is not None:
            buf.check_shared(op)
        root = buf.read_root()
        # The view holds the root itself (a dtype reinterpretation is applied when
        # arrays are made), so every live view is exactly one counted alias.
        view = TensorView._make(
            root, self._dtype, self._shape, col_major_strides(self._shape), offset, st
        )
        holder = buf.exclusive
        if holder is not None:
            del view
            raise shared_refusal(op, holder)
        return view

    # ------------------------------------------------------------------ exclusive borrows
    def map_write(self) -> HostWriteGuard:
        """An exclusive borrow; ``.array`` is writable and column-major until it ends.

        Ownership: **borrows exclusively**. Raises `BorrowError` while any alias of
        the buffer is alive. Use as ``with t.map_write() as w: w.array[...] = ...``;
        on exit every array handed out becomes read-only.
        """
        op = "Tensor.map_write"
        st = self._live(op)
        if st.__class__ is not HostBuffer and getattr(st, "read_only", False):
            # An attached tensor may share its owner's HostBuffer (same process),
            # whose memory is writable: the refusal is the tensor's, not the buffer's.
            raise read_only_refusal(op)
        borrow, arr = self._begin_out(op, mapped=True)
        return HostWriteGuard(borrow, arr)

    def as_view_mut(self) -> TensorViewMut:
        """An exclusive, writable view; use as ``with t.as_view_mut() as mv: ...``.

        Ownership: **borrows exclusively** until the block ends.
        """
        op = "Tensor.as_view_mut"
        buf, offset = self._resolve(op)
        borrow = ExclusiveBorrow(buf, op)
        return TensorViewMut._make_root(
            borrow, self._dtype, self._shape, col_major_strides(self._shape), offset, self._st
        )

    def _begin_out(
        self, op: str, own_pins: int = 0, mapped: bool = False
    ) -> tuple[ExclusiveBorrow, np.ndarray[Any, Any]]:
        """Start an exclusive borrow for an engine ``out=`` write (or `map_write`).

        Returns the borrow (end it when done) and the writable column-major array.
        ``own_pins``: the engine operation's own reads of this buffer (in place).
        """
        buf, offset = self._resolve(op, mapped)
        borrow = ExclusiveBorrow(buf, op, own_pins)
        root = borrow.root(op)
        if root.dtype != self._dtype.numpy:
            root = root.view(self._dtype.numpy)
        n = shape_size(self._shape)
        flat = root[offset : offset + n]
        arr = flat if len(self._shape) == 1 else flat.reshape(self._shape, order="F")
        # Registered so that the engine's array is frozen if it outlives the write.
        return borrow, borrow.hand_out(arr)

    # ------------------------------------------------------------------ moves and copies
    def into_vec_col_major(self) -> tuple[Shape, np.ndarray[Any, Any]]:
        """Give the buffer back: ``(shape, ndarray)`` with the very same memory, writable.

        Ownership: **moves** the tensor (any later use raises `MovedTensorError`).
        The pool link is cleared: the buffer is now the caller's and never returns
        to a pool. Refused with `BorrowError` while an alias is alive.
        """
        op = "Tensor.into_vec_col_major"
        st = self._live(op)
        if st.__class__ is not HostBuffer:
            flat = _services.group_into_vec(self, op)
            return self._shape, flat
        # The buffer leaves tenferro for good: claim it so that a reader on another
        # thread that picked it up just before cannot read it after the move.
        st.begin_move(op)
        out = _release_host_buffer(st)
        self._move(op)
        return self._shape, out

    def duplicate(self) -> Tensor:
        """A new tensor with its own buffer and the same placement.

        Ownership: **copies** (a named copy, counted).
        """
        op = "Tensor.duplicate"
        st = self._live(op)
        if st.__class__ is not HostBuffer and not st.host_addressable:
            return st.duplicate(self, op)  # type: ignore[no-any-return]
        flat = self._copy_flat(op)
        return Tensor._wrap(self._shape, self._dtype, HostBuffer(flat, flat))

    def download(self) -> Tensor:
        """A plain host tensor with a copy of the elements, mapped from any placement.

        Ownership: **copies** (a named copy, counted). The only way to read memory
        that `host_data` refuses.
        """
        op = "Tensor.download"
        flat = self._copy_flat(op, mapped=True)
        return Tensor._wrap(self._shape, self._dtype, HostBuffer(flat, flat))

    def promote(self) -> Tensor:
        """Move this tensor into a one-entry allocation group (no element copy).

        Ownership: **moves**. An engine output keeps its pool link.
        """
        return _services.promote(self)

    def into_host(self) -> Tensor:
        """Narrow to a plain host tensor if the storage allows it.

        Ownership: **moves** on success. A group-backed tensor raises
        `ReinterpretError` and stays usable.
        """
        op = "Tensor.into_host"
        st = self._live(op)
        if st.__class__ is HostBuffer:
            moved = self._move(op)
            return Tensor._wrap(self._shape, self._dtype, moved)
        return _services.group_into_host(self, op)

    def share_handle(self) -> Any:
        """A small picklable handle to a shared-memory tensor (see `SharedMemoryDomain`)."""
        return _services.share_handle(self)

    # ------------------------------------------------------------------ python protocol
    def __repr__(self) -> str:
        """The values in their shape (row-major display, like numpy), dtype and ownership."""
        if self._st is None:
            return f"Tensor(<moved by {self._moved}>)"
        text = _array_methods.array_repr(self)
        st = self._st
        if st.__class__ is not HostBuffer:
            text = (
                f"{text[:-1]}, placement={st.placement}, "
                f"allocation_domain={st.allocation_domain}, allocation_id={st.allocation_id})"
            )
        return text

    def __len__(self) -> int:
        self._live("Tensor.__len__")
        if not self._shape:
            raise TypeError("len() of a rank-0 tensor")
        return self._shape[0]

    # Operators (`+`, `==`, `x[i]`, ...) come from `ArrayMethods`: they run the
    # array API namespace on the current default engine (`with eng:` switches it).
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's operators with a tensor operand (`np.float64(2) * t`, `ndarray + t`)
        run on the default engine like the tensor's own; other ufuncs read it through
        a borrow (see `tenferro.engine.ufuncs`). A numpy operand next to the tensor
        (``ndarray + t``) runs the namespace's function instead (a tenferro result)."""
        res = _services.mixed_ufunc(ufunc, method, inputs, kwargs)
        if res is not NotImplemented:
            return res
        return _services.array_ufunc(ufunc, method, inputs, kwargs)


# ---------------------------------------------------------------------- helpers
def _check_length(op: str, shape: Shape, length: int) -> None:
    need = shape_size(shape)
    if need != length:
        raise ValidationError(
            op,
            f"shape {shape} needs {need} elements but data has {length}; pass a shape "
            f"whose product is {length}, or data of length {need}",
            kind="LENGTH_MISMATCH",
            shape=shape,
            expected=need,
            actual=length,
        )


def _base_chain(data: np.ndarray[Any, Any]) -> tuple[list[np.ndarray[Any, Any]], object]:
    """``data`` and the ndarrays under it (inner first), and the object ending the chain.

    These are the arrays that can see ``data``'s memory and that tenferro can freeze.
    The chain ends at None (an array owning its memory) or at an object that is not
    an ndarray (bytes, bytearray, mmap, memoryview, a DLPack capsule, an
    ``__array_interface__`` holder): that object, and anything else built on it,
    is out of tenferro's reach (see "What is tracked" in docs/storage.md).
    """
    chain = [data]
    base = data.base
    while isinstance(base, np.ndarray):
        chain.append(base)
        base = base.base
    return chain, base


def _unadoptable(data: np.ndarray[Any, Any]) -> tuple[str, str] | None:
    """``(kind, why)`` when adopting ``data`` would share memory someone else owns."""
    chain, end = _base_chain(data)
    if isinstance(end, _WriteMemory):
        return (
            "TENSOR_MEMORY",
            "data was handed out by an exclusive borrow (map_write, as_view_mut), so its "
            "memory belongs to that tensor",
        )
    for i, arr in enumerate(chain):
        if not arr.flags.writeable:
            if i == 0:
                return "READ_ONLY", "data is read-only (perhaps already adopted by another tensor)"
            return (
                "READ_ONLY",
                f"data is a view of a read-only array of shape {arr.shape} (perhaps adopted "
                "by another tensor through another view)",
            )
    return None


def _check_adoptable(op: str, data: np.ndarray[Any, Any]) -> None:
    """Refuse ``data`` before anything is frozen: a refused adoption changes nothing."""
    refusal = _unadoptable(data)
    if refusal is not None:
        kind, why = refusal
        raise ValidationError(
            op,
            f"{why}; adopting it would share memory tenferro cannot own; pass a writable "
            "array that no tensor holds, or use tenferro.from_numpy(arr, copy=True) for a "
            "named copy",
            kind=kind,
        )
    if not (data.flags.f_contiguous or data.flags.c_contiguous):
        raise ValidationError(
            op,
            f"data is not contiguous (strides {data.strides}); pass np.ascontiguousarray(data) "
            "(a copy) or use from_numpy(arr, copy=True)",
            kind="NOT_CONTIGUOUS",
        )


def _adopt(
    data: np.ndarray[Any, Any],
    flat_view: np.ndarray[Any, Any],
    origin: np.ndarray[Any, Any] | None = None,
) -> HostBuffer:
    """Adopt ``data`` (whose elements ``flat_view`` lists column-major): zero copy.

    Freezes ``data`` and every ndarray base under it, so that neither they nor
    views taken of them later can write the memory (and a later adoption of an
    overlapping view is refused as read-only). ``origin`` is the caller's handle
    when it is another array over the same memory (a DLPack producer); its chain
    is frozen too, and it is what `into_vec_col_major` gives back. The buffer
    records the frozen arrays (``frozen``) so that release thaws exactly those.
    Callers refuse first (`_unadoptable`), so a refused adoption freezes nothing.
    """
    # INVARIANT: the writable array is made before freezing `data`, and is built on
    # a memoryview so that tenferro's own views never collapse onto `data`.
    owner = np.frombuffer(as_memoryview(flat_view), dtype=flat_view.dtype)
    frozen = _base_chain(data)[0]
    if origin is None:
        origin = data
    else:
        frozen += [a for a in _base_chain(origin)[0] if not any(a is f for f in frozen)]
    for arr in frozen:
        arr.flags.writeable = False
    buf = HostBuffer(owner, owner, None, origin)
    buf.frozen = tuple(frozen)
    return buf


def _is_array_like(data: Any) -> bool:
    """True for objects whose elements already sit in a buffer (so building is a copy)."""
    if hasattr(data, "__array__") or hasattr(data, "__array_interface__"):
        return True
    try:
        memoryview(data).release()
    except TypeError:
        return False
    return True


def _build_from_sequence(
    op: str, data: Any, want: DType | None, count_copy: bool = True
) -> tuple[np.ndarray[Any, Any], int]:
    """A new array from a Python sequence (a build) or an array-like (a named copy).

    Building from numbers is not a copy: no buffer existed. Copying the buffer of
    an array-like (``array.array``, a memoryview, another library's tensor) is a
    physical copy, checked here as ``"<op>(array-like)"`` (refused inside
    `forbid_copies`) unless the caller records its own (``count_copy=False``).
    Returns the array and the bytes of that copy, which the caller counts
    (`count_copy`) once its whole call succeeded: a refused call counts nothing.
    """
    copied = 0
    if isinstance(data, (str, bytes)) or not hasattr(data, "__len__"):
        raise ValidationError(
            op,
            f"data must be a numpy array or a sequence of numbers, got {type(data).__name__}",
            kind="INVALID_DATA",
        )
    try:
        if count_copy and _is_array_like(data):
            src = np.asarray(data)
            itemsize = want.itemsize if want is not None else src.dtype.itemsize
            copied = src.size * itemsize
            check_copy(f"{op}(array-like)", copied)
            data = src
        arr = np.array(data)
        if want is not None and arr.dtype != want.numpy:
            if arr.dtype.kind in "bfc" or (arr.dtype.kind in "iu" and want.numpy.kind not in "iu"):
                arr = _cast_exactly(op, arr, want)
            else:  # ints into ints (or beyond int64): numpy range-checks Python ints
                arr = np.array(data, dtype=want.numpy)
    except ValidationError:
        raise  # a lossy value, named by _cast_exactly (a ValidationError is a ValueError)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValidationError(
            op,
            f"data cannot be read as numbers ({exc}); pass a flat sequence of numbers "
            "that fit the dtype",
            kind="INVALID_DATA",
        ) from None
    if arr.dtype.kind in "OUSV":
        raise ValidationError(
            op,
            f"data holds {arr.dtype} values, not numbers; pass ints, floats, bools or "
            "complex numbers",
            kind="INVALID_DATA",
        )
    return arr, copied


def _cast_exactly(op: str, arr: np.ndarray[Any, Any], want: DType) -> np.ndarray[Any, Any]:
    """``arr`` cast to ``want``, refusing (as `CpuEngine.convert` does) any value it changes.

    Float-to-float rounding is allowed; overflow, a dropped imaginary part, a
    truncated fraction or an out-of-range integer are LOSSY_CONVERSION.
    """
    target = want.numpy
    src = arr
    bad = np.zeros(arr.shape, dtype=bool)
    if src.dtype.kind == "c" and target.kind != "c":
        bad |= src.imag != 0
        src = src.real
    with np.errstate(all="ignore"):
        out = src.astype(target)
        if src.dtype.kind in "fc" and target.kind in "fc":
            bad |= np.isfinite(src) & ~np.isfinite(out)
        else:
            # A round trip that gives the value back lost nothing (NaN never does).
            bad |= out.astype(src.dtype) != src
    if bad.any():
        pos = int(np.argmax(bad))
        raise ValidationError(
            op,
            "pass values of that dtype, or build without dtype= and use eng.cast for an "
            "explicitly lossy conversion",
            kind="LOSSY_CONVERSION",
            index=pos,
            value=arr[pos].item(),
            dtype=want,
        )
    return out


def _col_major_copy(
    shape: Shape, dt: DType, src: np.ndarray[Any, Any], op: str = "Tensor (copy)"
) -> Tensor:
    """A new host tensor with ``src``'s elements (of shape ``shape``) laid out column-major.

    The caller has recorded the copy (`record_copy`) under its own name.
    """
    flat = host_empty(op, shape_size(shape), dt.numpy)
    flat.reshape(shape, order="F")[...] = src
    return Tensor._wrap(shape, dt, HostBuffer(flat, flat))


def _release_host_buffer(buf: HostBuffer) -> np.ndarray[Any, Any]:
    """Hand a host buffer's memory to the caller: writable, no pool link.

    An adopted buffer gives back the caller's own array after thawing exactly the
    arrays adoption froze, outermost base first (numpy makes a view writable only
    while a base under it is). When the caller's array cannot be thawed (an array
    DLPack built over a producer's capsule), tenferro's writable array is returned.
    """
    buf.detach_recycler()
    origin = buf.origin
    if origin is None:
        return buf.flat
    for arr in reversed(getattr(buf, "frozen", (origin,))):
        # numpy refuses to thaw an array over a capsule or another foreign buffer.
        with contextlib.suppress(ValueError):
            arr.flags.writeable = True
    if not origin.flags.writeable:
        return buf.flat
    buf.origin = None
    buf.frozen = ()
    return origin if origin.ndim == 1 else origin.reshape(-1, order="F")


def from_numpy(arr: Any, copy: bool = False) -> Tensor:
    """A tensor from a numpy array of any rank.

    Ownership: with ``copy=False`` **adopts** an F-contiguous (column-major)
    writable array without copying and freezes the caller's handle; any other
    array raises `ValidationError` saying to pass ``copy=True``. ``copy=True`` is
    a named copy (counted) and leaves ``arr`` untouched.
    """
    op = "tenferro.from_numpy"
    check_copy_flag(op, copy)
    if not isinstance(arr, np.ndarray):
        if not copy:
            raise ValidationError(
                op,
                f"expected a numpy array, got {type(arr).__name__}; pass copy=True to "
                "build a tensor from it (a named copy)",
                kind="INVALID_DATA",
            )
        arr, _ = _build_from_sequence(op, arr, None, count_copy=False)
    dt = dtype_of_array(arr, op)
    shape = tuple(int(d) for d in arr.shape)
    if copy:
        check_copy(op, arr.nbytes)
        t = _col_major_copy(shape, dt, arr, op)
        count_copy(arr.nbytes)  # once made: a failed allocation copies nothing
        return t
    if not arr.flags.f_contiguous:
        raise ValidationError(
            op,
            f"array of shape {arr.shape} is not F-contiguous (column-major); adopting it "
            "would need a copy: pass copy=True (a named copy) or np.asfortranarray(arr)",
            kind="NOT_F_CONTIGUOUS",
        )
    _check_adoptable(op, arr)
    return Tensor._wrap(shape, dt, _adopt(arr, arr.reshape(-1, order="F")))


_new = object.__new__


def _pooled(
    shape: Shape,
    dtype: DType,
    owner: np.ndarray[Any, Any],
    flat: np.ndarray[Any, Any],
    recycler: Any,
) -> Tensor:
    """The one constructor for engine outputs: a tensor over a fully written pooled buffer.

    ``owner`` is the pool's allocation, ``flat`` its first ``shape_size(shape)``
    elements (written by the kernel), ``recycler`` a weak reference to the pool
    (`storage.recycler.Recycler`) that gets ``owner`` back when the tensor dies.
    No validation: the engine has checked shape and dtype. Part of the engine's
    interface to `Tensor` (see "The engine's view of Tensor" in docs/internals.md).
    """
    # The slots are set here rather than through `Tensor._wrap`: this runs once per
    # engine output, and a classmethod call costs as much as a small add's ufunc.
    t: Tensor = _new(Tensor)
    t._shape = shape
    t._dtype = dtype
    t._st = HostBuffer(owner, flat, recycler)
    t._moved = None
    return t


def _host_tensor(shape: Shape, dtype: DType, buf: HostBuffer) -> Tensor:
    """A plain host tensor over ``buf`` (no validation): the views' constructor."""
    return Tensor._wrap(shape, dtype, buf)


_services.register_host_tensor(Tensor, _host_tensor)
