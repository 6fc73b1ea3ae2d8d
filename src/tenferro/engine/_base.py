"""Shared machinery of the CPU engine: reading operands, pooled outputs, ``out=``.

Every operation family (elementwise, reduction, structural, contraction,
fusion) is a mixin on `EngineBase`; this module holds what they share:

* `Reads`: the operands of one call, as numpy arrays in their logical shape,
  without copying and without creating an alias (engine kernels read
  ``HostBuffer.flat`` directly, see docs/internals.md); each tensor's buffer is
  pinned (`HostBuffer.pin`) until the call ends, so no exclusive borrow or move
  on another thread can be granted while a kernel reads it;
* `EngineBase._output`: an uninitialised pooled buffer for a result, and
  `EngineBase._wrap` to hand it out with the weak link to the pool;
* `begin_out`: validation and the exclusive borrow for an ``out=`` tensor.

INVARIANT (plain host tensors): when ``tensor._st`` is a `HostBuffer`, its
``flat`` holds exactly the tensor's elements, column-major, in its dtype.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import BorrowError, DTypeError, RuntimeStateError, ValidationError
from ..guards import ExclusiveBorrow
from ..layout import shape_size
from ..storage import host as _host
from ..storage.host import HostBuffer
from ..storage.recycler import never_pool
from ..tensor import Tensor, _pooled
from ..view import _ViewBase
from .pool import BufferPool

__all__ = [
    "EngineBase",
    "Reads",
    "backend_error",
    "begin_out",
    "check_out",
    "dtype_mismatch",
    "is_scalar",
]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]


def backend_error(op: str, t: Any = None) -> RuntimeStateError:
    """The error for a tensor whose memory the CPU cannot execute on."""
    placement = None
    try:
        placement = t._st.placement if t is not None else None
    except Exception:
        placement = None
    return RuntimeStateError(
        op,
        "CPU backend received backend buffer; download to host before CPU execution (t.download())",
        kind="BACKEND_BUFFER",
        placement=placement,
    )


def not_a_tensor(op: str, x: Any, what: str = "operand") -> ValidationError:
    return ValidationError(
        op,
        f"{what} must be a tenferro Tensor or TensorView, got {type(x).__name__}; "
        "wrap numpy data with tenferro.from_numpy (adopts) first",
        kind="INVALID_OPERAND",
        operand_type=type(x).__name__,
    )


def dtype_mismatch(op: str, d1: DType, d2: DType) -> ValidationError:
    """The error for two operands whose dtypes differ (there is no implicit promotion)."""
    return DTypeError(
        op,
        f"operand dtypes differ: {d1.name} and {d2.name}; there is no implicit promotion "
        "(convert one of them with eng.convert)",
        kind="DTYPE_MISMATCH",
        dtypes=(d1, d2),
    )


def is_scalar(x: Any) -> bool:
    """A Python (or numpy) number: a weak operand that takes the tensor's dtype."""
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, np.ndarray)


class _PinGroup:
    """Many buffers pinned as one entry of the engine-read registry (`HostBuffer.readers`
    counts a tuple entry once per member): one removal when the call ends, where a
    pin each would cost a scan of the registry each (quadratic in the operands)."""

    __slots__ = ("bufs",)

    def __init__(self, bufs: tuple[HostBuffer, ...]) -> None:
        self.bufs = bufs

    def unpin(self) -> None:
        _host.reading.remove(self.bufs)

    def mark_failed(self) -> None:
        for buf in self.bufs:
            buf.failed_read = True


class Reads:
    """The operands one engine call reads; each tensor's buffer is pinned until it ends.

    Use as ``with Reads() as reads:`` around the whole call (validation, kernel
    and ``out=``): `operand` pins a tensor's buffer *before* checking it for an
    exclusive borrow (see `HostBuffer.pin`), and leaving the block unpins, even
    when the call raises. Views need no pin: a live view is a counted alias, so
    writers and moves are refused while it lives.
    """

    __slots__ = ("bufs", "views")

    def __init__(self) -> None:
        # Every pin taken, in order (a buffer read twice is pinned twice).
        self.bufs: list[HostBuffer | _PinGroup] = []
        # (view, array) of each view operand: the view, and the strided array the
        # kernel reads (for the out= overlap check).
        self.views: list[tuple[Any, Array]] = []

    def __enter__(self) -> Reads:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:
            # The traceback may keep this call's frames, whose locals hold the
            # operands' internal arrays (`HostBuffer.flat`, uncounted): each buffer
            # is pooled at its death only if no such array survives then
            # (`HostBuffer._held_elsewhere`, docs/internals.md "Failure policy"); a
            # refused call whose traceback is gone changes nothing.
            for buf in self.bufs:
                buf.mark_failed()
        self.release()

    def release(self) -> None:
        """Unpin every buffer this call pinned."""
        bufs = self.bufs
        while bufs:
            bufs.pop().unpin()

    def _pin(self, buf: HostBuffer, op: str) -> None:
        buf.pin()
        self.bufs.append(buf)
        # Checked after pinning: a borrow that began before the pin is seen here.
        if buf.exclusive is not None:
            buf.check_shared(op)

    def pin_all(self, bufs: tuple[HostBuffer, ...], op: str) -> None:
        """Pin ``bufs`` (host buffers of the call's tensor operands) together, then check
        each for an exclusive borrow, as `operand` does for one."""
        _host.reading.append(bufs)
        self.bufs.append(_PinGroup(bufs))
        for buf in bufs:
            if buf.exclusive is not None:
                buf.check_shared(op)

    def operand(self, x: Any, op: str) -> tuple[Array, DType, Shape]:
        """``(array, dtype, shape)`` for a tensor or view, in its logical shape.

        Tensors give an F-ordered array over their internal buffer (no copy, no
        alias), pinned until the call ends; views give their strided array (they
        hold the alias themselves).
        """
        if isinstance(x, Tensor):
            st = x._st
            if st.__class__ is HostBuffer:
                self._pin(st, op)
                flat = st.flat
            elif st is None:
                x._raise_moved(op)
            else:
                flat = self._group_flat(x, op)
            shape = x._shape
            arr = flat if len(shape) == 1 else flat.reshape(shape, order="F")
            return arr, x._dtype, shape
        if isinstance(x, _ViewBase):
            arr = x._strided(op)
            self.views.append((x, arr))
            return arr, x._dtype, x._shape
        raise not_a_tensor(op, x)

    def _group_flat(self, t: Tensor, op: str) -> Array:
        """The elements of a group-backed tensor whose memory is plain host memory."""
        st = t._st
        if not getattr(st, "host_addressable", False):
            raise backend_error(op, t)
        buf, offset = t._resolve(op)
        self._pin(buf, op)
        flat = buf.flat
        want = t._dtype.numpy
        if flat.dtype != want:
            flat = flat.view(want)
        n = shape_size(t._shape)
        if offset or flat.shape[0] != n:
            flat = flat[offset : offset + n]
        return flat


def check_out(out: Any, shape: Shape, dtype: DType, op: str) -> None:
    """Validate an ``out=`` tensor before anything is written (ValidationError)."""
    if not isinstance(out, Tensor):
        raise ValidationError(
            op,
            f"out must be a tenferro Tensor (an owner), got {type(out).__name__}",
            kind="INVALID_OUT",
        )
    out._live(op)
    if out._shape != shape or out._dtype is not dtype:
        raise ValidationError(
            op,
            "pass an out tensor of the result's shape and dtype",
            kind="OUT_MISMATCH",
            expected_shape=shape,
            expected_dtype=dtype,
            actual_shape=out._shape,
            actual_dtype=out._dtype,
        )


def begin_out(
    out: Tensor,
    op: str,
    reads: Reads | None = None,
    in_place_ok: bool = False,
) -> tuple[ExclusiveBorrow, Array]:
    """Start the exclusive borrow of a validated ``out=`` tensor.

    ``reads`` holds the operands: an output that is also an input is refused
    (`BorrowError` OUT_ALIASES_INPUT) unless the kernel is elementwise
    (``in_place_ok``), where numpy reads each element before writing it, and
    the call's own pins on it are then no obstacle to the borrow. An output
    that a view operand overlaps is refused the same way.
    """
    st = out._st
    if st.__class__ is not HostBuffer and not getattr(st, "host_addressable", False):
        raise backend_error(op, out)
    buf, offset = (st, 0) if st.__class__ is HostBuffer else out._resolve(op)
    own = 0
    if reads is not None:
        for b in reads.bufs:
            # A pinned group (`Reads.pin_all`) counts each of its buffers (HostBuffer
            # has no __eq__: tuple.count compares by identity).
            hits = 1 if b is buf else b.bufs.count(buf) if isinstance(b, _PinGroup) else 0
            if hits:
                if not in_place_ok:
                    raise BorrowError(
                        op,
                        "out= is also one of the inputs; this operation cannot write over "
                        "its own operands: pass a separate out tensor",
                        kind="OUT_ALIASES_INPUT",
                    )
                own += hits
        if reads.views and buf._root is not None and _a_view_overlaps(reads, buf, offset, out):
            raise BorrowError(
                op,
                "out= overlaps an input; pass a separate out tensor",
                kind="OUT_ALIASES_INPUT",
            )
    return out._begin_out(op, own)


def _a_view_overlaps(reads: Reads, buf: HostBuffer, offset: int, out: Tensor) -> bool:
    """Does a view operand of ``reads`` see memory of ``out`` (at ``offset`` in ``buf``)?

    A function of its own: the root it compares must not outlive the check, or
    the borrow that follows would count it as an alias.
    """
    region = buf.flat.view(out._dtype.numpy)[offset : offset + shape_size(out._shape)]
    for view, arr in reads.views:
        # Views hold the root itself (docs/internals.md), so a view of out's buffer
        # is found by identity; bounds tell whether it meets out's elements.
        if getattr(view, "_base", None) is buf._root and np.may_share_memory(arr, region):
            return True
    return False


class EngineBase:
    """State and output plumbing shared by every operation family."""

    __slots__ = ("__weakref__", "_domain", "_pool", "_recycler", "_threads")

    _pool: BufferPool
    _recycler: Any
    _threads: int | None
    _domain: Any

    def _output(self, dtype: DType, n: int) -> tuple[Array, Array]:
        """``(owner, flat)``: an uninitialised pooled buffer with ``n`` usable elements.

        The caller's kernel must write all ``n`` elements of ``flat``, then hand the
        result out with `_wrap`; if the kernel raises, drop ``owner`` (never give it
        back: see `_run`). The result is the caller's to keep, so the pool's
        kept-result fit applies: never a buffer of twice its size, such as the
        intermediate or scratch the same call just gave back
        (`ReturnLane._best_fit`, storage/_fields.pyx).
        """
        owner = self._pool.acquire(dtype.numpy, n, True)
        return owner, (owner if owner.shape[0] == n else owner[:n])

    def _wrap(self, shape: Shape, dtype: DType, owner: Array, flat: Array) -> Tensor:
        """Hand a fully written pooled buffer out as a tensor that recycles on drop."""
        return _pooled(shape, dtype, owner, flat, self._recycler)

    def _fresh(self, shape: Shape, dtype: DType) -> tuple[Array, Array, Array]:
        """``(owner, flat, nd)`` for a new result: nd is the F-ordered array of ``shape``."""
        owner, flat = self._output(dtype, shape_size(shape))
        nd = flat if len(shape) == 1 else flat.reshape(shape, order="F")
        return owner, flat, nd

    def _run(
        self,
        op: str,
        shape: Shape,
        dtype: DType,
        kernel: Any,
        out: Any = None,
        reads: Reads | None = None,
        in_place_ok: bool = False,
    ) -> Tensor:
        """Run ``kernel(nd)`` into a pooled output (or ``out=``) and return the result.

        ``kernel`` must write every element of the F-ordered array ``nd`` it is
        given (each caller says why at its kernel). A kernel that raises drops its
        pooled buffer instead of giving it back; with ``out=``, the
        exclusive borrow is always ended. ``reads``: the call's operands (for the
        ``out=`` checks), still pinned while the kernel runs.
        """
        if out is None:
            owner, flat, nd = self._fresh(shape, dtype)
            try:
                kernel(nd)
            except BaseException:
                # INVARIANT: a failed kernel's buffer is dropped, never pooled: the
                # traceback keeps the kernel's frames, whose locals hold writable
                # arrays over it (``e.__traceback__...tb_frame.f_locals``). It is
                # freed when the last of them dies.
                self._pool.forget(owner)  # never back: stop counting it live
                del nd, flat, owner
                raise
            return self._wrap(shape, dtype, owner, flat)
        check_out(out, shape, dtype, op)
        borrow, arr = begin_out(out, op, reads, in_place_ok)
        try:
            kernel(arr)
        finally:
            del arr  # our own reference must not look like an escaped alias
            borrow.end()
        result: Tensor = out
        return result

    def _run_staged(
        self,
        op: str,
        shape: Shape,
        dtype: DType,
        kernel: Any,
        out: Tensor,
        reads: Reads,
        in_place_ok: bool = False,
    ) -> Tensor:
        """`_run` into ``out=`` for a kernel that may refuse after writing part of ``nd``.

        The kernel runs into a pooled buffer (given back if it raises) that is
        copied into ``out`` only on success, so a refusal leaves ``out`` as it was.
        """
        staged = self._run(op, shape, dtype, kernel)
        staged_flat = staged._st.flat

        def copy_kernel(nd: Array) -> None:
            # staged holds every element of the result: copyto writes all of nd.
            np.copyto(nd.reshape(-1, order="F"), staged_flat)

        try:
            return self._run(op, shape, dtype, copy_kernel, out, reads, in_place_ok)
        except BaseException:
            # This frame stays in the traceback with `staged_flat` (writable): the
            # staged buffer must never go back to the pool (see `_run`).
            never_pool(staged._st)
            raise
