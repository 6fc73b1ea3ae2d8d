"""The tape: `Tracer` (a primal array plus its place in a trace), `Node`, dispatch, backward.

A trace is one call of `vjp` (and so of `grad`, `value_and_grad`, ...). Each
trace has a *level*, a number larger than every level before it. While `f`
runs, its differentiable inputs are `Tracer` objects of that level; every
namespace function called on a tracer (through the hook that `_hook`
installs on `tenferro`, `tenferro.namespace` and `tenferro.linalg`) ends in
`dispatch`, which

1. finds the highest level among the tracers in the arguments,
2. unwraps the tracers of that level to their primals (which may themselves
   be tracers of a lower, enclosing trace: that is how `grad(grad(f))` works),
3. runs the function on them (through the hook again, so lower levels record
   their own nodes), and
4. records a `Node` whose backward function (from the rule registry,
   `_rules.RULES`) maps output cotangents to input cotangents, and wraps the
   floating outputs as tracers of the level.

Every backward function is written with `tenferro` namespace functions, so when
it runs on tracers of an enclosing trace it is itself recorded: the backward
pass is differentiable. Nodes hold no reference to the tracers they made (only
to their parents), so a trace is a DAG of plain references and is freed by
reference counting as soon as the pullback and the tracers are dropped.

Ownership: the arrays a backward function keeps (inputs, outputs it needs) are
held with a read borrow (`Tensor.map_read`), so a write into one before the
pullback has run and been dropped is refused at the write with `BorrowError`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ValidationError

__all__ = [
    "Node",
    "Tracer",
    "apply",
    "backward",
    "dispatch",
    "install_rules",
    "is_tracer",
    "new_level",
    "state",
    "strip",
]


class _State:
    """How many traces are running their forward pass (the hook's gate) and the level counter."""

    __slots__ = ("depth", "levels")

    def __init__(self) -> None:
        self.depth = 0
        self.levels = itertools.count(1)


state = _State()


def new_level() -> int:
    """A level above every level handed out before."""
    return next(state.levels)


class Node:
    """One recorded operation: its backward function and where its inputs came from.

    ``parents`` lists ``(position, node, output_index)`` for every traced input:
    ``position`` is the argument's index, or ``(index, item)`` inside a list
    argument. ``guards`` are the read borrows of the arrays ``bwd`` keeps.
    """

    __slots__ = ("__weakref__", "bwd", "guards", "multi", "needs", "nout", "parents")

    def __init__(
        self,
        bwd: Callable[[Any, Any], Any] | None,
        parents: list[tuple[Any, Node, int]],
        nout: int,
        needs: Any,
        guards: list[Any],
        multi: bool = False,
    ) -> None:
        self.bwd = bwd
        self.multi = multi
        self.parents = parents
        self.nout = nout
        self.needs = needs
        self.guards = guards


class Tracer:
    """A differentiable array inside a trace: a primal array, its level and its node.

    It behaves as an array of the `tenferro` namespace (``shape``, ``dtype``,
    operators, indexing, ``.T``/``.mT``); every operation on it is recorded.
    The primal is a `Tensor`/`TensorView`, or a `Tracer` of an enclosing trace.
    """

    __slots__ = ("__weakref__", "index", "level", "node", "primal")
    __array_priority__ = 1000.0

    def __init__(self, primal: Any, level: int, node: Node, index: int = 0) -> None:
        self.primal = primal
        self.level = level
        self.node = node
        self.index = index

    # -- array attributes ----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.primal.shape)

    @property
    def dtype(self) -> Any:
        return self.primal.dtype

    @property
    def ndim(self) -> int:
        return int(self.primal.ndim)

    @property
    def size(self) -> int:
        return int(self.primal.size)

    @property
    def device(self) -> Any:
        return self.primal.device

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        return _tfr()

    @property
    def T(self) -> Any:
        return _tfr().permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Any:
        return _tfr().matrix_transpose(self)

    @property
    def real(self) -> Any:
        return _tfr().real(self)

    @property
    def imag(self) -> Any:
        return _tfr().imag(self)

    def conj(self) -> Any:
        return _tfr().conj(self)

    def reshape(self, *shape: Any) -> Any:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _tfr().reshape(self, tuple(shape))

    def sum(self, axis: Any = None, keepdims: bool = False) -> Any:
        return _tfr().sum(self, axis=axis, keepdims=keepdims)

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        return _tfr().astype(self, dtype, copy=copy)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return int(self.shape[0])

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __getitem__(self, key: Any) -> Any:
        assert _getitem is not None, "tenferro.autodiff._rules is not loaded"
        return _getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise ValidationError(
            "tenferro.autodiff.Tracer.__setitem__",
            "a traced array cannot be written in place; build the new array with "
            "tenferro.where, tenferro.concat or tenferro.stack instead",
            kind="NOT_DIFFERENTIABLE",
        )

    # Reading a value out ends differentiation along that path, as numpy does.
    def __float__(self) -> float:
        return float(strip(self))

    def __int__(self) -> int:
        return int(strip(self))

    def __complex__(self) -> complex:
        return complex(strip(self))

    def __bool__(self) -> bool:
        return bool(strip(self))

    def __index__(self) -> int:
        return int(strip(self))

    def item(self) -> Any:
        value = strip(self)
        return value.item() if hasattr(value, "item") else value

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(strip(self), dtype=dtype)

    def __repr__(self) -> str:
        return f"Tracer(level={self.level}, {self.primal!r})"

    __hash__ = None  # type: ignore[assignment]


def _tfr() -> Any:
    import tenferro

    return tenferro


def _binary(name: str, reflected: bool) -> Callable[[Any, Any], Any]:
    if reflected:

        def method(self: Any, other: Any) -> Any:
            return getattr(_tfr(), name)(other, self)

    else:

        def method(self: Any, other: Any) -> Any:
            return getattr(_tfr(), name)(self, other)

    return method


def _unary(name: str) -> Callable[[Any], Any]:
    def method(self: Any) -> Any:
        return getattr(_tfr(), name)(self)

    return method


for _dunder, _fname in (
    ("add", "add"),
    ("sub", "subtract"),
    ("mul", "multiply"),
    ("truediv", "divide"),
    ("floordiv", "floor_divide"),
    ("mod", "remainder"),
    ("pow", "pow"),
    ("matmul", "matmul"),
    ("and", "bitwise_and"),
    ("or", "bitwise_or"),
    ("xor", "bitwise_xor"),
):
    setattr(Tracer, f"__{_dunder}__", _binary(_fname, False))
    setattr(Tracer, f"__r{_dunder}__", _binary(_fname, True))
for _dunder, _fname in (
    ("lt", "less"),
    ("le", "less_equal"),
    ("gt", "greater"),
    ("ge", "greater_equal"),
    ("eq", "equal"),
    ("ne", "not_equal"),
):
    setattr(Tracer, f"__{_dunder}__", _binary(_fname, False))
for _dunder, _fname in (("neg", "negative"), ("pos", "positive"), ("abs", "abs")):
    setattr(Tracer, f"__{_dunder}__", _unary(_fname))


def is_tracer(x: Any) -> bool:
    return isinstance(x, Tracer)


def strip(x: Any) -> Any:
    """The plain array under every level of tracing (a constant to every trace)."""
    while isinstance(x, Tracer):
        x = x.primal
    return x


def _guard(x: Any) -> Any:
    """A read borrow of a plain tensor or view (None for tracers and scalars)."""
    if isinstance(x, Tracer):
        return None
    take = getattr(x, "map_read", None)
    if take is None:
        return None
    try:
        return take()
    except Exception:
        return None


def _top_level(args: Sequence[Any], kwargs: dict[str, Any]) -> int:
    top = 0
    for a in args:
        if isinstance(a, Tracer):
            if a.level > top:
                top = a.level
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tracer) and b.level > top:
                    top = b.level
    for a in kwargs.values():
        if isinstance(a, Tracer) and a.level > top:
            top = a.level
    return top


def _unwrap(x: Any, level: int) -> Any:
    if isinstance(x, Tracer) and x.level == level:
        return x.primal
    return x


def _is_diff_array(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return (
        dt is not None
        and hasattr(x, "shape")
        and bool(getattr(dt, "is_float", False) or getattr(dt, "is_complex", False))
    )


def record(
    level: int,
    args: Sequence[Any],
    out: Any,
    bwd: Callable[[Any, Any], Any],
    keep: Sequence[Any] = (),
) -> Any:
    """Wrap ``out`` (an array or a tuple/list/namedtuple of them) as tracers of ``level``.

    ``args`` are the arguments as the caller passed them (tracers included):
    their tracers of ``level`` become the node's parents. ``bwd(cts, needs)``
    returns one cotangent per positional argument (a list for a list
    argument, None where not needed); ``keep`` are the plain arrays it holds,
    which are read-borrowed for the node's lifetime.
    """
    parents: list[tuple[Any, Node, int]] = []
    needs: list[Any] = []
    for i, a in enumerate(args):
        if isinstance(a, Tracer) and a.level == level:
            parents.append((i, a.node, a.index))
            needs.append(True)
        elif isinstance(a, (list, tuple)):
            inner = []
            for j, b in enumerate(a):
                hit = isinstance(b, Tracer) and b.level == level
                if hit:
                    parents.append(((i, j), b.node, b.index))
                inner.append(hit)
            needs.append(tuple(inner))
        else:
            needs.append(False)
    multi = isinstance(out, (tuple, list))
    outs = list(out) if multi else [out]
    # Each borrow is kept beside its array, (array, guard): a tuple releases its items
    # last to first, so the borrow ends before the array can go back to the pool
    # (a buffer released while still borrowed is refused by the pool, not recycled).
    # One borrow per distinct array (``einsum("...", a, a)`` keeps ``a`` twice).
    guards = []
    if keep:
        seen: set[int] = set()
        for k in keep:
            if id(k) in seen:
                continue
            seen.add(id(k))
            g = _guard(k)
            if g is not None:
                guards.append((k, g))
    node = Node(bwd, parents, len(outs), tuple(needs), guards, multi)
    wrapped = [Tracer(o, level, node, k) if _is_diff_array(o) else o for k, o in enumerate(outs)]
    if not multi:
        return wrapped[0]
    if isinstance(out, list):
        return wrapped
    if hasattr(out, "_fields"):
        return type(out)(*wrapped)
    return tuple(wrapped)


# The rule tables and the traced getitem, installed by `_rules` when it loads
# (`_rules` imports this module, so this one must not import it back).
_tables: tuple[Any, Any, Any, Any] | None = None
_getitem: Callable[[Any, Any], Any] | None = None


def install_rules(
    composites: Any, identity: Any, nondiff: Any, rules: Any, getitem: Callable[[Any, Any], Any]
) -> None:
    """Called once by `_rules`: the tables `dispatch` consults and ``Tracer.__getitem__``."""
    global _tables, _getitem
    _tables = (composites, identity, nondiff, rules)
    _getitem = getitem


def dispatch(
    name: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run namespace function ``fn`` (called as ``name``) on arguments that may hold tracers."""
    assert _tables is not None, "tenferro.autodiff._rules is not loaded"
    COMPOSITES, IDENTITY, NONDIFF, RULES = _tables

    top = _top_level(args, kwargs)
    if top == 0:
        return fn(*args, **kwargs)
    composite = COMPOSITES.get(name)
    if composite is not None:
        result = composite(*args, **kwargs)
        if result is not NotImplemented:
            return result
    if name in IDENTITY:
        return args[0]
    if name in NONDIFF:
        plain_args = [
            [strip(b) for b in a]
            if isinstance(a, (list, tuple)) and not hasattr(a, "_fields")
            else strip(a)
            for a in args
        ]
        return fn(*plain_args, **{k: strip(v) for k, v in kwargs.items()})
    rule = RULES.get(name)
    if rule is None:
        raise ValidationError(
            f"tenferro.{name}",
            "has no derivative rule, so it cannot take a traced array; apply "
            "tenferro.autodiff.stop_gradient to its input if no derivative is needed "
            "through it",
            kind="NOT_DIFFERENTIABLE",
        )
    inner = [
        type(a)(_unwrap(b, top) for b in a)
        if isinstance(a, (list, tuple)) and not hasattr(a, "_fields")
        else _unwrap(a, top)
        for a in args
    ]
    kw = {k: strip(v) for k, v in kwargs.items()} if kwargs else kwargs
    # Only one trace among the arguments (the usual first-order case): run the
    # function itself rather than dispatching again on plain arrays.
    out = dispatch(name, fn, tuple(inner), kw) if _top_level(inner, kw) else fn(*inner, **kw)
    bwd, keep = rule(out, *inner, **kw)
    return record(top, args, out, bwd, keep)


def apply(
    fn: Callable[..., Any],
    rule: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
) -> Any:
    """Run a primitive that is not a namespace function (``fn`` on plain arrays, its
    ``rule`` as in `_rules.RULES`), recording it on the highest level among ``args``."""
    kwargs = kwargs or {}
    top = _top_level(args, kwargs)
    if top == 0:
        return fn(*args, **kwargs)
    inner = tuple(_unwrap(a, top) for a in args)
    out = apply(fn, rule, inner, kwargs)
    bwd, keep = rule(out, *inner, **kwargs)
    return record(top, args, out, bwd, keep)


def backward(level: int, roots: Sequence[tuple[Tracer, Any]]) -> dict[int, Any]:
    """Propagate cotangents from ``roots`` (tracer, cotangent) through the nodes of ``level``.

    Returns the accumulated cotangent of every node reached, keyed by
    ``id(node)`` (the caller looks up its leaf nodes).
    """
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(t.node, False) for t, _ in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for _, parent, _ in node.parents:
            if id(parent) not in seen:
                stack.append((parent, False))
    cts: dict[int, list[Any]] = {}
    for t, ct in roots:
        slot = cts.setdefault(id(t.node), [None] * t.node.nout)
        slot[t.index] = _add(slot[t.index], ct)
    leaves: dict[int, Any] = {}
    for node in reversed(order):
        got = cts.pop(id(node), None)
        if got is None:
            continue
        if node.bwd is None:
            leaves[id(node)] = got[0]
            continue
        if all(g is None for g in got):
            continue
        in_cts = node.bwd(got if node.multi else got[0], node.needs)
        for pos, parent, index in node.parents:
            if isinstance(pos, tuple):
                c = in_cts[pos[0]]
                c = None if c is None else c[pos[1]]
            else:
                c = in_cts[pos]
            if c is None:
                continue
            slot = cts.setdefault(id(parent), [None] * parent.nout)
            slot[index] = _add(slot[index], c)
        del in_cts, got
    return leaves


def _add(acc: Any, ct: Any) -> Any:
    if acc is None:
        return ct
    if ct is None:
        return acc
    return _tfr().add(acc, ct)
