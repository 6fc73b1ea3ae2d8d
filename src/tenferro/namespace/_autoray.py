"""autoray integration: the few functions autoray composes from array attributes.

autoray finds most functions as ``tenferro.<name>``; two of its composed
defaults read attributes a `DType` spells differently (``dtype.name`` is
``"F64"``, the standard's name is ``dtype.value``, ``"float64"``) or call a
numpy-only method (``x.astype``). They are registered for the ``tenferro``
backend when autoray is loaded: at once if it already is, otherwise when it
is first imported (a one-shot import hook), so importing tenferro never
imports autoray.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["install"]


def _get_dtype_name(x: Any) -> str:
    return str(x.dtype.value)


def _astype(x: Any, dtype_name: Any, **kwargs: Any) -> Any:
    from ._creation import astype

    return astype(x, dtype_name)


def register(autoray: Any) -> None:
    """Register tenferro's versions of autoray's composed functions."""
    autoray.register_function("tenferro", "get_dtype_name", _get_dtype_name)
    autoray.register_function("tenferro", "astype", _astype)


class _Hook(importlib.abc.MetaPathFinder):
    """Registers with autoray right after autoray's first import, then removes itself."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "autoray":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader: Any = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            register(module)

        loader.exec_module = exec_module
        return spec


def install() -> None:
    """Register now if autoray is loaded, else when it is imported."""
    autoray = sys.modules.get("autoray")
    if autoray is not None and hasattr(autoray, "register_function"):
        register(autoray)
    elif not any(isinstance(f, _Hook) for f in sys.meta_path):
        sys.meta_path.insert(0, _Hook())
