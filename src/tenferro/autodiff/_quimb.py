"""quimb's ``TNOptimizer(..., autodiff_backend="tenferro")``.

quimb keeps its autodiff backends in a module-level table,
``quimb.tensor.optimize._BACKEND_HANDLERS`` (name -> handler class). `register`
adds ``"tenferro"`` to it: at once if quimb's optimize module is already
imported, otherwise as soon as it is (a one-shot import hook), so importing
`tenferro.autodiff` before or after quimb both work. tenferro never imports
quimb itself.

The handler converts quimb's numpy arrays to tenferro arrays, computes loss and
gradient with `value_and_grad` (quimb's loss runs through autoray, which
dispatches a `Tracer` to ``tenferro.<name>``), and hands numpy arrays back.
Complex parameters need no conjugation: tenferro's gradient is already
``dL/dRe + i dL/dIm``, the convention quimb's optimisers expect (they conjugate
autograd's and JAX's).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

import tenferro as _tenferro

from ._api import _flatten, _unflatten, hvp, value_and_grad

# The namespace, called through the hook at run time (mypy does not follow its star
# re-export, so the module is typed as Any).
tfr: Any = _tenferro

__all__ = ["TenferroHandler", "register"]

_TARGET = "quimb.tensor.optimize"


def _to_numpy(x: Any) -> Any:
    if hasattr(x, "shape") and not isinstance(x, np.ndarray):
        return np.array(tfr.to_numpy(x))
    return x


def _tree_map(fn: Any, tree: Any) -> Any:
    leaves, spec = _flatten(tree)
    return _unflatten(spec, [fn(v) for v in leaves])


class TenferroHandler:
    """quimb's backend-handler protocol on `tenferro.autodiff` (CPU only)."""

    def __init__(self, device: str = "cpu") -> None:
        if device not in ("cpu", None):
            raise ValueError("tenferro's autodiff backend runs on the cpu only")
        self._fn: Any = None
        self._value_and_grad: Any = None

    def to_variable(self, x: Any) -> Any:
        if isinstance(x, (tfr.Tensor, tfr.TensorView)):
            return x
        return tfr.asarray(np.array(x))

    def to_constant(self, x: Any) -> Any:
        return self.to_variable(x)

    def setup_fn(self, fn: Any) -> None:
        self._fn = fn
        self._value_and_grad = value_and_grad(fn)

    def value(self, arrays: Any) -> Any:
        return _to_numpy(self._fn(_tree_map(self.to_constant, arrays)))

    def value_and_grad(self, arrays: Any) -> tuple[Any, Any]:
        loss, grads = self._value_and_grad(_tree_map(self.to_variable, arrays))
        return _to_numpy(loss), _tree_map(_to_numpy, grads)

    def hessp(self, primals: Any, tangents: Any) -> Any:
        got = hvp(
            self._fn,
            (_tree_map(self.to_variable, primals),),
            (_tree_map(self.to_variable, tangents),),
        )
        return _tree_map(_to_numpy, got[0])


def _install(module: ModuleType) -> None:
    table = getattr(module, "_BACKEND_HANDLERS", None)
    if isinstance(table, dict):
        table.setdefault("tenferro", TenferroHandler)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        _install(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of quimb's optimize module once, to register after it runs."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def register() -> None:
    """Add ``"tenferro"`` to quimb's autodiff backends (now, or when quimb loads it)."""
    module = sys.modules.get(_TARGET)
    if module is not None:
        _install(module)
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
