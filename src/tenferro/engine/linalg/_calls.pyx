# cython: language_level=3, auto_pickle=False, boundscheck=False, wraparound=False
"""The per-call steps of the SVD that ran through ctypes and scipy's BLAS wrapper, compiled.

* `gesdd_run`: ``?gesdd`` through the function pointer scipy exports in
  ``scipy.linalg.cython_lapack`` (`_lapack.raw_address`), called from C with
  the shape's `_svd.GesddPlan` (every argument by address, as LAPACK takes
  them), the GIL released for the routine. The ctypes call it replaces
  converted fourteen arguments per call (about 1.5 us at any size).
* `all_finite`: whether every entry of a contiguous floating-point array is
  finite, in one pass over its memory (``x - x`` is 0 for a finite ``x`` and NaN
  otherwise, so the sum of them is 0 exactly when every entry is finite). The
  check every iterative LAPACK call makes first (`_common.finite`); the BLAS
  ``?dot`` it replaces cost a microsecond of wrapper per call.

This module imports nothing: the callers own every buffer (pooled) and every rule.
"""

from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer

ctypedef void (*gesdd_real)(
    void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*,
    void*, void*
) noexcept nogil
ctypedef void (*gesdd_complex)(
    void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*,
    void*, void*, void*
) noexcept nogil


cpdef int gesdd_run(object plan, size_t base, size_t s, size_t u, size_t vt) except? -99999:
    """Run ``?gesdd`` on the column-major matrix at the start of the scratch at ``base``
    (`_svd.GesddPlan`'s layout); returns LAPACK's ``info``.

    ``s``, ``u``, ``vt``: the addresses of the column-major outputs (any valid address
    for U and Vh when ``jobz`` is N: LAPACK does not touch them).
    """
    cdef size_t fn = plan[0]
    cdef char jobz = <char>(<int>plan[1])
    cdef int m = plan[2]
    cdef int n = plan[3]
    cdef int lda = plan[4]
    cdef int ldu = plan[5]
    cdef int ldvt = plan[6]
    cdef int lwork = plan[7]
    cdef size_t work = base + <size_t>plan[9]
    cdef object rwork_at = plan[10]
    cdef size_t iwork = base + <size_t>plan[11]
    cdef size_t rwork = 0
    cdef int info = 0
    cdef void* a = <void*>base
    if rwork_at is None:
        with nogil:
            (<gesdd_real>fn)(
                &jobz, &m, &n, a, &lda, <void*>s, <void*>u, &ldu, <void*>vt, &ldvt,
                <void*>work, &lwork, <void*>iwork, &info,
            )
    else:
        rwork = base + <size_t>rwork_at
        with nogil:
            (<gesdd_complex>fn)(
                &jobz, &m, &n, a, &lda, <void*>s, <void*>u, &ldu, <void*>vt, &ldvt,
                <void*>work, &lwork, <void*>rwork, <void*>iwork, &info,
            )
    return info


cdef inline bint _finite_double(const double* p, Py_ssize_t n) noexcept nogil:
    cdef double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        a0 += p[i] - p[i]
        a1 += p[i + 1] - p[i + 1]
        a2 += p[i + 2] - p[i + 2]
        a3 += p[i + 3] - p[i + 3]
        i += 4
    while i < n:
        a0 += p[i] - p[i]
        i += 1
    return a0 + a1 + a2 + a3 == 0.0


cdef inline bint _finite_float(const float* p, Py_ssize_t n) noexcept nogil:
    cdef float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        a0 += p[i] - p[i]
        a1 += p[i + 1] - p[i + 1]
        a2 += p[i + 2] - p[i + 2]
        a3 += p[i + 3] - p[i + 3]
        i += 4
    while i < n:
        a0 += p[i] - p[i]
        i += 1
    return a0 + a1 + a2 + a3 == 0.0


cpdef bint all_finite(object arr, bint single) except -1:
    """Whether every entry of ``arr`` is finite: a C- or F-contiguous array of float64 or
    complex128 (``single`` False) or float32 or complex64 (``single`` True); the caller
    checked the dtype. Raises (ValueError or BufferError, from the buffer protocol)
    for an array that is not contiguous."""
    cdef Py_buffer view
    cdef bint ok
    PyObject_GetBuffer(arr, &view, PyBUF_ANY_CONTIGUOUS)
    try:
        if single:
            ok = _finite_float(<const float*>view.buf, view.len // sizeof(float))
        else:
            ok = _finite_double(<const double*>view.buf, view.len // sizeof(double))
    finally:
        PyBuffer_Release(&view)
    return ok
