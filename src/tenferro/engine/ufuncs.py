"""numpy's ufunc protocol for tensors (`Tensor.__array_ufunc__` delegates here).

numpy does not defer a binary operator to a tensor's reflected method when the
tensor implements ``__array_ufunc__``: ``np.float64(2) * t`` and ``ndarray + t``
call the ufunc (``np.multiply``, ``np.add``) with the tensor as an operand. So:

* the ufuncs behind the tensor operators (``+ - * / ** @``, unary ``-`` and
  ``abs``), called plainly, run on the default engine exactly as the operators
  do: ``np.float64(2) * t`` is a tensor from the engine's pool (an ndarray
  operand, ``ndarray + t``, never gets here: the namespace registers
  ``_services.mixed_ufunc``, which runs its own function with the array
  borrowed for the call);
* every other use (``np.exp(t)``, ``np.sum(t)``, reductions, ``out=`` arrays)
  computes with numpy on a shared borrow of each tensor (``np.asarray(t)``) and
  returns numpy values, as reading the tensor through ``__array__`` did. A
  tensor is never written by numpy: ``out=`` a tensor is refused (use the
  engine's ``out=``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _services
from ..view import ufunc_at_refusal, ufunc_on_borrows
from .cpu import default_engine

__all__ = ["array_ufunc"]

#: The ufuncs tensor operators stand for, and the engine method each one runs.
_OPERATORS = {
    np.add: "add",
    np.subtract: "sub",
    np.multiply: "mul",
    np.true_divide: "div",
    np.power: "pow",
    np.matmul: "matmul",
    np.negative: "neg",
    np.absolute: "abs",
}


def array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``Tensor.__array_ufunc__``: the operator ufuncs on the engine, the rest on borrows."""
    name = _OPERATORS.get(ufunc)
    if name is not None and method == "__call__" and not kwargs:
        return getattr(default_engine(), name)(*inputs)
    if method == "at":
        raise ufunc_at_refusal(ufunc)
    return ufunc_on_borrows(ufunc, method, inputs, kwargs)


# Tensor sits below the engine: its operators and __array_ufunc__ reach it through here.
_services.register_engine(default_engine, array_ufunc)
