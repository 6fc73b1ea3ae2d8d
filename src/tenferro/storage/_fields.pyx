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

    def __del__(self):
        # The hot path of every dropped engine output: a buffer with a live recycler
        # that never had a root or a stale write root (so it cannot have an alias) and
        # that no failed call read goes straight back. Everything else, alias counting
        # included, is `HostBuffer._release` (storage/host.py), one implementation.
        cdef object recycler = self.recycler
        if recycler is None:
            return
        cdef object pool = recycler()
        if pool is None:
            return  # the engine is gone: the buffer is simply freed
        if self.failed_read or self._root is not None or self._stale is not None:
            self._release(recycler, pool)
            return
        pool.recycle(self.owner, 0)
