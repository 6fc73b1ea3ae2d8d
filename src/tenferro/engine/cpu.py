"""`CpuEngine`: the CPU engine, its pool, its threads, and the per-thread default.

The operations live in one mixin per family (`elementwise`, `reduction`,
`structural`, `contraction`, `fusion`); this module assembles them, owns the
pool API (`buffer_pool_stats`, `reclaim_buffer`, ...), applies the thread
setting, and keeps the per-thread default engine that tensor operators use.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from ..errors import BorrowError, RuntimeStateError, ValidationError
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ._core import bind_current as _bind_current
from ._core import current_changed as _current_changed
from .contraction import ContractionOps
from .elementwise import ElementwiseOps
from .fusion import FusionOps
from .linalg import LinalgOps
from .pool import BufferPool, BufferPoolCacheStats, BufferPoolStats, check_limit
from .reduction import ReductionOps
from .structural import StructuralOps

__all__ = ["CpuEngine", "applied_threads", "default_engine"]


# ---------------------------------------------------------------------- threads
# The thread count last applied to BLAS and numexpr (None: never set by tenferro,
# or set back to the libraries' own setting).
# INVARIANT: the libraries are only touched when a requested count differs from
# this module-level int, so creating or entering engines costs one compare.
_applied: int | None = None
# Bumped by every change of the libraries' count: an engine whose creation made
# the last change knows that the count before it is still the one to restore.
_generation = 0
# The libraries' own setting, saved when tenferro first changes it: the
# threadpoolctl limiter (it can restore BLAS) and numexpr's previous count.
_original: tuple[Any, Any] | None = None
_threads_lock = threading.Lock()
_controller: Any = None


def applied_threads() -> int | None:
    """The thread count tenferro last applied to BLAS and numexpr (None: never)."""
    return _applied


def _apply_threads(n: int | None) -> None:
    global _applied, _controller, _generation, _original
    if n is None or n == _applied:
        return
    with _threads_lock:
        if n == _applied:
            return
        import numexpr

        # Every BLAS/LAPACK the process will use must be loaded when the libraries
        # are scanned: threadpoolctl limits only what is loaded, and scipy's own
        # OpenBLAS (which the engine's linalg calls) is otherwise loaded later, by
        # the first scipy.linalg import, and keeps its default thread count.
        import scipy.linalg  # noqa: F401
        from threadpoolctl import ThreadpoolController

        # A fresh scan per change of the count (rare): a library loaded since the
        # last change is limited too.
        _controller = ThreadpoolController()
        limiter = _controller.limit(limits=n, user_api="blas")
        previous = numexpr.set_num_threads(n)
        if _applied is None:
            _original = (limiter, previous)
        _applied = n
        _generation += 1


def _restore_threads(n: int | None) -> None:
    """Put back a count saved by `CpuEngine.__enter__` (None: the libraries' own)."""
    global _applied, _generation
    if n is not None:
        _apply_threads(n)
        return
    with _threads_lock:
        original = _original
        if _applied is None or original is None:
            return
        import numexpr

        limiter, previous = original
        limiter.restore_original_limits()
        if isinstance(previous, int) and previous > 0:
            numexpr.set_num_threads(previous)
        _applied = None
        _generation += 1


def _check_threads(threads: Any) -> int | None:
    if threads is None:
        return None
    import numexpr

    # Refused, not clamped: above numexpr's cap (NUMEXPR_MAX_THREADS) numexpr keeps its
    # old count while BLAS clamps, so applied_threads() would report a count that no
    # library runs. Checked before anything is applied: a refusal changes nothing.
    limit = int(numexpr.MAX_THREADS)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValidationError(
            "CpuEngine",
            f"threads must be a positive int or None (leave the libraries' setting alone), "
            f"got {threads!r}",
            kind="INVALID_THREADS",
            threads=threads,
            limit=limit,
        )
    if threads > limit:
        raise ValidationError(
            "CpuEngine",
            f"threads={threads} exceeds the {limit} threads numexpr can run "
            "(NUMEXPR_MAX_THREADS); pass at most that, or None to leave the libraries alone",
            kind="INVALID_THREADS",
            threads=threads,
            limit=limit,
        )
    return threads


# ---------------------------------------------------------------------- default engine
class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.current: CpuEngine | None = None
        # One entry per open `with eng:` block: the default engine and the thread
        # count applied when the block began, both restored when it ends.
        self.stack: list[tuple[CpuEngine | None, int | None]] = []


_state = _ThreadState()


def default_engine() -> CpuEngine:
    """This thread's current engine: the innermost ``with eng:``, else the thread's own.

    Each thread gets its own default `CpuEngine` (and so its own pool) on first use.
    Tensor operators (``+ - * / ** @``, unary ``-``, ``abs``) run on it.
    """
    eng = _state.current
    if eng is None:
        eng = _state.current = CpuEngine()
        _current_changed()  # INVARIANT (compiled `current`'s cache): after every change
    return eng


# The compiled core's `current()` (what every namespace call asks) reads these two.
_bind_current(_state, default_engine)


# ---------------------------------------------------------------------- the engine
class CpuEngine(ElementwiseOps, ReductionOps, StructuralOps, ContractionOps, FusionOps, LinalgOps):
    """The CPU engine: numpy/BLAS kernels writing into pooled, uninitialised outputs.

    ``threads``: BLAS and numexpr thread count (and the fused evaluator's workers),
    applied when the engine is created or entered with ``with eng:`` (never per
    operation); ``None`` leaves the libraries as they are. A count above numexpr's
    cap (``NUMEXPR_MAX_THREADS``, 64 by default) is refused with `ValidationError`
    (kind INVALID_THREADS) rather than half-applied; a BLAS built with a lower cap
    may still run fewer (``threadpoolctl.threadpool_info()`` shows what it runs).
    ``buffer_limit_bytes``:
    the pool's byte cap (default: ``TENFERRO_BUFFER_POOL_MAX_RETAINED_BYTES`` or
    1/32 of physical memory in [100 MiB, 4 GiB]). ``allocation_domain``: an object with ``id()`` and
    ``allocate(dtype, shape)`` (a `SharedTensorAllocationDomain`):
    `to_contiguous` of a tensor living in that domain copies it within the
    domain (a new allocation there); every other output still comes from the
    pool.

    Every operation accepts tensors and views (any strides) and returns a
    compact column-major tensor whose buffer came from this engine's pool;
    dropping it returns the buffer. Operations with ``out=`` write an existing
    tensor under an exclusive borrow instead. Inputs in memory the CPU cannot
    read directly (a domain's or a device's) are refused with
    `RuntimeStateError`: download them first.
    """

    # The count in force before this engine's creation applied its own, and the
    # generation that application made (-1: creation changed nothing).
    __slots__ = ("_created_generation", "_threads_before")

    def __init__(
        self,
        threads: int | None = None,
        buffer_limit_bytes: int | None = None,
        allocation_domain: Any = None,
    ) -> None:
        self._threads = _check_threads(threads)
        if buffer_limit_bytes is not None:
            buffer_limit_bytes = check_limit(buffer_limit_bytes, "CpuEngine")
        if allocation_domain is not None and not (
            callable(getattr(allocation_domain, "id", None))
            and callable(getattr(allocation_domain, "allocate", None))
        ):
            raise ValidationError(
                "CpuEngine",
                "allocation_domain must provide id() and allocate(dtype, shape), got "
                f"{type(allocation_domain).__name__}",
                kind="INVALID_DOMAIN",
            )
        self._domain = allocation_domain
        self._pool = BufferPool(buffer_limit_bytes)
        # One weak reference shared by every output: the pool is owned by this engine
        # alone, so outputs never keep it (or the engine) alive.
        self._recycler = weakref.ref(self._pool)
        self._threads_before = _applied
        self._created_generation = -1
        generation = _generation
        _apply_threads(self._threads)
        if _generation != generation:
            self._created_generation = _generation

    # -- configuration -------------------------------------------------------------------
    @property
    def threads(self) -> int | None:
        """The configured thread count (None: libraries left alone)."""
        return self._threads

    @property
    def allocation_domain(self) -> Any:
        """The allocation domain `to_contiguous` allocates domain tensors in, or None."""
        return self._domain

    def __enter__(self) -> CpuEngine:
        """Make this engine the calling thread's default until the block ends.

        Its thread count is applied for the block; leaving the block puts back
        the count applied when it began (blocks nest).
        """
        # What to restore: the count in force when the block begins or, when this
        # engine's creation made the last change (`with CpuEngine(threads=1):`),
        # the count before that.
        restore = self._threads_before if self._created_generation == _generation else _applied
        _state.stack.append((_state.current, restore))
        _state.current = self
        _current_changed()
        _apply_threads(self._threads)
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _state.stack
        if not stack:
            _state.current = None
            _current_changed()
            return
        previous, restore = stack.pop()
        _state.current = previous
        _current_changed()
        _restore_threads(restore)

    def __repr__(self) -> str:
        s = self._pool.stats()
        return (
            f"CpuEngine(threads={self._threads}, buffers={s.buffers}, "
            f"capacity_bytes={s.capacity_bytes}, limit_bytes={self._pool.limit_bytes})"
        )

    # -- pool API ------------------------------------------------------------------------
    def buffer_pool_stats(self) -> BufferPoolStats:
        """``BufferPoolStats(buffers, capacity_bytes)``: what the pool retains now."""
        return self._pool.stats()

    def buffer_pool_cache_stats(self) -> BufferPoolCacheStats:
        """Counters of real pool events: hits, misses, recycled, refused, evictions, clears."""
        return self._pool.cache_stats()

    @property
    def buffer_pool_limit_bytes(self) -> int:
        """The pool's byte cap on retained buffers (0: retention off)."""
        return self._pool.limit_bytes

    def set_buffer_pool_limit_bytes(self, limit: int) -> None:
        """Change the pool's byte cap; shrinking evicts the smallest buffers at once."""
        self._pool.set_limit_bytes(limit)

    def reset_buffer_pool(self) -> None:
        """Drop every retained buffer (the counters are kept; ``clears`` counts this)."""
        self._pool.clear()

    def reclaim_buffer(self, t: Tensor) -> None:
        """Move ``t``'s buffer into this engine's pool now.

        Ownership: **moves** ``t`` (any later use raises `MovedTensorError`). Refused
        with `BorrowError` while an alias of the buffer is alive, while an engine
        operation on another thread reads it (IN_USE), and for an adopted buffer
        whose caller array is still referenced, strongly or by a weak reference
        (the caller could still read it);
        refused with `RuntimeStateError` for group-backed tensors (take a host
        buffer out with ``into_vec_col_major()`` first). A refused call leaves ``t``
        as it was.
        """
        op = "CpuEngine.reclaim_buffer"
        if not isinstance(t, Tensor):
            raise ValidationError(
                op,
                f"expected a Tensor, got {type(t).__name__}",
                kind="INVALID_OPERAND",
                operand_type=type(t).__name__,
            )
        st = t._live(op)
        if st.__class__ is not HostBuffer:
            # into_host() refuses every group-backed tensor; into_vec_col_major() is the
            # way out of a group for host memory. Provider memory has none: drop it.
            advice = (
                "take the buffer back with into_vec_col_major() and reclaim a plain tensor "
                "over it (Tensor.from_vec_col_major(*t.into_vec_col_major())), or drop it"
                if getattr(st, "host_addressable", False)
                else "it is provider memory, not a host buffer the pool could reuse; drop it"
            )
            raise RuntimeStateError(
                op,
                f"a group-backed tensor's memory belongs to its allocation group; {advice}",
                kind="GROUP_BACKED",
            )
        origin = st.origin
        # A weak reference to the caller's array revives it after any count, so
        # memory a weak reference can reach is never pooled (checked first: a new
        # weak reference needs a strong one, which the count then sees).
        if origin is not None and (
            weakref.getweakrefcount(origin)
            or origin.base is not None
            or sys.getrefcount(origin) > _ORIGIN_BASELINE
        ):
            raise BorrowError(
                op,
                "the tensor adopts a caller array that is still referenced (strongly or by "
                "a weakref.ref, or is a view of another array); the pool must never hand "
                "out memory someone can read; "
                "drop the caller's array first, or drop the tensor instead",
                kind="ADOPTED_STILL_REFERENCED",
            )
        # Refused while an alias lives or an engine operation reads the buffer; once
        # granted, the old buffer stays marked, so a reader on another thread that
        # raced this call is refused instead of reading memory the pool hands out.
        st.begin_move(op)
        owner = st.owner
        st.detach_recycler()
        t._move(op)
        self._pool.recycle(owner, 0)


def _origin_baseline() -> int:
    # References an adopted array has when only tenferro holds it (the HostBuffer's
    # `origin` and the memoryview under `owner`), measured with the same access
    # pattern as `reclaim_buffer` (attribute load into a local).
    import numpy as np

    from ..tensor import _adopt

    data = np.empty(1)
    buf = _adopt(data, data)
    del data
    origin = buf.origin
    return sys.getrefcount(origin)


_ORIGIN_BASELINE = _origin_baseline()
