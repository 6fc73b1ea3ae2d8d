"""The compiled per-call core (issue 20): the pool's lane, the pin count, the fields.

`storage._fields.ReturnLane` holds the pool's return lane and both lane steps in C;
the compiled core pins with a per-buffer count (``BufferFields.core_pins``) instead
of entries in `storage.host.reading`; the namespace's elementwise functions are
Cython functions that are also the operators. Each test here attacks one of them:
aliases that outlive a dropped output, other threads, a pool dropped while its
outputs live, a Python override of a compiled step, a failing kernel.
"""

from __future__ import annotations

import gc
import inspect
import threading
import weakref
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine import BufferPool
from tenferro.engine import _core as core
from tenferro.storage import host
from tenferro.storage._fields import ReturnLane
from tenferro.tensor import Tensor

F64 = np.dtype(np.float64)
MIB = 2**20
WAIT_S = 30.0


def owner(eng: tfr.CpuEngine, n: int = 16) -> Tensor:
    """A pooled F64 tensor of ``n`` elements from ``eng``."""
    x = tfr.from_numpy(np.arange(float(n)))
    with eng:
        return x + x


# -- the lane never hands out memory that an alias can still see --------------------------
def test_a_dropped_output_with_a_live_alias_is_never_handed_out_again(
    eng: tfr.CpuEngine,
) -> None:
    t = owner(eng)
    alias = t.host_data()
    address = alias.ctypes.data
    del t  # refused: the alias is alive
    with eng:
        fresh = [owner(eng) for _ in range(20)]
    assert address not in {f._st.flat.ctypes.data for f in fresh}
    np.testing.assert_array_equal(alias, 2 * np.arange(16.0))
    assert eng.buffer_pool_cache_stats().refused_aliased == 1


def test_a_dropped_output_without_alias_comes_back_through_the_lane(
    eng: tfr.CpuEngine,
) -> None:
    t = owner(eng)
    address = t._st.flat.ctypes.data
    del t
    assert len(eng._pool._lane) == 1
    again = owner(eng)
    assert again._st.flat.ctypes.data == address


def test_an_alias_taken_from_a_lane_buffer_blocks_it_after_reuse(eng: tfr.CpuEngine) -> None:
    first = owner(eng)
    del first  # into the lane
    second = owner(eng)  # the lane's buffer again
    alias = np.asarray(second)
    del second
    third = owner(eng)
    assert third._st.flat.ctypes.data != alias.ctypes.data


def test_lane_hits_are_counted_once_each(eng: tfr.CpuEngine) -> None:
    for _ in range(50):
        owner(eng)
    stats = eng.buffer_pool_cache_stats()
    # One pooled output per call (the inputs are adopted): each a hit or a miss, and
    # after the first every one is the lane's.
    assert stats.hits + stats.misses == 50
    assert stats.misses == 1


# -- a pool dropped while its outputs live ---------------------------------------------------
def test_an_output_outliving_its_engine_is_freed_without_error() -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=100 * MIB)
    t = owner(eng)
    pool_ref = weakref.ref(eng._pool)
    del eng
    gc.collect()
    assert pool_ref() is None
    np.testing.assert_array_equal(t.to_numpy(), 2 * np.arange(16.0))
    del t  # the recycler is dead: the finalizer simply lets the memory go


# -- Python overrides of the compiled steps are still called ---------------------------------
class _CountingPool(BufferPool):
    __slots__ = ("calls",)

    def __init__(self) -> None:
        super().__init__(MIB)
        self.calls: list[tuple[int, int]] = []

    def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None:
        self.calls.append((len(owner), aliases))
        super().recycle(owner, aliases)


def test_the_finalizer_calls_a_subclass_override_of_recycle() -> None:
    pool = _CountingPool()
    buf = pool.acquire(F64, 4)
    st = host.HostBuffer(buf, buf, weakref.ref(pool))
    t = Tensor._wrap((4,), tfr.DType.F64, st)
    del st, buf
    del t
    assert pool.calls == [(4, 0)]
    assert len(pool._lane) == 1


def test_a_recycler_that_is_not_a_pool_is_called_through_its_method() -> None:
    calls: list[int] = []

    class Plain:
        def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None:
            calls.append(aliases)

    plain = Plain()
    buf = np.empty(4)
    t = Tensor._wrap((4,), tfr.DType.F64, host.HostBuffer(buf, buf, weakref.ref(plain)))
    del buf, t
    assert calls == [0]
    assert not isinstance(plain, ReturnLane)


def test_the_lane_refuses_a_buffer_with_aliases_and_counts_it() -> None:
    pool = BufferPool(MIB)
    pool.recycle(np.empty(4), 2)
    assert len(pool._lane) == 0
    assert pool.cache_stats().refused_aliased == 1


def test_the_lane_gives_back_only_an_exact_dtype_and_size() -> None:
    pool = BufferPool(MIB)
    pool.recycle(np.empty(4, dtype=np.float32), 0)
    got = pool.acquire(F64, 4)
    assert got.dtype == F64
    assert pool.acquire(np.dtype(np.float32), 0).shape == (0,)  # zero-size: never the pool
    assert pool.stats().buffers == 1  # the f32 buffer moved to the shelves


# -- the compiled pin count ---------------------------------------------------------------
class _Gate:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def kernel(self, a: Any, b: Any, out: Any) -> None:
        self.started.set()
        assert self.release.wait(WAIT_S)
        np.add(a, b, out)


def test_a_compiled_read_in_flight_counts_as_a_reader_and_refuses_a_writer(
    eng: tfr.CpuEngine,
) -> None:
    a = tfr.from_numpy(np.arange(4.0))
    gate = _Gate()
    out: list[Any] = []
    thread = threading.Thread(
        target=lambda: out.append(core.binary(gate.kernel, a, a, a.dtype, eng))
    )
    thread.start()
    try:
        assert gate.started.wait(WAIT_S)
        assert a._st.readers() == 2  # the same buffer read twice: two pins
        assert not host.reading  # the compiled core's pins are counts, not entries
        with pytest.raises(tfr.BorrowError) as err:
            a.map_write()
        assert err.value.kind == "IN_USE"
    finally:
        gate.release.set()
        thread.join(WAIT_S)
    assert a._st.core_pins == 0 and a._st.readers() == 0
    np.testing.assert_array_equal(out[0].to_numpy(), 2 * np.arange(4.0))
    with a.map_write():
        pass


def test_a_failing_kernel_unpins_and_marks_its_operands(eng: tfr.CpuEngine) -> None:
    a = tfr.from_numpy(np.arange(4.0))

    def failing(*_: Any) -> None:
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError):
        core.unary(failing, a, a.dtype, eng)
    assert a._st.core_pins == 0
    assert a._st.failed_read


def test_pins_stay_exact_under_threads(eng: tfr.CpuEngine) -> None:
    a = tfr.from_numpy(np.arange(16.0))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with eng:
                for _ in range(300):
                    a + a
                    tfr.exp(a)
                    a * 2.0
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(WAIT_S)
    assert errors == []
    assert a._st.core_pins == 0
    stats = eng.buffer_pool_cache_stats()
    assert stats.hits + stats.misses == 4 * 300 * 3


def test_live_outputs_of_many_threads_never_share_a_buffer(eng: tfr.CpuEngine) -> None:
    a = tfr.from_numpy(np.arange(16.0))
    kept: list[list[Tensor]] = [[] for _ in range(4)]

    def work(i: int) -> None:
        with eng:
            for k in range(200):
                r = a + a
                if k % 3 == 0:
                    kept[i].append(r)  # kept alive; the others go back to the lane

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(WAIT_S)
    live = [t._st.owner.ctypes.data for ts in kept for t in ts]
    assert len(live) == len(set(live))


# -- the compiled namespace functions -------------------------------------------------------
def test_compiled_namespace_functions_keep_their_name_doc_and_signature() -> None:
    for fn, params in ((tfr.add, ["x1", "x2"]), (tfr.exp, ["x"])):
        sig = inspect.signature(fn)
        assert list(sig.parameters) == params
        assert all(p.kind is p.POSITIONAL_ONLY for p in sig.parameters.values())
        assert fn.__name__ in fn.__qualname__
        assert "Ownership" in (fn.__doc__ or "")
        assert fn.__module__.startswith("tenferro.")


def test_the_operator_is_the_namespace_function(eng: tfr.CpuEngine) -> None:
    a = tfr.from_numpy(np.arange(4.0))
    assert Tensor.__add__ is tfr.add
    with eng:
        np.testing.assert_array_equal((a + a).to_numpy(), tfr.add(a, a).to_numpy())
        np.testing.assert_array_equal(a.__add__(a).to_numpy(), 2 * np.arange(4.0))


def test_a_refused_operand_gets_the_typed_error_through_the_compiled_function() -> None:
    a = tfr.from_numpy(np.arange(4.0))
    with pytest.raises(tfr.TenferroError):
        tfr.add(a, "x")
    with a.map_write(), pytest.raises(tfr.BorrowError):
        a + a


# -- the compiled current() and its cache -------------------------------------------------
def test_current_follows_with_blocks_in_and_out() -> None:
    outer, inner = tfr.CpuEngine(), tfr.CpuEngine()
    default = core.current()
    with outer:
        assert core.current() is outer
        with inner:
            assert core.current() is inner
        assert core.current() is outer
    assert core.current() is default


def test_each_new_thread_gets_its_own_default_engine_despite_the_cache() -> None:
    here = core.current()
    seen: list[Any] = []
    for _ in range(3):
        th = threading.Thread(target=lambda: seen.append(core.current()))
        th.start()
        th.join(WAIT_S)
    assert len(seen) == 3
    assert all(e is not here for e in seen)


def test_another_threads_with_block_is_not_seen_here() -> None:
    here = core.current()
    other = tfr.CpuEngine()
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with other:
            entered.set()
            assert leave.wait(WAIT_S)

    th = threading.Thread(target=hold)
    th.start()
    try:
        assert entered.wait(WAIT_S)
        assert core.current() is here
    finally:
        leave.set()
        th.join(WAIT_S)


def test_the_cache_of_current_never_keeps_an_engine_alive() -> None:
    eng = tfr.CpuEngine()
    with eng:
        assert core.current() is eng
    ref = weakref.ref(eng)
    del eng
    gc.collect()
    assert ref() is None
    assert core.current() is not None


# -- fields read at their slot offsets: only for objects of exactly that type ---------------
class _Liar:
    """Claims to be a `Tensor` (or a view) through ``__class__``, as a proxy does."""

    def __init__(self, cls: type) -> None:
        self._cls = cls

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        return self._cls


@pytest.mark.parametrize("cls", [Tensor, tfr.TensorView])
def test_an_object_claiming_a_tensor_class_is_never_read_as_one(cls: type) -> None:
    a = tfr.from_numpy(np.arange(4.0))
    liar = _Liar(cls)
    for call in (
        lambda: tfr.add(liar, a),
        lambda: tfr.add(a, liar),
        lambda: tfr.multiply(liar, 2.0),
        lambda: tfr.multiply(2.0, liar),
        lambda: tfr.exp(liar),
        lambda: tfr.sum(liar),
    ):
        with pytest.raises((tfr.TenferroError, TypeError, AttributeError)):
            call()
    assert core.c_source(liar) is None


def test_a_weak_proxy_of_a_tensor_still_computes() -> None:
    a = tfr.from_numpy(np.arange(4.0))
    p = weakref.proxy(a)
    np.testing.assert_array_equal(tfr.add(p, a).to_numpy(), 2 * np.arange(4.0))
    np.testing.assert_array_equal(tfr.exp(p).to_numpy(), np.exp(np.arange(4.0)))
    np.testing.assert_array_equal((p * 2.0).to_numpy(), 2 * np.arange(4.0))


def test_a_weak_reference_subclass_recycler_is_called_as_such() -> None:
    # The finalizer reads an exact weakref.ref in C; a subclass keeps its own call.
    pool = BufferPool(MIB)
    calls: list[int] = []

    class Counting(weakref.ref):  # type: ignore[type-arg]
        def __call__(self) -> Any:
            calls.append(1)
            return super().__call__()

    buf = pool.acquire(F64, 4)
    t = Tensor._wrap((4,), tfr.DType.F64, host.HostBuffer(buf, buf, Counting(pool)))
    del buf, t
    assert calls == [1]
    assert len(pool._lane) == 1


# -- the shelves' compiled steps (issue 20: a miss of the lane) ---------------------------
def _shelves_consistent(pool: BufferPool) -> None:
    """The shelf invariant and the retained-bytes counter, checked from outside."""
    held = 0
    for stacks, caps, itemsize in pool._shelves.values():
        assert caps == sorted(set(caps)) and set(caps) == set(stacks)
        held += sum(len(b) * itemsize for stack in stacks.values() for b in stack)
    assert pool._bytes == held


class _AcquireSpy(BufferPool):
    __slots__ = ("asked",)

    def __init__(self) -> None:
        super().__init__(MIB)
        self.asked: list[int] = []

    def acquire(self, dtype: np.dtype[Any], n: int, kept: bool = False) -> np.ndarray[Any, Any]:
        self.asked.append(n)
        return super().acquire(dtype, n, kept)


def test_a_subclass_override_of_acquire_is_what_a_request_runs() -> None:
    pool = _AcquireSpy()
    pool.recycle(np.empty(1000), 0)  # above the lane's 4 KiB: straight to its shelf
    got = pool.acquire(F64, 1000)
    assert pool.asked == [1000]
    assert len(got) == 1000 and pool.cache_stats().hits == 1


def test_a_buffer_too_large_for_the_lane_is_shelved_and_handed_out_again() -> None:
    pool = BufferPool(MIB)  # the lane takes at most 4 KiB
    big = pool.acquire(F64, 1000)
    address = big.ctypes.data
    pool.recycle(big, 0)
    assert len(pool._lane) == 0 and pool._bytes == 8000
    again = pool.acquire(F64, 1000)
    assert again.ctypes.data == address
    stats = pool.cache_stats()
    assert (stats.hits, stats.misses, stats.recycled) == (1, 1, 1)


def test_a_lane_miss_drains_the_lane_and_takes_the_exact_shelf_size() -> None:
    pool = BufferPool(MIB)
    a, b = pool.acquire(F64, 100), pool.acquire(F64, 200)
    pool.recycle(a, 0)
    pool.recycle(b, 0)  # the lane's newest is 200: a request of 100 misses it
    got = pool.acquire(F64, 100)
    assert got.ctypes.data == a.ctypes.data and len(got) == 100
    assert len(pool._lane) == 0
    _shelves_consistent(pool)


def test_finalizers_run_by_a_collection_inside_a_shelf_step_lose_no_buffer() -> None:
    # A collection after every allocation: the shelves' steps allocate (a new stack),
    # and the finalizers of collected outputs give buffers back on this very thread,
    # re-entering the pool under its own lock.
    eng = tfr.CpuEngine(buffer_limit_bytes=MIB)
    x = tfr.from_numpy(np.arange(700.0))  # 5600 bytes: above the lane's 4 KiB
    threshold = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1, 1, 1)
    try:
        for i in range(200):
            with eng:
                t = x[: 600 + i % 50] * 2.0
            cycle: list[Any] = [t]
            cycle.append(cycle)  # only a collection frees it
            del t, cycle
    finally:
        gc.set_threshold(*threshold)
    gc.collect()
    pool = eng._pool
    pool.drain_lane()
    _shelves_consistent(pool)
    stats = pool.cache_stats()
    assert stats.hits + stats.misses == 200
    assert stats.refused_aliased == 0


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["get", "put", "alias", "drain"]), st.integers(1, 1200)),
        max_size=60,
    ),
    kept=st.booleans(),
)
def test_the_compiled_shelf_steps_keep_the_pool_consistent(
    steps: list[tuple[str, int]], kept: bool
) -> None:
    pool = BufferPool(MIB)  # sizes on both sides of the lane's 4 KiB
    out: list[np.ndarray[Any, Any]] = []
    gets = refused = 0
    for op, n in steps:
        if op == "get":
            buf = pool.acquire(F64, n, kept)
            assert n <= len(buf) <= 2 * n - (1 if kept else 0) or len(buf) == n
            assert buf.ctypes.data not in {b.ctypes.data for b in out}
            out.append(buf)
            gets += 1
        elif op == "drain":
            pool.drain_lane()
        elif out:
            refused += op == "alias"
            pool.recycle(out.pop(n % len(out)), 1 if op == "alias" else 0)
        _shelves_consistent(pool)
    stats = pool.cache_stats()
    assert stats.hits + stats.misses == gets
    assert stats.refused_aliased == refused
    assert pool._out >= 0  # live bytes never go negative (a release counts once)
