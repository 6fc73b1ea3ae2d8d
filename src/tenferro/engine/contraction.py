"""Contractions: `matmul`, `dot_general` and `einsum`, at BLAS speed into pooled outputs.

Layout conventions (DESIGN §4): tensors are column-major and batch dimensions are
*trailing*: ``matmul`` maps ``[M, K, B...] x [K, N, B...] -> [M, N, B...]`` and
``dot_general``'s output is lhs-free ++ rhs-free ++ batch.

How a contraction reaches BLAS: a column-major ``[M, K, B]`` array is, byte for
byte, the C-ordered ``[B, K, M]`` array of its transposes. So ``C = A @ B`` on
column-major operands is the C-ordered ``C^T = B^T @ A^T``, one `np.matmul` on
the transposed views with ``out=`` the pooled output: no copy of the operands
and no temporary for the result. Operands whose axes cannot be grouped into
``[M, K, B]`` without a copy (or whose strides BLAS cannot take) are first
transposed into pooled scratch buffers, which go back to the pool at once.

`einsum` lets opt_einsum choose the pairwise order (cached per subscripts,
shapes and dtype); every pairwise step with a contracted index (or an outer
product) runs through the same kernel as `dot_general`; traces, diagonals,
single-operand sums and Hadamard-like steps run through ``np.einsum(out=...)``
into pooled buffers. Intermediates go back to the pool as soon as consumed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import DTypeError, ValidationError
from ..layout import normalize_axis_tuple, shape_size
from ..storage import host as _host
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ._base import EngineBase, Reads, dtype_mismatch

__all__ = ["ContractionOps"]

_new = object.__new__  # the hot path's inlined tensor._pooled

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

# The engine-read registry (`HostBuffer.pin`), bound by assignment: CPython 3.11
# compiles a method call on an *imported* name (`from ... import reading`) as a
# module attribute call, without the list.append specialization (~40 ns more).
_reading = _host.reading
_matmul = np.matmul
_dot = np.dot
_einsum = np.einsum
_BLAS_T = (DType.F64, DType.F32, DType.C64, DType.C32)
_NUMERIC = frozenset(DType) - {DType.BOOL}


# ---------------------------------------------------------------------- validation helpers
def _dtype_check(op: str, da: DType, db: DType) -> None:
    if da is not db:
        raise dtype_mismatch(op, da, db)
    if da not in _NUMERIC:
        raise DTypeError(
            op,
            f"{op.split('.')[-1]} needs a numeric dtype, got {da.name}",
            kind="UNSUPPORTED_DTYPE",
            dtype=da,
        )


def _axes(op: str, axes: Any, ndim: int, what: str) -> tuple[int, ...]:
    return normalize_axis_tuple(axes, ndim, op, what, duplicate_kind="DUPLICATE_AXES")


def _pair(op: str, value: Any, what: str) -> tuple[Any, Any]:
    try:
        lhs, rhs = value
    except (TypeError, ValueError):
        raise ValidationError(
            op,
            f"{what} must be a pair (lhs_axes, rhs_axes), got {value!r}",
            kind="INVALID_AXES",
        ) from None
    return lhs, rhs


# ---------------------------------------------------------------------- the BLAS kernel
def _blasable(x: Array) -> bool:
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


def _grouped_view(t: Array, shape: Shape) -> Array | None:
    """``t`` reshaped column-major to ``shape`` and transposed, if that needs no copy."""
    try:
        g: Array = np.reshape(t, shape, order="F", copy=False).T
    except ValueError:
        return None  # the axes cannot be grouped without a copy
    except TypeError:  # pragma: no cover - numpy 2.0 has no copy= on reshape
        r = t.reshape(shape, order="F")
        return r.T if r.size == 0 or np.may_share_memory(r, t) else None
    return g


class _Scratch:
    """Pooled scratch buffers of one kernel call, all given back at the end."""

    __slots__ = ("owners", "pool")

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.owners: list[Array] = []

    def grouped(self, arr: Array, perm: Sequence[int], m: int, k: int, bt: int) -> Array:
        """``arr`` permuted by ``perm`` as the C-ordered ``[bt, k, m]`` (column-major
        ``[m, k, bt]``) array np.matmul wants: a view when strides allow, else a
        transposition into a pooled scratch buffer."""
        t = arr.transpose(perm)
        g = _grouped_view(t, (m, k, bt))
        if g is not None and _blasable(g):
            return g
        size = m * k * bt
        owner = self.pool.acquire(arr.dtype, size)
        self.owners.append(owner)
        flat = owner[:size]
        # copyto writes every element of the column-major destination in t's shape.
        np.copyto(flat.reshape(t.shape, order="F"), t)
        grouped: Array = flat.reshape((bt, k, m))
        return grouped

    def release(self) -> None:
        pool = self.pool
        owners = self.owners
        self.owners = []
        for owner in owners:
            pool.recycle(owner, 0)


class _DotPlan:
    """A validated dot_general: permutations that group each operand, and sizes."""

    __slots__ = ("bt", "k", "m", "n", "out_shape", "perm_a", "perm_b")

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


def _make_dot_plan(
    sa: Shape,
    sb: Shape,
    ca: Sequence[int],
    cb: Sequence[int],
    ba: Sequence[int],
    bb: Sequence[int],
    free_a: Sequence[int] | None = None,
    free_b: Sequence[int] | None = None,
) -> _DotPlan:
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
    return _DotPlan((*free_a, *ca, *ba), (*cb, *free_b, *bb), m, k, n, bt, out_shape)


def _dot_into(pool: Any, plan: _DotPlan, a: Array, b: Array, out_flat: Array) -> None:
    """Write ``a . b`` (per ``plan``) into ``out_flat`` (column-major, all elements).

    ``C^T = B^T A^T`` per batch on the C-ordered transposed views; np.matmul
    writes every element of its ``out`` (an empty contraction writes zeros).
    """
    scratch = _Scratch(pool)
    try:
        a3 = scratch.grouped(a, plan.perm_a, plan.m, plan.k, plan.bt)
        b3 = scratch.grouped(b, plan.perm_b, plan.k, plan.n, plan.bt)
        out3 = out_flat.reshape((plan.bt, plan.n, plan.m))
        if plan.k == 1:
            # Nothing summed (an outer product per batch): np.einsum's product loop
            # writes every element of out3 at memory speed (a K=1 GEMM is about
            # three times slower, a broadcast multiply a third slower).
            _einsum("bn,bm->bnm", b3[:, :, 0], a3[:, 0, :], out=out3)
        else:
            _matmul(b3, a3, out=out3)
    except BaseException:
        # Dropped, never pooled: the traceback keeps this frame's writable views of
        # the scratch buffers (a3, b3; see EngineBase._run).
        scratch.owners = []
        raise
    scratch.release()


# ---------------------------------------------------------------------- einsum planning
_Step = tuple[Any, ...]


class _EinsumPlan:
    __slots__ = ("n_inputs", "out_shape", "steps")

    def __init__(self, n_inputs: int, steps: list[_Step], out_shape: Shape) -> None:
        self.n_inputs = n_inputs
        self.steps = steps
        self.out_shape = out_shape


def _parse_subscripts(op: str, subscripts: Any, ndims: Sequence[int]) -> tuple[list[str], str]:
    if not isinstance(subscripts, str):
        raise ValidationError(
            op, f"subscripts must be a string, got {type(subscripts).__name__}", kind="SUBSCRIPTS"
        )
    s = subscripts.replace(" ", "")
    if "." in s:
        raise ValidationError(
            op,
            f"ellipsis (...) is not supported in {subscripts!r}; name every axis with a letter",
            kind="SUBSCRIPTS",
            subscripts=subscripts,
        )
    if s.count("->") > 1 or ("-" in s.replace("->", "")) or (">" in s.replace("->", "")):
        raise ValidationError(
            op, f"malformed subscripts {subscripts!r}", kind="SUBSCRIPTS", subscripts=subscripts
        )
    if "->" in s:
        lhs, rhs = s.split("->")
        explicit = True
    else:
        lhs, rhs = s, ""
        explicit = False
    terms = lhs.split(",")
    for term in [*terms, rhs]:
        for ch in term:
            if not (ch.isascii() and ch.isalpha()):
                raise ValidationError(
                    op,
                    f"subscript {ch!r} in {subscripts!r} is not an ASCII letter",
                    kind="SUBSCRIPTS",
                    subscripts=subscripts,
                )
    if len(terms) != len(ndims):
        raise ValidationError(
            op,
            f"{subscripts!r} names {len(terms)} operand(s) but {len(ndims)} were given",
            kind="OPERAND_COUNT",
            expected=len(terms),
            actual=len(ndims),
        )
    for i, (term, nd) in enumerate(zip(terms, ndims, strict=True)):
        if len(term) != nd:
            raise ValidationError(
                op,
                f"operand {i} has {nd} axes but its subscripts {term!r} name {len(term)}",
                kind="RANK_MISMATCH",
                operand=i,
            )
    counts: dict[str, int] = {}
    for term in terms:
        for ch in term:
            counts[ch] = counts.get(ch, 0) + 1
    if explicit:
        if len(set(rhs)) != len(rhs):
            raise ValidationError(
                op,
                f"output subscripts {rhs!r} repeat a letter",
                kind="SUBSCRIPTS",
                subscripts=subscripts,
            )
        missing = [ch for ch in rhs if ch not in counts]
        if missing:
            raise ValidationError(
                op,
                f"output subscript(s) {''.join(missing)!r} appear in no input",
                kind="SUBSCRIPTS",
                subscripts=subscripts,
            )
    else:
        rhs = "".join(sorted(ch for ch, c in counts.items() if c == 1))
    return terms, rhs


def _label_sizes(op: str, terms: Sequence[str], shapes: Sequence[Shape]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        for ch, d in zip(term, shape, strict=True):
            prev = sizes.setdefault(ch, d)
            if prev != d:
                raise ValidationError(
                    op,
                    f"index {ch!r} has size {prev} in one place and {d} in operand {i}",
                    kind="DIM_MISMATCH",
                    index=ch,
                    sizes=(prev, d),
                )
    return sizes


def _order_for_output(
    out: str, fa: list[str], fb: list[str], batch: list[str]
) -> tuple[bool, list[str], list[str], list[str]] | None:
    """Orders (and whether to swap a and b) that make a dot result land in ``out``."""
    la, lb, lt = len(fa), len(fb), len(batch)
    if la + lb + lt != len(out) or set(out[la + lb :]) != set(batch):
        return None
    tail = list(out[la + lb :])
    if set(out[:la]) == set(fa) and set(out[la : la + lb]) == set(fb):
        return False, list(out[:la]), list(out[la : la + lb]), tail
    if set(out[:lb]) == set(fb) and set(out[lb : lb + la]) == set(fa):
        return True, list(out[lb : lb + la]), list(out[:lb]), tail
    return None


def _plan_einsum(terms: list[str], out: str, sizes: dict[str, int]) -> _EinsumPlan:
    import opt_einsum

    n_in = len(terms)
    out_shape = tuple(sizes[ch] for ch in out)
    steps: list[_Step] = []
    if n_in == 1:
        steps.append(("einsum", (0,), f"{terms[0]}->{out}", out_shape, -1))
        return _EinsumPlan(n_in, steps, out_shape)
    subs = ",".join(terms) + "->" + out
    shapes = [tuple(sizes[ch] for ch in t) for t in terms]
    path, _ = opt_einsum.contract_path(subs, *shapes, shapes=True, optimize="auto")
    live: list[tuple[int, str]] = [(i, t) for i, t in enumerate(terms)]  # (slot, labels)
    next_slot = n_in
    n_steps = len(path)
    for step_no, contraction in enumerate(path):
        last = step_no == n_steps - 1
        picked = sorted(contraction, reverse=True)
        chosen = [live.pop(i) for i in picked][::-1]
        rest = "".join(lbl for _, lbl in live) + out
        if len(chosen) != 2:
            slots = tuple(s for s, _ in chosen)
            labels = "".join(lbl for _, lbl in chosen)
            res = out if last else "".join(dict.fromkeys(ch for ch in labels if ch in rest))
            expr = ",".join(lbl for _, lbl in chosen) + "->" + res
            dst = -1 if last else next_slot
            steps.append(("einsum", slots, expr, tuple(sizes[ch] for ch in res), dst))
            live.append((dst, res))
            next_slot += 1
            continue
        (sa, la), (sb, lb) = chosen
        # Single-operand pre-reductions: diagonals (repeated letters) and letters that
        # appear nowhere else are summed out first, with np.einsum.
        reduced = []
        for slot, lbl, other in ((sa, la, lb), (sb, lb, la)):
            keep = "".join(dict.fromkeys(ch for ch in lbl if ch in rest or ch in other))
            if keep != lbl:
                steps.append(
                    (
                        "einsum",
                        (slot,),
                        f"{lbl}->{keep}",
                        tuple(sizes[ch] for ch in keep),
                        next_slot,
                    )
                )
                reduced.append((next_slot, keep))
                next_slot += 1
            else:
                reduced.append((slot, lbl))
        (sa, la), (sb, lb) = reduced
        shared = [ch for ch in la if ch in lb]
        batch = [ch for ch in shared if ch in rest]
        contracted = [ch for ch in shared if ch not in rest]
        fa = [ch for ch in la if ch not in lb]
        fb = [ch for ch in lb if ch not in la]
        size_fa = shape_size([sizes[ch] for ch in fa])
        size_fb = shape_size([sizes[ch] for ch in fb])
        if batch and (not contracted or (size_fa == 1 and size_fb == 1)):
            # Hadamard-like (no summed index), or one dot product per batch entry:
            # np.einsum's product loops, not a GEMM per batch entry.
            res = out if last else "".join(fa + fb + batch)
            dst = -1 if last else next_slot
            steps.append(
                ("einsum", (sa, sb), f"{la},{lb}->{res}", tuple(sizes[ch] for ch in res), dst)
            )
            live.append((dst, res))
            next_slot += 1
            continue
        direct = _order_for_output(out, fa, fb, batch) if last else None
        swap = False
        if direct is not None:
            swap, fa, fb, batch = direct
        if swap:
            sa, la, sb, lb = sb, lb, sa, la
            fa, fb = fb, fa
        res = "".join(fa + fb + batch)
        pa = [la.index(ch) for ch in fa + contracted + batch]
        pb = [lb.index(ch) for ch in contracted + fb + batch]
        plan = _DotPlan(
            tuple(pa),
            tuple(pb),
            shape_size([sizes[ch] for ch in fa]),
            shape_size([sizes[ch] for ch in contracted]),
            shape_size([sizes[ch] for ch in fb]),
            shape_size([sizes[ch] for ch in batch]),
            tuple(sizes[ch] for ch in res),
        )
        if last and direct is not None:
            steps.append(("dot", sa, sb, plan, -1))
            live.append((-1, res))
        else:
            steps.append(("dot", sa, sb, plan, next_slot))
            live.append((next_slot, res))
            next_slot += 1
    final_slot, final_labels = live[-1]
    if final_slot != -1:
        perm = tuple(final_labels.index(ch) for ch in out)
        steps.append(("transpose", final_slot, perm))
    return _EinsumPlan(n_in, steps, out_shape)


_plan_lock = threading.Lock()
_plans: dict[tuple[Any, ...], _EinsumPlan] = {}
_MAX_PLANS = 1024


def _einsum_plan(op: str, subscripts: str, shapes: tuple[Shape, ...], dtype: DType) -> _EinsumPlan:
    key = (subscripts, shapes, dtype)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    terms, out = _parse_subscripts(op, subscripts, [len(s) for s in shapes])
    sizes = _label_sizes(op, terms, shapes)
    plan = _plan_einsum(terms, out, sizes)
    with _plan_lock:
        if len(_plans) >= _MAX_PLANS:
            _plans.clear()
        _plans[key] = plan
    return plan


# ---------------------------------------------------------------------- the mixin
class ContractionOps(EngineBase):
    """Contraction methods of `CpuEngine` (mixed in; see the module docstring)."""

    __slots__ = ()

    def matmul(self, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
        """Matrix product: ``[M, K] x [K, N] -> [M, N]``, batched over *trailing* axes
        (``[M, K, B...] x [K, N, B...] -> [M, N, B...]``, equal batch shapes).

        One BLAS call on the operands' memory (no copies for compact or
        transposed operands) into a pooled output (or ``out=``).
        """
        if out is None and a.__class__ is Tensor and b.__class__ is Tensor:
            sa = a._st
            sb = b._st
            dt = a._dtype
            if (
                sa.__class__ is HostBuffer
                and sb.__class__ is HostBuffer
                and dt is b._dtype
                and dt in _BLAS_T
            ):
                shape_a = a._shape
                shape_b = b._shape
                if len(shape_a) == 2 and len(shape_b) == 2 and shape_a[1] == shape_b[0]:
                    # Pin both, THEN check for a writer (see HostBuffer.pin).
                    pin = (sa, sb)
                    _reading.append(pin)
                    try:
                        if sa.exclusive is None and sb.exclusive is None:
                            m, k = shape_a
                            n = shape_b[1]
                            size = m * n
                            fa = sa.flat
                            pool = self._pool
                            owner = pool.acquire(fa.dtype, size)
                            flat = owner if len(owner) == size else owner[:size]
                            try:
                                # C^T = B^T @ A^T on C-ordered views of the column-major
                                # buffers; gemm writes every element of the N x M out
                                # (zeros when K == 0). np.dot: the same BLAS call as
                                # np.matmul without the ufunc dispatch, ~0.2 us less.
                                _dot(sb.flat.reshape(n, k), fa.reshape(k, m), flat.reshape(n, m))
                            except BaseException:
                                # Dropped, never pooled: the traceback keeps this
                                # frame's writable `owner` (EngineBase._run).
                                del flat, owner
                                raise
                            # INVARIANT: the same fields as tensor._pooled, inlined (this
                            # is the 2-D matmul hot path); test_engine_interface checks
                            # that the two do not drift apart.
                            t: Tensor = _new(Tensor)
                            t._shape = (m, n)
                            t._dtype = dt
                            t._st = HostBuffer(owner, flat, self._recycler)
                            t._moved = None
                            return t
                    except BaseException:
                        # The traceback keeps this frame's `fa`, an operand's internal
                        # array: never pool the operands' buffers (Reads.__exit__).
                        sa.recycler = sb.recycler = None
                        raise
                    finally:
                        _reading.remove(pin)
        return self._matmul_general(a, b, out)

    def _matmul_general(self, a: Any, b: Any, out: Tensor | None) -> Tensor:
        op = "CpuEngine.matmul"
        with Reads() as reads:
            xa, da, sa = reads.operand(a, op)
            xb, db, sb = reads.operand(b, op)
            _dtype_check(op, da, db)
            if len(sa) < 2 or len(sb) < 2 or len(sa) != len(sb):
                raise ValidationError(
                    op,
                    f"matmul needs two operands of equal rank >= 2 ([M, K, B...] x [K, N, B...]), "
                    f"got shapes {sa} and {sb}; use dot_general or einsum for other products",
                    kind="RANK_MISMATCH",
                    shapes=(sa, sb),
                )
            if sa[1] != sb[0]:
                raise ValidationError(
                    op,
                    f"inner dimensions differ: {sa} x {sb} (K = {sa[1]} vs {sb[0]})",
                    kind="DIM_MISMATCH",
                    shapes=(sa, sb),
                )
            if sa[2:] != sb[2:]:
                raise ValidationError(
                    op,
                    f"batch dimensions (trailing) differ: {sa[2:]} vs {sb[2:]}; broadcast "
                    "explicitly with eng.broadcast_in_dim",
                    kind="DIM_MISMATCH",
                    shapes=(sa, sb),
                )
            batch = tuple(range(2, len(sa)))
            plan = _make_dot_plan(sa, sb, (1,), (0,), batch, batch, (0,), (1,))
            return self._run_dot(op, plan, xa, xb, da, out, reads)

    def dot_general(
        self,
        a: Any,
        b: Any,
        contracting: Any = ((), ()),
        batch: Any = ((), ()),
        out: Tensor | None = None,
    ) -> Tensor:
        """General contraction: ``contracting=(lhs_axes, rhs_axes)`` are summed over,
        ``batch=(lhs_axes, rhs_axes)`` are kept and paired.

        The output axes are lhs-free ++ rhs-free ++ batch (each in operand order).
        Typed errors: mismatched sizes (DIM_MISMATCH), duplicate axes
        (DUPLICATE_AXES), an axis both contracting and batch (ROLE_CONFLICT),
        unequal dtypes (DTYPE_MISMATCH).
        """
        op = "CpuEngine.dot_general"
        with Reads() as reads:
            xa, da, sa = reads.operand(a, op)
            xb, db, sb = reads.operand(b, op)
            _dtype_check(op, da, db)
            ca_raw, cb_raw = _pair(op, contracting, "contracting")
            ba_raw, bb_raw = _pair(op, batch, "batch")
            ca = _axes(op, ca_raw, len(sa), "lhs contracting")
            cb = _axes(op, cb_raw, len(sb), "rhs contracting")
            ba = _axes(op, ba_raw, len(sa), "lhs batch")
            bb = _axes(op, bb_raw, len(sb), "rhs batch")
            for side, c, bt in (("lhs", ca, ba), ("rhs", cb, bb)):
                both = sorted(set(c) & set(bt))
                if both:
                    raise ValidationError(
                        op,
                        f"{side} axes {both} are both contracting and batch; an axis has one role",
                        kind="ROLE_CONFLICT",
                        axes=both,
                    )
            for what, x, y in (("contracting", ca, cb), ("batch", ba, bb)):
                if len(x) != len(y):
                    raise ValidationError(
                        op,
                        f"{what} axes pair up one to one, got {len(x)} lhs and {len(y)} rhs axes",
                        kind="DIM_MISMATCH",
                    )
                for i, j in zip(x, y, strict=True):
                    if sa[i] != sb[j]:
                        raise ValidationError(
                            op,
                            f"{what} axes differ in size: lhs axis {i} has {sa[i]}, rhs axis {j} "
                            f"has {sb[j]}",
                            kind="DIM_MISMATCH",
                            lhs_axis=i,
                            rhs_axis=j,
                            sizes=(sa[i], sb[j]),
                        )
            plan = _make_dot_plan(sa, sb, ca, cb, ba, bb)
            return self._run_dot(op, plan, xa, xb, da, out, reads)

    def _run_dot(
        self,
        op: str,
        plan: _DotPlan,
        xa: Array,
        xb: Array,
        dtype: DType,
        out: Tensor | None,
        reads: Reads,
    ) -> Tensor:
        pool = self._pool

        def kernel(nd: Array) -> None:
            # _dot_into writes every element of the column-major result.
            _dot_into(pool, plan, xa, xb, nd.reshape(-1, order="F"))

        return self._run(op, plan.out_shape, dtype, kernel, out, reads)

    def einsum(self, subscripts: str, *operands: Any, out: Tensor | None = None) -> Tensor:
        """Einstein summation, e.g. ``eng.einsum("ij,jk->ik", a, b)``.

        Explicit (``->``) and implicit output (letters appearing once, sorted),
        repeated letters (traces, diagonals), outer products and full reductions
        to rank 0. opt_einsum picks the pairwise order (cached); each step runs on
        this engine into pooled buffers, and intermediates go back to the pool as
        soon as they are consumed. Ellipsis is not supported: name every axis.
        """
        op = "CpuEngine.einsum"
        if not operands:
            raise ValidationError(op, "einsum needs at least one operand", kind="OPERAND_COUNT")
        with Reads() as reads:
            arrays = []
            dtype: DType | None = None
            for x in operands:
                arr, dt, _ = reads.operand(x, op)
                if dtype is None:
                    dtype = dt
                _dtype_check(op, dtype, dt)
                arrays.append(arr)
            assert dtype is not None
            shapes = tuple(arr.shape for arr in arrays)
            plan = _einsum_plan(op, subscripts, shapes, dtype)
            pool = self._pool

            def kernel(nd: Array) -> None:
                # The plan's last step writes every element of the output (np.einsum with
                # out=, the dot kernel, or a full transposition copy).
                _run_einsum(pool, plan, arrays, nd)

            return self._run(op, plan.out_shape, dtype, kernel, out, reads)


def _run_einsum(pool: Any, plan: _EinsumPlan, inputs: list[Array], out_nd: Array) -> None:
    vals: dict[int, Array] = dict(enumerate(inputs))
    owners: dict[int, Array] = {}
    n_in = plan.n_inputs
    dtype = out_nd.dtype

    def new_value(slot: int, shape: Shape) -> Array:
        size = shape_size(shape)
        owner = pool.acquire(dtype, size)
        owners[slot] = owner
        flat: Array = owner[:size]
        nd = flat if len(shape) == 1 else flat.reshape(shape, order="F")
        vals[slot] = nd
        return nd

    def consume(slot: int) -> None:
        # Intermediates go back to the pool as soon as a step has consumed them.
        if slot >= n_in:
            vals.pop(slot, None)
            owner = owners.pop(slot, None)
            if owner is not None:
                pool.recycle(owner, 0)

    try:
        for step in plan.steps:
            kind = step[0]
            if kind == "einsum":
                _, slots, expr, shape, dst = step
                target = out_nd if dst == -1 else new_value(dst, shape)
                # np.einsum with out= writes every element of target.
                _einsum(expr, *[vals[s] for s in slots], out=target)
                for s in slots:
                    consume(s)
            elif kind == "dot":
                _, sa, sb, dplan, dst = step
                target = out_nd if dst == -1 else new_value(dst, dplan.out_shape)
                _dot_into(pool, dplan, vals[sa], vals[sb], target.reshape(-1, order="F"))
                consume(sa)
                consume(sb)
            else:
                _, src, perm = step
                # A full transposition copy writes every element of out_nd.
                np.copyto(out_nd, vals[src].transpose(perm))
                consume(src)
    except BaseException:
        # Dropped, never pooled: the traceback keeps this frame's writable views of
        # the intermediates (target; see EngineBase._run).
        owners.clear()
        raise
    vals.clear()
    for owner in owners.values():
        pool.recycle(owner, 0)
    owners.clear()
