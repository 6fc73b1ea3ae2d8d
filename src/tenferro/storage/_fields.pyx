# cython: language_level=3, auto_pickle=False
"""`HostBuffer`'s fields and its finalizer's common case, compiled.

`HostBuffer` (storage/host.py) is a Python class over this extension type: its
methods, the ownership rules and every uncommon case stay there; this holds the
fields as C members (the compiled core, engine/_core.pyx, builds every pooled
output's buffer with plain stores instead of a Python attribute write per
field) and the finalizer's hot path. This module imports nothing of tenferro,
so storage/host.py can sit on it without an import cycle.
"""

cimport numpy as cnp
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.ref cimport PyObject
from cpython.weakref cimport PyWeakref_GetObject

cdef extern from "Python.h":
    bint PyWeakref_CheckRefExact(object)
    # The reference count of an object the caller does not own a reference to (a
    # field read as a borrowed pointer): no temporary reference is counted.
    Py_ssize_t _refcnt "Py_REFCNT"(PyObject*)

cdef extern from *:
    """
    /* 1 when ``o`` has a weak reference, 0 when it has none, -1 when its type keeps
       its weak references where this cannot read them (the caller then asks Python,
       `weakref.getweakrefcount`). A type with a weak-reference list slot
       (``tp_weaklistoffset > 0``, an ndarray's) keeps there the head of the list of
       the weak references to it, NULL exactly when there is none (a weak reference
       leaves the list when it dies or is cleared). */
    static int tenferro_has_weakrefs(PyObject *o) {
        Py_ssize_t off = Py_TYPE(o)->tp_weaklistoffset;
    #ifdef Py_TPFLAGS_MANAGED_WEAKREF
        if (PyType_HasFeature(Py_TYPE(o), Py_TPFLAGS_MANAGED_WEAKREF)) return -1;
    #endif
        if (off <= 0) return -1;
        return *(PyObject **)((char *)o + off) != NULL;
    }
    """
    int tenferro_has_weakrefs(PyObject*)

cnp.import_array()


cdef inline Py_ssize_t _nbytes(object a) except -1:
    # ``a.nbytes`` without building an int, for an ndarray (every pooled buffer).
    if cnp.PyArray_Check(a):
        return cnp.PyArray_NBYTES(<cnp.ndarray>a)
    return a.nbytes


#: The count the finalizer reads for a root only its field holds (measured below).
cdef Py_ssize_t _ROOT_ALONE


cpdef size_t address(object flat) except? 0:
    """The address of the first element of the contiguous array ``flat`` (what
    ``flat.ctypes.data`` says, without building a ctypes object: every read root asks
    it, `HostBuffer.read_root`)."""
    cdef Py_buffer view
    PyObject_GetBuffer(flat, &view, PyBUF_SIMPLE)
    cdef size_t at = <size_t>view.buf
    PyBuffer_Release(&view)
    return at


import sys as _sys

# Bound at import: at interpreter exit the sys module's dict may already be cleared.
cdef object _is_finalizing = _sys.is_finalizing


cdef class BufferFields:
    """The fields of a `HostBuffer` (documented there). A new instance has every field
    None; `HostBuffer.__init__` and `engine._core` set them all."""

    @property
    def core_pins(self):
        """Engine reads of this buffer in flight in the compiled core (engine/_core.pyx),
        on every thread: `HostBuffer.readers` adds the general path's pins to it."""
        return self._pins

    def __del__(self):
        try:
            self._finalize()
        except BaseException:
            # At interpreter exit, modules' globals are cleared before the last
            # collections: a buffer dropped then may find the Python half of its
            # finalizer (`HostBuffer._release`) unable to run. The process is ending
            # and the memory is simply freed; only then is the error not reported.
            if _is_finalizing():
                return
            raise

    cdef int _finalize(self) except -1:
        # The hot path of every dropped engine output, and of a dropped result that a
        # slice, reshape or host_data() gave a read root: a buffer with a live
        # recycler, no stale write root, and either no root or a root that nothing
        # else holds and no weak reference can revive, goes straight back. A buffer
        # that a failed call read asks `HostBuffer._forget_if_held_elsewhere` first;
        # aliases, weak references to the root and stale write roots are
        # `HostBuffer._release` (storage/host.py). One implementation each.
        cdef object recycler = self.recycler
        if recycler is None:
            return 0
        cdef object pool
        if PyWeakref_CheckRefExact(recycler):
            # What ``recycler()`` returns, as a C call (an exact `weakref.ref`: a subclass
            # may define its own call).
            pool = <object>PyWeakref_GetObject(recycler)
        else:
            pool = recycler()
        if pool is None:
            return 0  # the engine is gone: the buffer is simply freed
        if self.failed_read and self._forget_if_held_elsewhere(pool):
            return 0
        if self._stale is not None:
            self._release(recycler, pool)
            return 0
        # A borrowed read of the field: no reference is taken, so the count is the
        # root's holders exactly (`root_alone` is this very read's count for an object
        # only the field holds, measured at import).
        cdef PyObject* root = <PyObject*>self._root
        if root != <PyObject*>None:
            # INVARIANT: every alias of the memory is a view whose base is the root
            # (tenferro.borrow), so a root held by its field alone has no alias, and
            # one with no weak reference cannot be revived (by another thread through
            # a handed-out array's ``.base``) once that count is read: nothing runs
            # Python code between the read and the drop below.
            if _refcnt(root) > _ROOT_ALONE or tenferro_has_weakrefs(root) != 0:
                self._release(recycler, pool)
                return 0
            self._root = None  # the root, and its holder, die here
        if isinstance(pool, ReturnLane):
            # A C call, no Python frame: the engine's pool (its lane takes the buffer).
            (<ReturnLane>pool).recycle(self.owner, 0)
        else:
            pool.recycle(self.owner, 0)
        return 0


cdef inline Py_ssize_t _root_refs(BufferFields fields):
    # Exactly the read `__del__` makes (a borrowed pointer to the field's object).
    return _refcnt(<PyObject*>fields._root)


cdef Py_ssize_t _calibrate_root_alone():
    # The count `__del__` reads for a root that only its field holds: measured, not
    # assumed, the way storage/host.py measures its Python counters' baselines.
    cdef BufferFields probe = BufferFields()
    probe._root = bytearray(1)  # a fresh object; nothing else names it
    return _root_refs(probe)


_ROOT_ALONE = _calibrate_root_alone()


def root_alone_refs():
    """The reference count the finalizer's C read sees for a root that only the
    buffer holds (no alias); more means an alias is alive."""
    return _ROOT_ALONE


def root_refs(BufferFields fields):
    """The finalizer's own read of ``fields._root``'s reference count (tests)."""
    return _root_refs(fields)


def has_weakrefs(object obj):
    """The finalizer's own weak-reference test: 1, 0, or -1 (ask Python) (tests)."""
    return tenferro_has_weakrefs(<PyObject*>obj)


#: Prune a shelf's empty stacks once it has more keys than this (`_best_fit`).
cdef Py_ssize_t _PRUNE_KEYS = 64


cdef Py_ssize_t _bisect_right(list caps, Py_ssize_t n) except -1:
    # ``bisect.bisect_right`` over a sorted list of ints, in C.
    cdef Py_ssize_t lo = 0, hi = len(caps), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if n < <Py_ssize_t>caps[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef int _prune(tuple shelf) except -1:
    # Remove a shelf's empty stacks (its ``caps`` stay sorted: a filter keeps order).
    cdef dict stacks = <dict>shelf[0]
    cdef list caps = <list>shelf[1]
    cdef list keep = []
    for cap in caps:
        if stacks[cap]:
            keep.append(cap)
        else:
            del stacks[cap]
    caps[:] = keep
    return 0


cdef class ReturnLane:
    """The buffer pool's hot steps, compiled: the lane, and the shelves' common cases.

    `engine.pool.BufferPool` derives from it; the policy (the lane's byte bound, its
    drain, the shelves behind it, the fit bound, the caps and budgets) is documented
    there and its uncommon steps (a fresh allocation and its counting, eviction,
    refusal, the stats) are kept there. Here are the steps every request and every
    release takes, as C code:

    * `acquire` hands out the newest waiting buffer of the lane when its dtype and
      size match the request exactly (counted in ``_lane_hits``; lock-free: C code
      that calls no Python code between reading and changing the lane is atomic
      under the GIL); otherwise, under the pool's lock, it drains the lane to the
      shelves and takes an exact or a best-fit shelf buffer; only a true miss (and a
      zero-size request) calls the subclass (``_miss``, ``_acquire_empty``);
    * `recycle` appends an alias-free released buffer of at most ``_lane_bytes`` to
      the lane (draining it once it holds more than ``_lane_max``), keeps a larger
      alias-free one on its shelf under the lock (`_retain`), and calls the
      subclass's ``_refuse`` for a buffer that still has aliases.

    The shelves are ``_shelves`` (a dict from numpy dtype to ``(stacks, caps,
    itemsize)``, engine/pool.py documents its invariant) and the counters the hot
    steps change are C members here, read and written by the subclass as ints.
    Every shelf step runs with ``_lock`` (the subclass's re-entrant lock) held.

    `acquire` and `recycle` are ``cpdef``: the compiled core (engine/_core.pyx) and
    the finalizer (`BufferFields.__del__`) call them at C level, and a subclass or a
    test that replaces them in Python is still called instead.
    """

    def __cinit__(self):
        self._lane = []
        self._lane_bytes = -1
        self._lane_max = 8
        self._lane_hits = 0
        self._shelves = {}

    cpdef object acquire(self, object dtype, Py_ssize_t n, bint kept=False):
        """An uninitialised 1-D buffer of ``dtype`` with capacity >= ``n`` (the
        subclass documents the policy)."""
        cdef list lane = self._lane
        cdef Py_ssize_t k = len(lane)
        cdef object newest
        if n <= 0:
            return self._acquire_empty(dtype, n)
        if k:
            newest = lane[k - 1]
            # INVARIANT: nothing between this read and the pop below runs Python code
            # (numpy's C accessors), so no other thread can take it. `recycle`
            # appends only 1-D ndarrays.
            if (
                cnp.PyArray_Check(newest)
                and cnp.PyArray_DIM(<cnp.ndarray>newest, 0) == n
                and <PyObject*>cnp.PyArray_DESCR(<cnp.ndarray>newest) == <PyObject*>dtype
            ):
                del lane[k - 1]
                self._lane_hits += 1
                return newest
        cdef tuple shelf = None
        cdef object lock = self._lock
        cdef object stack
        cdef object owner
        lock.acquire()
        try:
            if self._lane:
                self._drain()
            shelf = <tuple>self._shelves[dtype]
            stack = (<dict>shelf[0]).get(n)
            if stack:
                k = n * <Py_ssize_t>shelf[2]
                self._bytes -= k
                self._out += k
                return (<list>stack).pop()
            owner = self._best_fit(shelf, n, kept)
            if owner is not None:
                self._out += _nbytes(owner)
                return owner
        finally:
            lock.release()
        return self._miss(dtype, n, shelf[2])

    cdef object _best_fit(self, tuple shelf, Py_ssize_t n, bint kept):
        # Pop the smallest buffer with ``n < capacity <= 2 * n`` (lock held), pruning
        # empty stacks on the way; None when there is none.
        #
        # ``kept``: ``capacity < 2 * n``. A result the caller keeps holds its buffer
        # for as long as it lives, and in tensor networks of spin-1/2 (a physical
        # index of 2) the intermediate just released by the einsum that made the
        # result is very often exactly twice its size (DMRG's environment update:
        # ``[D, 2, w, D] -> [D, w, D]``); with the inclusive bound every such result
        # would pin that buffer half unused (2.8 MB of the 14 MB live peak of
        # examples/dmrg_heisenberg.py at L=32, D=64). Scratch and intermediates,
        # given back within the call, keep the inclusive bound (excluding it for
        # them too made DMRG's steady state miss two buffers per step).
        cdef dict stacks = <dict>shelf[0]
        cdef list caps = <list>shelf[1]
        cdef Py_ssize_t itemsize = <Py_ssize_t>shelf[2]
        cdef Py_ssize_t i = _bisect_right(caps, n)
        # INVARIANT (the fit bound): a request never gets more than twice its size,
        # so a small result cannot strand a large buffer that a large request then
        # misses.
        cdef Py_ssize_t most = 2 * n - 1 if kept else 2 * n
        cdef Py_ssize_t cap
        cdef object key
        cdef list stack
        while i < len(caps):
            key = caps[i]
            cap = <Py_ssize_t>key
            if cap > most:
                break
            stack = <list>stacks[key]
            if stack:
                self._bytes -= cap * itemsize
                return stack.pop()
            del caps[i]
            del stacks[key]
        if len(caps) > _PRUNE_KEYS:
            _prune(shelf)
        return None

    cpdef recycle(self, object owner, Py_ssize_t aliases=0):
        """Take a released buffer back; retained only when ``aliases == 0`` (the
        subclass documents the policy)."""
        cdef list lane
        if aliases:
            self._refuse(owner, aliases)
            return
        if cnp.PyArray_Check(owner) and cnp.PyArray_NDIM(<cnp.ndarray>owner) == 1 and (
            cnp.PyArray_NBYTES(<cnp.ndarray>owner) <= self._lane_bytes
        ):
            lane = self._lane
            lane.append(owner)
            if len(lane) > self._lane_max:
                self._drain_under_lock()
            return
        cdef object lock = self._lock
        lock.acquire()
        try:
            if self._lane:
                self._drain()
            self._retain(owner)
        finally:
            lock.release()

    def drain_lane(self):
        """Move waiting released buffers to the shelves (`recycle` calls it)."""
        self._drain_under_lock()

    def _drain_locked(self):
        """Move the return lane to the shelves, oldest first (lock held)."""
        self._drain()

    cdef int _drain_under_lock(self) except -1:
        cdef object lock = self._lock
        lock.acquire()
        try:
            self._drain()
        finally:
            lock.release()
        return 0

    cdef int _drain(self) except -1:
        cdef list lane = self._lane
        cdef object owner
        while lane:
            # INVARIANT: the test and the pop run no Python code in between, so a
            # lock-free `acquire` on another thread cannot take the last one first.
            owner = lane.pop(0)
            self._retain(owner)
        return 0

    cdef int _retain(self, object owner) except -1:
        # Keep a released, alias-free buffer, then evict down to the cap (lock held).
        cdef Py_ssize_t n = len(owner)
        if not n:
            return 0  # zero-size buffers are never retained
        cdef object shelf = self._shelves.get(
            <object>cnp.PyArray_DESCR(<cnp.ndarray>owner) if cnp.PyArray_Check(owner)
            else owner.dtype
        )
        if shelf is None:
            return 0  # not a dtype this pool hands out
        cdef Py_ssize_t nbytes = n * <Py_ssize_t>(<tuple>shelf)[2]
        self._released(nbytes)
        if nbytes > self._shelf_limit:
            self._evicted_big += 1
            return 0
        cdef dict stacks = <dict>(<tuple>shelf)[0]
        cdef object stack = stacks.get(n)
        cdef object new
        cdef list caps
        if stack is None:
            new = []
            # INVARIANT: making the list may start a garbage collection whose
            # finalizers give buffers back on this thread (the lock is re-entrant),
            # which may make this very stack first: take theirs if so, so no buffer
            # is lost and no capacity is listed twice.
            stack = stacks.setdefault(n, new)
            if stack is new:
                caps = <list>(<tuple>shelf)[1]
                caps.insert(_bisect_right(caps, n), n)
        (<list>stack).append(owner)
        self._recycled += 1
        self._bytes += nbytes
        if self._bytes > self._shelf_limit:
            self._evict_locked()
        return 0

    def _released_locked(self, Py_ssize_t nbytes):
        """Count a buffer of ``nbytes`` coming back: it is no longer live (lock held)."""
        self._released(nbytes)

    cdef void _released(self, Py_ssize_t nbytes):
        cdef Py_ssize_t out = self._out - nbytes
        if out < 0:
            # A buffer this pool never handed out (`reclaim_buffer` of an adopted
            # array): it was live memory all the same, so the live peak was at least
            # everything retained plus it.
            out = 0
            if self._bytes + nbytes > self._high:
                self._high = self._bytes + nbytes
        self._out = out

    cpdef Py_ssize_t take_lane_hits(self):
        """The lane hits since the last call, and zero them (one atomic step)."""
        cdef Py_ssize_t k = self._lane_hits
        self._lane_hits = 0
        return k
