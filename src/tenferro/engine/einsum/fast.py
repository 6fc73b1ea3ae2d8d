"""The per-call fast path of binary einsums on plain tensors (``eng.einsum("ij,jk->ik", a, b)``).

A cached plan still costs the general path's bookkeeping on every call:
splitting the call, hashing the optimize key, the operand reads, the plan
lookup and the executor's per-step dispatch (about 15 us, where the product of
two 4x4 matrices takes 1 us). Most einsum calls in a loop are binary products
on plain `Tensor`s, which are always compact column-major, so for one
(subscripts, shapes) the views the product reads are fixed: a plan whose only
step is one product reading both operands in place is turned, once, into a
`Binary` record (how to view each operand's flat buffer, the kernel, the
output grouping), kept in a small dict keyed by ``(subscripts, optimize,
shape_a, shape_b)``. A call that finds its record runs it directly: pin the
two buffers, view, one BLAS call into a pooled output (the compiled
per-operation protocol, `_core.shaped2`).

A record holds only shapes and axis orders, no arrays; it serves every BLAS
dtype (float and complex: the strides of a compact array scale with the
itemsize, so the same views are BLAS-able for each).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...storage.host import HostBuffer
from ...tensor import Tensor
from .._core import shaped2 as _core_shaped2
from ..gemm import MATMUL, blasable, grouped_view, run_kernel
from .planner import GEMM, Plan

__all__ = ["Binary", "binary_record", "lookup", "remember", "run_binary"]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

_dot = np.dot

#: Records kept at most (the dict is emptied when full: a loop re-fills it at once).
CACHE_SIZE = 1024

# key -> Binary, or False for a binary einsum that has no fast record (not one
# in-place product), so it is not looked at again.
_records: dict[Any, Any] = {}


class Binary:
    """How to run one binary einsum on two compact operands without the executor."""

    __slots__ = ("a_left", "dims", "kernel", "out_shape", "size", "view_left", "view_right")

    def __init__(
        self,
        kernel: int,
        a_left: bool,
        view_left: tuple[Shape, tuple[int, ...]],
        view_right: tuple[Shape, tuple[int, ...]],
        dims: tuple[int, ...],
        out_shape: Shape,
    ) -> None:
        self.kernel = kernel
        # Is operand ``a`` the product's left operand (``out = right @ left``)?
        self.a_left = a_left
        # (C shape of the flat buffer, axis order): each operand as the kernel reads it.
        self.view_left = view_left
        self.view_right = view_right
        # (n, m): one np.dot on 2-D views (no ufunc dispatch); (bt, n, m): the kernel.
        self.dims = dims
        size = 1
        for d in dims:
            size *= d
        self.size = size
        self.out_shape = out_shape


def _strided_spec(g: Array) -> tuple[Shape, tuple[int, ...]] | None:
    """``(shape, axes)`` with ``flat.reshape(shape).transpose(axes)`` laid out like ``g``,
    a view of a compact 1-D buffer starting at its first element (None if no such)."""
    isz = g.itemsize
    order = sorted(range(g.ndim), key=lambda ax: -g.strides[ax])
    shape = tuple(g.shape[ax] for ax in order)
    axes = tuple(order.index(ax) for ax in range(g.ndim))
    probe = np.empty(max(1, g.size), dtype=g.dtype)[: g.size].reshape(shape).transpose(axes)
    for ax in range(g.ndim):
        if g.shape[ax] > 1 and probe.strides[ax] // isz != g.strides[ax] // isz:
            return None
    return shape, axes


def binary_record(plan: Plan) -> Binary | None:
    """The `Binary` record of ``plan`` (a binary einsum), or None when it is more than
    one product reading both compact operands in place."""
    if len(plan.steps) != 1 or plan.n_inputs != 2 or any(plan.squeeze):
        return None
    step = plan.steps[0]
    if step[0] != GEMM:
        return None
    _, sa, sb, op_a, op_b, kernel, dims, dst = step
    if dst != -1 or len(dims) != 3:
        return None
    two_d = dims[0] == 1 and kernel == MATMUL
    views = []
    for vid, op in ((sa, op_a), (sb, op_b)):
        perm, gdims, swap, _shape, _direct, slabs = op
        if slabs is not None:
            return None
        # A compact column-major operand of its shape (float64; strides scale with
        # the itemsize, see the module docstring).
        x = np.empty(plan.in_shapes[vid][::-1]).T
        t = x if perm is None else x.transpose(perm)
        g = grouped_view(t, gdims)
        if g is None or (kernel == MATMUL and not blasable(g)):
            return None  # the executor would transpose it into scratch
        if swap:
            g = g.swapaxes(1, 2)
        spec = _strided_spec(g[0] if two_d else g)
        if spec is None:
            return None
        views.append(spec)
    out_dims = dims[1:] if two_d else dims
    return Binary(kernel, sa == 0, views[0], views[1], out_dims, plan.out_shape)


def lookup(key: Any) -> Any:
    """The record for ``key``: a `Binary`, False (none possible), or None (not seen)."""
    return _records.get(key)


def remember(key: Any, plan: Plan) -> None:
    """Make and keep the record of ``plan`` under ``key``."""
    if len(_records) >= CACHE_SIZE:
        _records.clear()
    _records[key] = binary_record(plan) or False


def run_binary(engine: Any, rec: Binary, a: Tensor, b: Tensor, blas_types: Any) -> Tensor | None:
    """Run ``rec`` on plain tensors ``a`` and ``b`` (**borrows** them for the call) into a
    new pooled tensor, or None when this call is not for the fast path (a moved or
    non-host operand, unequal or non-BLAS dtypes, an active exclusive borrow: the
    general path then raises or runs it)."""
    st_a = a._st
    st_b = b._st
    dt = a._dtype
    if (
        st_a.__class__ is not HostBuffer
        or st_b.__class__ is not HostBuffer
        or dt is not b._dtype
        or dt not in blas_types
    ):
        return None
    # The per-operation protocol, compiled (engine/_core.pyx): pin both, check for a
    # writer, a kept pooled output of rec.size elements, the failure policy.
    return _core_shaped2(_kernel, a, b, rec.out_shape, rec.size, dt, engine, rec, True)


def _kernel(fa: Array, fb: Array, flat: Array, rec: Binary) -> None:
    """``rec``'s product of two compact flat buffers into ``flat`` (``_core.shaped2``'s
    kernel); writes every element of it."""
    if not rec.a_left:
        fa, fb = fb, fa
    shape, axes = rec.view_left
    left = fa.reshape(shape).transpose(axes)
    shape, axes = rec.view_right
    right = fb.reshape(shape).transpose(axes)
    dims = rec.dims
    if len(dims) == 2:
        # One BLAS call (transposed views become its trans flags); writes every
        # element of the n x m output.
        _dot(right, left, flat.reshape(dims))
    else:
        # Every kernel writes every element of its (bt, n, m) output.
        run_kernel(rec.kernel, left, right, flat.reshape(dims))
