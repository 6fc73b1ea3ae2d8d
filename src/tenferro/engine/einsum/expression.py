"""Plans built once: the bounded plan cache of `einsum`, and compiled expressions.

`plan_for` is what `eng.einsum` calls: a `functools.lru_cache` (least recently
used out first, 1024 plans) keyed by the subscripts as given, the operand
shapes and the ``optimize`` key. Plans do not depend on the dtype or on the
operands' strides: the layout of inputs is checked when a step reads them
(a view when the strides group, a pooled transposition otherwise), so one
plan serves every dtype and layout of the same shapes.

`ContractExpression` is the plan of one einsum over fixed shapes, bound to an
engine: calling it only runs the plan (`plans_built` does not move), the way
`opt_einsum.contract_expression` separates planning from running.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .executor import prepare
from .parser import parse
from .paths import find_path
from .planner import Plan, compile_plan

__all__ = ["ContractExpression", "build_plan", "plan_for"]

Shape = tuple[int, ...]

#: How many plans `plan_for` keeps (least recently used out first).
PLAN_CACHE_SIZE = 1024


def build_plan(op: str, subscripts: str, shapes: Sequence[Shape], key: Any) -> Plan:
    """Parse, find the path and compile (always plans; typed errors on bad input)."""
    spec = parse(op, subscripts, shapes)
    path = find_path(op, spec.terms, spec.out, spec.sizes, key)
    plan = compile_plan(spec, path)
    # The executor's per-step views, worked out here so that no run pays for them.
    plan.fast = prepare(plan)
    return plan


@functools.lru_cache(maxsize=PLAN_CACHE_SIZE)
def plan_for(op: str, subscripts: str, shapes: tuple[Shape, ...], key: Any) -> Plan:
    """`build_plan`, cached (errors are not cached: a bad call raises every time)."""
    return build_plan(op, subscripts, shapes, key)


class ContractExpression:
    """A compiled einsum over fixed operand shapes, run on one engine.

    Made by `CpuEngine.contract_expression`; ``expr(*operands, out=None)``
    contracts tensors or views of exactly those shapes (any one numeric dtype,
    any strides) and returns a new pooled tensor (or writes ``out=``), like
    ``eng.einsum`` but without looking anything up: the path, each step's
    product mapping and layouts, and the intermediate sizes were fixed when the
    expression was made. Operands are borrowed for the call only.
    """

    __slots__ = ("_engine", "_plan", "subscripts")

    def __init__(self, engine: Any, subscripts: str, plan: Plan) -> None:
        self._engine = engine
        self._plan = plan
        self.subscripts = subscripts

    @property
    def shapes(self) -> tuple[Shape, ...]:
        """The operand shapes this expression contracts."""
        return self._plan.in_shapes

    @property
    def out_shape(self) -> Shape:
        """The shape of the result."""
        return self._plan.out_shape

    @property
    def path(self) -> list[tuple[int, ...]]:
        """The pairwise path in SSA form (inputs ``0..n-1``, then one id per result)."""
        return list(self._plan.path)

    @property
    def largest_live_elements(self) -> int:
        """The most intermediate and output elements alive at once while it runs."""
        return self._plan.largest_live

    def __call__(self, *operands: Any, out: Any = None) -> Any:
        return self._engine._einsum_run(
            "ContractExpression.__call__", self._plan, operands, out, check_shapes=True
        )

    def __repr__(self) -> str:
        return (
            f"ContractExpression({self.subscripts!r}, shapes={self.shapes}, "
            f"steps={len(self._plan.steps)})"
        )
