"""`HostBuffer`: one 1-D host buffer, its recycler, its roots and its borrow state.

This is the storage of a plain host tensor (the seed's ``HostData``) and the host
root of an allocation-group owner. It owns three arrays over the same memory:

* ``owner``: the allocation itself (a pool buffer whose capacity may exceed the
  tensor's size, or a writable array over an adopted caller buffer);
* ``flat``: the first ``length`` elements, writable, library-internal, never handed
  out (kernels write through it with ``out=``);
* ``_root``: created lazily on the first shared borrow, read-only and un-flippable;
  every read-only array handed out is sliced from it, so its reference count is
  the number of live aliases (see `tenferro.borrow`).
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from typing import Any

import numpy as np

from ..borrow import make_read_root, make_write_root, seal_write_root
from ..errors import BorrowError
from ._fields import BufferFields
from .recycler import Recycler

__all__ = ["HostBuffer"]

_getrefcount = sys.getrefcount
_getweakrefcount = weakref.getweakrefcount

# Guards the rare state changes (lazy root creation, borrow begin/end, the stale
# list); shared-borrow hot paths never take it. Re-entrant: `gc.collect` in
# `_refuse_if_aliased` may run another buffer's `__del__` on this thread.
_lock = threading.RLock()

#: Engine reads in flight on the general path (`engine._base.Reads`), in every
#: thread: one entry per pin, a `HostBuffer` or a tuple of them. Kernels read
#: ``HostBuffer.flat`` directly, without an alias, so this and the compiled core's
#: per-buffer count (``BufferFields.core_pins``, C increments that are atomic under
#: the GIL) are how writers and moves learn that a buffer is being read
#: (`HostBuffer.readers`). Pins here are single ``append``/``remove`` calls, atomic
#: under the GIL (an int's ``+= 1`` in Python is not: two threads could lose an
#: update), and neither costs an engine output anything: only the operations that
#: read pay.
reading: list[Any] = []


class HostBuffer(BufferFields):
    """A host buffer with an optional weak link to the pool that should get it back.

    Its fields (``owner``, ``flat``, ``recycler``, ``origin``, ``_root``, ``_stale``,
    ``exclusive``, ``failed_read``) are C members of the compiled `BufferFields`
    (storage/_fields.pyx), as is the finalizer's common case; the rules are here.
    """

    __slots__ = ("__weakref__", "frozen")

    # Set only by adoption (unset elsewhere, so engine outputs pay nothing for it):
    # every array adoption froze, the caller's array first and then its ndarray
    # bases outwards; releasing the buffer thaws exactly these, outermost first.
    frozen: tuple[np.ndarray[Any, Any], ...]

    def __init__(
        self,
        owner: np.ndarray[Any, Any],
        flat: np.ndarray[Any, Any],
        recycler: weakref.ref[Recycler] | None = None,
        origin: np.ndarray[Any, Any] | None = None,
    ) -> None:
        self.owner = owner
        self.flat = flat
        self.recycler = recycler
        # The caller's adopted array, frozen (read-only) while we own the memory.
        self.origin = origin
        self._root: np.ndarray[Any, Any] | None = None
        # Writable roots of ended exclusive borrows that still had aliases.
        self._stale: list[np.ndarray[Any, Any]] | None = None
        # Name of the operation holding an exclusive borrow, or None.
        self.exclusive: str | None = None
        # Set when an engine call that read this buffer raised: its traceback may
        # keep an internal array over the memory (see `_held_elsewhere`).
        self.failed_read = False

    # -- identity ----------------------------------------------------------------
    @property
    def address(self) -> int:
        """The address of the first element (what `host_data()` points at)."""
        return int(self.flat.ctypes.data)

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self.flat.dtype
        return dtype

    def __len__(self) -> int:
        return int(self.flat.shape[0])

    # -- alias accounting -----------------------------------------------------------
    def _root_refs(self) -> int:
        # Measured with exactly this access pattern at import time (`_ROOT_BASELINE`).
        return _getrefcount(self._root)

    def alias_count(self) -> int:
        """Live arrays or views (handed out by tenferro) that can see this memory.

        Exact and cheap (no garbage collection); `check_exclusive` also collects
        unreachable cycles before refusing.
        """
        n = 0
        if self._root is not None:
            n = self._root_refs() - _ROOT_BASELINE
        if self._stale:
            n += self._stale_aliases()
        return n

    def _stale_aliases(self) -> int:
        with _lock:
            stale = self._stale
            if not stale:
                return 0
            counts = _stale_refs(stale)
            alive = [root for root, c in zip(stale, counts, strict=True) if c > _STALE_BASELINE]
            self._stale = alive or None
            return sum(c - _STALE_BASELINE for c in counts if c > _STALE_BASELINE)

    # -- shared borrows ---------------------------------------------------------------
    def read_root(self) -> np.ndarray[Any, Any]:
        """The read-only root; every shared borrow is a view of it."""
        root = self._root
        if root is None:
            with _lock:
                # INVARIANT: one root per buffer, ever; two racing readers must not
                # each build one (an alias of the loser would go uncounted).
                root = self._root
                if root is None:
                    root = self._root = make_read_root(self.flat)
        return root

    def read_flat(self, dtype: np.dtype[Any], offset: int, count: int) -> np.ndarray[Any, Any]:
        """A read-only 1-D alias of ``count`` elements of ``dtype`` from element ``offset``."""
        root = self._root
        if root is None:
            root = self.read_root()
        # INVARIANT: always a new array, never the root itself: the counted object
        # is never handed out (a weak reference to a handed-out array could
        # otherwise revive the root after `__del__` counted it).
        if dtype != root.dtype:
            view = root.view(dtype)  # a new array whose base is the root
            if offset == 0 and count == view.shape[0]:
                return view
            return view[offset : offset + count]
        if offset == 0 and count == root.shape[0]:
            return root.view()
        return root[offset : offset + count]

    def check_shared(self, op: str) -> None:
        """Refuse a shared borrow while an exclusive borrow is active."""
        holder = self.exclusive
        if holder is not None:
            raise shared_refusal(op, holder)

    # -- engine reads -------------------------------------------------------------------
    def pin(self) -> None:
        """Count an engine operation as reading this buffer until `unpin` (see `reading`).

        INVARIANT (the mirror of `begin_exclusive`'s): a reader pins *before* it
        checks ``exclusive``, and a writer sets ``exclusive`` *before* it counts
        pins, so either the writer sees the pin (and is refused, IN_USE) or the
        reader sees the flag (and is refused). The compiled core pins with its own
        count (`core_pins`) under the same invariant.
        """
        reading.append(self)

    def unpin(self) -> None:
        """End one engine read started by `pin`."""
        reading.remove(self)

    def mark_failed(self) -> None:
        """Note that an engine call reading this buffer raised (see `_held_elsewhere`)."""
        self.failed_read = True

    def readers(self) -> int:
        """Engine operations reading this buffer now (pins held): the compiled core's
        (`core_pins`) and the general path's (`reading`)."""
        n = self.core_pins
        if not reading:
            return n
        # One atomic copy: other threads may pin and unpin while we count.
        for entry in reading[:]:
            if entry is self:
                n += 1
            elif entry.__class__ is tuple:
                n += entry.count(self)  # HostBuffer has no __eq__: identity
        return n

    def _refuse_if_in_use(self, op: str, own_pins: int = 0) -> None:
        # ``own_pins``: pins held by the caller itself (an elementwise operation
        # writing over one of its own operands), which must not refuse it.
        readers = self.readers() - own_pins
        if readers > 0:
            raise BorrowError(
                op,
                f"{readers} engine operation(s) on another thread are reading this buffer; "
                "wait for them to finish (join or synchronise the threads) before writing "
                "or moving it",
                kind="IN_USE",
                readers=readers,
            )

    # -- exclusive borrows --------------------------------------------------------------
    def _refuse_if_aliased(self, op: str, own_aliases: int = 0) -> None:
        # ``own_aliases``: aliases the caller itself holds (a view writing through
        # its own alias, `namespace._adapter.write`), which must not refuse it.
        aliases = self.alias_count() - own_aliases
        if aliases > 0:
            # An alias that only unreachable garbage (a reference cycle, e.g. a
            # traceback kept in a frame) still holds can never be used again: collect
            # before refusing. Young generations only: a full collection costs
            # ~100 ms in a big heap, and refusals may be retried in a loop.
            gc.collect(1)
            aliases = self.alias_count() - own_aliases
        if aliases > 0:
            raise BorrowError(
                op,
                f"{aliases} live alias(es) of this buffer (arrays from host_data/map_read/"
                "to_numpy, views or guards) are still alive; delete them (del, or leave "
                "their with-block) before writing (in a REPL or notebook the result "
                "history _, __, ___ and IPython's Out hold arrays too: reassign _ or run "
                "Out.clear())",
                kind="ALIASED",
                aliases=aliases,
            )

    def check_exclusive(self, op: str) -> None:
        """Refuse exclusive access while any alias is alive, an engine operation is
        reading the buffer, or another borrow is active."""
        holder = self.exclusive
        if holder is not None:
            raise BorrowError(
                op,
                f"the buffer is already exclusively borrowed by {holder}; leave that block first",
                kind="EXCLUSIVELY_BORROWED",
                holder=holder,
            )
        self._refuse_if_in_use(op)
        self._refuse_if_aliased(op)

    def begin_move(self, op: str) -> None:
        """Claim the buffer for a move that cannot fail afterwards (`reclaim_buffer`).

        Refused like an exclusive borrow. Granted, the buffer stays marked as
        borrowed by ``op`` for good: a reader on another thread that still holds
        this buffer from before the move is refused instead of reading memory
        that has a new owner.
        """
        self._claim(op)

    def _claim(self, op: str, own_pins: int = 0, own_aliases: int = 0) -> None:
        """Mark the buffer as borrowed by ``op``, or refuse and change nothing.

        ``own_pins`` and ``own_aliases`` as for `begin_exclusive`.
        """
        with _lock:
            if self.exclusive is not None:
                self.check_exclusive(op)  # raises EXCLUSIVELY_BORROWED
            # INVARIANT: `exclusive` is set *before* aliases and engine pins are
            # counted, and readers check it *after* making their alias or pin, so a
            # reader racing with this borrow is either counted here or refused there
            # (see `pin`).
            self.exclusive = op
        # Counted outside the lock: the garbage collection a refusal may run calls
        # finalizers (a pool's recycle takes the pool's lock), which must never
        # wait while this lock is held.
        try:
            self._refuse_if_in_use(op, own_pins)
            self._refuse_if_aliased(op, own_aliases)
        except BaseException:
            self.exclusive = None  # a refused borrow or move changes nothing
            raise

    def begin_exclusive(
        self, op: str, own_pins: int = 0, own_aliases: int = 0
    ) -> np.ndarray[Any, Any]:
        """Start an exclusive borrow; returns a fresh writable root for this borrow.

        ``own_pins``: engine reads of this buffer held by the caller itself (an
        elementwise ``out=`` that is also an operand); any other pin refuses.
        ``own_aliases``: counted aliases the caller itself holds (a view writing
        through itself); any other alias refuses.
        """
        if not self.flat.flags.writeable:
            # A read-only mapping (a shared-memory tensor attached from another
            # process): a write root over it would write to read-only pages.
            raise BorrowError(
                op,
                "this buffer is a read-only mapping (e.g. a shared-memory tensor attached "
                "from another process) and cannot be borrowed for writing; write in the "
                "owning process, or download() a host copy and write that",
                kind="READ_ONLY",
            )
        self._claim(op, own_pins, own_aliases)
        try:
            return make_write_root(self.flat)
        except BaseException:
            self.exclusive = None  # no root, no borrow
            raise

    def end_exclusive(self, wroot: np.ndarray[Any, Any], handed: list[Any]) -> None:
        """End an exclusive borrow: arrays handed out become read-only; escapes are tracked."""
        for ref in handed:
            arr = ref()
            if arr is not None:
                arr.flags.writeable = False
        arr = None  # the loop variable must not outlive the loop as an alias
        seal_write_root(wroot)
        with _lock:
            # Arrays that escaped the borrow keep references to `wroot`; counting
            # them is deferred to `alias_count`, which drops roots nobody holds.
            if self._stale is None:
                self._stale = [wroot]
            else:
                self._stale.append(wroot)
            self.exclusive = None

    # -- recycling -----------------------------------------------------------------------
    def detach_recycler(self) -> None:
        self.recycler = None

    def _memory_refs(self) -> tuple[int, int]:
        # Measured with exactly this access pattern at import time (`_OWNER_BASELINE`,
        # `_FLAT_BASELINE`): references to the allocation and to `flat`.
        return _getrefcount(self.owner), _getrefcount(self.flat)

    def _held_elsewhere(self) -> bool:
        """Does an internal array over this memory live outside the buffer?

        Asked only of a buffer a failed engine call read (``failed_read``): kernels
        read ``flat`` without an alias (no root), so an array a failed call left
        in a traceback's frames (``flat`` itself, or a reshape of it, whose
        ``base`` is the allocation) is seen only here: as a reference to ``owner``
        or ``flat`` beyond the buffer's own (its two fields, ``flat.base``, and the
        ``_keep`` of each root's holder). Such a buffer is never pooled: its
        memory must not be handed to another tensor while that array lives. This
        is the whole failure policy for operands (docs/internals.md, "Failure
        policy"): a refused or failed call changes nothing about its operands,
        and only an array that actually outlives the call keeps a buffer out of
        the pool.
        """
        owner_refs, flat_refs = self._memory_refs()
        keep = (self._root is not None) + (len(self._stale) if self._stale else 0)
        if self.flat is self.owner:
            return owner_refs - keep > _SAME_BASELINE
        return owner_refs > _OWNER_BASELINE or flat_refs - keep > _FLAT_BASELINE

    def _forget_if_held_elsewhere(self, pool: Recycler) -> bool:
        """The finalizer's first question about a buffer a failed call read
        (``failed_read``): is an internal array over its memory still alive outside
        it (`_held_elsewhere`)? Then it is freed once that array dies, never pooled,
        and ``pool`` stops counting it as live now (a refused call changes no
        accounting): True. False: it is released like any other buffer.
        """
        if not self._held_elsewhere():
            return False
        forget = getattr(pool, "forget_bytes", None)
        if forget is not None:
            forget(self.owner.nbytes)
        return True

    def _release(self, recycler: weakref.ref[Recycler], pool: Recycler) -> None:
        """The finalizer's uncommon cases: a root that something else holds or that a
        weak reference can revive, or a stale write root (`BufferFields.__del__`
        recycles, in C, a buffer with no stale write root whose root, if any, only
        the buffer holds and nothing references weakly; ``pool`` is the live target
        of ``recycler``).

        The recycler (`storage.recycler.Recycler`, e.g. the engine's pool) owns the
        policy: this only says how many aliases are still alive.
        """
        aliases = self.alias_count()
        if aliases:
            pool.recycle(self.owner, aliases)
            return
        if self._stale is None and (
            self._root is None
            or (self._root_refs() <= _ROOT_BASELINE and not _getweakrefcount(self._root))
        ):
            # Every stale write root had died (`alias_count` dropped them), or the
            # last alias died since the finalizer's count: nobody holds a root and no
            # weak reference can revive one, so the memory can go back at once.
            self._root = None
            pool.recycle(self.owner, 0)
            return
        # No alias now, but a weak reference to a root (reachable as a handed-out
        # array's ``.base``) could revive it on another thread between the count
        # and the free. A dead object cannot be revived: recycle only once every
        # root has died (at once, in `_RecycleWhenDead`, when nobody revived one).
        roots = self._stale or []
        if self._root is not None:
            roots.append(self._root)
        self._root = self._stale = None
        _RecycleWhenDead(recycler, self.owner, roots)


#: `_RecycleWhenDead` instances waiting for roots to die (a weak reference must
#: stay alive for its callback to run).
_waiting: set[_RecycleWhenDead] = set()


class _RecycleWhenDead:
    """Recycles a buffer's memory once every one of its roots has died.

    Weak-reference callbacks run after the object is dead and every weak reference
    to it is cleared, so no thread can revive a root after the memory went back
    to the pool.
    """

    __slots__ = ("__weakref__", "_left", "_owner", "_recycler", "_refs")

    def __init__(
        self,
        recycler: weakref.ref[Recycler],
        owner: np.ndarray[Any, Any],
        roots: list[np.ndarray[Any, Any]],
    ) -> None:
        self._recycler = recycler
        self._owner: np.ndarray[Any, Any] | None = owner
        self._left = len(roots)
        # Registered before any callback can run (a root may die on another thread
        # as soon as its weak reference exists), so `_finish` always unregisters.
        _waiting.add(self)
        self._refs: list[weakref.ref[np.ndarray[Any, Any]]] = [
            weakref.ref(r, self._dead) for r in roots
        ]
        # The caller holds no other reference: roots nobody else holds die here,
        # and `_dead` runs for each of them before `clear` returns.
        roots.clear()
        if self._left <= 0:
            self._finish()

    def _dead(self, _ref: object) -> None:
        with _lock:
            self._left -= 1
            done = self._left <= 0
        if done:
            self._finish()

    def _finish(self) -> None:
        with _lock:
            owner = self._owner
            self._owner = None
            self._refs = []  # breaks the cycle through the callbacks
            _waiting.discard(self)
        if owner is None:
            return
        pool = self._recycler()
        if pool is not None:
            pool.recycle(owner, 0)


def read_only_refusal(op: str) -> BorrowError:
    """The error for a write through a tensor that may only read (an attached one)."""
    return BorrowError(
        op,
        "this tensor is a read-only mapping (a shared-memory tensor attached with "
        "SharedMemoryDomain.attach) and cannot be borrowed for writing; write through "
        "the owner's tensor, or download() a host copy and write that",
        kind="READ_ONLY",
    )


def shared_refusal(op: str, holder: str) -> BorrowError:
    """The error for a shared borrow attempted while ``holder`` borrows exclusively."""
    return BorrowError(
        op,
        f"the buffer is exclusively borrowed by {holder}; "
        "leave that block before reading the tensor",
        kind="EXCLUSIVELY_BORROWED",
        holder=holder,
    )


def _stale_refs(stale: list[np.ndarray[Any, Any]]) -> list[int]:
    # Measured with exactly this access pattern at import time (`_STALE_BASELINE`).
    return [_getrefcount(root) for root in stale]


def _calibrate() -> tuple[int, int]:
    # Reference counts seen by the counters above for an object nobody else holds;
    # measured rather than assumed because interpreters differ (3.14 borrows some).
    probe = HostBuffer(np.empty(1), np.empty(1))
    probe._root = np.empty(1)
    root_baseline = probe._root_refs()
    stale_baseline = _stale_refs([np.empty(1)])[0]
    return root_baseline, stale_baseline


#: References a root has when only its `HostBuffer` holds it.
#: References a stale write root has when only the `_stale` list holds it.
_ROOT_BASELINE, _STALE_BASELINE = _calibrate()


def _calibrate_memory() -> tuple[int, int, int]:
    # The counts `_memory_refs` sees for a buffer nobody else references: ``flat``
    # the allocation itself, and ``flat`` a slice of it (``flat.base`` is it).
    # No local names the arrays: only the probe's fields (and ``flat.base``) do.
    whole = HostBuffer(np.empty(2), np.empty(0))
    whole.flat = whole.owner
    same = whole._memory_refs()[0]
    part = HostBuffer(np.empty(2), np.empty(0))
    part.flat = part.owner[:1]
    owner_refs, flat_refs = part._memory_refs()
    return same, owner_refs, flat_refs


#: `_memory_refs` of a buffer nobody else references (see `_held_elsewhere`).
_SAME_BASELINE, _OWNER_BASELINE, _FLAT_BASELINE = _calibrate_memory()
