"""The BLAS kernel shared by `dot_general`, `matmul` and `einsum`'s pairwise steps.

Layout (DESIGN §4): tensors are column-major and batch dimensions *trailing*. A
column-major ``[M, K, B]`` array is, byte for byte, the C-ordered ``[B, K, M]``
array of its transposes, so ``C = A @ B`` on column-major operands is the
C-ordered ``C^T = B^T @ A^T``: one `np.matmul` over the batch on views of the
operands, ``out=`` the pooled output, no copy and no temporary. An operand whose
axes cannot be grouped into ``[M, K, B]`` (or ``[K, M, B]``, a transposed view
BLAS takes as well) without a copy is first transposed into a pooled scratch
buffer that goes back to the pool as soon as the step has run.

Which loop runs a step (`kernel_for`): one `np.matmul` over the whole batch for
every product that sums something (numpy hands each batch entry to BLAS, or to
its own small-matrix loop for tiny ones, never a generic einsum loop); steps
that sum nothing (``K == 1``: outer and Hadamard products per batch entry) run
as one numpy product loop over the whole batch at memory speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..layout import shape_size

__all__ = [
    "MATMUL",
    "MULTIPLY",
    "OUTER",
    "SPLIT_K",
    "DotPlan",
    "Scratch",
    "grouped_view",
    "kernel_for",
    "make_dot_plan",
    "run_kernel",
]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

_matmul = np.matmul
_multiply = np.multiply
_einsum = np.einsum

#: Kernel kinds (`kernel_for`).
MATMUL = 0
OUTER = 1  # K == 1, short rows: np.einsum's product loop, one outer product per batch entry
MULTIPLY = 2  # K == 1, M == 1 or long rows: one broadcast np.multiply over the batch
# A product summed over a leading batch (the planner's split contraction): np.matmul
# over (C, B, ...) into scratch, then one sum over C.
SPLIT_K = 3

# Measured (numpy 2, one thread): np.matmul beats np.einsum's sum-of-products
# loop on every batched product with K > 1, down to 2x2x2 matrices over a long
# batch (numpy's own small-matrix loop), so every such step is one np.matmul.
# With K == 1, a broadcast multiply is fastest when its rows (M) are long or a
# single element, np.einsum's loop when they are short (3-15 elements).
_SHORT_ROW = 16


def kernel_for(m: int, k: int, n: int, bt: int) -> int:
    """The loop that runs an ``[M, K, B] x [K, N, B]`` product best (see module docstring)."""
    if k != 1:
        return MATMUL
    return MULTIPLY if m == 1 or m >= _SHORT_ROW else OUTER


def blasable(x: Array) -> bool:
    """Can np.matmul hand the last two axes of ``x`` to BLAS without its slow loop?"""
    shape = x.shape
    r = shape[-2]
    c = shape[-1]
    if r <= 1 or c <= 1:
        return True
    s_r, s_c = x.strides[-2:]
    isz = x.itemsize
    if s_c == isz and s_r >= c * isz and s_r % isz == 0:
        return True
    return s_r == isz and s_c >= r * isz and s_c % isz == 0


def grouped_view(t: Array, dims: Shape) -> Array | None:
    """``t`` reshaped column-major to ``dims`` and transposed, if that needs no copy."""
    try:
        g: Array = np.reshape(t, dims, order="F", copy=False).T
    except ValueError:
        return None  # the axes cannot be grouped without a copy
    except TypeError:  # pragma: no cover - numpy 2.0 has no copy= on reshape
        r = t.reshape(dims, order="F")
        return r.T if r.size == 0 or np.may_share_memory(r, t) else None
    return g


class Scratch:
    """Pooled scratch buffers of one kernel call, all given back by `release`."""

    __slots__ = ("owners", "pool")

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.owners: list[Array] = []

    def grouped(self, arr: Array, perm: Sequence[int] | None, dims: Shape, blas: bool) -> Array:
        """``arr`` permuted by ``perm`` as the C-ordered ``dims[::-1]`` array (column-major
        ``dims``): a view when strides allow (and BLAS takes them, if ``blas``), else a
        transposition into a pooled scratch buffer."""
        t = arr if perm is None else arr.transpose(perm)
        g = grouped_view(t, dims)
        if g is not None and (not blas or blasable(g)):
            return g
        size = shape_size(dims)
        owner = self.pool.acquire(arr.dtype, size)
        self.owners.append(owner)
        flat = owner[:size]
        # copyto writes every element of the column-major destination in t's shape.
        np.copyto(flat.reshape(t.shape, order="F"), t)
        out: Array = flat.reshape(dims[::-1])
        return out

    def release(self) -> None:
        pool = self.pool
        owners = self.owners
        self.owners = []
        for owner in owners:
            pool.recycle(owner, 0)


def run_kernel(kind: int, a3: Array, b3: Array, out3: Array) -> None:
    """``out3 = b3 @ a3`` per batch entry: C-ordered ``(B, N, K) @ (B, K, M) -> (B, N, M)``.

    Every kernel writes every element of ``out3`` (an empty sum writes zeros).
    """
    if kind == MATMUL:
        _matmul(b3, a3, out=out3)
    elif kind == MULTIPLY:
        # Nothing summed: (B, N, 1) * (B, 1, M) broadcasts to every element of out3.
        _multiply(b3, a3, out=out3)
    else:
        _einsum("bn,bm->bnm", b3[:, :, 0], a3[:, 0, :], out=out3)


class DotPlan:
    """A validated dot_general: permutations that group each operand, and sizes."""

    __slots__ = ("bt", "k", "kind", "m", "n", "out_shape", "perm_a", "perm_b")

    def __init__(
        self,
        perm_a: tuple[int, ...],
        perm_b: tuple[int, ...],
        m: int,
        k: int,
        n: int,
        bt: int,
        out_shape: Shape,
    ) -> None:
        self.perm_a = perm_a  # a -> (free, contracting, batch)
        self.perm_b = perm_b  # b -> (contracting, free, batch)
        self.m = m
        self.k = k
        self.n = n
        self.bt = bt
        self.out_shape = out_shape
        self.kind = kernel_for(m, k, n, bt)

    def run(self, pool: Any, a: Array, b: Array, out_flat: Array) -> None:
        """Write ``a . b`` into ``out_flat`` (column-major, every element)."""
        scratch = Scratch(pool)
        blas = self.kind == MATMUL
        try:
            a3 = scratch.grouped(a, self.perm_a, (self.m, self.k, self.bt), blas)
            b3 = scratch.grouped(b, self.perm_b, (self.k, self.n, self.bt), blas)
            run_kernel(self.kind, a3, b3, out_flat.reshape((self.bt, self.n, self.m)))
        except BaseException:
            # Dropped, never pooled: the traceback keeps this frame's writable views
            # of the scratch buffers (a3, b3; see EngineBase.run).
            scratch.owners = []
            raise
        scratch.release()


def make_dot_plan(
    sa: Shape,
    sb: Shape,
    ca: Sequence[int],
    cb: Sequence[int],
    ba: Sequence[int],
    bb: Sequence[int],
    free_a: Sequence[int] | None = None,
    free_b: Sequence[int] | None = None,
) -> DotPlan:
    """The `DotPlan` of ``dot_general(a, b, (ca, cb), (ba, bb))`` on shapes ``sa``, ``sb``."""
    if free_a is None:
        used = set(ca) | set(ba)
        free_a = [i for i in range(len(sa)) if i not in used]
    if free_b is None:
        used = set(cb) | set(bb)
        free_b = [i for i in range(len(sb)) if i not in used]
    m = shape_size([sa[i] for i in free_a])
    n = shape_size([sb[i] for i in free_b])
    k = shape_size([sa[i] for i in ca])
    bt = shape_size([sa[i] for i in ba])
    out_shape = (
        tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b) + tuple(sa[i] for i in ba)
    )
    return DotPlan((*free_a, *ca, *ba), (*cb, *free_b, *bb), m, k, n, bt, out_shape)
