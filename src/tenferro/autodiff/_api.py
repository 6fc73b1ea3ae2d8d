"""The functional API: `vjp`, `grad`, `value_and_grad`, `jvp`, `hvp`, `stop_gradient`,
`checkpoint`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TypeVar, cast, overload

import tenferro as _tenferro

from ..errors import ValidationError
from ._trace import Node, Tracer, backward, new_level, record, state, strip

# The namespace, called through the hook at run time (mypy does not follow its star
# re-export, so the module is typed as Any).
tfr: Any = _tenferro

__all__ = ["checkpoint", "grad", "hvp", "jvp", "stop_gradient", "value_and_grad", "vjp"]


# ---------------------------------------------------------------------------- pytrees
def _walk(t: Any, leaves: list[Any]) -> Any:
    if isinstance(t, Tracer) or hasattr(t, "shape"):
        leaves.append(t)
        return None
    if isinstance(t, tuple):
        return (type(t), [_walk(c, leaves) for c in t])
    if isinstance(t, list):
        return (list, [_walk(c, leaves) for c in t])
    if isinstance(t, dict):
        keys = list(t)
        return (dict, keys, [_walk(t[k], leaves) for k in keys])
    if t is None:
        return ("none",)
    leaves.append(t)
    return None


def _flatten(tree: Any) -> tuple[list[Any], Any]:
    """Leaves (arrays, numbers) and a spec rebuilding tuples, namedtuples, lists and dicts.

    (Module-level recursion, not a recursive closure: a closure that refers to
    itself is a reference cycle, which would keep the leaves, and so a trace,
    alive until the garbage collector runs.)
    """
    leaves: list[Any] = []
    spec = _walk(tree, leaves)
    return leaves, spec


def _build(s: Any, it: Iterator[Any]) -> Any:
    if s is None:
        return next(it)
    if s == ("none",):
        return None
    if s[0] is dict:
        return {k: _build(c, it) for k, c in zip(s[1], s[2], strict=False)}
    kind, children = s
    values = [_build(c, it) for c in children]
    if kind is list:
        return values
    if kind is tuple:
        return tuple(values)
    if hasattr(kind, "_fields"):
        return kind(*values)
    return kind(values)


def _unflatten(spec: Any, leaves: Sequence[Any]) -> Any:
    return _build(spec, iter(leaves))


def _is_differentiable(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and bool(
        getattr(dt, "is_float", False) or getattr(dt, "is_complex", False)
    )


def _as_primal(x: Any) -> Any:
    if isinstance(x, bool):
        return x
    if isinstance(x, (float, complex)):
        return tfr.asarray(x)
    return x


def _zeros_for(x: Any) -> Any:
    if not hasattr(x, "shape"):
        return None
    return tfr.zeros(tuple(x.shape), dtype=x.dtype)


def _finish(g: Any) -> Any:
    """A gradient handed to the caller: a plain owner (a broadcast or strided view is
    computed into a pooled tensor so the caller can write into it)."""
    if isinstance(g, Tracer) or g is None or type(g) is tfr.Tensor:
        return g
    if hasattr(g, "shape"):
        return tfr.add(g, 0)
    return g


# ---------------------------------------------------------------------------- vjp
#: ``pullback(ct)``: one cotangent per primal, a tuple (each shaped like its primal).
Pullback = Callable[[Any], tuple[Any, ...]]

_T = TypeVar("_T")


@overload
def vjp(
    f: Callable[..., Any], *primals: Any, has_aux: Literal[False] = False
) -> tuple[Any, Pullback]: ...
@overload
def vjp(
    f: Callable[..., Any], *primals: Any, has_aux: Literal[True]
) -> tuple[Any, Pullback, Any]: ...
@overload
def vjp(
    f: Callable[..., Any], *primals: Any, has_aux: bool
) -> tuple[Any, Pullback] | tuple[Any, Pullback, Any]: ...
def vjp(
    f: Callable[..., Any], *primals: Any, has_aux: bool = False
) -> tuple[Any, Pullback] | tuple[Any, Pullback, Any]:
    """``(f(*primals), pullback)``; ``pullback(ct)`` returns one cotangent per primal (a tuple).

    ``ct`` has the structure of the output. The trace (the nodes and the read
    borrows of the values its backward pass needs) lives as long as the
    pullback does. With ``has_aux=True``, ``f`` returns ``(out, aux)`` and
    ``vjp`` returns ``(out, pullback, aux)``.
    """
    level = new_level()
    leaves, spec = _flatten(primals)
    leaves = [_as_primal(p) for p in leaves]
    traced: list[Any] = []
    nodes: list[Node | None] = []
    for p in leaves:
        if _is_differentiable(p):
            node = Node(None, [], 1, (), [])
            traced.append(Tracer(p, level, node))
            nodes.append(node)
        else:
            traced.append(p)
            nodes.append(None)
    state.depth += 1
    try:
        out = f(*_unflatten(spec, traced))
    finally:
        state.depth -= 1
    del traced
    aux = None
    if has_aux:
        out, aux = out
        aux = stop_gradient(aux)
    out_leaves, out_spec = _flatten(out)
    plain = [o.primal if isinstance(o, Tracer) and o.level == level else o for o in out_leaves]
    mine = [o if isinstance(o, Tracer) and o.level == level else None for o in out_leaves]
    del out, out_leaves
    shapes = [(tuple(p.shape), p.dtype) if hasattr(p, "shape") else None for p in leaves]

    def pullback(ct: Any) -> tuple[Any, ...]:
        ct_leaves, _ = _flatten(ct)
        if len(ct_leaves) != len(mine):
            raise ValidationError(
                "tenferro.autodiff.vjp",
                f"the cotangent has {len(ct_leaves)} arrays but the output has {len(mine)}; "
                "pass one cotangent per output array, in the output's structure",
                kind="LENGTH_MISMATCH",
            )
        roots = [
            (t, c) for t, c in zip(mine, ct_leaves, strict=False) if t is not None and c is not None
        ]
        got = backward(level, roots) if roots else {}
        grads = []
        for node, sd in zip(nodes, shapes, strict=False):
            g = got.get(id(node)) if node is not None else None
            if g is None and node is not None and sd is not None:
                g = tfr.zeros(sd[0], dtype=sd[1])
            grads.append(_finish(g))
        return cast(tuple[Any, ...], _unflatten(spec, grads))  # primals: a tuple

    result = _unflatten(out_spec, plain)
    if has_aux:
        return result, pullback, aux
    return result, pullback


# ---------------------------------------------------------------------------- grad
def _check_scalar(value: Any) -> None:
    dt = getattr(value, "dtype", None)
    if dt is None or getattr(value, "size", 0) != 1 or dt.is_complex or not dt.is_float:
        raise ValidationError(
            "tenferro.autodiff.grad",
            "f must return a real floating scalar (a one-element float array); take "
            "tenferro.real or a norm of a complex result, or use vjp for other outputs",
            kind="INVALID_OPERAND",
            operand_type=type(value).__name__,
        )


def value_and_grad(
    f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``(f(*args), gradient)``; the gradient has the structure of ``args[argnums]``.

    ``f`` returns a real scalar. For complex inputs the gradient is
    ``dL/dRe + i dL/dIm`` (steepest ascent; JAX's ``grad`` gives its conjugate).
    With ``has_aux``, ``f`` returns ``(value, aux)`` and the result is
    ``((value, aux), gradient)``.
    """
    single = isinstance(argnums, int)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        def selected(*chosen: Any) -> Any:
            full = list(args)
            for i, v in zip(nums, chosen, strict=False):
                full[i] = v
            return f(*full, **kwargs)

        got = vjp(selected, *[args[i] for i in nums], has_aux=has_aux)
        value, pullback = got[0], got[1]
        _check_scalar(value)
        grads = pullback(tfr.ones(tuple(value.shape), dtype=value.dtype))
        g = grads[0] if single else grads
        if len(got) == 3:  # has_aux
            return (value, got[2]), g
        return value, g

    return run


def grad(
    f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """The gradient of a real scalar ``f`` in ``args[argnums]`` (see `value_and_grad`)."""
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        got = vg(*args, **kwargs)
        if has_aux:
            return got[1], got[0][1]
        return got[1]

    return run


# ---------------------------------------------------------------------------- forward mode
def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(f(*primals), J @ tangents)``: the directional derivative along ``tangents``.

    Computed as the transpose of the pullback (the pullback is linear in its
    cotangent and itself differentiable), so every rule needs only its backward
    function.
    """
    out, pullback = vjp(f, *primals)
    out_leaves, out_spec = _flatten(out)
    seed = _unflatten(out_spec, [_zeros_for(o) if hasattr(o, "shape") else 0.0 for o in out_leaves])
    _, transpose = vjp(pullback, seed)
    (t_out,) = transpose(tuple(tangents))
    return out, t_out


def hvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, ...]:
    """``H @ tangents`` for a real scalar ``f`` (reverse over reverse), shaped like ``primals``.

    For complex arguments H is the Hessian over the real and imaginary parts,
    packed as ``re + i im`` the way gradients are.
    """
    primals = tuple(primals)
    tangents = tuple(tangents)
    nums = tuple(range(len(primals)))

    def directional(*xs: Any) -> Any:
        gs = grad(f, argnums=nums)(*xs)
        g_leaves, _ = _flatten(gs)
        t_leaves, _ = _flatten(tangents)
        total: Any = None
        for g, t in zip(g_leaves, t_leaves, strict=False):
            prod = tfr.real(tfr.conj(g) * t) if g.dtype.is_complex else g * t
            term = tfr.sum(prod)
            total = term if total is None else total + term
        return total

    return cast(tuple[Any, ...], grad(directional, argnums=nums)(*primals))  # argnums: a tuple


# ------------------------------------------------------------------ stop_gradient, checkpoint
def stop_gradient(x: _T) -> _T:
    """``x`` as a constant to every trace (its arrays unwrapped; a pytree is mapped)."""
    leaves, spec = _flatten(x)
    return cast(_T, _unflatten(spec, [strip(v) for v in leaves]))


def checkpoint(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` whose intermediates are not kept: the backward pass runs ``f`` again.

    Only the inputs are held (read-borrowed) between the forward and the backward pass.
    """

    @functools.wraps(f)
    def run(*args: Any) -> Any:
        leaves, spec = _flatten(args)
        top = max((v.level for v in leaves if isinstance(v, Tracer)), default=0)
        if top == 0 or state.depth == 0:
            return f(*args)
        inner = [v.primal if isinstance(v, Tracer) and v.level == top else v for v in leaves]

        def flat(*ls: Any) -> Any:
            out_leaves, _ = _flatten(f(*_unflatten(spec, ls)))
            return tuple(out_leaves)

        out_struct = f(*_unflatten(spec, inner))
        out_leaves, out_spec = _flatten(out_struct)
        del out_struct

        def bwd(cts: Any, needs: Any) -> Any:
            cts = list(cts)
            filled = [
                c if c is not None else (tfr.zeros(s, dtype=d) if s is not None else None)
                for c, (s, d) in zip(cts, out_leaves_shapes, strict=False)
            ]
            _, pullback = vjp(flat, *inner)
            return pullback(tuple(filled))

        out_leaves_shapes = [
            (tuple(o.shape), o.dtype) if hasattr(o, "shape") else (None, None) for o in out_leaves
        ]
        wrapped = record(top, leaves, tuple(out_leaves), bwd, inner)
        return _unflatten(out_spec, list(wrapped))

    return run
