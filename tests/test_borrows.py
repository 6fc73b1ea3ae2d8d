"""Borrows at run time: live aliases are counted exactly; exclusive access waits for none.

The count is the reference count of the buffer's read root (or of an ended
borrow's write root) minus tenferro's own references, so these tests hold and
drop aliases of every kind and check the number the refusal reports.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.storage.host import HostBuffer
from tenferro.tensor import Tensor


def fresh(n: int = 4) -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major((n,), np.zeros(n))


def aliases_blocking(t: tfr.Tensor) -> int:
    """How many live aliases `map_write` reports (0 when it is granted)."""
    try:
        with t.map_write():
            return 0
    except tfr.BorrowError as err:
        assert err.kind == "ALIASED"
        return int(err.aliases)


# -- counting ----------------------------------------------------------------------------
def test_a_fresh_tensor_has_no_alias() -> None:
    assert aliases_blocking(fresh()) == 0


def test_map_write_is_refused_while_host_data_lives_with_the_count_in_the_message() -> None:
    t = fresh()
    alias = t.host_data()
    with pytest.raises(tfr.BorrowError, match="1 live alias") as err, t.map_write():
        pass
    assert (err.value.op, err.value.kind, err.value.aliases) == ("Tensor.map_write", "ALIASED", 1)
    assert "del" in str(err.value)
    del alias


def test_every_kind_of_alias_is_counted_once() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 2), np.zeros(4))
    held: list[Any] = [
        t.host_data(),
        t.to_numpy(),
        np.asarray(t),
        t.map_read(),
        t.as_view(),
        t.as_view().transpose_view((1, 0)),
        t.as_view().to_numpy(),
        t.host_data()[1:3],
        t.to_numpy().T,
        memoryview(t.host_data()),
    ]
    assert aliases_blocking(t) == len(held)
    while held:
        held.pop()
        assert aliases_blocking(t) == len(held)


def test_the_same_array_held_twice_is_one_alias_until_both_names_drop_it() -> None:
    # Handed-out arrays are fresh views of the counted root, never the root: a
    # live array counts once however many names hold it, and until all do.
    t = fresh()
    a = t.host_data()
    b = a
    assert aliases_blocking(t) == 1
    del a
    assert aliases_blocking(t) == 1
    del b
    assert aliases_blocking(t) == 0


def test_views_derived_from_a_view_are_counted_each() -> None:
    t = tfr.Tensor.from_vec_col_major((2,), np.zeros(2, np.complex128))
    v = t.as_view()
    r = v.as_real_view()
    s = r.slice_view((0, slice(None)))
    assert aliases_blocking(t) == 3
    del v, r
    assert aliases_blocking(t) == 1
    del s
    assert aliases_blocking(t) == 0


def test_a_released_map_read_guard_no_longer_counts() -> None:
    t = fresh()
    with t.map_read() as g:
        assert aliases_blocking(t) == 1
    assert aliases_blocking(t) == 0
    del g


def test_temporaries_are_not_aliases() -> None:
    t = fresh()
    t.host_data().sum()
    float(np.asarray(t)[0])
    t.as_view().transpose_view((0,)).get((1,))
    t.with_host_read(lambda s: s.tolist())
    assert aliases_blocking(t) == 0


def test_an_alias_held_only_by_a_garbage_cycle_does_not_block() -> None:
    t = fresh()
    cycle: list[Any] = [t.host_data()]
    cycle.append(cycle)
    del cycle
    with t.map_write():
        pass


def test_an_alias_in_a_reachable_container_blocks() -> None:
    t = fresh()
    box = {"a": t.host_data()}
    assert aliases_blocking(t) == 1
    box.clear()
    assert aliases_blocking(t) == 0


def test_the_callers_frozen_handle_is_not_an_alias() -> None:
    data = np.zeros(3)
    t = tfr.Tensor.from_vec_col_major((3,), data)
    assert aliases_blocking(t) == 0
    assert data.flags.writeable is False


def test_views_the_caller_made_before_adopting_are_not_tracked() -> None:
    # Documented limit: tenferro freezes the array it is given, not older views of it.
    data = np.zeros(3)
    earlier = data[:]
    t = tfr.Tensor.from_vec_col_major((3,), data)
    assert earlier.flags.writeable
    assert aliases_blocking(t) == 0


# -- exclusive borrows -----------------------------------------------------------------------
def test_map_write_array_is_writable_column_major_and_lands_in_the_buffer() -> None:
    t = tfr.Tensor.from_vec_col_major((2, 2), np.zeros(4))
    with t.map_write() as w:
        assert w.array.flags.writeable and w.array.flags.f_contiguous
        w.array[0, 1] = 3.0
        w[1, 1] = 4.0
    assert t.host_data().tolist() == [0.0, 0.0, 3.0, 4.0]


def test_arrays_handed_out_by_map_write_are_read_only_after_the_block() -> None:
    t = fresh()
    with t.map_write() as w:
        kept = w.array
        col = w[1:3]
    assert not kept.flags.writeable
    assert not col.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        kept[0] = 1.0


def test_frozen_arrays_from_an_exclusive_borrow_cannot_be_made_writable_again() -> None:
    t = fresh()
    with t.map_write() as w:
        kept = w.array
    with pytest.raises(ValueError):
        kept.flags.writeable = True
    with pytest.raises(ValueError):
        kept.base.flags.writeable = True
    # The root's holder lends the memory only once: it builds no array over it.
    assert np.asarray(kept.base.base).dtype == object


def test_arrays_kept_from_an_exclusive_borrow_still_count_as_aliases() -> None:
    t = fresh()
    with t.map_write() as w:
        kept = w.array
    assert aliases_blocking(t) == 1
    del kept
    assert aliases_blocking(t) == 0


def test_an_escaped_writable_view_keeps_blocking() -> None:
    # numpy cannot freeze a view the caller derived itself; it still counts.
    t = fresh()
    with t.map_write() as w:
        escaped = w.array[1:]
    assert escaped.flags.writeable
    assert aliases_blocking(t) == 1
    with pytest.raises(tfr.BorrowError):
        t.into_vec_col_major()
    del escaped
    assert aliases_blocking(t) == 0


def test_the_write_guard_refuses_access_after_the_block() -> None:
    t = fresh()
    with t.map_write() as w:
        pass
    with pytest.raises(tfr.BorrowError) as err:
        _ = w.array
    assert err.value.kind == "BORROW_ENDED"


def test_a_second_exclusive_borrow_is_refused_while_the_first_lasts() -> None:
    t = fresh()
    with t.map_write(), pytest.raises(tfr.BorrowError) as err:
        t.map_write()
    assert (err.value.kind, err.value.holder) == ("EXCLUSIVELY_BORROWED", "Tensor.map_write")


def test_a_refused_map_write_changes_nothing() -> None:
    t = fresh()
    alias = t.host_data()
    with pytest.raises(tfr.BorrowError):
        t.map_write()
    assert t.host_data().tolist() == [0.0] * 4  # reads are still allowed
    del alias
    with t.map_write():
        pass


def test_a_map_write_guard_dropped_without_with_ends_its_borrow() -> None:
    t = fresh()
    g = t.map_write()
    g.array[0] = 2.0
    del g
    gc.collect()
    assert t.host_data()[0] == 2.0


def test_an_exception_in_the_block_still_ends_the_borrow() -> None:
    t = fresh()
    with pytest.raises(KeyError), t.map_write():
        raise KeyError("x")
    assert t.host_data().tolist() == [0.0] * 4


def test_an_engine_style_out_write_is_exclusive_and_freezes_its_array() -> None:
    t = fresh()
    borrow, arr = t._begin_out("engine.add")
    try:
        arr[...] = 5.0
        with pytest.raises(tfr.BorrowError):
            t.host_data()
    finally:
        borrow.end()
    assert not arr.flags.writeable
    assert t.host_data().tolist() == [5.0] * 4


def test_a_reader_on_another_thread_is_refused_during_an_exclusive_borrow() -> None:
    t = fresh()
    outcome: list[str] = []

    def read() -> None:
        try:
            t.host_data()
            outcome.append("read")
        except tfr.BorrowError as err:
            outcome.append(err.kind)

    with t.map_write():
        worker = threading.Thread(target=read)
        worker.start()
        worker.join()
    assert outcome == ["EXCLUSIVELY_BORROWED"]


# -- shared-borrow arrays ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "borrow",
    [
        lambda t: t.host_data(),
        lambda t: t.to_numpy(),
        lambda t: np.asarray(t),
        lambda t: t.map_read().array,
        lambda t: t.as_view().to_numpy(),
        lambda t: t.host_data()[1:].base,
    ],
    ids=["host_data", "to_numpy", "asarray", "map_read", "view", "root"],
)
def test_shared_borrow_arrays_cannot_be_made_writable(borrow) -> None:
    a = borrow(fresh())
    with pytest.raises(ValueError):
        a.flags.writeable = True


def test_adopting_a_borrowed_array_is_refused() -> None:
    t = fresh()
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((4,), t.host_data())
    assert err.value.kind == "READ_ONLY"


# -- recycling is decided by the same count ----------------------------------------------------
class _FakePool:
    # A recycler without a return lane: every release goes through recycle().
    _lane_bytes = -1

    def __init__(self) -> None:
        self.calls: list[int] = []

    def recycle(self, owner: np.ndarray, aliases: int) -> None:
        self.calls.append(aliases)


def _pooled(pool: _FakePool) -> Tensor:
    owner = np.empty(8)
    buf = HostBuffer(owner, owner[:4], weakref.ref(pool))  # type: ignore[arg-type]
    return Tensor._wrap((4,), tfr.DType.F64, buf)


def test_a_dropped_unaliased_buffer_goes_back_with_no_alias() -> None:
    pool = _FakePool()
    t = _pooled(pool)
    t.host_data()
    del t
    assert pool.calls == [0]


def test_a_dropped_buffer_that_is_still_seen_is_reported_aliased() -> None:
    pool = _FakePool()
    t = _pooled(pool)
    alias = t.host_data()
    del t
    assert pool.calls == [1]
    del alias


def test_a_buffer_with_an_escaped_write_view_is_reported_aliased() -> None:
    pool = _FakePool()
    t = _pooled(pool)
    with t.map_write() as w:
        escaped = w.array[:2]
    del t, w
    assert pool.calls == [1]
    del escaped


def test_into_vec_col_major_cuts_the_pool_link() -> None:
    pool = _FakePool()
    t = _pooled(pool)
    _, vec = t.into_vec_col_major()
    del t
    gc.collect()
    assert pool.calls == []
    assert vec.flags.writeable


def test_a_buffer_whose_pool_is_gone_is_simply_freed() -> None:
    pool = _FakePool()
    t = _pooled(pool)
    del pool
    gc.collect()
    del t  # no error: the weak link is dead


def test_a_copy_made_by_fancy_indexing_a_write_guard_stays_writable() -> None:
    t = fresh()
    with t.map_write() as w:
        picked = w[[0, 2]]
    assert picked.flags.writeable
    assert aliases_blocking(t) == 0
