"""An einsum planned in the memory order of its data (the namespace's ``einsum``).

`plan_for` plans an einsum over the operands' *logical* axes and writes the
output in the order the subscripts name, as `CpuEngine.einsum` documents. The
namespace follows a different rule (docs/namespace.md, "Memory order follows
the data"): a result comes out in the order its computation produces it. Two
things follow for an einsum:

* an operand whose axes lie in memory as a permutation of a compact
  column-major array (a C-ordered array, a ``permute_dims`` of a result) is
  planned with its subscripts in memory order, so the planner sees where its
  data is, reads it in place where the product can, and transposes the
  operand it would transpose for an owner of that layout;
* when the planned last step would transpose the product into the output's
  order (a `FINAL` or `PERMUTE` step), the output is planned in the product's
  own order instead and handed out as a permuted view of it: no transposing
  copy, and the next contraction reads the view's memory order in place (by
  the first point).

`memory_plan` works this out once per subscripts, shapes and operand orders;
the namespace caches the answer with its other plans.
"""

from __future__ import annotations

from .expression import plan_for
from .fast import binary_record
from .parser import expand
from .steps import FINAL, PERMUTE, Plan

__all__ = ["VIEW_MIN", "MemoryPlan", "memory_perm", "memory_plan"]

Shape = tuple[int, ...]

#: An output of fewer elements is written in the order asked for even where a view of
#: the product's order would do: a view costs about 10 us more over its life than a
#: tensor (its read root, the alias accounting when it dies), what transposing a
#: few thousand elements costs.
VIEW_MIN = 1 << 12


class MemoryPlan:
    """How the namespace runs one einsum: ``subscripts`` over the operands each permuted
    by ``perms[i]`` (None: as it is; ``perms`` None: every operand as it is) by
    ``plan``, whose output, permuted by ``axes`` (None: as it is), is the result in
    the order the caller's subscripts name."""

    __slots__ = ("axes", "binary", "perms", "plan", "subscripts")

    def __init__(
        self,
        subscripts: str,
        perms: tuple[tuple[int, ...] | None, ...] | None,
        plan: Plan,
        axes: tuple[int, ...] | None,
    ) -> None:
        self.subscripts = subscripts
        self.perms = perms
        self.plan = plan
        self.axes = axes
        # Does `CpuEngine.einsum` run ``subscripts`` on two plain tensors by its binary
        # fast record (`fast.binary_record`)? Else the plan is run directly.
        self.binary = binary_record(plan) is not None


def memory_perm(shape: Shape, strides: Shape) -> tuple[int, ...] | None:
    """The axis order in which an array of ``shape`` and ``strides`` (in elements) is
    compact column-major, fastest axis first (size-1 axes last), or None when it
    already is column-major in its own order or is no permutation of a compact array
    (a slice with gaps, a broadcast, a flip)."""
    axes = [i for i, d in enumerate(shape) if d != 1]
    order = sorted(axes, key=lambda i: strides[i])
    step = 1
    for i in order:
        if strides[i] != step:
            return None
        step *= shape[i]
    if order == axes:
        return None
    return (*order, *(i for i, d in enumerate(shape) if d == 1))


def memory_plan(
    op: str,
    subscripts: str,
    shapes: tuple[Shape, ...],
    perms: tuple[tuple[int, ...] | None, ...],
) -> MemoryPlan:
    """The `MemoryPlan` of ``subscripts`` over operands of logical ``shapes`` whose
    memory orders are ``perms`` (`memory_perm` of each; None: column-major).

    Validates as `CpuEngine.einsum` does (the same typed errors, for the subscripts
    as given). The output is planned in the product's own order only when that
    transposes fewer elements than writing the order asked for, and the output has
    at least `VIEW_MIN` elements.
    """
    base = plan_for(op, subscripts, shapes, "auto")
    n_out = 1
    for d in base.out_shape:
        n_out *= d
    if not any(perms) and (base.steps[-1].kind not in (FINAL, PERMUTE) or n_out < VIEW_MIN):
        return MemoryPlan(subscripts, None, base, None)
    terms, out = expand(op, subscripts, shapes)
    new_terms = []
    new_shapes = []
    for term, shape, perm in zip(terms, shapes, perms, strict=True):
        if perm is None:
            new_terms.append(term)
            new_shapes.append(shape)
        else:
            new_terms.append("".join(term[i] for i in perm))
            new_shapes.append(tuple(shape[i] for i in perm))
    lhs = ",".join(new_terms)
    run = lhs + "->" + out
    plan = base if not any(perms) else plan_for(op, run, tuple(new_shapes), "auto")
    axes = None
    last = plan.steps[-1]
    if (last.kind == FINAL or last.kind == PERMUTE) and n_out >= VIEW_MIN:
        # Output axis i is axis perm[i] of the product's own order.
        perm = last.perm
        natural = [""] * len(out)
        for i, p in enumerate(perm):
            natural[p] = out[i]
        nat_run = lhs + "->" + "".join(natural)
        nat = plan_for(op, nat_run, tuple(new_shapes), "auto")
        if nat.transposed_elements < plan.transposed_elements:
            run, plan, axes = nat_run, nat, tuple(perm)
    if not any(perms):
        if axes is None:
            return MemoryPlan(subscripts, None, base, None)
        return MemoryPlan(run, None, plan, axes)
    return MemoryPlan(run, perms, plan, axes)
