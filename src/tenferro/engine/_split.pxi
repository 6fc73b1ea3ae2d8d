# Included by engine/_core.pyx (one extension, the core's fields and protocol helpers).
#
# quimb's split kernels for tenferro arrays, compiled: ``svd_truncated`` and
# ``qr_stabilized`` (namespace/_autoray_quimb.py registers them with autoray under
# quimb's names and documents what each computes). The decomposition itself is
# `tenferro.linalg`'s (``svd``, ``qr``: the lean LAPACK paths); what follows it ran as
# some twenty Python frames and numpy calls per split (a truncation count over a
# cumulative sum, slices, a square root, a broadcast product into a new pooled output
# per factor), 15-20 us of overhead on every split quimb makes, which its numba
# kernels do not have. Here it is one pass of C over the factors' memory:
#
# * the count of kept singular values (`_kept`), quimb's rule in the values' own
#   precision (a float32 spectrum compares and sums in float32, the cutoff cast to it
#   first, as numpy's weak-scalar rule does; sums run in order, as ``cumsum`` adds);
# * each factor that absorbs the values (``U[:, :n] * w`` or ``w[:, None] * VH[:n]``)
#   and each factor that takes R's diagonal phases, written by `_scale` into a new
#   pooled output in the factor's memory order (a real factor times a real weight:
#   the product of two floats rounded once, which is numpy's product; a complex
#   factor: each part, or the complex product).
#
# Each output follows the core's protocol (module docstring): the factor's buffer
# pinned and checked for a writer, the output acquired from the pool, every element
# written, the operand marked ``failed_read`` and the output forgotten if anything
# raises, the pin released in ``finally``. Renormalisation and the truncation error
# (options quimb's own sweeps leave off) are computed with numpy by
# `_autoray_quimb._svd_plan`, the composed rule's own formulas.

from libc.math cimport hypot, hypotf, sqrt, sqrtf
from libc.stdlib cimport free, malloc

# Bound by `bind_split` (namespace/_autoray_quimb.py, at its import).
cdef dict _svd_forms = None
cdef dict _cutoff_modes = None
cdef dict _qr_forms = None
cdef object _split_fallback = None
cdef object _split_plan = None
cdef object _split_error = None
cdef object _split_linalg = None
cdef object _np_sqrt = None

# What a factor becomes (`_autoray_quimb`'s codes): absent, as decomposed, times s,
# times sqrt(s).
DEF _NONE = 0
DEF _PLAIN = 1
DEF _TIMES_S = 2
DEF _TIMES_SQRT = 3


def bind_split(
    dict svd_forms, dict cutoff_modes, dict qr_forms, object fallback, object plan,
    object error, object linalg
):
    """Bind the kernels' tables and helpers (namespace/_autoray_quimb.py, at its import):
    quimb's absorb and cutoff codes, ``fallback(name, *args, **kwargs)`` (quimb's
    composed function), ``plan(flat, k, cutoff, mode, max_bond, renorm, want_error)``
    (the numpy rule, for renormalisation and the error), ``error(value)`` (a
    truncation error as quimb's composed function hands it out) and ``linalg()``
    (the `tenferro.linalg` module)."""
    global _svd_forms, _cutoff_modes, _qr_forms, _split_fallback, _split_plan
    global _split_error, _split_linalg, _np_sqrt
    import numpy
    _np_sqrt = numpy.sqrt
    _svd_forms = svd_forms
    _cutoff_modes = cutoff_modes
    _qr_forms = qr_forms
    _split_fallback = fallback
    _split_plan = plan
    _split_error = error
    _split_linalg = linalg


cdef inline object _code(dict table, object key):
    try:
        return table.get(key)
    except TypeError:  # unhashable: quimb's own lookup raises
        return None


ctypedef fused _flt:
    float
    double


cdef Py_ssize_t _kept(
    const _flt* s, Py_ssize_t k, double cutoff, int mode, Py_ssize_t max_bond
) noexcept nogil:
    """How many of the descending singular values ``s[:k]`` quimb keeps, without
    renormalisation: modes 1 ``abs``, 2 ``rel``, 3 ``sum2``, 4 ``rsum2``, 5 ``sum1``,
    6 ``rsum1`` (`_autoray_quimb`'s rule, step for step, in ``s``'s precision)."""
    cdef Py_ssize_t n = 0, i
    cdef _flt c, bound, acc, term
    if cutoff > 0.0:
        if mode == 1:
            c = <_flt>cutoff
            for i in range(k):
                if s[i] > c:
                    n += 1
        elif mode == 2:
            c = <_flt>cutoff * s[0]
            for i in range(k):
                if s[i] > c:
                    n += 1
        else:
            # The cumulative sums of s**2 (modes 3, 4) or s, added in order.
            acc = 0
            for i in range(k):
                term = s[i] * s[i] if mode <= 4 else s[i]
                acc = acc + term
            if mode == 4 or mode == 6:
                bound = acc * <_flt>(1.0 - cutoff)
            else:
                bound = acc - <_flt>cutoff
            acc = 0
            for i in range(k):
                term = s[i] * s[i] if mode <= 4 else s[i]
                acc = acc + term
                if acc < bound:
                    n += 1
            n += 1
        if n < 1:
            n = 1
        if max_bond > 0 and n > max_bond:
            n = max_bond
    elif max_bond > 0:
        n = max_bond
    else:
        n = k
    return n


cdef void _scale_flt(
    const _flt* a, _flt* o, const double* w, Py_ssize_t p, Py_ssize_t rows,
    Py_ssize_t cols, bint along_cols, int we, int ww, bint conj
) noexcept nogil:
    """``o`` (column-major ``rows x cols``) = the leading block of the column-major
    ``a`` (``p`` rows) times ``w``, per column (``along_cols``) or per row. ``we``: 1
    for real elements, 2 for complex (pairs); ``ww``: 1 for real weights, 2 for
    complex ones (``conj``: their conjugates)."""
    cdef Py_ssize_t i, j, src, dst, wi
    cdef double ar, ai, wr, wim
    for j in range(cols):
        for i in range(rows):
            src = (i + j * p) * we
            dst = (i + j * rows) * we
            wi = (j if along_cols else i) * ww
            if ww == 1:
                o[dst] = <_flt>(<double>a[src] * w[wi])
                if we == 2:
                    o[dst + 1] = <_flt>(<double>a[src + 1] * w[wi])
            else:
                ar = a[src]
                ai = a[src + 1]
                wr = w[wi]
                wim = -w[wi + 1] if conj else w[wi + 1]
                o[dst] = <_flt>(ar * wr - ai * wim)
                o[dst + 1] = <_flt>(ar * wim + ai * wr)


cdef inline int _kind(object flat) except -1:
    """0 float32, 1 float64, 2 complex64, 3 complex128 (the array's element type),
    -1 anything else."""
    cdef int t = cnp.PyArray_TYPE(<cnp.ndarray>flat)
    if t == cnp.NPY_FLOAT:
        return 0
    if t == cnp.NPY_DOUBLE:
        return 1
    if t == cnp.NPY_CFLOAT:
        return 2
    if t == cnp.NPY_CDOUBLE:
        return 3
    return -1


cdef object _scaled(
    object eng, BufferFields st, object dtype, Py_ssize_t p, Py_ssize_t rows,
    Py_ssize_t cols, bint along_cols, const double* w, int ww, bint conj, bint flipped
):
    """A new pooled column-major ``rows x cols`` tensor of ``dtype``: `_scale_flt` of the
    buffer ``st`` (a column-major matrix of ``p`` rows, of ``dtype``) under the core's
    protocol, as the C-ordered view of it when ``flipped``; with ``st`` None, the
    weights themselves (``rows`` of them, real). None when ``st`` is exclusively
    borrowed or not of ``dtype``'s floating element type."""
    cdef object fa = None, flat, r
    cdef tuple shape
    cdef object owner = None  # bound before the try: _forget reads it
    cdef object np_dt = _np_dtype(dtype)
    cdef Py_ssize_t n_out = rows * cols, i
    cdef int kind = -1
    cdef void* src
    cdef void* dst
    if st is not None:
        st._pins += 1  # a pin (module docstring, step 1)
    try:
        if st is not None:
            fa = st.flat
            if st.exclusive is not None or not cnp.PyArray_Check(fa):
                return None
            kind = _kind(fa)
            if fa.dtype != np_dt or kind < 0 or (ww == 2 and kind < 2):
                return None
        owner = _acquire(eng, np_dt, n_out)
        flat = owner if len(owner) == n_out else owner[:n_out]
        dst = cnp.PyArray_DATA(<cnp.ndarray>flat)
        if st is None:
            kind = _kind(flat)
            if kind == 0:
                for i in range(n_out):
                    (<float*>dst)[i] = <float>w[i]
            elif kind == 1:
                for i in range(n_out):
                    (<double*>dst)[i] = w[i]
            else:
                raise TypeError(f"svd_truncated: singular values of dtype {np_dt}")
        else:
            src = cnp.PyArray_DATA(<cnp.ndarray>fa)
            if kind == 0 or kind == 2:
                _scale_flt(<const float*>src, <float*>dst, w, p, rows, cols, along_cols,
                           1 + (kind == 2), ww, conj)
            else:
                _scale_flt(<const double*>src, <double*>dst, w, p, rows, cols, along_cols,
                           1 + (kind == 3), ww, conj)
        if st is not None:
            shape = (rows, cols)
        else:
            shape = (rows,)
        r = pooled(shape, dtype, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        if st is not None:
            st.failed_read = True
        raise
    finally:
        if st is not None:
            st._pins -= 1
    return c_view(r) if flipped else r


cdef object _factor(object r):
    """A decomposition's result as ``(buffer, p, q, flipped, dtype)``: a column-major owner of
    ``p x q`` (``flipped`` False), or the owner a C-ordered result is the reversed view
    of (True); None for anything else."""
    cdef object src
    cdef tuple shape
    if type(r) is Tensor:
        src = _get(r, _T_ST)
        if type(src) is not HostBuffer:
            return None
        shape = _get(r, _T_SHAPE)
        return src, shape[0], shape[1], False, _get(r, _T_DTYPE)
    src = _c_source(r)
    if src is None:
        return None
    shape = _get(r, _V_SHAPE)
    return src, shape[1], shape[0], True, _get(r, _V_DTYPE)


# ---------------------------------------------------------------------- svd_truncated
def svd_truncated(
    object x, object cutoff=-1.0, object cutoff_mode=2, object max_bond=-1, object absorb=0,
    object renorm=0, object info=None, **kwargs
):
    """quimb's ``svd_truncated`` of one tenferro matrix (namespace/_autoray_quimb.py)."""
    cdef object form = _code(_svd_forms, absorb)
    cdef object mode = _code(_cutoff_modes, cutoff_mode)
    cdef object u = None, s = None, vh = None
    if not (
        kwargs
        or form is None
        or mode is None
        or (type(x) is not Tensor and type(x) is not TensorView)
        or len(x._shape) != 2
        or 0 in x._shape
    ):
        got = _svd_lean_split(x)
        u, s, vh = got if got is not None else _split_linalg().svd(x, full_matrices=False)
    cdef int lform = 0, rform = 0
    cdef bint s_out = False
    cdef object uf = None, vf = None
    cdef bint ok = type(s) is Tensor and type(_get(s, _T_ST)) is HostBuffer
    if ok:
        lform, s_out, rform = form
        if lform >= _TIMES_S:
            uf = _factor(u)
            ok = uf is not None
        if rform >= _TIMES_S:
            vf = _factor(vh)
            ok = ok and vf is not None
    if not ok:
        # A batch, extra options, a tracer, an unknown code, an empty matrix (or results
        # not in the forms tenferro.linalg gives): quimb's composed function.
        return _split_fallback(
            "svd_truncated", x, cutoff, cutoff_mode, max_bond, absorb, renorm, info, **kwargs
        )
    if info is not None and len(info) == 0:
        info["error"] = None  # an empty dict asks for every extra (quimb's rule)
    cdef bint want_error = info is not None and "error" in info
    got = _svd_body(s, uf, vf, lform, rform, s_out, cutoff, mode, max_bond, renorm, want_error)
    if got is None:
        # An operand was exclusively borrowed meanwhile (never, for fresh results,
        # which nothing else sees): the composed function.
        return _split_fallback(
            "svd_truncated", x, cutoff, cutoff_mode, max_bond, absorb, renorm, info
        )
    n, left, vals, right, error = got
    cdef Py_ssize_t k = s._shape[0]
    if lform == _PLAIN:
        left = u if n == k else u[:, :n]
    if rform == _PLAIN:
        right = vh if n == k else vh[:n]
    if s_out and vals is None:
        vals = s if n == k else s[:n]
    if want_error:
        info["error"] = error if type(error) is float else _split_error(error)
    return left, vals, right


cdef object _svd_body(
    object s, object uf, object vf, int lform, int rform, bint s_out, object cutoff,
    object mode, object max_bond, object renorm, bint want_error
):
    """The plan and each absorbing factor, with the singular values pinned:
    ``(n, left, values, right, error)``, None for a factor the caller slices itself;
    None when an operand was exclusively borrowed."""
    cdef BufferFields st = _get(s, _T_ST)
    cdef Py_ssize_t k = (<tuple>_get(s, _T_SHAPE))[0]
    cdef Py_ssize_t n, i
    cdef object flat, norm = None, error = None, w_arr = None
    cdef int kind
    cdef double* w = NULL
    cdef double* wsq = NULL
    cdef const float* sf
    cdef const double* sd
    cdef object eng, left = None, right = None, vals = None
    st._pins += 1
    try:
        flat = st.flat
        if st.exclusive is not None:
            return None
        kind = _kind(flat) if cnp.PyArray_Check(flat) else -1
        if (
            kind == 0 or kind == 1
        ) and not renorm and (type(cutoff) is float or type(cutoff) is int) and (
            type(max_bond) is int
        ):
            if kind == 0:
                n = _kept(<const float*>cnp.PyArray_DATA(<cnp.ndarray>flat), k,
                          <double>cutoff, <int>mode, <Py_ssize_t>max_bond)
            else:
                n = _kept(<const double*>cnp.PyArray_DATA(<cnp.ndarray>flat), k,
                          <double>cutoff, <int>mode, <Py_ssize_t>max_bond)
            if n >= k:
                n = k
                error = 0.0 if want_error else None
            elif want_error:
                error = _split_plan(flat, k, cutoff, mode, max_bond, renorm, True)[2]
        else:
            n, norm, error = _split_plan(flat, k, cutoff, mode, max_bond, renorm, want_error)
        if uf is None and vf is None and not (s_out and norm is not None):
            return n, None, None, None, error
        # The kept values as quimb absorbs them, in double (exact for float32 values,
        # whose products rounded once to float32 are numpy's float32 products):
        # renormalised (numpy's values, `plan`), else read in place; their square
        # roots, taken in the values' precision, where a factor takes those.
        w = <double*>malloc(2 * max(n, 1) * sizeof(double))
        if w == NULL:
            raise MemoryError()
        wsq = w + n
        if norm is not None:
            w_arr = flat[:n] * norm
            for i, v in enumerate(w_arr.tolist()):
                w[i] = v
            if lform == _TIMES_SQRT or rform == _TIMES_SQRT:
                for i, v in enumerate(_np_sqrt(w_arr).tolist()):
                    wsq[i] = v
        elif kind == 0:
            sf = <const float*>cnp.PyArray_DATA(<cnp.ndarray>flat)
            for i in range(n):
                w[i] = sf[i]
                wsq[i] = sqrtf(sf[i])
        elif kind == 1:
            sd = <const double*>cnp.PyArray_DATA(<cnp.ndarray>flat)
            for i in range(n):
                w[i] = sd[i]
                wsq[i] = sqrt(sd[i])
        else:
            return None
        eng = current()
        if uf is not None:
            left = _absorbed(eng, uf, n, True, w if lform == _TIMES_S else wsq)
            if left is None:
                return None
        if vf is not None:
            right = _absorbed(eng, vf, n, False, w if rform == _TIMES_S else wsq)
            if right is None:
                return None
        if s_out and norm is not None:
            # The renormalised values (each weight times one: the weights themselves).
            vals = _scaled(eng, None, _get(s, _T_DTYPE), n, n, 1, False, w, 1, False, False)
            if vals is None:
                return None
        return n, left, vals, right, error
    except BaseException:
        st.failed_read = True
        raise
    finally:
        free(w)
        st._pins -= 1


cdef object _absorbed(object eng, tuple f, Py_ssize_t n, bint left, const double* w):
    """``U[:, :n] * w`` (``left``) or ``w[:, None] * VH[:n]`` in a new pooled result in the
    factor's memory order."""
    cdef BufferFields st = f[0]
    cdef Py_ssize_t p = f[1], q = f[2]
    cdef bint flipped = f[3]
    # The owner holds the factor (flipped: its transpose): the kept singular vectors are
    # its leading columns when they are the factor's columns, else its rows.
    cdef bint along_cols = left != flipped
    cdef Py_ssize_t rows = p if along_cols else n
    cdef Py_ssize_t cols = n if along_cols else q
    return _scaled(eng, st, f[4], p, rows, cols, along_cols, w, 1, False, flipped)


# ---------------------------------------------------------------------- qr_stabilized
cdef void _phases_flt(
    const _flt* a, double* ph, Py_ssize_t rows, Py_ssize_t k, int we
) noexcept nogil:
    """quimb's ``sgn`` of the diagonal of the column-major ``a`` (``rows`` rows): ``d /
    |d|``, 1 where ``d`` is 0, in ``a``'s precision (numpy's formulas: ``(d + z) / (|d|
    + z)``, a complex quotient by a real one as numpy's complex division takes it);
    ``ph`` gets ``k`` of them (pairs for complex, ``we`` 2)."""
    cdef Py_ssize_t i, at
    cdef _flt dr, di, z, ad, scl
    for i in range(k):
        at = i * (rows + 1) * we
        dr = a[at]
        if we == 1:
            z = 1 if dr == 0 else 0
            ph[i] = <_flt>((dr + z) / ((-dr if dr < 0 else dr) + z))
        else:
            di = a[at + 1]
            if dr == 0 and di == 0:
                ph[2 * i] = 1.0
                ph[2 * i + 1] = 0.0
            else:
                if _flt is float:
                    ad = hypotf(dr, di)
                else:
                    ad = hypot(dr, di)
                scl = <_flt>1.0 / ad
                ph[2 * i] = <_flt>(dr * scl)
                ph[2 * i + 1] = <_flt>(di * scl)


cdef int _phases(BufferFields st, double* ph, Py_ssize_t rows, Py_ssize_t k) except -1:
    """`_phases_flt` of the buffer ``st`` under a pin: 1 when written, 0 when ``st`` is
    exclusively borrowed or not floating."""
    cdef object fa
    cdef int kind
    st._pins += 1
    try:
        fa = st.flat
        if st.exclusive is not None or not cnp.PyArray_Check(fa):
            return 0
        kind = _kind(fa)
        if kind == 0 or kind == 2:
            _phases_flt(<const float*>cnp.PyArray_DATA(<cnp.ndarray>fa), ph, rows, k,
                        1 + (kind == 2))
        elif kind == 1 or kind == 3:
            _phases_flt(<const double*>cnp.PyArray_DATA(<cnp.ndarray>fa), ph, rows, k,
                        1 + (kind == 3))
        else:
            return 0
        return 1
    except BaseException:
        st.failed_read = True
        raise
    finally:
        st._pins -= 1


cdef object _stabilized(object q, object r, bint want_q, bint want_r):
    """Q and R with the phases of R's diagonal moved from R into Q, each a new pooled
    result in its memory order; None when they are not in `tenferro.linalg`'s forms
    or an operand was exclusively borrowed."""
    cdef object rf = _factor(r)
    cdef object qf = _factor(q) if want_q else None
    if rf is None or (want_q and qf is None):
        return None
    cdef BufferFields rst = rf[0]
    cdef Py_ssize_t rp = rf[1], rq = rf[2]
    cdef bint r_flipped = rf[3]
    cdef Py_ssize_t k = min(rp, rq)
    cdef int ww = 2 if (<object>rf[4]).is_complex else 1
    cdef double* ph = <double*>malloc(2 * max(k, 1) * sizeof(double))
    if ph == NULL:
        raise MemoryError()
    cdef object eng
    try:
        if not _phases(rst, ph, rp, k):
            return None
        eng = current()
        if want_r:
            # R's rows (its owner's columns when flipped) take the phases.
            r = _scaled(eng, rst, rf[4], rp, rp, rq, r_flipped, ph, ww, False, r_flipped)
            if r is None:
                return None
        if qf is not None:
            # Q's columns (its owner's rows when flipped) take the conjugate phases.
            q = _scaled(eng, qf[0], qf[4], qf[1], qf[1], qf[2], not qf[3], ph, ww, True,
                        qf[3])
            if q is None:
                return None
        return q, r
    finally:
        free(ph)


def qr_stabilized(object x, object absorb=1, object stabilized=True, **kwargs):
    """quimb's ``qr_stabilized`` of one tenferro matrix (namespace/_autoray_quimb.py)."""
    cdef object qform = _code(_qr_forms, absorb)
    cdef object q = None, r = None
    if qform is not None and not kwargs and stabilized is True:
        # The common case in one compiled call (plain host matrix or C-ordered view).
        got = _qr_lean_split(x, qform)
        if got is not None:
            return got
    if not (
        kwargs
        or qform is None
        or (type(x) is not Tensor and type(x) is not TensorView)
        or len(x._shape) != 2
        or 0 in x._shape
    ):
        q, r = _split_linalg().qr(x.mT if qform[0] else x)
    if q is None or r is None:
        return _split_fallback(
            "qr_stabilized", x, absorb=absorb, stabilized=stabilized, **kwargs
        )
    transposed, want_q, want_r = qform
    if stabilized:
        got = _stabilized(q, r, want_q, want_r)
        if got is None:  # not in linalg's forms, or borrowed meanwhile (never)
            return _split_fallback("qr_stabilized", x, absorb=absorb, stabilized=stabilized)
        q, r = got
    left = q if want_q else None
    right = r if want_r else None
    if transposed:
        left, right = (None if right is None else right.mT), (None if left is None else left.mT)
    return left, None, right


# ---------------------------------------------------------------------- the lean QR
# `_lean`'s QR body (the plan, the pooled outputs and scratch, the compiled LAPACK
# sequence `_calls.qr_run`, the scratch given back), compiled: the namespace's and the
# engine's lean QR and quimb's stabilised QR are this one function.
# `engine.linalg._kernels` (its ``qr_plan`` and ``qr_run``, looked up at each call, as
# the Python body did), bound at the first call (it imports this module).
cdef object _K = None
cdef object _CpuEngine = None
cdef frozenset _LAPACK_DTYPES = None
cdef Py_ssize_t _K_SVD_ROWS_MIN = 0


cdef int _bind_qr() except -1:
    global _K, _CpuEngine, _LAPACK_DTYPES, _K_SVD_ROWS_MIN
    from tenferro.engine.linalg import _kernels
    from tenferro.engine.linalg._lean import SVD_ROWS_MIN
    _K_SVD_ROWS_MIN = SVD_ROWS_MIN
    from tenferro.engine.cpu import CpuEngine
    _CpuEngine = CpuEngine
    _LAPACK_DTYPES = frozenset((DType.F32, DType.F64, DType.C32, DType.C64))
    _K = _kernels  # last: the others are bound once this is
    return 0


cdef void _stabilize(
    char* q, char* r, int kind, Py_ssize_t m, Py_ssize_t k, Py_ssize_t n, bint rows,
    double* ph
) noexcept nogil:
    """quimb's stabilisation of a reduced QR, in place: R's rows times the phases of its
    diagonal (`_phases_flt`), Q's columns times their conjugates. Q is column-major
    ``m x k`` and R ``k x n``, or when ``rows`` their transposes (column-major ``k x
    m`` and ``n x k``)."""
    cdef int we = 1 + (kind >= 2)
    if kind == 0 or kind == 2:
        if rows:
            _phases_flt(<const float*>r, ph, n, k, we)
            _scale_flt(<const float*>r, <float*>r, ph, n, n, k, True, we, we, False)
            _scale_flt(<const float*>q, <float*>q, ph, k, k, m, False, we, we, True)
        else:
            _phases_flt(<const float*>r, ph, k, k, we)
            _scale_flt(<const float*>r, <float*>r, ph, k, k, n, False, we, we, False)
            _scale_flt(<const float*>q, <float*>q, ph, m, m, k, True, we, we, True)
    else:
        if rows:
            _phases_flt(<const double*>r, ph, n, k, we)
            _scale_flt(<const double*>r, <double*>r, ph, n, n, k, True, we, we, False)
            _scale_flt(<const double*>q, <double*>q, ph, k, k, m, False, we, we, True)
        else:
            _phases_flt(<const double*>r, ph, k, k, we)
            _scale_flt(<const double*>r, <double*>r, ph, k, k, n, False, we, we, False)
            _scale_flt(<const double*>q, <double*>q, ph, m, m, k, True, we, we, True)


cpdef object lean_qr(
    object eng, object fa, object dt, Py_ssize_t m, Py_ssize_t n, bint complete, bint rows,
    bint stabilize=False
):
    """``(Q, R)`` of the ``m x n`` matrix the column-major ``fa`` holds (``rows``: ``fa``
    holds its transpose, and Q and R are handed out transposed, column-major ``Q^T``
    and ``R^T``) in new pooled tensors; None when LAPACK refuses the arguments.

    ``complete``: Q square; else reduced. ``stabilize`` (reduced only): quimb's
    stabilised QR, the phases of R's diagonal moved into Q (`_stabilize`), in place on
    the fresh outputs, which nothing else sees yet. The caller pins ``fa``'s buffer
    (`_lean.run`). Results are taken first, in the order they are returned, the
    scratch last and given back before returning (`_lean._take`); if anything
    raises, the buffers taken are forgotten by the pool, never pooled.
    """
    if _K is None:
        _bind_qr()
    cdef object npdt = _np_dtype(dt)
    cdef Py_ssize_t qc = m if complete else min(m, n)
    cdef object plan = _K.qr_plan(dt, m, n, qc, rows)
    cdef object q_owner = None, r_owner = None, s_owner = None
    cdef object qf, rf, sf
    cdef object pool = _pool_of(eng)
    cdef int kind
    cdef double* ph = NULL
    try:
        q_owner = _acquire(eng, npdt, m * qc)
        qf = q_owner if len(q_owner) == m * qc else q_owner[: m * qc]
        r_owner = _acquire(eng, npdt, qc * n)
        rf = r_owner if len(r_owner) == qc * n else r_owner[: qc * n]
        s_owner = _acquire(eng, npdt, plan.scratch)
        sf = s_owner if len(s_owner) == plan.scratch else s_owner[: plan.scratch]
        info = _K.qr_run(plan, fa, sf, qf, rf)
        sf = None  # INVARIANT: no array over a buffer is left when it goes back
        pool.recycle(s_owner, 0)
        s_owner = None
        if info:  # LAPACK reports only wrong arguments
            qf = rf = None
            pool.recycle(q_owner, 0)
            q_owner = None
            pool.recycle(r_owner, 0)
            r_owner = None
            return None
        if stabilize and not complete:
            kind = _kind(qf)
            ph = <double*>malloc(2 * max(qc, 1) * sizeof(double))
            if ph == NULL:
                raise MemoryError()
            _stabilize(
                <char*>cnp.PyArray_DATA(<cnp.ndarray>qf), <char*>cnp.PyArray_DATA(<cnp.ndarray>rf),
                kind, m, qc, n, rows, ph,
            )
    except BaseException:
        _forget(eng, s_owner)
        _forget(eng, r_owner)
        _forget(eng, q_owner)
        raise
    finally:
        free(ph)
    cdef object rec = _recycler_of(eng)
    if rows:
        return pooled((qc, m), dt, q_owner, qf, rec), pooled((n, qc), dt, r_owner, rf, rec)
    return pooled((m, qc), dt, q_owner, qf, rec), pooled((qc, n), dt, r_owner, rf, rec)


cdef object _lean_operand(object x, object eng):
    """``(buffer, dtype, a, b, view)`` for a lean split of ``x`` on ``eng``: a plain host
    matrix (``view`` False) or a C-ordered view of one (True: the buffer is the view's
    column-major owner, ``a x b``, the view's axes reversed), of a LAPACK dtype, when
    ``eng`` is a plain `CpuEngine`; None for anything else."""
    if _K is None:
        _bind_qr()
    if type(eng) is not _CpuEngine:
        return None
    cdef object st, dt
    cdef tuple shape
    cdef bint view = type(x) is not Tensor
    if not view:
        st = _get(x, _T_ST)
        if type(st) is not HostBuffer:
            return None
        shape = _get(x, _T_SHAPE)
        dt = _get(x, _T_DTYPE)
    else:
        st = _c_source(x)  # the owner of a C-ordered view: the view's axes reversed
        if st is None:
            return None
        shape = _get(x, _V_SHAPE)[::-1]
        dt = _get(x, _V_DTYPE)
    if len(shape) != 2 or dt not in _LAPACK_DTYPES:
        return None
    return st, dt, shape[0], shape[1], view


cdef object _qr_lean_split(object x, tuple qform):
    """quimb's stabilised QR (``qform``: LQ-like, Q wanted, R wanted) of a plain host
    matrix or a C-ordered view of one, on the current `CpuEngine`, by `lean_qr` on the
    column-major memory as it lies: ``(left, None, right)``, or None (nothing taken)
    for anything else, which the caller's general path runs."""
    cdef object eng = current()
    cdef object got = _lean_operand(x, eng)
    if got is None:
        return None
    cdef object st = got[0]
    cdef object dt = got[1]
    cdef Py_ssize_t a = got[2], b = got[3]
    cdef bint view = got[4]
    if not a or not b:
        return None
    cdef bint transposed = qform[0]
    # The matrix factored is x (or x^T, LQ-like), and the owner holds x (or x^T, a
    # view): LAPACK reads it as it lies, or transposed (`rows`).
    cdef bint rows = view != transposed
    cdef object res
    (<BufferFields>st)._pins += 1  # the core's protocol (module docstring)
    try:
        if (<BufferFields>st).exclusive is not None:
            return None
        if rows:
            res = lean_qr(eng, (<BufferFields>st).flat, dt, b, a, False, True, True)
        else:
            res = lean_qr(eng, (<BufferFields>st).flat, dt, a, b, False, False, True)
    except BaseException:
        (<BufferFields>st).failed_read = True
        raise
    finally:
        (<BufferFields>st)._pins -= 1
    if res is None:
        return None
    q, r = res
    if rows:
        q = c_view(q)
        r = c_view(r)
    left = q if qform[1] else None
    right = r if qform[2] else None
    if transposed:
        left, right = (None if right is None else right.mT), (None if left is None else left.mT)
    return left, None, right


# ---------------------------------------------------------------------- the lean SVD
cpdef object lean_svd(
    object eng, object fa, object dt, Py_ssize_t m, Py_ssize_t n, bint full, bint swapped
):
    """``(U, S, Vh)`` of the column-major ``m x n`` matrix ``fa`` (``?gesdd``, thin or
    ``full``) in new pooled tensors; None for a matrix with NaN or infinite entries or
    when LAPACK does not converge (the general path raises, typed).

    `_lean._svd`'s body with vectors, compiled: results taken first, in the order the
    caller hands them out (``swapped``: ``(Vh, S, U)``, the SVD of a C-ordered matrix
    from its owner's), the scratch last and given back before returning; if anything
    raises, the buffers taken are forgotten by the pool, never pooled. The caller
    pins ``fa``'s buffer (`_lean.run`).
    """
    if _K is None:
        _bind_qr()
    if not _K.finite(fa):
        return None  # NaN or +-inf (gesdd may never return): the general path refuses it
    cdef Py_ssize_t k = min(m, n)
    cdef Py_ssize_t ucols = m if full else k
    cdef Py_ssize_t vrows = n if full else k
    cdef object real = dt.real
    cdef object npdt = _np_dtype(dt)
    cdef object rnp = _np_dtype(real)
    cdef object pool = _pool_of(eng)
    cdef object u_owner = None, s_owner = None, v_owner = None, w_owner = None
    cdef object u, s, v, w
    cdef object plan = _K.gesdd_plan(dt, b"A" if full else b"S", m, n)
    try:
        if swapped:
            v_owner = _acquire(eng, npdt, vrows * n)
            s_owner = _acquire(eng, rnp, k)
            u_owner = _acquire(eng, npdt, m * ucols)
        else:
            u_owner = _acquire(eng, npdt, m * ucols)
            s_owner = _acquire(eng, rnp, k)
            v_owner = _acquire(eng, npdt, vrows * n)
        u = u_owner if len(u_owner) == m * ucols else u_owner[: m * ucols]
        s = s_owner if len(s_owner) == k else s_owner[:k]
        v = v_owner if len(v_owner) == vrows * n else v_owner[: vrows * n]
        w_owner = _acquire(eng, npdt, plan.scratch)
        w = w_owner if len(w_owner) == plan.scratch else w_owner[: plan.scratch]
        # fa copied into the scratch and every address read in the compiled call.
        info = _K.gesdd_run(plan, w, s, u, v, fa)
        w = None  # INVARIANT: no array over a buffer is left when it goes back
        pool.recycle(w_owner, 0)
        w_owner = None
        if info:
            u = s = v = None
            for buf in (v_owner, s_owner, u_owner):
                pool.recycle(buf, 0)
            u_owner = s_owner = v_owner = None
            return None  # no convergence: the general path raises
    except BaseException:
        for buf in (w_owner, v_owner, s_owner, u_owner):
            _forget(eng, buf)
        raise
    cdef object rec = _recycler_of(eng)
    return (
        pooled((m, ucols), dt, u_owner, u, rec),
        pooled((k,), real, s_owner, s, rec),
        pooled((vrows, n), dt, v_owner, v, rec),
    )


cdef object _svd_lean_split(object x):
    """``(U, S, Vh)`` of a plain host matrix or a C-ordered view of one, thin, as
    `tenferro.linalg.svd` gives them (the same lean routine on the same memory), on
    the current `CpuEngine`; None (nothing taken) for anything else, or a tall
    C-ordered matrix large enough for `_lean.svd_rows`: the caller then calls
    `tenferro.linalg.svd`."""
    cdef object eng = current()
    cdef object got = _lean_operand(x, eng)
    if got is None:
        return None
    cdef object st = got[0]
    cdef object dt = got[1]
    cdef Py_ssize_t a = got[2], b = got[3]
    cdef bint view = got[4]
    if not a or not b or (view and b > a and a * b >= _K_SVD_ROWS_MIN):
        return None
    cdef object res
    (<BufferFields>st)._pins += 1  # the core's protocol (module docstring)
    try:
        if (<BufferFields>st).exclusive is not None:
            return None
        res = lean_svd(eng, (<BufferFields>st).flat, dt, a, b, False, view)
    except BaseException:
        (<BufferFields>st).failed_read = True
        raise
    finally:
        (<BufferFields>st)._pins -= 1
    if res is None or not view:
        return res
    u, s, vh = res
    return c_view(vh), s, c_view(u)
