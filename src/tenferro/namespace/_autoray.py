"""autoray integration: the few functions autoray composes from array attributes.

autoray finds most functions as ``tenferro.<name>``; two of its composed
defaults read attributes a `DType` spells differently (``dtype.name`` is
``"F64"``, the standard's name is ``dtype.value``, ``"float64"``) or call a
numpy-only method (``x.astype``); quimb's composed ``sgn`` mixes bool and float
arrays; and autoray's ``linalg.svd`` is thin for every backend. They are
registered, with the adapters of `_autoray_linalg` and `_autoray_numpy` and
tenferro's versions of quimb's split kernels (`_autoray_quimb`), for the
``tenferro`` backend when autoray is loaded: at once if it already is, otherwise
when it is first imported (a one-shot import hook), so importing tenferro never
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

import numpy as np

from ..dtype import DType
from ..engine.interface import current, unary
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import TensorView
from ._adapter import mirror, unmirror

__all__ = ["install"]

_FLOATING = (DType.F64, DType.F32, DType.C64, DType.C32)


def _get_dtype_name(x: Any) -> str:
    return str(x.dtype.value)


def _astype(x: Any, dtype_name: Any, **kwargs: Any) -> Any:
    from ._creation import astype

    return astype(x, dtype_name)


def _sgn_kernel(a: Any) -> Any:
    # quimb's formula on one borrowed array: ``x / |x|``, 1 where x is 0.
    zero = a == 0
    return (a + zero) / (abs(a) + zero)


def _sgn_into(fa: Any, out: Any) -> None:
    # `_sgn_kernel`'s formula on a buffer's flat elements (`engine.interface.unary`'s
    # kernel), its division written into the pooled output: every element.
    zero = fa == 0
    with np.errstate(all="ignore"):  # as the general path (`compute`)
        np.divide(fa + zero, np.abs(fa) + zero, out=out)


def _sgn_fast(x: Any) -> Any:
    """`_sgn` of a plain host owner of a floating dtype through the engine's compiled
    protocol (`unary`: pin, writer check, one pooled output of its shape and dtype),
    elementwise on its flat buffer; a C-ordered view through the column-major owner it
    reverses (`mirror`), giving the C-ordered view of the result. None otherwise."""
    if x.__class__ is TensorView:
        m = mirror(x)
        if m is None:
            return None
        r = _sgn_fast(m)
        return None if r is None else unmirror(r)
    if x.__class__ is not Tensor or x._st.__class__ is not HostBuffer:
        return None
    dt = x._dtype
    if dt not in _FLOATING:
        return None
    return unary(_sgn_into, x, dt, current())


def _sgn(x: Any) -> Any:
    # quimb's composed ``sgn`` (its stabilised QR) adds a bool mask to a float or
    # complex array, a mix of kinds the array API leaves out and tenferro refuses;
    # this is the same ``x / |x|`` (1 where x is 0), computed by numpy on the
    # borrowed array into a pooled output: for owners and C-ordered views in one
    # compiled engine call (`_sgn_fast`), else through the general path.
    r = _sgn_fast(x)
    if r is not None:
        return r
    from ._adapter import compute, emit
    from ._core import check_array, check_category

    op = "tenferro.sgn"
    check_array(x, op)
    # The division's category: integer and bool arrays are refused, as before.
    check_category(op, x.dtype, "floating")
    return emit(op, compute(op, _sgn_kernel, (x,)))


def _thin_svd(svd: Any) -> Any:
    def thin_svd(x: Any, /, **kwargs: Any) -> Any:
        kwargs.setdefault("full_matrices", False)
        return svd(x, **kwargs)

    return thin_svd


def register(autoray: Any) -> None:
    """Register tenferro's versions of autoray's composed functions."""
    autoray.register_function("tenferro", "get_dtype_name", _get_dtype_name)
    autoray.register_function("tenferro", "astype", _astype)
    autoray.register_function("tenferro", "sgn", _sgn)
    # autoray's convention for every backend: ``do("linalg.svd", x)`` is the thin
    # SVD (quimb's truncations rely on it); the standard's default is full.
    autoray.register_function("tenferro", "linalg.svd", wrapper=_thin_svd)
    from . import _autoray_linalg, _autoray_numpy, _autoray_quimb

    _autoray_linalg.register(autoray)
    _autoray_numpy.register(autoray)
    _autoray_quimb.register(autoray)


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
