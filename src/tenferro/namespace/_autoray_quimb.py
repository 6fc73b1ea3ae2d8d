"""quimb's split kernels for tenferro arrays: ``svd_truncated`` and ``qr_stabilized``.

quimb writes its decompositions once against autoray (``@compose``) and registers
backend-specific versions under the same names (numpy's are numba-compiled). An
array with no registered version runs the composed default: for a truncated SVD
about twenty namespace calls (the SVD, a cutoff search over cumulative sums,
slices, a square root, broadcast products), for a stabilised QR six. These are
the ``tenferro`` backend's versions, registered with autoray under quimb's names
(`register`, called wherever tenferro registers with autoray: when autoray is
loaded, and again after `tenferro.autodiff` clears autoray's cache). autoray
keys a registration by name only, so it holds whether quimb is imported before
tenferro or after, and nothing here imports quimb, except the fallback below,
which only quimb's own calls reach.

Each takes quimb's arguments and gives quimb's composed results, value for value
(the same numpy formulas, in the same dtype): ``svd_truncated(x, cutoff,
cutoff_mode, max_bond, absorb, renorm, info)`` with the cutoff modes 1-6
(``"abs"``, ``"rel"``, ``"sum2"``, ``"rsum2"``, ``"sum1"``, ``"rsum1"``), every
absorb code or name, renormalisation powers and ``info["error"]``;
``qr_stabilized(x, absorb, stabilized)`` with the QR-like and LQ-like codes.
Both are compiled (`engine/_split.pxi`, in the core; docs/internals.md says how
they keep the ownership rules): the lean SVD (QR) of the matrix's memory, the
truncation count and every factor that absorbs the values (or R's phases) in one
pass of C, each absorbing factor a new pooled output; an unabsorbed, truncated
factor is a view of the decomposition's pooled output, as in quimb's composed
function. This module holds quimb's code tables and the numpy rule for
renormalisation and the truncation error (`_svd_plan`). Anything else
(a batch of matrices, extra keyword arguments, tracers, unknown codes, an empty
matrix) runs quimb's composed function, as quimb's numpy versions do for
batches.

Ownership, for each: **borrows** ``x``; results are new pooled tensors, or views
of them.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

from ..engine import _core
from ._adapter import emit

__all__ = ["qr_stabilized", "register", "svd_truncated"]

Array = np.ndarray[Any, Any]

# What a factor becomes: absent, as decomposed, or times s (or sqrt(s)).
_NONE, _PLAIN, _TIMES_S, _TIMES_SQRT = 0, 1, 2, 3

#: quimb's absorb codes and their names -> (left factor, singular values returned,
#: right factor).
_SVD_FORMS: dict[Any, tuple[int, bool, int]] = {}
for _codes, _form in (
    ((None, "U,s,VH"), (_PLAIN, True, _PLAIN)),
    ((2, "s"), (_NONE, True, _NONE)),
    ((-12, "lsqrt"), (_TIMES_SQRT, False, _NONE)),
    ((-11, "VH", "rorthog"), (_NONE, False, _PLAIN)),
    ((-10, "Us", "lfactor"), (_TIMES_S, False, _NONE)),
    ((-1, "Us,VH", "left"), (_TIMES_S, False, _PLAIN)),
    ((0, "Usq,sqVH", "both"), (_TIMES_SQRT, False, _TIMES_SQRT)),
    ((1, "U,sVH", "right"), (_PLAIN, False, _TIMES_S)),
    ((10, "U", "lorthog"), (_PLAIN, False, _NONE)),
    ((11, "sVH", "rfactor"), (_NONE, False, _TIMES_S)),
    ((12, "sqVH", "rsqrt"), (_NONE, False, _TIMES_SQRT)),
):
    for _c in _codes:
        _SVD_FORMS[_c] = _form

#: quimb's cutoff modes: 1 abs, 2 rel, 3 sum2, 4 rsum2, 5 sum1, 6 rsum1.
_CUTOFF_MODES: dict[Any, int] = {}
for _i, _name in enumerate(("abs", "rel", "sum2", "rsum2", "sum1", "rsum1"), start=1):
    _CUTOFF_MODES[_i] = _CUTOFF_MODES[_name] = _i

#: qr_stabilized's absorb codes and names -> (LQ-like, return Q, return R); the
#: LQ-like ones run on the transpose, Q and R swapping sides.
_QR_FORMS: dict[Any, tuple[bool, bool, bool]] = {}
for _codes, _qform in (
    ((1, "U,sVH", "right"), (False, True, True)),
    ((10, "U", "lorthog"), (False, True, False)),
    ((11, "sVH", "rfactor"), (False, False, True)),
    ((-1, "Us,VH", "left"), (True, True, True)),
    ((-11, "VH", "rorthog"), (True, True, False)),
    ((-10, "Us", "lfactor"), (True, False, True)),
):
    for _c in _codes:
        _QR_FORMS[_c] = _qform


def _composed(name: str) -> Any:
    """quimb's composed default of ``name`` (only quimb's calls reach the fallback)."""
    decomp = sys.modules.get("quimb.tensor.decomp")
    if decomp is None:
        decomp = importlib.import_module("quimb.tensor.decomp")
    return getattr(decomp, name)._default_fn


_linalg_module: Any = None


def _linalg() -> Any:
    # tenferro.linalg imports the namespace: looked up at the first call (the module,
    # so `tenferro.autodiff`'s wrappers of its functions are the ones called).
    global _linalg_module
    if _linalg_module is None:
        from .. import linalg

        _linalg_module = linalg
    return _linalg_module


def _lookup(table: dict[Any, Any], key: Any) -> Any:
    try:
        return table.get(key)
    except TypeError:  # unhashable: quimb's own lookup raises
        return None


# ---------------------------------------------------------------------- kernels
def _svd_plan(
    flat: Array,
    k: int,
    cutoff: float,
    mode: int,
    max_bond: int,
    renorm: Any,
    want_error: bool,
) -> tuple[int, Array | None, Any]:
    """``(n, norm, error)`` from the singular values ``flat[:k]`` (descending): how many
    to keep, the factor the kept ones are renormalised by (None: none) and the
    truncation error (None: not asked). quimb's composed rule, step for step, in
    the singular values' dtype, with numpy: the compiled kernel (`engine/_split.pxi`)
    counts in C and calls this only to renormalise, for the error, or for a cutoff
    or bond given as something other than a Python number. Returns new values only
    (``flat`` is borrowed)."""
    s = flat[:k]
    csp = tot = None
    power = 0
    if cutoff > 0.0 or renorm > 0:
        if mode == 1:
            n = int(np.count_nonzero(s > cutoff))
        elif mode == 2:
            n = int(np.count_nonzero(s > cutoff * s[0:1]))
        else:
            power = 2 if mode in (3, 4) else 1
            csp = np.cumsum(s**2 if power == 2 else s)
            tot = csp[-1:]
            bound = tot * (1 - cutoff) if mode in (4, 6) else tot - cutoff
            n = int(np.count_nonzero(csp < bound)) + 1
        n = max(n, 1)
        if max_bond > 0:
            n = min(n, max_bond)
    elif max_bond > 0:
        n = max_bond
    else:
        n = k
    if n >= k:
        return k, None, 0.0 if want_error else None
    norm = None
    if renorm > 0:
        if csp is not None and renorm == power:
            total, kept = tot, csp[n - 1 : n]
        else:
            weights = s**renorm
            total = np.sum(weights, axis=-1, keepdims=True)
            kept = np.sum(weights[:n], axis=-1, keepdims=True)
        norm = (total / np.where(kept > 0, kept, 1)) ** (1 / renorm)
        norm = np.where(kept > 0, norm, 1)
    error = np.sqrt(np.sum(s[n:] ** 2, axis=-1)) if want_error else None
    return n, norm, error


def _fallback(name: str, *args: Any, **kwargs: Any) -> Any:
    """quimb's composed ``name`` on these arguments (looked up at each call)."""
    return _composed(name)(*args, **kwargs)


def _error(value: Array) -> Any:
    """A truncation error (a numpy scalar array) as the tenferro scalar quimb's composed
    function gives."""
    return emit("svd_truncated", value)


# The kernels themselves are compiled (engine/_split.pxi, in the core): this module
# holds quimb's tables and the numpy rule for renormalisation and the error.
_core.bind_split(_SVD_FORMS, _CUTOFF_MODES, _QR_FORMS, _fallback, _svd_plan, _error, _linalg)
svd_truncated = _core.svd_truncated
qr_stabilized = _core.qr_stabilized


def register(autoray: Any) -> None:
    """Register the two kernels under quimb's names for the ``tenferro`` backend."""
    autoray.register_function("tenferro", "svd_truncated", svd_truncated)
    autoray.register_function("tenferro", "qr_stabilized", qr_stabilized)
