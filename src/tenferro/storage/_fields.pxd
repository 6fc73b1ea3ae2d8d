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
