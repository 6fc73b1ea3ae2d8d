"""`BufferPool`: where engine outputs come from and where dropped outputs go back.

Policy (DESIGN §5, sharpened by issue 12; docs/engine.md argues it):

* one pool per engine, one shelf per dtype;
* bounded best fit: a request for ``n`` elements gets the smallest retained
  buffer whose capacity is at least ``n`` **and at most ``2 * n``** (a request
  of 150 may get a retained 200, never a retained 301); a miss allocates a
  fresh, uninitialised buffer of exactly ``n``. The bound is what keeps a small
  result (a rank-0 sum) from pinning a large buffer that the next large request
  then misses;
* released buffers are kept by capacity, up to a byte cap: by default a share
  of the machine's memory (`default_limit_bytes`: 1/32 of it, at least 100 MiB
  and at most 4 GiB, so loops over outputs of hundreds of MiB are pooled too),
  or ``TENFERRO_BUFFER_POOL_MAX_RETAINED_BYTES`` (``"0"`` turns retention off);
  while over the cap the smallest buffer across all dtypes is evicted;
* a buffer that still has a live alias is never retained (it is counted as
  refused and left to the allocator), so memory that anyone can still see is
  never handed out again;
* zero-size buffers are never retained (they would be free to hand out anyway,
  and eviction must always make progress).

Thread safety: one re-entrant lock guards the shelves and counters. It is
re-entrant because a buffer may come back through `HostBuffer.__del__` from a
garbage collection that starts while the lock is held on the same thread (the
shelves are consistent between any two steps, so such a nested call is safe).

The return lane: releasing a small buffer (at most 1 MiB, and at most 1/256 of
the cap; no lane under a 1 MiB cap) appends it to a list without taking the
lock (compiled, `storage._fields.ReturnLane`: C code that calls no Python
between reading and changing the lane is atomic under the GIL); the next
`acquire` hands the newest one straight back when dtype and size match
exactly (the steady state of a loop) and otherwise moves the lane to the
shelves first. Every stats call drains the
lane first, and a release that finds more than eight buffers waiting drains
it. The lane's room is reserved inside the cap: the shelves are evicted down to
``limit - 9 * lane_bytes``, so shelves plus lane never exceed the cap (on one
thread; each further thread releasing at the same instant can add one lane
buffer, at most 1/256 of the cap, until the next drain). This halves the cost
of a release, which every dropped output pays. The shelves' common steps (the
drain, an exact-size or best-fit hand-out, keeping a buffer too large for the
lane) are compiled too, under the same lock: in workloads of varying sizes
(tensor-network sweeps) nearly every request misses the lane.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any, NamedTuple

import numpy as np

from ..alloc import ALLOCATION_FAILURES, out_of_memory
from ..dtype import DType
from ..errors import ValidationError
from ..storage._fields import ReturnLane

__all__ = [
    "DEFAULT_LIMIT_BYTES",
    "ENV_LIMIT",
    "FLOOR_LIMIT_BYTES",
    "BufferPool",
    "BufferPoolCacheStats",
    "BufferPoolStats",
]

#: The default cap never goes below this (the cap before issue 12: 100 MiB).
FLOOR_LIMIT_BYTES = 100 * 2**20
#: ... nor above this, however large the machine.
CEILING_LIMIT_BYTES = 4 * 2**30
#: The default cap is this fraction of the machine's physical memory.
MEMORY_SHARE = 32
#: The return lane takes buffers of at most 1/_LANE_SHARE of the cap ...
_LANE_SHARE = 256
#: ... and never of more than this many bytes.
_LANE_BYTES_MAX = 1 << 20


def machine_memory_bytes() -> int | None:
    """Physical memory of this machine in bytes, or None where the OS does not say."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        page = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page if pages > 0 and page > 0 else None


def default_limit_bytes(memory: int | None) -> int:
    """The default cap for a machine with ``memory`` bytes: 1/32 of it, in [100 MiB, 4 GiB].

    1/32 lets a loop over 256 MiB outputs keep its buffer on any machine of more
    than 8 GiB (and two of them from 24 GiB), while an idle engine never holds more than
    about 3% of memory (and never more than 4 GiB). Unknown memory: 100 MiB.
    """
    if memory is None:
        return FLOOR_LIMIT_BYTES
    return max(FLOOR_LIMIT_BYTES, min(CEILING_LIMIT_BYTES, memory // MEMORY_SHARE))


#: Default byte cap on retained buffers (per pool), for this machine.
DEFAULT_LIMIT_BYTES = default_limit_bytes(machine_memory_bytes())
#: The environment variable that overrides the default cap.
ENV_LIMIT = "TENFERRO_BUFFER_POOL_MAX_RETAINED_BYTES"

_empty = np.empty


class BufferPoolStats(NamedTuple):
    """What the pool holds now: retained buffers and their total capacity in bytes."""

    buffers: int
    capacity_bytes: int


class BufferPoolCacheStats(NamedTuple):
    """Event counters since the pool was made (`clear` does not reset them).

    * ``hits``: requests served from a retained buffer;
    * ``misses``: requests that allocated a new buffer (zero-size requests are
      neither: they never touch the pool);
    * ``recycled``: released buffers the pool retained;
    * ``refused_aliased``: released buffers not retained because an alias (a
      ``host_data()`` array, a view, a guard) was still alive;
    * ``evictions``: buffers dropped to stay under the byte cap, including
      released buffers larger than the cap itself;
    * ``clears``: calls to `BufferPool.clear` (``engine.reset_buffer_pool()``).
    """

    hits: int
    misses: int
    recycled: int
    refused_aliased: int
    evictions: int
    clears: int

    @property
    def hit_rate(self) -> float:
        """``hits / (hits + misses)``; 1.0 when there were no requests."""
        total = self.hits + self.misses
        return 1.0 if total == 0 else self.hits / total


def limit_from_env() -> int:
    """The byte cap from ``TENFERRO_BUFFER_POOL_MAX_RETAINED_BYTES``, else the default.

    An unreadable value (not a non-negative integer) falls back to the default
    with a `RuntimeWarning`; it never raises.
    """
    raw = os.environ.get(ENV_LIMIT)
    if raw is None or not raw.strip():
        return DEFAULT_LIMIT_BYTES
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0:
        warnings.warn(
            f"{ENV_LIMIT}={raw!r} is not a non-negative number of bytes; "
            f"using the default {DEFAULT_LIMIT_BYTES}",
            RuntimeWarning,
            stacklevel=3,
        )
        return DEFAULT_LIMIT_BYTES
    return value


def check_limit(value: Any, op: str) -> int:
    """Validate a byte cap given in code: a non-negative int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValidationError(
            op,
            "the buffer pool limit must be a non-negative number of bytes (0 turns retention off)",
            kind="INVALID_LIMIT",
            limit=value,
        )
    return int(value)


# A shelf holds the retained buffers of one dtype: ``(stacks, caps, itemsize)``.
# ``stacks`` maps a capacity (in elements) to the buffers of exactly that capacity
# (newest last, so the warmest buffer is reused first); ``caps`` lists the
# capacities that have a stack, sorted ascending.
# INVARIANT: ``set(caps) == set(stacks)``; a stack may be empty (a size in steady
# use toggles between one buffer and none, and keeping its key avoids re-sorting
# on every operation); empty stacks are pruned by eviction and by best fit (which
# also prunes a shelf of more than 64 keys: `ReturnLane._best_fit`).
_Shelf = tuple[dict[int, list["np.ndarray[Any, Any]"]], list[int], int]

#: The footprint budget's least slack over the live peak (bytes): 1/16 of a small
#: peak would make a loop over kilobyte tensors trade buffers every iteration
#: (TRG at chi 6-12: 3-6 misses a step), for savings no one can measure.
SLACK_MIN = 1 << 20
#: Buffers waiting in the return lane before a release drains it under the lock.
_LANE_MAX = 8


#: No return lane under this cap: its reserved room would be most of a small cap.
_LANE_MIN_LIMIT = 1 << 20


def _lane_bytes(limit: int) -> int:
    """Largest buffer that may wait in the return lane (-1: no lane): 1/256 of the cap."""
    if limit < _LANE_MIN_LIMIT:
        return -1
    return min(_LANE_BYTES_MAX, limit // _LANE_SHARE)


def _shelf_limit(limit: int, lane_bytes: int) -> int:
    """What the shelves may hold: the cap less the lane's room (``_LANE_MAX + 1`` buffers).

    INVARIANT: a release appends to the lane and drains it once it holds more than
    ``_LANE_MAX``, so on one thread the lane never holds more than ``_LANE_MAX + 1``
    buffers of at most ``lane_bytes``: shelves + lane <= limit.
    """
    return limit - (_LANE_MAX + 1) * max(lane_bytes, 0)


class BufferPool(ReturnLane):
    """A per-engine pool of uninitialised 1-D host buffers, best fit by capacity.

    Buffers are plain numpy arrays. `acquire` hands one out (its capacity may
    exceed the request); `recycle` takes one back (called by
    `HostBuffer.__del__` through a weak reference, so the pool never keeps an
    output alive and an output never keeps the pool alive).

    The steps every request and release takes are compiled (`ReturnLane`,
    storage/_fields.pyx: the engine's core and the finalizer call them with no
    Python frame): the return lane, its drain, a shelf's exact size and best fit,
    keeping a released buffer on its shelf. The uncommon steps are here: a fresh
    allocation (`_miss`), a zero-size request (`_acquire_empty`), a refusal
    (`_refuse`), eviction, the footprint budget, `forget`, the stats.

    ``limit_bytes`` caps what it retains (None: the environment's or the
    default); ``slack_min`` is the least the footprint budget lets live plus
    retained bytes exceed the live peak by (see `_trade_locked`).
    """

    # ``_shelves``, ``_lock`` and the counters ``_bytes``, ``_out``, ``_high``,
    # ``_recycled``, ``_evicted_big`` and ``_shelf_limit`` are `ReturnLane`'s C members
    # (its compiled hot steps change them).
    __slots__ = (
        "__weakref__",
        "_cleared",
        "_clears",
        "_evicted_kept",
        "_limit",
        "_misses",
        "_peak_undo",
        "_refused",
        "_shelf_list",
        "_slack_min",
    )

    def __init__(self, limit_bytes: int | None = None, slack_min: int = SLACK_MIN) -> None:
        self._slack_min = slack_min
        self._limit = (
            limit_from_env() if limit_bytes is None else check_limit(limit_bytes, "BufferPool")
        )
        self._lock = threading.RLock()
        # The return lane (`ReturnLane._lane`, compiled): small released buffers are
        # appended without the lock and moved to the shelves by the next locked call;
        # `acquire` hands the newest one straight back when it fits exactly, counted
        # in the lane's hits (`take_lane_hits`, folded into `_recycled` under the lock).
        # INVARIANT: at most about _LANE_MAX buffers of at most `_lane_bytes` each
        # wait there, so the cap is exceeded by a bounded amount for a short time.
        self._lane_bytes = _lane_bytes(self._limit)
        self._lane_max = _LANE_MAX
        self._shelf_limit = _shelf_limit(self._limit, self._lane_bytes)
        # One shelf per dtype, made up front, keyed by the numpy dtype object.
        self._shelves = {}
        for d in DType:
            self._shelves[d.numpy] = ({}, [], d.itemsize)
        self._shelf_list = tuple(self._shelves.values())
        # Counters. Hits are derived (see cache_stats) so the hot path updates one
        # counter fewer: every retained buffer is later handed out (a hit), still
        # retained, evicted, or cleared.
        self._bytes = 0
        # Bytes of buffers handed out and not yet back (the live outputs, as far as
        # the pool can tell: lane traffic is not counted either way, and a buffer
        # taken out with into_vec_col_major counts as live for good), and the peak
        # of that: the footprint budget of `_trade_locked`.
        self._out = 0
        self._high = 0
        # (id of the buffer whose miss last raised the peak, the peak before it).
        self._peak_undo: tuple[int, int] | None = None
        self._misses = 0
        self._recycled = 0
        self._refused = 0
        self._evicted_kept = 0
        self._evicted_big = 0
        self._cleared = 0
        self._clears = 0

    # -- the two hot calls ------------------------------------------------------------
    # `acquire(dtype, n, kept=False)`: an uninitialised 1-D buffer of ``dtype`` with
    # capacity >= ``n``. The caller must write every element it uses before anyone
    # reads them. Zero-size requests never touch the pool. ``kept``: the buffer holds
    # a result its caller keeps (``EngineBase._output``: einsum, linalg and other
    # non-inlined results), so best fit stops short of ``2 * n``. Compiled
    # (`ReturnLane.acquire`): the lane's exact fit without the lock, then under it
    # the lane's drain, the shelf's exact size and the bounded best fit
    # (`ReturnLane._best_fit`: the smallest retained buffer with
    # ``n < capacity <= 2 * n``, ``< 2 * n`` when ``kept``); what no retained buffer
    # fits is `_miss`, a zero-size request `_acquire_empty`.
    def _acquire_empty(self, dtype: np.dtype[Any], n: int) -> np.ndarray[Any, Any]:
        """`acquire` of zero elements: never the pool's."""
        try:
            return _empty(n, dtype)
        except ALLOCATION_FAILURES as exc:
            raise out_of_memory("BufferPool.acquire", n, dtype, exc) from None

    def _miss(self, dtype: np.dtype[Any], n: int, itemsize: int) -> np.ndarray[Any, Any]:
        """A fresh buffer for a request no retained one fits, counted once it exists.

        INVARIANT: a refused allocation changes no counter. The buffer is allocated
        *before* the live bytes, their peak and the miss are counted, so an
        impossible request (``tfr.zeros((2**40,))``) cannot raise the live peak,
        and with it the footprint budget, for the rest of the process. Retained
        buffers are traded away only after a success, or, when the allocation
        failed and dropping them could make room (the request is within the cap:
        one larger than everything the pool may keep is hopeless), before the one
        retry.
        """
        nbytes = n * itemsize
        try:
            owner = _empty(n, dtype)
        except ALLOCATION_FAILURES as exc:
            if not (self._bytes and nbytes <= self._limit):
                raise out_of_memory("BufferPool.acquire", n, dtype, exc) from None
            with self._lock:
                self._drop_retained_locked(nbytes)
            try:
                owner = _empty(n, dtype)
            except ALLOCATION_FAILURES as exc2:
                raise out_of_memory("BufferPool.acquire", n, dtype, exc2) from None
        with self._lock:
            self._misses += 1
            out = self._out = self._out + nbytes
            if out > self._high:
                # Remembered so that `forget` can undo the peak if this very buffer
                # is dropped by a refused call before anything else happens.
                self._peak_undo = (id(owner), self._high)
                self._high = out
            if self._bytes:
                self._trade_locked()
        return owner

    def forget(self, owner: np.ndarray[Any, Any]) -> None:
        """A handed-out buffer that will never come back: stop counting it as live.

        For the buffers a failed call drops (its traceback may keep arrays over
        them, so they must never be pooled again): without this, every refused call
        would leave their bytes counted as live for good, raising the footprint
        budget (`_trade_locked`) and what the pool may retain.
        """
        with self._lock:
            undo = self._peak_undo
            if undo is not None and undo[0] == id(owner) and self._high == self._out:
                # This buffer set the live peak and nothing has been taken since: a
                # refused call (a lossy convert, an integer division by zero) that
                # drops its output leaves the peak, and the budget, as it was.
                self._high = max(undo[1], self._out - owner.nbytes)
            self._peak_undo = None
            self._released_locked(owner.nbytes)

    def forget_bytes(self, nbytes: int) -> None:
        """`forget` for a buffer that has died (`storage.recycler.never_pool`'s finalizer)."""
        with self._lock:
            self._released_locked(nbytes)

    def _drop_retained_locked(self, nbytes: int) -> None:
        """Drop retained buffers, largest first, until ``nbytes`` more fit (lock held)."""
        self._trade_locked(max(self._bytes - nbytes, 0))

    # `recycle(owner, aliases=0)`: take a released buffer back; retained only when
    # ``aliases == 0``. A buffer that is still aliased is refused (and counted,
    # `_refuse`): its memory goes back to the allocator once the last alias dies. A
    # buffer larger than the cap is evicted at once; otherwise the smallest buffers
    # across all dtypes are evicted while the pool is over its cap (`_evict_locked`).
    # Compiled (`ReturnLane.recycle`): an alias-free buffer of at most `_lane_bytes`
    # goes to the lane, a larger one to its shelf under the lock
    # (`ReturnLane._retain`, which counts it and calls `_evict_locked` when over).
    # `drain_lane()` and `_drain_locked()` (lock held) move the lane to the shelves,
    # oldest first; `_released_locked(nbytes)` counts a buffer coming back as no
    # longer live (both compiled too).
    def _refuse(self, owner: np.ndarray[Any, Any], aliases: int) -> None:
        """`recycle` of a buffer that still has aliases: counted, never retained."""
        with self._lock:
            self._refused += 1
            self._released_locked(owner.nbytes)  # no longer the pool's to count

    # -- policy ------------------------------------------------------------------------
    def _fold_hits_locked(self) -> None:
        """Count the lock-free lane hits as recycled buffers handed out (lock held)."""
        # INVARIANT: one compiled step reads and zeroes the count; hits racing with
        # this are folded next time.
        self._recycled += self.take_lane_hits()

    def _trade_locked(self, allowed: int | None = None) -> None:
        """After a miss: drop the largest retained buffers while over the footprint budget.

        The budget (what docs/engine.md promises): live outputs plus retained buffers
        never exceed the peak of live outputs by more than 1/16 of it (or by
        `slack_min`, 1 MiB by default, whichever is more), so a pool
        keeps what the program needed at its peak, not more. A miss is the only
        event that grows live + retained (a hit moves a buffer from retained to live,
        a release the other way), so this is the only place that must enforce it.
        Largest first: one large buffer dropped is one later miss, where the same
        bytes in small buffers would be many. The budget is never raised by what
        the program asks for again (docs/engine.md: that made the footprint grow
        towards the cap on workloads of changing sizes). ``allowed``: drop down
        to that many retained bytes instead (a failed allocation's retry).
        """
        if allowed is None:
            allowed = self._high + max(self._high >> 4, self._slack_min) - self._out
        before = self._bytes
        while self._bytes > allowed:
            top: _Shelf | None = None
            top_cap = 0
            top_bytes = 0
            for shelf in self._shelf_list:
                stacks, caps, itemsize = shelf
                j = len(caps) - 1
                while j >= 0 and not stacks[caps[j]]:
                    j -= 1
                if j >= 0 and caps[j] * itemsize > top_bytes:
                    top, top_cap, top_bytes = shelf, caps[j], caps[j] * itemsize
            if top is None:  # pragma: no cover - bytes > 0 implies a buffer exists
                self._bytes = 0
                break
            top[0][top_cap].pop()
            self._bytes -= top_bytes
            self._evicted_kept += 1
        if before - self._bytes >= _TRIM_BYTES:
            _trim()

    def _evict_locked(self) -> None:
        """Evict the smallest buffer across dtypes while over the cap (lock held).

        Dropping a plain array under the lock runs no Python code (no finaliser).
        """
        # Each round removes one buffer of non-zero size, so the loop ends.
        while self._bytes > self._shelf_limit:
            best: _Shelf | None = None
            best_bytes = 0
            for shelf in self._shelf_list:
                cap = _smallest(shelf)
                if cap and (best is None or cap * shelf[2] < best_bytes):
                    best, best_bytes = shelf, cap * shelf[2]
            if best is None:  # pragma: no cover - bytes > 0 implies a buffer exists
                self._bytes = 0
                break
            best[0][best[1][0]].pop()
            self._bytes -= best_bytes
            self._evicted_kept += 1

    @property
    def limit_bytes(self) -> int:
        """The byte cap on retained buffers (0: retention off)."""
        return self._limit

    def set_limit_bytes(self, limit: int) -> None:
        """Change the cap; shrinking evicts the smallest buffers at once."""
        value = check_limit(limit, "BufferPool.set_limit_bytes")
        with self._lock:
            self._drain_locked()
            self._limit = value
            self._lane_bytes = _lane_bytes(value)
            self._shelf_limit = _shelf_limit(value, self._lane_bytes)
            if self._bytes > self._shelf_limit:
                self._evict_locked()

    def clear(self) -> None:
        """Drop every retained buffer (counted in ``clears``, not ``evictions``)."""
        dropped: list[np.ndarray[Any, Any]] = []
        with self._lock:
            self._drain_locked()
            for stacks, caps, _ in self._shelf_list:
                for stack in stacks.values():
                    dropped.extend(stack)
                stacks.clear()
                caps.clear()
            self._cleared += len(dropped)
            self._bytes = 0
            self._clears += 1
        del dropped

    # -- stats -------------------------------------------------------------------------
    def _count_locked(self) -> int:
        self._drain_locked()
        self._fold_hits_locked()
        return sum(len(stack) for shelf in self._shelf_list for stack in shelf[0].values())

    def stats(self) -> BufferPoolStats:
        """Retained buffers and their total capacity in bytes, now."""
        with self._lock:
            count = self._count_locked()
            nbytes = self._bytes
        return BufferPoolStats(count, nbytes)

    def cache_stats(self) -> BufferPoolCacheStats:
        """The event counters (hits, misses, recycled, refused, evictions, clears)."""
        with self._lock:
            count = self._count_locked()
            recycled = self._recycled
            # Every buffer ever retained was handed out again (a hit), is still
            # retained, was evicted, or was cleared.
            hits = recycled - count - self._evicted_kept - self._cleared
            values = (
                hits,
                self._misses,
                recycled,
                self._refused,
                self._evicted_kept + self._evicted_big,
                self._clears,
            )
        return BufferPoolCacheStats(*values)

    def retained_addresses(self) -> list[int]:
        """Addresses of the retained buffers (diagnostics and tests)."""
        with self._lock:
            self._drain_locked()
            arrays = [a for shelf in self._shelf_list for st in shelf[0].values() for a in st]
        return [int(a.ctypes.data) for a in arrays]

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"BufferPool(buffers={s.buffers}, capacity_bytes={s.capacity_bytes}, "
            f"limit_bytes={self._limit})"
        )


#: Dropping at least this much in one go hands the allocator's free memory back.
_TRIM_BYTES = 1 << 20


def _load_trim() -> Any:
    """glibc's ``malloc_trim``, or None (another C library, or no ctypes)."""
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        if name is None:
            return None
        trim = ctypes.CDLL(name).malloc_trim
    except (ImportError, OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_malloc_trim = _load_trim()


def _trim() -> None:
    """Give the C allocator's free pages back to the OS (glibc; a no-op elsewhere).

    Buffers below glibc's (growing) mmap threshold live in its heap, and freeing
    one in the middle of the heap keeps its pages resident: a pool that drops
    buffers to stay within its footprint budget would otherwise leave the process
    just as large. ``malloc_trim(0)`` releases those pages; it runs only after a
    miss dropped at least `_TRIM_BYTES`, which is already an allocation's cost.
    """
    if _malloc_trim is not None:
        _malloc_trim(0)


def _smallest(shelf: _Shelf) -> int:
    """The smallest capacity with a retained buffer (0 if none), pruning empties."""
    stacks, caps, _ = shelf
    while caps:
        cap = caps[0]
        if stacks[cap]:
            return cap
        del caps[0]
        del stacks[cap]
    return 0
