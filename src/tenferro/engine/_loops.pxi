# The ufunc loops the hot paths run directly: included into engine/_core.pyx (one
# compiled module; cimports and C helpers are _core's), before its protocol functions.

# ---------------------------------------------------------------------- ufunc loops
# A namespace elementwise call on a few elements spent two thirds of numpy's part in
# the ufunc's dispatch (argument parsing, the override check, type resolution, the
# iterator's setup, the error-state lookup) and a few nanoseconds in the loop itself.
# `Kernel` keeps, per input dtype, the very inner loop numpy's dispatch picks (the
# ufunc's own loop table, numpy's public C API: ``PyUFuncObject.functions``, ``data``
# and ``types``) and the hot paths call it on the operands' memory directly:
#
# * only a loop whose results are bit-for-bit numpy's own is used: at its first use it
#   is run beside the ufunc on probe values (signed zeros, infinities, NaNs, the
#   dtype's extremes, pairs of them) and dropped (never used) on any difference;
# * numpy's floating-point error rule is kept exactly: the flags are cleared (where
#   set) before the loop and read after it, and a loop that raised any flag is run again through
#   the ufunc itself, which warns, raises or ignores as the caller's errstate says
#   (and writes the same values again);
# * only aligned, native, same-dtype operands of at most `_DIRECT_MAX` elements (where
#   the dispatch is the cost; a larger call keeps the ufunc's own, GIL-releasing run).

cdef extern from "Python.h":
    PyObject* PyErr_Occurred()
    void PyErr_Clear()

cdef extern from "fenv.h" nogil:
    int feclearexcept(int)
    int fetestexcept(int)
    int FE_DIVBYZERO
    int FE_OVERFLOW
    int FE_UNDERFLOW
    int FE_INVALID

ctypedef void (*_LoopFn)(
    char** args, cnp.npy_intp* dims, cnp.npy_intp* steps, void* data
) noexcept nogil

#: The largest call (in elements) that runs the loop directly.
cdef Py_ssize_t _DIRECT_MAX = 8192
cdef int _FE_FLAGS = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID


cdef class _Loop:
    """One inner loop of a ufunc: ``fn(args, dims, steps, data)`` over ``nin`` inputs of
    dtype ``inp`` into one output of dtype ``out`` (numpy's canonical descriptors)."""
    cdef _LoopFn fn
    cdef void* data
    cdef object inp
    cdef object out


#: Each ufunc's loops, found and checked once per process and shared by every `Kernel`
#: of it (the namespace's functions and the engine's methods): ufunc -> {input
#: descriptor -> _Loop, or None (not usable)}.
cdef dict _loop_tables = {}


cdef class Kernel:
    """A ufunc as the compiled hot paths call it: called as ``kernel(*args)`` it is
    ``call(*args)`` (the ufunc, or the caller's wrapper of it); the hot paths run its
    inner loop on the operands' memory directly (`_direct`) where numpy's own loop for
    their dtype is usable."""

    cdef readonly object ufunc
    cdef object call
    cdef dict _loops        # input descriptor -> _Loop, or None (not usable)
    cdef object _last_in    # the input descriptor last asked, and its answer
    cdef _Loop _last_loop

    def __init__(self, object ufunc, object call=None):
        if not isinstance(ufunc, cnp.ufunc) or (<cnp.ufunc>ufunc).nout != 1:
            raise TypeError(f"tenferro: Kernel takes a ufunc with one output, got {ufunc!r}")
        self.ufunc = ufunc
        self.call = ufunc if call is None else call
        self._loops = _loop_tables.setdefault(ufunc, {})

    def __call__(self, *args):
        return self.call(*args)

    def direct(self, object dtype):
        """Whether calls on inputs of numpy dtype ``dtype`` run the loop directly."""
        import numpy
        return self._loop(numpy.dtype(dtype)) is not None

    cdef _Loop _loop(self, object inp):
        """The usable loop for inputs of descriptor ``inp``, or None (use the ufunc)."""
        if inp is self._last_in:
            return self._last_loop
        cdef object hit = self._loops.get(inp, self)
        if hit is self:
            hit = _resolve(self.ufunc, inp)
            self._loops[inp] = hit
        # The answer first: a reader between the stores misses, never lies.
        self._last_loop = <_Loop>hit
        self._last_in = inp
        return <_Loop>hit


cdef object _resolve(object ufunc, object inp):
    """The loop numpy's dispatch runs for ``ufunc`` on inputs all of the canonical
    native descriptor ``inp`` (the first of its table whose inputs are ``inp``, the
    legacy selector's choice), if it agrees with the ufunc bit for bit; else None."""
    cdef cnp.ufunc u = <cnp.ufunc>ufunc
    cdef int nin = u.nin
    cdef int nargs = nin + 1
    cdef int i, j, num
    cdef bint match
    cdef _Loop loop
    if nin < 1 or nin > 2 or u.functions == NULL or u.types == NULL:
        return None
    if (
        inp.kind not in "biufc"
        or inp.itemsize > 16
        or inp is not cnp.PyArray_DescrFromType(inp.num)
    ):
        return None  # long double, byte-swapped or non-canonical: the ufunc's call
    num = inp.num
    for i in range(u.ntypes):
        match = True
        for j in range(nin):
            if u.types[i * nargs + j] != num:
                match = False
        if not match:
            continue
        loop = _Loop.__new__(_Loop)
        loop.fn = <_LoopFn>u.functions[i]
        loop.data = u.data[i] if u.data != NULL else NULL
        loop.inp = inp
        loop.out = cnp.PyArray_DescrFromType(u.types[i * nargs + nin])  # canonical
        return loop if _agrees(ufunc, loop) else None
    return None


cdef bint _agrees(object ufunc, _Loop loop) except -1:
    """The loop's results on probe values are numpy's own, bit for bit (every pair of
    them for a binary loop): signed zeros, infinities, NaN, subnormals, overflowing and
    the dtype's extreme values."""
    import numpy
    cdef int nin = (<cnp.ufunc>ufunc).nin
    cdef object inp = loop.inp
    with numpy.errstate(all="ignore"):
        if inp.kind == "b":
            probe = numpy.array([False, True])
        elif inp.kind in "iu":
            info = numpy.iinfo(inp)
            ints = [0, 1, 2, 3, 7, 100, -1, -2, -7, info.min, info.max, info.max // 2,
                    info.min // 2]
            probe = numpy.array([v for v in ints if info.min <= v <= info.max], dtype=inp)
        else:
            reals = numpy.array(
                [0.0, -0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -2.5, 100.0, 1e-300, 1e-320, 1e300,
                 700.0, -745.0, 3.0e38, 65504.0, float("inf"), float("-inf"), float("nan")]
            )
            if inp.kind == "c":
                reals = (reals[:, None] + 1j * reals[None, ::3]).ravel()
            probe = reals.astype(inp)
        if nin == 2:
            args = (numpy.repeat(probe, len(probe)), numpy.tile(probe, len(probe)))
        else:
            args = (probe,)
        try:
            want = ufunc(*args)
        except Exception:
            return False  # a loop that refuses some values (integer powers): the ufunc's
        if want.dtype != loop.out:
            return False
        got = numpy.empty(len(want), dtype=loop.out)
        _run(loop, args[0], 0, args[1] if nin == 2 else None, 0, got, len(got), NULL)
        if PyErr_Occurred() != NULL:
            PyErr_Clear()
            return False
    return want.tobytes() == got.tobytes()


cdef inline void _run(
    _Loop loop, object a, Py_ssize_t start_a, object b, Py_ssize_t start_b, object out,
    Py_ssize_t n, char* scalar
) noexcept:
    """``loop`` over ``n`` elements into ``out``: the inputs are the 1-D arrays ``a``
    (from element ``start_a``) and ``b`` (from ``start_b``; None for a unary loop),
    where the one value at ``scalar`` takes the place of ``a`` (None) or ``b`` (None,
    with ``scalar`` given)."""
    cdef char* args[3]
    cdef cnp.npy_intp steps[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp step
    dims[0] = n
    if a is None:
        args[0] = scalar
        steps[0] = 0
    else:
        step = cnp.PyArray_STRIDE(<cnp.ndarray>a, 0)
        args[0] = cnp.PyArray_BYTES(<cnp.ndarray>a) + start_a * step
        steps[0] = step
    cdef int k = 1
    if b is not None:
        step = cnp.PyArray_STRIDE(<cnp.ndarray>b, 0)
        args[1] = cnp.PyArray_BYTES(<cnp.ndarray>b) + start_b * step
        steps[1] = step
        k = 2
    elif scalar != NULL and a is not None:
        args[1] = scalar
        steps[1] = 0
        k = 2
    args[k] = cnp.PyArray_BYTES(<cnp.ndarray>out)
    steps[k] = cnp.PyArray_STRIDE(<cnp.ndarray>out, 0)
    loop.fn(args, dims, steps, loop.data)


cdef inline bint _usable(object arr, object descr):
    # A 1-D array of exactly ``descr`` (identity: the canonical native descriptor), aligned.
    return (
        cnp.PyArray_Check(arr)
        and <PyObject*>cnp.PyArray_DESCR(<cnp.ndarray>arr) == <PyObject*>descr
        and cnp.PyArray_NDIM(<cnp.ndarray>arr) == 1
        and (cnp.PyArray_FLAGS(<cnp.ndarray>arr) & cnp.NPY_ARRAY_ALIGNED) != 0
    )


cdef _Loop _loop_for(object kernel, object first, object out, Py_ssize_t n):
    """``kernel``'s usable loop for ``n`` elements read from the ndarray ``first`` into
    ``out`` (both aligned, of exactly the loop's descriptors), or None (the ufunc's
    call: not a `Kernel`, too large a call, or not a case for the loop)."""
    if type(kernel) is not Kernel or n > _DIRECT_MAX or not cnp.PyArray_Check(first):
        return None
    cdef object inp = <object>cnp.PyArray_DESCR(<cnp.ndarray>first)
    cdef _Loop loop = (<Kernel>kernel)._loop(inp)
    if loop is None or not _usable(first, inp) or not _usable(out, loop.out):
        return None
    return loop


cdef inline bint _reported_through_python():
    # A loop that reports through Python (none of numpy's float loops does): the error is
    # dropped here, and the ufunc, run again by the caller, raises it its own way.
    if PyErr_Occurred() != NULL:
        PyErr_Clear()
        return True
    return False


cdef bint _direct(
    object kernel, object a, Py_ssize_t start_a, object b, Py_ssize_t start_b, object out,
    Py_ssize_t n, object value
) except -1:
    """Run ``kernel``'s loop directly (the section's rules) over ``n`` elements of the
    1-D ndarrays ``a`` from ``start_a`` and ``b`` from ``start_b`` (None: unary; or the
    Python float or int ``value`` in its place, before ``a`` when ``a`` is None and
    ``b`` the array) into ``out``. True when done with no floating-point flag raised;
    False when the caller must call the ufunc (not a case for the loop, or a flag to
    report: the ufunc then writes the same values and reports it numpy's way)."""
    cdef _Loop loop = _loop_for(kernel, a if a is not None else b, out, n)
    if loop is None:
        return False
    cdef double pair[2]
    cdef char* scalar = NULL
    if value is not None:
        if not _scalar_value(loop.inp, value, pair):
            return False
        scalar = <char*>pair
    elif a is not None and b is not None and not _usable(b, loop.inp):
        return False
    # Testing the flags is many times cheaper than clearing them (numpy's own
    # `npy_clear_floatstatus_barrier` tests first too): clear only what is set.
    if fetestexcept(_FE_FLAGS) != 0:
        feclearexcept(_FE_FLAGS)
    _run(loop, a, start_a, b, start_b, out, n, scalar)
    return not _reported_through_python() and fetestexcept(_FE_FLAGS) == 0


cdef bint _direct_views(
    object kernel, object x1, object c1, BufferFields p1, object x2, object c2,
    BufferFields p2, object owner, tuple shape, bint c_order, Py_ssize_t n
) except -1:
    """`broadcast2`'s call, ``ufunc(a, b, out=out, casting="unsafe")`` with floating-point
    warnings silenced, as ``kernel``'s loop run directly on the operands' buffers (one
    run per line of the output along its most compact axis), without an internal array
    for any of them: the operands ``x1`` and ``x2`` (a `Tensor` or `TensorView` of class
    ``c1``/``c2`` read on the pinned buffer ``p1``/``p2``, or a Python float or exact int
    beside a float64 or complex128 array when that buffer is None), of the loop's input
    dtype, broadcast to ``shape``; the output is ``owner``'s first ``n`` elements,
    row-major when ``c_order``, else column-major. True when done; False when the
    caller must call the ufunc (not a case for the loop)."""
    cdef _Loop loop = _loop_for(kernel, (p1 if p1 is not None else p2).flat, owner, n)
    if loop is None:
        return False
    cdef object inp = loop.inp
    cdef double pair[2]
    cdef int rank = <int>len(shape)
    cdef cnp.npy_intp dims[32]
    cdef cnp.npy_intp steps[3][32]
    cdef char* starts[3]
    cdef int i
    cdef cnp.npy_intp acc
    if p1 is not None and p2 is not None:
        if not _usable(p2.flat, inp):
            return False
    elif not _scalar_value(inp, x2 if p1 is not None else x1, pair):
        return False
    for i in range(rank):
        dims[i] = <Py_ssize_t>shape[i]
    if p1 is not None:
        if not _operand_steps(x1, c1, p1.flat, rank, &starts[0], steps[0]):
            return False
    else:
        starts[0] = <char*>pair
        for i in range(rank):
            steps[0][i] = 0
    if p2 is not None:
        if not _operand_steps(x2, c2, p2.flat, rank, &starts[1], steps[1]):
            return False
    else:
        starts[1] = <char*>pair
        for i in range(rank):
            steps[1][i] = 0
    # The output: owner's first n elements in the result's memory order.
    starts[2] = cnp.PyArray_BYTES(<cnp.ndarray>owner)
    acc = cnp.PyArray_STRIDE(<cnp.ndarray>owner, 0)
    if c_order:
        for i in range(rank - 1, -1, -1):
            steps[2][i] = acc
            acc *= dims[i]
    else:
        for i in range(rank):
            steps[2][i] = acc
            acc *= dims[i]
    _run_lines(loop, rank, dims, steps, starts)
    return not _reported_through_python()


cdef bint _operand_steps(
    object x, object c, object flat, int rank, char** start, cnp.npy_intp* steps
) except -1:
    """The first byte and the byte strides over the broadcast shape of rank ``rank``
    (axes aligned to the right; a missing or length-one axis repeats: stride 0) of
    ``x``, a `Tensor` (column-major over all of ``flat``) or a `TensorView` (its own
    strides and offset over ``flat``, which it stays inside: checked when it was
    made), read on ``flat``, a 1-D ndarray of its dtype. False for what
    `_descriptor_into` declines (the caller's ufunc call)."""
    cdef cnp.npy_intp unit = cnp.PyArray_STRIDE(<cnp.ndarray>flat, 0)
    cdef Py_ssize_t own[32]
    cdef Py_ssize_t nd, offset, j
    # The operand's element strides and offset, as every compiled path reads them.
    cdef tuple shape = _descriptor_into(x, c, own, &nd, &offset)
    if shape is None:
        return False
    for j in range(rank):
        steps[j] = 0
    for j in range(nd):
        if <Py_ssize_t>shape[j] != 1:
            steps[j + rank - nd] = own[j] * unit
    start[0] = cnp.PyArray_BYTES(<cnp.ndarray>flat) + offset * unit
    return True


cdef void _run_lines(
    _Loop loop, int rank, cnp.npy_intp* dims, cnp.npy_intp steps[3][32], char** starts
) noexcept:
    """``loop`` over the broadcast of ``rank`` axes of lengths ``dims``: operand ``k``
    (two inputs, then the output) starts at ``starts[k]`` with byte strides
    ``steps[k]``; one run per line along the output's most compact axis, the other
    axes in odometer order."""
    cdef cnp.npy_intp idx[32]
    cdef char* args[3]
    cdef cnp.npy_intp line_steps[3]
    cdef cnp.npy_intp line[1]
    cdef cnp.npy_intp best = -1, s
    cdef int i, k, inner = -1
    for i in range(rank):
        idx[i] = 0
        s = steps[2][i] if steps[2][i] >= 0 else -steps[2][i]
        # The line: the axis of the output's smallest stride (its memory order).
        if dims[i] > 1 and (inner < 0 or s < best):
            inner = i
            best = s
    if inner < 0:  # one element (rank 0, or every axis of length one)
        line[0] = 1
        for k in range(3):
            line_steps[k] = 0
            args[k] = starts[k]
        loop.fn(args, line, line_steps, loop.data)
        return
    line[0] = dims[inner]
    for k in range(3):
        line_steps[k] = steps[k][inner]
    while True:
        for k in range(3):
            args[k] = starts[k]
            for i in range(rank):
                args[k] += idx[i] * steps[k][i]
        loop.fn(args, line, line_steps, loop.data)
        # The next line: an odometer over every axis but the line's.
        i = rank - 1
        while i >= 0:
            if i != inner:
                idx[i] += 1
                if idx[i] < dims[i]:
                    break
                idx[i] = 0
            i -= 1
        if i < 0:
            return


cdef bint _scalar_value(object inp, object value, double* pair) except -1:
    """Write the Python float or int ``value`` as numpy reads it beside a float64 or
    complex128 array (``inp``) into ``pair`` (real, then a zero imaginary part); False
    for any other case (other dtypes, an int float64 does not hold exactly)."""
    cdef int num = (<cnp.dtype>inp).type_num
    if num != cnp.NPY_DOUBLE and num != cnp.NPY_CDOUBLE:
        return False
    cdef object c = type(value)
    if c is int:
        if not (_NEG_EXACT_INT <= value <= _EXACT_INT):
            return False
    elif c is not float:
        return False
    pair[0] = <double>value
    pair[1] = 0.0
    return True
