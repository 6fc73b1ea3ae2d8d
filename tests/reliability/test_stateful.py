"""A hypothesis state machine over one engine: create, view, borrow, compute, group,
take, move, reclaim and drop tensors in random order.

After every step it checks the promises the runtime makes:

* no live alias (host_data array, view, DLPack-free numpy view) ever sees its
  values change, and arrays handed back by ``into_vec_col_major`` keep theirs;
* every live tensor holds exactly the values the model expects;
* the pool's stats equal the buffers it actually retains, retained bytes never
  exceed the cap, and no retained buffer is memory a live tensor or alias sees;
* every refused call raised a typed `TenferroError` and changed nothing.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import tenferro as tfr

SHAPES = [(9,), (3, 3)]
LIMIT = 4 * 9 * 8  # room for four 9-element f64 buffers: eviction happens often


# eq=False: entries are removed by identity; comparing their tensors with ==
# would be elementwise (Tensor.__eq__ is the array API's).
@dataclass(eq=False)
class Entry:
    tensor: tfr.Tensor
    expected: np.ndarray  # column-major flat values
    grouped: bool = False
    aliases: int = 0  # live aliases this model handed out for this tensor


@dataclass(eq=False)
class Alias:
    # INVARIANT: an alias must not keep its tensor alive (the tensor may be dropped
    # while the alias lives: that is the case the pool must get right), so it
    # refers to its entry only through a weak count kept on the entry.
    owner: Any  # weakref.ref to the Entry
    read: Any  # () -> current flat values
    snapshot: np.ndarray
    keep: Any  # the object whose life is the alias


@dataclass
class GroupEntry:
    group: Any
    slots: list[Any]
    expected: list[np.ndarray]
    taken: set[int] = field(default_factory=set)


class OwnershipMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.eng = tfr.CpuEngine(buffer_limit_bytes=LIMIT)
        self.entries: list[Entry] = []
        self.aliases: list[Alias] = []
        self.returned: list[tuple[np.ndarray, np.ndarray]] = []
        self.groups: list[GroupEntry] = []

    # -- helpers -------------------------------------------------------------------------
    def _pick(self, i: int) -> Entry:
        e = self.entries[i % len(self.entries)]
        return e

    def _add(self, t: tfr.Tensor, expected: np.ndarray, grouped: bool = False) -> None:
        self.entries.append(Entry(t, np.asarray(expected, dtype=np.float64).copy(), grouped))

    def _expect_refusal(self, call: Any, *kinds: type[tfr.TenferroError]) -> None:
        before = [e.tensor.host_data().copy() for e in self.entries]
        try:
            call()
        except tfr.TenferroError as exc:
            assert isinstance(exc, kinds), f"{type(exc).__name__}: {exc}"
            assert exc.op
        else:
            raise AssertionError("the call should have been refused")
        for e, b in zip(self.entries, before, strict=True):
            assert not e.tensor.is_moved
            np.testing.assert_array_equal(e.tensor.host_data(), b)

    # -- rules ---------------------------------------------------------------------------
    @rule(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**16))
    def create(self, shape: tuple[int, ...], seed: int) -> None:
        values = np.random.default_rng(seed).standard_normal(9)
        self._add(tfr.Tensor.from_vec_col_major(shape, values.copy()), values)

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99), j=st.integers(0, 99), op=st.sampled_from(["add", "mul"]))
    def compute_elementwise(self, i: int, j: int, op: str) -> None:
        a, b = self._pick(i), self._pick(j)
        if a.tensor.shape != b.tensor.shape:
            self._expect_refusal(
                lambda: getattr(self.eng, op)(a.tensor, b.tensor), tfr.ValidationError
            )
            return
        out = getattr(self.eng, op)(a.tensor, b.tensor)
        self._add(out, getattr(np, "add" if op == "add" else "multiply")(a.expected, b.expected))

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99), j=st.integers(0, 99))
    def compute_matmul(self, i: int, j: int) -> None:
        a, b = self._pick(i), self._pick(j)
        if a.tensor.shape != (3, 3) or b.tensor.shape != (3, 3):
            return
        out = self.eng.matmul(a.tensor, b.tensor)
        am = a.expected.reshape(3, 3, order="F")
        bm = b.expected.reshape(3, 3, order="F")
        self._add(out, (am @ bm).reshape(-1, order="F"))

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99))
    def compute_structural(self, i: int) -> None:
        a = self._pick(i)
        if a.tensor.shape == (3, 3):
            out = self.eng.transpose(a.tensor, (1, 0))
            self._add(out, a.expected.reshape(3, 3, order="F").T.reshape(-1, order="F"))
        else:
            out = self.eng.reduce_sum(a.tensor, None)
            assert np.isclose(out.host_data()[0], a.expected.sum())

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99), how=st.sampled_from(["host_data", "view", "asarray"]))
    def borrow(self, i: int, how: str) -> None:
        e = self._pick(i)
        if how == "host_data":
            arr = e.tensor.host_data()
            alias = Alias(weakref.ref(e), lambda arr=arr: arr, arr.copy(), arr)
        elif how == "view":
            view = e.tensor.as_view()
            if view.ndim == 2:
                view = view.transpose_view((1, 0))
            alias = Alias(
                weakref.ref(e),
                lambda v=view: v.to_numpy().reshape(-1),
                view.to_numpy().copy().reshape(-1),
                view,
            )
        else:
            arr = np.asarray(e.tensor)
            alias = Alias(
                weakref.ref(e),
                lambda arr=arr: arr.reshape(-1, order="F"),
                arr.reshape(-1, order="F").copy(),
                arr,
            )
        e.aliases += 1
        self.aliases.append(alias)

    @precondition(lambda self: len(self.aliases) >= 1)
    @rule(i=st.integers(0, 99))
    def drop_alias(self, i: int) -> None:
        alias = self.aliases.pop(i % len(self.aliases))
        owner = alias.owner()
        if owner is not None:
            owner.aliases -= 1

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99), value=st.floats(-10, 10))
    def write(self, i: int, value: float) -> None:
        e = self._pick(i)
        if e.aliases:
            self._expect_refusal(e.tensor.map_write, tfr.BorrowError)
            return
        with e.tensor.map_write() as w:
            w.array[...] = value
        e.expected[:] = value

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99))
    def move_out(self, i: int) -> None:
        e = self._pick(i)
        if e.aliases:
            self._expect_refusal(e.tensor.into_vec_col_major, tfr.BorrowError)
            return
        try:
            _, vec = e.tensor.into_vec_col_major()
        except tfr.TenferroError:
            # A group-backed tensor may refuse; the refusal must change nothing.
            assert e.grouped and not e.tensor.is_moved
            np.testing.assert_array_equal(e.tensor.host_data(), e.expected)
            return
        np.testing.assert_array_equal(vec, e.expected)
        self.entries.remove(e)
        self.returned.append((vec, vec.copy()))

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99))
    def reclaim(self, i: int) -> None:
        e = self._pick(i)
        if e.grouped:
            self._expect_refusal(lambda: self.eng.reclaim_buffer(e.tensor), tfr.RuntimeStateError)
            return
        if e.aliases:
            self._expect_refusal(lambda: self.eng.reclaim_buffer(e.tensor), tfr.BorrowError)
            return
        self.eng.reclaim_buffer(e.tensor)
        assert e.tensor.is_moved
        self.entries.remove(e)

    @precondition(lambda self: len(self.entries) >= 1)
    @rule(i=st.integers(0, 99))
    def drop_tensor(self, i: int) -> None:
        e = self._pick(i)
        self.entries.remove(e)
        # Aliases keep the memory alive; the model keeps checking them.

    @precondition(lambda self: len(self.entries) >= 2)
    @rule(i=st.integers(0, 99), j=st.integers(0, 99))
    def group(self, i: int, j: int) -> None:
        a, b = self._pick(i), self._pick(j)
        if a is b or a.grouped or b.grouped:
            return
        if a.aliases or b.aliases:
            self._expect_refusal(
                lambda: tfr.AllocationGroup.from_tensors([a.tensor, b.tensor]), tfr.BorrowError
            )
            return
        group, slots = tfr.AllocationGroup.from_tensors([a.tensor, b.tensor])
        assert a.tensor.is_moved and b.tensor.is_moved
        self.entries.remove(a)
        self.entries.remove(b)
        self.groups.append(GroupEntry(group, list(slots), [a.expected, b.expected]))

    @precondition(lambda self: len(self.groups) >= 1)
    @rule(g=st.integers(0, 99), k=st.integers(0, 1))
    def take(self, g: int, k: int) -> None:
        ge = self.groups[g % len(self.groups)]
        if k in ge.taken:
            before = (ge.group.allocation_count, ge.group.descriptor_count)
            try:
                ge.group.take_tensor(ge.slots[k])
            except tfr.GroupError as exc:
                assert exc.kind == "DESCRIPTOR_SLOT_VACANT"
            else:
                raise AssertionError("a second take must be refused")
            assert (ge.group.allocation_count, ge.group.descriptor_count) == before
            return
        t = ge.group.take_tensor(ge.slots[k])
        ge.taken.add(k)
        self._add(t, ge.expected[k], grouped=True)

    @precondition(lambda self: len(self.groups) >= 1)
    @rule(g=st.integers(0, 99))
    def read_group(self, g: int) -> None:
        ge = self.groups[g % len(self.groups)]
        for k, slot in enumerate(ge.slots):
            if k in ge.taken:
                continue
            view = ge.group.read_view(slot)
            np.testing.assert_array_equal(view.to_numpy().reshape(-1, order="F"), ge.expected[k])

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def aliases_never_change(self) -> None:
        for alias in self.aliases:
            np.testing.assert_array_equal(alias.read(), alias.snapshot)
        for vec, snap in self.returned:
            np.testing.assert_array_equal(vec, snap)

    @invariant()
    def tensors_hold_expected_values(self) -> None:
        for e in self.entries:
            np.testing.assert_allclose(e.tensor.host_data(), e.expected, rtol=1e-12)

    @invariant()
    def pool_stats_match_what_is_retained(self) -> None:
        stats = self.eng.buffer_pool_stats()
        retained = self.eng._pool.retained_addresses()
        assert stats.buffers == len(retained)
        assert stats.capacity_bytes <= self.eng.buffer_pool_limit_bytes
        live = {int(e.tensor.host_data().ctypes.data) for e in self.entries}
        live |= {int(np.asarray(a.read()).ctypes.data) for a in self.aliases}
        live |= {int(vec.ctypes.data) for vec, _ in self.returned}
        assert not (live & set(retained)), "the pool retains memory someone can still see"


OwnershipMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_ownership_machine = OwnershipMachine.TestCase
