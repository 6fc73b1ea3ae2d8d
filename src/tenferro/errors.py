"""The error hierarchy. Every error names the operation and carries structured fields.

All errors derive from `TenferroError`. Each has ``op`` (the operation, e.g.
``"Tensor.host_data"``), ``kind`` (a short upper-case tag, e.g. ``"UNSUPPORTED"``)
and ``details`` (the values involved, also reachable as attributes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "AccessError",
    "BorrowError",
    "CopyForbiddenError",
    "DeviceAccessError",
    "GroupError",
    "HostAccessError",
    "IndexOutOfRangeError",
    "InteropError",
    "LinAlgError",
    "MovedTensorError",
    "OutOfMemoryError",
    "PromotionError",
    "ReinterpretError",
    "RootImportError",
    "RuntimeStateError",
    "TenferroError",
    "ValidationError",
]


class TenferroError(Exception):
    """Base class of every tenferro error."""

    default_kind = "ERROR"

    def __init__(self, op: str, message: str, *, kind: str | None = None, **details: Any) -> None:
        self.op = op
        self.kind = kind or self.default_kind
        self.message = message
        self.details = details
        super().__init__(f"{op}: {message}")

    def __getattr__(self, name: str) -> Any:
        # Structured fields (e.g. ``err.shape``) are reachable as attributes.
        details = self.__dict__.get("details", {})
        if name in details:
            return details[name]
        raise AttributeError(name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.op, self.message, self.kind, self.details))


def _rebuild(
    cls: type[TenferroError], op: str, message: str, kind: str, details: dict[str, Any]
) -> TenferroError:
    return cls(op, message, kind=kind, **details)


class ValidationError(TenferroError, ValueError):
    """Bad shapes, lengths, axes, dtypes or arguments."""

    default_kind = "INVALID_ARGUMENT"


class RuntimeStateError(TenferroError, RuntimeError):
    """The operation cannot run on this state (e.g. a backend buffer on the CPU engine)."""

    default_kind = "RUNTIME_STATE"


class HostAccessError(TenferroError):
    """Memory cannot be read or written from the host (kinds UNSUPPORTED, FOREIGN_DOMAIN, ...)."""

    default_kind = "UNSUPPORTED"


class GroupError(TenferroError):
    """Allocation-group misuse (DESCRIPTOR_SLOT_VACANT, DESCRIPTOR_SLOT_OUT_OF_BOUNDS, ...)."""

    default_kind = "GROUP"


class AccessError(TenferroError):
    """A span or mapping request was refused (INVALID_LAYOUT, DTYPE_MISMATCH, ...)."""

    default_kind = "INVALID_LAYOUT"


class RootImportError(TenferroError):
    """A buffer could not be imported as an allocation root."""

    default_kind = "MISSING_ALLOCATION_IDENTITY"


class DeviceAccessError(TenferroError):
    """A device access request was refused by the provider."""

    default_kind = "UNSUPPORTED"


class BorrowError(TenferroError):
    """An exclusive borrow (or a move) was refused because the buffer is still aliased."""

    default_kind = "ALIASED"


class MovedTensorError(TenferroError):
    """The tensor was moved by an earlier operation and can no longer be used."""

    default_kind = "MOVED"


class ReinterpretError(TenferroError):
    """A storage narrowing (e.g. group-backed to plain host) is not possible."""

    default_kind = "REINTERPRET"


class CopyForbiddenError(TenferroError):
    """A physical copy was attempted inside ``forbid_copies()``."""

    default_kind = "COPY_FORBIDDEN"


class InteropError(TenferroError, BufferError):
    """A DLPack export or import cannot honour the request without a copy (a BufferError)."""

    default_kind = "INTEROP"


class OutOfMemoryError(TenferroError, MemoryError):
    """An allocation could not be satisfied (no memory or no space left); also a MemoryError."""

    default_kind = "OUT_OF_MEMORY"


class PromotionError(ValidationError, TypeError):
    """Operand dtypes have no common type under the array API's rules (also a TypeError)."""

    default_kind = "NO_PROMOTION"


class IndexOutOfRangeError(ValidationError, IndexError):
    """An index names an element outside an axis (also an IndexError)."""

    default_kind = "INDEX_OUT_OF_RANGE"


class LinAlgError(TenferroError, np.linalg.LinAlgError):
    """A factorisation failed: no convergence, a singular or a non-positive-definite matrix.

    Also a ``numpy.linalg.LinAlgError``, so code written for numpy catches it.
    ``batch_index`` names the failing matrix of a batched call (``()`` for a single
    matrix); kinds: NOT_CONVERGED, SINGULAR, NOT_POSITIVE_DEFINITE.
    """

    default_kind = "LINALG"
