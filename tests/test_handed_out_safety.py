"""Regression tests for issue 8 (critical part): no handed-out array reaches
memory that is writable, uncounted, or recycled while it lives."""

from __future__ import annotations

import contextlib
import gc
import types
import weakref
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.storage.host import HostBuffer


def _writable_arrays_in(tb: types.TracebackType | None) -> list[np.ndarray]:
    """Every writable ndarray a traceback's frames hold in locals (or in a list or tuple).

    The first frame is the test's own (it caught the error): reading its
    ``f_locals`` would cache a snapshot of the test's locals in it.
    """
    found = []
    tb = None if tb is None else tb.tb_next
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            # A call may hold its operands' arrays in a list or tuple (einsum's
            # `arrays`): those are held by the traceback just the same.
            items = value if isinstance(value, (list, tuple)) else (value,)
            for item in items:
                if isinstance(item, np.ndarray) and item.flags.writeable:
                    found.append(item)
        tb = tb.tb_next
    return found


# -- 1: the base chain of a shared borrow --------------------------------------------------
@pytest.mark.parametrize(
    "borrow",
    [
        lambda t: t.host_data(),
        lambda t: t.to_numpy(),
        lambda t: np.asarray(t),
        lambda t: t.map_read().array,
        lambda t: t.as_view().to_numpy(),
    ],
    ids=["host_data", "to_numpy", "asarray", "map_read", "view"],
)
def test_nothing_on_a_shared_borrows_base_chain_can_build_a_writable_array(borrow: Any) -> None:
    t = tfr.CpuEngine().add(*(tfr.from_numpy(np.arange(4.0)),) * 2)
    obj: Any = borrow(t)
    while obj is not None:
        if isinstance(obj, memoryview):
            assert obj.readonly
            obj = obj.obj
        elif isinstance(obj, np.ndarray):
            assert not obj.flags.writeable
            with pytest.raises(ValueError):
                obj.flags.writeable = True
            obj = obj.base
        else:
            # A holder: it must not lend the memory again.
            again = np.asarray(obj)
            assert again.dtype == object or not again.flags.writeable
            obj = None


def _chain_end(obj: Any) -> Any:
    """The last object of an array's ``.base`` / ``memoryview.obj`` chain."""
    while True:
        nxt = obj.base if isinstance(obj, np.ndarray) else getattr(obj, "obj", None)
        if nxt is None:
            return obj
        obj = nxt


def test_the_end_of_a_read_borrows_base_chain_cannot_write_a_later_output() -> None:
    # The reproducer: keep only what the chain ends in, then write it.
    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.arange(4.0))
    evil = _chain_end(eng.add(a, a).host_data())
    u = eng.mul(a, 10.0)
    end = np.asarray(evil)
    # Either a harmless object array around a holder, or read-only memory.
    assert end.dtype == object or not end.flags.writeable
    with contextlib.suppress(ValueError):  # read-only: the expected outcome
        end[...] = -1
    assert u.host_data().tolist() == [0.0, 10.0, 20.0, 30.0]


# -- 2: the holder behind map_write ----------------------------------------------------------
def test_the_holder_behind_a_write_guards_array_lends_no_array_over_the_memory() -> None:
    t = tfr.from_numpy(np.zeros(4))
    with t.map_write() as w:
        holder = np.asarray(w.array.base.base)
        assert holder.dtype == object
    assert t.host_data().tolist() == [0.0] * 4


# -- 3: reclaim_buffer and weak references to the adopted array -----------------------------
def test_reclaim_buffer_refuses_an_adopted_array_a_weak_reference_can_revive() -> None:
    eng = tfr.CpuEngine()
    data = np.arange(4.0)
    wr = weakref.ref(data)
    t = tfr.Tensor.from_vec_col_major((4,), data)
    del data
    with pytest.raises(tfr.BorrowError) as err:
        eng.reclaim_buffer(t)
    assert err.value.kind == "ADOPTED_STILL_REFERENCED"
    assert not t.is_moved
    assert eng.buffer_pool_stats().buffers == 0
    assert wr() is not None


# -- 4: the counted object is never handed out ------------------------------------------------
def test_host_data_hands_out_a_fresh_array_each_time_never_the_counted_root() -> None:
    t = tfr.from_numpy(np.arange(4.0))
    a, b = t.host_data(), t.host_data()
    assert a is not b
    assert a.base is b.base  # both are views of the one counted root


def test_a_buffer_is_recycled_only_once_its_root_is_dead(monkeypatch: Any) -> None:
    # Simulates the race: a weak reference revives the root right after
    # `HostBuffer.__del__` counted no alias (the count is forced to 0 here).
    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.arange(4.0))
    out = eng.add(a, a)
    revived = out.host_data().base  # what weakref.ref(h.base)() would return
    monkeypatch.setattr(HostBuffer, "alias_count", lambda self: 0)
    del out
    monkeypatch.undo()
    assert eng.buffer_pool_stats().buffers == 0
    later = eng.mul(a, 10.0)
    assert not np.shares_memory(np.asarray(revived), later.host_data())
    del revived
    assert eng.buffer_pool_stats().buffers == 1


# -- 5: ufunc.at ------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda t: t, lambda t: t.as_view()], ids=["tensor", "view"])
def test_ufunc_at_on_a_tensor_or_view_is_refused_and_changes_nothing(make: Any) -> None:
    t = tfr.from_numpy(np.arange(4.0))
    with pytest.raises(tfr.ValidationError) as err:
        np.add.at(make(t), [0], 5)
    assert err.value.kind == "INVALID_OUT"
    assert "add.at" in str(err.value)
    assert t.host_data().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_numpy_ufuncs_still_read_views() -> None:
    t = tfr.from_numpy(np.arange(4.0))
    assert np.sum(np.multiply(t.as_view(), 2.0)) == 12.0


# -- 6: moving a group-backed buffer out claims it --------------------------------------------
def test_into_vec_col_major_of_a_group_backed_tensor_claims_the_old_buffer() -> None:
    g = tfr.CpuEngine().add(*(tfr.from_numpy(np.arange(4.0)),) * 2).promote()
    buf, _ = g._resolve("test")
    g.into_vec_col_major()
    # A reader that picked the buffer up before the move is refused after it.
    with pytest.raises(tfr.BorrowError):
        buf.check_shared("reader on another thread")


# -- 7: a failed kernel's buffer is never pooled while a traceback holds it --------------------
def test_a_refused_conversion_leaves_no_writable_traceback_array_over_pooled_memory() -> None:
    eng = tfr.CpuEngine()
    t = tfr.from_numpy(np.array([1.0, 2.5, 3.0, 4.0]))
    with pytest.raises(tfr.ValidationError) as err:
        eng.convert(t, tfr.DType.I64)
    held = _writable_arrays_in(err.value.__traceback__)
    later = eng.convert(tfr.from_numpy(np.array([1.0, 2.0, 3.0, 4.0])), tfr.DType.I64)
    assert not any(np.shares_memory(h, later.host_data()) for h in held)


def test_a_kernel_refused_half_way_leaves_no_traceback_array_over_pooled_memory() -> None:
    eng = tfr.CpuEngine()
    n = 100_000
    a = tfr.from_numpy(np.ones(n, dtype=np.int64))
    d = np.ones(n, dtype=np.int64)
    d[-1] = 0
    with pytest.raises(tfr.ValidationError) as err:
        eng.evaluate("a / b", a=a, b=tfr.from_numpy(d))
    held = _writable_arrays_in(err.value.__traceback__)
    later = eng.evaluate("a * 3", a=a)
    assert not any(np.shares_memory(h, later.host_data()) for h in held)


# -- the same family: a failed call's frames hold its operands' internal arrays --------------
@pytest.mark.parametrize(
    "fail",
    [
        lambda eng, a, b: eng.add(a, b),
        lambda eng, a, b: eng.matmul(a, b),
        lambda eng, a, b: eng.reduce_sum(a, (5,)),
        lambda eng, a, b: eng.einsum("i,j->k", a, b),
        lambda eng, a, b: eng.evaluate("a + b", a=a, b=b),
    ],
    ids=["add", "matmul", "reduce_sum", "einsum", "evaluate"],
)
def test_an_operand_held_by_a_failed_calls_traceback_is_never_pooled(fail: Any) -> None:
    eng = tfr.CpuEngine()
    x = tfr.from_numpy(np.arange(4.0))
    a = eng.add(x, x)  # a pooled buffer
    with pytest.raises(tfr.ValidationError) as err:
        fail(eng, a, tfr.from_numpy(np.ones(3)))
    # Keep only the arrays the frames hold: the frames also hold `a` itself.
    held = _writable_arrays_in(err.value.__traceback__)
    assert held
    del err, a
    gc.collect()
    later = [eng.mul(x, float(k)) for k in range(3)]
    assert not any(np.shares_memory(h, o.host_data()) for h in held for o in later)
