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

`einsum` and `contract_expression` live in the `einsum` package (parser,
paths, planner, executor, expression); their pairwise steps run through the
same kernel (`gemm`) as `dot_general`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import DTypeError, ValidationError
from ..layout import normalize_axis_tuple, strict_index
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ._base import EngineBase, Reads, dtype_mismatch
from ._core import shaped2 as _core_shaped2
from .einsum import ContractExpression, build_plan, plan_for
from .einsum.executor import execute
from .einsum.fast import _records as _fast_records
from .einsum.fast import remember as _fast_remember
from .einsum.fast import run_binary as _run_binary
from .einsum.parser import require_string, split_call
from .einsum.paths import optimize_key
from .einsum.planner import Plan
from .gemm import DotPlan, make_dot_plan

__all__ = ["ContractionOps"]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

_dot = np.dot
# The dtype categories of dtype.py: BLAS takes the float and complex ones.
_BLAS_T = tuple(d for d in DType if d.is_float or d.is_complex)
_NUMERIC = frozenset(d for d in DType if d.is_numeric)


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
            axes=value,
        ) from None
    return lhs, rhs


#: Validated `DotPlan`s of `dot_general`, per (shapes, contracting, batch): a repeated
#: call does no axis normalisation and no planning. Bounded: cleared when full.
_DOT_PLANS: dict[Any, DotPlan] = {}
_PLAN_CACHE_SIZE = 1024


def _plan_key(sa: Shape, sb: Shape, contracting: Any, batch: Any) -> Any:
    """The cache key of a `dot_general` call, or None when its axes are not two pairs
    of tuples of exact ints (a bool compares equal to an int but is refused as an
    axis, so only exact ints may share a validated plan)."""
    if contracting.__class__ is not tuple or batch.__class__ is not tuple:
        return None
    for pair in (contracting, batch):
        if len(pair) != 2:
            return None
        for axes in pair:
            if axes.__class__ is not tuple:
                return None
            for i in axes:
                if i.__class__ is not int:
                    return None
    return (sa, sb, contracting, batch)


def _matmul_kernel(fa: Array, fb: Array, flat: Array, mkn: tuple[int, int, int]) -> None:
    """2-D matmul of two column-major buffers into ``flat`` (``_core.shaped2``'s kernel).

    C^T = B^T @ A^T on C-ordered views of the column-major buffers; gemm writes
    every element of the N x M out (zeros when K == 0). np.dot: the same BLAS
    call as np.matmul without the ufunc dispatch, ~0.2 us less.
    """
    m, k, n = mkn
    _dot(fb.reshape(n, k), fa.reshape(k, m), flat.reshape(n, m))


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
                    m = shape_a[0]
                    n = shape_b[1]
                    # The per-operation protocol, compiled (engine/_core.pyx).
                    mkn = (m, shape_a[1], n)
                    r = _core_shaped2(_matmul_kernel, a, b, (m, n), m * n, dt, self, mkn)
                    if r is not None:
                        return r
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
            plan = make_dot_plan(sa, sb, (1,), (0,), batch, batch, (0,), (1,))
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
            key = _plan_key(sa, sb, contracting, batch)
            plan = _DOT_PLANS.get(key) if key is not None else None
            if plan is not None:
                # Validated and planned before for these shapes and axes.
                return self._run_dot(op, plan, xa, xb, da, out, reads)
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
                        f"give each {side} axis one role",
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
            plan = make_dot_plan(sa, sb, ca, cb, ba, bb)
            if key is not None:
                if len(_DOT_PLANS) >= _PLAN_CACHE_SIZE:
                    _DOT_PLANS.clear()
                _DOT_PLANS[key] = plan
            return self._run_dot(op, plan, xa, xb, da, out, reads)

    def _run_dot(
        self,
        op: str,
        plan: DotPlan,
        xa: Array,
        xb: Array,
        dtype: DType,
        out: Tensor | None,
        reads: Reads,
    ) -> Tensor:
        pool = self._pool

        def kernel(nd: Array) -> None:
            # _dot_into writes every element of the column-major result.
            plan.run(pool, xa, xb, nd.reshape(-1, order="F"))

        return self._run(op, plan.out_shape, dtype, kernel, out, reads)

    def einsum(
        self,
        subscripts: Any,
        *operands: Any,
        out: Tensor | None = None,
        optimize: Any = "auto",
    ) -> Tensor:
        """Einstein summation, e.g. ``eng.einsum("ij,jk->ik", a, b)``: **borrows** the
        operands for the call and returns a new pooled tensor (or writes ``out=``).

        Subscripts as numpy and opt_einsum take them: explicit (``->``) or implicit
        output, any symbol `opt_einsum.get_symbol` makes (hundreds of indices),
        the interleaved form ``eng.einsum(a, [0, 1], b, [1, 2], [0, 2])``,
        ellipsis, repeated indices (traces, diagonals) and size-1 broadcasting.
        ``optimize``: a path (opt_einsum's list of tuples), an opt_einsum strategy
        name (default ``"auto"``) or a path-finder object (opt_einsum
        ``PathOptimizer``, cotengra ``HyperOptimizer`` or ``ContractionTree``).
        Plans are cached (LRU) per subscripts, shapes and ``optimize``; each
        pairwise step is one batched product into pooled buffers, intermediates
        go back to the pool as soon as their consumer ran. Typed errors:
        `ValidationError` kinds SUBSCRIPTS, OPERAND_COUNT, RANK_MISMATCH,
        DIM_MISMATCH, DTYPE_MISMATCH, INVALID_PATH, INVALID_OPTIMIZE.

        >>> import numpy as np, tenferro as tfr
        >>> eng = tfr.CpuEngine()
        >>> a = tfr.from_numpy(np.ones((2, 3)))
        >>> eng.einsum(a, [0, 1], a, [2, 1], [0, 2]).to_numpy()
        array([[3., 3.],
               [3., 3.]])
        """
        fast = None
        if (
            out is None
            and len(operands) == 2
            and subscripts.__class__ is str
            and optimize.__class__ is str
        ):
            a, b = operands
            if a.__class__ is Tensor and b.__class__ is Tensor:
                # A binary einsum on plain tensors: its fast record (einsum/fast.py).
                fast = (subscripts, optimize, a._shape, b._shape)
                rec = _fast_records.get(fast)
                if rec:
                    t = _run_binary(self, rec, a, b, _BLAS_T)
                    if t is not None:
                        return t
                elif rec is False:
                    fast = None
        op = "CpuEngine.einsum"
        subs, ops = split_call(op, (subscripts, *operands))
        key = optimize_key(op, optimize)
        if not ops:
            raise ValidationError(
                op, "einsum needs at least one operand", kind="OPERAND_COUNT", expected=1, actual=0
            )
        with Reads() as reads:
            arrays, dtype = _read_all(op, ops, reads)
            shapes = tuple(arr.shape for arr in arrays)
            plan = plan_for(op, subs, shapes, key)
            if fast is not None:
                _fast_remember(fast, plan)
            return self._einsum_execute(op, plan, arrays, dtype, out, reads)

    def _einsum_planned(self, plan: Plan, operands: tuple[Any, ...]) -> Tensor:
        """`einsum` of ``operands`` by a plan already validated for their shapes and one
        dtype (the namespace's plan cache, `interface.einsum_run`): no parsing, no path
        search, no plan lookup; the operands are read (pinned) as `einsum` reads them."""
        op = "CpuEngine.einsum"
        with Reads() as reads:
            arrays, dtype = _read_all(op, operands, reads)
            return self._einsum_execute(op, plan, arrays, dtype, None, reads)

    def contract_expression(
        self, subscripts: str, *shapes: Any, optimize: Any = "auto"
    ) -> ContractExpression:
        """Plan ``subscripts`` over operand ``shapes`` once; call the result on tensors.

        ``expr = eng.contract_expression("ab,bc->ac", (2, 3), (3, 4))`` fixes the
        path (``optimize`` as in `einsum`), each step's product mapping and
        layouts, and the intermediate sizes; ``expr(a, b)`` (**borrows** the
        operands, returns a new pooled tensor, or writes ``out=``) only runs
        them, for any numeric dtype and any strides of those shapes. Nothing is
        allocated or read here.

        >>> import numpy as np, tenferro as tfr
        >>> eng = tfr.CpuEngine()
        >>> expr = eng.contract_expression("ab,bc->ac", (2, 3), (3, 2))
        >>> a = tfr.from_numpy(np.ones((2, 3)))
        >>> b = tfr.from_numpy(np.ones((3, 2)))
        >>> expr(a, b).to_numpy()
        array([[3., 3.],
               [3., 3.]])
        """
        op = "CpuEngine.contract_expression"
        key = optimize_key(op, optimize)
        checked = tuple(_shape_arg(op, s, i) for i, s in enumerate(shapes))
        require_string(op, subscripts)
        return ContractExpression(self, subscripts, build_plan(op, subscripts, checked, key))

    def _einsum_run(
        self, op: str, plan: Plan, operands: Any, out: Any, check_shapes: bool
    ) -> Tensor:
        """Run a compiled plan on ``operands`` (borrowed for the call)."""
        with Reads() as reads:
            arrays, dtype = _read_all(op, operands, reads)
            if check_shapes:
                got = tuple(arr.shape for arr in arrays)
                if got != plan.in_shapes:
                    raise ValidationError(
                        op,
                        f"the expression was compiled for shapes {plan.in_shapes}, got {got}; "
                        "make a new expression for other shapes",
                        kind="DIM_MISMATCH",
                        expected=plan.in_shapes,
                        actual=got,
                    )
            return self._einsum_execute(op, plan, arrays, dtype, out, reads)

    def _einsum_execute(
        self, op: str, plan: Plan, arrays: list[Array], dtype: DType, out: Any, reads: Reads
    ) -> Tensor:
        pool = self._pool
        if out is None:
            # The output is taken from the pool right before the last step (see
            # `execute`), not before the first one as `_run` would.
            made: list[Array] = []

            def output() -> Array:
                owner, flat, nd = self._fresh(plan.out_shape, dtype)
                made[:] = (owner, flat)
                return nd

            try:
                # The plan's last step writes every element of the output.
                execute(pool, plan, arrays, dtype.numpy, output)
            except BaseException:
                # INVARIANT (as in `_run`): a failed kernel's output is dropped, never
                # pooled; the traceback keeps writable arrays over it.
                made.clear()
                raise
            return self._wrap(plan.out_shape, dtype, made[0], made[1])

        def kernel(nd: Array) -> None:
            # The plan's last step writes every element of the output (np.einsum with
            # out=, a product kernel, or a full transposition copy).
            execute(pool, plan, arrays, nd.dtype, lambda: nd)

        return self._run(op, plan.out_shape, dtype, kernel, out, reads)


def _read_all(op: str, operands: Any, reads: Reads) -> tuple[list[Array], DType]:
    """The operands' arrays (pinned by ``reads``) and their one dtype."""
    if not operands:
        raise ValidationError(
            op, "einsum needs at least one operand", kind="OPERAND_COUNT", expected=1, actual=0
        )
    if len(operands) > 2:
        # Networks of many plain tensors of one dtype: pinned as one group (see
        # `Reads.pin_all`), each viewed column-major in its shape as `operand` does.
        dt = operands[0]._dtype if operands[0].__class__ is Tensor else None
        bufs = []
        for x in operands:
            if x.__class__ is not Tensor or x._dtype is not dt:
                break
            st = x._st
            if st.__class__ is not HostBuffer:
                break
            bufs.append(st)
        else:
            assert dt is not None
            if dt in _NUMERIC:
                reads.pin_all(tuple(bufs), op)
                return [
                    st.flat if len(x._shape) == 1 else st.flat.reshape(x._shape, order="F")
                    for x, st in zip(operands, bufs, strict=True)
                ], dt
    arrays = []
    dtype: DType | None = None
    for x in operands:
        arr, dt, _ = reads.operand(x, op)
        if dtype is None:
            dtype = dt
        _dtype_check(op, dtype, dt)
        arrays.append(arr)
    assert dtype is not None
    return arrays, dtype


def _shape_arg(op: str, shape: Any, i: int) -> tuple[int, ...]:
    """A shape given to contract_expression: a tuple of non-negative ints."""
    try:
        dims = tuple(strict_index(d) for d in shape)
    except TypeError:
        dims = None
    if dims is None or any(d < 0 for d in dims):
        raise ValidationError(
            op,
            f"shape {i} must be a sequence of non-negative ints, got {shape!r}",
            kind="INVALID_SHAPE",
            shape=shape,
        )
    return dims
