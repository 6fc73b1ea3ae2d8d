"""A fuzz over every namespace function and operator: every refusal is typed and changes nothing.

Hypothesis builds a small world of tensors (every dtype kind, 0-d, empty,
2-D, views: reversed, strided, zero-size reversed) and makes random calls:
a function of ``tenferro``'s array namespace (``tenferro.namespace.__all__``,
``tenferro.linalg``, ``tenferro.fft``), a Python operator on a tensor or a
view (binary, reflected, in-place, unary, ``[]`` and ``[] =``), or a numpy
ufunc called on one. Every parameter gets a value drawn from world objects,
numbers sized to be hostile (huge, negative, NaN), shapes and axes, nested
and ragged lists, strings and junk.

After every call that raises:

* the error is a `TenferroError` (which keeps the Python base class users
  catch: TypeError, ValueError, IndexError, MemoryError);
* nothing changed: every world tensor and view holds the same bytes, the copy
  counters are the same, and the default engine's pool counts no more live
  bytes and no higher live peak, measured while the error is still being
  handled (its traceback alive): a refusal comes before anything is computed,
  or gives back what it computed before the error leaves.

Untyped errors are collected (not raised at the first) so that a run reports
every function x exception class it found. Sizes: the CI run is
``EXAMPLES`` examples of ``CALLS_PER_EXAMPLE`` calls (derandomized, well under
a minute); ``TENFERRO_NS_FUZZ_SCALE=10`` runs ten times that, still
derandomized (the same calls every run: counts compare across commits), and
``HYPOTHESIS_PROFILE=thorough`` ten times that randomized (new calls every
run: a soak finds what the fixed sequence never draws):
``TENFERRO_NS_FUZZ_SCALE=10 pytest tests/reliability/test_namespace_fuzz.py -s``.
"""

from __future__ import annotations

import collections
import gc
import inspect
import operator
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tenferro as tfr
import tenferro.linalg
import tenferro.namespace

_THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
SCALE = int(os.environ.get("TENFERRO_NS_FUZZ_SCALE", "10" if _THOROUGH else "1"))
EXAMPLES = 60 * SCALE
CALLS_PER_EXAMPLE = 15

# Functions that hand out or take foreign objects by protocol, whose failures
# are the other library's (from_dlpack of a junk object is numpy's business).
SKIP = {"from_dlpack", "__array_namespace_info__"}


def _functions() -> list[tuple[str, Callable[..., Any]]]:
    out: list[tuple[str, Callable[..., Any]]] = []
    for module, prefix in (
        (tenferro.namespace, ""),
        (tenferro.linalg, "linalg."),
        (tfr.fft, "fft."),
    ):
        names = getattr(module, "__all__", None) or [
            n for n in dir(module) if not n.startswith("_")
        ]
        for name in names:
            fn = getattr(module, name, None)
            if name in SKIP or not callable(fn) or isinstance(fn, type):
                continue
            if getattr(fn, "__module__", "").startswith("tenferro"):
                out.append((prefix + name, fn))
    return sorted(out)


FUNCTIONS = _functions()

BINARY = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.matmul, operator.and_, operator.or_,
    operator.xor, operator.lshift, operator.rshift, operator.lt, operator.le,
    operator.eq, operator.ne, operator.gt, operator.ge,
]  # fmt: skip
INPLACE = [
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior,
    operator.ixor, operator.ilshift, operator.irshift,
]  # fmt: skip
UNARY = [operator.neg, operator.pos, operator.abs, operator.invert, bool, int, float, complex]
UFUNCS = [np.add, np.multiply, np.negative, np.sqrt, np.bitwise_and, np.matmul, np.maximum]

HUGE = [2**31, 2**40, 2**62, 2**63, -(2**63) - 1, 2**64, 10**30]
SMALL = st.integers(-3, 5)
STRINGS = ["", "ij,jk->ik", "ij,jk->ik,", "ii", "xy", "ij", "reflect", "float64", "int8", "bool"]
STRINGS += ["F", "x" * 60]


# ---------------------------------------------------------------------- the world
@dataclass
class World:
    tensors: list[Any] = field(default_factory=list)
    views: list[Any] = field(default_factory=list)
    keep: list[Any] = field(default_factory=list)

    @classmethod
    def make(cls) -> World:
        w = cls()
        f = tfr.asarray(np.arange(6.0).reshape(2, 3))
        w.tensors += [
            f,
            tfr.asarray(np.arange(6, dtype=np.int64).reshape(3, 2)),
            tfr.asarray(np.array([1, -2, 3], dtype=np.int32)),
            tfr.asarray(np.array([0.5, np.nan, np.inf], dtype=np.float32)),
            tfr.asarray(np.arange(4).reshape(2, 2) * (1 + 1j)),
            tfr.asarray(np.array([True, False, True])),
            tfr.asarray(np.array(7.0)),
            tfr.asarray(np.zeros((0, 3))),
            tfr.asarray(np.arange(9.0).reshape(3, 3)),
            tfr.asarray(np.array([3, 1, 2], dtype=np.uint8)),
        ]
        square = w.tensors[8]
        w.views += [
            f[::-1],
            square[1:],
            square[::2, ::-1],
            square[0:0, ::-1],  # zero-size reversed
            w.tensors[2][::-1],
        ]
        return w

    def objects(self) -> list[Any]:
        return [*self.tensors, *self.views]


def _junk() -> st.SearchStrategy[Any]:
    scalar = st.one_of(
        SMALL,
        st.sampled_from(HUGE),
        st.booleans(),
        st.floats(allow_nan=True, allow_infinity=True, width=64),
        st.sampled_from(
            [1.5, -1, 0, 1j, Fraction(1, 3), np.float64(2), np.int64(-1), np.bool_(True)]
        ),
    )
    shape = st.one_of(
        st.lists(st.one_of(SMALL, st.sampled_from(HUGE)), max_size=3).map(tuple),
        st.just((1,) * 65),
        st.just((0, 2**63)),
        st.sampled_from(HUGE),
    )
    return st.one_of(
        scalar,
        shape,
        st.none(),
        st.sampled_from(STRINGS),
        st.sampled_from(list(tfr.DType)),
        st.sampled_from([tfr.float64, tfr.int32, tfr.bool, np.float32, object, Ellipsis]),
        st.lists(scalar, max_size=3),
        st.just([[1, 2], [3]]),  # ragged
        st.just([[0, 1], [1, 0]]),
        st.just(slice(None, None, -1)),
        st.just((slice(1, None), None, Ellipsis)),
        st.just(np.array([0, 1])),
    )


def _value(data: st.DataObject, w: World, label: str) -> Any:
    if data.draw(st.integers(0, 9), label=f"{label}: source") < 5:
        return data.draw(st.sampled_from(w.objects()), label=label)
    return data.draw(_junk(), label=label)


def _arguments(data: st.DataObject, w: World, fn: Any) -> tuple[list[Any], dict[str, Any]]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [_value(data, w, "arg")], {}
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            n = data.draw(st.integers(0, 3), label=f"*{p.name}")
            args += [_value(data, w, p.name) for _ in range(n)]
            continue
        if p.kind is p.VAR_KEYWORD:
            continue
        if p.default is not p.empty and data.draw(st.booleans(), label=f"omit {p.name}"):
            continue
        value = _value(data, w, p.name)
        if p.kind is p.POSITIONAL_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and not kwargs):
            args.append(value)
        else:
            kwargs[p.name] = value
    return args, kwargs


def _bytes(obj: Any) -> Any:
    try:
        arr = np.asarray(obj)
        out = (arr.dtype.str, arr.shape, arr.tobytes())
        del arr
        return out
    except tfr.TenferroError as exc:
        return ("unreadable", exc.kind)


def _snapshot(w: World, full: bool = False) -> list[Any]:
    # A refused call's frames (and whatever they hold) may sit in a reference cycle
    # through its exception until the collector runs: they are garbage either way.
    # The automatic collector is off during the fuzz (see `_fuzz`). A refusal that
    # seems to have changed something is looked at again after a full collection:
    # one that counted aliases ran a young collection mid-call
    # (`HostBuffer._refuse_if_aliased`), which moved the call's own objects to the
    # oldest generation. A full collection can only lower the live bytes (older
    # garbage goes too), and only a rise is a change.
    gc.collect() if full else gc.collect(1)
    pool = tfr.default_engine()._pool
    pool.drain_lane()
    # Taken while the refusal is still being handled (inside the ``except``
    # block, its traceback alive), so nothing a refused call made may still be
    # counted because the error's frames hold it. Live bytes and their peak: a
    # refused call computes nothing it then drops (it refuses first) or gives it
    # back before the error leaves, and the pool's live peak, the footprint
    # budget, never moves for a refusal. Live bytes may fall: a collection may
    # free older garbage. What must never happen is a rise (`_changed`).
    state: list[Any] = [
        tfr.copy_stats(),
        ("pool live bytes", pool._out),
        ("pool live peak", pool._high),
    ]
    state += [_bytes(t) for t in w.objects()]
    return state


#: Indices of the state items where only a rise counts as a change.
_RISE_ONLY = (1, 2)


def _changed(before: list[Any], after: list[Any]) -> list[int]:
    """Indices of state items a refusal changed (pool counters: only a rise counts)."""
    out = []
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        if i in _RISE_ONLY:
            if a[1] > b[1]:
                out.append(i)
        elif a != b:
            out.append(i)
    return out


# ---------------------------------------------------------------------- the calls
CALL_TEXT = [""]


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) < 300 else text[:300] + "..."


def _call(data: st.DataObject, w: World) -> tuple[str, Callable[[], Any]]:
    kind = data.draw(st.sampled_from(["function"] * 6 + ["operator", "ufunc", "index"]))
    if kind == "function":
        name, fn = data.draw(st.sampled_from(FUNCTIONS), label="function")
        args, kwargs = _arguments(data, w, fn)
        CALL_TEXT[0] = f"{name}(*{_short(args)}, **{_short(kwargs)})"
        return name, lambda: fn(*args, **kwargs)
    target = data.draw(st.sampled_from(w.objects()), label="target")
    if kind == "operator":
        op = data.draw(st.sampled_from([*BINARY, *INPLACE, *UNARY]), label="operator")
        name = getattr(op, "__name__", repr(op))
        if op in UNARY:
            CALL_TEXT[0] = f"{name}({_short(target)})"
            return name, lambda: op(target)
        other = _value(data, w, "other")
        CALL_TEXT[0] = f"{name}({_short(target)}, {_short(other)})"
        if data.draw(st.booleans(), label="reflected") and op not in INPLACE:
            return f"r{name}", lambda: op(other, target)
        return name, lambda: op(target, other)
    if kind == "ufunc":
        uf = data.draw(st.sampled_from(UFUNCS), label="ufunc")
        args = [target] + [_value(data, w, "in") for _ in range(uf.nin - 1)]
        kwargs: dict[str, Any] = {}
        # (numpy itself refuses where= for a generalized ufunc, before tenferro is asked)
        if uf.signature is None and data.draw(st.booleans(), label="where"):
            kwargs["where"] = _value(data, w, "where")
        return f"np.{uf.__name__}", lambda: uf(*args, **kwargs)
    key = _value(data, w, "key")
    if data.draw(st.booleans(), label="setitem"):
        value = _value(data, w, "value")
        CALL_TEXT[0] = f"setitem({_short(target)}, {_short(key)}, {_short(value)})"
        return "__setitem__", lambda: operator.setitem(target, key, value)
    CALL_TEXT[0] = f"getitem({_short(target)}, {_short(key)})"
    return "__getitem__", lambda: operator.getitem(target, key)


@dataclass
class Findings:
    calls: int = 0
    refused: int = 0
    untyped: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)


FOUND = Findings()


def _one_call(data: st.DataObject, w: World) -> None:
    name, thunk = _call(data, w)
    before = _snapshot(w)
    FOUND.calls += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = thunk()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        FOUND.refused += 1
        typed = isinstance(exc, tfr.TenferroError)
        if not typed:
            key = (name, type(exc).__name__)
            FOUND.untyped[key] += 1
            FOUND.examples.setdefault(key, f"{str(exc)[:160]} <- {CALL_TEXT[0]}")
        del exc
        after = _snapshot(w)
        diff = _changed(before, after)
        if diff:  # (rare: a full collection costs far more than a young one)
            diff = _changed(before, _snapshot(w, full=True))
        if typed and diff:
            FOUND.changed.append(f"{CALL_TEXT[0]}: state items {diff} changed")
        return
    w.keep.append(result)
    if isinstance(result, tfr.Tensor) and len(w.tensors) < 16:
        w.tensors.append(result)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not _THOROUGH,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(st.data())
def _fuzz(data: st.DataObject) -> None:
    w = World.make()
    gc.disable()
    try:
        for _ in range(CALLS_PER_EXAMPLE):
            _one_call(data, w)
    finally:
        gc.enable()
    del w
    gc.collect()


def report(found: Findings) -> str:
    lines = [
        f"namespace fuzz: {found.calls} calls, {found.refused} refused, "
        f"{sum(found.untyped.values())} untyped in {len(found.untyped)} function x class, "
        f"{len(found.changed)} refusals that changed state"
    ]
    for (name, cls), n in sorted(found.untyped.items()):
        lines.append(f"  {n:5d}  {name}: {cls}: {found.examples[name, cls]}")
    lines += [f"  changed: {c}" for c in found.changed[:40]]
    return "\n".join(lines)


@pytest.mark.timeout(3000)
def test_every_namespace_refusal_is_typed_and_changes_nothing() -> None:
    global FOUND
    FOUND = Findings()
    _fuzz()
    text = report(FOUND)
    print(text)
    assert FOUND.calls >= EXAMPLES * CALLS_PER_EXAMPLE // 2
    assert not FOUND.untyped, text
    assert not FOUND.changed, text
