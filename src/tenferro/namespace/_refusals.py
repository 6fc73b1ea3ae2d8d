"""`numpy_call`: a numpy function whose refusals become typed (`errors.numpy_refusal`).

The namespace runs many operations on numpy (`_adapter.compute`, the creation
functions). Checks that can be made before numpy runs are made there (with
their own messages); this is the net under them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import NUMPY_REFUSALS, PASSED_ON, numpy_refusal

__all__ = ["NUMPY_REFUSALS", "PASSED_ON", "numpy_call", "numpy_refusal"]


def numpy_call(op: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (a numpy function), its refusals typed (`numpy_refusal`)."""
    try:
        return fn(*args, **kwargs)
    except PASSED_ON:
        raise
    except NUMPY_REFUSALS as exc:
        raise numpy_refusal(op, exc) from None
