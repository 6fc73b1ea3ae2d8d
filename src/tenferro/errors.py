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

A kind carries its message template and the details every error of it carries,
written beside the member (as a Rust error enum's variant carries its own text and
fields)::

    NOT_SQUARE = "NOT_SQUARE", "shape {shape} is not square"
    BACKEND_BUFFER = "BACKEND_BUFFER", "CPU backend received backend buffer", "placement"

The template states what went wrong from the details; each ``{name}`` in it, and
each name after it (a detail carried but not shown), is in `Kind.fields`. A raise
site passes the kind, the details and only its own text, what to do there::

    ValidationError(op, "needs square matrices", kind="NOT_SQUARE", shape=x.shape)

and the message reads ``op: <template filled in>; <site text>`` (`TenferroError.what`
is the first part, ``message`` the second). A template naming no detail is the
default text, used only when the site gives none: the site's text, more specific,
stands alone. An error built without its kind's details (by hand, in user code)
gets the site text alone. ``tests/test_errors.py`` checks that every raise site of
a kind passes its fields, that the sites of one kind pass the same details, and
that a template names only declared details.
"""

from __future__ import annotations

import re
from enum import StrEnum
from string import Formatter
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
    """A kind of error: its name, its message template and the details it always carries.

    A member is written ``NAME = "NAME", "template"``, or ``NAME = "NAME", "template",
    "field", ...``. The template states what went wrong, from the error's details:
    each ``{field}`` in it is a detail every error of the kind carries, and the names
    after the template are further details it carries without showing them. `shown`
    holds the first, `fields` both, in order. ``tests/test_errors.py`` checks each
    raise site passes them.
    """

    template: str
    shown: tuple[str, ...]
    fields: tuple[str, ...]

    def __new__(cls, value: str, template: str, *extra: str) -> Kind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.template = template
        names = [
            re.split(r"[.\[]", name)[0] for _, name, _, _ in Formatter().parse(template) if name
        ]
        member.shown = tuple(dict.fromkeys(names))
        member.fields = tuple(dict.fromkeys([*names, *extra]))
        return member

    def what(self, details: dict[str, Any]) -> str:
        """The template filled in from ``details``; "" unless they hold every field."""
        if not all(name in details for name in self.fields):
            return ""  # built by hand without the kind's details: the message alone
        try:
            return self.template.format_map(details)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            return ""


class TenferroKind(Kind):
    """The kinds of `TenferroError`."""

    ERROR = "ERROR", "the operation failed"


class ValidationKind(Kind):
    """The kinds of `ValidationError`."""

    AMBIGUOUS_TRUTH = "AMBIGUOUS_TRUTH", "the truth value of an array is ambiguous"
    BROADCAST = "BROADCAST", "the shapes do not broadcast", "shapes"
    BUDGET_UNREACHABLE = (
        "BUDGET_UNREACHABLE",
        "no slicing meets the memory budget",
        "memory_budget",
        "needed",
    )
    COPY_REQUIRED = "COPY_REQUIRED", "this needs a copy, and copy=False forbids one"
    DIM_MISMATCH = "DIM_MISMATCH", "the dimensions do not match"
    DIVISION_BY_ZERO = "DIVISION_BY_ZERO", "integer division by zero"
    DUPLICATE_AXES = "DUPLICATE_AXES", "an axis is named twice"
    EMPTY_REDUCTION = "EMPTY_REDUCTION", "shape {shape} has no element along axes {axes}"
    INDEX_OUT_OF_RANGE = (
        "INDEX_OUT_OF_RANGE",
        "index {entry} is out of range for axis {axis} of size {size}",
        "index",
    )
    INVALID_ARGUMENT = "INVALID_ARGUMENT", "invalid argument"
    INVALID_AXES = "INVALID_AXES", "invalid axes", "axes"
    INVALID_AXIS = "INVALID_AXIS", "invalid axis"
    INVALID_BACKEND = "INVALID_BACKEND", "unknown backend"
    INVALID_BUDGET = "INVALID_BUDGET", "invalid memory budget"
    INVALID_CUTOFF = "INVALID_CUTOFF", "invalid cutoff"
    INVALID_DATA = "INVALID_DATA", "the data cannot be read as numbers"
    INVALID_DEVICE = "INVALID_DEVICE", "unknown device"
    INVALID_DOMAIN = "INVALID_DOMAIN", "invalid allocation domain"
    INVALID_EQUATION = "INVALID_EQUATION", "invalid equation"
    INVALID_HANDLE = "INVALID_HANDLE", "the share handle does not match the segment", "name"
    INVALID_INDEX = "INVALID_INDEX", "invalid index", "index"
    INVALID_LIMIT = "INVALID_LIMIT", "invalid buffer pool limit {limit!r}"
    INVALID_MODE = "INVALID_MODE", "unknown mode"
    INVALID_OPERAND = "INVALID_OPERAND", "invalid operand", "operand_type"
    INVALID_OPTIMIZE = "INVALID_OPTIMIZE", "invalid optimize=", "optimize"
    INVALID_ORD = "INVALID_ORD", "invalid ord"
    INVALID_OUT = "INVALID_OUT", "invalid out="
    INVALID_PATH = "INVALID_PATH", "invalid contraction path"
    INVALID_PLACEMENT = "INVALID_PLACEMENT", "invalid placement", "memory_kind"
    INVALID_RANK = "INVALID_RANK", "the operand has the wrong rank", "shape"
    INVALID_SHAPE = "INVALID_SHAPE", "invalid shape", "shape"
    INVALID_SLOT = "INVALID_SLOT", "invalid descriptor slot"
    INVALID_THREADS = "INVALID_THREADS", "invalid thread count", "threads", "limit"
    INVALID_TREE = "INVALID_TREE", "the contraction tree does not fit the equation"
    INVALID_UPLO = "INVALID_UPLO", "invalid uplo"
    INVALID_VALUE = "INVALID_VALUE", "invalid value", "value"
    LENGTH_MISMATCH = "LENGTH_MISMATCH", "the lengths do not match"
    LOSSY_CONVERSION = (
        "LOSSY_CONVERSION",
        "element {index} = {value!r} cannot be represented as {dtype.name} without changing "
        "its value",
    )
    NEGATIVE_INTEGER_POWER = "NEGATIVE_INTEGER_POWER", "negative integer power of an integer"
    NOT_1D = "NOT_1D", "data must be 1-D, got shape {data_shape}"
    NOT_A_TENSOR = "NOT_A_TENSOR", "an operand is not a tenferro array", "index"
    NOT_CONTIGUOUS = "NOT_CONTIGUOUS", "the data is not contiguous"
    NOT_DIFFERENTIABLE = "NOT_DIFFERENTIABLE", "no derivative"
    NOT_F_CONTIGUOUS = "NOT_F_CONTIGUOUS", "the array is not column-major"
    NOT_GROUP_BACKED = "NOT_GROUP_BACKED", "the tensor is not group-backed"
    NOT_SQUARE = "NOT_SQUARE", "shape {shape} is not square"
    NO_OPERAND = "NO_OPERAND", "the expression uses no operand"
    OPERAND_COUNT = "OPERAND_COUNT", "wrong number of operands", "expected", "actual"
    OUT_MISMATCH = (
        "OUT_MISMATCH",
        "out has shape {actual_shape} and dtype {actual_dtype.name}, but the result has "
        "shape {expected_shape} and dtype {expected_dtype.name}",
    )
    RANK_MISMATCH = "RANK_MISMATCH", "the ranks do not match", "shapes"
    READ_ONLY = "READ_ONLY", "the array is read-only"
    ROLE_CONFLICT = "ROLE_CONFLICT", "axes {axes} are both contracting and batch"
    SCALAR_OUT_OF_RANGE = (
        "SCALAR_OUT_OF_RANGE",
        "a scalar is out of range",
        "scalar",
        "dtype",  # None: beyond every dtype (a folded constant)
    )
    SHAPE_MISMATCH = "SHAPE_MISMATCH", "the shapes do not match", "shapes"
    SHAPE_OVERFLOW = "SHAPE_OVERFLOW", "shape {shape} overflows"
    SUBSCRIPTS = "SUBSCRIPTS", "invalid einsum subscripts", "subscripts"
    SYNTAX = "SYNTAX", "the expression does not parse", "expression"
    TENSOR_MEMORY = "TENSOR_MEMORY", "the array's memory cannot be adopted"
    TOO_DEEP = "TOO_DEEP", "the expression is nested too deeply"
    TOO_MANY_INDICES = "TOO_MANY_INDICES", "too many indices"
    UNKNOWN_NAME = "UNKNOWN_NAME", "{name!r} is not an operand"
    UNSUPPORTED_EXPRESSION = "UNSUPPORTED_EXPRESSION", "cannot fuse this expression", "part"
    UNSUPPORTED_STORAGE = "UNSUPPORTED_STORAGE", "entry {index} has unsupported storage"
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION", "unsupported API version"
    UNUSED_OPERAND = "UNUSED_OPERAND", "unused operand(s)", "names"


class DTypeKind(Kind):
    """The kinds of `DTypeError`."""

    DTYPE_MISMATCH = "DTYPE_MISMATCH", "the dtypes do not match"
    INVALID_TYPE = "INVALID_TYPE", "an argument has the wrong type"
    SCALAR_DTYPE = "SCALAR_DTYPE", "the scalar does not fit the dtype", "dtype", "scalar"
    UNSUPPORTED_DTYPE = "UNSUPPORTED_DTYPE", "unsupported dtype", "dtype"


class RuntimeStateKind(Kind):
    """The kinds of `RuntimeStateError`."""

    BACKEND_BUFFER = "BACKEND_BUFFER", "CPU backend received backend buffer", "placement"
    CLIENT_CLOSED = "CLIENT_CLOSED", "the Dask client is closed"
    FORKED_DOMAIN = "FORKED_DOMAIN", "the domain belongs to process {owner_pid}"
    GROUP_BACKED = "GROUP_BACKED", "the tensor is group-backed"
    NOT_HOST = "NOT_HOST", "CPU backend requires source host placement, got {memory_kind.name}"
    NOT_PICKLABLE = "NOT_PICKLABLE", "this object cannot be pickled"
    NOT_SHARED_MEMORY = "NOT_SHARED_MEMORY", "the tensor is not in shared memory"
    NO_WORKERS = "NO_WORKERS", "no workers"
    PROVIDER = "PROVIDER", "the memory provider failed", "nbytes"
    RUNTIME_STATE = "RUNTIME_STATE", "the operation cannot run in this state"
    SCHEDULER_LOST = "SCHEDULER_LOST", "the Dask scheduler was lost"
    SERVICE_NOT_REGISTERED = "SERVICE_NOT_REGISTERED", "no {service} service is registered"
    TIMEOUT = "TIMEOUT", "timed out"
    UNSUPPORTED_PLATFORM = "UNSUPPORTED_PLATFORM", "unsupported platform"
    WORKERS_LOST = "WORKERS_LOST", "the Dask workers were lost"


class HostAccessKind(Kind):
    """The kinds of `HostAccessError`."""

    FOREIGN_DOMAIN = "FOREIGN_DOMAIN", "the memory belongs to another process", "allocation"
    PROVIDER = "PROVIDER", "shared-memory segment {name} is unusable"
    SEGMENT_GONE = (
        "SEGMENT_GONE",
        (
            "shared-memory segment {name} no longer exists: its owner (process {owner_pid}) "
            "dropped the tensor (or exited) before this attach"
        ),
    )
    SEGMENT_SHRUNK = (
        "SEGMENT_SHRUNK",
        "shared-memory segment {name} now has {actual} bytes but is mapped with {expected}",
    )
    UNSUPPORTED = (
        "UNSUPPORTED",
        "backend storage cannot be borrowed as host data",
        "allocation",
        "backend",
        "placement",
    )
    UNTRUSTED_SEGMENT = (
        "UNTRUSTED_SEGMENT",
        "shared-memory file {name} is not a segment a SharedMemoryDomain of this user made",
    )


class GroupKind(Kind):
    """The kinds of `GroupError`."""

    ALIASED_ALLOCATION = "ALIASED_ALLOCATION", "a buffer would enter the group twice", "entries"
    ALREADY_MAPPED = "ALREADY_MAPPED", "the owner is already mapped"
    DESCRIPTOR_SLOT_OUT_OF_BOUNDS = (
        "DESCRIPTOR_SLOT_OUT_OF_BOUNDS",
        "descriptor slot {slot} is out of bounds (the group has {descriptor_count} slot(s))",
    )
    DESCRIPTOR_SLOT_VACANT = "DESCRIPTOR_SLOT_VACANT", "descriptor slot {slot} is vacant"
    GROUP = "GROUP", "allocation group misuse"
    GROUP_MOVED = "GROUP_MOVED", "this group was moved by {moved_by}"
    INVALID_LAYOUT = (
        "INVALID_LAYOUT",
        "the buffer does not hold whole elements",
        "dtype",
        "owner_dtype",
    )
    SAME_GROUP = "SAME_GROUP", "the same group twice"
    SHARED_OWNER = "SHARED_OWNER", "descriptor slot {slot} shares its owner with slot(s) {sharing}"


class AccessKind(Kind):
    """The kinds of `AccessError`."""

    DTYPE_MISMATCH = "DTYPE_MISMATCH", "the dtypes differ", "expected", "actual"
    INVALID_LAYOUT = "INVALID_LAYOUT", "invalid span layout"
    LENGTH_MISMATCH = "LENGTH_MISMATCH", "the byte lengths differ", "expected", "actual"
    PROVIDER = "PROVIDER", "the provider's mapping is unusable", "backend"
    UNSUPPORTED = "UNSUPPORTED", "this access is not supported", "backend"


class RootImportKind(Kind):
    """The kinds of `RootImportError`."""

    MISSING_ALLOCATION_IDENTITY = "MISSING_ALLOCATION_IDENTITY", "no allocation identity"


class DeviceAccessKind(Kind):
    """The kinds of `DeviceAccessError`."""

    INVALID_REQUEST = "INVALID_REQUEST", "the prepared request does not fit the root"
    PROVIDER = "PROVIDER", "the provider failed", "backend"
    UNSUPPORTED = "UNSUPPORTED", "the {backend} provider has no device access path"


class BorrowKind(Kind):
    """The kinds of `BorrowError`."""

    ADOPTED_STILL_REFERENCED = "ADOPTED_STILL_REFERENCED", "the adopted array is still referenced"
    ALIASED = "ALIASED", "the buffer is aliased", "aliases"
    BORROW_ENDED = "BORROW_ENDED", "the borrow has ended"
    BROADCAST_VIEW = "BROADCAST_VIEW", "the view repeats elements"
    EXCLUSIVELY_BORROWED = "EXCLUSIVELY_BORROWED", "a writer holds the buffer", "holder"
    IN_USE = "IN_USE", "the buffer is in use", "readers"
    OUT_ALIASES_INPUT = "OUT_ALIASES_INPUT", "the output aliases an input"
    READ_ONLY = "READ_ONLY", "read-only memory"
    RELEASED = "RELEASED", "the guard was released"
    UNSUPPORTED = "UNSUPPORTED", "this borrow is not supported"


class NotCopyableKind(Kind):
    """The kinds of `NotCopyableError`."""

    NOT_COPYABLE = "NOT_COPYABLE", "not copyable"


class MovedTensorKind(Kind):
    """The kinds of `MovedTensorError`."""

    MOVED = "MOVED", "the tensor was moved"


class ReinterpretKind(Kind):
    """The kinds of `ReinterpretError`."""

    GROUP_BACKED = (
        "GROUP_BACKED",
        "the tensor is group-backed rather than plain host storage",
        "allocation",
    )
    NOT_HOST_OWNER = "NOT_HOST_OWNER", "the tensor has no host owner", "allocation"
    PARTIAL_OWNER = "PARTIAL_OWNER", "the tensor covers part of its owner"
    REINTERPRET = "REINTERPRET", "the storage cannot be narrowed"
    REINTERPRETED = "REINTERPRETED", "the tensor reinterprets its owner's dtype"


class CopyForbiddenKind(Kind):
    """The kinds of `CopyForbiddenError`."""

    COPY_FORBIDDEN = "COPY_FORBIDDEN", "copy forbidden"


class InteropKind(Kind):
    """The kinds of `InteropError`."""

    COPY_REQUIRED = "COPY_REQUIRED", "a copy is required"
    INTEROP = "INTEROP", "the exchange failed"
    INVALID_ARGUMENT = "INVALID_ARGUMENT", "invalid argument"
    INVALID_STREAM = "INVALID_STREAM", "invalid stream"
    LEGACY_CAPSULE = "LEGACY_CAPSULE", "legacy capsule refused"
    NOT_DLPACK = "NOT_DLPACK", "not a DLPack producer"
    NOT_HOST = "NOT_HOST", "not host memory"
    PRODUCER_REFUSED = "PRODUCER_REFUSED", "the producer refused"
    UNSUPPORTED_DEVICE = "UNSUPPORTED_DEVICE", "unsupported device"


class OutOfMemoryKind(Kind):
    """The kinds of `OutOfMemoryError`."""

    OUT_OF_MEMORY = "OUT_OF_MEMORY", "out of memory"


class PromotionKind(Kind):
    """The kinds of `PromotionError`."""

    INPLACE_MISMATCH = "INPLACE_MISMATCH", "the result does not fit the array updated in place"
    NO_PROMOTION = "NO_PROMOTION", "no type promotion", "dtypes"
    SCALAR_DTYPE = "SCALAR_DTYPE", "the scalar's kind does not match the array's", "dtype"
    UNSUPPORTED_DTYPE = "UNSUPPORTED_DTYPE", "dtype {dtype.value} is not accepted"


class IndexOutOfRangeKind(Kind):
    """The kinds of `IndexOutOfRangeError`."""

    INDEX_OUT_OF_RANGE = "INDEX_OUT_OF_RANGE", "index out of range"
    INVALID_AXES = "INVALID_AXES", "axes out of range"
    INVALID_AXIS = "INVALID_AXIS", "axis out of range"
    INVALID_INDEX = "INVALID_INDEX", "index out of range"


class LinAlgKind(Kind):
    """The kinds of `LinAlgError`."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT", "LAPACK rejected an argument", "batch_index"
    LINALG = "LINALG", "the factorisation failed"
    NOT_CONVERGED = "NOT_CONVERGED", "no convergence", "batch_index", "info"
    NOT_FINITE = "NOT_FINITE", "NaN or infinite entries", "batch_index"
    NOT_POSITIVE_DEFINITE = "NOT_POSITIVE_DEFINITE", "not positive definite"
    SINGULAR = "SINGULAR", "singular matrix", "batch_index"


# ---------------------------------------------------------------------------- the errors
class TenferroError(Exception):
    """Base class of every tenferro error."""

    kinds: ClassVar[type[Kind]] = TenferroKind
    default_kind: ClassVar[str] = TenferroKind.ERROR

    def __init__(
        self, op: str, message: str = "", *, kind: str | None = None, **details: Any
    ) -> None:
        self.op = op
        name = kind or self.default_kind
        try:
            self.kind: str = self.kinds.__members__[name]
        except KeyError:
            self.kind = name  # unlisted: still a string (the source scan flags it)
        self.message = message
        self.details = details
        what = self.kind.what(details) if isinstance(self.kind, Kind) else ""
        if message and not (isinstance(self.kind, Kind) and self.kind.shown):
            what = ""  # a template naming no detail is the default, not a prefix
        text = f"{what}; {message}" if what and message else what or message
        super().__init__(f"{op}: {text}")

    @property
    def what(self) -> str:
        """What went wrong: the kind's template filled in from the details."""
        return self.kind.what(self.details) if isinstance(self.kind, Kind) else ""

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
                dtype=None,
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
