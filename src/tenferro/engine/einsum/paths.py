"""Contraction paths: given ones checked, the rest found by opt_einsum or cotengra.

``optimize=`` takes

* a path: a sequence of contractions in opt_einsum's linear form, each a tuple
  of positions in the list of tensors still to contract (the chosen ones are
  removed and their result appended), as `opt_einsum.contract_path` and
  cotengra's ``tree.get_path()`` produce;
* the name of an opt_einsum path finder (``"auto"``, ``"greedy"``,
  ``"optimal"``, ``"random-greedy"``, ...);
* a path-finder object: anything opt_einsum calls as
  ``finder(inputs, output, size_dict, memory_limit)`` (an opt_einsum
  `PathOptimizer`, a cotengra ``HyperOptimizer``), or an object with
  ``get_path()`` (a cotengra ``ContractionTree``).

Paths come out in *SSA form* (each tensor named once: inputs ``0..n-1``,
step ``s``'s result ``n + s``), with steps of more than two tensors split into
pairs, which is what the planner consumes.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any

from ...errors import ValidationError

__all__ = ["find_path", "normalize_path", "optimize_key"]

Path = list[tuple[int, ...]]


class _ByIdentity:
    """A cache key for a path-finder object: the object itself, compared by identity."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByIdentity) and other.obj is self.obj


def _is_path(optimize: Any) -> bool:
    return isinstance(optimize, (list, tuple))


def optimize_key(op: str, optimize: Any) -> Any:
    """A hashable stand-in for ``optimize`` (plans are cached per key)."""
    if optimize is None or optimize is True:
        return "auto"
    if isinstance(optimize, str):
        return optimize
    if _is_path(optimize):
        key = _plain_path(optimize)
        if key is not None:
            return key
        return tuple(_contraction(op, c, i) for i, c in enumerate(optimize))
    if optimize is False:
        return False
    return _ByIdentity(optimize)


def _plain_path(path: Sequence[Any]) -> tuple[tuple[int, ...], ...] | None:
    """``path`` as a tuple of tuples when every step is a non-empty list or tuple of
    plain ints (what path finders return), checked with builtins only: a path of a
    few hundred steps is keyed per `einsum` call, and `_contraction`'s per-element
    checks cost more than a small network's whole run. None: check it step by step."""
    if not path or not set(map(type, path)) <= {tuple, list}:
        return None
    key = tuple(map(tuple, path))
    if not all(key) or set(map(type, itertools.chain.from_iterable(key))) != {int}:
        return None
    return key


def _bad_path(op: str, why: str, **fields: Any) -> ValidationError:
    return ValidationError(
        op,
        f"malformed contraction path: {why}; give a list of tuples of operand positions "
        "(opt_einsum's linear form, e.g. [(0, 1), (0, 1)])",
        kind="INVALID_PATH",
        **fields,
    )


def _contraction(op: str, c: Any, step: int) -> tuple[int, ...]:
    if isinstance(c, (str, bytes)) or not isinstance(c, Sequence):
        raise _bad_path(op, f"step {step} is {c!r}, not a tuple of positions", step=step)
    out = []
    for x in c:
        if isinstance(x, bool):
            raise _bad_path(op, f"step {step} names a bool position", step=step)
        try:
            out.append(operator.index(x))
        except TypeError:
            raise _bad_path(
                op, f"step {step} has a non-integer position {x!r}", step=step
            ) from None
    if not out:
        raise _bad_path(op, f"step {step} contracts no tensor", step=step)
    return tuple(out)


def normalize_path(op: str, path: Sequence[tuple[int, ...]], n: int) -> Path:
    """Check a linear path over ``n`` tensors and turn it into pairwise SSA form."""
    live = list(range(n))
    ssa: Path = []
    next_id = n
    for step, c in enumerate(path):
        if len(set(c)) != len(c):
            raise _bad_path(op, f"step {step} names a position twice: {c}", step=step)
        for pos in c:
            if not 0 <= pos < len(live):
                raise _bad_path(
                    op,
                    f"step {step} names position {pos}, but only {len(live)} tensor(s) are "
                    "left at that point",
                    step=step,
                    position=pos,
                )
        ids = [live[pos] for pos in c]
        for pos in sorted(c, reverse=True):
            del live[pos]
        if len(ids) == 1:
            ssa.append((ids[0],))
            next_id += 1
        else:
            acc = ids[0]
            for other in ids[1:]:
                ssa.append((acc, other))
                acc = next_id
                next_id += 1
        live.append(next_id - 1)
    if len(live) != 1:
        raise _bad_path(
            op,
            f"after its {len(path)} step(s), {len(live)} tensors are left instead of one",
            left=len(live),
        )
    return ssa


def find_path(op: str, terms: Sequence[str], out: str, sizes: dict[str, int], key: Any) -> Path:
    """The SSA path for ``optimize`` (as made hashable by `optimize_key`)."""
    n = len(terms)
    if isinstance(key, tuple):
        linear: list[tuple[int, ...]] = list(key)
        if n == 1 and not linear:
            linear = [(0,)]
        return normalize_path(op, linear, n)
    if n == 1:
        return [(0,)]
    if key is False:
        return normalize_path(op, [(0, 1)] * (n - 1), n)
    if n == 2:
        return [(0, 1)]
    obj = key.obj if isinstance(key, _ByIdentity) else key
    found = _search(op, obj, terms, out, sizes)
    try:
        linear = [_contraction(op, c, i) for i, c in enumerate(found)]
    except ValidationError as exc:
        raise _bad_path(op, f"the path finder returned {found!r} ({exc})") from None
    return normalize_path(op, linear, n)


def _search(op: str, finder: Any, terms: Sequence[str], out: str, sizes: dict[str, int]) -> Any:
    """Ask opt_einsum (by name) or a path-finder object for a linear path."""
    from opt_einsum import paths

    inputs = [frozenset(t) for t in terms]
    if isinstance(finder, str):
        try:
            fn = paths.get_path_fn(finder)
        except KeyError:
            raise ValidationError(
                op,
                f"unknown path finder {finder!r}; use an opt_einsum strategy name ('auto', "
                "'greedy', 'optimal', 'dp', 'random-greedy', ...), a path, or a path-finder "
                "object",
                kind="INVALID_OPTIMIZE",
                optimize=finder,
            ) from None
        return fn(inputs, frozenset(out), dict(sizes), None)
    get_path = getattr(finder, "get_path", None)
    if callable(get_path) and not isinstance(finder, paths.PathOptimizer):
        return get_path()
    if callable(finder):
        return finder(inputs, frozenset(out), dict(sizes), None)
    raise ValidationError(
        op,
        f"optimize must be a path, a path-finder name or object, got {type(finder).__name__}",
        kind="INVALID_OPTIMIZE",
        optimize=finder,
    )
