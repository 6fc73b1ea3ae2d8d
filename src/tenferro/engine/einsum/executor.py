"""Run a compiled einsum `Plan` on numpy arrays, into pooled buffers.

Values live in one list indexed like the plan (inputs first, as the caller's
arrays in their logical shape; intermediates as the flat prefix of a pooled
buffer). Each intermediate goes back to the pool right after the one step that
consumes it, and each step's scratch transpositions right after that step, so
the memory held is the path's live set.

Most steps of a network of many small tensors are one product reading both
operands in place; their Python bookkeeping (grouping, stride checks, sizes)
costs more than the product itself. `prepare` works it out once per plan, from
the shapes alone: for each such step, how to view each operand's flat buffer
as the kernel reads it (a C shape and an axis order, checked on a stride-only
probe), the output's size and shape, and which values the step releases. A
run then does one reshape and one transpose per operand and one kernel call;
an input that is not compact column-major at run time takes the general path.

One concern in one module of about 700 lines: running a plan's steps, with the
per-step records `prepare` makes for that run and the slab loops it calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..gemm import MATMUL, SPLIT_K, Scratch, blasable, grouped_view, run_kernel
from .steps import FINAL, GEMM, REDUCE, FinalOperand, Operand, OutSlabs, Plan

__all__ = ["execute", "prepare"]

Array = np.ndarray[Any, Any]

_einsum = np.einsum


def _reduce_into(expr: str, x: Any, out: Any) -> None:
    """``np.einsum(expr, x, out=out)`` for one operand, with any number of labels.

    The planner names labels in opt_einsum's alphabet, which leaves ASCII after
    52 letters, and numpy's einsum takes only those 52: an operand with more
    indices (the docs promise hundreds) is reduced here with diagonals, a sum
    and a transpose instead. Writes every element of ``out``.
    """
    src, dst = expr.split("->")
    labels = list(src)
    while len(set(labels)) < len(labels):
        # A repeated label: its diagonal (numpy moves it to the last axis).
        seen: dict[str, int] = {}
        for j, ch in enumerate(labels):
            if ch in seen:
                i = seen[ch]
                x = np.diagonal(x, axis1=i, axis2=j)
                labels = [c for k, c in enumerate(labels) if k not in (i, j)] + [ch]
                break
            seen[ch] = j
    summed = tuple(i for i, ch in enumerate(labels) if ch not in dst)
    if summed:
        x = x.sum(axis=summed)
        labels = [ch for ch in labels if ch in dst]
    np.copyto(out, np.transpose(x, [labels.index(ch) for ch in dst]))


_matmul = np.matmul
_sum = np.sum
_add_reduce = np.add.reduce
_copyto = np.copyto
_dot = np.dot
_as_strided = np.lib.stride_tricks.as_strided

#: A `Fast` record's kernel kinds beyond gemm's: one np.dot on 2-D views (a product
#: with no batch, no ufunc dispatch).
_DOT = -1

#: A split-sum step's scratch (one product per entry of the split axis) is bounded
#: by the plan's largest live set over this: larger ones sum in chunks of entries,
#: so the scratch at the path's peak step stays a small part of the peak.
_SPLIT_SCRATCH = 16

#: A transposed copy of at most this many elements (512 KiB of float64, about a
#: core's L2 cache) is made whole even where the planner cut it into slabs: the
#: slab loop's narrow products and per-slab copies cost more time than the memory
#: they save (a 4x4 PEPS's 9^5 boundary: 7 slabs, each a product of width 12).
_WHOLE_COPY = 1 << 16


class Fast:
    """One product step whose operands are read in place, worked out from shapes once.

    ``views``: per operand ``(C shape, axes)`` with ``flat.reshape(shape).transpose(axes)``
    the array the kernel reads (``flat``: the operand's compact column-major
    buffer), or None for an operand that needs scratch (the general path).
    """

    __slots__ = (
        "chunk",
        "copy_a",
        "copy_b",
        "dims",
        "dst",
        "kernel",
        "left",
        "n_ct",
        "out_dims",
        "parts",
        "release",
        "right",
        "size",
        "view_a",
        "view_b",
    )

    def __init__(
        self,
        kernel: int,
        view_a: Any,
        view_b: Any,
        out_dims: tuple[int, ...],
        size: int,
        parts: tuple[int, ...] | None,
        release: tuple[int, ...],
    ) -> None:
        self.kernel = kernel
        self.view_a = view_a
        self.view_b = view_b
        self.out_dims = out_dims  # the kernel's output shape (C order)
        self.size = size  # elements of the step's result
        self.parts = parts  # SPLIT_K: the scratch shape of the per-entry products
        # SPLIT_K: entries of the split axis, and how many a chunk adds to the running
        # sum (0: all at once; see `_split_chunked`).
        self.n_ct = 0
        self.chunk = 0
        self.release = release  # intermediates consumed here (back to the pool after)
        # Per operand, None (read in place) or ``(C shape, axes, scratch shape, size)``:
        # ``flat.reshape(shape).transpose(axes)`` copied into a pooled scratch buffer
        # of ``size`` elements viewed as ``scratch shape``, which the view then reads.
        self.copy_a: Any = None
        self.copy_b: Any = None
        # The step's operands and destination (its `Gemm` fields of those names).
        self.left = 0
        self.right = 1
        self.dst = -1


def _spec(g: Array, base: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(shape, axes)`` with ``flat.reshape(shape).transpose(axes)`` laid out like the
    stride-only probe ``g`` (a view of a compact buffer at ``base``), or None."""
    if g.__array_interface__["data"][0] != base:
        return None
    isz = g.itemsize
    order = sorted(range(g.ndim), key=lambda ax: -g.strides[ax])
    shape = tuple(g.shape[ax] for ax in order)
    axes = tuple(order.index(ax) for ax in range(g.ndim))
    stride = isz
    c_strides = [0] * len(shape)
    for pos in range(len(shape) - 1, -1, -1):
        c_strides[pos] = stride
        stride *= shape[pos]
    for ax in range(g.ndim):
        if g.shape[ax] > 1 and c_strides[axes[ax]] != g.strides[ax]:
            return None
    return shape, axes


def _view_spec(op: Operand, shape: tuple[int, ...], blas: bool, two_d: bool) -> Any:
    """How `_operand` would view a compact column-major operand of logical ``shape``,
    as a `_spec`, or None when it would transpose it into scratch."""
    perm, dims, swap, _, _, slabs = op
    if slabs is not None or 0 in shape:
        return None
    # A probe with the strides of a compact column-major array and no memory of its
    # own: reshapes and transposes of it only compute strides.
    one = np.empty(1)
    strides = []
    step = 8
    for d in shape:
        strides.append(step)
        step *= d
    x = _as_strided(one, shape=shape, strides=tuple(strides), writeable=False)
    t = x if perm is None else x.transpose(perm)
    g = grouped_view(t, dims)
    if g is None or (blas and not blasable(g)):
        return None
    if swap:
        g = g.swapaxes(-2, -1)
    if two_d:
        g = g[0]
    return _spec(g, one.__array_interface__["data"][0])


def _copy_spec(op: Operand, shape: tuple[int, ...], two_d: bool) -> Any:
    """``(copy, view)`` for an operand of logical ``shape`` that the kernel reads from a
    transposed copy (the general path's `Scratch.grouped`), worked out once: ``copy``
    as `Fast.copy_a` says, ``view`` the scratch buffer as the kernel reads it."""
    perm, dims, swap = op.perm, op.dims, op.swap
    nd = len(shape)
    if perm is None:
        perm = tuple(range(nd))
    # The copy writes the scratch column-major in the permuted order: C-ordered, that
    # is the reversed permuted shape, read from the operand's C view (reversed shape)
    # with the matching axes.
    t_shape = tuple(shape[p] for p in perm)
    src_axes = tuple(nd - 1 - perm[nd - 1 - i] for i in range(nd))
    size = 1
    for d in dims:
        size *= d
    view_shape = tuple(dims[::-1])
    axes = list(range(len(view_shape)))
    if swap:
        axes[-2], axes[-1] = axes[-1], axes[-2]
    if two_d:
        view_shape = view_shape[1:]
        axes = [a - 1 for a in axes[1:]]
    return (shape[::-1], src_axes, t_shape[::-1], size), (view_shape, tuple(axes))


def prepare(plan: Plan) -> list[Any]:
    """The `Fast` record of each step of ``plan`` (None: the step runs the general way).

    Only shapes are used, so the records serve every dtype (compact strides scale
    with the itemsize) and every run of the plan; cached on the plan.
    """
    n_in = plan.n_inputs
    shapes: dict[int, tuple[int, ...]] = {}
    for i, in_shape in enumerate(plan.in_shapes):
        drop = plan.squeeze[i]
        shapes[i] = tuple(d for j, d in enumerate(in_shape) if j not in drop)
    records: list[Any] = []
    # Elements of intermediates (and the output) alive while each step runs, as in the
    # planner's accounting: a split sum chunks its scratch only where it would raise
    # the plan's peak.
    out_size = 1
    for d in plan.out_shape:
        out_size *= d
    alive: dict[int, int] = {}
    for step in plan.steps:
        consumed: tuple[int, ...]
        if step.kind == GEMM:
            made = step.dst
            res = 1
            for d in step.dims[1:] if step.kernel == SPLIT_K else step.dims:
                res *= d
            consumed = (step.left, step.right)
        elif step.kind == REDUCE:
            made = step.dst
            res = 1
            for d in step.dst_shape:
                res *= d
            consumed = (step.src,)
        elif step.kind == FINAL:
            made, res, consumed = -1, out_size, (step.left, step.right)
        else:
            made, res, consumed = -1, out_size, (step.src,)
        alive[made if made >= 0 else -1] = res
        live_now = sum(alive.values())
        for v in consumed:
            alive.pop(v, None)
        rec = None
        if step.kind == GEMM:
            _, sa, sb, op_a, op_b, kernel, dims, dst = step
            split = kernel == SPLIT_K
            out_dims = dims[1:] if split else dims
            two_d = len(dims) == 3 and dims[0] == 1 and kernel == MATMUL
            blas = kernel in (MATMUL, SPLIT_K)
            views = []
            copies: list[Any] = []
            scratch = 0  # elements of whole transposed copies
            for vid, op in ((sa, op_a), (sb, op_b)):
                # An intermediate's logical shape is its plan shape (F order); the direct
                # ones reshape straight to the grouped dims.
                shape = shapes.get(vid) if vid < n_in else op.shape
                if op.direct:
                    shape = tuple(op.dims)
                view = None if shape is None else _view_spec(op, shape, blas, two_d)
                copy = None
                if view is None and shape is not None and not split and 0 not in shape:
                    copy, view = _copy_spec(op, shape, two_d)
                    if op.slabs is not None:
                        scratch += copy[3]
                views.append(view)
                copies.append(copy)
            size = 1
            for d in out_dims:
                size *= d
            # An operand the planner transposes in slabs (to bound the scratch) is
            # copied whole when that stays within the plan's peak, as a split sum's
            # scratch does, or is small (`_WHOLE_COPY`): one copy and one product
            # instead of a pair per slab.
            bound = plan.largest_live // _SPLIT_SCRATCH
            if scratch > _WHOLE_COPY and live_now + scratch > plan.largest_live + bound:
                views = [None, None]
            if views[0] is not None and views[1] is not None:
                parts = None
                n_ct = chunk = 0
                if split:
                    n_ct = dims[0]
                    bound = plan.largest_live // _SPLIT_SCRATCH
                    if n_ct > 2 and live_now + n_ct * size > plan.largest_live + bound:
                        # The running sum takes one entry of the scratch.
                        chunk = max(1, bound // max(1, size) - 1)
                    parts = (chunk + 1 if chunk else n_ct, *out_dims)
                k = _DOT if two_d else kernel
                rec = Fast(
                    k,
                    views[0],
                    views[1],
                    out_dims[1:] if two_d else out_dims,
                    size,
                    parts,
                    tuple(v for v in (sa, sb) if v >= n_in),
                )
                rec.n_ct = n_ct
                rec.copy_a, rec.copy_b = copies
                rec.left, rec.right, rec.dst = sa, sb, dst
                rec.chunk = chunk if chunk < n_ct - 1 else 0
                if split and not rec.chunk:
                    rec.parts = (n_ct, *out_dims)
        records.append(rec)
    return records


def execute(pool: Any, plan: Plan, inputs: list[Array], dtype: Any, output: Any) -> None:
    """Contract ``inputs`` per ``plan`` into the output, writing every element of it
    (each step's kernel writes all of its destination).

    ``output()`` gives the output (F-ordered, compact, ``dtype``); it is called once,
    right before the last step, so a new output does not sit next to the earlier
    steps' intermediates (the path's live set has it only from its last step on).
    """
    vals: list[Any] = [None] * plan.n_values
    owners: list[Any] = [None] * plan.n_values
    n_in = plan.n_inputs
    records = plan.fast
    if records is None:
        records = plan.fast = prepare(plan)
    for i, arr in enumerate(inputs):
        drop = plan.squeeze[i]
        # Size-1 axes that broadcast are dropped, as numpy's einsum does.
        vals[i] = arr.squeeze(drop) if drop else arr
    scratch = Scratch(pool)
    steps = plan.steps
    n_steps = len(steps)
    acquire = pool.acquire
    recycle = pool.recycle
    out_nd: Any = None
    out_flat: Any = None
    # Intermediates and scratch a `Fast` step released, handed straight to the next
    # `Fast` step's result or scratch where one fits (as the pool would: capacity at
    # most twice the request, `_take`); the rest go back to the pool right after
    # that step's kernel. Only with a pool that retains buffers, which would hold
    # them as long: one that frees them allocates each result at its exact size,
    # and a handed-over buffer can be twice that.
    spare: list[Any] = []
    handoff = pool.limit_bytes > 0
    try:
        for s_i in range(n_steps):
            if s_i == n_steps - 1:
                while spare:
                    recycle(spare.pop(), 0)
                out_nd = output()
                out_flat = out_nd.reshape(-1, order="F")
            rec = records[s_i]
            if rec is not None:
                # A product step, all of whose fields the record holds.
                sa = rec.left
                sb = rec.right
                # An input's compact column-major buffer (None: another layout, read
                # the general way); an intermediate's value is its flat buffer.
                fa = vals[sa]
                if sa < n_in:
                    fa = fa.reshape(-1, order="F") if fa.flags.f_contiguous else None
                fb = vals[sb]
                if sb < n_in:
                    fb = fb.reshape(-1, order="F") if fb.flags.f_contiguous else None
                if fa is not None and fb is not None:
                    dst = rec.dst
                    size = rec.size
                    if dst < 0:
                        target = out_flat
                    else:
                        got = _take(spare, size) if spare else None
                        if got is None:
                            got = acquire(dtype, size)
                        owners[dst] = got
                        target = vals[dst] = got if len(got) == size else got[:size]
                        del got
                    copy = rec.copy_a
                    if copy is not None:
                        fa = _copy(scratch, spare, fa, copy, dtype)
                    copy = rec.copy_b
                    if copy is not None:
                        fb = _copy(scratch, spare, fb, copy, dtype)
                    shape, axes = rec.view_a
                    left = fa.reshape(shape).transpose(axes)
                    shape, axes = rec.view_b
                    right = fb.reshape(shape).transpose(axes)
                    k = rec.kernel
                    if k == _DOT:
                        # One BLAS call on 2-D views; writes every element of target.
                        _dot(right, left, target.reshape(rec.out_dims))
                    elif k == SPLIT_K:
                        # One product per entry of the split axis into scratch, then
                        # their sum, which writes every element of target.
                        parts_shape = rec.parts
                        n_parts = size * parts_shape[0]
                        part_owner = _take(spare, n_parts) if spare else None
                        if part_owner is None:
                            part_owner = acquire(dtype, n_parts)
                        scratch.owners.append(part_owner)
                        parts = part_owner[:n_parts].reshape(parts_shape)
                        if rec.chunk:
                            _split_chunked(left, right, parts, target.reshape(rec.out_dims), rec)
                        else:
                            _matmul(right, left, out=parts)
                            _add_reduce(parts, axis=0, out=target.reshape(rec.out_dims))
                        del parts, part_owner  # no local keeps scratch past its release
                    else:
                        run_kernel(k, left, right, target.reshape(rec.out_dims))
                    # No local may keep a released buffer alive (the peak is the live set).
                    del left, right, target, fa, fb
                    # What the last step released and this one did not take goes back
                    # to the pool; this step's scratch and released operands are
                    # offered to the next one.
                    while spare:
                        recycle(spare.pop(), 0)
                    if scratch.owners:
                        if handoff:
                            spare += scratch.owners
                            scratch.owners = []
                        else:
                            scratch.release()
                    for v in rec.release:
                        vals[v] = None
                        if owners[v] is not None:
                            if handoff:
                                spare.append(owners[v])
                            else:
                                recycle(owners[v], 0)
                            owners[v] = None
                    continue
            while spare:
                recycle(spare.pop(), 0)
            step = steps[s_i]
            if step.kind == GEMM:
                _, sa, sb, op_a, op_b, kernel, dims, dst = step
                if kernel == SPLIT_K:
                    dims = dims[1:]  # the split axis is summed away: (bt, n, m)
                if dst < 0:
                    target = out_flat
                else:
                    size = 1
                    for d in dims:  # (bt, n, m), or (tail, bt, n, m)
                        size *= d
                    # INVARIANT: no local of this frame holds an intermediate's buffer
                    # past its release (the `Fast` steps between do not rebind them).
                    owners[dst] = pool.acquire(dtype, size)
                    target = vals[dst] = owners[dst][:size]
                _product(scratch, vals[sa], vals[sb], op_a, op_b, kernel, target.reshape(dims))
                del target
                scratch.release()
                _release(pool, vals, owners, sa, n_in)
                _release(pool, vals, owners, sb, n_in)
            elif step.kind == REDUCE:
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
                    owners[dst] = pool.acquire(dtype, size)
                    flat = vals[dst] = owners[dst][:size]
                    target = flat.reshape(shape, order="F")
                    del flat
                # np.einsum with out= writes every element of target (as does
                # `_reduce_into` where numpy's 52-letter alphabet is too small).
                if expr.isascii():
                    _einsum(expr, x, out=target)
                else:
                    _reduce_into(expr, x, target)
                del x, target
                _release(pool, vals, owners, src, n_in)
            elif step.kind == FINAL:
                _, sa, sb, fop_a, fop_b, kernel, fdims, res_shape, perm, slabs = step
                _final(
                    scratch,
                    vals[sa],
                    vals[sb],
                    fop_a,
                    fop_b,
                    kernel,
                    fdims,
                    out_nd,
                    res_shape,
                    perm,
                    slabs,
                )
                scratch.release()
                _release(pool, vals, owners, sa, n_in)
                _release(pool, vals, owners, sb, n_in)
            else:
                _, src, src_shape, perm = step
                # A full transposition copy writes every element of out_nd.
                _copyto(out_nd, vals[src].reshape(src_shape, order="F").transpose(perm))
                _release(pool, vals, owners, src, n_in)
    except BaseException:
        # Dropped, never pooled: the traceback keeps this frame's writable views of
        # the intermediates and scratch (target, x; see EngineBase.run).
        scratch.owners = []
        vals.clear()
        owners.clear()
        spare.clear()
        raise
    scratch.release()
    vals.clear()
    for owner in spare:
        recycle(owner, 0)
    for owner in owners:
        if owner is not None:
            pool.recycle(owner, 0)


def _take(spare: list[Any], size: int) -> Any:
    """Remove and return the smallest buffer of ``spare`` (released by the step before,
    one dtype) with ``size`` to ``2 * size`` elements, the pool's fit bound, or None."""
    best = -1
    best_n = 2 * size + 1
    for i, owner in enumerate(spare):
        n = len(owner)
        if size <= n < best_n:
            best, best_n = i, n
    # By position: buffers compare elementwise, so list.remove would not do.
    return None if best < 0 else spare.pop(best)


def _copy(scratch: Scratch, spare: list[Any], flat: Array, copy: Any, dtype: Any) -> Array:
    """A `Fast` operand's transposed copy (``copy``: see `Fast`) in a scratch buffer of
    ``scratch`` (one of ``spare`` that fits, or the pool's), returned flat; the copy
    writes every element of it."""
    shape, axes, dst_shape, size = copy
    owner = _take(spare, size) if spare else None
    if owner is None:
        owner = scratch.pool.acquire(dtype, size)
    scratch.owners.append(owner)
    out: Array = owner[:size]
    _copyto(out.reshape(dst_shape), flat.reshape(shape).transpose(axes))
    return out


def _split_chunked(left: Array, right: Array, parts: Array, out: Array, rec: Fast) -> None:
    """A split sum in chunks of ``rec.chunk`` entries of the split (leading) axis: the
    first chunk's sum writes every element of ``out``; each later chunk is summed
    together with ``out``'s copy in ``parts[0]`` (the running sum) back into ``out``."""
    n_ct = rec.n_ct
    chunk = rec.chunk
    hi = chunk + 1
    _matmul(right[:hi], left[:hi], out=parts)
    _sum(parts, axis=0, out=out)
    lo = hi
    while lo < n_ct:
        hi = min(n_ct, lo + chunk)
        _copyto(parts[0], out)
        _matmul(right[lo:hi], left[lo:hi], out=parts[1 : hi - lo + 1])
        _sum(parts[: hi - lo + 1], axis=0, out=out)
        lo = hi


def _product(
    scratch: Scratch, a: Array, b: Array, op_a: Operand, op_b: Operand, kernel: int, out3: Array
) -> None:
    """One pairwise step into ``out3`` (its operand views die with this frame)."""
    blas = kernel == MATMUL
    if op_a.slabs is not None:
        _slabs(scratch, a, op_a, True, _operand(scratch, b, op_b, blas), kernel, out3)
    elif op_b.slabs is not None:
        _slabs(scratch, b, op_b, False, _operand(scratch, a, op_a, blas), kernel, out3)
    elif kernel == SPLIT_K:
        # One product per entry of the leading (split contracted) axis into scratch,
        # then their sum, which writes every element of out3.
        left = _operand(scratch, a, op_a, True)
        right = _operand(scratch, b, op_b, True)
        n_ct = op_a.dims[3]
        size = out3.size * n_ct
        owner = scratch.pool.acquire(out3.dtype, size)
        scratch.owners.append(owner)
        parts = owner[:size].reshape((n_ct, *out3.shape))
        _matmul(right, left, out=parts)
        _sum(parts, axis=0, out=out3)
    else:
        run_kernel(kernel, _operand(scratch, a, op_a, blas), _operand(scratch, b, op_b, blas), out3)


def _operand(scratch: Scratch, x: Array, op: Operand, blas: bool) -> Array:
    """One operand of a product as the C-ordered 3-D array the kernel reads."""
    perm, dims, swap, shape, direct, _ = op
    if direct:
        # INVARIANT: an intermediate the plan reads in place is compact in exactly
        # the grouped order, so its flat buffer reshapes to the view without a copy.
        g = x.reshape(dims[::-1])
    else:
        if shape is not None:
            x = x.reshape(shape, order="F")
        g = scratch.grouped(x, perm, dims, blas)
    return g.swapaxes(-2, -1) if swap else g


def _slabs(
    scratch: Scratch,
    x: Array,
    op: Operand,
    is_left: bool,
    other: Array,
    kernel: int,
    out3: Array,
) -> None:
    """A product whose operand ``x`` is transposed one slab at a time (see the planner's
    `_chunking`): a slab is a range of one free (or batch) index of ``x`` with its
    later ones fixed, a contiguous range of the product's M (left), N (right) or
    batch, written straight into that range of ``out3``. One scratch buffer serves
    every slab."""
    perm, dims, _, shape, _, slabs = op
    assert slabs is not None  # `_product` calls it for an operand made in slabs
    axis, d, ranges, later, batch = slabs
    if shape is not None:
        x = x.reshape(shape, order="F")
    xw = x.transpose(perm)
    p, q, bt = dims
    n_later = 1
    for e in later:
        n_later *= e
    # Elements of the sliced group (M, N or the batch) before the range axis.
    inner = (bt if batch else p if is_left else q) // (d * n_later)
    step = -(-d // ranges)
    owner = scratch.pool.acquire(x.dtype, p * q * bt // (d * n_later) * step)
    scratch.owners.append(owner)
    lead = (slice(None),) * axis
    for flat_later, idx in enumerate(np.ndindex(*later[::-1])):
        fixed = idx[::-1]  # ndindex runs its last index fastest; column-major runs the first
        for lo in range(0, d, step):
            hi = min(d, lo + step)
            sub = xw[(*lead, slice(lo, hi), *fixed)]
            width = inner * (hi - lo)
            first = (flat_later * d + lo) * inner
            slab = (p, q, width) if batch else (width, q, bt) if is_left else (p, width, bt)
            flat = owner[: slab[0] * slab[1] * slab[2]]
            # copyto writes every element of the slab's column-major destination.
            _copyto(flat.reshape(sub.shape, order="F"), sub)
            g = flat.reshape(slab[::-1])
            rng = slice(first, first + width)
            if batch:
                a3, b3 = (g, other[rng]) if is_left else (other[rng], g)
                run_kernel(kernel, a3, b3, out3[rng])
                del a3, b3
            elif is_left:
                run_kernel(kernel, g, other, out3[:, :, rng])
            else:
                run_kernel(kernel, other, g, out3[:, rng, :])
            del sub, g, flat


def _final(
    scratch: Scratch,
    a: Array,
    b: Array,
    op_a: FinalOperand,
    op_b: FinalOperand,
    kernel: int,
    dims: tuple[int, int, int],
    out_nd: Array,
    res_shape: tuple[int, ...],
    perm: tuple[int, ...],
    slabs: OutSlabs,
) -> None:
    """The last product written into the output order a slab at a time (the planner's
    `_final_slabs`): each slab of index ``z`` is multiplied into a scratch buffer and
    transposed from there into its range of ``out_nd``; the slabs cover every
    element of ``out_nd`` once."""
    group, z_res, z_out, dz, ranges, inner = slabs
    blas = kernel == MATMUL
    pool = scratch.pool
    sides: list[Any] = []
    for x, (operm, odims, swap, shape, zpos, zdim) in ((a, op_a), (b, op_b)):
        if shape is not None:
            x = x.reshape(shape, order="F")
        if zpos < 0:
            # Not sliced: grouped once (a view, or one transposed copy).
            g = scratch.grouped(x, operm, odims, blas)
            sides.append(g.swapaxes(1, 2) if swap else g)
        else:
            sides.append((x if operm is None else x.transpose(operm), odims, swap, zpos, zdim))
    bt, n, m = dims
    step = -(-dz // ranges)
    slab_scratch = Scratch(pool)
    try:
        for lo in range(0, dz, step):
            hi = min(dz, lo + step)
            width = inner * (hi - lo)
            pair = []
            for side in sides:
                if side.__class__ is tuple:
                    xw, odims, swap, zpos, zdim = side
                    sub = xw[(slice(None),) * zpos + (slice(lo, hi),)]
                    sdims = list(odims)
                    sdims[zdim] = width
                    g = slab_scratch.grouped(sub, None, tuple(sdims), blas)
                    pair.append(g.swapaxes(1, 2) if swap else g)
                    del sub, g
                else:
                    pair.append(side)
            o3 = (width, n, m) if group == 0 else (bt, width, m) if group == 1 else (bt, n, width)
            size = o3[0] * o3[1] * o3[2]
            owner = pool.acquire(out_nd.dtype, size)
            slab_scratch.owners.append(owner)
            flat = owner[:size]
            # The kernel writes every element of the slab, the copy every element of
            # the output's range [lo, hi) of z.
            run_kernel(kernel, pair[0], pair[1], flat.reshape(o3))
            slab_shape = list(res_shape)
            slab_shape[z_res] = hi - lo
            dst = out_nd[(slice(None),) * z_out + (slice(lo, hi),)]
            _copyto(dst, flat.reshape(slab_shape, order="F").transpose(perm))
            del pair, flat, dst, owner
            slab_scratch.release()
    except BaseException:
        slab_scratch.owners = []  # dropped, never pooled (see execute)
        raise


def _release(pool: Any, vals: list[Any], owners: list[Any], vid: int, n_in: int) -> None:
    """Give an intermediate back to the pool: its one consumer has run."""
    if vid >= n_in:
        vals[vid] = None
        owner = owners[vid]
        owners[vid] = None
        if owner is not None:
            pool.recycle(owner, 0)
