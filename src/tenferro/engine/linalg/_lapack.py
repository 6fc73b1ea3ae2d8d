"""Finding scipy's LAPACK routines for a dtype, in its two Python-reachable forms.

* `f2py(name, dtype)`: the ``scipy.linalg.lapack`` wrapper (``dgeqrf`` ...). With
  ``overwrite_a=1`` on an F-ordered array of the right dtype it works in place,
  so a pooled buffer becomes the result with no transposition and no copy.
* `raw(name, dtype)`: the same LAPACK routine as exported by
  ``scipy.linalg.cython_lapack`` (a function pointer in a capsule), called
  through ctypes with every argument by address. Used where the f2py wrapper
  would allocate the outputs or the workspace itself (``gesdd``'s U and Vh,
  ``gelqf``/``orglq`` which scipy does not wrap): here every buffer is pooled.
  ctypes releases the GIL during the call.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from ...dtype import DType
from ...storage._fields import address as _address

__all__ = [
    "PREFIX",
    "SHAPE_CACHE_SIZE",
    "blas",
    "byref",
    "f2py",
    "info_int",
    "lwork_from",
    "ptr",
    "raw",
    "raw_address",
    "ref_char",
    "ref_int",
    "ref_real",
    "remember",
]

PREFIX = {DType.F32: "s", DType.F64: "d", DType.C32: "c", DType.C64: "z"}

# Real-dtype names whose complex counterpart has another name.
_COMPLEX_NAME = {
    "syevd": "heevd",
    "syevd_lwork": "heevd_lwork",
    "syevr": "heevr",
    "orgqr": "ungqr",
    "ormqr": "unmqr",
    "orglq": "unglq",
    "syev": "heev",
    "syrk": "herk",
}

_capi = ctypes.pythonapi
_capi.PyCapsule_GetName.restype = ctypes.c_char_p
_capi.PyCapsule_GetName.argtypes = [ctypes.py_object]
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_raw_cache: dict[str, Any] = {}
_lock = threading.Lock()

#: The most entries a per-shape cache (workspace sizes, pivot vectors) keeps
#: before it starts over: a program whose shapes keep changing (bond dimensions
#: growing through a DMRG sweep) must not grow them without bound, and refilling
#: an entry costs one LAPACK query.
SHAPE_CACHE_SIZE = 512


def remember(cache: dict[Any, Any], key: Any, value: Any) -> Any:
    """Store ``value`` under ``key`` in a per-shape cache (emptied first when full)."""
    if len(cache) >= SHAPE_CACHE_SIZE:
        cache.clear()
    cache[key] = value
    return value


def _name(name: str, dtype: DType) -> str:
    if dtype.is_complex:
        name = _COMPLEX_NAME.get(name, name)
    return PREFIX[dtype] + name


_f2py_cache: dict[tuple[str, DType], Any] = {}


def f2py(name: str, dtype: DType) -> Any:
    """The ``scipy.linalg.lapack`` wrapper of routine ``name`` for ``dtype`` (cached).

    The cache saves an import statement and two lookups per call, a few
    microseconds that show at n = 64.
    """
    fn = _f2py_cache.get((name, dtype))
    if fn is None:
        # Imported on first use: scipy.linalg costs most of a second at import, and
        # `import tenferro` should not pay it before any factorisation runs.
        from scipy.linalg import lapack

        fn = _f2py_cache[name, dtype] = getattr(lapack, _name(name, dtype))
    return fn


_blas_cache: dict[str, Any] = {}


def blas(full_name: str) -> Any:
    """The ``scipy.linalg.blas`` wrapper ``full_name`` (``"ddot"``, ``"dznrm2"``), cached.

    Its f2py wrappers check no floating-point flags, so an overflowing ``?dot``
    returns inf without the RuntimeWarning ``numpy.dot`` raises, and they cost
    about half of ``numpy.dot``'s dispatch on a short vector.
    """
    fn = _blas_cache.get(full_name)
    if fn is None:
        # First use only (see `f2py`).
        from scipy.linalg import blas as module

        fn = _blas_cache[full_name] = getattr(module, full_name)
    return fn


def _capsule(full: str, blas: bool) -> tuple[int, int]:
    """``(address, argument count)`` of the exported routine ``full`` (``"dgesdd"``)."""
    # First use only (see `f2py`).
    if blas:
        from scipy.linalg import cython_blas as module
    else:
        from scipy.linalg import cython_lapack as module

    capsule = module.__pyx_capi__[full]
    name = _capi.PyCapsule_GetName(capsule)
    address: int = _capi.PyCapsule_GetPointer(capsule, name)
    # The argument count is read off the capsule's C signature.
    return address, name.decode().count(",") + 1


def raw(name: str, dtype: DType, blas: bool = False) -> Any:
    """The ``cython_lapack`` (``blas=True``: ``cython_blas``) routine ``name`` for ``dtype``.

    Returned as a ctypes function. Every argument is passed as an address
    (``ref_int``, ``ref_char``, ``ref_real``, ``array.ctypes.data``); the routine
    returns nothing (``info`` is an argument).
    """
    full = _name(name, dtype)
    fn = _raw_cache.get(full)
    if fn is None:
        with _lock:
            address, nargs = _capsule(full, blas)
            fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs))(address)
            _raw_cache[full] = fn
    return fn


def raw_address(name: str, dtype: DType) -> int:
    """The address of the ``cython_lapack`` routine ``name`` for ``dtype``, for a caller
    compiled against its C signature (`_calls.gesdd_run`): no ctypes call per use."""
    address, _nargs = _capsule(_name(name, dtype), False)
    return address


# Constant arguments by address, kept per value: LAPACK only reads them, and making
# a ``c_int`` and its ``byref`` costs half a microsecond, a dozen times per call.
_int_refs: dict[int, Any] = {}
_char_refs: dict[bytes, Any] = {}


def ref_int(value: int) -> Any:
    """A LAPACK integer input argument (by address; never written by LAPACK)."""
    ref = _int_refs.get(value)
    if ref is None:
        ref = remember(_int_refs, value, ctypes.byref(ctypes.c_int(value)))
    return ref


def ptr(arr: Any) -> int:
    """The address of the first element of a contiguous array (C- or F-ordered).

    ``arr.ctypes.data`` builds a ``numpy.ctypeslib`` helper object on every use (3 us,
    half a dozen times per LAPACK call); the buffer protocol, compiled
    (`storage._fields.address`), gives it in a thirtieth of that. It takes C-ordered
    arrays, so an array is read through its transpose first (the same memory: a flat
    pooled buffer, or an F-ordered matrix, with no exception raised), then as it is;
    anything else takes the slow route.
    """
    try:
        return _address(arr.T)
    except (BufferError, ValueError, TypeError):
        pass
    try:
        return _address(arr)
    except (BufferError, ValueError, TypeError):
        address: int = arr.ctypes.data
        return address


def ref_real(value: float, dtype: DType) -> Any:
    """A LAPACK real argument of ``dtype``'s precision (float for F32/C32), by address."""
    single = dtype in (DType.F32, DType.C32)
    return ctypes.byref(ctypes.c_float(value) if single else ctypes.c_double(value))


def ref_char(value: bytes) -> Any:
    """A LAPACK character input argument (by address; never written by LAPACK)."""
    ref = _char_refs.get(value)
    if ref is None:
        ref = _char_refs[value] = ctypes.byref(ctypes.c_char(value))
    return ref


def byref(value: Any) -> Any:
    """An output argument (``info``, ``ns``) passed by address."""
    return ctypes.byref(value)


def info_int() -> ctypes.c_int:
    """A fresh ``info`` output argument."""
    return ctypes.c_int(0)


def lwork_from(work0: Any) -> int:
    """The optimal workspace size a ``lwork = -1`` query wrote into ``work[0]``."""
    return max(1, int(np.real(work0)))
