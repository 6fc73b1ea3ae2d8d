"""numpy operands in namespace functions and operators, on either side.

A numpy ``ndarray`` passed to a namespace function or operator (``tfr.tensordot(t,
a)``, ``t * a``, ``a + t``) is **borrowed for the call**: a tenferro array over
the same memory, made without copying and without freezing the caller's array,
alive only while the function runs. The result is always a tenferro array:

* a computed result (elementwise, reductions, contractions, ...) is a new pooled
  tensor, and the borrow ends with the call;
* a result that would still see the borrowed memory (a view: ``reshape``,
  ``permute_dims``, basic indexing, or the operand returned as it is) is copied
  into a tensor of its own before it is returned: a named copy, counted, refused
  under `forbid_copies` (the caller's array stays writable, so no tenferro array
  may keep seeing it);
* an ndarray that is neither C- nor F-contiguous is read through a named copy
  (its elements are not one column- or row-major block), refused under
  `forbid_copies` and counted once the call succeeds (a refused call changes
  nothing, the copy counters included).

numpy scalars (``np.float32(2)``, ``np.int64(1)``, ``np.bool_``) are taken as
the Python scalars they hold: the array API's weak scalars (``x * np.float32(2)``
keeps ``x``'s dtype; ``x + np.int64(1)`` with a float ``x`` is accepted).

The numpy operand is only looked at when the function has refused its
arguments: every namespace function checks its operands before doing anything,
so a refused call changed nothing and the call is made again with the numpy
operands borrowed. Calls with tenferro operands only pay nothing.

``ndarray + t`` (numpy's side) reaches `mixed_ufunc` through
``__array_ufunc__``: a plain call of a ufunc the namespace has (no ``out=``)
with a numpy operand runs the namespace's function.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _services
from ..copies import check_copy, count_copy
from ..dtype import dtype_of_array
from ..errors import TenferroError
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import _ViewBase

__all__ = [
    "accept_numpy",
    "borrow",
    "compiled_entry",
    "install",
    "mixed_ufunc",
    "wrap_functions",
]

Array = np.ndarray[Any, Any]


class _Borrows:
    """The host buffers made for one call's numpy operands."""

    __slots__ = ("buffers", "copied")

    def __init__(self) -> None:
        self.buffers: list[HostBuffer] = []
        # Bytes of copies made for the call, counted only once it succeeds (a refused
        # call changes nothing, the copy counters included).
        self.copied: list[int] = []


def borrow(a: Array, op: str, borrows: _Borrows) -> Any:
    """A tenferro array over ``a``'s memory (no copy, ``a`` stays writable).

    F-contiguous: a tensor; C-contiguous: the transposed view of the tensor of the
    reversed shape; otherwise a named, counted copy (a tensor of its own).
    """
    dt = dtype_of_array(a, op)
    shape = tuple(int(d) for d in a.shape)
    if a.flags.f_contiguous:
        flat = a.reshape(-1, order="F")
        st = HostBuffer(flat, flat)
        borrows.buffers.append(st)
        return Tensor._wrap(shape, dt, st)
    if a.flags.c_contiguous:
        t = a.T
        flat = t.reshape(-1, order="F")
        st = HostBuffer(flat, flat)
        borrows.buffers.append(st)
        owner = Tensor._wrap(shape[::-1], dt, st)
        return owner.as_view().transpose_view(tuple(range(a.ndim - 1, -1, -1)))
    name = f"{op} (numpy operand, not contiguous)"
    check_copy(name, a.nbytes)
    flat = np.empty(a.size, dtype=a.dtype)
    np.copyto(flat.reshape(a.shape, order="F"), a)
    borrows.copied.append(a.nbytes)
    return Tensor._wrap(shape, dt, HostBuffer(flat, flat))


def _has_numpy(x: Any) -> bool:
    if isinstance(x, (np.ndarray, np.generic)):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_numpy(i) for i in x)
    return False


def _convert(x: Any, op: str, borrows: _Borrows) -> Any:
    if isinstance(x, np.ndarray):
        return borrow(x, op, borrows)
    if isinstance(x, np.generic):
        return x.item() if x.dtype.kind in "biufc" else x
    if isinstance(x, list) and _has_numpy(x):
        return [_convert(i, op, borrows) for i in x]
    if isinstance(x, tuple) and _has_numpy(x):
        return tuple(_convert(i, op, borrows) for i in x)
    return x


def _sees(x: Any, buffers: list[HostBuffer]) -> bool:
    if isinstance(x, Tensor):
        return any(x._st is b for b in buffers)
    if isinstance(x, _ViewBase):
        return any(x._source is b for b in buffers)
    return False


def _detach(x: Any, op: str, buffers: list[HostBuffer]) -> Any:
    """``x`` with every array that still sees borrowed memory copied out (counted)."""
    if _sees(x, buffers):
        v = x.as_view() if isinstance(x, Tensor) else x
        return v._materialise(f"{op} (result over a borrowed numpy operand)")
    if isinstance(x, tuple) and any(_sees(i, buffers) for i in x):
        items = [_detach(i, op, buffers) for i in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    if isinstance(x, list) and any(_sees(i, buffers) for i in x):
        return [_detach(i, op, buffers) for i in x]
    return x


def call_with_numpy(fn: Callable[..., Any], op: str, args: Any, kwargs: Any) -> Any:
    """``fn`` with the numpy operands among ``args``/``kwargs`` borrowed for the call."""
    borrows = _Borrows()
    a = tuple(_convert(x, op, borrows) for x in args)
    kw = {k: _convert(v, op, borrows) for k, v in kwargs.items()}
    res = fn(*a, **kw)
    del a, kw
    if borrows.buffers:
        res = _detach(res, op, borrows.buffers)
    for nbytes in borrows.copied:
        count_copy(nbytes)
    return res


_P = inspect.Parameter


def _exact_wrapper(fn: Callable[..., Any], op: str) -> Callable[..., Any] | None:
    """A wrapper with ``fn``'s own parameter list (no argument packing on the per-call
    path: one extra call inside a ``try``, which costs nothing until it raises), or
    None for a signature it does not copy (``*args``, ``**kwargs``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    env: dict[str, Any] = {
        "_w_fn": fn,
        "_w_op": op,
        "_w_errors": (TenferroError, TypeError),
        "_w_has": _has_numpy,
        "_w_retry": call_with_numpy,
    }
    decl: list[str] = []
    pos: list[str] = []
    kw: list[str] = []
    star = False
    for k, p in enumerate(params):
        if p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD) or p.name.startswith("_w_"):
            return None
        if k and params[k - 1].kind is _P.POSITIONAL_ONLY and p.kind is not _P.POSITIONAL_ONLY:
            decl.append("/")
        if p.kind is _P.KEYWORD_ONLY and not star:
            decl.append("*")
            star = True
        default = ""
        if p.default is not _P.empty:
            env[f"_w_d{k}"] = p.default
            default = f"=_w_d{k}"
        decl.append(p.name + default)
        (kw if p.kind is _P.KEYWORD_ONLY else pos).append(p.name)
    if params and params[-1].kind is _P.POSITIONAL_ONLY:
        decl.append("/")
    call = ", ".join(pos + [f"{n}={n}" for n in kw])
    args = "(" + "".join(f"{n}, " for n in pos) + ")"
    kwargs = "{" + ", ".join(f"{n!r}: {n}" for n in kw) + "}"
    src = (
        f"def wrapper({', '.join(decl)}):\n"
        f"    try:\n"
        f"        return _w_fn({call})\n"
        f"    except _w_errors:\n"
        f"        if not (_w_has({args}) or _w_has(tuple({kwargs}.values()))):\n"
        f"            raise\n"
        f"    return _w_retry(_w_fn, _w_op, {args}, {kwargs})\n"
    )
    exec(src, env)  # the source is built above from a signature's parameter names only
    return env["wrapper"]  # type: ignore[no-any-return]


def accept_numpy(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn``, made to accept numpy operands (tried only once ``fn`` has refused them)."""
    op = f"tenferro.{name}"
    exact = _exact_wrapper(fn, op)
    if exact is not None:
        wrapper: Any = functools.wraps(fn)(exact)
    else:

        def wrapper_any(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except (TenferroError, TypeError):
                if not (_has_numpy(args) or _has_numpy(tuple(kwargs.values()))):
                    raise
            # The refused call changed nothing: run it again on borrows.
            return call_with_numpy(fn, op, args, kwargs)

        wrapper = functools.wraps(fn)(wrapper_any)

    wrapper.__wrapped_numpy__ = fn
    done: Callable[..., Any] = wrapper
    return done


def compiled_entry(
    entry: Callable[..., Any], general: Callable[..., Any], name: str, module: str
) -> Any:
    """A compiled namespace function (an ``engine._core.*_entry``, whose fallback is
    ``accept_numpy(general, name)``) dressed as the function ``name`` of ``module``,
    with ``general``'s documentation; marked as borrowing numpy operands already, so
    `wrap_functions` leaves it as it is."""
    fn: Any = entry
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = general.__doc__
    fn.__module__ = module
    fn.__wrapped_numpy__ = general
    return fn


#: Functions that take numpy data as data (adopt or copy it) or take no operands.
_KEEP = frozenset(
    {
        "__array_namespace_info__",
        "asarray",
        "array",
        "from_dlpack",
        "ascontiguousarray",
        "asfortranarray",
        "to_numpy",
        "finfo",
        "iinfo",
        "isdtype",
        "result_type",
        "can_cast",
        "arange",
        "empty",
        "eye",
        "full",
        "linspace",
        "ones",
        "zeros",
    }
)


def wrap_functions(module: Any, names: Any, skip: Any = ()) -> None:
    """Wrap the functions ``names`` of ``module`` in `accept_numpy` (classes, the
    names in ``skip`` and functions wrapped already are left as they are)."""
    prefix = module.__name__.removeprefix("tenferro.").removeprefix("namespace")
    for name in names:
        if name in skip:
            continue
        fn = getattr(module, name)
        if callable(fn) and not hasattr(fn, "__wrapped_numpy__") and not isinstance(fn, type):
            full = f"{prefix}.{name}" if prefix else name
            setattr(module, name, accept_numpy(fn, full))


def install(module: Any, names: list[str], elementwise_functions: Any) -> None:
    """Wrap the namespace functions ``names`` of ``module`` in `accept_numpy`.

    The ``elementwise_functions`` borrow numpy operands on their general path
    already (their hot paths stay one call) and are left as they are."""
    global _namespace
    _namespace = module
    elementwise = {id(f) for f in elementwise_functions}
    keep = set(_KEEP) | {n for n in names if id(getattr(module, n)) in elementwise}
    wrap_functions(module, names, keep)
    _services.register_mixed_ufunc(mixed_ufunc)


#: The namespace module whose (wrapped) functions `mixed_ufunc` calls (set by `install`).
_namespace: Any = None

#: numpy's ufuncs behind Python's operators, and the namespace function of each.
_UFUNCS: dict[Any, str] = {
    np.add: "add",
    np.subtract: "subtract",
    np.multiply: "multiply",
    np.true_divide: "divide",
    np.floor_divide: "floor_divide",
    np.remainder: "remainder",
    np.power: "pow",
    np.matmul: "matmul",
    np.negative: "negative",
    np.positive: "positive",
    np.absolute: "abs",
    np.equal: "equal",
    np.not_equal: "not_equal",
    np.less: "less",
    np.less_equal: "less_equal",
    np.greater: "greater",
    np.greater_equal: "greater_equal",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.left_shift: "bitwise_left_shift",
    np.right_shift: "bitwise_right_shift",
    np.invert: "bitwise_invert",
}


def mixed_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ndarray + t`` and the other operators with a numpy operand: the namespace's
    function (a tenferro result); NotImplemented for every other ufunc use."""
    if method != "__call__" or kwargs or not _has_numpy(inputs):
        return NotImplemented
    name = _UFUNCS.get(ufunc)
    if name is None:
        return NotImplemented
    return getattr(_namespace, name)(*inputs)
