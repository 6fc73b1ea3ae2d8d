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

from collections.abc import Callable, Container
from typing import Any

import numpy as np

from ..dtype import DType, dtype_of_array
from ..engine import CpuEngine
from ..engine import interface as _interface
from ..engine._base import Reads
from ..errors import ValidationError
from ..layout import col_major_strides
from ..storage.host import HostBuffer
from ..tensor import Tensor, _adopt, _base_chain, _check_adoptable
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
#: What a namespace function computes: a pooled owner, or (memory order follows the
#: data) the C-ordered reversed view of one.
Result = Tensor | TensorView

#: The array types of the namespace: owners and (shared or exclusive) views.
ARRAY_TYPES: tuple[type[Tensor], type[_ViewBase]] = (Tensor, _ViewBase)

_new = object.__new__


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
        shape = x._shape
        return _interface.view_of(x, permute(shape), permute(col_major_strides(shape)))
    return x._derive(permute(x._shape), permute(x._strides), x._offset)


def descriptor(x: Any) -> tuple[Shape, Shape, int]:
    """``(shape, strides, offset)`` of a tensor (compact column-major) or view."""
    if isinstance(x, Tensor):
        x._live("tenferro.__getitem__")
        return x._shape, col_major_strides(x._shape), 0
    return x._shape, x._strides, x._offset


# ---------------------------------------------------------------------- memory order
# The rule (docs/namespace.md, "Memory order follows the data"): owners are compact
# column-major; a C-ordered array is the axis-reversed view of a column-major
# owner. A namespace result is produced in its operands' memory order (numpy's
# order='K'), so C-ordered data stays C-ordered without a transposing copy.


def mirror(x: Any) -> Tensor | None:
    """The column-major owner a C-ordered view is the reversed view of, or None.

    ``x`` must be a `TensorView` that covers its whole host buffer in compact
    row-major order (`engine.interface.c_source`: what `asarray` makes of a
    C-contiguous numpy array, and what every C-ordered namespace result is). The
    tensor returned shares the view's buffer and is an *operand only*: it is
    never handed out, so it moves nothing and owns nothing (it has no
    ``__del__``; the buffer's own lifetime is the view's). Engine calls on it pin
    and check the buffer as for any tensor.
    """
    src = _c_source(x)
    if src is None:
        return None
    # A fresh result view takes its root now: the operand may be borrowed into views
    # (an engine call's own), and those must never be the buffer's only counted alias
    # while this view, which sees the same memory, lives.
    x._root("mirror")
    return Tensor._wrap(x._shape[::-1], x._dtype, src)


unmirror = _interface.c_view


def reversed_operand(x: Any) -> Any:
    """``x`` with its axes reversed, for an engine call (no copy): the owner of a
    C-ordered view (`mirror`) where there is one, else the reversed view."""
    m = mirror(x) if x.__class__ is TensorView else None
    if m is not None:
        return m
    v = x.as_view() if x.__class__ is Tensor else x
    return v._derive(v._shape[::-1], v._strides[::-1], v._offset)


#: Does ``x`` (any operand) lay its axes out in row-major order (numpy's 'K')? True for
#: a view of rank >= 2 whose first non-unit axis has a larger stride than its last.
prefers_c = _interface.prefers_c


run_in_order = _interface.output


# ---------------------------------------------------------------------- outputs
def emit_kernel(op: str, shape: Shape, dtype: DType, kernel: Callable[[Array], Any]) -> Tensor:
    """Run ``kernel(nd)`` into a pooled output of the default engine; ``nd`` is F-ordered.

    The kernel must write every element of ``nd``; a kernel that raises drops the
    buffer, which is never pooled (`EngineBase._run` says why).
    """
    return _interface.run(op, shape, dtype, kernel)


def emit(op: str, result: Array, follow_order: bool = True) -> Result:
    """A pooled tensor holding the values of a numpy result (computed by the caller).

    A C-ordered result of rank >= 2 gives the C-ordered view of a column-major
    owner (`run_in_order`), unless ``follow_order`` is False (data that has no
    memory order of its own, such as nested Python lists, becomes an owner).

    The values are written once into the pooled buffer; this is the output of a
    computation, not a copy of a tenferro buffer, so it is not counted.
    """
    res = np.asarray(result)
    dt = dtype_of_array(res, op)

    def kernel(nd: Array) -> None:
        # nd has res's shape: copyto writes every element.
        np.copyto(nd, res, casting="unsafe")

    c_order = (
        follow_order and res.ndim >= 2 and res.flags.c_contiguous and not res.flags.f_contiguous
    )
    return run_in_order(op, tuple(int(d) for d in res.shape), dt, kernel, c_order)


def read_all(reads: Reads, xs: tuple[Any, ...], op: str) -> list[Any]:
    """Each array of ``xs`` as a numpy array of its logical values, other items as they are.

    Valid only inside the ``with Reads()`` block: tensors are read through the
    engine's pinned, alias-free path, views through their own strided alias.
    """
    return [reads.operand(x, op)[0] if isinstance(x, ARRAY_TYPES) else x for x in xs]


def engine() -> CpuEngine:
    """The calling thread's current engine (``with eng:``'s, else the default one)."""
    return _interface.current()


_engine = engine
_current = _interface.current
_elementwise1 = _interface.elementwise1
_c_source = _interface.c_source
_elementwise2 = _interface.elementwise2
_broadcast2 = _interface.broadcast2
_binary_entry = _interface.binary_entry
_unary_entry = _interface.unary_entry


def _typed(ufunc: Any, exc: BaseException, op: str = "") -> BaseException:
    """What a hot path raises for ``exc``: numpy's refusals typed (named ``op``, the
    general path's name, where given), anything else as it is."""
    if isinstance(exc, PASSED_ON) or not isinstance(exc, NUMPY_REFUSALS):
        return exc
    return numpy_refusal(op or f"tenferro.{ufunc.__name__}", exc)


def binary_function(
    ufunc: Any,
    allowed: Container[DType],
    out_bool: bool,
    general: Callable[[Any, Any], Any],
    op: str = "",
) -> Callable[..., Any]:
    """A binary elementwise function: the compiled protocol (`_core`), else ``general``.

    The hot path (`engine._core.elementwise2`) takes two plain host tensors of
    one shape and an ``allowed`` dtype, or two C-ordered views of one shape
    (memory order follows the data: the result is a C-ordered view), through the
    engine's per-operation protocol (pin both, check for a writer, take a pooled
    buffer, one ufunc call); a plain or C-ordered F64 or C64 array with a Python
    float or int (``x * 2.0``, ``1 - x``) takes the same steps with the scalar
    passed as it is (the standard's weak scalar: numpy reads a Python float, or
    an int of at most 2**53, exactly as that dtype). Like numpy's own calls,
    this hot path leaves floating-point warnings (overflow, division by zero) as
    numpy gives them.

    Next, the broadcasting path (`engine._core.broadcast2`) takes what the general
    path would compute with one ufunc call: arrays of different shapes that
    broadcast, strided views, dtypes the array API promotes, a weak scalar next to
    any F64 or C64 array; the same call (warnings silenced, ``casting="unsafe"``)
    into the same dtype, shape and memory order, with no Python in between. A
    kernel that raises is typed as the general path types it (``op``). Anything
    else (other scalars, numpy operands, refusals) goes to ``general(x1, x2)``.
    """
    if ufunc is np.maximum or ufunc is np.minimum:
        # numpy deprecates a positional out= for these two.
        def call(a: Any, b: Any, out: Any) -> Any:
            return ufunc(a, b, out=out)
    else:
        call = ufunc
    # Compiled (`engine._core.binary_entry`): the steps above with no Python frame of
    # their own, so an operator (``a + b`` is this function) goes straight to the core.
    fn = _binary_entry(ufunc, call, allowed, out_bool, general, op, _typed)
    fn.__module__ = __name__
    return fn


def unary_function(
    ufunc: Any, allowed: Container[DType], general: Callable[[Any], Any]
) -> Callable[..., Any]:
    """A same-dtype unary elementwise function: the compiled protocol, else ``general``.

    The hot path (`engine._core.elementwise1`) takes one plain host tensor, or
    one C-ordered view, of an ``allowed`` dtype through the steps of the
    engine's unary fast path (pin, check for a writer, a pooled buffer, one
    ufunc call); anything else (other views, other dtypes, errors) goes to
    ``general(x)``.
    """

    # Compiled (`engine._core.unary_entry`), as `binary_function`'s.
    fn = _unary_entry(ufunc, allowed, general)
    fn.__module__ = __name__
    return fn


def ufunc_into(op: str, ufunc: Any, args: tuple[Any, ...], shape: Shape, dtype: DType) -> Any:
    """``ufunc(*args)`` (arrays read without copying, scalars as given) into a pooled output,
    in the first array operand's memory order (`prefers_c`)."""
    with Reads() as reads:
        vals = read_all(reads, args, op)

        def kernel(nd: Array) -> None:
            # The operands broadcast to nd's shape: the ufunc writes all of nd.
            with np.errstate(all="ignore"):
                ufunc(*vals, out=nd, casting="unsafe")

        try:
            return run_in_order(op, shape, dtype, kernel, _first_prefers_c(args, len(shape)))
        except PASSED_ON:
            raise
        except NUMPY_REFUSALS as exc:
            raise numpy_refusal(op, exc) from None


def _first_prefers_c(xs: tuple[Any, ...], ndim: int) -> bool:
    """`prefers_c` of the first array among ``xs`` of rank ``ndim`` (numpy's 'K' follows
    the operands' layout; the first full-rank one decides)."""
    for x in xs:
        if isinstance(x, ARRAY_TYPES) and len(x.shape) == ndim:
            return prefers_c(x)
    return False


def compute_into(
    op: str, shape: Shape, dtype: DType, fn: Callable[..., Any], xs: tuple[Any, ...]
) -> Any:
    """``fn(nd, *values)`` writing a pooled output ``nd`` of ``shape``, in the memory
    order of ``xs[0]`` (`prefers_c`).

    ``fn`` must write every element of ``nd`` (numpy's reductions with ``out=``
    do); the arrays of ``xs`` are read without copying for the call's duration.
    """
    with Reads() as reads:
        vals = read_all(reads, xs, op)

        def kernel(nd: Array) -> None:
            fn(nd, *vals)

        # A reduction keeps its input's memory order (numpy's 'K').
        c_order = bool(xs) and prefers_c(xs[0])
        return run_in_order(op, shape, dtype, kernel, c_order)


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
            op,
            f"expected a tenferro array, got {type(x).__name__}",
            kind="INVALID_OPERAND",
            operand_type=type(x).__name__,
        )
    x._write_exclusive(op, fn)


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
