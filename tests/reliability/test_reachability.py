"""Everything reachable from everything tenferro hands out is read-only and
keeps its memory out of the pool for as long as it lives.

For every kind of handed-out object (borrowed arrays, guards, views, mutable
views after their block, group views, DLPack capsules and their consumers) the
walk follows what a user can reach without private attributes: ndarray
``.base`` chains, ``memoryview.obj`` (and the managed buffer under it), objects
lending memory through ``__array_interface__`` / ``__array_struct__`` /
``__array__``, public attributes, containers, and weak references to each
object. Every array reached must be read-only and impossible to thaw. Then, for
each reachable object in turn, only that object is kept (or only a weak
reference to it), everything else is dropped, the engine runs more operations
of the same size, and the object must still see the original values.
"""

from __future__ import annotations

import contextlib
import gc
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr

N = 6
ORIGINAL = (np.arange(N, dtype=np.float64) + 1.0) * 2.0
ENG = tfr.CpuEngine()
_SKIP = (
    int,
    float,
    complex,
    str,
    bytes,
    bool,
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
    tfr.DType,
    np.dtype,
    np.generic,
)


def _pooled_tensor() -> tfr.Tensor:
    """A tensor whose buffer came from ENG's pool (and goes back to it)."""
    x = tfr.from_numpy(np.arange(N, dtype=np.float64) + 1.0)
    return ENG.add(x, x)


def _kept_after_write(t: tfr.Tensor) -> Any:
    with t.map_write() as w:
        kept = (w.array, w[1:3], w)
    return kept


def _view_mut_after_block(t: tfr.Tensor) -> Any:
    with t.as_view_mut() as mv:
        kept = (mv.to_numpy(), mv)
    return kept


def _group_views(t: tfr.Tensor) -> Any:
    group, slots = tfr.AllocationGroup.from_tensors([t])
    return group.read_view(slots[0]), group.read_views()


class _Producer:
    """Lets numpy consume a capsule that was handed out earlier."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


#: name -> what is handed out, given a pooled tensor (the factory keeps nothing else).
HANDED_OUT: dict[str, Callable[[tfr.Tensor], Any]] = {
    "host_data": lambda t: t.host_data(),
    "host_data slice": lambda t: t.host_data()[1:4],
    "memoryview": lambda t: memoryview(t.host_data()),
    "to_numpy": lambda t: t.to_numpy(),
    "np.asarray": lambda t: np.asarray(t),
    "__array__ copy=False": lambda t: t.__array__(copy=False),
    "map_read guard": lambda t: t.map_read(),
    "map_read array": lambda t: t.map_read().array,
    "with_host_read arg": lambda t: t.with_host_read(lambda a: a),
    "view": lambda t: t.as_view(),
    "view to_numpy": lambda t: t.as_view().to_numpy(),
    "reversed view to_numpy": lambda t: t.as_view().slice_view(slice(None, None, -1)).to_numpy(),
    "view asarray": lambda t: np.asarray(t.as_view()),
    "map_write kept": _kept_after_write,
    "as_view_mut kept": _view_mut_after_block,
    "group views": _group_views,
    "dlpack capsule": lambda t: t.__dlpack__(max_version=(1, 0)),
    "view dlpack capsule": lambda t: t.as_view().__dlpack__(max_version=(1, 0)),
    "np.from_dlpack": lambda t: np.from_dlpack(t),
    "basic index view": lambda t: t[1:4],
    "T view": lambda t: t.T,
}

# Properties that derive a new view on every access (t.T.T.T...): following them
# would never end. The derived views are walked as their own kinds above.
_DERIVING = frozenset({"T", "mT"})


def _public(o: Any) -> list[Any]:
    out = []
    for name in dir(o):
        if name.startswith("_") or name in _DERIVING:
            continue
        try:
            value = getattr(o, name)
        except (tfr.TenferroError, AttributeError, TypeError, ValueError):
            continue  # e.g. a released guard's .array
        if not callable(value) or isinstance(value, np.ndarray):
            out.append(value)
    return out


def reachable(start: Any) -> list[Any]:
    """Every object a user reaches from ``start`` without private attributes."""
    seen: dict[int, Any] = {}
    stack = [start]
    while stack:
        o = stack.pop()
        if o is None or isinstance(o, _SKIP) or id(o) in seen:
            continue
        seen[id(o)] = o
        if isinstance(o, np.ndarray):
            stack.append(o.base)
            continue
        if isinstance(o, memoryview):
            stack.append(o.obj)
            stack.extend(gc.get_referents(o))  # the managed buffer
            continue
        if isinstance(o, weakref.ref):
            stack.append(o())
            continue
        if isinstance(o, (list, tuple)):
            stack.extend(o)
            continue
        if isinstance(o, dict):
            stack.extend(o.values())
            continue
        if type(o).__name__ in ("managedbuffer", "PyCapsule"):
            stack.extend(gc.get_referents(o))
            continue
        if any(hasattr(o, a) for a in ("__array_interface__", "__array_struct__", "__array__")):
            try:
                lent = np.asarray(o)
            except tfr.TenferroError:
                lent = None  # e.g. a guard whose borrow has ended
            if lent is not None and lent.dtype != object:
                stack.append(lent)
        stack.extend(_public(o))
        with contextlib.suppress(TypeError):  # not weakly referenceable
            stack.append(weakref.ref(o))
    return list(seen.values())


def _assert_read_only(o: Any, kind: str) -> None:
    if isinstance(o, np.ndarray):
        assert not o.flags.writeable, f"{kind}: a writable array is reachable"
        with pytest.raises(ValueError):
            o.flags.writeable = True
    elif isinstance(o, memoryview):
        assert o.readonly, f"{kind}: a writable memoryview is reachable"


def _values(o: Any) -> np.ndarray | None:
    """What ``o`` sees of the tensor's memory now (None: it lends no memory)."""
    if isinstance(o, weakref.ref):
        target = o()
        return None if target is None else _values(target)
    if isinstance(o, (np.ndarray, memoryview)):
        arr = np.asarray(o)
        return None if arr.dtype == object else arr.copy()
    return None


@pytest.mark.parametrize("kind", list(HANDED_OUT))
def test_nothing_reachable_from_a_handed_out_object_is_writable(kind: str) -> None:
    handed = HANDED_OUT[kind](_pooled_tensor())
    reached = reachable(handed)
    assert len(reached) >= 1
    for o in reached:
        _assert_read_only(o, kind)


@pytest.mark.parametrize("kind", list(HANDED_OUT))
def test_anything_reachable_keeps_its_memory_out_of_the_pool_while_it_lives(kind: str) -> None:
    count = len(reachable(HANDED_OUT[kind](_pooled_tensor())))
    for i in range(count):
        # Rebuilt each round: keep only the i-th reachable object, drop the rest.
        reached = reachable(HANDED_OUT[kind](_pooled_tensor()))
        if i >= len(reached):
            break
        kept = reached[i]
        before = _values(kept)
        capsule = type(kept).__name__ == "PyCapsule"
        del reached
        gc.collect()
        x = tfr.from_numpy(np.full(N, -3.0))
        outputs = [ENG.mul(x, float(k)) for k in range(1, 6)]
        if capsule and kind != "np.from_dlpack":
            # An unconsumed capsule (a consumed one, under np.from_dlpack's array,
            # shows no memory any more: that array is checked on its own).
            seen = np.from_dlpack(_Producer(kept))
            assert np.array_equal(np.sort(seen.reshape(-1)), ORIGINAL), kind
        elif before is not None:
            assert np.array_equal(_values(kept), before), f"{kind}: reachable memory reused"
        del outputs, kept
