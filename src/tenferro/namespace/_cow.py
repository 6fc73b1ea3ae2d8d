"""The namespace's rule for ``x op= y`` on a view whose buffer other aliases share.

``x[key] = v`` writes memory: it takes an exclusive borrow of ``x``'s buffer and
is refused while any other alias of it is alive (an owner's views, a view's
sibling views, arrays from ``np.asarray``), as it always was.

``x op= y`` is, in Python, an assignment to the *name* ``x`` (``x =
x.__iop__(y)``), and the array API leaves open whether other views see it. The
operator computes ``x op y`` into a fresh pooled output first. Then:

* an owner (`Tensor`), or a view that is the only alias of its buffer, gets the
  result copied into its memory under an exclusive borrow (refused while the
  owner has live aliases, as before);
* a view whose buffer other aliases share is **re-pointed at the result's
  buffer**: the same Python object now holds the new values (so every holder of
  *that object*, a caller included, sees what numpy would show), while the other
  aliases keep seeing unchanged memory. No byte is copied (the result buffer
  exists anyway; this skips the copy into shared memory), so nothing is counted
  and `forbid_copies` has nothing to refuse.

Every check that can refuse (dtype, shape, a writer holding the buffer) runs
before anything changes, so a refused call changes nothing. See
docs/namespace.md, "Writing".
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from ..engine.interface import take_result
from ..layout import shape_size
from ..storage.host import HostBuffer
from ..view import TensorView
from ._adapter import write

__all__ = ["update_in_place"]


def _other_aliases(x: TensorView, src: HostBuffer) -> int:
    """Aliases of ``src`` other than the view ``x`` itself (each view holds one root)."""
    n = src.alias_count() - 1
    if n > 0:
        # An alias only unreachable garbage still holds can never be read again
        # (the same young-generation collection the exclusive borrow does first).
        gc.collect(1)
        n = src.alias_count() - 1
    return n


def _shared_view(x: Any) -> bool:
    """True for a plain host view that other live aliases share its buffer with."""
    if x.__class__ is not TensorView:
        return False
    src = x._source
    if src.__class__ is not HostBuffer or src.exclusive is not None:
        return False  # the write refuses these itself, with its own message
    if 0 in x._strides and shape_size(x._shape) > 1:
        return False  # a broadcast view repeats elements: the write refuses it
    return _other_aliases(x, src) > 0


def update_in_place(x: Any, res: Any, op: str, fn: Callable[[Any], None]) -> None:
    """Give ``x`` the values of ``res`` (same shape and dtype, checked by the caller).

    ``fn(arr)`` copies ``res`` into a writable array of ``x``'s elements; it runs
    unless ``x`` is a shared view and ``res`` a fresh result (an owner, or the
    C-ordered view of one) that nobody else sees, when ``x`` takes
    ``res``'s buffer instead.
    """
    if _shared_view(x) and take_result(x, res):
        return
    write(x, op, fn)
