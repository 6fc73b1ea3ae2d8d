"""A fuzz pass over the public API: every failure is typed and changes nothing.

Hypothesis builds a small world (tensors of every dtype and some shapes,
engine outputs, views, group-backed tensors) and then makes random calls on
it: a target (the engine, a tensor, a view, a group, a constructor or
namespace function), one of its public methods, and for every parameter of
its signature a value drawn from a mix of world objects and hostile values
(huge ints, NaN, None, Fractions, junk strings, numpy arrays, wrong types).
Deep and odd `evaluate` expressions come from a small grammar.

After every call that raises:

* the error is a `TenferroError` (nothing else may escape; KeyboardInterrupt
  is never caught), or the exception of the fuzz's own callback, passed on
  unchanged;
* nothing is half-changed: every world tensor has the same shape, dtype,
  bytes and moved state, every view the same descriptor and bytes, the copy
  counters are unchanged, and every buffer the call took from the engine's
  pool went back (none leaked or vanished).

The CI run is bounded (``max_examples``, derandomized); a long local run:
``TENFERRO_FUZZ_EXAMPLES=20000 pytest tests/reliability/test_fuzz.py -s``
(it prints the number of calls made).
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tenferro as tfr

EXAMPLES = int(os.environ.get("TENFERRO_FUZZ_EXAMPLES", "8"))
CALLS_PER_EXAMPLE = 12

# Methods that are plumbing (raw arrays in, no validation promised), that leave
# the process (shared memory segments are another suite's business), or whose
# Python protocol mandates a built-in exception (len() of a rank-0 tensor is a
# TypeError, as for numpy).
SKIP = {
    "fresh",
    "give_back",
    "output",
    "run",
    "run_staged",
    "wrap",
    "pool",
    "share_handle",
    "__len__",
}
DUNDERS = (
    "__add__",
    "__sub__",
    "__mul__",
    "__truediv__",
    "__pow__",
    "__matmul__",
    "__radd__",
    "__rsub__",
    "__rmul__",
    "__rtruediv__",
    "__rpow__",
    "__rmatmul__",
    "__neg__",
    "__abs__",
    "__bool__",
    "__array__",
    "__dlpack__",
    "__dlpack_device__",
    "__reduce__",
    "__copy__",
    "__deepcopy__",
    "__repr__",
)
NAMESPACE = (
    tfr.from_numpy,
    tfr.from_dlpack,
    tfr.Tensor.from_vec_col_major,
    tfr.Tensor.from_vec_row_major,
    tfr.AllocationGroup.from_tensors,
    tfr.CpuEngine,
)

HUGE = [2**62, 2**63, -(2**63) - 1, 2**64, 2**70, -(2**70), 10**400]
SMALL = st.integers(-4, 8)
STRINGS = [
    "",
    "F64",
    "float32",
    "int64",
    "I32",
    "bool",
    "C32",
    "complex128",
    "uint8",
    "09",
    "(o,K",
    "f8,",
    "[",
    "a",
    "a + b",
    "exp(a) * b",
    "where(a > b, a, b)",
    "a // b",
    "a ** 2 ** 70",
    "tiled",
    "numexpr",
    "ij,jk->ik",
    "ii->i",
    "i,i",
    "x" * 300,
    "\x00",
]
NAMES = ["a", "b", "expr", "self", "t"]


def _expressions() -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.sampled_from(NAMES),
        st.sampled_from(["1", "2.5", "-3", "1j", "True", "2 ** 70", "1e308", "0"]),
    )

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(
                inner, st.sampled_from(["+", "-", "*", "/", "**", "<", "==", ">="]), inner
            ).map(lambda p: f"({p[0]} {p[1]} {p[2]})"),
            st.tuples(
                st.sampled_from(["exp", "log", "sqrt", "abs", "sin", "maximum", "where", "foo"]),
                st.lists(inner, min_size=1, max_size=3),
            ).map(lambda p: f"{p[0]}({', '.join(p[1])})"),
            inner.map(lambda s: f"-{s}"),
        )

    deep = st.sampled_from(["-" * 3000 + "a", "+".join(["a"] * 3000), "(" * 200 + "a" + ")" * 200])
    return st.one_of(st.recursive(leaf, grow, max_leaves=8), deep, st.sampled_from(STRINGS))


def _arrays() -> st.SearchStrategy[np.ndarray]:
    def make(kind: str) -> np.ndarray:
        if kind == "f64":
            return np.arange(6.0)
        if kind == "f64-2d-F":
            return np.asfortranarray(np.arange(6.0).reshape(2, 3))
        if kind == "f64-2d-C":
            return np.arange(6.0).reshape(2, 3)
        if kind == "i64":
            return np.arange(6, dtype=np.int64)
        if kind == "u8":
            return np.arange(6, dtype=np.uint8)
        if kind == "ro":
            a = np.arange(3.0)
            a.flags.writeable = False
            return a
        if kind == "strided":
            return np.arange(12.0)[::2]
        if kind == "empty":
            return np.zeros(0)
        if kind == "nan":
            return np.array([np.nan, np.inf, -np.inf])
        return np.array(["x", "y"])

    kinds = ["f64", "f64-2d-F", "f64-2d-C", "i64", "u8", "ro", "strided", "empty", "nan", "str"]
    return st.sampled_from(kinds).map(make)


def _slices() -> st.SearchStrategy[slice]:
    bound = st.one_of(st.none(), SMALL, st.sampled_from(HUGE), st.just(1.5))
    return st.builds(slice, bound, bound, bound)


def _junk() -> st.SearchStrategy[Any]:
    scalar = st.one_of(
        SMALL,
        st.sampled_from(HUGE),
        st.booleans(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.complex_numbers(allow_nan=True, allow_infinity=True),
        st.sampled_from(
            [
                Fraction(1, 3),
                Fraction(10**39, 2),
                Decimal("1.5"),
                np.float32(1.5),
                np.int8(3),
                np.int64(2**62),
                np.bool_(True),
                np.complex64(1j),
            ]
        ),
    )
    simple = st.one_of(
        scalar,
        st.none(),
        st.sampled_from(STRINGS),
        st.sampled_from(list(tfr.DType)),
        st.sampled_from([np.float64, np.dtype("int32"), np.uint16, object, b"ab", Ellipsis]),
        st.just(object()),
        _arrays(),
        _slices(),
    )
    return st.one_of(
        simple,
        st.lists(scalar, max_size=4),
        st.tuples(SMALL, SMALL),
        st.lists(st.one_of(SMALL, st.sampled_from(HUGE), _slices()), max_size=4).map(tuple),
        st.lists(SMALL, max_size=3),
    )


# ---------------------------------------------------------------------- the world
@dataclass
class World:
    eng: tfr.CpuEngine
    tensors: list[tfr.Tensor] = field(default_factory=list)
    views: list[Any] = field(default_factory=list)
    others: list[Any] = field(default_factory=list)
    keep: list[Any] = field(default_factory=list)

    @classmethod
    def make(cls) -> World:
        eng = tfr.CpuEngine()
        w = cls(eng)
        f64 = tfr.Tensor.from_vec_col_major((2, 3), np.arange(6.0))
        w.tensors += [
            f64,
            tfr.Tensor.from_vec_col_major((3, 2), np.arange(6.0) - 2.5),
            tfr.Tensor.from_vec_col_major((2, 3), np.arange(6, dtype=np.int64)),
            tfr.Tensor.from_vec_col_major((3,), np.arange(3, dtype=np.int32)),
            tfr.Tensor.from_vec_col_major((3,), np.array([0.5, np.nan, np.inf], np.float32)),
            tfr.Tensor.from_vec_col_major((2, 2), np.arange(4) * (1 + 1j)),
            tfr.Tensor.from_vec_col_major((4,), np.array([True, False, True, True])),
            tfr.Tensor.from_vec_col_major((), np.array([7.0])),
            tfr.Tensor.from_vec_col_major((0, 3), np.zeros(0)),
            tfr.Tensor.from_vec_col_major((3, 3), np.arange(9.0)),
            eng.add(f64, 1.0),
        ]
        group, slots = tfr.AllocationGroup.from_tensors(
            [tfr.Tensor.from_vec_col_major((2, 3), np.arange(6.0) * 2)]
        )
        w.others += [group, slots[0]]
        w.tensors.append(group.take_tensor(slots[0]))
        base = w.tensors[9]
        w.views += [
            f64.as_view(),
            base.as_view().transpose_view((1, 0)),
            base.as_view().slice_view((slice(None, None, 2), 1)),
        ]
        return w

    def objects(self) -> list[Any]:
        return [self.eng, *self.tensors, *self.views, *self.others]


def _bytes(obj: Any) -> Any:
    try:
        arr = obj.host_data() if isinstance(obj, tfr.Tensor) else obj.to_numpy()
        out = (arr.dtype.str, arr.shape, arr.tobytes())
        del arr
        return out
    except tfr.TenferroError as exc:
        return ("unreadable", exc.kind)


def _outstanding(eng: tfr.CpuEngine) -> int:
    s = eng.buffer_pool_cache_stats()
    # Buffers handed out and not yet given back (zero-size requests never count).
    return s.hits + s.misses - s.recycled - s.refused_aliased


def _snapshot(w: World) -> list[Any]:
    state: list[Any] = [tfr.copy_stats(), _outstanding(w.eng)]
    for t in w.tensors:
        moved = t.is_moved
        state.append((True,) if moved else (False, t.shape, t.dtype, _bytes(t)))
    for v in w.views:
        state.append((v.shape, v.strides, v.offset, v.dtype, _bytes(v)))
    return state


# ---------------------------------------------------------------------- the calls
def _own_dunder(target: Any, name: str) -> bool:
    """Is ``name`` a protocol method tenferro defines (not object's default)?"""
    cls = target if isinstance(target, type) else type(target)
    return name in DUNDERS and any(name in k.__dict__ for k in cls.__mro__ if k is not object)


def _methods(target: Any) -> list[str]:
    # Looked up on the class: a property of a moved tensor raises when read.
    cls = type(target)
    names = [
        n for n in dir(cls) if (not n.startswith("_") or _own_dunder(cls, n)) and n not in SKIP
    ]
    return sorted(
        n
        for n in names
        if callable(inspect.getattr_static(cls, n))
        or isinstance(inspect.getattr_static(cls, n), (classmethod, staticmethod))
    )


class CallbackRaised(Exception):
    """Raised by the fuzz's own callbacks: a user's exception, which must propagate."""


def _raising_callback(a: Any) -> Any:
    raise CallbackRaised(type(a).__name__)


#: Parameters that take a user callback (``Tensor.with_host_read(fn)``). Only the
#: fuzz's own callables are drawn there: calling a junk callable such as ``object``
#: raises that callable's own TypeError, which tenferro must pass on unchanged, so
#: it says nothing about tenferro.
CALLBACK_PARAMS = {"fn"}
CALLBACKS = [_raising_callback, len, repr, np.sum]


def _value(data: st.DataObject, w: World, name: str) -> Any:
    if name in CALLBACK_PARAMS:
        return data.draw(
            st.one_of(st.sampled_from(CALLBACKS), _junk().filter(lambda v: not callable(v))),
            label=name,
        )
    pick = data.draw(st.integers(0, 9), label=f"{name}: source")
    if pick < 4:
        return data.draw(st.sampled_from(w.objects()), label=name)
    if name in ("expr", "subscripts") or (pick == 4 and name.startswith("e")):
        return data.draw(_expressions(), label=name)
    return data.draw(_junk(), label=name)


def _arguments(data: st.DataObject, w: World, fn: Any) -> tuple[list[Any], dict[str, Any]]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], {}
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    taken = set(sig.parameters)
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            args += [_value(data, w, p.name) for _ in range(data.draw(st.integers(0, 3)))]
            continue
        if p.kind is p.VAR_KEYWORD:
            names = data.draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
            kwargs.update({n: _value(data, w, n) for n in names if n not in taken})
            continue
        optional = p.default is not p.empty
        if optional and data.draw(st.booleans(), label=f"omit {p.name}"):
            continue
        value = _value(data, w, p.name)
        if p.kind is p.POSITIONAL_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and not kwargs):
            if optional and len(args) < list(sig.parameters).index(p.name):
                kwargs[p.name] = value  # an earlier optional was omitted
            else:
                args.append(value)
        else:
            kwargs[p.name] = value
    return args, kwargs


CALLS = {"made": 0, "refused": 0}


def _one_call(data: st.DataObject, w: World) -> None:
    targets: list[Any] = [*w.objects(), *NAMESPACE]
    target = data.draw(st.sampled_from(targets), label="target")
    if target in NAMESPACE:
        fn, label = target, getattr(target, "__qualname__", repr(target))
    else:
        methods = _methods(target)
        if not methods:
            return
        name = data.draw(st.sampled_from(methods), label="method")
        fn, label = getattr(target, name), f"{type(target).__name__}.{name}"
    args, kwargs = _arguments(data, w, fn)
    before = _snapshot(w)
    CALLS["made"] += 1
    try:
        result = fn(*args, **kwargs)
    except (tfr.TenferroError, CallbackRaised) as exc:
        # A refusal, or the fuzz's own callback raising through tenferro unchanged:
        # either way nothing may have changed.
        CALLS["refused"] += 1
        del exc
        after = _snapshot(w)
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            assert a == b, f"{label} refused but changed state item {i}: {b!r} -> {a!r}"
        return
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        pytest.fail(f"{label}(*{args!r}, **{kwargs!r}) raised {type(exc).__name__}: {exc}")
    # Keep results (outputs, views, guards) alive and in play for later calls.
    w.keep.append(result)
    if isinstance(result, tfr.Tensor) and len(w.tensors) < 24:
        w.tensors.append(result)
    elif isinstance(result, (tfr.TensorView, tfr.TensorViewMut)) and len(w.views) < 12:
        w.views.append(result)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 200,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(st.data())
def _fuzz(data: st.DataObject) -> None:
    w = World.make()
    for _ in range(CALLS_PER_EXAMPLE):
        _one_call(data, w)


@pytest.mark.timeout(3000)
def test_random_public_api_calls_fail_typed_and_change_nothing() -> None:
    CALLS.update(made=0, refused=0)
    _fuzz()
    print(f"fuzz: {CALLS['made']} calls, {CALLS['refused']} refused with a TenferroError")
    assert CALLS["made"] >= EXAMPLES
