"""The records a compiled einsum is made of: its steps and the `Plan` that holds them.

`planner` writes them, `executor` (and `fast`) read them. Every step is a
`NamedTuple` whose first field is its kind (`REDUCE`, `GEMM`, `PERMUTE`,
`FINAL`): the executor unpacks a step once at the top of its loop, and code
that only needs one field reads it by name. Values are numbered as in the
plan: ``i < n_inputs`` is input ``i``, later values are intermediates (written
compact column-major); a destination of ``-1`` is the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = [
    "FINAL",
    "GEMM",
    "PERMUTE",
    "REDUCE",
    "Chunking",
    "Final",
    "FinalOperand",
    "Gemm",
    "Operand",
    "OutSlabs",
    "Permute",
    "Plan",
    "Reduce",
    "Step",
]

Shape = tuple[int, ...]

#: Step kinds (the `kind` field, first in every step). Each is its own literal
#: type, so a test of ``step.kind`` (or ``step[0]``) narrows a `Step` to its record.
REDUCE: Literal[0] = 0
GEMM: Literal[1] = 1
PERMUTE: Literal[2] = 2
FINAL: Literal[3] = 3


class Chunking(NamedTuple):
    """An operand transposed a slab at a time (`planner._Compiler._chunking`)."""

    axis: int  # the range axis, in the transposed copy's order
    size: int  # its extent
    ranges: int  # how many ranges it is cut into
    later: Shape  # the sizes of the later free indices, fixed per slab
    batch: bool  # the slabs are ranges of the batch (else of M or N)


class Operand(NamedTuple):
    """How a `Gemm` step reads one operand as its ``dims``-shaped 3-D (or 4-D) array."""

    perm: tuple[int, ...] | None  # transposed into scratch in this order, or read as is
    dims: Shape  # grouped (free, k, bt) or (k, free, bt) [+ (tail | split,)], column-major
    swap: bool  # swap the last two axes of the grouped view
    shape: Shape | None  # an intermediate's shape to view its flat buffer in (None: an input)
    direct: bool  # an intermediate compact in exactly the grouped order
    slabs: Chunking | None  # transposed a slab at a time


class FinalOperand(NamedTuple):
    """How a `Final` step reads one operand: as `Operand`, and where the slab index is."""

    perm: tuple[int, ...] | None
    dims: Shape
    swap: bool
    shape: Shape | None
    zpos: int  # the slab index's axis in the operand's logical order (-1: not sliced)
    zdim: int  # which grouped dimension it is part of


class OutSlabs(NamedTuple):
    """How a `Final` step cuts the output into slabs of one index ``z``."""

    group: int  # 0: the batch (both operands), 1: N (right), 2: M (left)
    z_res: int  # z's axis in the product's order
    z_out: int  # z's axis in the output's order
    dz: int  # z's extent
    ranges: int  # how many slabs
    inner: int  # elements of the sliced group per entry of z


class Reduce(NamedTuple):
    """One operand reduced alone (diagonals, lone sums) with ``np.einsum(expr)``."""

    kind: Literal[0]  # REDUCE
    src: int
    dst: int
    expr: str
    dst_shape: Shape
    src_shape: Shape | None  # an intermediate's shape (None: an input, already nd)


class Gemm(NamedTuple):
    """One pairwise product ``[M, K, B] x [K, N, B] -> [M, N, B]`` (gemm's kernels).

    ``dims`` is ``(bt, n, m)``; with a tail (`planner._Compiler._tail`) or a split
    sum (kernel `SPLIT_K`) it is ``(tail | split, bt, n, m)`` and each operand's
    grouped dims carry that fourth, slowest, axis.
    """

    kind: Literal[1]  # GEMM
    left: int
    right: int
    left_op: Operand
    right_op: Operand
    kernel: int
    dims: Shape
    dst: int


class Permute(NamedTuple):
    """The result transposed into the output's order."""

    kind: Literal[2]  # PERMUTE
    src: int
    src_shape: Shape | None
    perm: tuple[int, ...]


class Final(NamedTuple):
    """The last product written into the output's order a slab at a time
    (`planner._Compiler._final_slabs`); ``dims`` is ``(bt, n, m)``."""

    kind: Literal[3]  # FINAL
    left: int
    right: int
    left_op: FinalOperand
    right_op: FinalOperand
    kernel: int
    dims: tuple[int, int, int]
    res_shape: Shape
    perm: tuple[int, ...]
    slabs: OutSlabs


Step = Reduce | Gemm | Permute | Final


@dataclass
class Plan:
    """A compiled einsum: what runs, in which layout, and how much memory it holds.

    ``steps``: the step records; each intermediate is released right after the
    step that consumes it. ``largest_live``: the most elements of intermediates
    and output alive at once, the memory the path itself needs (scratch
    transposes aside).
    """

    n_inputs: int
    in_shapes: tuple[Shape, ...]
    squeeze: tuple[tuple[int, ...], ...]
    out_shape: Shape
    path: list[tuple[int, ...]]
    n_values: int
    steps: list[Step] = field(default_factory=list)
    largest_live: int = 0
    transposed_elements: int = 0
    #: The executor's per-step view records (`executor.prepare`), made once per plan.
    fast: Any = None
