"""Planning a sliced contraction: parse, check, find a sliced tree, compile its steps.

Everything here runs on the client before any work is sent, so every refusal
(operand count, shapes, dtypes, a budget no slicing meets) is a typed error
that leaves the cluster untouched. The result, `SlicePlan`, is plain picklable
data: each worker gets it once and runs any slice of it.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..dtype import DType
from ..engine.einsum.parser import expand
from ..errors import DTypeError, ValidationError
from ..tensor import Tensor
from ..view import TensorView

__all__ = ["SlicePlan", "build_plan", "parse_equation"]

_OP = "tenferro.distributed.contract"
_LETTERS = string.ascii_letters

Inds = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SlicePlan:
    """A sliced contraction, compiled to pairwise einsum steps over ASCII subscripts.

    * ``operand_slicers[k]``: ``(axis, position)`` pairs; the operand's ``axis``
      takes the value of sliced index number ``position`` in each slice;
    * ``steps``: ``(i, j, subscripts)`` in opt_einsum's linear-path convention:
      terms ``i`` and ``j`` are removed from the list of terms and their
      contraction (``subscripts``, two operands, ASCII) is appended;
    * ``final``: one-operand subscripts run on the last term, or None when the
      last step already writes the output in its order.
    """

    dtype: DType
    out_shape: tuple[int, ...]
    sliced: tuple[tuple[str, int], ...]
    operand_slicers: tuple[tuple[tuple[int, int], ...], ...]
    steps: tuple[tuple[int, int, str], ...]
    final: str | None
    nslices: int
    flops: int
    max_intermediate_elements: int

    @property
    def max_intermediate_bytes(self) -> int:
        """The largest intermediate of one slice, in bytes (cotengra's count)."""
        return self.max_intermediate_elements * self.dtype.itemsize

    def slice_values(self, s: int) -> tuple[int, ...]:
        """The value of each sliced index in slice ``s`` (mixed radix, last index fastest)."""
        values = []
        for _, size in reversed(self.sliced):
            s, v = divmod(s, size)
            values.append(v)
        return tuple(reversed(values))


def parse_equation(eq: Any, operands: Sequence[Any]) -> tuple[list[Inds], Inds]:
    """``(inputs, output)`` of an einsum equation over ``operands``, by the engine's
    einsum parser (`tenferro.engine.einsum.parser.expand`): ellipses expanded, the
    implicit output as numpy's, the same typed errors as ``einsum``."""
    shapes = [_tensor(k, t).shape for k, t in enumerate(operands)]
    terms, output = expand(_OP, eq, shapes)
    return [tuple(term) for term in terms], tuple(output)


def _tensor(k: int, t: Any) -> Tensor | TensorView:
    """Operand ``k``, refused unless it is a tenferro array (an owner or a view)."""
    if not isinstance(t, (Tensor, TensorView)):
        raise ValidationError(
            _OP,
            f"operand {k} is a {type(t).__name__}, not a tenferro array; wrap arrays "
            "with tenferro.asarray (or tenferro.from_numpy) first",
            kind="NOT_A_TENSOR",
            index=k,
        )
    return t


def check_operands(inputs: Sequence[Inds], operands: Sequence[Any]) -> tuple[DType, dict[str, int]]:
    """The common dtype and each index's size; refuses mismatches with typed errors."""
    dtype: DType | None = None
    sizes: dict[str, int] = {}
    for k, (term, operand) in enumerate(zip(inputs, operands, strict=True)):
        t = _tensor(k, operand)
        if dtype is None:
            dtype = t.dtype
        elif t.dtype is not dtype:
            raise DTypeError(
                _OP,
                f"operand {k} has dtype {t.dtype.name} but operand 0 has {dtype.name}; "
                "convert the operands to one dtype first",
                kind="DTYPE_MISMATCH",
            )
        if len(term) != t.ndim:
            raise ValidationError(
                _OP,
                f"operand {k} has rank {t.ndim} but its term {''.join(term)!r} names "
                f"{len(term)} ax(es); give one index per axis",
                kind="SHAPE_MISMATCH",
                shapes=(t.shape,),
            )
        for c, d in zip(term, t.shape, strict=True):
            if sizes.setdefault(c, d) != d:
                raise ValidationError(
                    _OP,
                    f"index {c!r} has size {sizes[c]} in an earlier operand but size {d} in "
                    f"operand {k} (shape {t.shape}); every occurrence of an index must have "
                    "one size",
                    kind="SHAPE_MISMATCH",
                    shapes=(t.shape,),
                )
    assert dtype is not None
    if dtype not in (DType.F32, DType.F64, DType.C32, DType.C64):
        raise DTypeError(
            _OP,
            f"operands have dtype {dtype.name}; sliced contraction needs a float or complex "
            "dtype (convert them first)",
            kind="DTYPE_MISMATCH",
        )
    return dtype, sizes


def _check_budget(memory_budget: Any) -> int:
    if isinstance(memory_budget, bool) or not isinstance(memory_budget, int) or memory_budget < 1:
        raise ValidationError(
            _OP,
            f"memory_budget must be a positive int (bytes), got {memory_budget!r}",
            kind="INVALID_BUDGET",
        )
    return memory_budget


def sliced_tree(
    inputs: Sequence[Inds],
    output: Inds,
    sizes: dict[str, int],
    dtype: DType,
    memory_budget: Any,
    optimize: Any,
) -> Any:
    """A cotengra tree whose every intermediate fits ``memory_budget`` bytes.

    Only indices that are summed over are sliced (never output indices), so the
    slices' results add up to the answer.
    """
    import cotengra as ctg

    budget = _check_budget(memory_budget)
    target = budget // dtype.itemsize
    out_elements = math.prod(sizes[c] for c in output)
    if out_elements > target:
        raise ValidationError(
            _OP,
            f"the output alone needs {out_elements * dtype.itemsize} bytes, more than "
            f"memory_budget={budget}; no slicing of summed indices can meet it: raise the "
            "budget",
            kind="BUDGET_UNREACHABLE",
            memory_budget=budget,
            needed=out_elements * dtype.itemsize,
        )
    if isinstance(optimize, ctg.ContractionTree):
        tree = optimize
        same = [tuple(t) for t in tree.inputs] == [tuple(t) for t in inputs] and tuple(
            tree.output
        ) == tuple(output)
        if not same or any(ix in output for ix in tree.sliced_inds):
            raise ValidationError(
                _OP,
                "optimize= is a ContractionTree for another equation (or one that slices "
                "output indices); build it from this equation with allow_outer=False",
                kind="INVALID_TREE",
            )
    else:
        try:
            tree = ctg.array_contract_tree(
                [tuple(t) for t in inputs],
                tuple(output),
                dict(sizes),
                optimize=optimize,
                # Keep the caller's index names: slices are keyed by them.
                canonicalize=False,
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise ValidationError(
                _OP,
                f"cotengra refused optimize={optimize!r}: {exc}; pass a cotengra preset "
                "('greedy', 'auto', ...), an optimizer or a ContractionTree",
                kind="INVALID_OPTIMIZE",
                optimize=optimize,
            ) from exc
    if tree.max_size() > target:
        # A fixed seed: the same call plans the same slices every time.
        tree = tree.slice(target_size=target, allow_outer=False, seed=0)
    if tree.max_size() > target:
        raise ValidationError(
            _OP,
            f"no slicing found keeps every intermediate within memory_budget={budget} bytes "
            f"(the best tree's largest needs {tree.max_size() * dtype.itemsize}); raise the "
            "budget",
            kind="BUDGET_UNREACHABLE",
            memory_budget=budget,
            needed=tree.max_size() * dtype.itemsize,
        )
    return tree


def _ascii(op_terms: Sequence[Sequence[str]], out: Sequence[str]) -> str:
    """``op_terms -> out`` with every index renamed to an ASCII letter (first use first)."""
    names: dict[str, str] = {}
    for term in (*op_terms, out):
        for c in term:
            if c not in names:
                if len(names) == len(_LETTERS):
                    raise ValidationError(
                        _OP,
                        "one pairwise step touches more than 52 indices; this contraction "
                        "is too wide for the engine's einsum",
                        kind="TOO_MANY_INDICES",
                    )
                names[c] = _LETTERS[len(names)]
    lhs = ",".join("".join(names[c] for c in term) for term in op_terms)
    return f"{lhs}->{''.join(names[c] for c in out)}"


def compile_tree(tree: Any, inputs: Sequence[Inds], output: Inds, dtype: DType) -> SlicePlan:
    """Compile a (sliced) cotengra tree into a `SlicePlan`."""
    sliced = tuple((str(ix), int(info.size)) for ix, info in tree.sliced_inds.items())
    position = {ix: k for k, (ix, _) in enumerate(sliced)}
    slicers = tuple(
        tuple((axis, position[c]) for axis, c in enumerate(term) if c in position)
        for term in inputs
    )
    terms: list[list[str]] = [[c for c in term if c not in position] for term in inputs]
    steps = []
    for i, j in tree.get_path():
        x, y = terms[i], terms[j]
        for k in sorted((i, j), reverse=True):
            del terms[k]
        if terms:
            needed = {c for term in terms for c in term} | set(output)
            new = [c for c in dict.fromkeys(x + y) if c in needed]
        else:
            new = list(output)
        steps.append((int(i), int(j), _ascii((x, y), new)))
        terms.append(new)
    # INVARIANT: a complete path leaves one term; with no step at all that term is
    # an operand view, which `final` turns into an engine output.
    assert len(terms) == 1
    final = None if steps and terms[0] == list(output) else _ascii((terms[0],), output)
    return SlicePlan(
        dtype=dtype,
        out_shape=tuple(int(tree.size_dict[c]) for c in output),
        sliced=sliced,
        operand_slicers=slicers,
        steps=tuple(steps),
        final=final,
        nslices=int(tree.nslices),
        flops=int(tree.total_flops()),
        max_intermediate_elements=int(tree.max_size()),
    )


def build_plan(
    eq: Any, operands: Sequence[Any], memory_budget: Any, optimize: Any
) -> tuple[SlicePlan, Any]:
    """Check everything and plan; returns ``(plan, tree)``. Sends nothing anywhere."""
    inputs, output = parse_equation(eq, operands)
    dtype, sizes = check_operands(inputs, operands)
    tree = sliced_tree(inputs, output, sizes, dtype, memory_budget, optimize)
    return compile_tree(tree, inputs, output, dtype), tree
