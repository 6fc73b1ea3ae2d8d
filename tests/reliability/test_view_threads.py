"""One view used from several threads while one of them writes through it (issue 23, item 3).

A view write used to give up the view's alias for the duration (``_base = None``):
other threads using the view then got AttributeError, and views derived from it
meanwhile held None for good (unreadable, and not counted as aliases, so a
``map_write`` on the owner was granted while they lived). Every operation here
must either work or be refused with a `TenferroError`.

The threads run a fixed number of iterations (no timing): each stops by itself.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr

WRITES = 400
READER_ROUNDS = 4000


def _owner() -> Any:
    return tfr.Tensor.from_vec_col_major((64,), np.arange(64.0))


def _run(workers: list[Callable[[], None]]) -> list[BaseException]:
    errors: list[BaseException] = []

    def guard(work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guard, args=(w,)) for w in workers]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave as often as the interpreter allows
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return errors


def _typed_or_fine(call: Callable[[], Any], untyped: list[str]) -> Any:
    try:
        return call()
    except tfr.TenferroError:
        return None
    except Exception as exc:
        untyped.append(f"{type(exc).__name__}: {exc}")
        return None


def test_threads_using_a_view_while_another_writes_through_it_get_only_typed_errors() -> None:
    t = _owner()
    v = t[8:40]
    untyped: list[str] = []
    derived: list[Any] = []

    def writer() -> None:
        for i in range(WRITES):
            _typed_or_fine(lambda i=i: v.__setitem__(slice(None), float(i)), untyped)

    def reader() -> None:
        for _ in range(READER_ROUNDS):
            _typed_or_fine(lambda: float(np.asarray(v)[0]), untyped)
            _typed_or_fine(lambda: v.shape, untyped)

    def deriver() -> None:
        for _ in range(READER_ROUNDS // 4):
            w = _typed_or_fine(lambda: v[1:], untyped)
            if w is not None and len(derived) < 64:
                derived.append(w)

    errors = _run([writer, reader, reader, deriver])
    assert not errors, errors
    assert not untyped, untyped[:5]
    # Every derived view is a working, counted alias.
    for w in derived:
        assert np.asarray(w).shape == (31,)
    with pytest.raises(tfr.BorrowError) as info, t.map_write():
        pass
    assert info.value.kind == "ALIASED"


def test_a_view_derived_during_a_write_is_counted_as_an_alias() -> None:
    t = _owner()
    views = [t[::2]]
    derived: list[Any] = []

    def fn(arr: Any) -> None:
        # Another user of the view derives from it in the middle of the write.
        derived.append(views[0][1:])
        arr[...] = 1.0

    from tenferro.namespace._adapter import write

    write(views[0], "test.write", fn)
    (w,) = derived
    assert np.asarray(w).tolist() == [1.0] * 31
    views.clear()
    with pytest.raises(tfr.BorrowError), t.map_write():  # w is alive: refused
        pass
    del w
    derived.clear()
    with t.map_write() as g:
        g.array[0] = 5.0


def test_a_view_stays_usable_by_other_code_while_it_is_written() -> None:
    t = _owner()
    v = t[4:12]
    seen: list[Any] = []

    def fn(arr: Any) -> None:
        seen.append(v.shape)  # the view's own state is intact during the write
        seen.append(v._base is not None)
        arr[...] = 2.0

    from tenferro.namespace._adapter import write

    write(v, "test.write", fn)
    assert seen == [(8,), True]
    assert np.asarray(v).tolist() == [2.0] * 8


def test_two_threads_writing_one_view_each_write_or_are_refused_typed() -> None:
    t = _owner()
    v = t[0:32]
    untyped: list[str] = []

    def writer(value: float) -> Callable[[], None]:
        def work() -> None:
            for _ in range(WRITES):
                _typed_or_fine(lambda: v.__setitem__(slice(None), value), untyped)

        return work

    errors = _run([writer(1.0), writer(2.0)])
    assert not errors and not untyped, (errors, untyped[:5])
    values = set(np.asarray(v).tolist())
    assert values <= {1.0, 2.0} and len(values) == 1  # no torn write


def test_a_failed_view_write_leaves_no_writable_array_in_its_traceback() -> None:
    t = _owner()
    v = t[0:8]
    with pytest.raises(tfr.TenferroError) as info:
        v[[[0, 1], [0]]] = 1.0  # a ragged index: refused while the write is open
    arrays = [
        val
        for tb in _frames(info.value.__traceback__)
        for val in tb.f_locals.values()
        if isinstance(val, np.ndarray) and np.shares_memory(val, np.asarray(t))
    ]
    assert arrays, "the traceback should still show the array numpy refused"
    for arr in arrays:
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr.flags.writeable = True
    del arrays, info
    assert np.asarray(t).tolist() == list(np.arange(64.0))


def _frames(tb: Any) -> list[Any]:
    out = []
    while tb is not None:
        out.append(tb.tb_frame)
        tb = tb.tb_next
    return out
