# cython: language_level=3, boundscheck=False, wraparound=False, binding=False
"""The per-operation protocol, compiled: the one copy every hot path calls.

One engine operation on plain host tensors is, in this order:

1. **pin** each operand's `HostBuffer`: add one to its compiled pin count
   (``BufferFields._pins``, storage/_fields.pyx; `HostBuffer.readers` adds it to the
   entries of `storage.host.reading`, the general path's registry). A C increment
   and decrement under the GIL, each one step no other thread can interleave with
   (what the list's atomic ``append``/``remove`` gave, without a tuple, a list
   resize and a search per call),
2. **check for a writer** (``buf.exclusive``) *after* pinning (the mirror of
   `HostBuffer.begin_exclusive`, which sets the flag before counting pins),
3. **acquire** an uninitialised output from the engine's pool,
4. **run** the kernel, which writes every element of the output (a `Kernel`'s
   numpy loop directly, where it can: engine/_loops.pxi),
5. **wrap** the output as a `Tensor` over a new `HostBuffer` whose recycler is
   the engine's (`tensor._pooled`'s fields, set here),
6. **unpin** in ``finally``, raised or not.

Failure policy (docs/internals.md, "Failure policy for pooled buffers"): a
kernel that raises drops its output (never pooled, and no longer counted as
live by the pool); every operand it read is
marked ``failed_read`` (pooled at its death only if no internal array over it
survives); a refused check changes nothing. An operand exclusively borrowed
returns None before anything is acquired: the caller's general path refuses
it with the typed error.

Cython, not a C extension by hand: the objects involved (numpy arrays, ufuncs,
the pool, `Tensor` and `HostBuffer` with ``__slots__``) are Python objects,
and what costs time in the pure-Python protocol is the interpreter's dispatch
of ~40 bytecodes per call, not any arithmetic; Cython compiles exactly that
dispatch away while the module reads like the Python it replaces (as CuPy's
``memory.pyx`` keeps its pool). Alias counting (``sys.getrefcount``
baselines) stays in `storage/host.py`, measured at import with the very
functions that read the counts later; this module reads no reference counts.
"""

from tenferro.storage._fields cimport BufferFields, ReturnLane

from tenferro.dtype import _NUMPY, DType
from tenferro.storage.host import HostBuffer as _HostBuffer, shared_refusal
from tenferro.tensor import Tensor as _Tensor
from tenferro.view import TensorView as _TensorView

# The classes every hot path compares ``type(x)`` against, held in C variables: a module
# global is a dictionary lookup (~7 instructions, several per operation) at each use.
cdef object HostBuffer = _HostBuffer
cdef object Tensor = _Tensor
cdef object TensorView = _TensorView

from cpython.list cimport PyList_GET_ITEM
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.sequence cimport PySequence_Fast_ITEMS
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from cpython.type cimport PyType_IsSubtype
from cpython.pystate cimport PyThreadState, PyThreadState_Get
from cpython.weakref cimport PyWeakref_GetObject, PyWeakref_NewRef
from libc.stdint cimport uint64_t
cimport cython

cdef extern from "Python.h":
    uint64_t PyThreadState_GetID(PyThreadState*)
    long PyLong_AsLongAndOverflow(object obj, int* overflow) except? -1
    # numpy's floating-point error state is a context variable (`_quiet_token`).
    int PyContextVar_Get(object var, PyObject* default_value, PyObject** value) except -1
    object PyContextVar_Set(object var, object value)
    int PyContextVar_Reset(object var, object token) except -1

cimport numpy as cnp
from cpython.ref cimport PyTypeObject

cdef extern from "numpy/arrayobject.h":
    # Steals a reference to ``descr``; returns a new reference (NULL on error).
    object PyArray_NewFromDescr(
        PyTypeObject* subtype, PyObject* descr, int nd, cnp.npy_intp* dims,
        cnp.npy_intp* strides, void* data, int flags, PyObject* obj
    )

cnp.import_array()

cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
    int T_OBJECT_EX

cdef extern from "Python.h":
    ctypedef struct _AllocType "PyTypeObject":
        object (*tp_alloc)(_AllocType*, Py_ssize_t)
        object (*tp_new)(_AllocType*, object, PyObject*)
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
# The calling thread's engine state (`engine.cpu._state`) and `default_engine`, bound
# by engine/cpu.py (`bind_current`): it imports the modules that import this one.
cdef object _state = None
cdef object _default_engine = None


# ---------------------------------------------------------------------- the fields
# `Tensor` and `TensorView` are Python classes with ``__slots__`` (their methods and
# rules stay in Python); their fields are read and set here at the offsets their
# slot descriptors give, the very memory ``t._shape`` reads through the descriptor,
# without the attribute lookup (the type's method cache, the descriptor call) that
# made a third of the per-call cost. Only for objects whose type is exactly that
# class (every caller checks ``type(x)``, never ``x.__class__``, which an object may
# lie about), and the offsets are checked at import.
cdef object _member_descriptor = type(Tensor._shape)


cdef Py_ssize_t _slot(object cls, str name) except -1:
    """The offset of the ``__slots__`` field ``name`` of ``cls`` (own or inherited)."""
    cdef object d = getattr(cls, name)
    if type(d) is not _member_descriptor or d.__objclass__ not in cls.__mro__:
        raise TypeError(f"{cls.__name__}.{name} is not a __slots__ field")
    if (<PyMemberDescrObject*><PyObject*>d).d_member.type != T_OBJECT_EX:
        raise TypeError(f"{cls.__name__}.{name} is not an object slot")
    return (<PyMemberDescrObject*><PyObject*>d).d_member.offset


cdef Py_ssize_t _T_SHAPE = _slot(Tensor, "_shape")
cdef Py_ssize_t _T_DTYPE = _slot(Tensor, "_dtype")
cdef Py_ssize_t _T_ST = _slot(Tensor, "_st")
cdef Py_ssize_t _T_MOVED = _slot(Tensor, "_moved")
cdef Py_ssize_t _V_BASE = _slot(TensorView, "_base")
cdef Py_ssize_t _V_DTYPE = _slot(TensorView, "_dtype")
cdef Py_ssize_t _V_SHAPE = _slot(TensorView, "_shape")
cdef Py_ssize_t _V_STRIDES = _slot(TensorView, "_strides")
cdef Py_ssize_t _V_OFFSET = _slot(TensorView, "_offset")
cdef Py_ssize_t _V_SOURCE = _slot(TensorView, "_source")


cdef extern from *:
    """
    /* ``obj.<field>`` for the ``__slots__`` field at byte offset ``off`` (a new
       reference; an unset slot raises AttributeError, as the descriptor does), and
       ``obj.<field> = value`` (the old value released last). Written in C so that the
       compiler inlines them: a Cython function's error path (its traceback entry) made
       each read an out-of-line call of ~20 instructions, several per operation. */
    static CYTHON_INLINE PyObject* tfr_slot_get(PyObject* obj, Py_ssize_t off) {
        PyObject* p = *(PyObject**)((char*)obj + off);
        if (p == NULL) {
            PyErr_Format(PyExc_AttributeError, "%s field unset", Py_TYPE(obj)->tp_name);
            return NULL;
        }
        Py_INCREF(p);
        return p;
    }
    static CYTHON_INLINE void tfr_slot_put(PyObject* obj, Py_ssize_t off, PyObject* value) {
        PyObject** slot = (PyObject**)((char*)obj + off);
        PyObject* old = *slot;
        Py_INCREF(value);
        *slot = value;
        Py_XDECREF(old);
    }
    """
    # ``obj.<field>`` for the field at ``off`` (an unset slot raises, as the descriptor).
    object _get "tfr_slot_get" (object obj, Py_ssize_t off)
    # ``obj.<field> = value`` on an object this module just allocated (no old value to
    # release that could run code; an old one is released last all the same).
    void _put "tfr_slot_put" (object obj, Py_ssize_t off, object value) noexcept


cdef dict _numpy_of = _NUMPY
cdef object _BOOL = DType.BOOL
cdef object _F64 = DType.F64
cdef object _C64 = DType.C64
#: Python ints up to this magnitude convert to float64 exactly.
cdef object _EXACT_INT = 2**53
cdef object _NEG_EXACT_INT = -2**53


# The numpy dtype of the DType last asked (one entry: a loop asks for one dtype).
cdef object _last_dt = None
cdef object _last_np = None


cdef inline object _np_dtype(object dt):
    """``dtype._NUMPY[dt]``, the numpy dtype of the DType ``dt``."""
    global _last_dt, _last_np
    if dt is _last_dt:
        return _last_np
    cdef object np_dt = _numpy_of[dt]
    _last_np = np_dt  # the value first: a reader between the stores misses, never lies
    _last_dt = dt
    return np_dt


cdef inline object _alloc(object cls):
    # `object.__new__(cls)` without its argument checks (``cls`` is a plain class with
    # slots and no ``__new__``, `Tensor` or `TensorView`): the allocation it makes.
    return (<_AllocType*>cls).tp_alloc(<_AllocType*>cls, 0)


# `_alloc` allocates as `object.__new__` does, which holds only while neither class
# adds an allocation of its own.
for _cls in (Tensor, TensorView):
    if _cls.__new__ is not object.__new__ or type(_cls) is not type:
        raise ImportError(f"engine._core builds {_cls.__name__} without object.__new__")


cdef inline object _descr(object arr):
    # ``arr.dtype``, read from the array's struct for an ndarray.
    if not cnp.PyArray_Check(arr):
        return arr.dtype
    return <object><PyObject*>cnp.PyArray_DESCR(<cnp.ndarray>arr)


cdef object _over(
    object base, object descr, Py_ssize_t byte_offset, int nd, cnp.npy_intp* dims,
    cnp.npy_intp* strides, bint writable
):
    """An ndarray of dtype ``descr`` over the memory of the ndarray ``base`` from
    ``byte_offset`` on, with ``nd`` dimensions ``dims`` and byte ``strides`` (NULL: C
    order), whose ``base`` is ``base`` (numpy collapses it to the array owning the
    memory, as a reshape's or a slice's); writable only when ``writable``.

    What ``base.reshape(...)`` or ``np.ndarray(shape, dtype, base, offset, strides)``
    make, built in one C call (numpy's C API) without their argument parsing: a third
    of a reshape's cost. INVARIANT (the caller's): the layout reads only memory of
    ``base`` (a buffer's ``flat``, a root over it, or a pooled owner), and ``descr``
    is ``base``'s dtype or one of its itemsize."""
    if not cnp.PyArray_Check(base):
        raise TypeError("tenferro: an internal array over memory that is not an ndarray")
    Py_INCREF(descr)  # PyArray_NewFromDescr steals a reference to the descriptor
    cdef object arr = PyArray_NewFromDescr(
        <PyTypeObject*>cnp.ndarray, <PyObject*>descr, nd, dims, strides,
        <char*>cnp.PyArray_DATA(<cnp.ndarray>base) + byte_offset,
        cnp.NPY_ARRAY_WRITEABLE if writable else 0, NULL,
    )
    Py_INCREF(base)  # PyArray_SetBaseObject steals a reference to the base
    cnp.PyArray_SetBaseObject(<cnp.ndarray>arr, base)
    return arr


cdef inline object _shaped_over(
    object base, object descr, tuple shape, bint c_order, bint writable
):
    """``base`` (a 1-D contiguous ndarray of at least the elements of ``shape``) read in
    ``shape``, row-major (``c_order``) or column-major: ``base.reshape(shape)`` or
    ``base.reshape(shape[::-1]).T`` (of ``shape``'s leading elements)."""
    cdef int nd = len(shape)
    cdef cnp.npy_intp dims[32]
    cdef cnp.npy_intp strides[32]
    cdef Py_ssize_t i
    cdef cnp.npy_intp acc = cnp.PyArray_ITEMSIZE(<cnp.ndarray>base)
    if nd > 32:
        raise ValueError("tenferro: more than 32 dimensions")
    if c_order:
        for i in range(nd - 1, -1, -1):
            dims[i] = <Py_ssize_t>shape[i]
            strides[i] = acc
            acc *= dims[i]
    else:
        for i in range(nd):
            dims[i] = <Py_ssize_t>shape[i]
            strides[i] = acc
            acc *= dims[i]
    return _over(base, _descr(base), 0, nd, dims, strides, writable)


cdef inline object _matrix_over(
    object base, Py_ssize_t byte_offset, Py_ssize_t rows, Py_ssize_t cols, bint c_order,
    bint writable
):
    """The ``(rows, cols)`` matrix over the contiguous memory of ``base`` from
    ``byte_offset`` on, row-major (``c_order``) or column-major (`_over`)."""
    cdef cnp.npy_intp dims[2]
    cdef cnp.npy_intp strides[2]
    cdef cnp.npy_intp isz = cnp.PyArray_ITEMSIZE(<cnp.ndarray>base)
    dims[0] = rows
    dims[1] = cols
    if c_order:
        strides[0] = cols * isz
        strides[1] = isz
    else:
        strides[0] = isz
        strides[1] = rows * isz
    return _over(
        base, _descr(base), byte_offset, 2, dims, strides, writable
    )


cdef inline object _buffer(object owner, object flat, object recycler):
    # A `HostBuffer` built with plain stores into its C fields (storage/_fields.pxd):
    # its type's own allocation (`BufferFields`'s, which sets every field to None),
    # called directly rather than through ``BufferFields.__new__``'s Python call.
    cdef BufferFields st = (<_AllocType*>HostBuffer).tp_new(<_AllocType*>HostBuffer, (), NULL)
    st.owner = owner
    st.flat = flat
    st.recycler = recycler
    st.origin = None
    st._root = None
    st._stale = None
    st.exclusive = None
    st.failed_read = False
    return st


cpdef object pooled(tuple shape, object dtype, object owner, object flat, object recycler):
    """A tensor over a fully written pooled buffer (`tensor._pooled`'s fields)."""
    cdef object t = _alloc(Tensor)
    _put(t, _T_SHAPE, shape)
    _put(t, _T_DTYPE, dtype)
    _put(t, _T_ST, _buffer(owner, flat, recycler))
    _put(t, _T_MOVED, None)
    return t


cdef inline object _view(
    object root, object dtype, object shape, object strides, object offset, object source
):
    """A `TensorView` with these fields (`TensorView._make`'s, written as plain stores):
    ``root`` is the buffer's read root, which makes the view a counted alias, or None
    for a fresh result view (`_result`)."""
    cdef object v = _alloc(TensorView)
    _put(v, _V_BASE, root)
    _put(v, _V_DTYPE, dtype)
    _put(v, _V_SHAPE, shape)
    _put(v, _V_STRIDES, strides)
    _put(v, _V_OFFSET, offset)
    _put(v, _V_SOURCE, source)
    return v


cdef inline object _result(
    tuple shape, object strides, object dtype, object owner, object flat, object recycler
):
    """`pooled`'s tensor (``strides`` None), or the fresh C-ordered view of shape ``shape``
    and row-major ``strides`` over a new pooled buffer.

    The fresh view holds no root (``_base`` None, `TensorView._root`): nothing else
    holds its buffer, so there is no alias to count, and the buffer, when the view
    dies, goes back to the pool with no counting at all. The first read or
    derivation takes the root, which makes the view a counted alias from then on.
    """
    if strides is None:
        return pooled(shape, dtype, owner, flat, recycler)
    return _view(None, dtype, shape, strides, 0, _buffer(owner, flat, recycler))


cdef object _row_major_strides = None
cdef object _col_major_strides = None


cdef inline object _fresh_or_rooted(
    object t, tuple shape, tuple strides
):
    """A view of the whole buffer of the fresh tensor ``t`` with this layout, taking the
    tensor's place: root-less (`_result`'s fresh view) when the buffer has never been
    borrowed (no root, no stale write root, no borrow active), else holding the root
    as any view does (one counted alias)."""
    cdef object st = t._st
    cdef BufferFields f
    cdef bint fresh = False
    if type(st) is HostBuffer:
        f = <BufferFields>st
        fresh = f._root is None and f._stale is None and f.exclusive is None
    # INVARIANT (`_result`'s) for a fresh buffer: the caller made ``t`` and drops it, so
    # the view is the only object that holds the buffer; it has no alias to count.
    # Otherwise the view holds the root, a counted alias as any view.
    return _view(None if fresh else st.read_root(), t._dtype, shape, strides, 0, st)


cpdef object c_view(object t):
    """The C-ordered view (axes reversed) of a fresh column-major result ``t``.

    ``t`` is a plain host tensor the caller made, holds alone and drops (anything else
    is returned as it is, as is a result of rank < 2, where both orders agree). The
    view is a fresh root-less one (`_result`) over a buffer never borrowed, else it
    holds the root (one counted alias).
    """
    global _row_major_strides
    if type(t) is not Tensor or type(t._st) is not HostBuffer:
        return t
    cdef tuple shape = t._shape[::-1]
    if len(shape) < 2:
        return t
    if _row_major_strides is None:
        from tenferro.layout import row_major_strides
        _row_major_strides = row_major_strides
    return _fresh_or_rooted(t, shape, _row_major_strides(shape))


cpdef object permuted_view(object t, tuple axes):
    """The view of a fresh column-major result ``t`` (a plain host tensor the caller made,
    holds alone and drops) with its axes in the order ``axes`` (axis ``i`` of the view
    is axis ``axes[i]`` of ``t``); root-less or rooted as `c_view`'s."""
    global _col_major_strides
    if _col_major_strides is None:
        from tenferro.layout import col_major_strides
        _col_major_strides = col_major_strides
    cdef tuple shape = t._shape
    cdef tuple strides = _col_major_strides(shape)
    return _fresh_or_rooted(
        t, tuple([shape[a] for a in axes]), tuple([strides[a] for a in axes])
    )


cpdef object c_source(object x):
    """`_c_source` of a `TensorView` ``x``; None for anything else."""
    if type(x) is not TensorView:
        return None
    return _c_source(x)


cdef object _c_source(object x):
    """The `HostBuffer` of the `TensorView` ``x`` when ``x`` is the C-ordered view of
    all of it (compact row-major, offset 0, rank >= 2, of the buffer's own dtype: what
    `asarray` makes of a C-contiguous array, and every C-ordered result); else None.

    Such a view's elements, in row-major order, are the buffer's ``flat`` in memory
    order, so an elementwise kernel on ``flat`` computes the view's result in C order.
    """
    # ``type``, never ``__class__`` (which a proxy answers for the object behind it),
    # before any field is read at an offset: here and wherever `_get` follows a check.
    if type(x) is not TensorView:
        return None
    cdef object src = _get(x, _V_SOURCE)
    if type(src) is not HostBuffer or _get(x, _V_OFFSET) != 0:
        return None
    cdef tuple shape = _get(x, _V_SHAPE)
    cdef tuple strides = _get(x, _V_STRIDES)
    cdef Py_ssize_t rank = len(shape)
    if rank < 2:
        return None
    cdef Py_ssize_t acc = 1
    cdef Py_ssize_t i
    for i in range(rank - 1, -1, -1):
        if <Py_ssize_t>strides[i] != acc:
            return None
        acc *= <Py_ssize_t>shape[i]
    cdef object flat = (<BufferFields>src).flat
    if len(flat) != acc:
        return None
    cdef object fd = _descr(flat)
    cdef object want = _np_dtype(_get(x, _V_DTYPE))
    if fd is not want and fd != want:
        return None
    return src


cdef object _span_source(object x, Py_ssize_t* start, Py_ssize_t* count):
    """The `HostBuffer` of the `TensorView` ``x`` when ``x``'s elements, in row-major
    order, are ``count`` consecutive elements of the buffer's ``flat`` from ``start``
    (compact row-major at any offset, axes of length one aside, rank >= 1, not empty, of
    the buffer's own dtype): the C-ordered views of `_c_source` and their row blocks,
    and every contiguous 1-D view (``v[2:5]``); else None. The result an elementwise
    kernel on that span computes has the layout `_span_strides` gives."""
    if type(x) is not TensorView:
        return None
    cdef object src = _get(x, _V_SOURCE)
    if type(src) is not HostBuffer:
        return None
    cdef tuple shape = _get(x, _V_SHAPE)
    cdef tuple own = _get(x, _V_STRIDES)
    cdef Py_ssize_t rank = len(shape)
    if rank < 1 or rank > 32:
        return None
    cdef Py_ssize_t acc = 1
    cdef Py_ssize_t i, d
    for i in range(rank - 1, -1, -1):
        d = <Py_ssize_t>shape[i]
        # A length-one axis: any stride reads the same element.
        if d != 1 and <Py_ssize_t>own[i] != acc:
            return None
        acc *= d
    if acc == 0:
        return None
    cdef Py_ssize_t offset = <Py_ssize_t>_get(x, _V_OFFSET)
    cdef object flat = (<BufferFields>src).flat
    if offset < 0 or offset + acc > cnp.PyArray_DIM(<cnp.ndarray>flat, 0):
        return None  # pragma: no cover - a view stays inside its buffer
    cdef object fd = _descr(flat)
    cdef object want = _np_dtype(_get(x, _V_DTYPE))
    if fd is not want and fd != want:
        return None
    start[0] = offset
    count[0] = acc
    return src


cdef object _span_strides(object x):
    """The layout of the result of an elementwise kernel on the span of the view ``x``
    (`_span_source`), the general path's (numpy's 'K', `prefers_c`): the row-major
    strides of ``x``'s shape (a fresh C-ordered view; ``x``'s own where they are exactly
    those) where ``x`` prefers row-major order, else None (a column-major owner: rank 1,
    or at most one axis longer than one, where both orders read the span alike)."""
    cdef tuple shape = _get(x, _V_SHAPE)
    cdef tuple own = _get(x, _V_STRIDES)
    cdef Py_ssize_t rank = len(shape)
    cdef Py_ssize_t i, d, acc = 1, long_axes = 0
    cdef bint exact = True
    cdef Py_ssize_t rows[32]
    if rank < 2:
        return None
    for i in range(rank - 1, -1, -1):
        rows[i] = acc
        if <Py_ssize_t>own[i] != acc:
            exact = False
        d = <Py_ssize_t>shape[i]
        if d > 1:
            long_axes += 1
        acc *= d
    if exact and long_axes >= 2:
        # x's own compact row-major strides with two axes or more longer than one:
        # what `prefers_c` answers True for (the common C-ordered operand), unasked.
        return own
    if not prefers_c(x):
        return None
    return own if exact else _ints_tuple(rows, rank)


# An engine's `_pool` and `_recycler` (engine/_base.py's `EngineBase` slots), read at
# their offsets (bound by `bind_current`) for every engine class derived from it.
cdef object _EngineBase = None
cdef Py_ssize_t _E_POOL = -1
cdef Py_ssize_t _E_RECYCLER = -1


cdef object _engine_type = None  # the last class found to derive from EngineBase


cdef inline bint _is_engine(object eng):
    global _engine_type
    cdef object t = type(eng)
    if t is _engine_type:
        return True
    if _EngineBase is not None and PyType_IsSubtype(t, <type>_EngineBase):
        _engine_type = t
        return True
    return False


cdef inline object _pool_of(object eng):
    if _is_engine(eng):
        return _get(eng, _E_POOL)
    return eng._pool


cdef inline object _recycler_of(object eng):
    if _is_engine(eng):
        return _get(eng, _E_RECYCLER)
    return eng._recycler


cdef inline object _acquire(object eng, object np_dtype, Py_ssize_t n, bint kept=False):
    cdef object pool = _pool_of(eng)
    if isinstance(pool, ReturnLane):
        # The engine's `BufferPool`: its lane's exact fit is a C call (no Python frame).
        return (<ReturnLane>pool).acquire(np_dtype, n, kept)
    return pool.acquire(np_dtype, n, kept)


cdef inline void _forget(object eng, object owner) except *:
    # A failed call's output is dropped, never pooled: the pool stops counting it as
    # live (`BufferPool.forget`), so a refused call changes no accounting.
    if owner is not None:
        eng._pool.forget(owner)


include "_loops.pxi"


cdef inline object _span(object flat, Py_ssize_t start, Py_ssize_t n):
    """``flat`` itself (``n`` < 0: all of it), or its ``n`` elements from ``start`` (a
    read-only 1-D array over them, `_over`; the caller's span lies inside ``flat``)."""
    cdef cnp.npy_intp dims[1]
    if n < 0 or (start == 0 and n == cnp.PyArray_DIM(<cnp.ndarray>flat, 0)):
        return flat
    dims[0] = n
    return _over(
        flat, _descr(flat), start * cnp.PyArray_ITEMSIZE(<cnp.ndarray>flat), 1, dims, NULL,
        False,
    )


cpdef object unary(object kernel, object t, object out_dt, object eng):
    """``kernel(t.flat, out)`` into a pooled output of ``t``'s shape, or None when ``t``'s
    buffer is exclusively borrowed. ``t`` is a plain host tensor (the caller checked)."""
    return _unary(kernel, t._st, t._shape, None, out_dt, eng)


cdef object _unary(
    object kernel, BufferFields st, tuple shape, object strides, object out_dt, object eng,
    Py_ssize_t start=0, Py_ssize_t n=-1
):
    cdef object fa, flat
    cdef object owner = None  # bound before the try: _forget reads it
    st._pins += 1  # a pin (module docstring, step 1)
    try:
        if st.exclusive is not None:
            return None
        fa = st.flat
        if n < 0:
            n = cnp.PyArray_DIM(<cnp.ndarray>fa, 0)
        owner = _acquire(eng, _np_dtype(out_dt), n)
        flat = owner if len(owner) == n else owner[:n]
        # The operand holds exactly n elements: the kernel writes all of flat.
        if not _direct(kernel, fa, start, None, 0, owner, n, None):
            kernel(_span(fa, start, n), flat)
        return _result(shape, strides, out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        st.failed_read = True
        raise
    finally:
        st._pins -= 1


cpdef object binary(object kernel, object a, object b, object out_dt, object eng):
    """``kernel(a.flat, b.flat, out)`` into a pooled output of ``a``'s shape, or None when
    either buffer is exclusively borrowed. ``a`` and ``b`` are plain host tensors of one
    shape (the caller checked)."""
    return _binary(kernel, a._st, b._st, a._shape, None, out_dt, eng)


cdef object _binary(
    object kernel, BufferFields sa, BufferFields sb, tuple shape, object strides, object out_dt,
    object eng, Py_ssize_t start_a=0, Py_ssize_t start_b=0, Py_ssize_t n=-1
):
    cdef object fa, flat
    cdef object owner = None  # bound before the try: _forget reads it
    sa._pins += 1  # a pin (module docstring, step 1)
    sb._pins += 1
    try:
        if sa.exclusive is not None or sb.exclusive is not None:
            return None
        fa = sa.flat
        if n < 0:
            n = cnp.PyArray_DIM(<cnp.ndarray>fa, 0)
        owner = _acquire(eng, _np_dtype(out_dt), n)
        flat = owner if len(owner) == n else owner[:n]
        # Both operands hold exactly n elements: the kernel writes all of flat.
        if not _direct(kernel, fa, start_a, sb.flat, start_b, owner, n, None):
            kernel(_span(fa, start_a, n), _span(sb.flat, start_b, n), flat)
        return _result(shape, strides, out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        sa.failed_read = True
        sb.failed_read = True
        raise
    finally:
        sa._pins -= 1
        sb._pins -= 1


cpdef object scalar(object kernel, object t, object value, bint first, object out_dt, object eng):
    """``kernel(t.flat, value, out)`` (``kernel(value, t.flat, out)`` when ``first``) into a
    pooled output of ``t``'s shape, or None when ``t``'s buffer is exclusively borrowed."""
    return _scalar(kernel, t._st, value, first, t._shape, None, out_dt, eng)


cdef object _scalar(
    object kernel, BufferFields st, object value, bint first, tuple shape, object strides,
    object out_dt, object eng, Py_ssize_t start=0, Py_ssize_t n=-1
):
    cdef object fa, flat
    cdef object owner = None  # bound before the try: _forget reads it
    st._pins += 1  # a pin (module docstring, step 1)
    try:
        if st.exclusive is not None:
            return None
        fa = st.flat
        if n < 0:
            n = cnp.PyArray_DIM(<cnp.ndarray>fa, 0)
        owner = _acquire(eng, _np_dtype(out_dt), n)
        flat = owner if len(owner) == n else owner[:n]
        # The scalar broadcasts over n elements: the kernel writes all of flat.
        if first:
            if not _direct(kernel, None, 0, fa, start, owner, n, value):
                kernel(value, _span(fa, start, n), flat)
        elif not _direct(kernel, fa, start, None, 0, owner, n, value):
            kernel(_span(fa, start, n), value, flat)
        return _result(shape, strides, out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        st.failed_read = True
        raise
    finally:
        st._pins -= 1


cpdef object shaped(
    object kernel, object t, tuple out_shape, Py_ssize_t n_out, object out_dt, object eng,
    object arg
):
    """``kernel(t.flat, out_flat, arg)`` into a pooled output of ``out_shape`` (``n_out``
    elements, which the kernel writes), or None when ``t``'s buffer is exclusively
    borrowed or empty. For the hot paths whose output is not ``t``'s shape (full and
    axis reductions, transposes)."""
    return _shaped(kernel, t._st, out_shape, n_out, out_dt, eng, arg)


cdef object _shaped(
    object kernel, BufferFields st, tuple out_shape, Py_ssize_t n_out, object out_dt, object eng,
    object arg
):
    cdef object fa, flat
    cdef object owner = None  # bound before the try: _forget reads it
    st._pins += 1  # a pin (module docstring, step 1)
    try:
        fa = st.flat
        if st.exclusive is not None or not len(fa):
            return None
        owner = _acquire(eng, _np_dtype(out_dt), n_out)
        flat = owner if len(owner) == n_out else owner[:n_out]
        kernel(fa, flat, arg)
        return pooled(out_shape, out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        st.failed_read = True
        raise
    finally:
        st._pins -= 1


cpdef object shaped2(
    object kernel, object a, object b, tuple out_shape, Py_ssize_t n_out, object out_dt,
    object eng, object arg, bint kept=False
):
    """``kernel(a.flat, b.flat, out_flat, arg)`` into a pooled output of ``out_shape``, or
    None when either buffer is exclusively borrowed. For two-operand hot paths whose
    output is not the operands' shape (2-D matmul, small contractions). ``kept``: the
    output is a result its caller keeps (`BufferPool.acquire`'s best-fit hint)."""
    cdef BufferFields sa = a._st
    cdef BufferFields sb = b._st
    cdef object flat
    cdef object owner = None  # bound before the try: _forget reads it
    sa._pins += 1  # a pin (module docstring, step 1)
    sb._pins += 1
    try:
        if sa.exclusive is not None or sb.exclusive is not None:
            return None
        owner = _acquire(eng, _np_dtype(out_dt), n_out, kept)
        flat = owner if len(owner) == n_out else owner[:n_out]
        kernel(sa.flat, sb.flat, flat, arg)
        return pooled(out_shape, out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        sa.failed_read = True
        sb.failed_read = True
        raise
    finally:
        sa._pins -= 1
        sb._pins -= 1


cpdef object shapedn(
    object kernel, tuple ts, tuple out_shape, Py_ssize_t n_out, object out_dt, object eng,
    object arg
):
    """``kernel(flats, out_flat, arg)`` (``flats``: a tuple of the operands' flat arrays)
    into a pooled output of ``out_shape``, or None when any buffer is exclusively
    borrowed. For hot paths of three or more operands (fused expressions)."""
    cdef tuple pin = tuple([t._st for t in ts])
    cdef BufferFields st
    cdef object flat
    cdef object owner = None  # bound before the try: _forget reads it
    for st in pin:
        st._pins += 1  # a pin (module docstring, step 1)
    try:
        for st in pin:
            if st.exclusive is not None:
                return None
        owner = _acquire(eng, _np_dtype(out_dt), n_out)
        flat = owner if len(owner) == n_out else owner[:n_out]
        kernel(tuple([st.flat for st in pin]), flat, arg)
        return pooled(out_shape, out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        for st in pin:
            st.failed_read = True
        raise
    finally:
        for st in pin:
            st._pins -= 1


cpdef object pinned(object body, BufferFields st, tuple args):
    """``body(*args)`` while ``st`` is pinned, or None (``body`` not called) when ``st``
    is exclusively borrowed. For the hot paths that read an operand without one pooled
    output of their own (a scalar's value, LAPACK bodies that take their own outputs):
    the same pin, writer check, failure mark and unpin as the functions above."""
    st._pins += 1  # a pin (module docstring, step 1)
    try:
        if st.exclusive is not None:
            return None
        return body(*args)
    except BaseException:
        st.failed_read = True
        raise
    finally:
        st._pins -= 1


# The protocol's steps for two operands either of which may need no pin (None): a
# view read through the root it holds, `broadcast2` and `dot_planned`.
cdef inline void _pin_pair(BufferFields p1, BufferFields p2) noexcept:
    if p1 is not None:
        p1._pins += 1
    if p2 is not None:
        p2._pins += 1


cdef inline bint _written_pair(BufferFields p1, BufferFields p2) noexcept:
    # Whether a writer holds either buffer (read after pinning, step 2).
    return (p1 is not None and p1.exclusive is not None) or (
        p2 is not None and p2.exclusive is not None
    )


cdef inline void _failed_pair(BufferFields p1, BufferFields p2) noexcept:
    if p1 is not None:
        p1.failed_read = True
    if p2 is not None:
        p2.failed_read = True


cdef inline void _unpin_pair(BufferFields p1, BufferFields p2) noexcept:
    if p1 is not None:
        p1._pins -= 1
    if p2 is not None:
        p2._pins -= 1


# ---------------------------------------------------------------------- namespace entries
def bind_current(object state, object default_engine):
    """Called once by engine/cpu.py: the thread state (``state.current``: the engine of
    the innermost ``with eng:``, or None) and `default_engine` that `current` reads."""
    global _state, _default_engine, _EngineBase, _E_POOL, _E_RECYCLER
    current_changed()
    _state = state
    _default_engine = default_engine
    from tenferro.engine._base import EngineBase
    _E_POOL = _slot(EngineBase, "_pool")
    _E_RECYCLER = _slot(EngineBase, "_recycler")
    _EngineBase = EngineBase


# `current`'s cache: the engine it last returned (a weak reference: the cache never
# keeps an engine or its pool alive), the thread it returned it to (the thread state's
# id, unique for the life of the process, so a new thread never hits a dead thread's
# entry) and the generation of the threads' engine state it read (`current_changed`).
# INVARIANT: every change of any thread's ``_state.current`` is followed by
# `current_changed` (engine/cpu.py, the only writer), so an entry of the current
# generation is the thread's engine now. One entry: threads taking turns only miss.
cdef uint64_t _cache_tid = 0
cdef Py_ssize_t _cache_gen = -1
cdef object _cache_ref = None
cdef Py_ssize_t _current_gen = 0


def current_changed():
    """Drop `current`'s cache: engine/cpu.py calls it after every change of a thread's
    current engine (``with eng:`` entered or left, a thread's default engine made)."""
    global _current_gen
    _current_gen += 1


cpdef object current():
    """The calling thread's current engine: ``with eng:``'s, else `default_engine()`."""
    global _cache_tid, _cache_gen, _cache_ref
    cdef uint64_t tid = PyThreadState_GetID(PyThreadState_Get())
    # Read before the state: a change made meanwhile (on any thread) leaves the entry
    # stored below stale, never wrong.
    cdef Py_ssize_t gen = _current_gen
    cdef PyObject* hit
    if tid == _cache_tid and gen == _cache_gen:
        hit = PyWeakref_GetObject(_cache_ref)
        if hit != <PyObject*>None:
            return <object>hit
    cdef object eng = _state.current
    if eng is None:
        eng = _default_engine()
    try:
        ref = PyWeakref_NewRef(eng, None)
    except TypeError:  # pragma: no cover - an engine without weak references
        return eng
    # No Python code runs between these stores: no thread sees half an entry.
    _cache_ref = ref
    _cache_tid = tid
    _cache_gen = gen
    return eng


# The namespace's elementwise functions (`namespace._adapter.binary_function`,
# `unary_function`) call these first: every check that picks the hot path, and the
# protocol itself, in one compiled call. None means "not a hot-path case" (or an
# operand exclusively borrowed): the caller's general path handles it, and refuses
# what it must with the typed error. Owners give owners; C-ordered views (`_c_source`)
# give fresh C-ordered views (`_result`), computed on the buffers' memory as it lies.

cdef inline bint _same_shape(tuple a, tuple b) except -1:
    """``a == b`` for two shapes (tuples of ints), compared element by element in C: equal
    small ints are one object (CPython caches them), so an element usually compares by
    identity, where the tuples' ``==`` called the ints' comparison for each (~150
    instructions for a 2-D shape)."""
    if a is b:
        return True
    cdef Py_ssize_t n = len(a)
    cdef Py_ssize_t i
    cdef PyObject* x
    cdef PyObject* y
    if len(b) != n:
        return False
    for i in range(n):
        x = PyTuple_GET_ITEM(a, i)
        y = PyTuple_GET_ITEM(b, i)
        if x is not y and <Py_ssize_t><object>x != <Py_ssize_t><object>y:
            return False
    return True


cdef inline bint _weak_scalar(object value):
    """A Python float, or an int that float64 represents exactly (numpy reads it as
    the array's dtype, the standard's weak scalar)."""
    cdef object c = type(value)
    if c is float:
        return True
    return c is int and _NEG_EXACT_INT <= value <= _EXACT_INT


cdef object _with_scalar(
    object kernel, object x, object value, bint first, object allowed, bint out_bool
):
    # ``x`` is a `Tensor` or a `TensorView` (the caller checked).
    cdef bint tensor = type(x) is Tensor
    cdef object dt = _get(x, _T_DTYPE if tensor else _V_DTYPE)
    if not (dt is _F64 or dt is _C64) or dt not in allowed or not _weak_scalar(value):
        return None
    cdef object out_dt = _BOOL if out_bool else dt
    cdef object st
    if tensor:
        st = _get(x, _T_ST)
        if type(st) is not HostBuffer:
            return None
        return _scalar(
            kernel, <BufferFields>st, value, first, _get(x, _T_SHAPE), None, out_dt, current()
        )
    cdef Py_ssize_t start = 0, n = 0
    st = _span_source(x, &start, &n)
    if st is None:
        return None
    return _scalar(
        kernel, <BufferFields>st, value, first, _get(x, _V_SHAPE), _span_strides(x), out_dt,
        current(), start, n,
    )


cpdef object elementwise2(object kernel, object x1, object x2, object allowed, bint out_bool):
    """``kernel(a, b, out)`` for two plain host tensors, or two C-ordered views, of one
    shape and one ``allowed`` dtype; or for one of them (F64 or C64) with a Python
    float or exactly representable int (``first``: the scalar is the left operand).
    The engine is the calling thread's (`current`), asked only on the hot path. None
    otherwise."""
    cdef object c1 = type(x1)
    cdef object c2 = type(x2)
    cdef object dt, sa, sb
    cdef tuple shape
    cdef Py_ssize_t start_a = 0, start_b = 0, n = 0
    if c1 is Tensor:
        if c2 is Tensor:
            sa = _get(x1, _T_ST)
            sb = _get(x2, _T_ST)
            dt = _get(x1, _T_DTYPE)
            shape = _get(x1, _T_SHAPE)
            if (
                type(sa) is HostBuffer
                and type(sb) is HostBuffer
                and dt is _get(x2, _T_DTYPE)
                and dt in allowed
                and _same_shape(shape, _get(x2, _T_SHAPE))
            ):
                # Both inputs hold exactly n elements: the kernel writes all of out.
                return _binary(
                    kernel, <BufferFields>sa, <BufferFields>sb, shape, None,
                    _BOOL if out_bool else dt, current()
                )
            return None
        if c2 is float or c2 is int:
            return _with_scalar(kernel, x1, x2, False, allowed, out_bool)
        return None
    if c1 is TensorView:
        if c2 is TensorView:
            dt = _get(x1, _V_DTYPE)
            shape = _get(x1, _V_SHAPE)
            if (
                dt is not _get(x2, _V_DTYPE)
                or dt not in allowed
                or not _same_shape(shape, _get(x2, _V_SHAPE))
            ):
                return None
            sa = _span_source(x1, &start_a, &n)
            if sa is None:
                return None
            sb = _span_source(x2, &start_b, &n)
            if sb is None:
                return None
            # Both spans of their buffers in row-major order, of one shape (n elements).
            return _binary(
                kernel, <BufferFields>sa, <BufferFields>sb, shape, _span_strides(x1),
                _BOOL if out_bool else dt, current(), start_a, start_b, n
            )
        if c2 is float or c2 is int:
            return _with_scalar(kernel, x1, x2, False, allowed, out_bool)
        return None
    if (c1 is float or c1 is int) and (c2 is Tensor or c2 is TensorView):
        return _with_scalar(kernel, x2, x1, True, allowed, out_bool)
    return None


cpdef object elementwise1(object kernel, object x, object allowed):
    """``kernel(a, out)`` (same dtype) for a plain host tensor or a C-ordered view of an
    ``allowed`` dtype; None otherwise (see `elementwise2`)."""
    cdef object c = type(x)
    cdef object st
    cdef object dt = None
    if c is Tensor:
        st = _get(x, _T_ST)
        dt = _get(x, _T_DTYPE)
        if type(st) is not HostBuffer or dt not in allowed:
            return None
        return _unary(kernel, <BufferFields>st, _get(x, _T_SHAPE), None, dt, current())
    cdef Py_ssize_t start = 0, n = 0
    if c is TensorView:
        dt = _get(x, _V_DTYPE)
        if dt not in allowed:
            return None
        st = _span_source(x, &start, &n)
        if st is None:
            return None
        return _unary(
            kernel, <BufferFields>st, _get(x, _V_SHAPE), _span_strides(x), dt, current(), start,
            n,
        )
    return None


# The namespace's binary and unary elementwise functions themselves
# (`namespace._adapter.binary_function` / `unary_function` document them): compiled
# functions (Cython's, binding like Python functions), so ``a + b``, whose operator
# is the namespace function (`_array_methods.register`), reaches `elementwise2` with no
# Python frame in between.

def binary_entry(
    object ufunc, object call, object allowed, bint out_bool, object general, object op,
    object typed
):
    """``fn(x1, x2)``: `elementwise2` (``call``), else `broadcast2` (``ufunc``), else
    ``general(x1, x2)``; an exception of either is raised as ``typed(ufunc, exc, op)``.
    A ufunc is wrapped in a `Kernel` for both, whose loops they run directly."""

    cdef object kernel = ufunc
    if isinstance(ufunc, cnp.ufunc) and (<cnp.ufunc>ufunc).nout == 1:
        kernel = call = Kernel(ufunc, call)

    @cython.binding(True)
    def fn(x1, x2, /):
        cdef object r
        try:
            r = elementwise2(call, x1, x2, allowed, out_bool)
        except BaseException as exc:
            raise typed(ufunc, exc, op) from None
        if r is not None:
            return r
        try:
            r = broadcast2(kernel, x1, x2, allowed, out_bool, op)
        except BaseException as exc:
            raise typed(ufunc, exc, op) from None
        if r is not None:
            return r
        return general(x1, x2)

    return fn


def unary_entry(object ufunc, object allowed, object general):
    """``fn(x)``: `elementwise1` (with the ufunc's `Kernel`), else ``general(x)``."""

    cdef object kernel = ufunc
    if isinstance(ufunc, cnp.ufunc) and (<cnp.ufunc>ufunc).nout == 1:
        kernel = Kernel(ufunc)

    @cython.binding(True)
    def fn(x, /):
        cdef object r = elementwise1(kernel, x, allowed)
        if r is not None:
            return r
        return general(x)

    return fn


cpdef object full(object kernel, object x, object fast, object eng, object arg):
    """``kernel(flat, out, arg)`` into a one-element pooled tensor of rank 0, for a plain
    host tensor or a C-ordered view (`_c_source`) of a dtype in ``fast``; None
    otherwise, or for an empty or exclusively borrowed buffer. A full reduction reads
    every element in memory order, which for a C-ordered view is its row-major order
    (numpy's own order for a C-contiguous array)."""
    cdef object c = type(x)
    cdef object st
    if c is Tensor:
        st = x._st
        if type(st) is not HostBuffer:
            return None
    elif c is TensorView:
        st = _c_source(x)
        if st is None:
            return None
    else:
        return None
    cdef object dt = x._dtype
    if dt not in fast:
        return None
    return _shaped(kernel, st, (), 1, dt, eng, arg)


# ---------------------------------------------------------------------- broadcasting
# The namespace's binary elementwise functions call `broadcast2` when `elementwise2`
# declines: operands of different shapes that broadcast, mixed dtypes the array API
# promotes, strided views (slices, ``s[None, :]``, a one-element view), a weak Python
# scalar next to any of them. numpy broadcasts the operands, read on their own
# memory as they lie; the output follows the general path's memory order (the first
# full-rank array operand's, `prefers_c`), so the results are the general path's,
# value for value, dtype for dtype and order for order. Anything else (an error to
# raise, a numpy or group-backed operand, an empty result) returns None: the general
# path handles it.

from tenferro.dtype import PROMOTION_TABLE as _PROMOTION_TABLE

cdef dict _promotion = _PROMOTION_TABLE
cdef object _np_ndarray = None
cdef object _extobj = None
cdef object _make_extobj = None
#: ``(extobj, the same with every floating-point error ignored)``: one object, so a
#: thread never pairs one context's settings with another's.
cdef tuple _quiet = (None, None)


cdef inline object _numpy_init():
    # numpy is imported by the modules that bind this one; looked up once, lazily.
    global _np_ndarray, _extobj, _make_extobj
    import numpy
    _np_ndarray = numpy.ndarray
    try:
        from numpy._core.umath import _extobj_contextvar, _make_extobj as make
        _extobj = _extobj_contextvar
        _make_extobj = make
    except ImportError:  # pragma: no cover - numpy < 2 has no context variable
        _extobj = None
    return _np_ndarray


cdef inline object _quiet_token():
    """Enter numpy's ``errstate(all="ignore")`` without its Python context manager (the
    general path silences floating-point warnings; its ``with`` costs as much as a
    small ufunc call). Returns the token `_loud` resets, or None where numpy has no
    context variable (then the caller uses ``numpy.errstate``)."""
    global _quiet
    if _extobj is None:
        return None
    cdef PyObject* got = NULL
    PyContextVar_Get(_extobj, NULL, &got)  # a new reference (numpy's var has a default)
    if got is NULL:  # pragma: no cover - no value and no default: numpy.errstate
        return None
    cdef object cur = <object>got
    Py_XDECREF(got)
    cdef tuple q = _quiet
    if q[0] is not cur:
        # `_make_extobj` starts from the current settings (buffer size, callback).
        q = (cur, _make_extobj(all="ignore"))
        _quiet = q
    return PyContextVar_Set(_extobj, q[1])


cdef inline BufferFields _read_source(object x, object c):
    """The `HostBuffer` `broadcast2` reads the `Tensor` or `TensorView` ``x`` (of class
    ``c``) on, or None (not a case for this path): a tensor's plain host buffer, or a
    view's source buffer whose ``flat`` is of the view's dtype. Read on ``flat`` (never
    on a root, so a fresh root-less view stays root-less), it is pinned for the call."""
    cdef object st
    cdef object fd, want
    if c is Tensor:
        st = _get(x, _T_ST)
        return <BufferFields>st if type(st) is HostBuffer else None
    st = _get(x, _V_SOURCE)
    if type(st) is not HostBuffer:
        return None
    fd = _descr((<BufferFields>st).flat)
    want = _np_dtype(_get(x, _V_DTYPE))
    if fd is not want and fd != want:
        return None
    return <BufferFields>st


cdef inline object _operand(object x, object c, BufferFields st):
    """``x`` (a `Tensor` or `TensorView` of class ``c``) as a numpy array of its logical
    shape over its buffer ``st``'s ``flat`` (`_read_source`; the caller pinned it and
    checked it for a writer): a tensor column-major, a view with its own strides and
    offset, which stay inside the buffer (checked when the view was made)."""
    cdef object flat = st.flat
    cdef tuple shape
    if c is Tensor:
        shape = _get(x, _T_SHAPE)
        if len(shape) == 1:
            return flat
        return _shaped_over(flat, _descr(flat), shape, False, False)
    return _strided_over(
        flat, _get(x, _V_SHAPE), _get(x, _V_STRIDES), <Py_ssize_t>_get(x, _V_OFFSET)
    )


cdef object _strided_over(object flat, tuple shape, tuple strides, Py_ssize_t offset):
    """A read-only array over ``flat`` (a 1-D ndarray) with a view's ``shape``, element
    ``strides`` and ``offset`` (`_over`; the layout stays inside ``flat``: checked when
    the view was made)."""
    cdef Py_ssize_t rank = len(shape)
    cdef Py_ssize_t i, isz
    cdef cnp.npy_intp dims[32]
    cdef cnp.npy_intp bs[32]
    if rank > 32:
        raise ValueError("tenferro: more than 32 dimensions")
    isz = cnp.PyArray_ITEMSIZE(<cnp.ndarray>flat)
    for i in range(rank):
        dims[i] = <Py_ssize_t>shape[i]
        bs[i] = <Py_ssize_t>strides[i] * isz
    return _over(flat, _descr(flat), offset * isz, <int>rank, dims, bs, False)


cpdef bint prefers_c(object x):
    """Does ``x`` (any operand) lay its axes out in row-major order (numpy's 'K')?
    True for a view of rank >= 2 whose first non-unit axis has a larger stride than
    its last: a C-ordered array, or a slice of one."""
    if type(x) is not TensorView:
        return False
    cdef tuple shape = _get(x, _V_SHAPE)
    cdef Py_ssize_t rank = len(shape)
    if rank < 2:
        return False
    cdef tuple strides = _get(x, _V_STRIDES)
    cdef Py_ssize_t i, s
    cdef Py_ssize_t first = -1
    cdef Py_ssize_t last = -1
    for i in range(rank):
        if <Py_ssize_t>shape[i] != 1:
            s = <Py_ssize_t>strides[i]
            if s < 0:
                s = -s
            if first < 0:
                first = s
            last = s
    return first >= 0 and first > last


#: ``(min, max)`` per integer dtype: a Python int in range takes the array's dtype
#: (the standard's rule, `namespace._core.scalar_to`); out of range is its refusal.
cdef dict _int_bounds = None


cdef bint _scalar_fits(object dt, object value):
    """Does the Python float or int ``value`` combine with an array of ``dt`` as that
    dtype, exactly as the general path's 0-d array of ``dt`` would? A float or an
    exactly representable int next to F64/C64 (`_weak_scalar`), or an int within an
    integer dtype's range."""
    global _int_bounds
    if dt is _F64 or dt is _C64:
        return _weak_scalar(value)
    if type(value) is not int:
        return False
    if _int_bounds is None:
        import numpy
        _int_bounds = {}
        for d, nd in _numpy_of.items():
            if d.is_integer:
                info = numpy.iinfo(nd)
                _int_bounds[d] = (int(info.min), int(info.max))
    cdef object bounds = _int_bounds.get(dt)
    return bounds is not None and bounds[0] <= value <= bounds[1]


cdef inline bint _is_array(object c):
    return c is Tensor or c is TensorView


cdef Py_ssize_t _beside_scalar(
    object dt, tuple shape, object value, object allowed
):
    """The element count of an array of dtype ``dt`` and ``shape`` when the Python scalar
    ``value`` takes its dtype (`_scalar_fits`) and that dtype is ``allowed``; 0 when not,
    or when the array is empty (`broadcast2` declines both)."""
    cdef Py_ssize_t n = 1, i
    if not _scalar_fits(dt, value) or dt not in allowed:
        return 0
    for i in range(len(shape)):
        n *= <Py_ssize_t>shape[i]
    return n


cdef extern from *:
    """
    /* ``ufunc(a, b, out=out, casting="unsafe")`` as one vectorcall with the keyword
       names ``kwnames`` (the tuple ``("out", "casting")``, built once): Cython's call
       with keywords builds a dict per call, which the ufunc turns back into this. */
    static PyObject* tfr_ufunc_out(PyObject* f, PyObject* a, PyObject* b, PyObject* out,
                                   PyObject* casting, PyObject* kwnames) {
        PyObject* args[5] = {NULL, a, b, out, casting};
        return PyObject_Vectorcall(f, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    }
    """
    object tfr_ufunc_out(object f, object a, object b, object out, object casting,
                         object kwnames)


cdef tuple _OUT_CASTING = ("out", "casting")
cdef str _UNSAFE = "unsafe"


cdef inline object _ufunc_out(object ufunc, object a, object b, object out):
    # ``ufunc(a, b, out=out, casting="unsafe")`` (`tfr_ufunc_out`).
    return tfr_ufunc_out(ufunc, a, b, out, _UNSAFE, _OUT_CASTING)


cpdef object broadcast2(
    object ufunc, object x1, object x2, object allowed, bint out_bool, object op
):
    """``ufunc(a, b, out=out, casting="unsafe")`` with floating-point warnings silenced
    (the general path's call) into a pooled output of the broadcast shape and the
    array API's promoted dtype (bool when ``out_bool``), for two plain host tensors
    or shared views of ``allowed`` dtypes that promote within ``allowed`` and whose
    shapes broadcast, or one of them with a Python scalar that takes its dtype
    (`_scalar_fits`: a float or int next to F64/C64, an in-range int next to an
    integer dtype). The output is C-ordered (a fresh root-less view) when the first
    array operand of the output's rank prefers row-major order, else a column-major
    owner. None (nothing done) for any other case, for an empty result, or when an
    operand's buffer is exclusively borrowed: the general path handles it.
    ``op`` names the call in the typed error a refused kernel raises (the caller
    types it; the failure policy is `_binary`'s). ``ufunc`` may be a `Kernel`: its
    loop then runs directly on the pinned buffers where it can (`_direct_views`, no
    internal array at all), else its ufunc is called.

    Every operand is read on its buffer's ``flat`` (`_read_source`, `_operand`), pinned
    for the call as `_binary` pins (views too: a fresh root-less view stays root-less,
    and no root is taken), so a kernel that raises marks each buffer ``failed_read``."""
    cdef object kernel = ufunc
    if type(ufunc) is Kernel:
        ufunc = (<Kernel>kernel).ufunc
    cdef object c1 = type(x1)
    cdef object c2 = type(x2)
    cdef bint arr1 = c1 is Tensor or c1 is TensorView
    cdef bint arr2 = c2 is Tensor or c2 is TensorView
    cdef object dt, d1, d2, a, b
    cdef tuple shape, s1, s2
    cdef Py_ssize_t r1, r2, rank, i, e1, e2, n
    cdef Py_ssize_t ext[32]
    if arr1:
        d1 = _get(x1, _T_DTYPE if c1 is Tensor else _V_DTYPE)
        s1 = _get(x1, _T_SHAPE if c1 is Tensor else _V_SHAPE)
        if arr2:
            d2 = _get(x2, _T_DTYPE if c2 is Tensor else _V_DTYPE)
            s2 = _get(x2, _T_SHAPE if c2 is Tensor else _V_SHAPE)
            if d1 is d2:
                dt = d1
                if dt not in allowed:  # one dtype: one membership test, not three
                    return None
            else:
                dt = _promotion.get((d1, d2))
                if dt is None:
                    return None
                if d1 not in allowed or d2 not in allowed or dt not in allowed:
                    return None
            r1 = len(s1)
            r2 = len(s2)
            rank = r1 if r1 >= r2 else r2
            if rank > 32:
                return None
            n = 1
            for i in range(rank):
                e1 = <Py_ssize_t>s1[i - rank + r1] if i - rank + r1 >= 0 else 1
                e2 = <Py_ssize_t>s2[i - rank + r2] if i - rank + r2 >= 0 else 1
                if e1 != e2 and e1 != 1 and e2 != 1:
                    return None
                if e1 == 0 or e2 == 0:
                    return None
                ext[i] = e1 if e2 == 1 else e2
                n *= ext[i]
            shape = s1 if rank == r1 and _same_shape(s1, s2) else _ints_tuple(ext, rank)
        elif c2 is float or c2 is int:
            n = _beside_scalar(d1, s1, x2, allowed)
            if n == 0:
                return None
            dt = d1
            shape = s1
        else:
            return None
    elif (c1 is float or c1 is int) and arr2:
        d2 = _get(x2, _T_DTYPE if c2 is Tensor else _V_DTYPE)
        s2 = _get(x2, _T_SHAPE if c2 is Tensor else _V_SHAPE)
        n = _beside_scalar(d2, s2, x1, allowed)
        if n == 0:
            return None
        dt = d2
        shape = s2
    else:
        return None
    rank = len(shape)
    # Each array operand's buffer, found before anything is pinned: an operand that is
    # not a case for this path declines with nothing changed.
    cdef BufferFields p1 = None
    cdef BufferFields p2 = None
    if arr1:
        p1 = _read_source(x1, c1)
        if p1 is None:
            return None
    if arr2:
        p2 = _read_source(x2, c2)
        if p2 is None:
            return None
    # numpy's 'K' as the general path reads it: the first array operand of full rank.
    cdef bint c_order = False
    if rank >= 2:
        if arr1 and len(s1) == rank:
            c_order = prefers_c(x1)
        elif arr2 and len(s2) == rank:
            c_order = prefers_c(x2)
    if _np_ndarray is None:
        _numpy_init()
    cdef object out_dt = _BOOL if out_bool else dt
    cdef object eng = current()
    cdef object owner = None  # bound before the try: _forget reads it
    cdef object flat, nd, token
    cdef object strides = None
    cdef Py_ssize_t acc
    # A pin on each operand's buffer (module docstring, step 1).
    _pin_pair(p1, p2)
    try:
        if _written_pair(p1, p2):
            return None
        owner = _acquire(eng, _np_dtype(out_dt), n)
        flat = owner if len(owner) == n else owner[:n]
        if c_order:
            acc = 1
            for i in range(rank - 1, -1, -1):
                ext[i] = acc
                acc *= <Py_ssize_t>shape[i]
            strides = _ints_tuple(ext, rank)
        # The operands broadcast to the output's shape: the loop, or the ufunc, writes
        # every element of it.
        if _direct_views(kernel, x1, c1, p1, x2, c2, p2, owner, shape, c_order, n):
            return _result(shape, strides, out_dt, owner, flat, _recycler_of(eng))
        a = _operand(x1, c1, p1) if arr1 else x1
        b = _operand(x2, c2, p2) if arr2 else x2
        if rank == 1:
            nd = flat
        else:
            nd = _shaped_over(flat, _descr(flat), shape, c_order, True)
        token = _quiet_token()
        if token is None:  # pragma: no cover - numpy < 2
            import numpy
            with numpy.errstate(all="ignore"):
                ufunc(a, b, out=nd, casting="unsafe")
        else:
            try:
                _ufunc_out(ufunc, a, b, nd)
            finally:
                PyContextVar_Reset(_extobj, token)
        a = b = nd = None
        return _result(shape, strides, out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        _forget(eng, owner)
        _failed_pair(p1, p2)
        raise
    finally:
        _unpin_pair(p1, p2)


# ---------------------------------------------------------------------- views
cpdef object view_of(object t, object shape, object strides, object offset=0):
    """A view of owner ``t``'s buffer with this layout (in elements; the caller checked
    that it stays inside ``t``). Ownership: **borrows**, refused while ``t`` is
    exclusively borrowed, as `Tensor.as_view`: the writer check comes before the view
    exists and again after (the view holds the root, a counted alias, from the moment
    it exists; a writer that claimed the buffer meanwhile refuses it)."""
    cdef str op = "Tensor.as_view"
    cdef bint exact = type(t) is Tensor
    cdef object st = _get(t, _T_ST) if exact else t._st
    cdef object root, v, holder
    cdef BufferFields f
    if type(st) is HostBuffer:
        # A plain host tensor: its buffer's fields are read as C members.
        f = <BufferFields>st
        if f.exclusive is not None:
            st.check_shared(op)
        root = f._root
        if root is None:
            root = st.read_root()
        v = _view(
            root, _get(t, _T_DTYPE) if exact else t._dtype, shape, strides, offset,
            st,
        )
        root = None
        holder = f.exclusive
    else:
        buf, start = t._resolve(op)
        if buf.exclusive is not None:
            buf.check_shared(op)
        root = buf._root
        if root is None:
            root = buf.read_root()
        v = _view(root, t._dtype, shape, strides, offset + start if start else offset, st)
        root = None
        holder = buf.exclusive
    if holder is not None:
        v = None
        raise shared_refusal(op, holder)
    return v


cdef object _np_dot = None
cdef object _ndarray = None
cdef str _OP = "tenferro.tensordot"


cdef inline object _matrix(object x, tuple how):
    """The ``(rows, cols)`` matrix a planned product reads from ``x``, without a copy.

    ``how`` is ``(kind, dims, ...)``: kind 0, a plain host tensor whose grouped matrix is
    its flat in C order; 1, in F order (the caller pinned the tensor); 2, a view,
    ``how[2]`` its byte strides, ``how[3]`` the itemsize: read over its buffer's ``flat`` (`_flat_matrix`, pinned), else as a
    strided array over the root it holds. Kind 3 (a transposing copy) is
    `_grouped`'s."""
    cdef int kind = how[0]
    cdef tuple dims = how[1]
    if kind == 0 or kind == 1:
        return _matrix_over(
            (<BufferFields>_get(x, _T_ST)).flat, 0, <Py_ssize_t>dims[0], <Py_ssize_t>dims[1],
            kind == 0, False,
        )
    cdef object mat = _flat_matrix(x, dims, how[2], <Py_ssize_t>how[3])
    if mat is not None:
        return mat
    return _ndarray(dims, _numpy_of[x._dtype], _view_memory(x), x._offset * <Py_ssize_t>how[3], how[2])


cdef inline object _flat_matrix(object x, tuple dims, tuple strides, Py_ssize_t isz):
    """The ``dims`` matrix of the view ``x`` (byte ``strides``) as an array over its
    buffer's ``flat`` (`_over`), when ``flat`` is of the view's dtype and every element
    the layout reaches lies inside ``flat``; else None. `_pin_operand` pinned that
    buffer and `dot_planned` checked it for a writer, so the internal array (as for a
    tensor operand) dies with the call, and no root is taken."""
    cdef object st = _get(x, _V_SOURCE)
    if type(st) is not HostBuffer:
        return None
    cdef object flat = (<BufferFields>st).flat
    cdef object want = _np_dtype(_get(x, _V_DTYPE))
    cdef object fd = _descr(flat)
    if fd is not want and fd != want:
        return None
    cdef cnp.npy_intp d[2]
    cdef cnp.npy_intp bs[2]
    d[0] = <Py_ssize_t>dims[0]
    d[1] = <Py_ssize_t>dims[1]
    bs[0] = <Py_ssize_t>strides[0]
    bs[1] = <Py_ssize_t>strides[1]
    cdef Py_ssize_t start = <Py_ssize_t>_get(x, _V_OFFSET) * isz
    cdef Py_ssize_t lo = start
    cdef Py_ssize_t hi = start
    cdef int i
    if d[0] == 0 or d[1] == 0:
        return None
    for i in range(2):
        if bs[i] < 0:
            lo += (d[i] - 1) * bs[i]
        else:
            hi += (d[i] - 1) * bs[i]
    if lo < 0 or hi + isz > len(flat) * isz:
        return None
    return _over(flat, want, start, 2, d, bs, False)


cdef inline object _view_memory(object x):
    """The memory a planned product reads of the view ``x``: the root it holds (a counted
    alias), or, for a fresh root-less view (`_result`), its buffer's ``flat``, read as
    a tensor's is: `dot_planned` pinned that buffer and checked it for a writer, and
    no array over it outlives the call (so the view stays root-less)."""
    cdef object root = x._base
    if root is None:
        return x._source.flat
    return root


cdef inline object _logical(object x, tuple how):
    """The whole operand as a numpy array in its own shape (for kind 3): ``how[4]`` its
    shape, ``how[5]`` a view's byte strides (None for a tensor), ``how[6]`` the
    itemsize."""
    cdef tuple shape = how[4]
    if how[5] is None:
        if len(shape) == 1:
            return x._st.flat
        return x._st.flat.reshape(shape[::-1]).T
    return _ndarray(
        shape, _numpy_of[x._dtype], _view_memory(x), x._offset * <Py_ssize_t>how[6], how[5]
    )


cdef inline object _grouped(object x, tuple how, object scratch):
    """Kind 3 of `_matrix`: ``x`` permuted by ``how[2]`` (shape ``how[3]``) copied into
    the pooled ``scratch`` (``how[7]`` elements, all written), as the ``how[1]``
    matrix."""
    cdef object sflat = scratch if len(scratch) == <Py_ssize_t>how[7] else scratch[: how[7]]
    sflat.reshape(how[3])[...] = _logical(x, how).transpose(how[2])
    return sflat.reshape(how[1])


cdef object _DECLINE = object()


cdef inline object _pin_operand(object x):
    """The buffer `dot_planned` must pin for operand ``x``: a tensor's (`_DECLINE` when it
    is not plain host memory), or a view's source buffer, read on its ``flat`` where
    the view is fresh and root-less (`_result`) or holds its root (`_flat_matrix`);
    None for a view whose memory is the root it holds (a counted
    alias needs no pin)."""
    cdef object st
    cdef object c = type(x)
    if c is Tensor:
        st = _get(x, _T_ST)
        if type(st) is not HostBuffer:
            return _DECLINE
        return st
    if c is not TensorView:
        return _DECLINE
    st = _get(x, _V_SOURCE)
    if type(st) is HostBuffer:
        # A fresh view is read on its buffer's flat; so is a view holding its root
        # (`_flat_matrix`): pinned either way.
        return st
    if _get(x, _V_BASE) is None:
        return _DECLINE  # pragma: no cover - a fresh result is always host memory
    return None


cpdef object dot_planned(object p, object q, tuple plan, object out_dt, object eng):
    """One planned product of two operands on their own memory, or None (nothing done)
    when a tensor operand's buffer is not plain host memory or is exclusively borrowed.

    ``plan`` is ``(how_p, how_q, m, n, out_shape, out_strides)``, validated by the caller for
    exactly these operand classes, shapes, strides and dtype: ``how_p`` says how ``p``
    is read as an ``(m, k)`` matrix (`_matrix`: on its memory; `_grouped`: by a
    transposing copy into pooled scratch, given back after the call), ``how_q`` ``q``
    as a ``(k, n)`` one, and one ``np.dot`` writes the C-ordered ``(m, n)`` product into
    every element of a pooled output, handed out as a tensor of ``out_shape`` (its
    column-major owner) or, where ``out_strides`` is given, the fresh C-ordered view
    of that shape (`_result`). Tensor operands are pinned and checked for a writer as in
    `shaped2`, and so is the buffer of a fresh root-less view (`_view_memory`); other views
    need no pin (a live view is a counted alias). Failure policy as
    in `shaped2`.
    """
    global _np_dot, _ndarray
    cdef object a, b, flat, np_dt
    cdef object owner = None  # bound before the try: _forget reads it
    cdef object s_p = None
    cdef object s_q = None
    cdef tuple how
    cdef Py_ssize_t m = plan[2]
    cdef Py_ssize_t n = plan[3]
    cdef Py_ssize_t n_out = m * n
    cdef object o1 = _pin_operand(p)
    if o1 is _DECLINE:
        return None
    cdef object o2 = _pin_operand(q)
    if o2 is _DECLINE:
        return None
    cdef BufferFields p1 = o1
    cdef BufferFields p2 = o2
    if _np_dot is None:
        import numpy
        # The C function under numpy's ``__array_function__`` dispatcher (whose Python
        # frame would run per call): every operand here is an internal ndarray.
        _np_dot = getattr(numpy.dot, "_implementation", numpy.dot)
        _ndarray = numpy.ndarray
    # A pin on each buffer read on its flat (module docstring, step 1).
    _pin_pair(p1, p2)
    try:
        if _written_pair(p1, p2):
            return None
        np_dt = _np_dtype(out_dt)
        owner = _acquire(eng, np_dt, n_out, True)
        how = plan[0]
        if how[0] == 3:
            s_p = _acquire(eng, np_dt, how[7])
            a = _grouped(p, how, s_p)
        else:
            a = _matrix(p, how)
        how = plan[1]
        if how[0] == 3:
            s_q = _acquire(eng, np_dt, how[7])
            b = _grouped(q, how, s_q)
        else:
            b = _matrix(q, how)
        flat = owner if len(owner) == n_out else owner[:n_out]
        # (m, k) @ (k, n) into the C-ordered (m, n) output: BLAS writes every element.
        _np_dot(a, b, _matrix_over(owner, 0, m, n, True, True))
        # INVARIANT: no array over a scratch buffer is left when it goes back.
        a = b = None
        if s_p is not None:
            eng._pool.recycle(s_p, 0)
            s_p = None
        if s_q is not None:
            eng._pool.recycle(s_q, 0)
            s_q = None
        return _result(plan[4], plan[5], out_dt, owner, flat, _recycler_of(eng))
    except BaseException:
        # The output and any scratch are dropped, never pooled (the traceback may
        # keep arrays over them).
        _forget(eng, owner)
        _forget(eng, s_p)
        _forget(eng, s_q)
        _failed_pair(p1, p2)
        raise
    finally:
        _unpin_pair(p1, p2)


# ---------------------------------------------------------------------- basic indexing
# `namespace._indexing.getitem` calls `basic_view` first: a key of ints, slices of
# ints, None and at most one Ellipsis on a tensor or shared view gives the view numpy
# would (`_indexing._select`'s descriptor, computed here without the interpreter).
# Anything else, and every key `_select` refuses, returns None: the Python path
# selects or raises the typed error.

from cpython.slice cimport PySlice_Unpack, PySlice_AdjustIndices
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
cimport cython

cdef object _ELLIPSIS = Ellipsis


cdef inline bint _plain_slice(object k):
    # Entries None or exact ints (`_select` refuses anything else, typed).
    cdef object part = (<slice>k).start
    if part is not None and type(part) is not int:
        return False
    part = (<slice>k).stop
    if part is not None and type(part) is not int:
        return False
    part = (<slice>k).step
    if part is None:
        return True
    # A zero step is `_select`'s refusal (PySlice_Unpack would raise its own).
    return type(part) is int and part != 0


cdef inline object _derived(object x, tuple shape, tuple strides, Py_ssize_t offset):
    """A view of the `TensorView` ``x``'s memory with this layout (`TensorView._derive`'s):
    it holds ``x``'s root, taken first where ``x`` is a fresh root-less result."""
    cdef object root = _get(x, _V_BASE)
    if root is None:
        root = x._root("TensorView._derive")
    return _view(root, _get(x, _V_DTYPE), shape, strides, offset, _get(x, _V_SOURCE))


cdef inline Py_ssize_t _col_major_into(tuple shape, Py_ssize_t* out):
    """A compact column-major owner's element strides for ``shape``, written to ``out``
    (room for 32); the rank, or -1 for a rank above 32 (the callers' general path)."""
    cdef Py_ssize_t rank = len(shape)
    cdef Py_ssize_t i, acc = 1
    if rank > 32:
        return -1
    for i in range(rank):
        out[i] = acc
        acc *= <Py_ssize_t>shape[i]
    return rank


cdef tuple _descriptor_into(
    object x, object c, Py_ssize_t* in_strides, Py_ssize_t* rank, Py_ssize_t* offset
):
    """The shape of ``x`` (of type ``c``), with its rank into ``rank``, its strides into
    ``in_strides`` (32 entries) and its offset into ``offset``; None (nothing read) for
    a moved tensor, a rank above 32 or anything but a `Tensor` or `TensorView` (the
    caller's general path)."""
    cdef tuple shape, strides
    cdef Py_ssize_t i, r
    if c is Tensor:
        if _get(x, _T_ST) is None:
            return None  # moved: the general path refuses it
        shape = _get(x, _T_SHAPE)
        r = _col_major_into(shape, in_strides)
        if r < 0:
            return None
        rank[0] = r
        offset[0] = 0
        return shape
    if c is TensorView:
        shape = _get(x, _V_SHAPE)
        strides = _get(x, _V_STRIDES)
        r = len(shape)
        if r > 32:
            return None
        for i in range(r):
            in_strides[i] = <Py_ssize_t>strides[i]
        rank[0] = r
        offset[0] = <Py_ssize_t>_get(x, _V_OFFSET)
        return shape
    return None


cpdef object basic_view(object x, object key):
    """``x[key]`` as a view for a plain basic key, or None (see above). Ownership as
    `_indexing.getitem`'s: a tensor is borrowed through `view_of` (refused while
    exclusively borrowed), a view derives a view holding the root."""
    cdef object c = type(x)
    cdef tuple shape, strides
    cdef Py_ssize_t offset, rank, n_items, n_real = 0, n_ell = 0, axis = 0, n_out = 0
    cdef Py_ssize_t i, j, dim, stride, start, stop, step, length, idx, acc
    cdef int overflow = 0
    # The output descriptor, built in C (a key of more than 32 entries or an array of
    # rank above 32 takes the general path).
    cdef Py_ssize_t in_strides[32]
    cdef Py_ssize_t out_shape[64]
    cdef Py_ssize_t out_strides[64]
    cdef object k, root, kc
    shape = _descriptor_into(x, c, in_strides, &rank, &offset)
    if shape is None:
        return None
    # The key's entries, read in place (a single entry without a tuple around it).
    cdef PyObject* single[1]
    cdef PyObject** entries
    if type(key) is tuple:
        n_items = len(<tuple>key)
        entries = PySequence_Fast_ITEMS(key)
    else:
        n_items = 1
        single[0] = <PyObject*>key
        entries = single
    if n_items > 32:
        return None
    for i in range(n_items):
        k = <object>entries[i]
        kc = type(k)
        if k is None:
            continue
        if k is _ELLIPSIS:
            n_ell += 1
        elif kc is int:
            n_real += 1
        elif kc is slice:
            if not _plain_slice(k):
                return None
            n_real += 1
        else:
            return None
    if n_ell > 1 or n_real > rank:
        return None
    for i in range(n_items):
        k = <object>entries[i]
        if k is None:
            out_shape[n_out] = 1
            out_strides[n_out] = 0
            n_out += 1
            continue
        if k is _ELLIPSIS:
            for j in range(rank - n_real):
                out_shape[n_out] = <Py_ssize_t>shape[axis]
                out_strides[n_out] = in_strides[axis]
                n_out += 1
                axis += 1
            continue
        dim = <Py_ssize_t>shape[axis]
        stride = in_strides[axis]
        axis += 1
        if type(k) is slice:
            if PySlice_Unpack(k, &start, &stop, &step) < 0:
                return None  # pragma: no cover - entries are ints or None
            if step == 0:
                return None
            length = PySlice_AdjustIndices(dim, &start, &stop, step)
            if length:
                offset += start * stride
            out_shape[n_out] = length
            out_strides[n_out] = stride * step
            n_out += 1
        else:
            idx = PyLong_AsLongAndOverflow(k, &overflow)  # an exact int
            if overflow != 0 or idx < -dim or idx >= dim:
                return None
            if idx < 0:
                idx += dim
            offset += idx * stride
    while axis < rank:
        out_shape[n_out] = <Py_ssize_t>shape[axis]
        out_strides[n_out] = in_strides[axis]
        n_out += 1
        axis += 1
    cdef tuple out_s = _shape_again(out_shape, n_out)
    cdef tuple out_st = _strides_again(out_strides, n_out)
    if c is Tensor:
        return view_of(x, out_s, out_st, offset)
    return _derived(x, out_s, out_st, offset)


# The shape and strides of the view `basic_view` or `_int_view` made last: a repeated
# key (a loop over the rows or blocks of one array) gives views of one layout, which
# share these two tuples.
cdef tuple _key_shape_last = ()
cdef tuple _key_strides_last = ()


cdef inline tuple _shape_again(Py_ssize_t* vals, Py_ssize_t n):
    """The shape tuple of ``n`` ints ``vals`` (the last one made, when equal)."""
    global _key_shape_last
    cdef tuple t = _ints_again(vals, n, _key_shape_last)
    _key_shape_last = t
    return t


cdef inline tuple _strides_again(Py_ssize_t* vals, Py_ssize_t n):
    """The strides tuple of ``n`` ints ``vals`` (the last one made, when equal)."""
    global _key_strides_last
    cdef tuple t = _ints_again(vals, n, _key_strides_last)
    _key_strides_last = t
    return t


cdef inline tuple _ints_again(Py_ssize_t* vals, Py_ssize_t n, tuple last):
    """``last`` when it holds exactly ``vals`` (``n`` ints), else their new tuple."""
    cdef Py_ssize_t i
    if len(last) != n:
        return _ints_tuple(vals, n)
    for i in range(n):
        if <Py_ssize_t><object>PyTuple_GET_ITEM(last, i) != vals[i]:
            return _ints_tuple(vals, n)
    return last


cdef object _getitem_rest = None


def bind_getitem(object rest):
    """Called once by namespace/_indexing.py: ``rest(x, key)`` is `getitem`'s general
    path (every key the compiled one declines, and every refusal, typed)."""
    global _getitem_rest
    _getitem_rest = rest


@cython.binding(True)
def getitem(x, key, /):
    """``x[key]`` (`tenferro.namespace`'s ``getitem``, installed as ``__getitem__`` of
    `Tensor` and the views, so it binds as a method). One int on a tensor or shared
    view (`_int_view`) and every other plain basic key (`basic_view`) give their view
    here; anything else, and every key to refuse, goes to the general path
    (`bind_getitem`), which selects, copies or raises the typed error. Ownership as
    `basic_view`'s: a tensor is borrowed through `view_of`, a view derives a view
    holding the root."""
    cdef object v
    if type(key) is int:
        v = _int_view(x, key)
    else:
        v = basic_view(x, key)
    if v is None:
        return _getitem_rest(x, key)
    return v


cdef inline tuple _ints_tuple(Py_ssize_t* vals, Py_ssize_t n):
    cdef tuple out = PyTuple_New(n)
    cdef object item
    cdef Py_ssize_t i
    for i in range(n):
        item = vals[i]
        Py_INCREF(item)  # PyTuple_SET_ITEM steals the reference
        PyTuple_SET_ITEM(out, i, item)
    return out


cdef object _int_view(object x, object key):
    """``x[key]`` for one exact int ``key`` in range on a tensor or shared view of rank
    >= 1 (axis 0 dropped), or None (the general path refuses or handles it)."""
    cdef object c = type(x)
    cdef Py_ssize_t rank, offset, dim, idx, i
    cdef Py_ssize_t in_strides[32]
    cdef Py_ssize_t out_shape[32]
    cdef int overflow = 0
    cdef tuple shape = _descriptor_into(x, c, in_strides, &rank, &offset)
    if shape is None or rank == 0:
        return None
    dim = <Py_ssize_t>shape[0]
    idx = PyLong_AsLongAndOverflow(key, &overflow)  # an exact int: no conversion runs
    if overflow != 0 or idx < -dim or idx >= dim:
        return None
    if idx < 0:
        idx += dim
    for i in range(1, rank):
        out_shape[i - 1] = <Py_ssize_t>shape[i]
    offset += idx * in_strides[0]
    cdef tuple out_s = _shape_again(out_shape, rank - 1)
    cdef tuple out_st = _strides_again(&in_strides[1], rank - 1)
    if c is Tensor:
        return view_of(x, out_s, out_st, offset)
    return _derived(x, out_s, out_st, offset)


# ---------------------------------------------------------------------- reshape
# `namespace._manipulation.reshape` calls `reshape_planned` first: a layout and target
# shape it planned before (`_reshape_plans`, numpy's no-copy rule) give their view, or
# an owner's one named copy, in one compiled call. A miss, a declined plan and
# anything to refuse return None: the Python path plans, caches, copies or raises.

cdef object _check_copy = None
cdef object _forbid = None
cdef str _RESHAPE = "tenferro.reshape"
# The named copies the compiled paths made (`copies.copy_stats` adds them to its own
# totals): two C counts, each step one increment under the GIL that no other thread
# interleaves with, so a count needs no lock of its own.
cdef Py_ssize_t _copies = 0
cdef Py_ssize_t _copied_bytes = 0


def copy_counts():
    """``(copies, bytes)``: the named copies counted by the compiled paths so far
    (`copies.copy_stats` adds them to the totals it reports)."""
    return (_copies, _copied_bytes)


from tenferro.copies import _add_counts

_add_counts(copy_counts)


def reshape_kernel(object fa, object out, tuple arg):
    """The reshape copy of an owner (`_shaped`'s kernel): ``fa`` holds the elements of
    shape ``arg[0]`` column-major, ``out`` (written whole) gets them column-major in
    shape ``arg[1]``, in the row-major element order the standard's reshape reads."""
    cdef tuple own = arg[0]
    cdef tuple new = arg[1]
    # The owner's elements in their shape (`_shaped_over`: ``fa.reshape(own[::-1]).T``).
    cdef object src = _shaped_over(fa, _descr(fa), own, False, False)
    if len(new) == 1:
        # out's row-major order is its only order: out read in ``own``, row-major.
        cnp.PyArray_CopyInto(
            <cnp.ndarray>_shaped_over(out, _descr(out), own, True, True), <cnp.ndarray>src
        )
    else:
        out.reshape(new[::-1]).T[...] = src.reshape(new)


def view_reshape_kernel(object fa, object out, tuple arg):
    """The reshape copy of a shared view (`_shaped`'s kernel): ``fa`` is the flat of the
    view's buffer (of the view's dtype), ``arg`` the view's ``(shape, strides, offset)``
    in elements and the new shape; ``out`` (written whole) gets the view's elements
    column-major in the new shape, in the row-major element order the standard's
    reshape reads."""
    cdef tuple new = arg[3]
    # The view's elements over the buffer's memory, read in its own shape.
    cdef object src = _strided_over(fa, arg[0], arg[1], <Py_ssize_t>arg[2])
    cdef object dst = _shaped_over(out, _descr(out), new, False, True)
    # numpy's C-order reshape of the strided source (a copy: the plan says numpy copies),
    # then into out's column-major layout.
    cnp.PyArray_CopyInto(
        <cnp.ndarray>dst, <cnp.ndarray>cnp.PyArray_Reshape(<cnp.ndarray>src, new)
    )


cdef object _view_copy(object x, tuple new):
    """`reshape_planned`'s copy of the shared view ``x`` (a plan says numpy would copy):
    one named, counted copy into a pooled owner, read on the pinned ``flat`` of the
    view's host buffer (`_shaped`: a fresh root-less view stays root-less); None for the
    general path (group storage, a buffer whose ``flat`` is of another dtype, an
    exclusively borrowed buffer)."""
    global _copies, _copied_bytes
    cdef object st = _get(x, _V_SOURCE)
    cdef object dt, fd, want, res, d
    cdef Py_ssize_t n, nbytes
    if type(st) is not HostBuffer:
        return None
    dt = _get(x, _V_DTYPE)
    fd = _descr((<BufferFields>st).flat)
    want = _np_dtype(dt)
    if fd is not want and fd != want:
        return None
    n = 1
    for d in new:
        n *= <Py_ssize_t>d
    nbytes = n * <Py_ssize_t>(<cnp.dtype>want).itemsize
    if _forbid.depth:
        # Inside forbid_copies(): `check_copy` raises its typed refusal, nothing done.
        _check_copy(_RESHAPE, nbytes)
    res = _shaped(
        view_reshape_kernel, <BufferFields>st, new, n, dt, current(),
        (_get(x, _V_SHAPE), _get(x, _V_STRIDES), _get(x, _V_OFFSET), new),
    )
    if res is not None:
        # Counted once made (`copies.count_copy`'s rule), in the core's own count.
        _copies += 1
        _copied_bytes += nbytes
    return res


cpdef object reshape_planned(object x, object shape, bint may_copy, dict plans):
    """``reshape(x, shape)`` for a live tensor or shared view ``x`` and a tuple ``shape``
    of exact ints whose plan ``plans`` holds (``(new shape, strides, offset)`` per
    ``(shape, strides, target)``): the view numpy's no-copy reshape gives (ownership as
    `view_of`'s for a tensor; a view derives a view holding the root), or, where numpy
    would copy and ``may_copy``, an owner's one named, counted copy into a pooled owner
    read under the pin (`_shaped`). None for anything else (the general path)."""
    global _check_copy, _forbid, _copies, _copied_bytes
    cdef object c = type(x)
    cdef object st = None
    cdef object plan, new, new_strides, d, root, res, dt
    cdef tuple own, strides
    cdef Py_ssize_t rank, i, acc, n, nbytes
    cdef Py_ssize_t buf[32]
    if type(shape) is not tuple:
        return None
    for d in <tuple>shape:
        if type(d) is not int:
            return None
    own = x._shape if (c is Tensor or c is TensorView) else None
    if c is Tensor:
        st = x._st
        if st is None:
            return None  # moved: the general path refuses it
        rank = _col_major_into(own, buf)
        if rank < 0:
            return None
        strides = _ints_tuple(buf, rank)
    elif c is TensorView:
        strides = x._strides
    else:
        return None
    plan = plans.get((own, strides, shape))
    if plan is None:
        return None  # not planned yet, or declined (the general path decides)
    new = plan[0]
    new_strides = plan[1]
    if new_strides is not None:
        if c is Tensor:
            return view_of(x, new, new_strides, plan[2])
        root = x._base
        if root is None:
            root = x._root("TensorView._derive")
        return _view(
            root, x._dtype, new, new_strides, <Py_ssize_t>x._offset + <Py_ssize_t>plan[2],
            x._source,
        )
    # numpy would copy: an owner's or a shared view's planned copy is taken here.
    if not may_copy:
        return None
    if _check_copy is None:
        from tenferro.copies import _forbid as forbid, check_copy
        _forbid = forbid
        _check_copy = check_copy
    if c is TensorView:
        return _view_copy(x, new)
    if type(st) is not HostBuffer:
        return None
    n = 1
    for d in new:
        n *= <Py_ssize_t>d
    dt = _get(x, _T_DTYPE)
    nbytes = n * <Py_ssize_t>(<cnp.dtype>_np_dtype(dt)).itemsize
    if _forbid.depth:
        # Inside forbid_copies(): `check_copy` raises its typed refusal, nothing done.
        _check_copy(_RESHAPE, nbytes)
    res = _shaped(reshape_kernel, st, new, n, dt, current(), (own, new))
    if res is not None:
        # Counted once made (`copies.count_copy`'s rule), in the core's own count.
        _copies += 1
        _copied_bytes += nbytes
    return res


cdef object _matmul_rest = None
cdef dict _matmul_plans = None
cdef object _matmul_marker = None


def bind_matmul(object namespace, dict plans, object marker):
    """Called once by the namespace: ``namespace.matmul``, read at call time (autodiff
    replaces it), takes every product `matmul2` declines; ``plans`` and ``marker`` are
    what `matmul2` looks up."""
    global _matmul_rest, _matmul_plans, _matmul_marker
    _matmul_rest = namespace
    _matmul_plans = plans
    _matmul_marker = marker


@cython.binding(True)
def matmul_operator(x1, x2, /):
    """``x1 @ x2``, the ``__matmul__`` of `Tensor` and the views (a cyfunction, so it
    binds as a method): a planned product of two matrices is one compiled call
    (`matmul2`); anything else is the namespace's ``matmul`` as it is bound now
    (`bind_matmul`), which plans, runs, borrows numpy operands, records a traced
    product or refuses."""
    cdef object r = matmul2(x1, x2, _matmul_plans, _matmul_marker)
    if r is None:
        return _matmul_rest.matmul(x1, x2)
    return r


cdef tuple _dot_key(object x1, object c1, object x2, object c2, object tail):
    """``(shape1, strides1, shape2, strides2, dtype1, dtype2, tail)``: the key the
    namespace's planned products are cached under (strides None for a `Tensor`),
    read from the slots of two operands of types ``c1`` and ``c2``; None unless each
    is a `Tensor` or a `TensorView`."""
    cdef object s1, s2, sh1, sh2, dt1, dt2
    if c1 is Tensor:
        s1 = None
        sh1 = _get(x1, _T_SHAPE)
        dt1 = _get(x1, _T_DTYPE)
    elif c1 is TensorView:
        s1 = _get(x1, _V_STRIDES)
        sh1 = _get(x1, _V_SHAPE)
        dt1 = _get(x1, _V_DTYPE)
    else:
        return None
    if c2 is Tensor:
        s2 = None
        sh2 = _get(x2, _T_SHAPE)
        dt2 = _get(x2, _T_DTYPE)
    elif c2 is TensorView:
        s2 = _get(x2, _V_STRIDES)
        sh2 = _get(x2, _V_SHAPE)
        dt2 = _get(x2, _V_DTYPE)
    else:
        return None
    return (sh1, s1, sh2, s2, dt1, dt2, tail)


cdef inline object _planned(object x1, object x2, object plan, object dt):
    """The cached plan ``(swap, plan)`` run by `dot_planned` on the calling thread's
    engine (the operands swapped when it says so); None for no plan (None, or False:
    the namespace's "not this path") or when `dot_planned` declines."""
    if plan is None or plan is False:
        return None
    if plan[0]:
        return dot_planned(x2, x1, plan[1], dt, current())
    return dot_planned(x1, x2, plan[1], dt, current())


cpdef object matmul2(object x1, object x2, dict plans, object marker):
    """``x1 @ x2`` for two matrices (`Tensor` or `TensorView`, rank 2) by the planned
    product the namespace cached for their shapes, strides and dtypes (``plans``,
    keyed as `namespace._contraction.matmul` keys it, ``marker`` last), on the
    calling thread's engine; None when there is no such plan yet (or it says no) or
    the operands refuse the fast path (`dot_planned`'s None): the caller's path
    then plans, runs or refuses. The namespace's ``@`` on small matrices is this
    one compiled call."""
    cdef tuple key = _dot_key(x1, type(x1), x2, type(x2), marker)
    if key is None or len(<tuple>key[0]) != 2 or len(<tuple>key[2]) != 2:
        return None
    return _planned(x1, x2, plans.get(key), key[4])


# ---------------------------------------------------------------------- entries
# `transpose`, `permute_dims`, `reshape` and `tensordot` of the namespace themselves
# (quimb and autoray call them per tensor, several per split): compiled functions
# (Cython's, binding like Python functions) that take a case the namespace planned
# before in one call, with no Python frame, and hand anything else to ``general``
# (the namespace's Python function, wrapped to borrow numpy operands), which checks,
# plans, refuses with the typed error or computes.

cdef object _permuted(object x, object axes, dict plans):
    """``x`` (a live tensor or a shared view) with its axes in the order ``axes``: None
    (all reversed) or a tuple of exact ints whose checked permutation ``plans`` holds
    (normalised, keyed by the tuple itself: its length is the rank it was checked
    for). The view as `view_of` (a tensor, borrowed) or `_derived` (a view) gives it;
    None for anything else (the general path)."""
    cdef object c = type(x)
    cdef tuple shape, strides, perm = None
    cdef Py_ssize_t rank, i, p, offset
    cdef Py_ssize_t in_strides[32]
    cdef Py_ssize_t out_shape[32]
    cdef Py_ssize_t out_strides[32]
    cdef object a
    shape = _descriptor_into(x, c, in_strides, &rank, &offset)
    if shape is None:
        return None
    if axes is not None:
        # Exact ints only: a bool equals an int (and hashes as one) but is refused.
        if type(axes) is not tuple or len(<tuple>axes) != rank:
            return None
        for a in <tuple>axes:
            if type(a) is not int:
                return None
        perm = plans.get(axes)
        if perm is None:
            return None
    for i in range(rank):
        p = rank - 1 - i if perm is None else <Py_ssize_t>perm[i]
        out_shape[i] = <Py_ssize_t>shape[p]
        out_strides[i] = in_strides[p]
    if c is Tensor:
        return view_of(x, _ints_tuple(out_shape, rank), _ints_tuple(out_strides, rank), 0)
    return _derived(x, _ints_tuple(out_shape, rank), _ints_tuple(out_strides, rank), offset)


def transpose_entry(object general, dict plans):
    """``transpose(x, /, axes=None)``: `_permuted`, else ``general(x, axes)``."""

    @cython.binding(True)
    def transpose(x, /, axes=None):
        cdef object r = _permuted(x, axes, plans)
        if r is None:
            return general(x, axes)
        return r

    return transpose


def permute_dims_entry(object general, dict plans):
    """``permute_dims(x, /, axes)``: `_permuted` for a tuple ``axes``, else
    ``general(x, axes)``."""

    @cython.binding(True)
    def permute_dims(x, /, axes):
        cdef object r
        if axes is not None:
            r = _permuted(x, axes, plans)
            if r is not None:
                return r
        return general(x, axes)

    return permute_dims


def reshape_entry(object general, dict plans):
    """``reshape(x, /, shape, *, copy=None)``: `reshape_planned` (``copy`` None or
    False), else ``general(x, shape, copy=copy)``."""

    @cython.binding(True)
    def reshape(x, /, shape, *, copy=None):
        cdef object c = type(x)
        cdef object r
        if (copy is None or copy is False) and (c is Tensor or c is TensorView):
            r = reshape_planned(x, shape, copy is None, plans)
            if r is not None:
                return r
        return general(x, shape, copy=copy)

    return reshape


cdef inline object _int_axes(object seq):
    """A sequence of axes (a tuple or list of exact ints, or one exact int) as a tuple,
    or None (`_contraction._exact_ints`)."""
    cdef object c = type(seq)
    cdef object i
    if c is int:
        return (seq,)
    if c is not tuple and c is not list:
        return None
    for i in seq:
        if type(i) is not int:
            return None
    return seq if c is tuple else tuple(seq)


def tensordot_entry(object general, dict plans):
    """``tensordot(x1, x2, /, axes=2)``: the planned product the namespace cached for the
    operands' shapes, strides, dtypes and axes (``plans``, keyed as
    `_contraction._strided_key` keys it; a plan ``(swap, plan)`` or False) in one
    `dot_planned` call on the calling thread's engine; else ``general(x1, x2, axes)``,
    which plans, runs or refuses."""

    @cython.binding(True)
    def tensordot(x1, x2, /, axes=2):
        cdef object c1 = type(x1)
        cdef object c2 = type(x2)
        cdef object ax, pa, pb, r
        cdef tuple key
        if (c1 is Tensor or c1 is TensorView) and (c2 is Tensor or c2 is TensorView):
            ax = None
            if type(axes) is int:
                ax = axes
            elif (type(axes) is tuple or type(axes) is list) and len(axes) == 2:
                pa = _int_axes(axes[0])
                pb = _int_axes(axes[1])
                if pa is not None and pb is not None:
                    ax = (pa, pb)
            if ax is not None:
                key = _dot_key(x1, c1, x2, c2, ax)
                r = _planned(x1, x2, plans.get(key), key[4])
                if r is not None:
                    return r
        return general(x1, x2, axes)

    return tensordot


include "_split.pxi"
