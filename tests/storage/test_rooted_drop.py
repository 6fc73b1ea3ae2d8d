"""Dropping a buffer that has a read root: the finalizer's C count (issue 20).

`BufferFields.__del__` recycles, in C, a buffer whose read root only the buffer
holds and no weak reference can revive; everything else (a live alias, a weak
reference to the root, a stale write root, a failed read) is `HostBuffer._release`.
Each test here would fail if the C count recycled memory an alias can still see:
an off-by-one baseline, a missed weak reference, an alias on another thread.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.storage import _fields, host
from tenferro.storage.host import HostBuffer
from tenferro.tensor import Tensor

WAIT_S = 30.0


class _Pool:
    # A recycler without a return lane: records every release's alias count.
    _lane_bytes = -1

    def __init__(self) -> None:
        self.calls: list[int] = []

    def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None:
        self.calls.append(aliases)


def _rooted(pool: _Pool, n: int = 8) -> Tensor:
    """A pooled tensor whose buffer has a read root (its first alias made and dropped)."""
    owner = np.arange(float(n))
    buf = HostBuffer(owner, owner, weakref.ref(pool))  # type: ignore[arg-type]
    t = Tensor._wrap((n,), tfr.DType.F64, buf)
    t.host_data()  # builds the root; the alias dies at once
    assert t._st._root is not None
    return t


def test_the_c_count_of_a_root_only_its_buffer_holds_is_the_calibrated_one() -> None:
    t = _rooted(_Pool())
    assert _fields.root_refs(t._st) == _fields.root_alone_refs()


def test_each_live_alias_adds_one_to_the_c_count() -> None:
    t = _rooted(_Pool())
    aliases = [t.host_data(), t.host_data()[1:3]]
    assert _fields.root_refs(t._st) == _fields.root_alone_refs() + 2
    del aliases


def test_the_c_weak_reference_test_sees_a_weak_reference_to_an_ndarray() -> None:
    arr = np.empty(2)
    assert _fields.has_weakrefs(arr) == 0
    ref = weakref.ref(arr)
    assert _fields.has_weakrefs(arr) == 1
    del ref
    assert _fields.has_weakrefs(arr) == 0


def test_a_dropped_rooted_buffer_with_no_alias_goes_back_at_once() -> None:
    pool = _Pool()
    t = _rooted(pool)
    del t
    assert pool.calls == [0]
    assert not host._waiting


def test_a_dropped_rooted_buffer_with_one_alias_is_reported_aliased() -> None:
    pool = _Pool()
    t = _rooted(pool)
    alias = t.host_data()[2:]
    del t
    assert pool.calls == [1]
    np.testing.assert_array_equal(alias, np.arange(2.0, 8.0))


class _WatchingPool(_Pool):
    # Records, at each release, whether the watched root can still be revived.
    def __init__(self) -> None:
        super().__init__()
        self.ref: weakref.ref[np.ndarray[Any, Any]] | None = None
        self.revivable: list[bool] = []

    def recycle(self, owner: np.ndarray[Any, Any], aliases: int = 0) -> None:
        assert self.ref is not None
        self.revivable.append(self.ref() is not None)
        super().recycle(owner, aliases)


def test_a_weakly_referenced_root_is_dead_before_its_memory_goes_back() -> None:
    pool = _WatchingPool()
    t = _rooted(pool)
    pool.ref = weakref.ref(t.host_data().base)
    del t
    assert pool.calls == [0]
    assert pool.revivable == [False]


def test_a_root_revived_through_a_weak_reference_keeps_the_memory_out_of_the_pool() -> None:
    pool = _Pool()
    t = _rooted(pool)
    ref = weakref.ref(t.host_data().base)
    revived = ref()  # what another thread's ``ref()`` returns before the drop
    del t
    assert pool.calls == [1]  # the revived root is an alias: refused
    np.testing.assert_array_equal(revived, np.arange(8.0))
    del revived


def test_a_dead_weak_reference_to_a_dropped_view_does_not_defer_recycling() -> None:
    pool = _Pool()
    t = _rooted(pool)
    view = t.host_data()
    ref = weakref.ref(view)
    del view
    assert ref() is None
    del t
    assert pool.calls == [0]


def test_an_alias_held_by_another_thread_keeps_the_buffer_out_of_the_pool() -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=2**24)
    x = tfr.from_numpy(np.arange(16.0))
    held = threading.Event()
    done = threading.Event()
    seen: list[np.ndarray[Any, Any]] = []
    with eng:
        t = x + x
    address = t._st.flat.ctypes.data

    def hold(alias: np.ndarray[Any, Any]) -> None:
        held.set()
        assert done.wait(WAIT_S)
        seen.append(alias.copy())

    thread = threading.Thread(target=hold, args=(np.asarray(t[2:]),))
    thread.start()
    assert held.wait(WAIT_S)
    del t
    with eng:
        fresh = [x * 3.0 for _ in range(20)]
    done.set()
    thread.join(WAIT_S)
    assert address not in {f._st.flat.ctypes.data for f in fresh}
    np.testing.assert_array_equal(seen[0], 2 * np.arange(2.0, 16.0))
    assert eng.buffer_pool_cache_stats().refused_aliased == 1


def test_a_sliced_engine_result_dropped_without_alias_is_reused_through_the_lane() -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=2**24)
    x = tfr.from_numpy(np.arange(16.0))
    with eng:
        t = x + x
        np.asarray(t[1:])  # a read root, and an alias that dies at once
        assert t._st._root is not None
        address = t._st.flat.ctypes.data
        del t
        assert len(eng._pool._lane) == 1
        again = x + x
    assert again._st.flat.ctypes.data == address


def test_a_stale_write_root_with_no_escape_is_recycled_by_the_python_path() -> None:
    pool = _Pool()
    t = _rooted(pool)
    with t.map_write() as w:
        w.array[0] = 5.0
    assert t._st._stale is not None
    del t, w
    gc.collect()
    assert pool.calls == [0]


@settings(max_examples=40, deadline=None)
@given(kept=st.integers(0, 4), weak=st.booleans(), sliced=st.booleans())
def test_a_dropped_rooted_buffer_reports_exactly_its_live_aliases(
    kept: int, weak: bool, sliced: bool
) -> None:
    pool = _Pool()
    t = _rooted(pool)
    aliases = [t.host_data()[1:] if sliced else t.host_data() for _ in range(kept)]
    ref = weakref.ref(t.host_data().base) if weak else None
    del t
    if kept:
        assert pool.calls == [kept]  # refused: never recycled while seen
    else:
        assert ref is None or ref() is None
        assert pool.calls == [0]
        assert pool.calls == [0]
    del aliases
