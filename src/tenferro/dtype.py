"""Element types: the seven dtypes tenferro stores, and their numpy twins."""

from __future__ import annotations

import cmath
import enum
import numbers
from typing import Any

import numpy as np

from .errors import DTypeError, PromotionError, ValidationError

__all__ = [
    "CATEGORIES",
    "SCALAR_KINDS",
    "DType",
    "as_dtype",
    "as_numpy_dtype",
    "dtype_kind",
    "promote_types",
    "scalar_as_dtype",
    "scalar_kind",
    "show_scalar",
]


class DType(enum.Enum):
    """A tensor element type. Every API taking a dtype also takes the numpy one."""

    F32 = "float32"
    F64 = "float64"
    I32 = "int32"
    I64 = "int64"
    BOOL = "bool"
    C32 = "complex64"
    C64 = "complex128"
    # The array API's further integer types (2024.12 requires all of them).
    I8 = "int8"
    I16 = "int16"
    U8 = "uint8"
    U16 = "uint16"
    U32 = "uint32"
    U64 = "uint64"

    # Members are singletons compared by identity, so identity hashing is exact; it
    # runs in C, where Enum's own `__hash__` (hash of the name) is a Python call on
    # every dict or set lookup of a dtype (`dt.numpy`, `dt in allowed`: hot paths).
    __hash__ = object.__hash__

    @property
    def numpy(self) -> np.dtype[Any]:
        """The numpy dtype with the same memory representation."""
        return _NUMPY[self]

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype (numpy reads this attribute: ``np.dtype(DType.F64)`` works)."""
        return _NUMPY[self]

    def __eq__(self, other: object) -> bool:
        """Identity among members; equal to the numpy dtype, scalar type or name that
        numpy reads as the same dtype (``DType.F64 == np.float64 == "float64"``)."""
        if other.__class__ is DType:
            return self is other
        if other is None or isinstance(other, (bool, int, float, complex)):
            return False  # np.dtype(None) means float64; numbers are not dtypes
        try:
            return _NUMPY[self] == np.dtype(other)  # type: ignore[call-overload,no-any-return]
        except Exception:
            return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return _NUMPY[self].itemsize

    @property
    def is_complex(self) -> bool:
        return self in _COMPLEX

    @property
    def is_float(self) -> bool:
        return self in _FLOAT

    @property
    def is_integer(self) -> bool:
        return self in _INTEGER

    @property
    def is_unsigned(self) -> bool:
        return self in _UNSIGNED

    @property
    def is_numeric(self) -> bool:
        """Every dtype arithmetic takes: all but BOOL."""
        return self is not DType.BOOL

    @property
    def real(self) -> DType:
        """The real type of a complex dtype (C32 -> F32, C64 -> F64); itself otherwise."""
        return _REAL.get(self, self)

    def __repr__(self) -> str:
        return f"DType.{self.name}"


_NUMPY: dict[DType, np.dtype[Any]] = {d: np.dtype(d.value) for d in DType}
_FROM_NUMPY: dict[np.dtype[Any], DType] = {v: k for k, v in _NUMPY.items()}
_REAL = {DType.C32: DType.F32, DType.C64: DType.F64}
_SIGNED = frozenset({DType.I8, DType.I16, DType.I32, DType.I64})
_UNSIGNED = frozenset({DType.U8, DType.U16, DType.U32, DType.U64})
_INTEGER = _SIGNED | _UNSIGNED
# Sets, not tuples: membership hashes by identity and never calls `DType.__eq__`.
_COMPLEX = frozenset({DType.C32, DType.C64})
_FLOAT = frozenset({DType.F32, DType.F64})


def as_dtype(value: Any, op: str = "dtype") -> DType:
    """Normalise a `DType`, its name ("F64"), a numpy dtype, scalar type or name to a `DType`.

    Raises `ValidationError` (kind UNSUPPORTED_DTYPE) for anything tenferro does not store.
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in DType.__members__:
        return DType[value]  # "F64", "C32", ...
    npd: np.dtype[Any] | None = None
    # None is refused (np.dtype(None) would silently mean float64).
    if value is not None:
        try:
            npd = np.dtype(value)
        except Exception:
            # numpy parses some strings as Python literals ("09", "(o,K" raise
            # SyntaxError) and calls arbitrary objects' ``dtype`` attributes: whatever it
            # cannot read is not a dtype tenferro stores.
            npd = None
    found = _FROM_NUMPY.get(npd) if npd is not None else None
    if found is None:
        raise DTypeError(
            op,
            f"unsupported dtype {value!r}; use one of "
            + ", ".join(f"{d.name} ({d.value})" for d in DType),
            kind="UNSUPPORTED_DTYPE",
            dtype=value,
        )
    return found


def as_numpy_dtype(value: Any, op: str) -> np.dtype[Any]:
    """The numpy dtype ``value`` names (a `DType` too), for the ``__array__`` protocol.

    Any numpy dtype is accepted (numpy converts to it); what numpy cannot read is
    a `ValidationError` (kind UNSUPPORTED_DTYPE), never numpy's own TypeError,
    ValueError or SyntaxError.
    """
    if isinstance(value, DType):
        return value.numpy
    try:
        found: np.dtype[Any] = np.dtype(value)
    except Exception:  # numpy raises TypeError, ValueError or SyntaxError for junk
        raise DTypeError(
            op,
            f"{value!r} is not a numpy dtype; pass a DType or a numpy dtype",
            kind="UNSUPPORTED_DTYPE",
            dtype=value,
        ) from None
    return found


def dtype_of_array(arr: np.ndarray[Any, Any], op: str) -> DType:
    """The `DType` of a numpy array, refusing non-native byte order and foreign dtypes."""
    found = _FROM_NUMPY.get(arr.dtype)
    if found is None:
        raise DTypeError(
            op,
            f"unsupported array dtype {arr.dtype}; convert it first (arr.astype(np.float64) "
            "makes a copy) to one of " + ", ".join(d.value for d in DType),
            kind="UNSUPPORTED_DTYPE",
            dtype=arr.dtype,
        )
    return found


# ---------------------------------------------------------------------- array API
#: The array API's dtype categories (each elementwise function accepts one of them).
CATEGORIES: dict[str, frozenset[DType]] = {
    "bool": frozenset({DType.BOOL}),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integer": _INTEGER,
    "real floating": frozenset({DType.F32, DType.F64}),
    "complex floating": frozenset({DType.C32, DType.C64}),
    "floating": frozenset({DType.F32, DType.F64, DType.C32, DType.C64}),
    "real numeric": _INTEGER | {DType.F32, DType.F64},
    "numeric": _INTEGER | {DType.F32, DType.F64, DType.C32, DType.C64},
    "integer or boolean": _INTEGER | {DType.BOOL},
    "real": _INTEGER | {DType.F32, DType.F64, DType.BOOL},
    "any": frozenset(DType),
}

# The standard's promotion lattice: within a kind, the wider type; signed with
# unsigned, the smallest signed type holding both (none for uint64); real with
# complex floating, the complex type of the wider precision. Kinds never mix.
_INT_BITS = {DType.I8: 8, DType.I16: 16, DType.I32: 32, DType.I64: 64}
_UINT_BITS = {DType.U8: 8, DType.U16: 16, DType.U32: 32, DType.U64: 64}
_SIGNED_BY_BITS = {v: k for k, v in _INT_BITS.items()}
_UNSIGNED_BY_BITS = {v: k for k, v in _UINT_BITS.items()}
_FLOAT_BITS = {DType.F32: 32, DType.F64: 64, DType.C32: 32, DType.C64: 64}


def _promote_pair(a: DType, b: DType) -> DType | None:
    if a is b:
        return a
    if a in _INT_BITS and b in _INT_BITS:
        return _SIGNED_BY_BITS[max(_INT_BITS[a], _INT_BITS[b])]
    if a in _UINT_BITS and b in _UINT_BITS:
        return _UNSIGNED_BY_BITS[max(_UINT_BITS[a], _UINT_BITS[b])]
    if a in _UINT_BITS and b in _INT_BITS:
        a, b = b, a
    if a in _INT_BITS and b in _UINT_BITS:
        need = max(_INT_BITS[a], 2 * _UINT_BITS[b])
        return _SIGNED_BY_BITS.get(need)
    if a in _FLOAT_BITS and b in _FLOAT_BITS:
        bits = max(_FLOAT_BITS[a], _FLOAT_BITS[b])
        if a.is_complex or b.is_complex:
            return DType.C64 if bits == 64 else DType.C32
        return DType.F64 if bits == 64 else DType.F32
    return None


#: The full promotion table, built once: (a, b) -> result, absent when undefined.
PROMOTION_TABLE: dict[tuple[DType, DType], DType] = {
    (a, b): r for a in DType for b in DType if (r := _promote_pair(a, b)) is not None
}


def promote_types(a: DType, b: DType, op: str = "result_type") -> DType:
    """The array API's result dtype for two dtypes; `PromotionError` when it has none."""
    found = PROMOTION_TABLE.get((a, b))
    if found is None:
        raise PromotionError(
            op,
            f"dtypes {a.value} and {b.value} do not promote (the array API never mixes "
            "kinds, nor uint64 with signed integers); convert one operand first with "
            "tenferro.astype",
            kind="NO_PROMOTION",
            dtypes=(a, b),
        )
    return found


# ---------------------------------------------------------------------- scalars
#: The kinds of number, in order: a Python or numpy scalar may take a dtype of its
#: own kind or a higher one (weak typing), never a lower one.
SCALAR_KINDS = ("bool", "int", "float", "complex")


def scalar_kind(value: Any) -> int | None:
    """0 bool, 1 int, 2 float, 3 complex (indices into `SCALAR_KINDS`); None for
    anything that is not one number."""
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (numbers.Integral, np.integer)):
        return 1
    if isinstance(value, (numbers.Real, np.floating)):
        return 2
    if isinstance(value, (numbers.Complex, np.complexfloating)):
        return 3
    return None


def dtype_kind(dt: DType) -> int:
    """The `SCALAR_KINDS` index of ``dt``'s kind."""
    if dt is DType.BOOL:
        return 0
    if dt.is_integer:
        return 1
    return 3 if dt.is_complex else 2


def show_scalar(value: Any) -> str:
    """``repr(value)`` for a message, except that a huge integer is described by its
    size (Python refuses to print an integer of more than 4300 digits) and a long
    text is cut."""
    if isinstance(value, int) and not -(10**40) < value < 10**40:
        bits = abs(value).bit_length()
        sign = "-" if value < 0 else ""
        return f"{sign}<an integer of about {int(bits * 0.30103) + 1} digits ({bits} bits)>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _finite(value: Any) -> bool:
    """Is the Python or numpy number ``value`` finite? (Integers and fractions always are.)

    Not `np.isfinite`: it refuses an int beyond int64 and a `Fraction` (TypeError).
    """
    if isinstance(value, (numbers.Rational, np.integer, np.bool_)):
        return True
    try:
        return cmath.isfinite(complex(value))
    except (TypeError, ValueError, OverflowError):
        return False


def scalar_as_dtype(value: Any, dt: DType, op: str, *, noun: str = "scalar", hint: str = "") -> Any:
    """``value`` (one number) as a numpy scalar of ``dt``: tenferro's one scalar rule.

    Refused: a number of a higher kind than ``dt`` (a float for an integer dtype,
    a complex for a real one: `DTypeError` kind SCALAR_DTYPE; ``hint`` ends its
    message), and a number ``dt`` cannot hold: an integer out of range, a finite
    number that would overflow (`ValidationError` kind SCALAR_OUT_OF_RANGE). The
    caller has checked that ``value`` is a number (`scalar_kind` is not None).
    ``noun`` names the value in messages ("scalar", "value").
    """
    rank = scalar_kind(value)
    if rank is None or rank > dtype_kind(dt):
        kind = SCALAR_KINDS[3 if rank is None else rank]
        raise DTypeError(
            op,
            f"a {kind} {noun} ({show_scalar(value)}) cannot take the tensor's dtype "
            f"{dt.name} without losing information; pass a value of the tensor's kind{hint}",
            kind="SCALAR_DTYPE",
            scalar=value,
            dtype=dt,
        )
    if isinstance(value, np.generic):
        value = value.item()  # numpy would wrap an unsigned 2**64 - 1 into int64 as -1
    try:
        with np.errstate(over="raise", invalid="raise"):
            converted = dt.numpy.type(value)
    except (OverflowError, FloatingPointError, ValueError, TypeError):
        converted = None
    if converted is None or (rank >= 1 and _finite(value) and not np.isfinite(converted)):
        raise ValidationError(
            op,
            f"the {noun} {show_scalar(value)} is out of range for dtype {dt.name}; pass a "
            "value the dtype can hold",
            kind="SCALAR_OUT_OF_RANGE",
            scalar=value,
            dtype=dt,
        )
    return converted
