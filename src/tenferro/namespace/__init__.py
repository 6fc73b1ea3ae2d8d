"""The array API namespace (2024.12) over the engine: the functions `tenferro` exports.

One module per function family (array-api-strict's model); the engine
internals they need are confined to `_adapter`. Importing this package
registers it with the array methods of `Tensor` and the views
(`tenferro._array_methods.register`). See docs/namespace.md.
"""

from __future__ import annotations

import sys
from typing import Any

from .. import _array_methods
from . import _autoray, _interop
from ._contraction import (
    diag as diag,
)
from ._contraction import (
    diagonal as diagonal,
)
from ._contraction import (
    dot as dot,
)
from ._contraction import (
    einsum as einsum,
)
from ._contraction import (
    kron as kron,
)
from ._contraction import (
    matmul as matmul,
)
from ._contraction import (
    outer as outer,
)
from ._contraction import (
    tensordot as tensordot,
)
from ._contraction import (
    trace as trace,
)
from ._contraction import (
    vecdot as vecdot,
)
from ._creation import (
    arange as arange,
)
from ._creation import (
    asarray as asarray,
)
from ._creation import (
    astype as astype,
)
from ._creation import (
    empty as empty,
)
from ._creation import (
    empty_like as empty_like,
)
from ._creation import (
    eye as eye,
)
from ._creation import (
    from_dlpack as from_dlpack,
)
from ._creation import (
    full as full,
)
from ._creation import (
    full_like as full_like,
)
from ._creation import (
    linspace as linspace,
)
from ._creation import (
    meshgrid as meshgrid,
)
from ._creation import (
    ones as ones,
)
from ._creation import (
    ones_like as ones_like,
)
from ._creation import (
    tril as tril,
)
from ._creation import (
    triu as triu,
)
from ._creation import (
    zeros as zeros,
)
from ._creation import (
    zeros_like as zeros_like,
)
from ._elementwise import FUNCTIONS as _FUNCTIONS
from ._elementwise import (
    clip as clip,
)
from ._elementwise import (
    imag as imag,
)
from ._elementwise import (
    real as real,
)
from ._indexing import (
    getitem as getitem,
)
from ._indexing import (
    index_value as index_value,
)
from ._indexing import (
    iterate as iterate,
)
from ._indexing import (
    length as length,
)
from ._indexing import (
    scalar_value as scalar_value,
)
from ._indexing import (
    setitem as setitem,
)
from ._indexing import (
    take as take,
)
from ._indexing import (
    take_along_axis as take_along_axis,
)
from ._info import (
    API_VERSION as API_VERSION,
)
from ._info import (
    __array_namespace_info__ as __array_namespace_info__,
)
from ._info import (
    array_namespace as array_namespace,
)
from ._info import (
    array_repr as array_repr,
)
from ._info import (
    can_cast as can_cast,
)
from ._info import (
    device_of as device_of,
)
from ._info import (
    finfo as finfo,
)
from ._info import (
    iinfo as iinfo,
)
from ._info import (
    inplace as inplace,
)
from ._info import (
    isdtype as isdtype,
)
from ._info import (
    result_type as result_type,
)
from ._info import (
    to_device as to_device,
)
from ._info import (
    to_numpy as to_numpy,
)
from ._manipulation import (
    array_T as array_T,
)
from ._manipulation import (
    broadcast_arrays as broadcast_arrays,
)
from ._manipulation import (
    broadcast_to as broadcast_to,
)
from ._manipulation import (
    concat as concat,
)
from ._manipulation import (
    expand_dims as expand_dims,
)
from ._manipulation import (
    flip as flip,
)
from ._manipulation import (
    matrix_transpose as matrix_transpose,
)
from ._manipulation import (
    moveaxis as moveaxis,
)
from ._manipulation import (
    permute_dims as permute_dims,
)
from ._manipulation import (
    repeat as repeat,
)
from ._manipulation import (
    reshape as reshape,
)
from ._manipulation import (
    roll as roll,
)
from ._manipulation import (
    squeeze as squeeze,
)
from ._manipulation import (
    stack as stack,
)
from ._manipulation import (
    tile as tile,
)
from ._manipulation import (
    transpose as transpose,
)
from ._manipulation import (
    unstack as unstack,
)
from ._numpy_more import array_split as array_split
from ._numpy_more import indices as indices
from ._numpy_more import split as split
from ._numpy_more import swapaxes as swapaxes
from ._numpy_more import to_list as to_list
from ._numpy_style import ALIASES as _ALIASES
from ._numpy_style import (
    allclose as allclose,
)
from ._numpy_style import (
    ascontiguousarray as ascontiguousarray,
)
from ._numpy_style import (
    asfortranarray as asfortranarray,
)
from ._numpy_style import (
    complex as complex,
)
from ._numpy_style import (
    copy as copy,
)
from ._numpy_style import (
    cumprod as cumprod,
)
from ._numpy_style import (
    cumsum as cumsum,
)
from ._numpy_style import (
    isclose as isclose,
)
from ._numpy_style import (
    pad as pad,
)
from ._numpy_style import (
    ravel as ravel,
)
from ._reductions import (
    all as all,
)
from ._reductions import (
    any as any,
)
from ._reductions import (
    argmax as argmax,
)
from ._reductions import (
    argmin as argmin,
)
from ._reductions import (
    argsort as argsort,
)
from ._reductions import (
    count_nonzero as count_nonzero,
)
from ._reductions import (
    cumulative_prod as cumulative_prod,
)
from ._reductions import (
    cumulative_sum as cumulative_sum,
)
from ._reductions import (
    diff as diff,
)
from ._reductions import (
    max as max,
)
from ._reductions import (
    mean as mean,
)
from ._reductions import (
    min as min,
)
from ._reductions import (
    nonzero as nonzero,
)
from ._reductions import (
    prod as prod,
)
from ._reductions import (
    searchsorted as searchsorted,
)
from ._reductions import (
    sort as sort,
)
from ._reductions import (
    std as std,
)
from ._reductions import (
    sum as sum,
)
from ._reductions import (
    unique_all as unique_all,
)
from ._reductions import (
    unique_counts as unique_counts,
)
from ._reductions import (
    unique_inverse as unique_inverse,
)
from ._reductions import (
    unique_values as unique_values,
)
from ._reductions import (
    var as var,
)
from ._reductions import (
    where as where,
)

# The table-driven elementwise functions, bound to module names (typed as callables).
abs: Any = _FUNCTIONS["abs"]
acos: Any = _FUNCTIONS["acos"]
acosh: Any = _FUNCTIONS["acosh"]
asin: Any = _FUNCTIONS["asin"]
asinh: Any = _FUNCTIONS["asinh"]
atan: Any = _FUNCTIONS["atan"]
atanh: Any = _FUNCTIONS["atanh"]
bitwise_invert: Any = _FUNCTIONS["bitwise_invert"]
ceil: Any = _FUNCTIONS["ceil"]
conj: Any = _FUNCTIONS["conj"]
cos: Any = _FUNCTIONS["cos"]
cosh: Any = _FUNCTIONS["cosh"]
exp: Any = _FUNCTIONS["exp"]
expm1: Any = _FUNCTIONS["expm1"]
floor: Any = _FUNCTIONS["floor"]
isfinite: Any = _FUNCTIONS["isfinite"]
isinf: Any = _FUNCTIONS["isinf"]
isnan: Any = _FUNCTIONS["isnan"]
log: Any = _FUNCTIONS["log"]
log10: Any = _FUNCTIONS["log10"]
log1p: Any = _FUNCTIONS["log1p"]
log2: Any = _FUNCTIONS["log2"]
logical_not: Any = _FUNCTIONS["logical_not"]
negative: Any = _FUNCTIONS["negative"]
positive: Any = _FUNCTIONS["positive"]
reciprocal: Any = _FUNCTIONS["reciprocal"]
round: Any = _FUNCTIONS["round"]
sign: Any = _FUNCTIONS["sign"]
signbit: Any = _FUNCTIONS["signbit"]
sin: Any = _FUNCTIONS["sin"]
sinh: Any = _FUNCTIONS["sinh"]
sqrt: Any = _FUNCTIONS["sqrt"]
square: Any = _FUNCTIONS["square"]
tan: Any = _FUNCTIONS["tan"]
tanh: Any = _FUNCTIONS["tanh"]
trunc: Any = _FUNCTIONS["trunc"]
add: Any = _FUNCTIONS["add"]
atan2: Any = _FUNCTIONS["atan2"]
bitwise_and: Any = _FUNCTIONS["bitwise_and"]
bitwise_left_shift: Any = _FUNCTIONS["bitwise_left_shift"]
bitwise_or: Any = _FUNCTIONS["bitwise_or"]
bitwise_right_shift: Any = _FUNCTIONS["bitwise_right_shift"]
bitwise_xor: Any = _FUNCTIONS["bitwise_xor"]
copysign: Any = _FUNCTIONS["copysign"]
divide: Any = _FUNCTIONS["divide"]
equal: Any = _FUNCTIONS["equal"]
floor_divide: Any = _FUNCTIONS["floor_divide"]
greater: Any = _FUNCTIONS["greater"]
greater_equal: Any = _FUNCTIONS["greater_equal"]
hypot: Any = _FUNCTIONS["hypot"]
less: Any = _FUNCTIONS["less"]
less_equal: Any = _FUNCTIONS["less_equal"]
logaddexp: Any = _FUNCTIONS["logaddexp"]
logical_and: Any = _FUNCTIONS["logical_and"]
logical_or: Any = _FUNCTIONS["logical_or"]
logical_xor: Any = _FUNCTIONS["logical_xor"]
maximum: Any = _FUNCTIONS["maximum"]
minimum: Any = _FUNCTIONS["minimum"]
multiply: Any = _FUNCTIONS["multiply"]
nextafter: Any = _FUNCTIONS["nextafter"]
not_equal: Any = _FUNCTIONS["not_equal"]
pow: Any = _FUNCTIONS["pow"]
remainder: Any = _FUNCTIONS["remainder"]
subtract: Any = _FUNCTIONS["subtract"]

#: numpy's spelling, for autoray's numpy-style callers.
array = asarray
concatenate = concat
absolute: Any = _ALIASES["absolute"]
arccos: Any = _ALIASES["arccos"]
arccosh: Any = _ALIASES["arccosh"]
arcsin: Any = _ALIASES["arcsin"]
arcsinh: Any = _ALIASES["arcsinh"]
arctan: Any = _ALIASES["arctan"]
arctan2: Any = _ALIASES["arctan2"]
arctanh: Any = _ALIASES["arctanh"]
conjugate: Any = _ALIASES["conjugate"]
power: Any = _ALIASES["power"]
true_divide: Any = _ALIASES["true_divide"]

_array_methods.register(sys.modules[__name__])

#: The public functions (re-exported by `tenferro`).
__all__ = PUBLIC = [
    "__array_namespace_info__",
    "abs",
    "absolute",
    "acos",
    "acosh",
    "add",
    "all",
    "allclose",
    "any",
    "arange",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argmax",
    "argmin",
    "argsort",
    "array",
    "asarray",
    "ascontiguousarray",
    "asfortranarray",
    "asin",
    "asinh",
    "astype",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "broadcast_arrays",
    "broadcast_to",
    "can_cast",
    "ceil",
    "clip",
    "complex",
    "concat",
    "concatenate",
    "conj",
    "conjugate",
    "copy",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "cumulative_prod",
    "cumulative_sum",
    "diag",
    "diagonal",
    "diff",
    "divide",
    "dot",
    "einsum",
    "empty",
    "empty_like",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "eye",
    "finfo",
    "flip",
    "floor",
    "floor_divide",
    "from_dlpack",
    "full",
    "full_like",
    "greater",
    "greater_equal",
    "hypot",
    "iinfo",
    "imag",
    "isclose",
    "isdtype",
    "isfinite",
    "isinf",
    "isnan",
    "kron",
    "less",
    "less_equal",
    "linspace",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "matrix_transpose",
    "max",
    "maximum",
    "mean",
    "meshgrid",
    "min",
    "minimum",
    "moveaxis",
    "multiply",
    "negative",
    "nextafter",
    "nonzero",
    "not_equal",
    "ones",
    "ones_like",
    "outer",
    "pad",
    "permute_dims",
    "positive",
    "pow",
    "power",
    "prod",
    "ravel",
    "real",
    "reciprocal",
    "remainder",
    "repeat",
    "reshape",
    "result_type",
    "roll",
    "round",
    "searchsorted",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sort",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "subtract",
    "sum",
    "take",
    "take_along_axis",
    "tan",
    "tanh",
    "tensordot",
    "tile",
    "to_numpy",
    "trace",
    "transpose",
    "tril",
    "triu",
    "true_divide",
    "trunc",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
    "var",
    "vecdot",
    "where",
    "zeros",
    "zeros_like",
    # numpy spellings for autoray callers (`_numpy_more`)
    "array_split",
    "indices",
    "split",
    "swapaxes",
]

# autoray (quimb, cotengra) finds these functions as `tenferro.<name>`; a few of
# its composed helpers need tenferro's spelling (see `_autoray`).
_autoray.install()

# numpy operands (ndarray, numpy scalars) are borrowed for the call by every function
# and operator (see `_interop`); the operators are re-registered to use the wrappers.
_interop.install(sys.modules[__name__], PUBLIC, _FUNCTIONS.values())
_array_methods.register(sys.modules[__name__])
