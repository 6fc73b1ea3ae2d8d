"""Run a compiled einsum `Plan` on numpy arrays, into pooled buffers.

Values live in one list indexed like the plan (inputs first, as the caller's
arrays in their logical shape; intermediates as the flat prefix of a pooled
buffer). Each intermediate goes back to the pool right after the one step that
consumes it, and each step's scratch transpositions right after that step, so
the memory held is the path's live set.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..gemm import MATMUL, Scratch, run_kernel
from .planner import GEMM, REDUCE, Plan

__all__ = ["execute"]

Array = np.ndarray[Any, Any]

_einsum = np.einsum
_copyto = np.copyto


def execute(pool: Any, plan: Plan, inputs: list[Array], out_nd: Array) -> None:
    """Contract ``inputs`` per ``plan`` into ``out_nd`` (F-ordered, compact), writing
    every element of it (each step's kernel writes all of its destination)."""
    vals: list[Any] = [None] * plan.n_values
    owners: list[Any] = [None] * plan.n_values
    n_in = plan.n_inputs
    for i, arr in enumerate(inputs):
        drop = plan.squeeze[i]
        # Size-1 axes that broadcast are dropped, as numpy's einsum does.
        vals[i] = arr.squeeze(drop) if drop else arr
    dtype = out_nd.dtype
    out_flat = out_nd.reshape(-1, order="F")
    scratch = Scratch(pool)
    try:
        for step in plan.steps:
            kind = step[0]
            if kind == GEMM:
                _, sa, sb, op_a, op_b, kernel, dims, dst = step
                if dst < 0:
                    target = out_flat
                else:
                    size = dims[0] * dims[1] * dims[2]
                    owner = pool.acquire(dtype, size)
                    owners[dst] = owner
                    target = vals[dst] = owner[:size]
                blas = kernel == MATMUL
                a3 = _operand(scratch, vals[sa], op_a, blas)
                b3 = _operand(scratch, vals[sb], op_b, blas)
                run_kernel(kernel, a3, b3, target.reshape(dims))
                del a3, b3
                scratch.release()
                _release(pool, vals, owners, sa, n_in)
                _release(pool, vals, owners, sb, n_in)
            elif kind == REDUCE:
                _, src, dst, expr, shape, src_shape = step
                x = vals[src]
                if src_shape is not None:
                    x = x.reshape(src_shape, order="F")
                if dst < 0:
                    target = out_nd
                else:
                    size = 1
                    for d in shape:
                        size *= d
                    owner = pool.acquire(dtype, size)
                    owners[dst] = owner
                    flat = vals[dst] = owner[:size]
                    target = flat.reshape(shape, order="F")
                # np.einsum with out= writes every element of target.
                _einsum(expr, x, out=target)
                del x, target
                _release(pool, vals, owners, src, n_in)
            else:
                _, src, src_shape, perm = step
                # A full transposition copy writes every element of out_nd.
                _copyto(out_nd, vals[src].reshape(src_shape, order="F").transpose(perm))
                _release(pool, vals, owners, src, n_in)
    finally:
        scratch.release()
        vals.clear()
        for owner in owners:
            if owner is not None:
                pool.recycle(owner, 0)


def _operand(scratch: Scratch, x: Array, op: tuple[Any, ...], blas: bool) -> Array:
    """One operand of a product as the C-ordered 3-D array the kernel reads."""
    perm, dims, swap, shape, direct = op
    if direct:
        # INVARIANT: an intermediate the plan reads in place is compact in exactly
        # the grouped order, so its flat buffer reshapes to the view without a copy.
        g = x.reshape(dims[::-1])
    else:
        if shape is not None:
            x = x.reshape(shape, order="F")
        g = scratch.grouped(x, perm, dims, blas)
    return g.swapaxes(1, 2) if swap else g


def _release(pool: Any, vals: list[Any], owners: list[Any], vid: int, n_in: int) -> None:
    """Give an intermediate back to the pool: its one consumer has run."""
    if vid >= n_in:
        vals[vid] = None
        owner = owners[vid]
        owners[vid] = None
        if owner is not None:
            pool.recycle(owner, 0)
