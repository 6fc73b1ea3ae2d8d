"""Automatic differentiation of array-API code written with ``xp = tenferro`` (JAX's style).

>>> import tenferro as tfr
>>> import tenferro.autodiff as ad
>>> f = lambda x: tfr.sum(tfr.sin(x) * x)
>>> x = tfr.asarray([0.0, 1.0, 2.0])
>>> value, g = ad.value_and_grad(f)(x)
>>> round(float(value), 6), [round(v, 6) for v in tfr.to_numpy(g).tolist()]
(2.660066, [0.0, 1.381773, 0.077004])

Functional, no mutable ``.grad`` fields: `grad`, `value_and_grad`, `vjp`,
`jvp`, `hvp`, `stop_gradient`, `checkpoint`; arguments may be pytrees of
tuples, lists and dicts. Complex convention: the gradient of a real loss is
``dL/dRe(z) + i dL/dIm(z)`` (PyTorch's; JAX returns its conjugate). Importing
this package installs the dispatch hook on the namespace (`_hook`). See
docs/autodiff.md.
"""

from __future__ import annotations

from ._hook import install as _install

_install()

from . import _linalg_rules  # noqa: E402  (rules register after the hook is in place)
from ._api import (  # noqa: E402
    checkpoint,
    grad,
    hvp,
    jvp,
    stop_gradient,
    value_and_grad,
    vjp,
)
from ._linalg_rules import config  # noqa: E402
from ._quimb import register as _register_quimb  # noqa: E402
from ._trace import Tracer  # noqa: E402

del _linalg_rules
_register_quimb()

__all__ = [
    "Tracer",
    "checkpoint",
    "config",
    "grad",
    "hvp",
    "jvp",
    "stop_gradient",
    "value_and_grad",
    "vjp",
]
