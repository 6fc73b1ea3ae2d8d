"""Element types: the seven dtypes tenferro stores, and their numpy twins."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .errors import DTypeError

__all__ = ["DType", "as_dtype"]


class DType(enum.Enum):
    """A tensor element type. Every API taking a dtype also takes the numpy one."""

    F32 = "float32"
    F64 = "float64"
    I32 = "int32"
    I64 = "int64"
    BOOL = "bool"
    C32 = "complex64"
    C64 = "complex128"

    @property
    def numpy(self) -> np.dtype[Any]:
        """The numpy dtype with the same memory representation."""
        return _NUMPY[self]

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return _NUMPY[self].itemsize

    @property
    def is_complex(self) -> bool:
        return self in (DType.C32, DType.C64)

    @property
    def is_float(self) -> bool:
        return self in (DType.F32, DType.F64)

    @property
    def is_integer(self) -> bool:
        return self in (DType.I32, DType.I64)

    @property
    def real(self) -> DType:
        """The real type of a complex dtype (C32 -> F32, C64 -> F64); itself otherwise."""
        return _REAL.get(self, self)

    def __repr__(self) -> str:
        return f"DType.{self.name}"


_NUMPY: dict[DType, np.dtype[Any]] = {d: np.dtype(d.value) for d in DType}
_FROM_NUMPY: dict[np.dtype[Any], DType] = {v: k for k, v in _NUMPY.items()}
_REAL = {DType.C32: DType.F32, DType.C64: DType.F64}


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
        except (TypeError, ValueError):
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
