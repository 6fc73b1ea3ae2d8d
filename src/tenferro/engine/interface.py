"""What the layers above the engine (the namespace, linalg, tools) may use of it.

docs/internals.md, "The namespace's interface to the engine". Everything here is
a plain function; code outside ``engine/`` and ``storage/`` never touches an
engine's or a view's underscore attributes (`tests/test_engine_interface.py`
checks it):

* `current`: the calling thread's current engine (``with eng:``'s, else the
  default engine);
* `run` / `output`: a pooled output of a given shape, written by a kernel, in
  column-major (an owner) or row-major order (the C-ordered view of a
  column-major owner);
* `view_of`: a view of an owner's buffer with a given layout (borrows);
* `c_view`: the C-ordered (axes-reversed) view of a fresh column-major result;
* `c_source`: the buffer a C-ordered view covers whole, in row-major order (or
  None): the test every C-ordered hot path makes; `prefers_c`: does an operand
  lay its axes out row-major (numpy's 'K' order for the output);
* `full_reduction`, `axes_reduction`: the engine's reduction hot paths;
* `unary`, `binary`, `scalar`, `shaped`, `pinned`: the compiled per-operation
  protocol (`_core`); `elementwise1`, `elementwise2`: the namespace's elementwise
  hot paths, checks included (owners, and C-ordered views giving fresh C-ordered
  views); `broadcast2`: its broadcasting, promoting, strided-view one;
  `binary_entry`, `unary_entry`: the namespace's elementwise functions themselves,
  compiled (those steps, then the general path); `Kernel`: a ufunc whose numpy
  inner loops those hot paths run directly (engine/_loops.pxi);
  `basic_view`: ``x[key]`` for a plain basic key (ints, slices, None, ...);
* `einsum_plan`, `einsum_run`: an einsum's validated plan, and a run by it (the
  namespace's plan cache); `einsum_memory_plan`, `memory_perm`: the plan in the
  operands' memory order with the output in the product's own order (the
  namespace's ``einsum``, einsum/memory.py), and `permuted_result`, the view
  it hands out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtype import DType
from ..layout import col_major_strides
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import TensorView
from ._core import (
    Kernel,
    basic_view,
    binary,
    binary_entry,
    broadcast2,
    c_source,
    c_view,
    elementwise1,
    elementwise2,
    permuted_view,
    pinned,
    prefers_c,
    scalar,
    shaped,
    unary,
    unary_entry,
    view_of,
)
from ._core import current as _core_current
from .cpu import CpuEngine
from .einsum import plan_for
from .einsum.memory import MemoryPlan, memory_perm, memory_plan

__all__ = [
    "Kernel",
    "axes_reduction",
    "basic_view",
    "binary",
    "binary_entry",
    "broadcast2",
    "c_source",
    "c_view",
    "current",
    "einsum_memory_plan",
    "einsum_plan",
    "einsum_run",
    "elementwise1",
    "elementwise2",
    "full_reduction",
    "memory_perm",
    "output",
    "permuted_result",
    "pinned",
    "prefers_c",
    "run",
    "scalar",
    "shaped",
    "take_result",
    "unary",
    "unary_entry",
    "view_of",
]

Shape = tuple[int, ...]

#: The calling thread's current engine: ``with eng:``'s, else `default_engine()`
#: (compiled: every namespace call asks for it).
current: Callable[[], CpuEngine] = _core_current
Array = np.ndarray[Any, Any]


def run(op: str, shape: Shape, dtype: DType, kernel: Callable[[Array], Any]) -> Tensor:
    """``kernel(nd)`` into a pooled column-major output of the current engine (an owner).

    The kernel must write every element of ``nd``; one that raises drops the
    buffer (docs/internals.md, "Failure policy for pooled buffers").
    """
    return current()._run(op, shape, dtype, kernel)


def output(
    op: str, shape: Shape, dtype: DType, kernel: Callable[[Array], Any], c_order: bool
) -> Tensor | TensorView:
    """`run` in the given memory order: row-major (``c_order``, rank >= 2) runs ``kernel``
    on the transpose of a column-major owner of the reversed shape (a C-ordered array
    of ``shape``) and returns the C-ordered view of it (`c_view`)."""
    if not c_order or len(shape) < 2:
        return run(op, shape, dtype, kernel)

    def reversed_kernel(nd: Array) -> Any:
        # nd.T is the C-ordered array of `shape` over the same memory: the kernel
        # writes every element of it, so every element of nd.
        return kernel(nd.T)

    view: TensorView = c_view(run(op, shape[::-1], dtype, reversed_kernel))
    return view


def full_reduction(name: str, x: Any, fast: tuple[DType, ...]) -> Tensor | None:
    """The engine's full-reduction hot path (``reduce_sum`` & co. to rank 0), or None."""
    return current()._full_fast(name, x, fast)


def axes_reduction(name: str, x: Any, axes: Any, keepdims: bool) -> Any:
    """The engine's reduction hot path over ``axes``, or None for the general path."""
    return current()._axes_fast(name, x, axes, keepdims)


def einsum_plan(subscripts: str, shapes: tuple[Shape, ...]) -> Any:
    """The validated plan of a string-form einsum over operands of ``shapes`` (the
    default ``optimize``), raising `CpuEngine.einsum`'s typed errors. Plans do not
    depend on dtypes or strides."""
    return plan_for("CpuEngine.einsum", subscripts, shapes, "auto")


def einsum_memory_plan(
    subscripts: str, shapes: tuple[Shape, ...], perms: tuple[tuple[int, ...] | None, ...]
) -> MemoryPlan:
    """`einsum_plan` in the operands' memory orders ``perms`` (`memory_perm` of each),
    with the output in the order the last product writes where that copies less
    (einsum/memory.py); `CpuEngine.einsum`'s typed errors."""
    return memory_plan("CpuEngine.einsum", subscripts, shapes, perms)


def permuted_result(t: Tensor, axes: tuple[int, ...]) -> TensorView:
    """The view of a fresh column-major result ``t`` (a plain host tensor the caller
    made, holds alone and drops) with its axes in the order ``axes`` (axis ``i`` of
    the view is axis ``axes[i]`` of ``t``). As `c_view`'s: a fresh root-less view
    (`_core`), and the tensor object is dropped."""
    return permuted_view(t, axes)


def einsum_run(eng: CpuEngine, plan: Any, operands: tuple[Any, ...]) -> Tensor:
    """``eng.einsum`` of ``operands`` (of the shapes ``plan`` was made for, one dtype) by
    ``plan``: no parsing, no path search. **Borrows** the operands; a new pooled tensor."""
    return eng._einsum_planned(plan, operands)


def take_result(x: TensorView, res: Any) -> bool:
    """Re-point the shared view ``x`` at the buffer of ``res``, a fresh result of ``x``'s
    shape and dtype that nothing else sees; False (nothing changed) otherwise.

    ``res`` is a column-major owner no alias sees, or the C-ordered view of one
    (`output` with ``c_order``) that is the only alias of its buffer. Afterwards
    ``x`` is an alias of that buffer (it keeps it alive when ``res`` dies) and no
    longer one of its old buffer. Used by the namespace's ``x op= y`` rule for
    views whose buffer other aliases share (`namespace._cow`).
    """
    if res.__class__ is Tensor:
        st = res._st
        if st.__class__ is not HostBuffer or st is x._source or st.alias_count() != 0:
            return False
        base = st.read_root()
        strides = col_major_strides(x._shape)
        offset = 0
    elif res.__class__ is TensorView:
        st = res._source
        # A fresh view takes its root first (`TensorView._root`): it is then the one
        # alias (no local holds the root while the aliases are counted).
        res._root("take_result")
        if st.__class__ is not HostBuffer or st is x._source or st.alias_count() != 1:
            return False
        base = res._root("take_result")
        strides, offset = res._strides, res._offset
    else:
        return False
    x._source = st
    x._base = base
    x._strides = strides
    x._offset = offset
    return True
