"""Einsum at tensor-network scale, in opt_einsum's shape: one question per module.

* `parser`: subscripts (string or interleaved, any opt_einsum symbol, ellipsis,
  implicit output, size-1 broadcasting) checked against the operand shapes;
* `paths`: the contraction path, given or found by opt_einsum / cotengra;
* `planner`: the path turned into pairwise products with chosen layouts;
* `steps`: what a plan is made of, one named record per step kind;
* `executor`: a plan run into pooled buffers;
* `expression`: the plan cache and compiled expressions.

The engine entry points are `CpuEngine.einsum` and
`CpuEngine.contract_expression` (engine/contraction.py).
"""

from .expression import ContractExpression, build_plan, plan_for
from .planner import Plan, plans_built

__all__ = ["ContractExpression", "Plan", "build_plan", "plan_for", "plans_built"]
