"""Every physical copy is named and counted; forbid_copies() refuses them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.copies import record_copy


def host(shape: tuple[int, ...], dtype: Any = np.float64) -> tfr.Tensor:
    n = int(np.prod(shape))
    return tfr.Tensor.from_vec_col_major(shape, np.arange(n).astype(dtype))


def bound(fn: Callable[[tfr.Tensor], object]) -> Callable[[], Callable[[], object]]:
    """A setup that builds a fresh (2, 3) tensor and returns ``lambda: fn(tensor)``."""

    def setup() -> Callable[[], object]:
        t = host((2, 3))
        return lambda: fn(t)

    return setup


def unbound(fn: Callable[[], object]) -> Callable[[], Callable[[], object]]:
    return lambda: fn


# Each case: (label, setup -> thunk that makes exactly one named copy, bytes copied).
COPIES: list[tuple[str, Callable[[], Callable[[], object]], int]] = [
    ("Tensor.duplicate", bound(lambda t: t.duplicate()), 48),
    ("Tensor.to_numpy(copy=True)", bound(lambda t: t.to_numpy(copy=True)), 48),
    ("np.array(tensor)", bound(np.array), 48),
    ("np.asarray(tensor, dtype=float32)", bound(lambda t: np.asarray(t, dtype=np.float32)), 24),
    (
        "TensorView.duplicate",
        bound(lambda t: t.as_view().slice_view((slice(None), 1)).duplicate()),
        16,
    ),
    (
        "TensorView.to_col_major",
        bound(lambda t: t.as_view().transpose_view((1, 0)).to_col_major()),
        48,
    ),
    (
        "Tensor.from_vec_row_major",
        unbound(lambda: tfr.Tensor.from_vec_row_major((2, 3), np.arange(6.0))),
        48,
    ),
    ("from_numpy(copy=True)", unbound(lambda: tfr.from_numpy(np.ones((2, 3)), copy=True)), 48),
    ("Tensor.download", bound(lambda t: t.download()), 48),
]


def test_copy_stats_is_a_named_pair() -> None:
    stats = tfr.copy_stats()
    assert isinstance(stats, tfr.CopyStats)
    assert stats == (stats.copies, stats.bytes)


@pytest.mark.parametrize(("label", "setup", "nbytes"), COPIES, ids=[c[0] for c in COPIES])
def test_each_named_copy_counts_once_with_its_bytes(
    label: str, setup: Callable[[], Callable[[], object]], nbytes: int
) -> None:
    thunk = setup()
    before = tfr.copy_stats()
    thunk()
    after = tfr.copy_stats()
    assert (after.copies - before.copies, after.bytes - before.bytes) == (1, nbytes)


@pytest.mark.parametrize(("label", "setup", "nbytes"), COPIES, ids=[c[0] for c in COPIES])
def test_each_named_copy_is_refused_inside_forbid_copies(
    label: str, setup: Callable[[], Callable[[], object]], nbytes: int
) -> None:
    thunk = setup()
    before = tfr.copy_stats()
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError) as err:
        thunk()
    assert tfr.copy_stats() == before
    assert err.value.nbytes == nbytes
    assert "forbid_copies" in str(err.value)


def test_zero_copy_paths_do_not_count() -> None:
    data = np.arange(6.0)
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        t = tfr.Tensor.from_vec_col_major((2, 3), data)
        a = t.host_data()
        b = t.to_numpy()
        c = np.asarray(t)
        d = np.array(t, copy=False)
        v = t.as_view().transpose_view((1, 0)).slice_view((slice(None, None, -1), 0))
        e = v.to_numpy()
        del a, b, c, d, v, e
        with t.map_read() as g:
            g.tolist()
        t.with_host_read(np.sum)
        _, back = t.into_vec_col_major()
    assert back is data
    assert tfr.copy_stats() == before


def test_forbid_copies_nests() -> None:
    t = host((2,))
    with tfr.forbid_copies():
        with tfr.forbid_copies():
            pass
        with pytest.raises(tfr.CopyForbiddenError):
            t.duplicate()
    t.duplicate()


def test_forbid_copies_is_per_thread() -> None:
    t = host((4,))
    done: list[object] = []
    with tfr.forbid_copies():
        worker = threading.Thread(target=lambda: done.append(t.duplicate()))
        worker.start()
        worker.join()
    assert len(done) == 1


def test_forbid_copies_is_left_even_on_error() -> None:
    with pytest.raises(KeyError), tfr.forbid_copies():
        raise KeyError("boom")
    host((1,)).duplicate()


def test_record_copy_refuses_before_counting() -> None:
    before = tfr.copy_stats()
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError) as err:
        record_copy("My.op", 10)
    assert err.value.op == "My.op"
    assert tfr.copy_stats() == before


@pytest.mark.parametrize(
    "copy_of",
    [
        lambda t: t.duplicate(),
        lambda t: t.download(),
        lambda t: t.to_numpy(copy=True),
        lambda t: np.array(t),
        lambda t: np.asarray(t, dtype=np.float32),
    ],
    ids=["duplicate", "download", "to_numpy", "np.array", "dtype"],
)
def test_a_refused_copy_leaves_no_alias_even_while_its_traceback_is_kept(copy_of) -> None:
    t = host((2, 2))
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError) as err:
        copy_of(t)
    assert err.value.__traceback__ is not None  # the frames are still alive here
    with t.map_write():
        pass


def test_to_numpy_copy_true_is_f_ordered_and_owns_its_values() -> None:
    t = host((2, 3))
    a = t.to_numpy(copy=True)
    assert a.flags.f_contiguous and a.flags.writeable
    np.testing.assert_array_equal(a, t.to_numpy())


def test_building_from_a_list_of_numbers_is_not_a_copy() -> None:
    before = tfr.copy_stats()
    with tfr.forbid_copies():
        tfr.Tensor.from_vec_col_major((3,), [1.0, 2.0, 3.0])
    assert tfr.copy_stats() == before


def test_building_from_another_buffer_is_a_named_copy() -> None:
    import array

    before = tfr.copy_stats()
    t = tfr.Tensor.from_vec_col_major((3,), array.array("d", [1.0, 2.0, 3.0]))
    after = tfr.copy_stats()
    assert (after.copies - before.copies, after.bytes - before.bytes) == (1, 24)
    assert t.host_data().tolist() == [1.0, 2.0, 3.0]
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError) as err:
        tfr.Tensor.from_vec_col_major((3,), memoryview(np.zeros(3)))
    assert err.value.op == "Tensor.from_vec_col_major(array-like)"
