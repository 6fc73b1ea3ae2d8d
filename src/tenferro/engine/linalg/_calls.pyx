# cython: language_level=3, auto_pickle=False, boundscheck=False, wraparound=False
"""The per-call steps of the SVD and the QR that ran through ctypes, f2py and scipy's BLAS
wrapper, compiled.

* `gesdd_run`: ``?gesdd`` through the function pointer scipy exports in
  ``scipy.linalg.cython_lapack`` (`_lapack.raw_address`), called from C with
  the shape's `_svd.GesddPlan` (every argument by address, as LAPACK takes
  them), the GIL released for the routine. The ctypes call it replaces
  converted fourteen arguments per call (about 1.5 us at any size). The lean
  path passes its pooled arrays (their addresses read here) and the matrix to
  copy into the scratch, saving four address look-ups and a numpy copy call.
* `qr_run`: the whole lean QR of one matrix (`_lean._qr`, `_lean._qr_rows`):
  the copy of the input (transposing for a C-ordered matrix), ``?geqrf``, R
  read off its upper triangle, ``?orgqr`` (``?ungqr``) building Q in place over
  the reflectors, and for a C-ordered matrix the transposing copy of Q into its
  output, in C with the GIL released, on the shape's `QrPlan` (the two routines'
  addresses, scipy's exports as for ``?gesdd``, and the optimal workspace sizes
  LAPACK's queries gave, so the blocked code runs exactly as through the f2py
  wrappers it replaces: the same routines on the same arguments give the same
  bits). The f2py calls allocated ``tau`` and the workspace and parsed their
  arguments (about 2 us per QR), and every step between them was a numpy call.
* `all_finite`: whether every entry of a contiguous floating-point array is
  finite, in one pass over its memory (``x - x`` is 0 for a finite ``x`` and NaN
  otherwise, so the sum of them is 0 exactly when every entry is finite). The
  check every iterative LAPACK call makes first (`_common.finite`); the BLAS
  ``?dot`` it replaces cost a microsecond of wrapper per call.

This module imports nothing: the callers own every buffer (pooled) and every rule.
"""

from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy, memset

ctypedef void (*gesdd_real)(
    void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*,
    void*, void*
) noexcept nogil
ctypedef void (*gesdd_complex)(
    void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*,
    void*, void*, void*
) noexcept nogil


cdef size_t _address_of(object x, Py_buffer* view, bint* held, Py_ssize_t need) except? 0:
    """The address ``x`` is (an int) or holds (a contiguous array, its buffer then held in
    ``view`` until the caller releases it; at least ``need`` bytes, checked)."""
    if type(x) is int:
        return <size_t>x
    PyObject_GetBuffer(x, view, PyBUF_ANY_CONTIGUOUS)
    held[0] = True
    if view.len < need:
        raise ValueError(f"gesdd_run: a buffer holds {view.len} bytes, the plan needs {need}")
    return <size_t>view.buf


def gesdd_run(object plan, object base, object s, object u, object vt, object a=None):
    """Run ``?gesdd`` on the column-major matrix at the start of the scratch ``base``
    (`_svd.GesddPlan`'s layout); returns LAPACK's ``info``.

    ``s``, ``u``, ``vt``: the column-major outputs (any valid memory for U and Vh when
    ``jobz`` is N: LAPACK does not touch them). Each of ``base``, ``s``, ``u``, ``vt``
    is an address (an int: the caller answers for the memory) or a contiguous array
    (its address read here; the scratch checked to hold the plan's ``scratch``
    elements). ``a``: when given, the column-major matrix copied into the scratch
    first (bit for bit; contiguous, at least ``m * n`` elements, checked).
    """
    cdef size_t fn = plan[0]
    cdef char jobz = <char>(<int>plan[1])
    cdef int m = plan[2]
    cdef int n = plan[3]
    cdef int lda = plan[4]
    cdef int ldu = plan[5]
    cdef int ldvt = plan[6]
    cdef int lwork = plan[7]
    cdef Py_ssize_t work_at = plan[9]
    cdef object rwork_at = plan[10]
    cdef Py_ssize_t iwork_at = plan[11]
    # The element size: the matrix fills the scratch up to the workspace.
    cdef Py_ssize_t size = work_at // (<Py_ssize_t>m * n)
    cdef size_t rwork = 0
    cdef int info = 0
    cdef Py_buffer vb, vs, vu, vv, va
    cdef bint hb = False, hs = False, hu = False, hv = False, ha = False
    cdef size_t pb, ps, pu, pv
    try:
        pb = _address_of(base, &vb, &hb, <Py_ssize_t>plan[8] * size)
        ps = _address_of(s, &vs, &hs, 0)
        pu = _address_of(u, &vu, &hu, 0)
        pv = _address_of(vt, &vv, &hv, 0)
        if a is not None:
            PyObject_GetBuffer(a, &va, PyBUF_ANY_CONTIGUOUS)
            ha = True
            if va.len < work_at:
                raise ValueError(
                    f"gesdd_run: the matrix holds {va.len} bytes, the plan needs {work_at}"
                )
            memcpy(<void*>pb, va.buf, <size_t>work_at)
        if rwork_at is None:
            with nogil:
                (<gesdd_real>fn)(
                    &jobz, &m, &n, <void*>pb, &lda, <void*>ps, <void*>pu, &ldu, <void*>pv,
                    &ldvt, <void*>(pb + work_at), &lwork, <void*>(pb + iwork_at), &info,
                )
        else:
            rwork = pb + <size_t>rwork_at
            with nogil:
                (<gesdd_complex>fn)(
                    &jobz, &m, &n, <void*>pb, &lda, <void*>ps, <void*>pu, &ldu, <void*>pv,
                    &ldvt, <void*>(pb + work_at), &lwork, <void*>rwork,
                    <void*>(pb + iwork_at), &info,
                )
    finally:
        if ha:
            PyBuffer_Release(&va)
        if hv:
            PyBuffer_Release(&vv)
        if hu:
            PyBuffer_Release(&vu)
        if hs:
            PyBuffer_Release(&vs)
        if hb:
            PyBuffer_Release(&vb)
    return info


ctypedef fused _real:
    float
    double


cdef inline bint _finite(const _real* p, Py_ssize_t n) noexcept nogil:
    # Four running sums of ``x - x`` (0 for a finite x, NaN otherwise), one pass.
    cdef _real a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
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
            ok = _finite(<const float*>view.buf, view.len // sizeof(float))
        else:
            ok = _finite(<const double*>view.buf, view.len // sizeof(double))
    finally:
        PyBuffer_Release(&view)
    return ok


# ---------------------------------------------------------------------- QR
ctypedef void (*geqrf_fn)(void*, void*, void*, void*, void*, void*, void*, void*) noexcept nogil
ctypedef void (*orgqr_fn)(
    void*, void*, void*, void*, void*, void*, void*, void*, void*
) noexcept nogil

# Elements are moved as unsigned integers of their size (a bit-exact copy: no float
# load may quieten a NaN), a complex128 as two 64-bit halves.
ctypedef struct u128:
    uint64_t lo
    uint64_t hi

ctypedef fused elem:
    uint32_t
    uint64_t
    u128


cdef class QrPlan:
    """Everything about one lean QR shape that does not change between calls (`qr_run`).

    ``geqrf``/``orgqr``: the routines' addresses (`_lapack.raw_address`: ``?orgqr``,
    ``?ungqr`` for complex); ``m x n``: the matrix factored, ``qc`` Q's columns (``k =
    min(m, n)`` reduced, ``m`` complete); ``lwork_qr``/``lwork_org``: the routines'
    optimal workspace sizes (LAPACK's queries); ``itemsize``: the dtype's size in bytes;
    ``rows``: the input is the column-major ``n x m`` transpose of the matrix and Q and
    R are written transposed (`_lean._qr_rows`). ``scratch``: the elements of the one
    pooled scratch buffer a call needs: the matrix's copy (``m * n``), ``tau`` (``k``),
    the workspace, and for ``rows`` Q before its transposition (``m * qc``).

    When Q has the matrix's shape (``qc == n``: a reduced QR with ``m >= n``, or a
    square one), Q is built where the matrix was factored (``?orgqr`` reads the
    reflectors where ``?geqrf`` left them, as LAPACK allows): in Q's own buffer (no
    copy of the matrix in the scratch), or for ``rows`` in the matrix's copy (no
    second ``m x qc`` block). The values are the same as from a separate copy.
    """

    cdef readonly size_t geqrf
    cdef readonly size_t orgqr
    cdef readonly int m
    cdef readonly int n
    cdef readonly int qc
    cdef readonly int k
    cdef readonly int lwork_qr
    cdef readonly int lwork_org
    cdef readonly int itemsize
    cdef readonly bint rows
    cdef readonly Py_ssize_t scratch
    cdef bint in_q
    cdef Py_ssize_t tau_at
    cdef Py_ssize_t work_at
    cdef Py_ssize_t q_at

    def __init__(
        self, size_t geqrf, size_t orgqr, int m, int n, int qc, int lwork_qr, int lwork_org,
        int itemsize, bint rows,
    ):
        if m < 1 or n < 1 or qc < 1 or lwork_qr < 1 or lwork_org < 1:
            raise ValueError(f"QrPlan: invalid shape or workspace {(m, n, qc, lwork_qr, lwork_org)}")
        if itemsize not in (4, 8, 16):
            raise ValueError(f"QrPlan: itemsize must be 4, 8 or 16, got {itemsize}")
        if qc != min(m, n) and qc != m:
            raise ValueError(f"QrPlan: Q's columns must be min(m, n) or m, got {qc}")
        self.geqrf = geqrf
        self.orgqr = orgqr
        self.m = m
        self.n = n
        self.qc = qc
        self.k = min(m, n)
        self.lwork_qr = lwork_qr
        self.lwork_org = lwork_org
        self.itemsize = itemsize
        self.rows = rows
        self.in_q = qc == n
        # The matrix's copy: in the scratch, unless Q's own buffer serves (`in_q`).
        self.tau_at = 0 if self.in_q and not rows else <Py_ssize_t>m * n
        self.work_at = self.tau_at + self.k
        self.q_at = self.work_at + max(lwork_qr, lwork_org)
        self.scratch = self.q_at + (<Py_ssize_t>m * qc if rows and not self.in_q else 0)


cdef inline void _transpose(
    elem* dst, const elem* src, Py_ssize_t rows, Py_ssize_t cols
) noexcept nogil:
    """``dst`` (column-major ``cols x rows``) = the transpose of ``src`` (column-major
    ``rows x cols``)."""
    cdef Py_ssize_t i, j
    for j in range(cols):
        for i in range(rows):
            dst[j + i * cols] = src[i + j * rows]


cdef inline void _upper(
    elem* r, const elem* a, Py_ssize_t m, Py_ssize_t qc, Py_ssize_t n, bint rows
) noexcept nogil:
    """R (``qc x n``) from the upper triangle of the column-major ``m x n`` ``a``, zero
    below its diagonal; written column-major, or transposed (column-major ``n x qc``)
    when ``rows``. Every element of R is written."""
    cdef Py_ssize_t i, j
    memset(r, 0, <size_t>(qc * n) * sizeof(elem))
    for j in range(n):
        for i in range(min(j + 1, qc)):
            if rows:
                r[j + i * n] = a[i + j * m]
            else:
                r[i + j * qc] = a[i + j * m]


cdef void _moves(
    int itemsize, int step, char* dst, const char* src, Py_ssize_t a, Py_ssize_t b,
    Py_ssize_t c, bint rows,
) noexcept nogil:
    """Step ``step`` of `qr_run` for elements of ``itemsize`` bytes: 0 transposes
    (`_transpose`, ``a x b``), 1 writes R (`_upper`, ``m = a``, ``qc = b``, ``n = c``)."""
    if itemsize == 4:
        if step == 0:
            _transpose(<uint32_t*>dst, <const uint32_t*>src, a, b)
        else:
            _upper(<uint32_t*>dst, <const uint32_t*>src, a, b, c, rows)
    elif itemsize == 8:
        if step == 0:
            _transpose(<uint64_t*>dst, <const uint64_t*>src, a, b)
        else:
            _upper(<uint64_t*>dst, <const uint64_t*>src, a, b, c, rows)
    else:
        if step == 0:
            _transpose(<u128*>dst, <const u128*>src, a, b)
        else:
            _upper(<u128*>dst, <const u128*>src, a, b, c, rows)


cdef char* _span(Py_buffer* view, Py_ssize_t need, object what) except NULL:
    if view.len < need:
        raise ValueError(f"qr_run: {what} holds {view.len} bytes, the plan needs {need}")
    return <char*>view.buf


def qr_run(QrPlan plan not None, object a, object scratch, object q, object r):
    """The QR of one matrix on `QrPlan` ``plan``; returns LAPACK's ``info`` (0, or the
    first nonzero one: ``?geqrf`` and ``?orgqr`` report only invalid arguments).

    ``a``: the input, column-major ``m x n`` (``n x m`` when ``plan.rows``; only read);
    ``scratch``: ``plan.scratch`` elements (overwritten); ``q``: Q, column-major ``m x
    qc`` (``rows``: Q^T, column-major ``qc x m``); ``r``: R, column-major ``qc x n``
    (``rows``: R^T, column-major ``n x qc``). Every array is contiguous memory of the
    plan's dtype (checked: sizes; the caller gives the dtype); every element of Q and R
    is written when ``info`` is 0.
    """
    cdef Py_buffer va, vs, vq, vr
    cdef Py_ssize_t size = plan.itemsize
    cdef Py_ssize_t m = plan.m, n = plan.n, qc = plan.qc, k = plan.k
    cdef int im = plan.m, i_n = plan.n, iqc = plan.qc, ik = plan.k
    cdef int lw_qr = plan.lwork_qr, lw_org = plan.lwork_org
    cdef int info = 0
    cdef bint rows = plan.rows
    cdef char* pa
    cdef char* ps
    cdef char* pq
    cdef char* pr
    cdef char* tau
    cdef char* work
    cdef char* pm
    cdef char* qs
    cdef geqrf_fn geqrf = <geqrf_fn>plan.geqrf
    cdef orgqr_fn orgqr = <orgqr_fn>plan.orgqr
    PyObject_GetBuffer(a, &va, PyBUF_ANY_CONTIGUOUS)
    try:
        PyObject_GetBuffer(scratch, &vs, PyBUF_ANY_CONTIGUOUS)
        try:
            PyObject_GetBuffer(q, &vq, PyBUF_ANY_CONTIGUOUS)
            try:
                PyObject_GetBuffer(r, &vr, PyBUF_ANY_CONTIGUOUS)
                try:
                    pa = _span(&va, m * n * size, "the input")
                    ps = _span(&vs, plan.scratch * size, "the scratch")
                    pq = _span(&vq, m * qc * size, "Q")
                    pr = _span(&vr, qc * n * size, "R")
                    tau = ps + plan.tau_at * size
                    work = ps + plan.work_at * size
                    # pm: where the matrix is factored; qs: where Q is built.
                    if rows:
                        pm = ps
                        qs = ps if plan.in_q else ps + plan.q_at * size
                    else:
                        pm = pq if plan.in_q else ps
                        qs = pq
                    with nogil:
                        if rows:
                            _moves(size, 0, pm, pa, n, m, 0, False)
                        else:
                            memcpy(pm, pa, <size_t>(m * n * size))
                        geqrf(&im, &i_n, pm, &im, tau, work, &lw_qr, &info)
                        if info == 0:
                            _moves(size, 1, pr, pm, m, qc, n, rows)
                            # The reflectors (the first k columns) go into Q's memory
                            # unless they are there already, and ?orgqr overwrites
                            # them in place with Q (it sets any columns past k itself).
                            if qs != pm:
                                memcpy(qs, pm, <size_t>(m * k * size))
                            orgqr(&im, &iqc, &ik, qs, &im, tau, work, &lw_org, &info)
                            if info == 0 and rows:
                                _moves(size, 0, pq, qs, m, qc, 0, False)
                finally:
                    PyBuffer_Release(&vr)
            finally:
                PyBuffer_Release(&vq)
        finally:
            PyBuffer_Release(&vs)
    finally:
        PyBuffer_Release(&va)
    return info
