"""Derivative rules of the namespace functions (elementwise, reductions, manipulation,
indexing, contractions). The linear-algebra rules are in `_linalg_rules`.

Three tables, keyed by the function's name (``"linalg."`` in front for
`tenferro.linalg`):

* ``RULES[name](out, *args, **kwargs) -> (bwd, keep)``: a primitive. ``out`` and
  ``args`` are the unwrapped values (plain arrays, or tracers of an enclosing
  trace); ``bwd(ct, needs)`` returns one cotangent per positional argument
  (None where ``needs`` says it is not wanted); ``keep`` lists the arrays
  ``bwd`` holds, which the tape read-borrows.
* ``COMPOSITES[name](*args, **kwargs)``: a function written with other
  namespace functions, run on the tracers themselves (so it needs no rule).
* ``NONDIFF``: functions whose result does not depend differentiably on the
  arrays (comparisons, integer results, rounding): run on the plain values, the
  result is a constant. ``IDENTITY``: the result is the argument.

Cotangent convention: for an array ``z``, the cotangent of a real loss ``L`` is
``dL/dRe(z) + i dL/dIm(z)`` (PyTorch's), so for a holomorphic ``y = f(x)`` the
rule is ``ct_x = ct_y * conj(f'(x))``. Every backward function uses only
`tenferro` namespace functions (looked up on the module at call time, hence
through the hook): run on tracers of an enclosing trace it is recorded there,
which is what makes second derivatives work.
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Callable
from typing import Any

import numpy as np

import tenferro as _tenferro

from ..errors import ValidationError
from ._trace import Tracer, install_rules, record, strip

# The namespace, called through the hook at run time (mypy does not follow its star
# re-export, so the module is typed as Any).
tfr: Any = _tenferro

__all__ = ["COMPOSITES", "IDENTITY", "NONDIFF", "RULES", "traced_getitem"]

Rule = Callable[..., tuple[Callable[[Any, Any], Any], tuple[Any, ...]]]
RULES: dict[str, Rule] = {}
COMPOSITES: dict[str, Callable[..., Any]] = {}

NONDIFF = frozenset(
    {
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "logical_xor",
        "logical_not",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_invert",
        "bitwise_left_shift",
        "bitwise_right_shift",
        "isfinite",
        "isinf",
        "isnan",
        "signbit",
        "sign",
        "floor",
        "ceil",
        "round",
        "trunc",
        "floor_divide",
        "nextafter",
        "argmax",
        "argmin",
        "argsort",
        "nonzero",
        "count_nonzero",
        "all",
        "any",
        "searchsorted",
        "unique_all",
        "unique_counts",
        "unique_inverse",
        "unique_values",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "to_numpy",
        "allclose",
        "isclose",
        "linalg.matrix_rank",
        "meshgrid",
        "arange",
        "linspace",
        "zeros",
        "ones",
        "empty",
        "full",
        "eye",
    }
)

IDENTITY = frozenset({"positive", "copy", "ascontiguousarray", "asfortranarray"})


# ---------------------------------------------------------------------------- helpers
def is_complex(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    if dt is None:
        return isinstance(x, complex)
    return bool(dt.is_complex)


def conj(x: Any) -> Any:
    if not hasattr(x, "dtype"):
        return x.conjugate() if isinstance(x, complex) else x
    return tfr.conj(x) if x.dtype.is_complex else x


def H(x: Any) -> Any:
    """The conjugate transpose of the last two axes."""
    return conj(tfr.matrix_transpose(x))


def fit(ct: Any, x: Any) -> Any:
    """``ct`` summed over the axes ``x`` was broadcast along and cast to ``x``'s dtype."""
    if ct is None or not hasattr(x, "shape"):
        return None
    shape = tuple(x.shape)
    if ct.dtype == x.dtype and tuple(ct.shape) == shape:
        return ct  # the common case: nothing to sum or cast
    if tuple(ct.shape) != shape:
        lead = ct.ndim - len(shape)
        if lead > 0:
            ct = tfr.sum(ct, axis=tuple(range(lead)))
        ones = tuple(i for i, n in enumerate(shape) if n == 1 and ct.shape[i] != 1)
        if ones:
            ct = tfr.sum(ct, axis=ones, keepdims=True)
    xd = x.dtype
    if ct.dtype != xd:
        if ct.dtype.is_complex and not xd.is_complex:
            ct = tfr.real(ct)
        if ct.dtype != xd:
            ct = tfr.astype(ct, xd)
    return ct


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(a % ndim for a in axis)) if ndim else ()


def _expand(ct: Any, axis: Any, ndim: int, keepdims: bool) -> Any:
    """A reduction's cotangent with its reduced axes back (size 1)."""
    if keepdims:
        return ct
    for a in _axes(axis, ndim):
        ct = tfr.expand_dims(ct, axis=a)
    return ct


def _real_dtype(x: Any) -> Any:
    return x.dtype.real if x.dtype.is_complex else x.dtype


# ---------------------------------------------------------------------------- elementwise
def _unary(deriv: Callable[[Any, Any], Any], keep_out: bool = True) -> Rule:
    def rule(out: Any, x: Any, **_: Any) -> Any:
        def bwd(ct: Any, needs: Any) -> Any:
            return (fit(ct * conj(deriv(x, out)), x),)

        return bwd, ((x, out) if keep_out else (x,))

    return rule


_UNARY: dict[str, Callable[[Any, Any], Any]] = {
    "exp": lambda x, y: y,
    "expm1": lambda x, y: y + 1,
    "log": lambda x, y: tfr.reciprocal(x),
    "log1p": lambda x, y: tfr.reciprocal(x + 1),
    "log2": lambda x, y: tfr.reciprocal(x * math.log(2.0)),
    "log10": lambda x, y: tfr.reciprocal(x * math.log(10.0)),
    "sqrt": lambda x, y: tfr.reciprocal(y * 2),
    "square": lambda x, y: x * 2,
    "sin": lambda x, y: tfr.cos(x),
    "cos": lambda x, y: -tfr.sin(x),
    "tan": lambda x, y: y * y + 1,
    "sinh": lambda x, y: tfr.cosh(x),
    "cosh": lambda x, y: tfr.sinh(x),
    "tanh": lambda x, y: 1 - y * y,
    "asin": lambda x, y: tfr.reciprocal(tfr.sqrt(1 - x * x)),
    "acos": lambda x, y: -tfr.reciprocal(tfr.sqrt(1 - x * x)),
    "atan": lambda x, y: tfr.reciprocal(x * x + 1),
    "asinh": lambda x, y: tfr.reciprocal(tfr.sqrt(x * x + 1)),
    "acosh": lambda x, y: tfr.reciprocal(tfr.sqrt(x - 1) * tfr.sqrt(x + 1)),
    "atanh": lambda x, y: tfr.reciprocal(1 - x * x),
    "reciprocal": lambda x, y: -(y * y),
}
for _name, _d in _UNARY.items():
    RULES[_name] = _unary(_d)


def _negative(out: Any, x: Any) -> Any:
    return (lambda ct, needs: (-ct,)), ()


def _conj_rule(out: Any, x: Any) -> Any:
    return (lambda ct, needs: (conj(ct),)), ()


def _real_rule(out: Any, x: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (tfr.astype(ct, x.dtype) if is_complex(x) else fit(ct, x),)

    return bwd, ()


def _imag_rule(out: Any, x: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        if not is_complex(x):
            return (None,)
        return (tfr.multiply(tfr.astype(ct, x.dtype), 1j),)

    return bwd, ()


def _abs_rule(out: Any, x: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        if is_complex(x):
            safe = tfr.where(out == 0, 1.0, out)
            return (ct * (x / safe),)
        return (ct * tfr.sign(x),)

    return bwd, (x, out)


RULES.update(
    {
        "negative": _negative,
        "conj": _conj_rule,
        "real": _real_rule,
        "imag": _imag_rule,
        "abs": _abs_rule,
    }
)


def _add(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (fit(ct, a) if needs[0] else None, fit(ct, b) if needs[1] else None)

    return bwd, ()


def _subtract(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (fit(ct, a) if needs[0] else None, fit(-ct, b) if needs[1] else None)

    return bwd, ()


def _multiply(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (
            fit(ct * conj(b), a) if needs[0] else None,
            fit(ct * conj(a), b) if needs[1] else None,
        )

    return bwd, (a, b)


def _divide(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        q = ct / conj(b)
        return (fit(q, a) if needs[0] else None, fit(-(q * conj(out)), b) if needs[1] else None)

    return bwd, (b, out)


def _pow(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        ga = gb = None
        if needs[0]:
            if isinstance(b, (int, float)) and not isinstance(b, bool):
                d = a * 2 if b == 2 else (tfr.ones_like(a) if b == 1 else b * a ** (b - 1))
            else:
                d = b * a ** (b - 1)
            ga = fit(ct * conj(d), a)
        if needs[1]:
            safe = tfr.where(a == 0, 1.0, a)
            gb = fit(ct * conj(out * tfr.log(safe)), b)
        return ga, gb

    return bwd, (a, b, out)


def _select(take_first: Callable[[Any, Any], Any]) -> Rule:
    def rule(out: Any, a: Any, b: Any) -> Any:
        mask = take_first(a, b)

        def bwd(ct: Any, needs: Any) -> Any:
            return (
                fit(tfr.where(mask, ct, 0.0), a) if needs[0] else None,
                fit(tfr.where(mask, 0.0, ct), b) if needs[1] else None,
            )

        return bwd, ()

    return rule


def _atan2(out: Any, y: Any, x: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        r = x * x + y * y
        return (
            fit(ct * x / r, y) if needs[0] else None,
            fit(-(ct * y) / r, x) if needs[1] else None,
        )

    return bwd, (y, x)


def _hypot(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        q = ct / out
        return (fit(q * a, a) if needs[0] else None, fit(q * b, b) if needs[1] else None)

    return bwd, (a, b, out)


def _logaddexp(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (
            fit(ct * tfr.exp(a - out), a) if needs[0] else None,
            fit(ct * tfr.exp(b - out), b) if needs[1] else None,
        )

    return bwd, (a, b, out)


def _remainder(out: Any, a: Any, b: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (
            fit(ct, a) if needs[0] else None,
            fit(-(ct * tfr.floor_divide(a, b)), b) if needs[1] else None,
        )

    return bwd, (a, b)


RULES.update(
    {
        "add": _add,
        "subtract": _subtract,
        "multiply": _multiply,
        "divide": _divide,
        "pow": _pow,
        "maximum": _select(lambda a, b: strip(a) >= strip(b)),
        "minimum": _select(lambda a, b: strip(a) <= strip(b)),
        "atan2": _atan2,
        "hypot": _hypot,
        "logaddexp": _logaddexp,
        "remainder": _remainder,
    }
)


def _clip(x: Any, /, min: Any = None, max: Any = None) -> Any:
    if min is not None:
        x = tfr.maximum(x, min)
    if max is not None:
        x = tfr.minimum(x, max)
    return x


def _astype(out: Any, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    return (lambda ct, needs: (fit(ct, x), None)), ()


def _asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    if isinstance(obj, (list, tuple)):
        obj = tfr.stack([_asarray(o) for o in obj], axis=0)
    if dtype is not None and obj.dtype != dtype:
        return tfr.astype(obj, dtype)
    return obj


COMPOSITES.update({"clip": _clip, "asarray": _asarray})
RULES["astype"] = _astype


def _where(out: Any, cond: Any, a: Any, b: Any) -> Any:
    c = strip(cond)

    def bwd(ct: Any, needs: Any) -> Any:
        return (
            None,
            fit(tfr.where(c, ct, 0.0), a) if needs[1] else None,
            fit(tfr.where(c, 0.0, ct), b) if needs[2] else None,
        )

    return bwd, (c,)


RULES["where"] = _where


# ---------------------------------------------------------------------------- reductions
def _sum(
    out: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False
) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        g = _expand(ct, axis, x.ndim, keepdims)
        return (fit(tfr.broadcast_to(g, tuple(x.shape)), x),)

    return bwd, ()


def _prod(
    out: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False
) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        g = _expand(ct * conj(out), axis, x.ndim, keepdims)
        return (fit(g / conj(x), x),)

    return bwd, (x, out)


def _extremum(out: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        y = _expand(out, axis, x.ndim, keepdims)
        mask = tfr.astype(strip(x) == strip(y), _real_dtype(x))
        count = tfr.sum(mask, axis=axis, keepdims=True)
        g = _expand(ct, axis, x.ndim, keepdims)
        return (fit(g * (mask / count), x),)

    return bwd, (x, out)


def _mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    n = 1
    for a in _axes(axis, x.ndim):
        n *= x.shape[a]
    return tfr.sum(x, axis=axis, keepdims=keepdims) / n


def _var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    n = 1
    for a in _axes(axis, x.ndim):
        n *= x.shape[a]
    d = x - tfr.sum(x, axis=axis, keepdims=True) / n
    sq = tfr.real(d * tfr.conj(d)) if is_complex(x) else d * d
    return tfr.sum(sq, axis=axis, keepdims=keepdims) / (n - correction)


def _std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    return tfr.sqrt(_var(x, axis=axis, correction=correction, keepdims=keepdims))


def _cumulative_sum(
    out: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
) -> Any:
    ax = 0 if axis is None else axis

    def bwd(ct: Any, needs: Any) -> Any:
        if include_initial:
            ct = traced_getitem(ct, (slice(None),) * (ax % x.ndim) + (slice(1, None),))
        g = tfr.flip(tfr.cumulative_sum(tfr.flip(ct, axis=ax), axis=ax), axis=ax)
        return (fit(g, x),)

    return bwd, ()


RULES.update(
    {
        "sum": _sum,
        "prod": _prod,
        "max": _extremum,
        "min": _extremum,
        "cumulative_sum": _cumulative_sum,
    }
)
COMPOSITES.update({"mean": _mean, "var": _var, "std": _std})


# ---------------------------------------------------------------------------- manipulation
# The reshaping rules keep only the input's shape, not the input: a closure over
# ``x`` would keep an intermediate (and its pooled buffer) alive for the whole trace.
def _reshape(out: Any, x: Any, /, shape: Any, *, copy: Any = None) -> Any:
    x_shape = tuple(x.shape)
    return (lambda ct, needs: (tfr.reshape(ct, x_shape), None)), ()


def _same_shape(out: Any, x: Any, /, *args: Any, **kwargs: Any) -> Any:
    x_shape = tuple(x.shape)
    rest = (None,) * len(args)
    return (lambda ct, needs: (tfr.reshape(ct, x_shape), *rest)), ()


def _permute_dims(out: Any, x: Any, /, axes: Any) -> Any:
    inverse = tuple(int(i) for i in np.argsort([a % x.ndim for a in axes]))
    return (lambda ct, needs: (tfr.permute_dims(ct, inverse), None)), ()


def _transpose(x: Any, /, axes: Any = None) -> Any:
    return tfr.permute_dims(x, tuple(range(x.ndim - 1, -1, -1)) if axes is None else tuple(axes))


def _matrix_transpose(out: Any, x: Any) -> Any:
    return (lambda ct, needs: (tfr.matrix_transpose(ct),)), ()


def _flip(out: Any, x: Any, /, *, axis: Any = None) -> Any:
    return (lambda ct, needs: (tfr.flip(ct, axis=axis),)), ()


def _moveaxis(out: Any, x: Any, source: Any, destination: Any, /) -> Any:
    return (lambda ct, needs: (tfr.moveaxis(ct, destination, source), None, None)), ()


def _broadcast_to(out: Any, x: Any, /, shape: Any) -> Any:
    return (lambda ct, needs: (fit(ct, x), None)), ()


def _broadcast_arrays(out: Any, *arrays: Any) -> Any:
    def bwd(cts: Any, needs: Any) -> Any:
        return tuple(
            fit(c, a) if n and c is not None else None
            for c, a, n in zip(cts, arrays, needs, strict=False)
        )

    return bwd, ()


def _roll(out: Any, x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    back = -shift if isinstance(shift, int) else tuple(-s for s in shift)
    return (lambda ct, needs: (tfr.roll(ct, back, axis=axis), None)), ()


def _tri(name: str) -> Rule:
    def rule(out: Any, x: Any, /, *, k: int = 0) -> Any:
        return (lambda ct, needs: (getattr(tfr, name)(ct, k=k),)), ()

    return rule


def _concat(out: Any, arrays: Any, /, *, axis: Any = 0) -> Any:
    sizes = [a.shape[axis] for a in arrays]

    def bwd(ct: Any, needs: Any) -> Any:
        parts: list[Any] = []
        start = 0
        ax = axis % ct.ndim
        for a, n, need in zip(arrays, sizes, needs[0], strict=False):
            if need:
                key = (slice(None),) * ax + (slice(start, start + n),)
                parts.append(fit(traced_getitem(ct, key), a))
            else:
                parts.append(None)
            start += n
        return (parts,)

    return bwd, ()


def _concat_composite(arrays: Any, /, *, axis: Any = 0) -> Any:
    if axis is None:
        return tfr.concat([tfr.reshape(a, (-1,)) for a in arrays], axis=0)
    return NotImplemented


def _stack(out: Any, arrays: Any, /, *, axis: int = 0) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        ax = axis % ct.ndim
        return (
            [
                fit(traced_getitem(ct, (slice(None),) * ax + (i,)), a) if need else None
                for i, (a, need) in enumerate(zip(arrays, needs[0], strict=False))
            ],
        )

    return bwd, ()


def _unstack(out: Any, x: Any, /, *, axis: int = 0) -> Any:
    def bwd(cts: Any, needs: Any) -> Any:
        parts = [
            c if c is not None else tfr.zeros(tuple(o.shape), dtype=o.dtype)
            for c, o in zip(cts, out, strict=False)
        ]
        return (fit(tfr.stack(parts, axis=axis), x),)

    return bwd, ()


def _squeeze_or_expand(out: Any, x: Any, /, axis: Any = 0) -> Any:
    x_shape = tuple(x.shape)
    return (lambda ct, needs: (tfr.reshape(ct, x_shape),)), ()


RULES.update(
    {
        "reshape": _reshape,
        "ravel": _same_shape,
        "expand_dims": _squeeze_or_expand,
        "squeeze": _squeeze_or_expand,
        "permute_dims": _permute_dims,
        "matrix_transpose": _matrix_transpose,
        "linalg.matrix_transpose": _matrix_transpose,
        "flip": _flip,
        "moveaxis": _moveaxis,
        "broadcast_to": _broadcast_to,
        "broadcast_arrays": _broadcast_arrays,
        "roll": _roll,
        "tril": _tri("tril"),
        "triu": _tri("triu"),
        "concat": _concat,
        "stack": _stack,
        "unstack": _unstack,
    }
)
COMPOSITES.update({"transpose": _transpose})


# ---------------------------------------------------------------------------- indexing
def _is_basic_item(k: Any) -> bool:
    return k is None or k is Ellipsis or (isinstance(k, (int, slice)) and not isinstance(k, bool))


def _np_key(key: Any) -> Any:
    items = key if isinstance(key, tuple) else (key,)
    return tuple(
        np.asarray(strip(k)) if hasattr(k, "shape") or isinstance(k, list) else k for k in items
    )


def _scatter_plain(ct: Any, key: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Zeros of ``shape`` with ``ct`` added at ``key`` (repeated indices accumulate)."""
    items = key if isinstance(key, tuple) else (key,)
    if all(_is_basic_item(k) for k in items):
        z = tfr.zeros(shape, dtype=dtype)
        z[key] = ct
        return z
    z_np = np.zeros(shape, dtype=dtype.numpy)
    np.add.at(z_np, _np_key(key), np.asarray(ct))
    return tfr.asarray(z_np)


def _scatter_rule(out: Any, ct: Any, key: Any, shape: Any, dtype: Any) -> Any:
    return (lambda g, needs: (traced_getitem(g, key), None, None, None)), ()


def traced_scatter(ct: Any, key: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    if isinstance(ct, Tracer):
        level = ct.level
        inner = ct.primal
        out = traced_scatter(inner, key, shape, dtype)
        bwd, keep = _scatter_rule(out, inner, key, shape, dtype)
        return record(level, (ct, key, shape, dtype), out, bwd, keep)
    return _scatter_plain(ct, key, shape, dtype)


def _getitem_rule(out: Any, x: Any, key: Any) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (traced_scatter(ct, key, tuple(x.shape), ct.dtype), None)

    return bwd, ()


def traced_getitem(x: Any, key: Any) -> Any:
    """``x[key]`` recorded on ``x``'s trace (basic and advanced indexing)."""
    if not isinstance(x, Tracer):
        return x[key]
    inner = traced_getitem(x.primal, key)
    bwd, keep = _getitem_rule(inner, x.primal, key)
    return record(x.level, (x, key), inner, bwd, keep)


def _getitem_composite(x: Any, key: Any) -> Any:
    return traced_getitem(x, key)


def _take(x: Any, indices: Any, /, *, axis: Any = None) -> Any:
    if axis is None:
        x = tfr.reshape(x, (-1,))
        axis = 0
    return traced_getitem(x, (slice(None),) * (axis % x.ndim) + (strip(indices),))


COMPOSITES.update({"getitem": _getitem_composite, "take": _take})


# ---------------------------------------------------------------------------- contractions
def _fresh(used: set[str]) -> str:
    for c in string.ascii_letters:
        if c not in used:
            used.add(c)
            return c
    raise ValidationError("tenferro.autodiff.einsum", "too many indices", kind="TOO_MANY_INDICES")


def parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """Explicit subscripts (no ellipsis) for every operand and the output."""
    subs = subscripts.replace(" ", "")
    lhs, arrow, rhs = subs.partition("->")
    terms = lhs.split(",")
    used = {c for c in subs if c.isalpha()}
    ell_nd = 0
    for t, nd in zip(terms, ndims, strict=False):
        if "..." in t:
            ell_nd = max(ell_nd, nd - (len(t) - 3))
    ell = "".join(_fresh(used) for _ in range(ell_nd))
    out_terms = []
    for t, nd in zip(terms, ndims, strict=False):
        if "..." in t:
            k = nd - (len(t) - 3)
            t = t.replace("...", ell[ell_nd - k :] if k else "")
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return out_terms, out


@functools.lru_cache(maxsize=512)
def _einsum_grad_plan(
    subscripts: str, ndims: tuple[int, ...], i: int
) -> tuple[str, tuple[int, ...], tuple[tuple[str, str], ...]]:
    """The einsum giving operand ``i``'s cotangent: its subscripts, the other operands,
    and the extra constant operands (``("eye", letter)`` for a repeated index,
    ``("ones", letter)`` for an index that only operand ``i`` has)."""
    terms, rhs = parse_einsum(subscripts, list(ndims))
    used = set("".join(terms) + rhs)
    target: list[str] = []
    extra_terms: list[str] = []
    extras: list[tuple[str, str]] = []
    for c in terms[i]:
        if c in target:
            new = _fresh(used)
            target.append(new)
            extra_terms.append(c + new)
            extras.append(("eye", c))
        else:
            target.append(c)
    avail = set(rhs) | set("".join(terms[j] for j in range(len(terms)) if j != i))
    avail |= set("".join(extra_terms))
    for c in target:
        if c not in avail:
            extra_terms.append(c)
            extras.append(("ones", c))
            avail.add(c)
    others = tuple(j for j in range(len(terms)) if j != i)
    spec = ",".join([rhs] + [terms[j] for j in others] + extra_terms) + "->" + "".join(target)
    return spec, others, tuple(extras)


def _einsum_rule(out: Any, subscripts: str, /, *operands: Any, optimize: Any = None) -> Any:
    ndims = tuple(o.ndim for o in operands)

    def grad_of(i: int, ct: Any) -> Any:
        spec, others, extras = _einsum_grad_plan(subscripts, ndims, i)
        extra_ops: list[Any] = []
        if extras:
            terms, _ = parse_einsum(subscripts, list(ndims))
            sizes: dict[str, int] = {}
            for t, o in zip(terms, operands, strict=False):
                for c, n in zip(t, o.shape, strict=False):
                    sizes[c] = max(sizes.get(c, 1), n)
            dt = _real_dtype(ct)
            for kind, c in extras:
                if kind == "eye":
                    extra_ops.append(tfr.eye(sizes[c], dtype=dt))
                else:
                    extra_ops.append(tfr.ones((sizes[c],), dtype=dt))
        g = tfr.einsum(spec, ct, *[conj(operands[j]) for j in others], *extra_ops)
        return fit(g, operands[i])

    def bwd(ct: Any, needs: Any) -> Any:
        return (None, *tuple(grad_of(i, ct) if n else None for i, n in enumerate(needs[1:])))

    return bwd, operands


def _tensordot_axes(a_nd: int, b_nd: int, axes: Any) -> tuple[list[int], list[int]]:
    if isinstance(axes, int):
        return list(range(a_nd - axes, a_nd)), list(range(axes))
    ca, cb = axes
    ca = [ca] if isinstance(ca, int) else list(ca)
    cb = [cb] if isinstance(cb, int) else list(cb)
    return [c % a_nd for c in ca], [c % b_nd for c in cb]


def _tensordot_rule(out: Any, a: Any, b: Any, /, axes: Any = 2) -> Any:
    ca, cb = _tensordot_axes(a.ndim, b.ndim, axes)
    fa = [i for i in range(a.ndim) if i not in ca]
    fb = [i for i in range(b.ndim) if i not in cb]

    def bwd(ct: Any, needs: Any) -> Any:
        ga = gb = None
        nfa = len(fa)
        if needs[0]:
            g = tfr.tensordot(ct, conj(b), axes=(list(range(nfa, ct.ndim)), fb))
            order = fa + [ca[cb.index(p)] for p in sorted(cb)]
            perm = tuple(int(i) for i in np.argsort(order))
            ga = fit(tfr.permute_dims(g, perm) if perm != tuple(range(len(perm))) else g, a)
        if needs[1]:
            g = tfr.tensordot(conj(a), ct, axes=(fa, list(range(nfa))))
            order = [cb[ca.index(p)] for p in sorted(ca)] + fb
            perm = tuple(int(i) for i in np.argsort(order))
            gb = fit(tfr.permute_dims(g, perm) if perm != tuple(range(len(perm))) else g, b)
        return ga, gb

    return bwd, (a, b)


def _matmul_rule(out: Any, a: Any, b: Any, /) -> Any:
    def bwd(ct: Any, needs: Any) -> Any:
        return (
            fit(tfr.matmul(ct, H(b)), a) if needs[0] else None,
            fit(tfr.matmul(H(a), ct), b) if needs[1] else None,
        )

    return bwd, (a, b)


def _matmul_composite(a: Any, b: Any, /) -> Any:
    if a.ndim == 1 and b.ndim == 1:
        return tfr.sum(a * b)
    if a.ndim == 1:
        return tfr.squeeze(tfr.matmul(tfr.expand_dims(a, axis=0), b), axis=-2)
    if b.ndim == 1:
        return tfr.squeeze(tfr.matmul(a, tfr.expand_dims(b, axis=-1)), axis=-1)
    return NotImplemented


def _vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return tfr.sum(conj(x1) * x2, axis=axis)


def _dot(a: Any, b: Any, /) -> Any:
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim <= 2:
        return tfr.matmul(a, b)
    return tfr.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


def _outer(a: Any, b: Any, /) -> Any:
    return tfr.reshape(a, (-1, 1)) * tfr.reshape(b, (1, -1))


def _diagonal(x: Any, /, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    y = tfr.moveaxis(x, (axis1, axis2), (-2, -1))
    return _last_diagonal(y, offset)


def _last_diagonal(y: Any, offset: int) -> Any:
    n, m = y.shape[-2], y.shape[-1]
    if offset > 0:
        y = traced_getitem(y, (..., slice(None), slice(offset, None)))
    elif offset < 0:
        y = traced_getitem(y, (..., slice(-offset, None), slice(None)))
    del n, m
    k = min(y.shape[-2], y.shape[-1])
    y = traced_getitem(y, (..., slice(0, k), slice(0, k)))
    return tfr.einsum("...ii->...i", y)


def _trace(x: Any, /, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    return tfr.sum(_diagonal(x, offset, axis1, axis2), axis=-1)


def _diag(x: Any, /, k: int = 0) -> Any:
    if x.ndim == 2:
        return _diagonal(x, k)
    if k != 0:
        return NotImplemented
    n = x.shape[0]
    return tfr.einsum("i,ij->ij", x, tfr.eye(n, dtype=_real_dtype(x)))


RULES.update(
    {
        "einsum": _einsum_rule,
        "tensordot": _tensordot_rule,
        "matmul": _matmul_rule,
    }
)
COMPOSITES.update(
    {
        "vecdot": _vecdot,
        "linalg.vecdot": _vecdot,
        "dot": _dot,
        "outer": _outer,
        "linalg.outer": _outer,
        "diagonal": _diagonal,
        "linalg.diagonal": lambda x, /, *, offset=0: _last_diagonal(x, offset),
        "trace": _trace,
        "linalg.trace": lambda x, /, *, offset=0, dtype=None: tfr.sum(
            _last_diagonal(x, offset), axis=-1
        ),
        "linalg.tensordot": lambda a, b, /, *, axes=2: tfr.tensordot(a, b, axes=axes),
        "linalg.matmul": lambda a, b, /: tfr.matmul(a, b),
        "diag": _diag,
        "matmul": _matmul_composite,
        "concat": _concat_composite,
    }
)

install_rules(COMPOSITES, IDENTITY, NONDIFF, RULES, traced_getitem)
