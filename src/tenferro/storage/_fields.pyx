# cython: language_level=3, auto_pickle=False
"""`HostBuffer`'s fields and its finalizer's common case, compiled.

`HostBuffer` (storage/host.py) is a Python class over this extension type: its
methods, the ownership rules and every uncommon case stay there; this holds the
fields as C members (the compiled core, engine/_core.pyx, builds every pooled
output's buffer with plain stores instead of a Python attribute write per
field) and the finalizer's hot path. This module imports nothing of tenferro,
so storage/host.py can sit on it without an import cycle.
"""

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


cdef class BufferFields:
    """The fields of a `HostBuffer` (documented there). A new instance has every field
    None; `HostBuffer.__init__` and `engine._core` set them all."""

    @property
    def core_pins(self):
        """Engine reads of this buffer in flight in the compiled core (engine/_core.pyx),
        on every thread: `HostBuffer.readers` adds the general path's pins to it."""
        return self._pins

    def __del__(self):
        # The hot path of every dropped engine output, and of a dropped result that a
        # slice, reshape or host_data() gave a read root: a buffer with a live
        # recycler, no stale write root, and either no root or a root that nothing
        # else holds and no weak reference can revive, goes straight back. A buffer
        # that a failed call read asks `HostBuffer._forget_if_held_elsewhere` first;
        # aliases, weak references to the root and stale write roots are
        # `HostBuffer._release` (storage/host.py). One implementation each.
        cdef object recycler = self.recycler
        if recycler is None:
            return
        cdef object pool
        if PyWeakref_CheckRefExact(recycler):
            # What ``recycler()`` returns, as a C call (an exact `weakref.ref`: a subclass
            # may define its own call).
            pool = <object>PyWeakref_GetObject(recycler)
        else:
            pool = recycler()
        if pool is None:
            return  # the engine is gone: the buffer is simply freed
        if self.failed_read and self._forget_if_held_elsewhere(pool):
            return
        if self._stale is not None:
            self._release(recycler, pool)
            return
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
                return
            self._root = None  # the root, and its holder, die here
        if isinstance(pool, ReturnLane):
            # A C call, no Python frame: the engine's pool (its lane takes the buffer).
            (<ReturnLane>pool).recycle(self.owner, 0)
        else:
            pool.recycle(self.owner, 0)


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


cdef class ReturnLane:
    """The lock-free hand-out and return lanes of a recycler, compiled.

    `engine.pool.BufferPool` derives from it; the policy (the lane's byte bound, its
    drain, the shelves behind it) is documented and kept there. Here are only the two
    hot calls and the lane itself, as C code that runs with the GIL held and calls no
    Python code between reading and changing the lane, so every step is atomic with
    respect to other threads without a lock (what the ``deque`` and the list of hits
    gave before, minus their Python frames):

    * `acquire` hands out the newest waiting buffer when its dtype and size match the
      request exactly (counted in ``_lane_hits``), else calls the subclass's
      ``_acquire_locked`` (the shelves, under the pool's lock);
    * `recycle` appends an alias-free released buffer of at most ``_lane_bytes`` to
      the lane (draining it through the subclass's ``drain_lane`` once it holds more
      than ``_lane_max``), else calls the subclass's ``_recycle_locked``.

    Both are ``cpdef``: the compiled core (engine/_core.pyx) and the finalizer
    (`BufferFields.__del__`) call them at C level, and a subclass or a test that
    replaces them in Python is still called instead.
    """

    def __cinit__(self):
        self._lane = []
        self._lane_bytes = -1
        self._lane_max = 8
        self._lane_hits = 0

    cpdef object acquire(self, object dtype, Py_ssize_t n, bint kept=False):
        """An uninitialised 1-D buffer of ``dtype`` with capacity >= ``n`` (the
        subclass documents the policy)."""
        cdef list lane = self._lane
        cdef Py_ssize_t k = len(lane)
        cdef object newest
        if n > 0 and k:
            newest = lane[k - 1]
            # INVARIANT: nothing between this read and the pop below runs Python code
            # (len() and .dtype of an ndarray are C), so no other thread can take it.
            if len(newest) == n and newest.dtype is dtype:
                del lane[k - 1]
                self._lane_hits += 1
                return newest
        return self._acquire_locked(dtype, n, kept)

    cpdef recycle(self, object owner, Py_ssize_t aliases=0):
        """Take a released buffer back; retained only when ``aliases == 0`` (the
        subclass documents the policy)."""
        cdef list lane
        if not aliases and owner.nbytes <= self._lane_bytes:
            lane = self._lane
            lane.append(owner)
            if len(lane) > self._lane_max:
                self.drain_lane()
            return
        self._recycle_locked(owner, aliases)

    cpdef Py_ssize_t take_lane_hits(self):
        """The lane hits since the last call, and zero them (one atomic step)."""
        cdef Py_ssize_t k = self._lane_hits
        self._lane_hits = 0
        return k

    cpdef object lane_pop_oldest(self):
        """The oldest waiting buffer, removed from the lane; None when it is empty."""
        cdef list lane = self._lane
        if not lane:
            return None
        return lane.pop(0)
