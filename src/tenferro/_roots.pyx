# cython: language_level=3, auto_pickle=False
"""The roots of alias counting (`tenferro.borrow`), built in C.

A root is a 1-D array over a buffer's whole memory whose ``base`` is a holder
object (`borrow._Memory`), not an ndarray, so numpy collapses every view's base
chain onto the root and the root's reference count counts the live views.
numpy's C API builds exactly that array in one step (`PyArray_NewFromDescr` over
the buffer's data pointer, then `PyArray_SetBaseObject` to the holder), so the
holder never lends the memory to anyone: it exports no buffer and no array
interface, ever. Building the root through ``np.asarray`` of a holder that
offered ``__array_interface__`` once cost ~1.2 us a root; this costs ~0.15 us.
"""

cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, PyTypeObject

cdef extern from "numpy/arrayobject.h":
    # Steals a reference to ``descr``; returns a new reference (NULL on error).
    object PyArray_NewFromDescr(
        PyTypeObject* subtype, PyObject* descr, int nd, cnp.npy_intp* dims,
        cnp.npy_intp* strides, void* data, int flags, PyObject* obj
    )

cnp.import_array()


cpdef cnp.ndarray root_over(cnp.ndarray flat, object holder, bint writable):
    """A root over the memory of the 1-D contiguous array ``flat`` (its data pointer,
    length and dtype), writable only when ``writable``, whose base is ``holder``
    (which keeps ``flat`` alive)."""
    if cnp.PyArray_NDIM(flat) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(flat):
        raise ValueError("root_over: flat must be a 1-D contiguous array")
    cdef cnp.npy_intp n = cnp.PyArray_DIM(flat, 0)
    cdef object descr = flat.dtype
    cdef int flags = cnp.NPY_ARRAY_CARRAY if writable else cnp.NPY_ARRAY_CARRAY_RO
    Py_INCREF(descr)  # PyArray_NewFromDescr steals a reference to the descriptor
    cdef cnp.ndarray root = PyArray_NewFromDescr(
        <PyTypeObject*>cnp.ndarray, <PyObject*>descr, 1, &n, NULL,
        cnp.PyArray_DATA(flat), flags, NULL
    )
    Py_INCREF(holder)  # PyArray_SetBaseObject steals a reference to the base
    cnp.PyArray_SetBaseObject(root, holder)
    return root
