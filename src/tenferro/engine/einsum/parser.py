"""Einsum subscripts: parsed by opt_einsum, then checked against the operands' shapes.

`split_call` separates subscripts from operands in both call forms, the string
form (``"ij,jk->ik", a, b``) and the interleaved one (``a, [0, 1], b, [1, 2],
[0, 2]``, any hashable, sortable labels, as numpy and opt_einsum take them).
`parse` hands the subscripts to `opt_einsum.parser.parse_einsum_input`, which
expands ellipses, finds the implicit output and accepts every symbol
`opt_einsum.get_symbol` produces (so networks with hundreds of indices), then
checks what it leaves to the caller: one term per operand, one symbol per
axis, one size per index. Sizes follow numpy: an axis of size 1 broadcasts
against the index's size elsewhere (that axis is dropped, `Spec.squeeze`),
while a repeated index within one operand needs equal sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opt_einsum.parser import convert_interleaved_input, parse_einsum_input

from ...errors import ValidationError

__all__ = ["Spec", "expand", "parse", "require_string", "split_call"]

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Spec:
    """A checked einsum: one term per operand (after broadcasting), the output, sizes.

    ``squeeze[i]`` lists the size-1 axes of operand ``i`` that broadcast (dropped
    before contracting, as numpy does); ``terms[i]`` names the remaining axes.
    """

    terms: tuple[str, ...]
    out: str
    sizes: dict[str, int]
    in_shapes: tuple[Shape, ...]
    squeeze: tuple[tuple[int, ...], ...]

    @property
    def out_shape(self) -> Shape:
        return tuple(self.sizes[ch] for ch in self.out)

    @property
    def shapes(self) -> tuple[Shape, ...]:
        """Operand shapes after the broadcast axes are dropped."""
        return tuple(tuple(self.sizes[ch] for ch in t) for t in self.terms)


def _subscripts_error(op: str, subscripts: Any, why: str) -> ValidationError:
    return ValidationError(
        op,
        f"malformed subscripts {subscripts!r}: {why}",
        kind="SUBSCRIPTS",
        subscripts=subscripts,
    )


def split_call(op: str, args: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
    """``(subscripts, operands)`` of an einsum call in string or interleaved form."""
    if not args:
        raise ValidationError(
            op, "einsum needs subscripts and operands", kind="OPERAND_COUNT", expected=1, actual=0
        )
    first = args[0]
    if isinstance(first, str):
        return first, tuple(args[1:])
    if not hasattr(first, "shape"):
        raise ValidationError(
            op,
            f"subscripts must be a string (or the interleaved form op0, [labels], op1, ...), "
            f"got {type(first).__name__}",
            kind="SUBSCRIPTS",
            subscripts=first,
        )
    if len(args) < 2 or not isinstance(args[1], (list, tuple)):
        # A tensor (or array) where the subscripts go, not followed by its labels:
        # neither call form.
        raise ValidationError(
            op,
            f"got a {type(first).__name__} where the subscripts go; pass the subscripts "
            "first (einsum('ij,jk->ik', a, b)) or a list of labels after each operand "
            "(einsum(a, [0, 1], b, [1, 2], [0, 2]))",
            kind="SUBSCRIPTS",
            subscripts=first,
        )
    sublists = [args[i] for i in range(1, len(args), 2)]
    if len(args) % 2:
        sublists.append(args[-1])  # the output labels
    for sub in sublists:
        if not isinstance(sub, (list, tuple)):
            raise _subscripts_error(
                op, sub, "the interleaved form takes a list of labels after each operand"
            )
    if len(args) % 2:
        try:
            known = {label for sub in sublists[:-1] for label in sub}
            unknown = [x for x in sublists[-1] if x is not Ellipsis and x not in known]
        except TypeError:  # an unhashable label
            raise _subscripts_error(op, list(sublists), "labels must be hashable") from None
        if unknown:
            raise _subscripts_error(
                op,
                list(sublists),
                f"output labels {unknown} name no operand's axis",
            )
    try:
        subscripts, operands = convert_interleaved_input(args)
    except (TypeError, ValueError, KeyError) as exc:
        raise _subscripts_error(op, list(sublists), str(exc)) from None
    return subscripts, tuple(operands)


def require_string(op: str, subscripts: Any) -> None:
    """Refuse ``subscripts`` that are not a string (SUBSCRIPTS)."""
    if not isinstance(subscripts, str):
        raise ValidationError(
            op,
            f"subscripts must be a string, got {type(subscripts).__name__}",
            kind="SUBSCRIPTS",
            subscripts=subscripts,
        )


def expand(op: str, subscripts: Any, shapes: Sequence[Shape]) -> tuple[list[str], str]:
    """``(terms, output)`` of ``subscripts`` for operands of ``shapes``: ellipses
    expanded, the implicit output found (numpy's rules), the syntax and the operand
    count checked (typed errors). Sizes are not checked: `parse` does that, as
    numpy broadcasts them; `tenferro.distributed` checks them its own, stricter way.
    """
    require_string(op, subscripts)
    if not shapes:
        raise ValidationError(
            op, "einsum needs at least one operand", kind="OPERAND_COUNT", expected=1, actual=0
        )
    compact = "".join(subscripts.split())
    if "->" in compact and "," in compact.split("->", 1)[1]:
        # opt_einsum would take "," as an output label and fail later, untyped.
        raise _subscripts_error(op, subscripts, "the output after '->' is one term (no ',')")
    n_terms = compact.split("->")[0].count(",") + 1
    if n_terms != len(shapes):
        raise ValidationError(
            op,
            f"{subscripts!r} names {n_terms} operand(s) but {len(shapes)} were given",
            kind="OPERAND_COUNT",
            expected=n_terms,
            actual=len(shapes),
        )
    try:
        inputs, out, _ = parse_einsum_input((compact, *shapes), shapes=True)
    except ValueError as exc:
        if "lengths do not match" in str(exc):
            raise ValidationError(
                op,
                f"an operand has fewer axes than {subscripts!r} names besides its ellipsis",
                kind="RANK_MISMATCH",
                shapes=tuple(shapes),
            ) from None
        raise _subscripts_error(op, subscripts, str(exc)) from None
    return inputs.split(","), out


def parse(op: str, subscripts: str, shapes: Sequence[Shape]) -> Spec:
    """Check ``subscripts`` against operand ``shapes`` (typed errors) into a `Spec`."""
    terms, out = expand(op, subscripts, shapes)
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        if len(term) != len(shape):
            raise ValidationError(
                op,
                f"operand {i} has {len(shape)} axes but its subscripts {term!r} name {len(term)}",
                kind="RANK_MISMATCH",
                shapes=tuple(shapes),
            )
    sizes = _sizes(op, terms, shapes)
    squeeze: list[tuple[int, ...]] = []
    kept: list[str] = []
    for term, shape in zip(terms, shapes, strict=True):
        # A size-1 axis of an index that is larger elsewhere broadcasts: drop it.
        drop = tuple(j for j, (ch, d) in enumerate(zip(term, shape, strict=True)) if d != sizes[ch])
        squeeze.append(drop)
        kept.append("".join(ch for j, ch in enumerate(term) if j not in drop) if drop else term)
    return Spec(tuple(kept), out, sizes, tuple(tuple(s) for s in shapes), tuple(squeeze))


def _sizes(op: str, terms: Sequence[str], shapes: Sequence[Shape]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        own: dict[str, int] = {}
        for ch, d in zip(term, shape, strict=True):
            if own.setdefault(ch, d) != d:
                raise ValidationError(
                    op,
                    f"index {ch!r} repeats in operand {i} with sizes {own[ch]} and {d}; "
                    "a repeated index (a diagonal) needs equal sizes",
                    kind="DIM_MISMATCH",
                    index=ch,
                    sizes=(own[ch], d),
                )
            prev = sizes.get(ch)
            if prev is None or prev == 1:
                sizes[ch] = d
            elif d not in (1, prev):
                raise ValidationError(
                    op,
                    f"index {ch!r} has size {prev} in one place and {d} in operand {i} "
                    "(only size 1 broadcasts)",
                    kind="DIM_MISMATCH",
                    index=ch,
                    sizes=(prev, d),
                )
    return sizes
