"""The one hook: namespace functions dispatch on tracers.

`install` replaces every public function of `tenferro`, `tenferro.namespace`
and `tenferro.linalg` by a thin wrapper that, while a trace is running its
forward pass (``state.depth > 0``), looks for `Tracer` arguments and sends the
call to `_trace.dispatch`; otherwise it calls the function unchanged. It runs
once, when `tenferro.autodiff` is first imported, and edits no namespace file:
the namespace modules stay as they are, and a program that never imports
`tenferro.autodiff` never pays for the check. The array methods of `Tensor`
and the views are re-registered so ``tensor + tracer`` dispatches too.

A name bound before `tenferro.autodiff` was imported (``from tenferro import
exp``) keeps the unwrapped function; import `tenferro.autodiff` first, or call
through the module (``xp.exp``), as array-API code does.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from ._trace import dispatch, state

__all__ = ["install", "installed", "original"]

_WRAPPED: dict[int, Callable[..., Any]] = {}
_ORIGINAL: dict[str, Callable[..., Any]] = {}
_done = False

# Module-level callables that are not array functions (types, helpers taking no arrays).
_SKIP = frozenset(
    {
        "finfo",
        "iinfo",
        "can_cast",
        "result_type",
        "isdtype",
        "array_namespace",
        "__array_namespace_info__",
        "default_engine",
        "copy_stats",
        "forbid_copies",
        "from_numpy",
        "array_repr",
        "inplace",
        "setitem",
        "device_of",
    }
)


def _wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def traced(*args: Any, **kwargs: Any) -> Any:
        if state.depth:
            return dispatch(name, fn, args, kwargs)
        return fn(*args, **kwargs)

    functools.update_wrapper(traced, fn)
    traced.__tenferro_autodiff__ = name  # type: ignore[attr-defined]
    return traced


def original(name: str) -> Callable[..., Any]:
    """The namespace function under the hook (for rules that must not record)."""
    return _ORIGINAL[name]


def installed() -> bool:
    return _done


def _patch(module: Any) -> None:
    for attr in getattr(module, "__all__", ()):
        value = getattr(module, attr, None)
        if attr in _SKIP or isinstance(value, type) or not callable(value):
            continue
        if getattr(value, "__tenferro_autodiff__", None) is not None:
            continue
        mod = getattr(value, "__module__", "") or ""
        if not mod.startswith("tenferro."):
            continue
        key = id(value)
        if key not in _WRAPPED:
            base = getattr(value, "__name__", attr)
            name = ("linalg." if mod.startswith("tenferro.linalg") else "") + base
            # One function reached under several names (tenferro.arctan2 is
            # tenferro.atan2) is keyed by its own name, which the rule table uses.
            _WRAPPED[key] = _wrap(name, value)
            _ORIGINAL.setdefault(name, value)
        setattr(module, attr, _WRAPPED[key])


def install() -> None:
    """Wrap the public functions once (idempotent)."""
    global _done
    if _done:
        return
    import tenferro
    import tenferro.linalg as linalg
    import tenferro.namespace as namespace

    from .. import _array_methods

    _patch(namespace)
    _patch(linalg)
    _patch(tenferro)
    # The functions the rules also need under the hood: indexing by name.
    from ..namespace import _indexing

    _ORIGINAL.setdefault("getitem", _indexing.getitem)
    _array_methods.register(namespace)
    # autoray caches the functions it looked up; drop its cache of tenferro's, then
    # register tenferro's own versions again (sgn, the thin linalg.svd, ...): the
    # cache holds those registrations too, and without them quimb's composed
    # defaults run instead (its sgn mixes bool and float, which tenferro refuses).
    autoray = sys.modules.get("autoray")
    if autoray is not None:
        cache = getattr(autoray.autoray, "_FUNCS", None)
        if isinstance(cache, dict):
            for k in [k for k in cache if isinstance(k, tuple) and k and k[0] == "tenferro"]:
                del cache[k]
            from ..namespace import _autoray

            _autoray.register(autoray)
    _done = True
