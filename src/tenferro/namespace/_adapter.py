"""The namespace's one contact with engine, tensor and view internals.

Everything the array API functions need from below goes through here: reading
operands without an alias (the engine's pinned reads), pooled outputs (the
engine's ``run``), views built from the descriptor numpy computes over a
borrowed array, and exclusive writes into tensors and views. A refactor of
those internals changes this module only.

Decision (see docs/namespace.md, "Owners and views"): an owner stays a compact
column-major `Tensor`; anything strided (basic indexing, transposes, reshapes
that need other strides, broadcasts, C-ordered numpy arrays adopted by
`asarray`) is a `TensorView`, which holds the buffer's read root and so is
one counted alias. Both are full array API arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtype import DType, dtype_of_array
from ..engine import CpuEngine, default_engine
from ..engine import cpu as _cpu
from ..engine._base import Reads
from ..errors import BorrowError, ValidationError
from ..guards import ExclusiveBorrow
from ..layout import col_major_strides, shape_size
from ..storage import host as _host
from ..storage.host import HostBuffer
from ..storage.recycler import never_pool
from ..tensor import Tensor, _adopt, _base_chain, _check_adoptable, _pooled
from ..view import TensorView, TensorViewMut, _ViewBase
from ._refusals import NUMPY_REFUSALS, PASSED_ON, numpy_refusal

__all__ = [
    "ARRAY_TYPES",
    "Reads",
    "binary_function",
    "compute",
    "derive_view",
    "descriptor",
    "emit",
    "emit_kernel",
    "engine",
    "is_array",
    "permuted_view",
    "read_all",
    "ufunc_into",
    "unary_function",
    "view_base",
    "view_like",
    "write",
]

Array = np.ndarray[Any, Any]
Shape = tuple[int, ...]

#: The array types of the namespace: owners and (shared or exclusive) views.
ARRAY_TYPES: tuple[type[Tensor], type[_ViewBase]] = (Tensor, _ViewBase)

_new = object.__new__
_BOOL = DType.BOOL
_F64 = DType.F64
_C64 = DType.C64
#: Python ints up to this magnitude convert to float64 exactly.
_EXACT_INT = 2**53
_reading = _host.reading


def is_array(x: Any) -> bool:
    """True for a `Tensor`, `TensorView` or `TensorViewMut`."""
    return isinstance(x, ARRAY_TYPES)


def is_owner(x: Any) -> bool:
    return isinstance(x, Tensor)


def derive_view(x: Any, shape: Shape, strides: Shape, offset: int) -> Any:
    """A view of ``x``'s buffer with the given descriptor (in elements of x's dtype).

    ``x`` is a tensor (borrowed through `as_view`) or a view; the caller has
    checked that every index the descriptor reaches lies inside ``x``.
    """
    v = x.as_view() if isinstance(x, Tensor) else x
    return v._derive(shape, strides, offset)


def permuted_view(x: Any, permute: Callable[[Shape], Shape]) -> Any:
    """The view of ``x`` with its axes reordered by ``permute`` (`layout.permuter` of a
    checked permutation).

    Borrows: a `Tensor` through `as_view` (refused while exclusively borrowed),
    a view as it is; only the descriptor changes.
    """
    if isinstance(x, Tensor):
        v = x.as_view()
        # INVARIANT: `v` was made by this call and nobody else holds it, so its
        # descriptor can be permuted in place (one view object instead of two).
        v._shape = permute(v._shape)
        v._strides = permute(v._strides)
        return v
    return x._derive(permute(x._shape), permute(x._strides), x._offset)


def descriptor(x: Any) -> tuple[Shape, Shape, int]:
    """``(shape, strides, offset)`` of a tensor (compact column-major) or view."""
    if isinstance(x, Tensor):
        x._live("tenferro.__getitem__")
        return x._shape, col_major_strides(x._shape), 0
    return x._shape, x._strides, x._offset


# ---------------------------------------------------------------------- outputs
def emit_kernel(op: str, shape: Shape, dtype: DType, kernel: Callable[[Array], Any]) -> Tensor:
    """Run ``kernel(nd)`` into a pooled output of the default engine; ``nd`` is F-ordered.

    The kernel must write every element of ``nd``; a kernel that raises gives the
    buffer back to the pool.
    """
    return _engine()._run(op, shape, dtype, kernel)


def emit(op: str, result: Array) -> Tensor:
    """A pooled tensor holding the values of a numpy result (computed by the caller).

    The values are written once into the pooled buffer; this is the output of a
    computation, not a copy of a tenferro buffer, so it is not counted.
    """
    res = np.asarray(result)
    dt = dtype_of_array(res, op)

    def kernel(nd: Array) -> None:
        # nd has res's shape: copyto writes every element.
        np.copyto(nd, res, casting="unsafe")

    return _engine()._run(op, tuple(int(d) for d in res.shape), dt, kernel)


def read_all(reads: Reads, xs: tuple[Any, ...], op: str) -> list[Any]:
    """Each array of ``xs`` as a numpy array of its logical values, other items as they are.

    Valid only inside the ``with Reads()`` block: tensors are read through the
    engine's pinned, alias-free path, views through their own strided alias.
    """
    return [reads.operand(x, op)[0] if isinstance(x, ARRAY_TYPES) else x for x in xs]


def engine() -> CpuEngine:
    """The calling thread's default engine (`default_engine`, inlined: ``with eng:``'s, if any)."""
    eng = _cpu._state.current
    return eng if eng is not None else default_engine()


_engine = engine


def _typed(ufunc: Any, exc: BaseException) -> BaseException:
    """What a hot path raises for ``exc``: numpy's refusals typed, anything else as it is."""
    if isinstance(exc, PASSED_ON) or not isinstance(exc, NUMPY_REFUSALS):
        return exc
    return numpy_refusal(f"tenferro.{ufunc.__name__}", exc)


def binary_function(
    ufunc: Any, allowed: tuple[DType, ...], out_bool: bool, general: Callable[[Any, Any], Any]
) -> Callable[..., Any]:
    """A binary elementwise function: the engine's hot path inlined, else ``general``.

    The hot path takes two plain host tensors of one shape and an ``allowed``
    dtype through the same steps as the engine's own binary fast path (pin both,
    check for a writer, take a pooled buffer, one ufunc call); a plain F64 or C64
    tensor with a Python float or int (``x * 2.0``, ``1 - x``) takes the same
    steps with the scalar passed as it is. Anything else (views, other scalars,
    broadcasting, promotion, errors) goes to ``general(x1, x2)``. Like numpy's
    own calls, the hot paths leave floating-point warnings (overflow, division
    by zero) as numpy gives them; the general path silences them.
    """
    if ufunc is np.maximum or ufunc is np.minimum:
        # numpy deprecates a positional out= for these two.
        def call(a: Any, b: Any, out: Any) -> Any:
            return ufunc(a, b, out=out)
    else:
        call = ufunc

    def fn(x1: Any, x2: Any, /) -> Any:
        if x1.__class__ is Tensor and x2.__class__ is Tensor:
            sa = x1._st
            sb = x2._st
            dt = x1._dtype
            if (
                sa.__class__ is HostBuffer
                and sb.__class__ is HostBuffer
                and dt is x2._dtype
                and dt in allowed
            ):
                shape = x1._shape
                if shape == x2._shape:
                    pin = (sa, sb)
                    _reading.append(pin)
                    try:
                        if sa.exclusive is None and sb.exclusive is None:
                            fa = sa.flat
                            n = len(fa)
                            eng = _cpu._state.current
                            if eng is None:
                                eng = default_engine()
                            pool = eng._pool
                            out_dt = _BOOL if out_bool else dt
                            owner = pool.acquire(out_dt.numpy, n)
                            flat = owner if len(owner) == n else owner[:n]
                            try:
                                # Both inputs hold exactly n elements: the ufunc
                                # writes all of flat.
                                call(fa, sb.flat, flat)
                            except BaseException as exc:
                                # Dropped, never pooled: a traceback keeps `owner`.
                                eng._pool.forget(owner)  # never back: stop counting it live
                                del flat, owner
                                raise _typed(ufunc, exc) from None
                            # INVARIANT: the same fields as tensor._pooled, inlined (the
                            # namespace's binary hot path); test_engine_interface checks it.
                            t: Tensor = _new(Tensor)
                            t._shape = shape
                            t._dtype = out_dt
                            t._st = HostBuffer(owner, flat, eng._recycler)
                            t._moved = None
                            return t
                    except BaseException:
                        # A traceback keeps `fa`, an operand's internal array: never
                        # pool the operands' buffers (the engine's hot paths do the same).
                        never_pool(sa)
                        never_pool(sb)
                        raise
                    finally:
                        _reading.remove(pin)
        else:
            c1 = x1.__class__
            c2 = x2.__class__
            if c1 is Tensor and (c2 is float or c2 is int):
                r = scalar(x1, x2, False)
                if r is not None:
                    return r
            elif c2 is Tensor and (c1 is float or c1 is int):
                r = scalar(x2, x1, True)
                if r is not None:
                    return r
        return general(x1, x2)

    def scalar(t: Tensor, value: Any, first: bool) -> Any:
        """``t`` (a plain F64 or C64 tensor) with a Python float or int, or None.

        The standard's result is ``t``'s dtype (a weak scalar), and numpy reads a
        Python float, or an int of at most 2**53, exactly as that dtype: the value
        goes to the ufunc as it is, where `general` would make a 0-d array of it.
        """
        st = t._st
        dt = t._dtype
        if st.__class__ is not HostBuffer or not (dt is _F64 or dt is _C64) or dt not in allowed:
            return None
        if value.__class__ is int and not -_EXACT_INT <= value <= _EXACT_INT:
            return None
        _reading.append(st)
        try:
            if st.exclusive is not None:
                return None  # the general path refuses it
            fa = st.flat
            n = len(fa)
            eng = _cpu._state.current
            if eng is None:
                eng = default_engine()
            out_dt = _BOOL if out_bool else dt
            owner = eng._pool.acquire(out_dt.numpy, n)
            flat = owner if len(owner) == n else owner[:n]
            try:
                # The tensor holds exactly n elements and the scalar broadcasts: the
                # ufunc writes all of flat.
                if first:
                    call(value, fa, flat)
                else:
                    call(fa, value, flat)
            except BaseException as exc:
                eng._pool.forget(owner)  # never back: stop counting it live
                del flat, owner  # dropped, never pooled (see fn)
                raise _typed(ufunc, exc) from None
            return _pooled(t._shape, out_dt, owner, flat, eng._recycler)
        except BaseException:
            never_pool(st)  # a traceback keeps `fa` (see fn)
            raise
        finally:
            _reading.remove(st)

    return fn


def unary_function(
    ufunc: Any, allowed: tuple[DType, ...], general: Callable[[Any], Any]
) -> Callable[..., Any]:
    """A same-dtype unary elementwise function: the engine's hot path inlined, else ``general``.

    The hot path takes one plain host tensor of an ``allowed`` dtype through the
    steps of the engine's unary fast path (pin, check for a writer, a pooled
    buffer, one ufunc call); anything else (views, other dtypes, errors) goes to
    ``general(x)``.
    """

    def fn(x: Any, /) -> Any:
        if x.__class__ is Tensor:
            st = x._st
            dt = x._dtype
            if st.__class__ is HostBuffer and dt in allowed:
                _reading.append(st)
                try:
                    if st.exclusive is None:
                        fa = st.flat
                        n = len(fa)
                        eng = _cpu._state.current
                        if eng is None:
                            eng = default_engine()
                        owner = eng._pool.acquire(fa.dtype, n)
                        flat = owner if len(owner) == n else owner[:n]
                        try:
                            # The input holds exactly n elements: the ufunc writes all
                            # of flat.
                            ufunc(fa, flat)
                        except BaseException:
                            # Dropped, never pooled: a traceback keeps `owner`.
                            eng._pool.forget(owner)  # never back: stop counting it live
                            del flat, owner
                            raise
                        # INVARIANT: the same fields as tensor._pooled, inlined (the
                        # namespace's unary hot path); test_engine_interface checks it.
                        t: Tensor = _new(Tensor)
                        t._shape = x._shape
                        t._dtype = dt
                        t._st = HostBuffer(owner, flat, eng._recycler)
                        t._moved = None
                        return t
                except BaseException:
                    # A traceback keeps `fa`, the operand's internal array: never pool
                    # its buffer (the engine's hot paths do the same).
                    never_pool(st)
                    raise
                finally:
                    _reading.remove(st)
        return general(x)

    return fn


def ufunc_into(op: str, ufunc: Any, args: tuple[Any, ...], shape: Shape, dtype: DType) -> Tensor:
    """``ufunc(*args)`` (arrays read without copying, scalars as given) into a pooled output."""
    with Reads() as reads:
        vals = read_all(reads, args, op)

        def kernel(nd: Array) -> None:
            # The operands broadcast to nd's shape: the ufunc writes all of nd.
            with np.errstate(all="ignore"):
                ufunc(*vals, out=nd, casting="unsafe")

        try:
            return _engine()._run(op, shape, dtype, kernel)
        except PASSED_ON:
            raise
        except NUMPY_REFUSALS as exc:
            raise numpy_refusal(op, exc) from None


def compute_into(
    op: str, shape: Shape, dtype: DType, fn: Callable[..., Any], xs: tuple[Any, ...]
) -> Tensor:
    """``fn(nd, *values)`` writing a pooled output ``nd`` of ``shape`` (F-ordered).

    ``fn`` must write every element of ``nd`` (numpy's reductions with ``out=``
    do); the arrays of ``xs`` are read without copying for the call's duration.
    """
    with Reads() as reads:
        vals = read_all(reads, xs, op)

        def kernel(nd: Array) -> None:
            fn(nd, *vals)

        return _engine()._run(op, shape, dtype, kernel)


def compute(op: str, fn: Callable[..., Any], xs: tuple[Any, ...]) -> Any:
    """``fn(*values)`` with every array of ``xs`` read (no copy) for the call's duration.

    ``fn`` must not keep the arrays it is given: they are valid only during the call.
    """
    with Reads() as reads:
        vals = read_all(reads, xs, op)
        try:
            with np.errstate(all="ignore"):
                return fn(*vals)
        except PASSED_ON:
            raise
        except NUMPY_REFUSALS as exc:
            raise numpy_refusal(op, exc) from None


# ---------------------------------------------------------------------- views
def view_base(x: Any, op: str) -> tuple[Any, Array]:
    """``(view, arr)``: a view of ``x`` and its strided numpy array (a counted alias).

    A `Tensor` is borrowed through `as_view` (which refuses while it is
    exclusively borrowed); views are used as they are.
    """
    v = x.as_view() if isinstance(x, Tensor) else x
    return v, v._strided(op)


def view_like(v: Any, base: Array, res: Array, op: str) -> Any:
    """A view of ``v``'s buffer with the layout of ``res``, a numpy view of ``base``.

    numpy has done the index arithmetic (slicing, transposing, reshaping,
    broadcasting); this reads the resulting shape, strides and start back into
    a descriptor over the same root. Falls back to None when ``res`` is not a
    view of ``base`` (numpy had to copy).
    """
    shape = tuple(int(d) for d in res.shape)
    dt = dtype_of_array(res, op) if res.dtype != base.dtype else v._dtype
    if res.size == 0:
        return v._derive(shape, col_major_strides(shape), v._offset, dt)
    if not np.may_share_memory(res, base):
        return None  # numpy made a new array: not a view
    isz = res.itemsize
    typed = v._typed_root(op)
    if dt is not v._dtype:
        typed = typed.view(res.dtype)
    start = res.__array_interface__["data"][0] - typed.__array_interface__["data"][0]
    if start % isz or any(s % isz for s in res.strides):
        return None
    del typed
    return v._derive(shape, tuple(s // isz for s in res.strides), start // isz, dt)


def as_view_of(x: Any) -> Any:
    """A `TensorView` of a tensor, or a view itself (borrows)."""
    return x.as_view() if isinstance(x, Tensor) else x


def adopt_c_ordered(arr: Array, op: str) -> Any:
    """Adopt a C-contiguous array without copying: a permuted view over an owner.

    The owner is the column-major tensor of the reversed shape over the same
    memory (``arr.T`` is F-contiguous); the caller's array and every ndarray
    under it are frozen, as `from_numpy` freezes an adopted array.
    """
    _check_adoptable(op, arr)
    t = arr.T
    buf = _adopt(t, t.reshape(-1, order="F"))
    frozen: list[Array] = [t]
    for a in (*_base_chain(arr)[0], *buf.frozen):
        if not any(a is f for f in frozen):
            frozen.append(a)
    # INVARIANT: bases after the arrays over them, so release thaws bases first.
    for a in frozen:
        a.flags.writeable = False
    buf.frozen = tuple(frozen)
    owner = Tensor._wrap(tuple(int(d) for d in t.shape), dtype_of_array(arr, op), buf)
    return owner.as_view().transpose_view(tuple(range(arr.ndim - 1, -1, -1)))


def owner_of_fresh(arr: Array) -> Tensor:
    """Wrap a new array that nobody else holds (built here) as a tensor owning it."""
    flat = arr.reshape(-1, order="F")
    return Tensor._wrap(
        tuple(int(d) for d in arr.shape), dtype_of_array(arr, "asarray"), HostBuffer(flat, flat)
    )


# ---------------------------------------------------------------------- exclusive writes
def write(x: Any, op: str, fn: Callable[[Array], None]) -> None:
    """Call ``fn(arr)`` with a writable numpy array of ``x``'s elements, under an exclusive borrow.

    A `Tensor` is borrowed exclusively (refused while any alias, including a
    view of it, is alive). A `TensorView` gives up its own shared alias for the
    write, borrows its buffer exclusively (refused while any *other* alias is
    alive) and takes its alias back afterwards. A `TensorViewMut` writes under
    the borrow it already holds. The array must not outlive ``fn``.
    """
    if isinstance(x, Tensor):
        borrow, out = x._begin_out(op)
        try:
            fn(out)
        finally:
            del out
            borrow.end()
        return
    if isinstance(x, TensorViewMut):
        fn(x._strided(op))
        return
    if not isinstance(x, TensorView):
        raise ValidationError(
            op, f"expected a tenferro array, got {type(x).__name__}", kind="INVALID_OPERAND"
        )
    if 0 in x._strides and shape_size(x._shape) > 1:
        raise BorrowError(
            op,
            "this view repeats elements (a broadcast, stride 0), so writing it is ambiguous; "
            "write the array it was broadcast from, or materialise it first",
            kind="BROADCAST_VIEW",
        )
    src = x._source
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
    own = 1 if x._base is src.read_root() else 0
    borrow = ExclusiveBorrow(src, op, own_aliases=own)
    arr: Any = None
    try:
        wroot = borrow.root(op)
        if wroot.dtype != x._dtype.numpy:
            wroot = wroot.view(x._dtype.numpy)
        isz = wroot.itemsize
        # Handed out: the borrow freezes it when it ends, so an `arr` that a failed
        # `fn` leaves in its traceback can no longer write (the owner path's rule).
        arr = borrow.hand_out(
            np.ndarray(
                x._shape,
                wroot.dtype,
                buffer=wroot,
                offset=x._offset * isz,
                strides=tuple(s * isz for s in x._strides),
            )
        )
        del wroot
        fn(arr)
    finally:
        arr = None
        borrow.end()


def shares_buffer(a: Any, b: Any) -> bool:
    """True when two arrays live in the same host buffer."""
    return _buffer_of(a) is not None and _buffer_of(a) is _buffer_of(b)


def _buffer_of(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x._st
    if isinstance(x, _ViewBase):
        return x._source
    return None


def storage_kind(x: Any) -> str:
    """``"owner"`` or ``"view"`` (for repr)."""
    return "owner" if isinstance(x, Tensor) else "view"


def try_read_for_repr(x: Any) -> Array | None:
    """A read-only array of ``x``'s values for printing, or None when it cannot be read now."""
    try:
        if isinstance(x, Tensor):
            st = x._st
            if st.__class__ is HostBuffer and st.exclusive is not None:
                return None
            return x._read_array("Tensor.__repr__")
        if isinstance(x, TensorViewMut):
            return x._strided("TensorViewMut.__repr__") if x._borrow.active else None
        return x._strided("TensorView.__repr__")  # type: ignore[no-any-return]
    except Exception:
        return None
