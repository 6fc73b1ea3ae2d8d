# The C layout of `HostBuffer`'s fields (storage/_fields.pyx); engine/_core.pyx cimports
# it to build buffers with plain stores.

cdef class BufferFields:
    cdef public object owner
    cdef public object flat
    cdef public object recycler
    cdef public object origin
    cdef public object _root
    cdef public object _stale
    cdef public object exclusive
    cdef public object failed_read
    # Engine reads in flight by the compiled core (engine/_core.pyx): see `readers`.
    cdef Py_ssize_t _pins
    cdef int _finalize(self) except -1


cdef class ReturnLane:
    cdef readonly list _lane
    cdef public Py_ssize_t _lane_bytes
    cdef public Py_ssize_t _lane_max
    cdef Py_ssize_t _lane_hits
    # The shelves and the counters the hot steps change (engine/pool.py documents them).
    cdef public dict _shelves
    cdef public object _lock
    cdef public Py_ssize_t _bytes
    cdef public Py_ssize_t _out
    cdef public Py_ssize_t _high
    cdef public Py_ssize_t _recycled
    cdef public Py_ssize_t _evicted_big
    cdef public Py_ssize_t _shelf_limit
    cpdef object acquire(self, object dtype, Py_ssize_t n, bint kept=*)
    cdef object _best_fit(self, tuple shelf, Py_ssize_t n, bint kept)
    cpdef recycle(self, object owner, Py_ssize_t aliases=*)
    cdef int _drain_under_lock(self) except -1
    cdef int _drain(self) except -1
    cdef int _retain(self, object owner) except -1
    cdef void _released(self, Py_ssize_t nbytes)
    cpdef Py_ssize_t take_lane_hits(self)
