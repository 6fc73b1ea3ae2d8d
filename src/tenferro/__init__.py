"""tenferro: a tensor runtime in which ownership of memory is explicit and checked."""

from __future__ import annotations

import math

from .copies import CopyStats, copy_stats, forbid_copies
from .domains import SharedMemoryDomain, SharedTensorAllocationDomain, ShareHandle
from .dtype import DType
from .engine import BufferPool, BufferPoolCacheStats, BufferPoolStats, CpuEngine, default_engine
from .errors import (
    AccessError,
    BorrowError,
    CopyForbiddenError,
    DeviceAccessError,
    GroupError,
    HostAccessError,
    IndexOutOfRangeError,
    InteropError,
    MovedTensorError,
    PromotionError,
    ReinterpretError,
    RootImportError,
    RuntimeStateError,
    TenferroError,
    ValidationError,
)
from .guards import HostReadGuard, HostWriteGuard
from .namespace import (
    __array_namespace_info__ as __array_namespace_info__,
)
from .namespace import (
    abs as abs,
)
from .namespace import (
    acos as acos,
)
from .namespace import (
    acosh as acosh,
)
from .namespace import (
    add as add,
)
from .namespace import (
    all as all,
)
from .namespace import (
    any as any,
)
from .namespace import (
    arange as arange,
)
from .namespace import (
    argmax as argmax,
)
from .namespace import (
    argmin as argmin,
)
from .namespace import (
    argsort as argsort,
)
from .namespace import (
    array as array,
)
from .namespace import (
    asarray as asarray,
)
from .namespace import (
    asin as asin,
)
from .namespace import (
    asinh as asinh,
)
from .namespace import (
    astype as astype,
)
from .namespace import (
    atan as atan,
)
from .namespace import (
    atan2 as atan2,
)
from .namespace import (
    atanh as atanh,
)
from .namespace import (
    bitwise_and as bitwise_and,
)
from .namespace import (
    bitwise_invert as bitwise_invert,
)
from .namespace import (
    bitwise_left_shift as bitwise_left_shift,
)
from .namespace import (
    bitwise_or as bitwise_or,
)
from .namespace import (
    bitwise_right_shift as bitwise_right_shift,
)
from .namespace import (
    bitwise_xor as bitwise_xor,
)
from .namespace import (
    broadcast_arrays as broadcast_arrays,
)
from .namespace import (
    broadcast_to as broadcast_to,
)
from .namespace import (
    can_cast as can_cast,
)
from .namespace import (
    ceil as ceil,
)
from .namespace import (
    clip as clip,
)
from .namespace import (
    concat as concat,
)
from .namespace import (
    concatenate as concatenate,
)
from .namespace import (
    conj as conj,
)
from .namespace import (
    copysign as copysign,
)
from .namespace import (
    cos as cos,
)
from .namespace import (
    cosh as cosh,
)
from .namespace import (
    count_nonzero as count_nonzero,
)
from .namespace import (
    cumulative_prod as cumulative_prod,
)
from .namespace import (
    cumulative_sum as cumulative_sum,
)
from .namespace import (
    diag as diag,
)
from .namespace import (
    diff as diff,
)
from .namespace import (
    divide as divide,
)
from .namespace import (
    dot as dot,
)
from .namespace import (
    einsum as einsum,
)
from .namespace import (
    empty as empty,
)
from .namespace import (
    empty_like as empty_like,
)
from .namespace import (
    equal as equal,
)
from .namespace import (
    exp as exp,
)
from .namespace import (
    expand_dims as expand_dims,
)
from .namespace import (
    expm1 as expm1,
)
from .namespace import (
    eye as eye,
)
from .namespace import (
    finfo as finfo,
)
from .namespace import (
    flip as flip,
)
from .namespace import (
    floor as floor,
)
from .namespace import (
    floor_divide as floor_divide,
)
from .namespace import (
    from_dlpack as from_dlpack,
)
from .namespace import (
    full as full,
)
from .namespace import (
    full_like as full_like,
)
from .namespace import (
    greater as greater,
)
from .namespace import (
    greater_equal as greater_equal,
)
from .namespace import (
    hypot as hypot,
)
from .namespace import (
    iinfo as iinfo,
)
from .namespace import (
    imag as imag,
)
from .namespace import (
    isdtype as isdtype,
)
from .namespace import (
    isfinite as isfinite,
)
from .namespace import (
    isinf as isinf,
)
from .namespace import (
    isnan as isnan,
)
from .namespace import (
    kron as kron,
)
from .namespace import (
    less as less,
)
from .namespace import (
    less_equal as less_equal,
)
from .namespace import (
    linspace as linspace,
)
from .namespace import (
    log as log,
)
from .namespace import (
    log1p as log1p,
)
from .namespace import (
    log2 as log2,
)
from .namespace import (
    log10 as log10,
)
from .namespace import (
    logaddexp as logaddexp,
)
from .namespace import (
    logical_and as logical_and,
)
from .namespace import (
    logical_not as logical_not,
)
from .namespace import (
    logical_or as logical_or,
)
from .namespace import (
    logical_xor as logical_xor,
)
from .namespace import (
    matmul as matmul,
)
from .namespace import (
    matrix_transpose as matrix_transpose,
)
from .namespace import (
    max as max,
)
from .namespace import (
    maximum as maximum,
)
from .namespace import (
    mean as mean,
)
from .namespace import (
    meshgrid as meshgrid,
)
from .namespace import (
    min as min,
)
from .namespace import (
    minimum as minimum,
)
from .namespace import (
    moveaxis as moveaxis,
)
from .namespace import (
    multiply as multiply,
)
from .namespace import (
    negative as negative,
)
from .namespace import (
    nextafter as nextafter,
)
from .namespace import (
    nonzero as nonzero,
)
from .namespace import (
    not_equal as not_equal,
)
from .namespace import (
    ones as ones,
)
from .namespace import (
    ones_like as ones_like,
)
from .namespace import (
    outer as outer,
)
from .namespace import (
    permute_dims as permute_dims,
)
from .namespace import (
    positive as positive,
)
from .namespace import (
    pow as pow,
)
from .namespace import (
    prod as prod,
)
from .namespace import (
    real as real,
)
from .namespace import (
    reciprocal as reciprocal,
)
from .namespace import (
    remainder as remainder,
)
from .namespace import (
    repeat as repeat,
)
from .namespace import (
    reshape as reshape,
)
from .namespace import (
    result_type as result_type,
)
from .namespace import (
    roll as roll,
)
from .namespace import (
    round as round,
)
from .namespace import (
    searchsorted as searchsorted,
)
from .namespace import (
    sign as sign,
)
from .namespace import (
    signbit as signbit,
)
from .namespace import (
    sin as sin,
)
from .namespace import (
    sinh as sinh,
)
from .namespace import (
    sort as sort,
)
from .namespace import (
    sqrt as sqrt,
)
from .namespace import (
    square as square,
)
from .namespace import (
    squeeze as squeeze,
)
from .namespace import (
    stack as stack,
)
from .namespace import (
    std as std,
)
from .namespace import (
    subtract as subtract,
)
from .namespace import (
    sum as sum,
)
from .namespace import (
    take as take,
)
from .namespace import (
    take_along_axis as take_along_axis,
)
from .namespace import (
    tan as tan,
)
from .namespace import (
    tanh as tanh,
)
from .namespace import (
    tensordot as tensordot,
)
from .namespace import (
    tile as tile,
)
from .namespace import (
    to_numpy as to_numpy,
)
from .namespace import (
    trace as trace,
)
from .namespace import (
    transpose as transpose,
)
from .namespace import (
    tril as tril,
)
from .namespace import (
    triu as triu,
)
from .namespace import (
    trunc as trunc,
)
from .namespace import (
    unique_all as unique_all,
)
from .namespace import (
    unique_counts as unique_counts,
)
from .namespace import (
    unique_inverse as unique_inverse,
)
from .namespace import (
    unique_values as unique_values,
)
from .namespace import (
    unstack as unstack,
)
from .namespace import (
    var as var,
)
from .namespace import (
    vecdot as vecdot,
)
from .namespace import (
    where as where,
)
from .namespace import (
    zeros as zeros,
)
from .namespace import (
    zeros_like as zeros_like,
)
from .placement import MemoryKind, Placement
from .storage.group import AllocationGroup, DescriptorSlot
from .storage.identity import AllocationDomainId, AllocationId, AllocationKey
from .tensor import Tensor, from_numpy
from .view import TensorView, TensorViewMut

# The array API's dtype names: each is a `DType` member.
bool = DType.BOOL
int8 = DType.I8
int16 = DType.I16
int32 = DType.I32
int64 = DType.I64
uint8 = DType.U8
uint16 = DType.U16
uint32 = DType.U32
uint64 = DType.U64
float32 = DType.F32
float64 = DType.F64
complex64 = DType.C32
complex128 = DType.C64

# The array API's constants.
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

__array_api_version__ = "2024.12"

__version__ = "0.1.0"

__all__ = [
    "AccessError",
    "AllocationDomainId",
    "AllocationGroup",
    "AllocationId",
    "AllocationKey",
    "BorrowError",
    "BufferPool",
    "BufferPoolCacheStats",
    "BufferPoolStats",
    "CopyForbiddenError",
    "CopyStats",
    "CpuEngine",
    "DType",
    "DescriptorSlot",
    "DeviceAccessError",
    "GroupError",
    "HostAccessError",
    "HostReadGuard",
    "HostWriteGuard",
    "IndexOutOfRangeError",
    "InteropError",
    "MemoryKind",
    "MovedTensorError",
    "Placement",
    "PromotionError",
    "ReinterpretError",
    "RootImportError",
    "RuntimeStateError",
    "ShareHandle",
    "SharedMemoryDomain",
    "SharedTensorAllocationDomain",
    "TenferroError",
    "Tensor",
    "TensorView",
    "TensorViewMut",
    "ValidationError",
    "__array_api_version__",
    "__array_namespace_info__",
    "__version__",
    "abs",
    "acos",
    "acosh",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "array",
    "asarray",
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
    "bool",
    "broadcast_arrays",
    "broadcast_to",
    "can_cast",
    "ceil",
    "clip",
    "complex64",
    "complex128",
    "concat",
    "concatenate",
    "conj",
    "copy_stats",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "default_engine",
    "diag",
    "diff",
    "divide",
    "dot",
    "e",
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
    "float32",
    "float64",
    "floor",
    "floor_divide",
    "forbid_copies",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "greater",
    "greater_equal",
    "hypot",
    "iinfo",
    "imag",
    "inf",
    "int8",
    "int16",
    "int32",
    "int64",
    "isdtype",
    "isfinite",
    "isinf",
    "isnan",
    "kron",
    "less",
    "less_equal",
    "linspace",
    "log",
    "log1p",
    "log2",
    "log10",
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
    "nan",
    "negative",
    "newaxis",
    "nextafter",
    "nonzero",
    "not_equal",
    "ones",
    "ones_like",
    "outer",
    "permute_dims",
    "pi",
    "positive",
    "pow",
    "prod",
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
    "trunc",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
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
]
