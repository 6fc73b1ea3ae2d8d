"""Engine operations count as readers while their kernels run (`HostBuffer.pin`).

Kernels read ``HostBuffer.flat`` directly, without an alias, so a writer or a
move on another thread must learn from the pin that a read is in flight. Every
test here is deterministic: the kernel is made to wait on an `Event` (through a
patched kernel or `EngineBase._run`) while the main thread tries the writers.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import _base, contraction, fusion, reduction, structural
from tenferro.storage import host
from tenferro.tensor import Tensor

WAIT_S = 30.0


def t_(values: Any, dtype: Any = None) -> Tensor:
    return tfr.from_numpy(np.asfortranarray(np.array(values, dtype=dtype)))


class Gate:
    """Makes a kernel wait: `started` once it is in flight, it waits for `release`."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def hold(self) -> None:
        self.started.set()
        assert self.release.wait(WAIT_S), "the test never released the kernel"


@contextmanager
def in_flight(gate: Gate, call: Callable[[], Any]) -> Iterator[list[Any]]:
    """Run ``call`` on another thread until it is held at the gate; join it on exit."""
    result: list[Any] = []

    def work() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # reported to the test
            result.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        while not gate.started.wait(0.01):
            assert thread.is_alive(), f"the operation ended before its kernel: {result}"
        yield result
    finally:
        gate.release.set()
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert not isinstance(result[0], BaseException), result[0]


@pytest.fixture
def held_run(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """Every general engine path waits at the gate just before its kernel runs."""
    gate = Gate()
    run = _base.EngineBase._run

    def waiting_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        gate.hold()
        return run(self, *args, **kwargs)

    monkeypatch.setattr(_base.EngineBase, "_run", waiting_run)
    return gate


def refused_in_use(call: Callable[[], Any]) -> None:
    with pytest.raises(tfr.BorrowError) as err:
        call()
    assert err.value.kind == "IN_USE"
    assert "engine operation" in str(err.value) and "another thread" in str(err.value)


# -- the writers and movers, each refused while a read is in flight --------------------
def test_map_write_is_refused_while_an_engine_op_reads_the_tensor(
    eng: tfr.CpuEngine, held_run: Gate
) -> None:
    a = t_([1.0, 2.0])
    with in_flight(held_run, lambda: eng.maximum(a, 1.5)):
        refused_in_use(a.map_write)
    with a.map_write() as w:  # granted once the operation is done
        w.array[0] = 5.0


def test_as_view_mut_is_refused_while_an_engine_op_reads_the_tensor(
    eng: tfr.CpuEngine, held_run: Gate
) -> None:
    a = t_([1.0, 2.0])
    with in_flight(held_run, lambda: eng.pow(a, 2.0)):  # pow: the general path
        refused_in_use(a.as_view_mut)
    with a.as_view_mut():
        pass


def test_out_is_refused_while_an_engine_op_reads_the_tensor(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    run = _base.EngineBase._run

    def waiting_run(self: Any, op: str, *args: Any, **kwargs: Any) -> Any:
        if op == "CpuEngine.pow":  # only the reader waits
            gate.hold()
        return run(self, op, *args, **kwargs)

    monkeypatch.setattr(_base.EngineBase, "_run", waiting_run)
    a = t_([1.0, 2.0])
    with in_flight(gate, lambda: eng.pow(a, 2.0)):
        refused_in_use(lambda: eng.neg(t_([3.0, 4.0]), out=a))
    eng.neg(t_([3.0, 4.0]), out=a)
    assert a.to_numpy().tolist() == [-3.0, -4.0]


def test_into_vec_col_major_is_refused_while_an_engine_op_reads_the_tensor(
    eng: tfr.CpuEngine, held_run: Gate
) -> None:
    a = t_([1.0, 2.0])
    with in_flight(held_run, lambda: eng.reduce_max(a, (0,))):  # max over axes: the general path
        refused_in_use(a.into_vec_col_major)
        assert not a.is_moved
    _, vec = a.into_vec_col_major()
    assert vec.tolist() == [1.0, 2.0]


def test_reclaim_buffer_is_refused_while_an_engine_op_reads_the_tensor(
    eng: tfr.CpuEngine, held_run: Gate
) -> None:
    a = eng.add(t_([1.0, 2.0]), 1.0)  # a pooled output: reclaimable
    with in_flight(held_run, lambda: eng.reshape(a, (2,))) as result:
        refused_in_use(lambda: eng.reclaim_buffer(a))
        assert not a.is_moved
    assert result[0].to_numpy().tolist() == [2.0, 3.0]  # read whole, undisturbed
    eng.reclaim_buffer(a)
    assert a.is_moved


# -- every read path pins -----------------------------------------------------------------
READS: dict[str, Callable[[tfr.CpuEngine, Tensor], Any]] = {
    "elementwise": lambda e, a: e.sub(a, a.as_view()),  # general path: a view operand
    "where": lambda e, a: e.where(e.less(a, 2.0), a, 0.0),
    "reduction": lambda e, a: e.reduce_max(a, (0,)),
    "structural": lambda e, a: e.broadcast_in_dim(a, (2, 4, 3), (0, 2)),
    "concatenate": lambda e, a: e.concatenate([a, a]),
    "to_contiguous": lambda e, a: e.to_contiguous(a),
    "convert": lambda e, a: e.convert(a, tfr.DType.C64),
    "matmul": lambda e, a: e.matmul(a.as_view().transpose_view((1, 0)), a),  # a view
    "dot_general": lambda e, a: e.dot_general(a, a, contracting=((1,), (1,))),
    # out=: the path through `_run` (a new output is taken from the pool only before
    # the plan's last step, past the gate; the binary fast path has its own test).
    "einsum": lambda e, a: e.einsum(
        "ij,kj->ik", a, a, out=tfr.from_numpy(np.zeros((2, 2), order="F"))
    ),
    # A view operand: the general path (plain small operands take the hot path).
    "evaluate": lambda e, a: e.evaluate("exp(a) * b", a=a, b=a.as_view()),
}


@pytest.mark.parametrize("family", sorted(READS))
def test_every_engine_read_path_pins_its_tensor_operands(
    eng: tfr.CpuEngine, held_run: Gate, family: str
) -> None:
    a = tfr.from_numpy(np.asfortranarray(np.arange(6.0).reshape(2, 3) / 10))
    call = READS[family]
    with in_flight(held_run, lambda: call(eng, a)):
        assert a._st.readers() >= 1
        refused_in_use(a.map_write)
    assert a._st.readers() == 0
    with a.map_write():
        pass


# -- the hot paths pin first, then check for a writer ----------------------------------
@contextmanager
def waiting_closure(method: Any, name: str, gate: Gate) -> Iterator[None]:
    """Swap a hot path's captured kernel (a closure variable) for one that waits."""
    cell = dict(zip(method.__code__.co_freevars, method.__closure__, strict=True))[name]
    kernel = cell.cell_contents

    def waiting(*args: Any) -> Any:
        gate.hold()
        return kernel(*args)

    cell.cell_contents = waiting
    try:
        yield
    finally:
        cell.cell_contents = kernel


def test_the_binary_hot_path_pins_both_operands(eng: tfr.CpuEngine) -> None:
    gate = Gate()
    a, b = t_([1.0, 2.0]), t_([3.0, 4.0])
    with (
        waiting_closure(tfr.CpuEngine.add, "ufunc", gate),
        in_flight(gate, lambda: eng.add(a, b)) as result,
    ):
        refused_in_use(a.map_write)
        refused_in_use(b.map_write)
    assert result[0].to_numpy().tolist() == [4.0, 6.0]
    assert not host.reading


def test_the_scalar_hot_path_pins_its_tensor(eng: tfr.CpuEngine) -> None:
    gate = Gate()
    a = t_([1.0, 2.0])
    with (
        waiting_closure(tfr.CpuEngine.mul, "ufunc", gate),
        in_flight(gate, lambda: eng.mul(a, 2.0)) as result,
    ):
        refused_in_use(a.map_write)
    assert result[0].to_numpy().tolist() == [2.0, 4.0]
    assert not host.reading


def test_the_unary_hot_path_pins_its_tensor(eng: tfr.CpuEngine) -> None:
    gate = Gate()
    a = t_([1.0, 4.0])
    with (
        waiting_closure(tfr.CpuEngine.sqrt, "ufunc", gate),
        in_flight(gate, lambda: eng.sqrt(a)) as result,
    ):
        refused_in_use(a.map_write)
    assert result[0].to_numpy().tolist() == [1.0, 2.0]
    assert not host.reading


@pytest.mark.parametrize(
    ("values", "axes", "expected"),
    [([1.0, 2.0], None, 3.0), ([[1.0, 2.0], [3.0, 4.0]], 0, [4.0, 6.0])],
    ids=["full", "axes"],
)
def test_the_reduction_hot_paths_pin_their_tensor(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch, values: Any, axes: Any, expected: Any
) -> None:
    gate = Gate()

    class WaitingAdd:
        @staticmethod
        def reduce(*args: Any) -> Any:
            gate.hold()
            return np.add.reduce(*args)

    monkeypatch.setitem(reduction._UFUNC, "reduce_sum", WaitingAdd)
    a = t_(values)
    call = (lambda: eng.reduce_sum(a)) if axes is None else (lambda: eng.reduce_sum(a, axes))
    with in_flight(gate, call) as result:
        refused_in_use(a.map_write)
    assert result[0].to_numpy().tolist() == expected
    assert not host.reading


def test_the_transpose_hot_path_pins_its_tensor(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    copy = structural.copy_strided

    def waiting_copy(*args: Any) -> Any:
        gate.hold()
        return copy(*args)

    monkeypatch.setattr(structural, "copy_strided", waiting_copy)
    side = 512  # large enough for the blocked copy (smaller copies are inlined)
    x = np.arange(float(side * side)).reshape(side, side)
    a = tfr.from_numpy(np.asfortranarray(x))
    with in_flight(gate, lambda: eng.transpose(a, (1, 0))) as result:
        refused_in_use(a.map_write)
    np.testing.assert_array_equal(result[0].to_numpy(), x.T)
    assert not host.reading


def test_the_small_evaluate_hot_path_pins_its_operands(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()

    def waiting_multiply(*args: Any) -> Any:
        gate.hold()
        return np.multiply(*args)

    # The small path's kernel calls the ufuncs the program was compiled with: compile
    # afresh with a multiply that waits.
    monkeypatch.setitem(fusion._BINOPS, ast.Mult, ("*", waiting_multiply, fusion._NUMERIC))
    monkeypatch.setattr(fusion, "_programs", {})
    monkeypatch.setattr(fusion, "_kernels", {})
    monkeypatch.setattr(fusion, "_built", {})
    a, b = t_([1.0, 2.0]), t_([3.0, 4.0])
    with in_flight(gate, lambda: eng.evaluate("a * b + 1", a=a, b=b)) as result:
        refused_in_use(a.map_write)
        refused_in_use(b.map_write)
    assert result[0].to_numpy().tolist() == [4.0, 9.0]
    assert not host.reading
    assert list(fusion._kernels) == ["a * b + 1"]  # it ran on the small path


def test_the_matmul_hot_path_pins_both_operands(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    dot = contraction._dot

    def waiting_dot(*args: Any) -> Any:
        gate.hold()
        return dot(*args)

    monkeypatch.setattr(contraction, "_dot", waiting_dot)
    a = tfr.from_numpy(np.eye(2, order="F"))
    b = tfr.from_numpy(np.ones((2, 2), order="F"))
    with in_flight(gate, lambda: eng.matmul(a, b)) as result:
        refused_in_use(a.map_write)
        refused_in_use(lambda: eng.reclaim_buffer(b))
    assert result[0].to_numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_a_hot_path_that_finds_a_writer_refuses_and_unpins(eng: tfr.CpuEngine) -> None:
    a, b = t_([1.0, 2.0]), t_([3.0, 4.0])
    with b.map_write():
        with pytest.raises(tfr.BorrowError) as err:
            eng.add(a, b)
        assert err.value.kind == "EXCLUSIVELY_BORROWED"
        with pytest.raises(tfr.BorrowError):
            eng.mul(b, 2.0)
    assert not host.reading
    assert eng.add(a, b).to_numpy().tolist() == [4.0, 6.0]


# -- pins end with the operation ---------------------------------------------------------
def test_a_refused_operation_leaves_no_pin_behind(eng: tfr.CpuEngine) -> None:
    a = t_([1.0, 2.0])
    with pytest.raises(tfr.ValidationError):
        eng.add(a, t_([1.0, 2.0, 3.0]))  # pinned, then refused
    with pytest.raises(tfr.ValidationError):
        eng.div(t_([1, 2], np.int64), t_([1, 0], np.int64))
    assert not host.reading
    with a.map_write():
        pass


def test_an_operation_writing_over_its_own_operands_is_not_refused_by_its_own_pins(
    eng: tfr.CpuEngine,
) -> None:
    acc = t_([1.0, 2.0])
    assert eng.add(acc, acc, out=acc) is acc  # acc is pinned twice by this very call
    assert eng.evaluate("acc * acc + 1", acc=acc, out=acc) is acc
    assert acc.to_numpy().tolist() == [5.0, 17.0]


def test_a_reader_that_raced_reclaim_buffer_is_refused(eng: tfr.CpuEngine) -> None:
    a = eng.add(t_([1.0, 2.0]), 1.0)
    st = a._st  # what a reader on another thread read before the move
    eng.reclaim_buffer(a)
    with pytest.raises(tfr.BorrowError) as err, _base.Reads() as reads:
        reads._pin(st, "CpuEngine.add")  # its pin comes after the move was granted
    assert err.value.kind == "EXCLUSIVELY_BORROWED"
    assert not host.reading


# -- out= overlapping an input view ------------------------------------------------------
def test_out_overlapping_an_input_view_is_refused_as_such(eng: tfr.CpuEngine) -> None:
    sq = tfr.from_numpy(np.ones((2, 2), order="F"))
    view = sq.as_view().transpose_view((1, 0))
    with pytest.raises(tfr.BorrowError) as err:
        eng.add(view, sq, out=sq)
    assert err.value.kind == "OUT_ALIASES_INPUT"
    assert "out= overlaps an input; pass a separate out tensor" in str(err.value)
    assert sq.to_numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_the_binary_einsum_fast_path_pins_both_operands(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenferro.engine.einsum import fast

    gate = Gate()
    a, b = t_([[1.0, 2.0], [3.0, 4.0]]), t_([[1.0, 0.0], [0.0, 1.0]])
    eng.einsum("ij,jk->ik", a, b)  # plans and records
    dot = fast._dot

    def waiting(*args: Any) -> Any:
        gate.hold()
        return dot(*args)

    monkeypatch.setattr(fast, "_dot", waiting)
    with in_flight(gate, lambda: eng.einsum("ij,jk->ik", a, b)) as result:
        refused_in_use(a.map_write)
        refused_in_use(b.map_write)
    assert result[0].to_numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert not host.reading


def test_the_frobenius_norm_hot_path_pins_its_matrix(
    eng: tfr.CpuEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenferro.engine.linalg import _kernels

    gate = Gate()
    # The hot path inlines two_norm's common case: one BLAS dot, looked up in
    # the per-dtype parts (`_kernels.dot_parts`).
    parts = _kernels.dot_parts(tfr.DType.F64)
    assert parts is not None
    real_dot = parts.dot

    def waiting_dot(x: Any, y: Any) -> float:
        gate.hold()
        value: float = real_dot(x, y)
        return value

    monkeypatch.setitem(_kernels._dot_parts, tfr.DType.F64, parts._replace(dot=waiting_dot))
    a = t_([[3.0, 0.0], [0.0, 4.0]])
    with in_flight(gate, lambda: eng.matrix_norm(a)) as result:
        refused_in_use(a.map_write)
    assert result[0].to_numpy() == 5.0
    assert not host.reading
