"""Products: ``matmul``, ``tensordot``, ``vecdot``, ``einsum``, plus numpy's ``dot``,
``outer``, ``trace``, ``diag`` and ``kron``.

``einsum`` and ``tensordot`` run on the default engine (`CpuEngine.einsum`,
`CpuEngine.dot_general`), ``matmul`` of two matrices on `CpuEngine.matmul`;
operands of different dtypes are first promoted by the array API table
(a converted pooled array each). Ownership: **computes** pooled outputs.
"""

from __future__ import annotations

import operator
from typing import Any, Protocol, cast

import numpy as np

from ..dtype import DType
from ..engine import default_engine
from ..engine._core import dot_planned as _dot_planned
from ..engine._core import matmul2 as _matmul2
from ..engine._core import shaped as _shaped
from ..engine._core import tensordot_entry as _tensordot_entry
from ..engine.interface import (
    einsum_memory_plan,
    einsum_run,
    memory_perm,
    permuted_result,
)
from ..errors import ValidationError
from ..layout import col_major_strides, row_major_strides, shape_size
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import TensorView
from ._adapter import (
    ARRAY_TYPES,
    Result,
    compute,
    emit,
    engine,
    mirror,
    prefers_c,
    reversed_operand,
    unmirror,
)
from ._core import check_array, check_category, int_param, normalize_axis, operand_dtype
from ._creation import astype
from ._interop import accept_numpy, compiled_entry

# numpy's stubs cannot type some calls with runtime-chosen arguments.
_np: Any = np
Shape = tuple[int, ...]


_BLAS = (DType.F64, DType.F32, DType.C64, DType.C32)


def _promoted(arrays: tuple[Any, ...], op: str) -> tuple[Any, ...]:
    dt = operand_dtype(arrays, op)
    return tuple(a if a.dtype is dt else astype(a, dt) for a in arrays)


def _numeric_dtype(x1: Any, x2: Any, op: str, name: str) -> DType:
    """The one dtype of two numeric arrays of rank >= 1 (checked arrays; typed errors)."""
    check_category(op, x1.dtype, "numeric")
    check_category(op, x2.dtype, "numeric")
    dt = operand_dtype((x1, x2), op)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValidationError(op, f"{name} needs arrays of rank >= 1", kind="INVALID_ARGUMENT")
    return dt


#: Validated plans of the namespace's products, per (function, shapes, dtypes, axes or
#: subscripts as given): a repeated call does no validation, promotion lookup, axis
#: normalisation, parsing or path search. Bounded: cleared when full. Keys hold exact
#: ints only (a bool equals an int but must still be refused).
_PLANS: dict[Any, Any] = {}
_PLAN_CACHE_SIZE = 1024


def _planned(key: Any, build: Any, *args: Any) -> Any:
    """``build(*args)`` (which validates and raises typed errors), cached under ``key``."""
    hit = _PLANS.get(key)
    if hit is None:
        hit = build(*args)
        if len(_PLANS) >= _PLAN_CACHE_SIZE:
            _PLANS.clear()
        _PLANS[key] = hit
    return hit


def matmul(x1: Any, x2: Any, /) -> Result:
    """The matrix product with the array API's rules (1-D operands, leading batch axes
    broadcast). Ownership: **computes** a pooled output."""
    op = "tenferro.matmul"
    c1 = x1.__class__
    c2 = x2.__class__
    if (c1 is TensorView or c1 is Tensor) and (c2 is TensorView or c2 is Tensor):
        # A repeated product of two matrices: the cached plan, run in one compiled call.
        res: Any = _matmul2(x1, x2, _DOT, _MATMUL)
        if res is not None:
            return res  # type: ignore[no-any-return]
        if len(x1._shape) == 2 and len(x2._shape) == 2:
            owners = c1 is Tensor and c2 is Tensor and x1._dtype is x2._dtype and x1._dtype in _BLAS
            if not owners or (
                x1._st.__class__ is HostBuffer
                and x2._st.__class__ is HostBuffer
                and x1._shape[1] == x2._shape[0]
            ):
                # Two matrices: the planned product on their memory (as `tensordot`'s,
                # one BLAS call; memory order follows the data: two owners give the
                # engine's column-major owner).
                s1 = x1._strides if c1 is TensorView else None
                s2 = x2._strides if c2 is TensorView else None
                key = (x1._shape, s1, x2._shape, s2, x1._dtype, x2._dtype, _MATMUL)
                plan = _DOT.get(key)
                if plan is None:
                    plan = _matmul_plan_or_false(key, x1, x2)
                if plan is not False:
                    res = _dot_run(x1, x2, plan, engine())
                    if res is not None:
                        return res  # type: ignore[no-any-return]
            if owners:
                # Moved, group-backed, borrowed, empty or mismatched owners: the
                # engine checks and refuses them itself.
                return engine().matmul(x1, x2)
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    dt = _planned(("matmul", x1.shape, x2.shape, x1.dtype, x2.dtype), _matmul_plan, x1, x2)
    a = x1 if x1.dtype is dt else astype(x1, dt)
    b = x2 if x2.dtype is dt else astype(x2, dt)
    if a.ndim == 2 and b.ndim == 2 and dt.is_float | dt.is_complex:
        return default_engine().matmul(a, b)
    try:
        return emit(op, compute(op, np.matmul, (a, b)))
    except ValueError as exc:
        raise ValidationError(op, str(exc), kind="DIM_MISMATCH") from None


#: The axes part of a 2-D matmul's `_DOT` key (a tensordot key never holds a str).
_MATMUL = "matmul"


def _matmul_plan_or_false(key: Any, x1: Any, x2: Any) -> Any:
    """Validate ``x1 @ x2`` for two matrices (typed errors) and cache its `_DOT` entry."""
    dt = _matmul_plan(x1, x2)
    plan: Any = False
    if x1._dtype is dt and x2._dtype is dt and dt in _BLAS and x1.size and x2.size:
        plan = _dot_plan(x1, x2, (1,), (0,))
    if len(_DOT) >= _PLAN_CACHE_SIZE:
        _DOT.clear()
    _DOT[key] = plan
    return plan


def _matmul_plan(x1: Any, x2: Any) -> DType:
    """The validated result dtype of ``x1 @ x2`` (typed errors), cached by `_planned`."""
    op = "tenferro.matmul"
    dt = _numeric_dtype(x1, x2, op, "matmul")
    s1, s2 = x1.shape, x2.shape
    if s1[-1] != s2[0 if len(s2) == 1 else -2]:
        raise ValidationError(op, f"contracted dimensions differ: {s1} @ {s2}", kind="DIM_MISMATCH")
    return dt


def _tensordot(x1: Any, x2: Any, /, axes: Any = 2) -> Result:
    """Sum of products over ``axes`` (an int: the last/first ``axes`` axes; or two
    sequences). Runs as `CpuEngine.dot_general`. Ownership: **computes**."""
    op = "tenferro.tensordot"
    c1 = x1.__class__
    c2 = x2.__class__
    if (c1 is TensorView or c1 is Tensor) and (c2 is TensorView or c2 is Tensor):
        # The planned path: one BLAS call on the operands' memory (`_dot_plan`).
        key = _strided_key(x1, x2, axes)
        if key is not None:
            plan = _DOT.get(key)
            if plan is None:
                plan = _dot_plan_or_false(key, x1, x2, axes)
            if plan is not False:
                res = _dot_run(x1, x2, plan, default_engine())
                if res is not None:
                    return cast(Result, res)
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    dt = x1.dtype if x1.dtype is x2.dtype else operand_dtype((x1, x2), op)
    # The axes are checked on the operands before either is converted: a refused
    # call computes nothing (a promoted copy would be counted as live meanwhile).
    key = _axes_key(x1.shape, x2.shape, axes)
    if key is None:
        ax_a, ax_b = _tensordot_axes(x1, x2, axes, op)
    else:
        ax_a, ax_b = _planned(key, _tensordot_axes, x1, x2, axes, op)
    a = x1 if x1.dtype is dt else astype(x1, dt)
    b = x2 if x2.dtype is dt else astype(x2, dt)
    if a.dtype.is_integer or a.dtype.name == "BOOL" or a.size == 0 or b.size == 0:
        return emit(op, compute(op, lambda p, q: np.tensordot(p, q, (ax_a, ax_b)), (a, b)))
    if _c_ordered_pair(a, b):
        # Both operands C-ordered: the contraction of the reversed operands, swapped,
        # is the reversed result; its reversed view is C-ordered (numpy's layout).
        na, nb = len(a.shape) - 1, len(b.shape) - 1
        res = default_engine().dot_general(
            reversed_operand(b),
            reversed_operand(a),
            contracting=(tuple(nb - j for j in ax_b), tuple(na - i for i in ax_a)),
        )
        return cast(Result, unmirror(res))
    return default_engine().dot_general(a, b, contracting=(ax_a, ax_b))


#: Planned products on the operands' own memory, per `_strided_key`: ``(swap, plan)``,
#: `dot_planned`'s plan and whether the second operand goes first; or False where this
#: path does not apply (mixed or non-BLAS dtypes, empty operands). Bounded: cleared
#: when full.
_DOT: dict[Any, Any] = {}


#: Compiled (`engine._core.tensordot_entry`): a product planned before (`_DOT`) is one
#: call; anything else is `_tensordot` (which plans, runs or refuses).
class TensordotFunction(Protocol):
    """``tensordot(x1, x2, /, axes=2)``: the compiled entry (`engine._core.tensordot_entry`)."""

    def __call__(self, x1: Any, x2: Any, /, axes: Any = 2) -> Result: ...


tensordot: TensordotFunction = compiled_entry(
    _tensordot_entry(accept_numpy(_tensordot, "tensordot"), _DOT),
    _tensordot,
    "tensordot",
    __name__,
)


def _strided_key(x1: Any, x2: Any, axes: Any) -> Any:
    """The `_DOT` key of a product of two arrays (Tensor or TensorView): shapes, strides
    (None for a column-major tensor), dtypes and axes; None for axes that are not exact
    ints (a bool equals an int but must be refused by the validating path)."""
    if axes.__class__ is int:
        ax: Any = axes
    elif (axes.__class__ is tuple or axes.__class__ is list) and len(axes) == 2:
        pa = _exact_ints(axes[0])
        pb = _exact_ints(axes[1])
        if pa is None or pb is None:
            return None
        ax = (pa, pb)
    else:
        return None
    s1 = x1._strides if x1.__class__ is TensorView else None
    s2 = x2._strides if x2.__class__ is TensorView else None
    return (x1._shape, s1, x2._shape, s2, x1._dtype, x2._dtype, ax)


def _dot_run(x1: Any, x2: Any, plan: tuple[Any, ...], eng: Any) -> Any:
    """Run a `_DOT` plan: the pooled result (a fresh C-ordered view where the plan
    says so), or None when an operand's buffer refuses the fast path."""
    swap, core_plan = plan
    if swap:
        return _dot_planned(x2, x1, core_plan, x1._dtype, eng)
    return _dot_planned(x1, x2, core_plan, x1._dtype, eng)


def _dot_plan_or_false(key: Any, x1: Any, x2: Any, axes: Any) -> Any:
    """Validate ``tensordot(x1, x2, axes)`` (typed errors, as the general path raises
    them) and cache its `_DOT` entry under ``key``."""
    op = "tenferro.tensordot"
    plan: Any = False
    dt = x1._dtype
    if dt is x2._dtype and dt in _BLAS and x1.size and x2.size:
        ax_a, ax_b = _tensordot_axes(x1, x2, axes, op)
        plan = _dot_plan(x1, x2, ax_a, ax_b)
    if len(_DOT) >= _PLAN_CACHE_SIZE:
        _DOT.clear()
    _DOT[key] = plan
    return plan


def _reader(x: Any, perm: tuple[int, ...], dims: tuple[int, int]) -> tuple[Any, ...]:
    """How `dot_planned` reads ``x`` permuted by ``perm`` as the C-ordered ``dims``
    matrix (`_core._matrix`'s ``how``): without a copy where the strides allow, else
    by a transposing copy into pooled scratch (kind 3)."""
    shape = x._shape
    strides = x._strides if x.__class__ is TensorView else col_major_strides(shape)
    isz = x._dtype.numpy.itemsize
    probe = np.lib.stride_tricks.as_strided(
        np.zeros(1, x._dtype.numpy), shape, tuple(isz * s for s in strides), writeable=False
    )
    copy = (3, dims, perm, tuple(shape[i] for i in perm), shape, None, isz, dims[0] * dims[1])
    try:
        mat = np.reshape(probe.transpose(perm), dims, copy=False)
    except ValueError:
        # A transposing copy into pooled scratch (numpy's tensordot copies too).
        if x.__class__ is TensorView:
            return (*copy[:5], tuple(isz * s for s in strides), *copy[6:])
        return copy
    if x.__class__ is TensorView:
        # Read as `TensorView._strided` reads it: the root's bytes, offset in elements.
        return (2, dims, mat.strides, isz)
    rows, cols = dims
    if rows <= 1 or cols <= 1 or mat.strides == (cols * isz, isz):
        return (0, dims)
    if mat.strides == (isz, rows * isz):
        return (1, dims)
    return copy  # pragma: no cover - a compact buffer groups one of the two ways


def _dot_plan(
    x1: Any, x2: Any, ax_a: tuple[int, ...], ax_b: tuple[int, ...]
) -> tuple[Any, ...] | bool:
    """The `_DOT` plan of a validated product of two same-dtype BLAS arrays, or False.

    Memory order follows the data (as `tensordot` does on the general path): where
    both operands are C-ordered (`_c_ordered_pair`), ``(x1 . x2)`` is computed as
    numpy computes it, the C-ordered ``(M, K) @ (K, N)`` of the grouped operands,
    into a pooled buffer handed out as its C-ordered view; otherwise the column-major
    result is the C-ordered ``(N, K) @ (K, M)`` of the operands with reversed axes,
    swapped. Either way one ``np.dot`` on the operands' memory (BLAS takes transposed
    operands as they are); an operand whose axes do not group into its matrix is
    first copied, transposed, into pooled scratch (as numpy's tensordot copies it).
    """
    sa, sb = x1._shape, x2._shape
    free_a = tuple(i for i in range(len(sa)) if i not in ax_a)
    free_b = tuple(j for j in range(len(sb)) if j not in ax_b)
    m = 1
    for i in free_a:
        m *= sa[i]
    n = 1
    for j in free_b:
        n *= sb[j]
    k = 1
    for i in ax_a:
        k *= sa[i]
    out_shape = tuple(sa[i] for i in free_a) + tuple(sb[j] for j in free_b)
    c_out = _c_ordered_pair(x1, x2)
    core: tuple[Any, ...]
    if c_out:
        how_p = _reader(x1, free_a + ax_a, (m, k))
        how_q = _reader(x2, ax_b + free_b, (k, n))
        if len(out_shape) >= 2:
            core = (how_p, how_q, m, n, out_shape, row_major_strides(out_shape))
        else:
            core = (how_p, how_q, m, n, out_shape, None)
    else:
        how_p = _reader(x2, free_b[::-1] + ax_b[::-1], (n, k))
        how_q = _reader(x1, ax_a[::-1] + free_a[::-1], (k, m))
        core = (how_p, how_q, n, m, out_shape, None)
    return (not c_out, core)


def _c_ordered_pair(a: Any, b: Any) -> bool:
    """Are both operands laid out row-major (`prefers_c`), or vectors next to one that is?"""
    ca = prefers_c(a)
    cb = prefers_c(b)
    if ca and cb:
        return True
    if ca:
        return len(b.shape) < 2
    if cb:
        return len(a.shape) < 2
    return False


def _exact_ints(seq: Any) -> tuple[int, ...] | None:
    if seq.__class__ is not tuple and seq.__class__ is not list:
        return (seq,) if seq.__class__ is int else None
    for i in seq:
        if i.__class__ is not int:
            return None
    return tuple(seq)


def _axes_key(sa: Any, sb: Any, axes: Any) -> Any:
    """The cache key of a tensordot call, or None for axes that are not exact ints (a
    bool equals an int but must be refused: only exact ints share validated axes)."""
    if axes.__class__ is int:
        return ("tensordot", sa, sb, axes)
    if (axes.__class__ is tuple or axes.__class__ is list) and len(axes) == 2:
        pa = _exact_ints(axes[0])
        pb = _exact_ints(axes[1])
        if pa is not None and pb is not None:
            return ("tensordot", sa, sb, pa, pb)
    return None


def _tensordot_axes(a: Any, b: Any, axes: Any, op: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The validated, non-negative contracted axes of ``a`` and ``b`` (typed errors)."""
    if isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax_a = axes[0] if isinstance(axes[0], (tuple, list)) else (axes[0],)
        ax_b = axes[1] if isinstance(axes[1], (tuple, list)) else (axes[1],)
    else:
        try:
            if isinstance(axes, bool):
                raise TypeError
            n = operator.index(axes)
        except TypeError:
            raise ValidationError(
                op,
                f"axes must be an int or a pair of axis sequences, got {type(axes).__name__}",
                kind="INVALID_AXIS",
            ) from None
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValidationError(op, f"axes={n} is out of range", kind="INVALID_AXIS")
        ax_a = tuple(range(a.ndim - n, a.ndim))
        ax_b = tuple(range(n))
    ax_a = tuple(normalize_axis(i, a.ndim, op) for i in ax_a)
    ax_b = tuple(normalize_axis(i, b.ndim, op) for i in ax_b)
    if len(ax_a) != len(ax_b):
        raise ValidationError(op, "axes must pair up", kind="INVALID_AXIS")
    for i, j in zip(ax_a, ax_b, strict=True):
        if a.shape[i] != b.shape[j]:
            raise ValidationError(
                op,
                f"axis {i} of x1 has size {a.shape[i]} but axis {j} of x2 has {b.shape[j]}",
                kind="DIM_MISMATCH",
            )
    return ax_a, ax_b


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Result:
    """``sum(conj(x1) * x2)`` along ``axis``, broadcasting the rest. Ownership: **computes**."""
    op = "tenferro.vecdot"
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    if axis.__class__ is int:
        key = ("vecdot", x1.shape, x2.shape, x1.dtype, x2.dtype, axis)
        dt = _planned(key, _vecdot_plan, x1, x2, axis)
    else:
        axis = _int_axis(axis, op)
        dt = _vecdot_plan(x1, x2, axis)
    a = x1 if x1.dtype is dt else astype(x1, dt)
    b = x2 if x2.dtype is dt else astype(x2, dt)
    try:
        return emit(op, compute(op, lambda p, q: _np.vecdot(p, q, axis=axis), (a, b)))
    except ValueError as exc:
        raise ValidationError(op, str(exc), kind="DIM_MISMATCH") from None


def _int_axis(axis: Any, op: str) -> int:
    """An axis that is not an exact int: a 0-d integer array or an index-like value as
    its int; anything else (an array, a float, a bool) refused (INVALID_AXIS) before it
    is compared with anything (an array compared would compute a pooled result)."""
    axis = int_param(axis, "axis", op)
    try:
        if isinstance(axis, bool):
            raise TypeError
        return operator.index(axis)
    except TypeError:
        raise ValidationError(
            op, f"axis must be an int, got {axis!r}", kind="INVALID_AXIS"
        ) from None


def _vecdot_plan(x1: Any, x2: Any, axis: Any) -> DType:
    """The validated result dtype of ``vecdot(x1, x2, axis=axis)`` (typed errors)."""
    op = "tenferro.vecdot"
    dt = _numeric_dtype(x1, x2, op, "vecdot")
    s1, s2 = x1.shape, x2.shape
    if axis >= 0 or -axis > min(len(s1), len(s2)) or s1[axis] != s2[axis]:
        raise ValidationError(op, f"axis {axis} does not pair up", kind="INVALID_AXIS")
    return dt


def einsum(subscripts: str, /, *operands: Any, optimize: Any = None) -> Result:
    """Einstein summation on the default engine (`CpuEngine.einsum`), e.g.
    ``tenferro.einsum("ij,jk->ik", a, b)``. Operands of different dtypes are
    promoted first. Ownership: **computes** a pooled output (intermediates go
    back to the pool).

    Memory order follows the data (docs/namespace.md): an operand laid out as a
    permutation of a compact array (a C-ordered array, a permuted result) is
    contracted where it lies, and when the last product would be transposed into
    the order the subscripts name, the result is the permuted view of the
    product instead (`engine/einsum/memory.py`): a `TensorView` whose memory
    order is the product's, with no transposing copy."""
    op = "tenferro.einsum"
    for x in operands:
        check_array(x, op, "operand")
    if subscripts.__class__ is not str or not operands or optimize is not None:
        if subscripts.__class__ is not str:
            # Refused by the engine (SUBSCRIPTS: the interleaved form takes label lists,
            # which the operand check above refuses) before anything is promoted.
            return default_engine().einsum(subscripts, *operands)
        arrays = _promoted(operands, op) if len(operands) > 1 else operands
        if optimize is None:
            return default_engine().einsum(subscripts, *arrays)
        # An explicit path or strategy is checked (and refused) as `CpuEngine.einsum` does.
        return default_engine().einsum(subscripts, *arrays, optimize=optimize)
    # A view's strides are part of the key: its memory order decides the plan.
    key = (
        "einsum",
        subscripts,
        *[(x.shape, x.dtype, x._strides if x.__class__ is TensorView else None) for x in operands],
    )
    dt, mp = _planned(key, _einsum_plan, subscripts, operands)
    for x in operands:
        if x.dtype is not dt:
            # Promoted first, then planned in the promoted arrays' own layouts.
            return einsum(subscripts, *(y if y.dtype is dt else astype(y, dt) for y in operands))
    eng = default_engine()
    perms = mp.perms
    arrays = operands
    if perms is not None:
        arrays = tuple(
            x if p is None else _in_memory_order(x, p) for x, p in zip(operands, perms, strict=True)
        )
    if (
        mp.binary
        and len(arrays) == 2
        and arrays[0].__class__ is Tensor
        and arrays[1].__class__ is Tensor
    ):
        # Two plain tensors: the engine's binary fast record (no planning either).
        t = eng.einsum(mp.subscripts, *arrays)
    else:
        t = einsum_run(eng, mp.plan, arrays)
    axes = mp.axes
    return t if axes is None else permuted_result(t, axes)


def _einsum_plan(subscripts: str, operands: tuple[Any, ...]) -> tuple[DType, Any]:
    """``(dtype, memory plan)``: the operands' one dtype and the validated einsum plan
    over their shapes in their memory orders (typed errors), cached by `_planned`."""
    dt = operand_dtype(operands, "tenferro.einsum") if len(operands) > 1 else operands[0].dtype
    perms = tuple(
        memory_perm(x._shape, x._strides) if x.__class__ is TensorView else None for x in operands
    )
    return dt, einsum_memory_plan(subscripts, tuple(x.shape for x in operands), perms)


def _in_memory_order(x: TensorView, perm: tuple[int, ...]) -> Any:
    """``x`` with its axes in the order ``perm`` (`memory_perm`: then compact
    column-major), as an einsum operand: the tensor of its host buffer where the view
    covers all of it (an operand only, as `_adapter.mirror` makes: it owns and moves
    nothing), else the permuted view. No copy either way."""
    shape = tuple(x._shape[i] for i in perm)
    src = x._source
    if src.__class__ is HostBuffer and not x._offset:
        flat = src.flat
        want = x._dtype.numpy
        if len(flat) == shape_size(shape) and (flat.dtype is want or flat.dtype == want):
            return Tensor._wrap(shape, x._dtype, src)
    return x._derive(shape, tuple(x._strides[i] for i in perm), x._offset)


def dot(a: Any, b: Any, /) -> Result:
    """numpy's ``dot``. Ownership: **computes** a pooled output."""
    op = "tenferro.dot"
    check_array(a, op, "a")
    check_array(b, op, "b")
    sa, sb = a.shape, b.shape
    if sa and sb and sa[-1] != sb[-2 if len(sb) > 1 else -1]:
        # numpy's rule, checked before the operands are promoted (a refused call
        # computes nothing: a converted copy would stay counted in the traceback).
        raise ValidationError(
            op, f"shapes {sa} and {sb} are not aligned for dot", kind="DIM_MISMATCH"
        )
    p, q = _promoted((a, b), op)
    if p.ndim == 2 and q.ndim == 2:
        return matmul(p, q)
    return emit(op, compute(op, lambda u, v: np.asarray(np.dot(u, v)), (p, q)))


def outer(a: Any, b: Any, /) -> Result:
    """The outer product of two vectors (flattened). Ownership: **computes**."""
    op = "tenferro.outer"
    check_array(a, op, "a")
    check_array(b, op, "b")
    p, q = _promoted((a, b), op)
    return emit(op, compute(op, np.outer, (p, q)))


def kron(a: Any, b: Any, /) -> Result:
    """The Kronecker product. Ownership: **computes** a pooled output."""
    op = "tenferro.kron"
    check_array(a, op, "a")
    check_array(b, op, "b")
    p, q = _promoted((a, b), op)
    return emit(op, compute(op, np.kron, (p, q)))


def trace(x: Any, /, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Result:
    """numpy's ``trace``: the sum of a diagonal. Ownership: **computes** a pooled output."""
    op = "tenferro.trace"
    check_array(x, op)
    return emit(
        op,
        compute(
            op,
            lambda a: np.asarray(np.trace(a, offset, axis1, axis2, dtype=dtype)),
            (x,),
        ),
    )


def diag(x: Any, /, k: int = 0) -> Result:
    """numpy's ``diag``: a 1-D array to a diagonal matrix, a matrix to its diagonal.

    Ownership: **computes** a pooled output.
    """
    op = "tenferro.diag"
    check_array(x, op)
    if x.ndim not in (1, 2):
        raise ValidationError(op, "diag needs a 1-D or 2-D array", kind="INVALID_ARGUMENT")
    k = int_param(k, "k", op)
    return emit(op, compute(op, lambda a: np.array(np.diag(a, k)), (x,)))


def _diagonal_kernel(fa: Any, flat: Any, arg: tuple[Shape, int, int, int]) -> None:
    """The diagonal of a column-major matrix (`_core.shaped`'s kernel): of its flat
    buffer read as the row-major array of the reversed shape, with the axes
    swapped; ``flat`` has the diagonal's length, and every element is written."""
    rshape, offset, a1, a2 = arg
    flat[...] = np.diagonal(fa.reshape(rshape), offset, a1, a2)


def _diagonal_fast(x: Any, offset: Any, axis1: Any, axis2: Any) -> Result | None:
    """The hot path of `diagonal` of a matrix: a plain host owner of rank 2 (or the
    C-ordered view of one, through its column-major owner: `mirror`) with int
    arguments naming its two axes, through the engine's compiled protocol
    (`_core.shaped`: pin, writer check, one pooled output, one numpy call into it).
    None for anything else, an empty diagonal included (the general path checks,
    computes or refuses)."""
    if offset.__class__ is not int or axis1.__class__ is not int or axis2.__class__ is not int:
        return None
    if x.__class__ is TensorView:
        if len(x._shape) != 2:
            return None
        m = mirror(x)
        if m is None:
            return None
        # The view's axis k is its owner's axis 1 - k (and the diagonal is 1-D).
        return _diagonal_fast(m, offset, -1 - axis1, -1 - axis2)
    if x.__class__ is not Tensor or x._st.__class__ is not HostBuffer:
        return None
    shape = x._shape
    if len(shape) != 2 or not (-2 <= axis1 < 2 and -2 <= axis2 < 2):
        return None
    a1 = axis1 % 2
    a2 = axis2 % 2
    if a1 == a2:
        return None
    n1 = shape[a1]
    n2 = shape[a2]
    n = min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2)
    if n <= 0:
        return None
    # The owner's axis k is its buffer's row-major axis 1 - k.
    r: Result | None = _shaped(
        _diagonal_kernel, x, (n,), n, x._dtype, engine(), (shape[::-1], offset, 1 - a1, 1 - a2)
    )
    return r


def diagonal(x: Any, /, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Result:
    """numpy's ``diagonal``: the ``offset``-th diagonal of axes ``axis1`` and ``axis2``.

    The diagonal becomes the last axis (as in numpy). Ownership: **computes** a
    pooled output (a copy, never a view of ``x``).
    """
    r = _diagonal_fast(x, offset, axis1, axis2)
    if r is not None:
        return r
    op = "tenferro.diagonal"
    check_array(x, op)
    if x.ndim < 2:
        raise ValidationError(op, "diagonal needs at least 2 axes", kind="INVALID_ARGUMENT")
    offset = int_param(offset, "offset", op)
    axis1 = int_param(axis1, "axis1", op)
    axis2 = int_param(axis2, "axis2", op)
    return emit(
        op,
        compute(op, lambda a: np.array(np.diagonal(a, offset, axis1, axis2)), (x,)),
    )


__all__ = [
    "ARRAY_TYPES",
    "diag",
    "diagonal",
    "dot",
    "einsum",
    "kron",
    "matmul",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
]
