"""Products: ``matmul``, ``tensordot``, ``vecdot``, ``einsum``, plus numpy's ``dot``,
``outer``, ``trace``, ``diag`` and ``kron``.

``einsum`` and ``tensordot`` run on the default engine (`CpuEngine.einsum`,
`CpuEngine.dot_general`), ``matmul`` of two matrices on `CpuEngine.matmul`;
operands of different dtypes are first promoted by the array API table
(a converted pooled array each). Ownership: **computes** pooled outputs.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..dtype import DType
from ..engine import default_engine
from ..errors import ValidationError
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
from ._core import check_array, check_category, normalize_axis, operand_dtype
from ._creation import astype

# numpy's stubs cannot type some calls with runtime-chosen arguments.
_np: Any = np


_BLAS = (DType.F64, DType.F32, DType.C64, DType.C32)


def _promoted(arrays: tuple[Any, ...], op: str) -> tuple[Any, ...]:
    dt = operand_dtype(arrays, op)
    return tuple(a if a.dtype is dt else astype(a, dt) for a in arrays)


def _numeric_vectors(x1: Any, x2: Any, op: str, name: str) -> tuple[Any, Any]:
    """Both operands checked (numeric arrays of rank >= 1) and promoted to one dtype."""
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    check_category(op, x1.dtype, "numeric")
    check_category(op, x2.dtype, "numeric")
    a, b = _promoted((x1, x2), op)
    if a.ndim == 0 or b.ndim == 0:
        raise ValidationError(op, f"{name} needs arrays of rank >= 1", kind="INVALID_ARGUMENT")
    return a, b


def matmul(x1: Any, x2: Any, /) -> Any:
    """The matrix product with the array API's rules (1-D operands, leading batch axes
    broadcast). Ownership: **computes** a pooled output."""
    op = "tenferro.matmul"
    if (
        x1.__class__ is Tensor
        and x2.__class__ is Tensor
        and len(x1._shape) == 2
        and len(x2._shape) == 2
        and x1._dtype is x2._dtype
        and x1._dtype in _BLAS
    ):
        return engine().matmul(x1, x2)  # it checks the shapes, storage and moves itself
    if x1.__class__ is TensorView and x2.__class__ is TensorView:
        # C-ordered matrices: (x1 @ x2).T == x2.T @ x1.T on the owners they are the
        # transposes of, and the C-ordered view of that result.
        m1 = mirror(x1)
        if m1 is not None and len(m1._shape) == 2:
            m2 = mirror(x2)
            if (
                m2 is not None
                and len(m2._shape) == 2
                and m1._dtype is m2._dtype
                and m1._dtype in _BLAS
            ):
                return unmirror(engine().matmul(m2, m1))
    a, b = _numeric_vectors(x1, x2, op, "matmul")
    if a.shape[-1] != b.shape[0 if b.ndim == 1 else -2]:
        raise ValidationError(
            op,
            f"contracted dimensions differ: {a.shape} @ {b.shape}",
            kind="DIM_MISMATCH",
        )
    if a.ndim == 2 and b.ndim == 2 and a.dtype.is_float | a.dtype.is_complex:
        return default_engine().matmul(a, b)
    try:
        return emit(op, compute(op, np.matmul, (a, b)))
    except ValueError as exc:
        raise ValidationError(op, str(exc), kind="DIM_MISMATCH") from None


def tensordot(x1: Any, x2: Any, /, axes: Any = 2) -> Any:
    """Sum of products over ``axes`` (an int: the last/first ``axes`` axes; or two
    sequences). Runs as `CpuEngine.dot_general`. Ownership: **computes**."""
    op = "tenferro.tensordot"
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    a, b = (x1, x2) if x1.dtype is x2.dtype else _promoted((x1, x2), op)
    key = _axes_key(a.shape, b.shape, axes)
    hit = _TENSORDOT_AXES.get(key) if key is not None else None
    if hit is None:
        hit = _tensordot_axes(a, b, axes, op)
        if key is not None:
            if len(_TENSORDOT_AXES) >= _PLAN_CACHE_SIZE:
                _TENSORDOT_AXES.clear()
            _TENSORDOT_AXES[key] = hit
    ax_a, ax_b = hit
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
        return unmirror(res)
    return default_engine().dot_general(a, b, contracting=(ax_a, ax_b))


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


#: Validated (x1 axes, x2 axes) of `tensordot`, per (shapes, axes as given): a repeated
#: call does no axis normalisation. Bounded: cleared when full.
_TENSORDOT_AXES: dict[Any, tuple[tuple[int, ...], tuple[int, ...]]] = {}
_PLAN_CACHE_SIZE = 1024


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
        return (sa, sb, axes)
    if (axes.__class__ is tuple or axes.__class__ is list) and len(axes) == 2:
        pa = _exact_ints(axes[0])
        pb = _exact_ints(axes[1])
        if pa is not None and pb is not None:
            return (sa, sb, pa, pb)
    return None


def _tensordot_axes(a: Any, b: Any, axes: Any, op: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The validated, non-negative contracted axes of ``a`` and ``b`` (typed errors)."""
    if isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax_a = axes[0] if isinstance(axes[0], (tuple, list)) else (axes[0],)
        ax_b = axes[1] if isinstance(axes[1], (tuple, list)) else (axes[1],)
    else:
        n = operator.index(axes)
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
    a, b = _numeric_vectors(x1, x2, op, "vecdot")
    if axis >= 0 or -axis > min(a.ndim, b.ndim) or a.shape[axis] != b.shape[axis]:
        raise ValidationError(op, f"axis {axis} does not pair up", kind="INVALID_AXIS")
    try:
        return emit(op, compute(op, lambda p, q: _np.vecdot(p, q, axis=axis), (a, b)))
    except ValueError as exc:
        raise ValidationError(op, str(exc), kind="DIM_MISMATCH") from None


def einsum(subscripts: str, /, *operands: Any, optimize: Any = None) -> Any:
    """Einstein summation on the default engine (`CpuEngine.einsum`), e.g.
    ``tenferro.einsum("ij,jk->ik", a, b)``. Operands of different dtypes are
    promoted first. Ownership: **computes** a pooled output (intermediates go
    back to the pool)."""
    op = "tenferro.einsum"
    for x in operands:
        check_array(x, op, "operand")
    arrays = _promoted(operands, op) if len(operands) > 1 else operands
    if optimize is None:
        return default_engine().einsum(subscripts, *arrays)
    # An explicit path or strategy is checked (and refused) as `CpuEngine.einsum` does.
    return default_engine().einsum(subscripts, *arrays, optimize=optimize)


def dot(a: Any, b: Any, /) -> Any:
    """numpy's ``dot``. Ownership: **computes** a pooled output."""
    op = "tenferro.dot"
    check_array(a, op, "a")
    check_array(b, op, "b")
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
    return emit(op, compute(op, lambda a: np.array(np.diag(a, k)), (x,)))


def diagonal(x: Any, /, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Result:
    """numpy's ``diagonal``: the ``offset``-th diagonal of axes ``axis1`` and ``axis2``.

    The diagonal becomes the last axis (as in numpy). Ownership: **computes** a
    pooled output (a copy, never a view of ``x``).
    """
    op = "tenferro.diagonal"
    check_array(x, op)
    if x.ndim < 2:
        raise ValidationError(op, "diagonal needs at least 2 axes", kind="INVALID_ARGUMENT")
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
