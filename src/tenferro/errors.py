"""The error hierarchy. Every error names the operation and carries structured fields.

All errors derive from `TenferroError`. Each has ``op`` (the operation, e.g.
``"Tensor.host_data"``), ``kind`` (a short upper-case tag, e.g. ``"UNSUPPORTED"``)
and ``details`` (the values involved, also reachable as attributes).

Each error family lists its kinds in one `enum.StrEnum` (``ValidationError.kinds``
is `ValidationKind`, and so on). A kind is a ``str``: ``e.kind == "UNSUPPORTED"``,
``str(e.kind)`` and f-strings read as before, and ``e.kind is
ValidationKind.INVALID_AXES`` also holds. Code raises with ``kind="NAME"``; the
constructor turns the name into its family's member. ``tests/test_errors.py``
checks that every kind raised anywhere in the source belongs to its family; at
run time an unlisted kind stays a plain string rather than turning an error
into a crash.

A kind also names the details every error of it carries (`Kind.fields`, written
beside the member: ``NOT_SQUARE = "NOT_SQUARE", "shape"``); ``tests/test_errors.py``
checks every raise site of the kind passes them, and that the sites of one kind
pass the same details.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "NUMPY_REFUSALS",
    "PASSED_ON",
    "AccessError",
    "AccessKind",
    "BorrowError",
    "BorrowKind",
    "CopyForbiddenError",
    "CopyForbiddenKind",
    "DTypeError",
    "DTypeKind",
    "DeviceAccessError",
    "DeviceAccessKind",
    "GroupError",
    "GroupKind",
    "HostAccessError",
    "HostAccessKind",
    "IndexOutOfRangeError",
    "IndexOutOfRangeKind",
    "InteropError",
    "InteropKind",
    "Kind",
    "LinAlgError",
    "LinAlgKind",
    "MovedTensorError",
    "MovedTensorKind",
    "NotCopyableError",
    "NotCopyableKind",
    "OutOfMemoryError",
    "OutOfMemoryKind",
    "PromotionError",
    "PromotionKind",
    "ReinterpretError",
    "ReinterpretKind",
    "RootImportError",
    "RootImportKind",
    "RuntimeStateError",
    "RuntimeStateKind",
    "TenferroError",
    "TenferroKind",
    "ValidationError",
    "ValidationKind",
    "not_copyable",
    "numpy_refusal",
]


# ---------------------------------------------------------------------------- the kinds
class Kind(StrEnum):
    """A kind of error: its name, and the detail names every error of the kind carries.

    A member is written ``NAME = "NAME"``, or ``NAME = "NAME", "field", ...`` when
    every error of that kind carries those details (``e.field``, ``e.details``);
    ``tests/test_errors.py`` checks each raise site passes them.
    """

    fields: tuple[str, ...]

    def __new__(cls, value: str, *fields: str) -> Kind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.fields = fields
        return member


class TenferroKind(Kind):
    """The kinds of `TenferroError`."""

    ERROR = "ERROR"


class ValidationKind(Kind):
    """The kinds of `ValidationError`."""

    AMBIGUOUS_TRUTH = "AMBIGUOUS_TRUTH"
    BROADCAST = "BROADCAST"
    BUDGET_UNREACHABLE = "BUDGET_UNREACHABLE", "memory_budget", "needed"
    COPY_REQUIRED = "COPY_REQUIRED"
    DIM_MISMATCH = "DIM_MISMATCH"
    DIVISION_BY_ZERO = "DIVISION_BY_ZERO"
    DUPLICATE_AXES = "DUPLICATE_AXES"
    EMPTY_REDUCTION = "EMPTY_REDUCTION", "axes", "shape"
    INDEX_OUT_OF_RANGE = "INDEX_OUT_OF_RANGE", "axis", "index", "size"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    INVALID_AXES = "INVALID_AXES"
    INVALID_AXIS = "INVALID_AXIS"
    INVALID_BACKEND = "INVALID_BACKEND"
    INVALID_BUDGET = "INVALID_BUDGET"
    INVALID_CUTOFF = "INVALID_CUTOFF"
    INVALID_DATA = "INVALID_DATA"
    INVALID_DEVICE = "INVALID_DEVICE"
    INVALID_DOMAIN = "INVALID_DOMAIN"
    INVALID_EQUATION = "INVALID_EQUATION"
    INVALID_HANDLE = "INVALID_HANDLE"
    INVALID_INDEX = "INVALID_INDEX"
    INVALID_LIMIT = "INVALID_LIMIT", "limit"
    INVALID_MODE = "INVALID_MODE"
    INVALID_OPERAND = "INVALID_OPERAND"
    INVALID_OPTIMIZE = "INVALID_OPTIMIZE"
    INVALID_ORD = "INVALID_ORD"
    INVALID_OUT = "INVALID_OUT"
    INVALID_PATH = "INVALID_PATH"
    INVALID_PLACEMENT = "INVALID_PLACEMENT", "memory_kind"
    INVALID_RANK = "INVALID_RANK"
    INVALID_SHAPE = "INVALID_SHAPE"
    INVALID_SLOT = "INVALID_SLOT"
    INVALID_THREADS = "INVALID_THREADS", "threads"
    INVALID_TREE = "INVALID_TREE"
    INVALID_UPLO = "INVALID_UPLO"
    INVALID_VALUE = "INVALID_VALUE"
    LENGTH_MISMATCH = "LENGTH_MISMATCH"
    LOSSY_CONVERSION = "LOSSY_CONVERSION", "dtype", "index"
    NEGATIVE_INTEGER_POWER = "NEGATIVE_INTEGER_POWER"
    NOT_1D = "NOT_1D", "data_shape"
    NOT_A_TENSOR = "NOT_A_TENSOR"
    NOT_CONTIGUOUS = "NOT_CONTIGUOUS"
    NOT_DIFFERENTIABLE = "NOT_DIFFERENTIABLE"
    NOT_F_CONTIGUOUS = "NOT_F_CONTIGUOUS"
    NOT_GROUP_BACKED = "NOT_GROUP_BACKED"
    NOT_SQUARE = "NOT_SQUARE", "shape"
    NO_OPERAND = "NO_OPERAND"
    OPERAND_COUNT = "OPERAND_COUNT"
    OUT_MISMATCH = (
        "OUT_MISMATCH",
        "actual_dtype",
        "actual_shape",
        "expected_dtype",
        "expected_shape",
    )
    RANK_MISMATCH = "RANK_MISMATCH"
    READ_ONLY = "READ_ONLY"
    ROLE_CONFLICT = "ROLE_CONFLICT", "axes"
    SCALAR_OUT_OF_RANGE = "SCALAR_OUT_OF_RANGE"
    SHAPE_MISMATCH = "SHAPE_MISMATCH"
    SHAPE_OVERFLOW = "SHAPE_OVERFLOW", "shape"
    SUBSCRIPTS = "SUBSCRIPTS"
    SYNTAX = "SYNTAX", "expression"
    TENSOR_MEMORY = "TENSOR_MEMORY"
    TOO_DEEP = "TOO_DEEP"
    TOO_MANY_INDICES = "TOO_MANY_INDICES"
    UNKNOWN_NAME = "UNKNOWN_NAME", "name"
    UNSUPPORTED_EXPRESSION = "UNSUPPORTED_EXPRESSION", "part"
    UNSUPPORTED_STORAGE = "UNSUPPORTED_STORAGE", "index"
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"
    UNUSED_OPERAND = "UNUSED_OPERAND", "names"


class DTypeKind(Kind):
    """The kinds of `DTypeError`."""

    DTYPE_MISMATCH = "DTYPE_MISMATCH"
    INVALID_TYPE = "INVALID_TYPE"
    SCALAR_DTYPE = "SCALAR_DTYPE", "dtype", "scalar"
    UNSUPPORTED_DTYPE = "UNSUPPORTED_DTYPE"


class RuntimeStateKind(Kind):
    """The kinds of `RuntimeStateError`."""

    BACKEND_BUFFER = "BACKEND_BUFFER", "placement"
    CLIENT_CLOSED = "CLIENT_CLOSED"
    FORKED_DOMAIN = "FORKED_DOMAIN", "owner_pid"
    GROUP_BACKED = "GROUP_BACKED"
    NOT_HOST = "NOT_HOST", "memory_kind"
    NOT_PICKLABLE = "NOT_PICKLABLE"
    NOT_SHARED_MEMORY = "NOT_SHARED_MEMORY"
    NO_WORKERS = "NO_WORKERS"
    PROVIDER = "PROVIDER"
    RUNTIME_STATE = "RUNTIME_STATE"
    SCHEDULER_LOST = "SCHEDULER_LOST"
    SERVICE_NOT_REGISTERED = "SERVICE_NOT_REGISTERED", "service"
    TIMEOUT = "TIMEOUT"
    UNSUPPORTED_PLATFORM = "UNSUPPORTED_PLATFORM"
    WORKERS_LOST = "WORKERS_LOST"


class HostAccessKind(Kind):
    """The kinds of `HostAccessError`."""

    FOREIGN_DOMAIN = "FOREIGN_DOMAIN", "allocation"
    PROVIDER = "PROVIDER", "name"
    SEGMENT_GONE = "SEGMENT_GONE", "name", "owner_pid"
    SEGMENT_SHRUNK = "SEGMENT_SHRUNK", "actual", "expected", "name"
    UNSUPPORTED = "UNSUPPORTED", "placement"
    UNTRUSTED_SEGMENT = "UNTRUSTED_SEGMENT", "name"


class GroupKind(Kind):
    """The kinds of `GroupError`."""

    ALIASED_ALLOCATION = "ALIASED_ALLOCATION"
    ALREADY_MAPPED = "ALREADY_MAPPED"
    DESCRIPTOR_SLOT_OUT_OF_BOUNDS = "DESCRIPTOR_SLOT_OUT_OF_BOUNDS", "descriptor_count", "slot"
    DESCRIPTOR_SLOT_VACANT = "DESCRIPTOR_SLOT_VACANT", "slot"
    GROUP = "GROUP"
    GROUP_MOVED = "GROUP_MOVED", "moved_by"
    INVALID_LAYOUT = "INVALID_LAYOUT"
    SAME_GROUP = "SAME_GROUP"
    SHARED_OWNER = "SHARED_OWNER", "sharing", "slot"


class AccessKind(Kind):
    """The kinds of `AccessError`."""

    DTYPE_MISMATCH = "DTYPE_MISMATCH", "actual", "expected"
    INVALID_LAYOUT = "INVALID_LAYOUT"
    LENGTH_MISMATCH = "LENGTH_MISMATCH", "actual", "expected"
    PROVIDER = "PROVIDER"
    UNSUPPORTED = "UNSUPPORTED", "backend"


class RootImportKind(Kind):
    """The kinds of `RootImportError`."""

    MISSING_ALLOCATION_IDENTITY = "MISSING_ALLOCATION_IDENTITY"


class DeviceAccessKind(Kind):
    """The kinds of `DeviceAccessError`."""

    INVALID_REQUEST = "INVALID_REQUEST"
    PROVIDER = "PROVIDER", "backend"
    UNSUPPORTED = "UNSUPPORTED", "backend"


class BorrowKind(Kind):
    """The kinds of `BorrowError`."""

    ADOPTED_STILL_REFERENCED = "ADOPTED_STILL_REFERENCED"
    ALIASED = "ALIASED", "aliases"
    BORROW_ENDED = "BORROW_ENDED"
    BROADCAST_VIEW = "BROADCAST_VIEW"
    EXCLUSIVELY_BORROWED = "EXCLUSIVELY_BORROWED", "holder"
    IN_USE = "IN_USE", "readers"
    OUT_ALIASES_INPUT = "OUT_ALIASES_INPUT"
    READ_ONLY = "READ_ONLY"
    RELEASED = "RELEASED"
    UNSUPPORTED = "UNSUPPORTED"


class NotCopyableKind(Kind):
    """The kinds of `NotCopyableError`."""

    NOT_COPYABLE = "NOT_COPYABLE"


class MovedTensorKind(Kind):
    """The kinds of `MovedTensorError`."""

    MOVED = "MOVED"


class ReinterpretKind(Kind):
    """The kinds of `ReinterpretError`."""

    GROUP_BACKED = "GROUP_BACKED", "allocation"
    NOT_HOST_OWNER = "NOT_HOST_OWNER", "allocation"
    PARTIAL_OWNER = "PARTIAL_OWNER"
    REINTERPRET = "REINTERPRET"
    REINTERPRETED = "REINTERPRETED"


class CopyForbiddenKind(Kind):
    """The kinds of `CopyForbiddenError`."""

    COPY_FORBIDDEN = "COPY_FORBIDDEN"


class InteropKind(Kind):
    """The kinds of `InteropError`."""

    COPY_REQUIRED = "COPY_REQUIRED"
    INTEROP = "INTEROP"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    INVALID_STREAM = "INVALID_STREAM"
    LEGACY_CAPSULE = "LEGACY_CAPSULE"
    NOT_DLPACK = "NOT_DLPACK"
    NOT_HOST = "NOT_HOST"
    PRODUCER_REFUSED = "PRODUCER_REFUSED"
    UNSUPPORTED_DEVICE = "UNSUPPORTED_DEVICE"


class OutOfMemoryKind(Kind):
    """The kinds of `OutOfMemoryError`."""

    OUT_OF_MEMORY = "OUT_OF_MEMORY"


class PromotionKind(Kind):
    """The kinds of `PromotionError`."""

    INPLACE_MISMATCH = "INPLACE_MISMATCH"
    NO_PROMOTION = "NO_PROMOTION"
    SCALAR_DTYPE = "SCALAR_DTYPE"
    UNSUPPORTED_DTYPE = "UNSUPPORTED_DTYPE", "dtype"


class IndexOutOfRangeKind(Kind):
    """The kinds of `IndexOutOfRangeError`."""

    INDEX_OUT_OF_RANGE = "INDEX_OUT_OF_RANGE"
    INVALID_AXES = "INVALID_AXES"
    INVALID_AXIS = "INVALID_AXIS"
    INVALID_INDEX = "INVALID_INDEX"


class LinAlgKind(Kind):
    """The kinds of `LinAlgError`."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT", "batch_index"
    LINALG = "LINALG"
    NOT_CONVERGED = "NOT_CONVERGED", "batch_index"
    NOT_FINITE = "NOT_FINITE", "batch_index"
    NOT_POSITIVE_DEFINITE = "NOT_POSITIVE_DEFINITE"
    SINGULAR = "SINGULAR", "batch_index"


# ---------------------------------------------------------------------------- the errors
class TenferroError(Exception):
    """Base class of every tenferro error."""

    kinds: ClassVar[type[Kind]] = TenferroKind
    default_kind: ClassVar[str] = TenferroKind.ERROR

    def __init__(self, op: str, message: str, *, kind: str | None = None, **details: Any) -> None:
        self.op = op
        name = kind or self.default_kind
        try:
            self.kind: str = self.kinds(name)
        except ValueError:
            self.kind = name  # unlisted: still a string (the source scan flags it)
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
        return (_rebuild, (type(self), self.op, self.message, str(self.kind), self.details))


def _rebuild(
    cls: type[TenferroError], op: str, message: str, kind: str, details: dict[str, Any]
) -> TenferroError:
    return cls(op, message, kind=kind, **details)


class ValidationError(TenferroError, ValueError):
    """Bad shapes, lengths, axes or arguments."""

    kinds: ClassVar[type[Kind]] = ValidationKind
    default_kind: ClassVar[str] = ValidationKind.INVALID_ARGUMENT


class DTypeError(ValidationError, TypeError):
    """A dtype mismatch, an unsupported dtype or a scalar of the wrong type (a TypeError).

    Also a `ValidationError` (and so a ValueError), as before this family existed.
    """

    kinds: ClassVar[type[Kind]] = DTypeKind
    default_kind: ClassVar[str] = DTypeKind.DTYPE_MISMATCH


class RuntimeStateError(TenferroError, RuntimeError):
    """The operation cannot run on this state (e.g. a backend buffer on the CPU engine)."""

    kinds: ClassVar[type[Kind]] = RuntimeStateKind
    default_kind: ClassVar[str] = RuntimeStateKind.RUNTIME_STATE


class HostAccessError(TenferroError):
    """Memory cannot be read or written from the host (kinds UNSUPPORTED, FOREIGN_DOMAIN, ...)."""

    kinds: ClassVar[type[Kind]] = HostAccessKind
    default_kind: ClassVar[str] = HostAccessKind.UNSUPPORTED


class GroupError(TenferroError):
    """Allocation-group misuse (DESCRIPTOR_SLOT_VACANT, DESCRIPTOR_SLOT_OUT_OF_BOUNDS, ...)."""

    kinds: ClassVar[type[Kind]] = GroupKind
    default_kind: ClassVar[str] = GroupKind.GROUP


class AccessError(TenferroError):
    """A span or mapping request was refused (INVALID_LAYOUT, DTYPE_MISMATCH, ...)."""

    kinds: ClassVar[type[Kind]] = AccessKind
    default_kind: ClassVar[str] = AccessKind.INVALID_LAYOUT


class RootImportError(TenferroError):
    """A buffer could not be imported as an allocation root."""

    kinds: ClassVar[type[Kind]] = RootImportKind
    default_kind: ClassVar[str] = RootImportKind.MISSING_ALLOCATION_IDENTITY


class DeviceAccessError(TenferroError):
    """A device access request was refused by the provider."""

    kinds: ClassVar[type[Kind]] = DeviceAccessKind
    default_kind: ClassVar[str] = DeviceAccessKind.UNSUPPORTED


class BorrowError(TenferroError):
    """An exclusive borrow (or a move) was refused because the buffer is still aliased."""

    kinds: ClassVar[type[Kind]] = BorrowKind
    default_kind: ClassVar[str] = BorrowKind.ALIASED


class NotCopyableError(BorrowError, GroupError):
    """Pickling or copying an object that owns memory (a tensor, a group, an owner).

    The one "cannot be copied" error: also a `BorrowError` (what a tensor raised)
    and a `GroupError` (what groups and owners raised).
    """

    kinds: ClassVar[type[Kind]] = NotCopyableKind
    default_kind: ClassVar[str] = NotCopyableKind.NOT_COPYABLE


class MovedTensorError(TenferroError):
    """The tensor was moved by an earlier operation and can no longer be used."""

    kinds: ClassVar[type[Kind]] = MovedTensorKind
    default_kind: ClassVar[str] = MovedTensorKind.MOVED


class ReinterpretError(TenferroError):
    """A storage narrowing (e.g. group-backed to plain host) is not possible."""

    kinds: ClassVar[type[Kind]] = ReinterpretKind
    default_kind: ClassVar[str] = ReinterpretKind.REINTERPRET


class CopyForbiddenError(TenferroError):
    """A physical copy was attempted inside ``forbid_copies()``."""

    kinds: ClassVar[type[Kind]] = CopyForbiddenKind
    default_kind: ClassVar[str] = CopyForbiddenKind.COPY_FORBIDDEN


class InteropError(TenferroError, BufferError):
    """A DLPack export or import cannot honour the request without a copy (a BufferError)."""

    kinds: ClassVar[type[Kind]] = InteropKind
    default_kind: ClassVar[str] = InteropKind.INTEROP


class OutOfMemoryError(TenferroError, MemoryError):
    """An allocation could not be satisfied (no memory or no space left); also a MemoryError."""

    kinds: ClassVar[type[Kind]] = OutOfMemoryKind
    default_kind: ClassVar[str] = OutOfMemoryKind.OUT_OF_MEMORY


def not_copyable(what: str) -> NotCopyableError:
    """The error for ``pickle``/``copy.copy``/``copy.deepcopy`` of ``what`` (it owns memory)."""
    return NotCopyableError(
        f"{what}.__reduce__",
        f"{what} holds memory, so pickling or copying it would copy or alias the buffer "
        "implicitly; duplicate() a tensor or to_col_major() a view (named copies), or "
        "to_numpy(copy=True), or send shared-memory tensors across processes with "
        "share_handle()",
        kind="NOT_COPYABLE",
    )


class PromotionError(DTypeError):
    """Operand dtypes have no common type under the array API's rules (a `DTypeError`,
    so also a TypeError)."""

    kinds: ClassVar[type[Kind]] = PromotionKind
    default_kind: ClassVar[str] = PromotionKind.NO_PROMOTION


class IndexOutOfRangeError(ValidationError, IndexError):
    """An index names an element outside an axis (also an IndexError)."""

    kinds: ClassVar[type[Kind]] = IndexOutOfRangeKind
    default_kind: ClassVar[str] = IndexOutOfRangeKind.INDEX_OUT_OF_RANGE


class LinAlgError(TenferroError, np.linalg.LinAlgError):
    """A factorisation failed: no convergence, a singular or a non-positive-definite matrix.

    Also a ``numpy.linalg.LinAlgError``, so code written for numpy catches it.
    ``batch_index`` names the failing matrix of a batched call (``()`` for a single
    matrix); kinds: NOT_CONVERGED, SINGULAR, NOT_POSITIVE_DEFINITE.
    """

    kinds: ClassVar[type[Kind]] = LinAlgKind
    default_kind: ClassVar[str] = LinAlgKind.LINALG


# ---------------------------------------------------------------------- numpy
#: What numpy raises for input it refuses (RecursionError: an object whose
#: ``__array__`` or ``__array_ufunc__`` keeps handing numpy back to itself).
NUMPY_REFUSALS = (
    ValueError,
    TypeError,
    IndexError,
    MemoryError,
    RecursionError,
    KeyError,
    OverflowError,
)

#: Errors among those that are already what the caller should see: ours, and a
#: failed factorisation (numpy's LinAlgError is a ValueError; callers catch it).
PASSED_ON = (TenferroError, np.linalg.LinAlgError)

# numpy's words for a result it cannot allocate or even describe.
_TOO_BIG = (
    "array is too big",
    "maximum allowed dimension exceeded",
    "unable to allocate",
    "too large",
    "out of bounds for int",
)


def numpy_refusal(op: str, exc: BaseException) -> TenferroError:
    """The typed error for numpy's refusal ``exc`` inside operation ``op``."""
    if isinstance(exc, TenferroError):
        return exc
    msg = str(exc)
    low = msg.lower()
    why = f"{type(exc).__name__}: {msg}"
    if isinstance(exc, MemoryError) or (
        isinstance(exc, ValueError) and any(s in low for s in _TOO_BIG)
    ):
        return OutOfMemoryError(
            op,
            f"the result cannot be allocated ({why}); ask for a smaller result or work "
            "on smaller pieces",
        )
    if "negative integer powers" in low:
        return ValidationError(
            op,
            "an integer array cannot be raised to a negative integer power; convert it "
            "to a float dtype first",
            kind="NEGATIVE_INTEGER_POWER",
        )
    if isinstance(exc, np.exceptions.AxisError):
        return IndexOutOfRangeError(
            op, f"{msg}; an axis must lie in [-ndim, ndim)", kind="INVALID_AXIS"
        )
    if isinstance(exc, IndexError):
        return IndexOutOfRangeError(op, f"{why}; check the index", kind="INVALID_INDEX")
    if isinstance(exc, TypeError):
        if "not supported for the input types" in low:
            return DTypeError(
                op,
                f"the operands' dtypes are not supported here ({why}); convert them first",
                kind="UNSUPPORTED_DTYPE",
            )
        return DTypeError(
            op, f"an argument has a type this operation does not take ({why})", kind="INVALID_TYPE"
        )
    if isinstance(exc, RecursionError):
        return ValidationError(
            op,
            "an argument refers back to itself without end (for instance a tenferro array "
            "as numpy's where= or out=); pass plain values or numpy arrays",
            kind="INVALID_ARGUMENT",
        )
    return ValidationError(op, f"invalid argument ({why})", kind="INVALID_ARGUMENT")
