"""A table-driven corpus of bad input over the public API.

Every case must raise a `TenferroError` subclass whose ``op`` names the
operation, and must leave every input as it was (values, writability, moves).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import tenferro as tfr


@dataclass
class World:
    """Fresh inputs for one case, with snapshots to prove nothing changed."""

    data: np.ndarray
    t: tfr.Tensor
    m: tfr.Tensor
    ints: tfr.Tensor
    moved: tfr.Tensor

    @classmethod
    def make(cls) -> World:
        data = np.arange(6.0)
        moved = tfr.Tensor.from_vec_col_major((2,), np.arange(2.0))
        moved.into_vec_col_major()
        return cls(
            data=data,
            t=tfr.Tensor.from_vec_col_major((2, 3), np.arange(6.0)),
            m=tfr.Tensor.from_vec_col_major((3, 2), np.arange(6.0) + 10),
            ints=tfr.Tensor.from_vec_col_major((2, 3), np.arange(6, dtype=np.int64)),
            moved=moved,
        )

    def snapshot(self) -> list[Any]:
        return [
            self.data.copy(),
            self.data.flags.writeable,
            self.t.host_data().copy(),
            self.m.host_data().copy(),
            self.ints.host_data().copy(),
        ]


@dataclass(frozen=True)
class Case:
    name: str
    call: Callable[[World], Any]
    error: type[tfr.TenferroError]
    op: str


ENG = tfr.CpuEngine()


def _zeros_i64() -> tfr.Tensor:
    return tfr.Tensor.from_vec_col_major((2, 3), np.zeros(6, dtype=np.int64))


def _one_entry_group() -> Any:
    return tfr.AllocationGroup.from_tensors([tfr.Tensor.from_vec_col_major((3,), np.ones(3))])


def _gone_handle() -> Any:
    domain = tfr.SharedMemoryDomain()
    owner = domain.allocate(tfr.DType.F64, (4,))
    handle = owner.share_handle()
    del owner  # the owner's last tensor: the segment is unlinked
    return handle


CORE_CASES = [
    Case(
        "from_vec wrong length",
        lambda w: tfr.Tensor.from_vec_col_major((4,), w.data),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec negative shape",
        lambda w: tfr.Tensor.from_vec_col_major((-1, 6), w.data),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec overflowing shape",
        lambda w: tfr.Tensor.from_vec_col_major((2**62, 2**62), w.data),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec float shape",
        lambda w: tfr.Tensor.from_vec_col_major((2.0, 3), w.data),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec 2-D data",
        lambda w: tfr.Tensor.from_vec_col_major((6,), w.data.reshape(2, 3)),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec unsupported dtype",
        lambda w: tfr.Tensor.from_vec_col_major((6,), w.data.astype(np.float16)),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec dtype mismatch",
        lambda w: tfr.Tensor.from_vec_col_major((6,), w.data, dtype=tfr.DType.F32),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec strided data",
        lambda w: tfr.Tensor.from_vec_col_major((3,), w.data[::2]),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec text",
        lambda w: tfr.Tensor.from_vec_col_major((1,), "abc"),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "from_vec_row_major wrong length",
        lambda w: tfr.Tensor.from_vec_row_major((5,), w.data),
        tfr.ValidationError,
        "Tensor.from_vec_row_major",
    ),
    Case(
        "from_numpy C-order without copy",
        lambda w: tfr.from_numpy(w.data.reshape(2, 3)),
        tfr.ValidationError,
        "tenferro.from_numpy",
    ),
    Case(
        "from_numpy list without copy",
        lambda w: tfr.from_numpy([1.0, 2.0]),
        tfr.ValidationError,
        "tenferro.from_numpy",
    ),
    Case(
        "transpose_view bad permutation",
        lambda w: w.t.as_view().transpose_view((0, 0)),
        tfr.ValidationError,
        "TensorView.transpose_view",
    ),
    Case(
        "slice_view index out of range",
        lambda w: w.t.as_view().slice_view((5, 0)),
        tfr.ValidationError,
        "TensorView.slice_view",
    ),
    Case(
        "slice_view zero step",
        lambda w: w.t.as_view().slice_view(slice(None, None, 0)),
        tfr.ValidationError,
        "TensorView.slice_view",
    ),
    Case(
        "slice_view too many indices",
        lambda w: w.t.as_view().slice_view((0, 0, 0)),
        tfr.ValidationError,
        "TensorView.slice_view",
    ),
    Case(
        "reshape_view of a strided view",
        lambda w: w.t.as_view().transpose_view((1, 0)).reshape_view((6,)),
        tfr.ValidationError,
        "TensorView.reshape_view",
    ),
    Case(
        "reshape_view wrong size",
        lambda w: w.t.as_view().reshape_view((4,)),
        tfr.ValidationError,
        "TensorView.reshape_view",
    ),
    Case(
        "as_real_view of a real tensor",
        lambda w: w.t.as_view().as_real_view(),
        tfr.ValidationError,
        "TensorView.as_real_view",
    ),
    Case(
        "duplicate of a strided view",
        lambda w: w.t.as_view().slice_view((slice(None), slice(None, None, 2))).duplicate(),
        tfr.ValidationError,
        "TensorView.duplicate",
    ),
    Case(
        "get with too few indices",
        lambda w: w.t.as_view().get((0,)),
        tfr.ValidationError,
        "TensorView.get",
    ),
    Case("moved tensor shape", lambda w: w.moved.shape, tfr.MovedTensorError, "Tensor.shape"),
    Case(
        "moved tensor host_data",
        lambda w: w.moved.host_data(),
        tfr.MovedTensorError,
        "Tensor.host_data",
    ),
    Case(
        "moved tensor duplicate",
        lambda w: w.moved.duplicate(),
        tfr.MovedTensorError,
        "Tensor.duplicate",
    ),
    Case(
        "moved tensor map_write",
        lambda w: w.moved.map_write(),
        tfr.MovedTensorError,
        "Tensor.map_write",
    ),
    Case(
        "pickling a tensor",
        lambda w: __import__("pickle").dumps(w.t),
        tfr.BorrowError,
        "Tensor.__reduce__",
    ),
    Case(
        "array copy=False with dtype change",
        lambda w: w.t.__array__(np.float32, copy=False),
        tfr.ValidationError,
        "Tensor.__array__",
    ),
    Case(
        "from_dlpack copy=False of row-major",
        lambda w: tfr.from_dlpack(np.ones((2, 3)), copy=False),
        tfr.InteropError,
        "tenferro.from_dlpack",
    ),
]


ENGINE_CASES = [
    Case(
        "matmul inner dims differ",
        lambda w: ENG.matmul(w.t, w.t),
        tfr.ValidationError,
        "CpuEngine.matmul",
    ),
    Case(
        "matmul dtypes differ",
        lambda w: ENG.matmul(w.ints, w.m),
        tfr.ValidationError,
        "CpuEngine.matmul",
    ),
    Case("add shapes differ", lambda w: ENG.add(w.t, w.m), tfr.ValidationError, "CpuEngine.add"),
    Case("add dtypes differ", lambda w: ENG.add(w.t, w.ints), tfr.ValidationError, "CpuEngine.add"),
    Case("add a string", lambda w: ENG.add(w.t, "x"), tfr.ValidationError, "CpuEngine.add"),
    Case(
        "integer division by zero",
        lambda w: ENG.div(w.ints, _zeros_i64()),
        tfr.ValidationError,
        "CpuEngine.div",
    ),
    Case(
        "reduce over a missing axis",
        lambda w: ENG.reduce_sum(w.t, (5,)),
        tfr.ValidationError,
        "CpuEngine.reduce_sum",
    ),
    Case(
        "reduce over duplicate axes",
        lambda w: ENG.reduce_max(w.t, (0, 0)),
        tfr.ValidationError,
        "CpuEngine.reduce_max",
    ),
    Case(
        "transpose bad permutation",
        lambda w: ENG.transpose(w.t, (0,)),
        tfr.ValidationError,
        "CpuEngine.transpose",
    ),
    Case(
        "reshape wrong size",
        lambda w: ENG.reshape(w.t, (4,)),
        tfr.ValidationError,
        "CpuEngine.reshape",
    ),
    Case(
        "broadcast incompatible dims",
        lambda w: ENG.broadcast_in_dim(w.t, (3, 3), (0, 1)),
        tfr.ValidationError,
        "CpuEngine.broadcast_in_dim",
    ),
    Case(
        "lossy convert",
        lambda w: ENG.convert(w.t, tfr.DType.BOOL),
        tfr.ValidationError,
        "CpuEngine.convert",
    ),
    Case(
        "einsum dims differ",
        lambda w: ENG.einsum("ij,jk->ik", w.t, w.t),
        tfr.ValidationError,
        "CpuEngine.einsum",
    ),
    Case(
        "einsum unknown output index",
        lambda w: ENG.einsum("ij->q", w.t),
        tfr.ValidationError,
        "CpuEngine.einsum",
    ),
    Case(
        "dot_general duplicate axes",
        lambda w: ENG.dot_general(w.t, w.m, contracting=((1, 1), (0, 0))),
        tfr.ValidationError,
        "CpuEngine.dot_general",
    ),
    Case(
        "evaluate unsupported expression",
        lambda w: ENG.evaluate("a.sum()", a=w.t),
        tfr.ValidationError,
        "CpuEngine.evaluate",
    ),
    Case(
        "evaluate unknown name",
        lambda w: ENG.evaluate("a + b", a=w.t),
        tfr.ValidationError,
        "CpuEngine.evaluate",
    ),
    Case(
        "out of the wrong shape",
        lambda w: ENG.add(w.t, w.t, out=w.m),
        tfr.ValidationError,
        "CpuEngine.add",
    ),
    Case(
        "out while aliased",
        lambda w: (lambda keep: ENG.add(w.m, w.m, out=w.m))(w.m.host_data()),
        tfr.BorrowError,
        "CpuEngine.add",
    ),
    Case(
        "engine with zero threads",
        lambda w: tfr.CpuEngine(threads=0),
        tfr.ValidationError,
        "CpuEngine",
    ),
    Case(
        "reclaim a non-tensor",
        lambda w: ENG.reclaim_buffer(3),
        tfr.ValidationError,
        "CpuEngine.reclaim_buffer",
    ),
    Case(
        "reclaim an aliased tensor",
        lambda w: (lambda keep: ENG.reclaim_buffer(w.t))(w.t.host_data()),
        tfr.BorrowError,
        "CpuEngine.reclaim_buffer",
    ),
    Case(
        "concatenate mismatched shapes",
        lambda w: ENG.concatenate([w.t, w.m], 0),
        tfr.ValidationError,
        "CpuEngine.concatenate",
    ),
    Case(
        "moved tensor into the engine",
        lambda w: ENG.add(w.moved, w.moved),
        tfr.MovedTensorError,
        "CpuEngine.add",
    ),
]

GROUP_AND_DOMAIN_CASES = [
    Case(
        "take an out-of-range slot",
        lambda w: _one_entry_group()[0].take_tensor(5),
        tfr.GroupError,
        "AllocationGroup.take_tensor",
    ),
    Case(
        "read an out-of-range slot",
        lambda w: _one_entry_group()[0].read_view(7),
        tfr.GroupError,
        "AllocationGroup.read_view",
    ),
    Case(
        "group a non-tensor",
        lambda w: tfr.AllocationGroup.from_tensors([w.t, 3]),
        tfr.ValidationError,
        "AllocationGroup.from_tensors",
    ),
    Case(
        "group an aliased tensor",
        lambda w: (lambda keep: tfr.AllocationGroup.from_tensors([w.m, w.t]))(w.t.host_data()),
        tfr.BorrowError,
        "AllocationGroup.from_tensors",
    ),
    Case(
        "group a moved tensor",
        lambda w: tfr.AllocationGroup.from_tensors([w.t, w.moved]),
        tfr.MovedTensorError,
        "AllocationGroup.from_tensors",
    ),
    Case(
        "promote an aliased tensor",
        lambda w: (lambda keep: w.t.promote())(w.t.host_data()),
        tfr.BorrowError,
        "Tensor.promote",
    ),
    Case(
        "descriptor past the owner's end",
        lambda w: (
            lambda g: g[0].add_descriptor(
                owner_of=g[1][0], dtype=tfr.DType.F64, shape=(10,), byte_offset=0
            )
        )(_one_entry_group()),
        tfr.AccessError,
        "AllocationGroup.add_descriptor",
    ),
    Case(
        "domain allocate unsupported dtype",
        lambda w: tfr.SharedMemoryDomain().allocate(np.float16, (3,)),
        tfr.ValidationError,
        "SharedMemoryDomain.allocate",
    ),
    Case(
        "domain allocate negative shape",
        lambda w: tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (-3,)),
        tfr.ValidationError,
        "SharedMemoryDomain.allocate",
    ),
    Case(
        "share a plain host tensor",
        lambda w: w.t.share_handle(),
        tfr.RuntimeStateError,
        "Tensor.share_handle",
    ),
    Case(
        "attach after the owner closed the segment",
        lambda w: tfr.SharedMemoryDomain.attach(_gone_handle()),
        tfr.HostAccessError,
        "SharedMemoryDomain.attach",
    ),
]


def _check(case: Case) -> None:
    world = World.make()
    before = world.snapshot()
    with pytest.raises(tfr.TenferroError) as info:
        case.call(world)
    err = info.value
    assert isinstance(err, case.error), f"{case.name}: got {type(err).__name__}: {err}"
    assert err.op == case.op, f"{case.name}: op {err.op!r}"
    assert str(err).startswith(f"{case.op}: ")
    del info, err
    after = world.snapshot()
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    for t in (world.t, world.m, world.ints):
        assert not t.is_moved


@pytest.mark.parametrize("case", CORE_CASES, ids=lambda c: c.name)
def test_core_bad_input_raises_typed_error_and_changes_nothing(case: Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", ENGINE_CASES, ids=lambda c: c.name)
def test_engine_bad_input_raises_typed_error_and_changes_nothing(case: Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", GROUP_AND_DOMAIN_CASES, ids=lambda c: c.name)
def test_group_and_domain_bad_input_raises_typed_error_and_changes_nothing(case: Case) -> None:
    _check(case)


# Issue 8: inputs that raised raw Python exceptions (TypeError, OverflowError,
# SyntaxError, RecursionError, MemoryError) before they were typed.
def _pickle_view(w: World) -> Any:
    import pickle

    return pickle.dumps(w.t.as_view())


TYPED_FAILURE_CASES = [
    Case(
        "Fraction scalar with a wrong out=",
        lambda w: ENG.mul(w.t, __import__("fractions").Fraction(1, 3), out=w.m),
        tfr.ValidationError,
        "CpuEngine.mul",
    ),
    Case(
        "threads beyond numexpr's cap",
        lambda w: tfr.CpuEngine(threads=2**62),
        tfr.ValidationError,
        "CpuEngine",
    ),
    Case(
        "dtype string numpy parses as an int literal",
        lambda w: tfr.Tensor.from_vec_col_major((2,), [1.0, 2.0], dtype="09"),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "dtype string numpy parses as a broken tuple",
        lambda w: tfr.Tensor.from_vec_col_major((2,), [1.0, 2.0], dtype="(o,K"),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "__array__ with a dtype that is not one",
        lambda w: w.t.__array__(dtype="09"),
        tfr.ValidationError,
        "Tensor.__array__",
    ),
    Case(
        "building floats into an int dtype loses the fraction",
        lambda w: tfr.Tensor.from_vec_col_major((2,), [1.5, 2.0], dtype="int64"),
        tfr.ValidationError,
        "Tensor.from_vec_col_major",
    ),
    Case(
        "evaluate a constant power beyond any float",
        lambda w: ENG.evaluate("t + 2 ** (10 ** 400)", t=w.t),
        tfr.ValidationError,
        "CpuEngine.evaluate",
    ),
    Case(
        "evaluate a 5000-deep expression",
        lambda w: ENG.evaluate("-" * 5000 + "t", t=w.t),
        tfr.ValidationError,
        "CpuEngine.evaluate",
    ),
    Case(
        "pickle a view",
        _pickle_view,
        tfr.BorrowError,
        "TensorView.__reduce__",
    ),
    Case(
        "output larger than memory",
        lambda w: ENG.broadcast_in_dim(w.t, (2, 3, 2**56), (0, 1)),
        tfr.OutOfMemoryError,
        "BufferPool.acquire",
    ),
]


@pytest.mark.parametrize("case", TYPED_FAILURE_CASES, ids=lambda c: c.name)
def test_formerly_raw_failures_raise_typed_errors_and_change_nothing(case: Case) -> None:
    _check(case)
