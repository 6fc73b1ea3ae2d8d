"""Allocation roots: the single owner of one root resource, and the provider protocols.

An `OwnedStorage` is what an allocation group's ``allocations`` table holds: a
root (a `HostAllocation` over a `HostBuffer`, or a provider's
`BackendAllocation`) plus the one claim on its byte range. Neither part can be
copied or pickled: there is exactly one owner per root (the "one-owner rule").

Providers plug in at two levels:

* `BackendStorage`: a provider *buffer* (its identity, family, length and
  optional host mappings). `import_backend_buffer` wraps it into a root; a
  buffer that does not report both its allocation domain and its allocation
  id is refused (`RootImportError` kind MISSING_ALLOCATION_IDENTITY).
* `BackendAllocation`: a provider *root* (extent, provider kind,
  capabilities, span mappings, device preparation). `import_unique_root` takes
  one directly. The mapping hooks default to ``UNSUPPORTED``.

Host buffers are imported with `import_host_vec`, which mints a fresh
`AllocationDomainId` (the global counter) and a local `AllocationId`: no copy.
"""

from __future__ import annotations

import operator
import threading
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, NoReturn, Protocol, TypeVar, runtime_checkable

import numpy as np

from ..dtype import DType, as_dtype, dtype_of_array
from ..errors import (
    AccessError,
    DeviceAccessError,
    GroupError,
    HostAccessError,
    RootImportError,
    TenferroError,
)
from ..placement import HOST_PLACEMENT, MemoryKind, Placement
from .diagnostics import RequestedIdentity, StorageOperation, StorageOperationContext
from .host import HostBuffer
from .identity import (
    AllocationDomainId,
    AllocationId,
    AllocationKey,
    RootResourceIdentity,
    next_host_allocation_id,
)
from .span import ByteRange, RootBoundSpan, RootResourceExtent, validate_span

__all__ = [
    "DEFAULT_BACKEND_PLACEMENT",
    "BackendAllocation",
    "BackendAllocationBase",
    "BackendStorage",
    "BackendStorageAllocation",
    "BackendStorageBase",
    "DeviceAccessRequest",
    "HostAllocation",
    "OwnedSpanClaim",
    "OwnedStorage",
    "PreparedDeviceAccess",
    "ProviderCapabilities",
    "ProviderKind",
    "import_backend_buffer",
    "import_host_vec",
    "import_unique_root",
]

Array = np.ndarray[Any, Any]


# ---------------------------------------------------------------------------- metadata
@dataclass(frozen=True, slots=True)
class ProviderKind:
    """The provider family behind a root (diagnostic metadata): ``cpu``, ``shared-memory``, ..."""

    name: str

    CPU: ClassVar[ProviderKind]
    SHARED_MEMORY: ClassVar[ProviderKind]
    CUDA: ClassVar[ProviderKind]

    def __repr__(self) -> str:
        return f"ProviderKind({self.name!r})"

    def __str__(self) -> str:
        return self.name


CPU = ProviderKind.CPU = ProviderKind("cpu")
ProviderKind.SHARED_MEMORY = ProviderKind("shared-memory")
ProviderKind.CUDA = ProviderKind("cuda")


@dataclass(frozen=True, slots=True)
class ProviderCapabilities:
    """What a provider root allows: direct host addressing, host mapping."""

    host_access: bool = False
    host_mappable: bool = False

    @classmethod
    def none(cls) -> ProviderCapabilities:
        return cls(False, False)

    @classmethod
    def host(cls) -> ProviderCapabilities:
        """Plain host memory: addressable and mappable."""
        return cls(True, True)

    @classmethod
    def mappable(cls) -> ProviderCapabilities:
        """Not plain host memory, but the provider can map it (e.g. shared memory)."""
        return cls(False, True)


@dataclass(frozen=True, slots=True)
class DeviceAccessRequest:
    """A request to prepare device access to (part of) one allocation."""

    allocation_domain: AllocationDomainId
    allocation_id: AllocationId
    byte_len: int
    element_size: int


@runtime_checkable
class PreparedDeviceAccess(Protocol):
    """An opaque, provider-specific handle returned by ``prepare_device_access``."""


def _unsupported_device(backend: str) -> NoReturn:
    raise DeviceAccessError(
        "prepare_device_access",
        f"the {backend} provider has no device access path",
        kind="UNSUPPORTED",
        backend=backend,
    )


# ---------------------------------------------------------------------------- protocols
@runtime_checkable
class BackendAllocation(Protocol):
    """A provider root: one allocation the provider owns and frees.

    Implementations own exactly one allocation, report stable, truthful metadata,
    and return mappings that stay valid for as long as the returned arrays live.
    ``map_read`` returns a read-only 1-D array of ``dtype`` elements covering
    exactly the span; ``map_write`` a writable one. Both raise `AccessError`
    (INVALID_LAYOUT, DTYPE_MISMATCH, UNSUPPORTED when the provider cannot map,
    PROVIDER when mapping failed). Subclass `BackendAllocationBase` for the
    defaults.
    """

    def root_extent(self) -> RootResourceExtent: ...

    def provider_kind(self) -> ProviderKind: ...

    def capabilities(self) -> ProviderCapabilities: ...

    def map_read(self, span: RootBoundSpan, dtype: DType) -> Array: ...

    def map_write(self, span: RootBoundSpan, dtype: DType) -> Array: ...

    def prepare_device_access(self, request: DeviceAccessRequest) -> PreparedDeviceAccess: ...


class BackendAllocationBase:
    """Defaults for `BackendAllocation`: no capabilities, every mapping UNSUPPORTED."""

    __slots__ = ()

    def root_extent(self) -> RootResourceExtent:
        raise NotImplementedError

    def provider_kind(self) -> ProviderKind:
        return ProviderKind("unimplemented")

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities.none()

    def map_read(self, span: RootBoundSpan, dtype: DType) -> Array:
        raise AccessError(
            "BackendAllocation.map_read",
            f"the {self.provider_kind()} provider cannot map memory for reading",
            kind="UNSUPPORTED",
            backend=str(self.provider_kind()),
        )

    def map_write(self, span: RootBoundSpan, dtype: DType) -> Array:
        raise AccessError(
            "BackendAllocation.map_write",
            f"the {self.provider_kind()} provider cannot map memory for writing",
            kind="UNSUPPORTED",
            backend=str(self.provider_kind()),
        )

    def prepare_device_access(self, request: DeviceAccessRequest) -> PreparedDeviceAccess:
        _unsupported_device(str(self.provider_kind()))


#: The placement of a provider buffer that has no ``placement()`` method.
DEFAULT_BACKEND_PLACEMENT = Placement(MemoryKind.DEVICE)


@runtime_checkable
class BackendStorage(Protocol):
    """A provider buffer of ``len()`` elements, before it is imported as a root.

    ``allocation_domain()`` and ``allocation_id()`` may return None, but such a
    buffer cannot be imported. ``map_read()`` / ``map_write()`` return the whole
    buffer as a 1-D array (read-only / writable) or raise `AccessError` kind
    UNSUPPORTED. Subclass `BackendStorageBase` for the defaults.

    Optional methods, looked up when present: ``placement()`` (default
    `DEFAULT_BACKEND_PLACEMENT`, device memory), ``capabilities()`` (default
    none) and ``prepare_device_access(request)`` (default UNSUPPORTED).
    """

    def allocation_domain(self) -> AllocationDomainId | None: ...

    def allocation_id(self) -> AllocationId | None: ...

    def backend_family(self) -> str: ...

    def len(self) -> int: ...

    def map_read(self) -> Array: ...

    def map_write(self) -> Array: ...


class BackendStorageBase:
    """Defaults for `BackendStorage`: no identity, device placement, no mappings."""

    __slots__ = ()

    def allocation_domain(self) -> AllocationDomainId | None:
        return None

    def allocation_id(self) -> AllocationId | None:
        return None

    def backend_family(self) -> str:
        return "unimplemented"

    def len(self) -> int:
        raise NotImplementedError

    def placement(self) -> Placement:
        return DEFAULT_BACKEND_PLACEMENT

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities.none()

    def map_read(self) -> Array:
        raise AccessError(
            "BackendStorage.map_read",
            f"the {self.backend_family()} backend cannot map its buffer for reading",
            kind="UNSUPPORTED",
            backend=self.backend_family(),
        )

    def map_write(self) -> Array:
        raise AccessError(
            "BackendStorage.map_write",
            f"the {self.backend_family()} backend cannot map its buffer for writing",
            kind="UNSUPPORTED",
            backend=self.backend_family(),
        )

    def prepare_device_access(self, request: DeviceAccessRequest) -> PreparedDeviceAccess:
        _unsupported_device(self.backend_family())


# ---------------------------------------------------------------------------- roots
def _span_view(arr: Array, span: RootBoundSpan, dtype: DType) -> Array:
    """The span's bytes of a 1-D mapping ``arr`` (element 0 at the extent start), as ``dtype``."""
    raw = arr.view(np.uint8)
    piece = raw[span.relative_offset : span.relative_offset + span.byte_len]
    return piece.view(dtype.numpy)


_Buffer = TypeVar("_Buffer")


class _BufferRoot(BackendAllocationBase, Generic[_Buffer]):
    """A root over one buffer of ``dtype`` elements that covers ``extent``."""

    __slots__ = ("buffer", "dtype", "extent")

    def __init__(self, extent: RootResourceExtent, dtype: DType, buffer: _Buffer) -> None:
        self.extent = extent
        self.dtype = dtype
        self.buffer = buffer

    def root_extent(self) -> RootResourceExtent:
        return self.extent

    def _bind(self, op: str, span: RootBoundSpan, dtype: DType) -> RootBoundSpan:
        """Check that ``span`` lies in this root and may be read as ``dtype``."""
        return validate_span(
            self.extent, span.byte_offset, span.byte_len, dtype, root_dtype=self.dtype, op=op
        )


class HostAllocation(_BufferRoot[HostBuffer]):
    """A host root: one `HostBuffer` holding ``dtype`` elements (one per dtype in Rust).

    The buffer keeps its recycler: an engine output promoted into a group still
    goes back to its pool when the owner is dropped.
    """

    __slots__ = ()

    def provider_kind(self) -> ProviderKind:
        return CPU

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities.host()

    def map_read(self, span: RootBoundSpan, dtype: DType) -> Array:
        """A read-only alias of the span (a counted borrow of the buffer)."""
        op = "HostAllocation.map_read"
        span = self._bind(op, span, dtype)
        self.buffer.check_shared(op)
        root = self.buffer.read_root()
        return _span_view(root, span, dtype)

    def map_write(self, span: RootBoundSpan, dtype: DType) -> Array:
        raise AccessError(
            "HostAllocation.map_write",
            "host roots are written through exclusive borrows (Tensor.map_write, "
            "Tensor.as_view_mut), which check for live aliases first",
            kind="UNSUPPORTED",
            backend="cpu",
        )

    def __repr__(self) -> str:
        return (
            f"HostAllocation({self.dtype.name}, {self.extent.key!r}, {len(self.buffer)} elements)"
        )


class BackendStorageAllocation(_BufferRoot[BackendStorage]):
    """A root over a provider buffer imported by `import_backend_buffer`."""

    __slots__ = ()

    def provider_kind(self) -> ProviderKind:
        family = self.buffer.backend_family()
        return CPU if family == "host" else ProviderKind(family)

    def capabilities(self) -> ProviderCapabilities:
        caps = getattr(self.buffer, "capabilities", None)
        result = caps() if callable(caps) else ProviderCapabilities.none()
        return result if isinstance(result, ProviderCapabilities) else ProviderCapabilities.none()

    def _mapped(self, op: str, span: RootBoundSpan, dtype: DType, write: bool) -> Array:
        span = self._bind(op, span, dtype)
        try:
            arr = self.buffer.map_write() if write else self.buffer.map_read()
        except TenferroError:
            raise
        except Exception as exc:
            raise AccessError(
                op,
                f"the {self.buffer.backend_family()} backend failed to map its buffer: {exc}",
                kind="PROVIDER",
                backend=self.buffer.backend_family(),
            ) from exc
        _check_mapping(op, arr, self.dtype, self.extent.byte_len, write)
        return _span_view(arr, span, dtype)

    def map_read(self, span: RootBoundSpan, dtype: DType) -> Array:
        return self._mapped("BackendStorage.map_read", span, dtype, write=False)

    def map_write(self, span: RootBoundSpan, dtype: DType) -> Array:
        return self._mapped("BackendStorage.map_write", span, dtype, write=True)

    def check_mapped(self, op: str) -> None:
        """Let the provider refuse a read of its (cached) mapping: its optional ``check_mapped``.

        Shared memory re-checks here that no other process shrank the segment under the
        mapping (reading past the end of the file would be SIGBUS).
        """
        check = getattr(self.buffer, "check_mapped", None)
        if check is not None:
            check(op)

    def prepare_device_access(self, request: DeviceAccessRequest) -> PreparedDeviceAccess:
        prepare = getattr(self.buffer, "prepare_device_access", None)
        if prepare is None:
            _unsupported_device(self.buffer.backend_family())
        try:
            result: PreparedDeviceAccess = prepare(request)
        except TenferroError:
            raise
        except Exception as exc:  # as in _mapped: a provider failure is a typed refusal
            family = self.buffer.backend_family()
            raise DeviceAccessError(
                "prepare_device_access",
                f"the {family} provider failed to prepare device access: "
                f"{type(exc).__name__}: {exc}; check the provider (device, driver) and retry",
                kind="PROVIDER",
                backend=family,
            ) from exc
        return result

    def __repr__(self) -> str:
        return f"BackendStorageAllocation({self.buffer.backend_family()}, {self.extent.key!r})"


def _check_mapping(op: str, arr: Any, dtype: DType, byte_len: int, write: bool) -> None:
    """A provider mapping must be a contiguous 1-D array of the root dtype and exact length."""
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 or not arr.flags.c_contiguous:
        raise AccessError(
            op,
            "the provider returned a mapping that is not a contiguous 1-D numpy array",
            kind="INVALID_LAYOUT",
        )
    if arr.dtype != dtype.numpy:
        raise AccessError(
            op,
            f"the provider mapped {arr.dtype} elements for a {dtype.name} root",
            kind="DTYPE_MISMATCH",
            expected=dtype,
            actual=arr.dtype,
        )
    if arr.nbytes != byte_len:
        raise AccessError(
            op,
            f"the provider mapped {arr.nbytes} bytes for a root of {byte_len} bytes",
            kind="LENGTH_MISMATCH",
            expected=byte_len,
            actual=arr.nbytes,
        )
    if write and not arr.flags.writeable:
        raise AccessError(
            op, "the provider returned a read-only mapping for a write", kind="PROVIDER"
        )


# ---------------------------------------------------------------------------- the owner
def _not_copyable(what: str) -> NoReturn:
    raise GroupError(
        f"{what}.__reduce__",
        f"{what} is the single owner of its memory and cannot be copied or pickled; "
        "duplicate() the tensor (a named copy) or share it with share_handle()",
        kind="NOT_COPYABLE",
    )


class OwnedSpanClaim:
    """The one claim on a root's byte span (not copyable)."""

    __slots__ = ("identity", "span")

    def __init__(self, identity: RootResourceIdentity, span: RootBoundSpan) -> None:
        self.identity = identity
        self.span = span

    def __reduce__(self) -> NoReturn:
        _not_copyable("OwnedSpanClaim")

    def __copy__(self) -> NoReturn:
        _not_copyable("OwnedSpanClaim")

    def __deepcopy__(self, memo: Any) -> NoReturn:
        _not_copyable("OwnedSpanClaim")


_map_lock = threading.Lock()


class OwnedStorage:
    """The sole owner of one root: its pin (host or provider root) and its claim.

    Not copyable, not picklable. The host view of a mappable provider root is
    made once and cached, so that every borrow of that memory goes through one
    `HostBuffer` and alias counting works as for plain host memory. A read-only
    owner (an attached shared-memory tensor, see `read_through`) refuses writes.
    """

    __slots__ = ("__weakref__", "_host", "_placement", "_read_only", "claim", "dtype", "pin")

    def __init__(
        self,
        pin: BackendAllocation,
        claim: OwnedSpanClaim,
        dtype: DType,
        placement: Placement,
        host: HostBuffer | None = None,
    ) -> None:
        self.pin = pin
        self.claim = claim
        self.dtype = dtype
        self._placement = placement
        self._host = host
        self._read_only = False

    # -- identity ---------------------------------------------------------------------
    @property
    def identity(self) -> RootResourceIdentity:
        return self.claim.identity

    @property
    def key(self) -> AllocationKey:
        return self.claim.identity.key

    @property
    def extent(self) -> RootResourceExtent:
        return self.claim.identity.extent

    @property
    def root_span(self) -> RootBoundSpan:
        return self.claim.span

    @property
    def placement(self) -> Placement:
        return self._placement

    def provider_kind(self) -> ProviderKind:
        return self.pin.provider_kind()

    @property
    def is_host(self) -> bool:
        """True for a host root (plain host memory imported into a group)."""
        return isinstance(self.pin, HostAllocation)

    @property
    def host_addressable(self) -> bool:
        return self.pin.capabilities().host_access

    @property
    def mapped(self) -> HostBuffer | None:
        """The host buffer over this root if one exists already (no mapping is made)."""
        return self._host

    @property
    def read_only(self) -> bool:
        """True when this owner may only read its memory (`read_through`)."""
        return self._read_only

    def read_through(self, host: HostBuffer | None = None) -> None:
        """Make this owner read-only, reading through ``host`` when one is given.

        ``host`` is the `HostBuffer` of another owner of the same memory in this
        process (a shared-memory tensor attached where it was allocated): reading
        through it means both count one set of aliases, so neither can write while
        the other reads. Call before the owner is wrapped in a tensor.
        """
        if host is not None:
            if self._host is not None:
                raise GroupError(
                    "OwnedStorage.read_through",
                    "this owner already has a host view of its own",
                    kind="ALREADY_MAPPED",
                )
            if host.dtype != self.dtype.numpy or host.flat.nbytes < self.extent.byte_len:
                raise GroupError(
                    "OwnedStorage.read_through",
                    f"the shared host buffer ({len(host)} x {host.dtype}) does not cover this "
                    f"owner's {self.extent.byte_len} bytes of {self.dtype.name}",
                    kind="INVALID_LAYOUT",
                )
            self._host = host
        self._read_only = True

    # -- access ----------------------------------------------------------------------
    def host_view(self, op: str) -> HostBuffer:
        """The `HostBuffer` over this root's memory, mapping a provider root once.

        Raises `HostAccessError` kind UNSUPPORTED when the provider cannot map it.
        """
        pin = self.pin
        if isinstance(pin, BackendStorageAllocation):
            # Every mapped access of provider memory asks the provider first, not only
            # the first one that makes the (cached) mapping.
            pin.check_mapped(op)
        host = self._host
        if host is not None:
            return host
        with _map_lock:
            if self._host is None:
                self._host = self._map(op)
            return self._host

    def _map(self, op: str) -> HostBuffer:
        span = self.claim.span
        pin = self.pin
        try:
            arr = pin.map_write(span, self.dtype)
        except AccessError as exc:
            if exc.kind != "UNSUPPORTED":
                raise
            try:
                arr = pin.map_read(span, self.dtype)
            except AccessError as exc2:
                if exc2.kind != "UNSUPPORTED":
                    raise
                raise HostAccessError(
                    op,
                    f"the {pin.provider_kind()} provider cannot map this memory to the host; "
                    "use the provider's own transfer to read it",
                    kind="UNSUPPORTED",
                    backend=str(pin.provider_kind()),
                    placement=self._placement,
                ) from None
        _check_mapping(op, arr, self.dtype, span.byte_len, write=False)
        return HostBuffer(arr, arr)

    def check_exclusive(self, op: str) -> None:
        """Refuse a move while any alias of this root's host memory is alive."""
        host = self._host
        if host is not None:
            host.check_exclusive(op)

    def prepare_device_access(self, request: DeviceAccessRequest) -> PreparedDeviceAccess:
        """Validate ``request`` against this root's identity, then ask the provider."""
        op = "prepare_device_access"
        key = self.key
        if request.allocation_domain != key.domain or request.allocation_id != key.local:
            raise DeviceAccessError(
                op,
                "prepared request does not match the root allocation identity "
                f"(requested {request.allocation_domain!r}/{request.allocation_id!r}, "
                f"root {key!r})",
                kind="INVALID_REQUEST",
            )
        if request.byte_len > self.extent.byte_len:
            raise DeviceAccessError(
                op,
                f"prepared request of {request.byte_len} bytes exceeds the root allocation "
                f"extent of {self.extent.byte_len} bytes",
                kind="INVALID_REQUEST",
            )
        if request.element_size <= 0:
            raise DeviceAccessError(
                op, "prepared request has a zero element size", kind="INVALID_REQUEST"
            )
        return self.pin.prepare_device_access(request)

    def host_allocation(self) -> HostAllocation | None:
        pin = self.pin
        return pin if isinstance(pin, HostAllocation) else None

    def backend_buffer(self) -> BackendStorage | None:
        pin = self.pin
        return pin.buffer if isinstance(pin, BackendStorageAllocation) else None

    # -- one owner -------------------------------------------------------------------
    def __reduce__(self) -> NoReturn:
        _not_copyable("OwnedStorage")

    def __copy__(self) -> NoReturn:
        _not_copyable("OwnedStorage")

    def __deepcopy__(self, memo: Any) -> NoReturn:
        _not_copyable("OwnedStorage")

    def __repr__(self) -> str:
        return (
            f"OwnedStorage({self.key!r}, {self.dtype.name}, {self.extent.byte_len} bytes, "
            f"{self.pin.provider_kind()})"
        )


# ---------------------------------------------------------------------------- imports
def _import_error(
    op: StorageOperation, requested: RequestedIdentity, message: str, **details: Any
) -> RootImportError:
    ctx = StorageOperationContext(op, requested)
    return RootImportError(
        op.value, f"{message} ({ctx})", context=ctx, requested=requested, **details
    )


def _import_extent(
    op: StorageOperation, key: AllocationKey, byte_len: int, dtype: DType, requested: ByteRange
) -> RootResourceExtent:
    """The extent of a new root of ``byte_len`` bytes; an invalid one is an IDENTITY error."""
    try:
        return RootResourceExtent(key, 0, byte_len, dtype.numpy.alignment)
    except AccessError as exc:
        raise _import_error(
            op,
            RequestedIdentity(requested, key),
            f"root-resource identity validation failed: {exc.message}",
            kind="IDENTITY",
        ) from None


def _sole_owner(
    pin: BackendAllocation,
    extent: RootResourceExtent,
    dtype: DType,
    placement: Placement,
    host: HostBuffer | None = None,
) -> OwnedStorage:
    """The owner of ``pin``, holding the one claim on its whole extent."""
    identity = RootResourceIdentity(extent)
    claim = OwnedSpanClaim(identity, identity.root_span())
    return OwnedStorage(pin, claim, dtype, placement, host)


def import_host_vec(buffer: HostBuffer, dtype: DType | None = None) -> OwnedStorage:
    """Import a host buffer as a root: a fresh domain id and local id, no copy.

    Ownership: **moves** ``buffer`` into the owner (its recycler comes along).
    """
    op = StorageOperation.IMPORT_HOST_VEC
    root_dtype = dtype_of_array(buffer.flat, op.value) if dtype is None else dtype
    byte_len = len(buffer) * root_dtype.itemsize
    key = AllocationKey(AllocationDomainId.fresh(), next_host_allocation_id())
    extent = _import_extent(op, key, byte_len, root_dtype, ByteRange(0, 0))
    pin = HostAllocation(extent, root_dtype, buffer)
    return _sole_owner(pin, extent, root_dtype, HOST_PLACEMENT, host=buffer)


def import_unique_root(
    allocation: BackendAllocation, dtype: Any, placement: Placement
) -> OwnedStorage:
    """Import one provider root and create its single claim."""
    op = StorageOperation.IMPORT_UNIQUE_ROOT
    if not isinstance(allocation, BackendAllocation):
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            f"expected a BackendAllocation, got {type(allocation).__name__}",
            kind="INVALID_ROOT",
        )
    dt = as_dtype(dtype, op.value)
    extent = allocation.root_extent()
    if not isinstance(extent, RootResourceExtent):
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            "root_extent() must return a RootResourceExtent",
            kind="IDENTITY",
        )
    return _sole_owner(allocation, extent, dt, placement)


def import_backend_buffer(buffer: BackendStorage, dtype: Any) -> OwnedStorage:
    """Import one provider buffer as the sole root owner of a tensor.

    The buffer must report its allocation domain and allocation id; a missing one
    is a `RootImportError` of kind MISSING_ALLOCATION_IDENTITY naming the backend
    and the field. ``placement()`` is optional: without it the root is device
    memory (`DEFAULT_BACKEND_PLACEMENT`); a value that is not a `Placement` is a
    `RootImportError` of kind INVALID_PLACEMENT. Ownership: **moves** ``buffer``
    into the owner.
    """
    op = StorageOperation.IMPORT_BACKEND_BUFFER
    dt = as_dtype(dtype, op.value)
    if isinstance(buffer, (HostBuffer, np.ndarray)):
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            "backend `host` did not provide backend buffer allocation identity; host "
            "buffers are imported with import_host_vec",
            kind="MISSING_ALLOCATION_IDENTITY",
            backend="host",
            field="backend buffer",
        )
    family = buffer.backend_family()
    reported = buffer.len()
    try:
        # operator.index, not int(): a numpy integer would wrap in the product.
        n = operator.index(reported)
        raw = RequestedIdentity(ByteRange(0, n * dt.itemsize))
    except (AccessError, TypeError) as exc:
        # The provider's length is its claim about the import, so a length that is
        # no byte count (negative, not an int, past the address space) is an
        # import refusal, not a span access error.
        why = exc.message if isinstance(exc, AccessError) else str(exc)
        raise _import_error(
            op,
            RequestedIdentity(ByteRange(0, 0)),
            f"backend `{family}` reported len() = {reported!r} elements of {dt.name}, which is "
            f"not a valid byte length ({why}); fix the provider's len()",
            kind="IDENTITY",
            backend=family,
        ) from None
    domain = buffer.allocation_domain()
    if domain is None:
        raise _import_error(
            op,
            raw,
            f"backend `{family}` did not provide allocation domain allocation identity",
            kind="MISSING_ALLOCATION_IDENTITY",
            backend=family,
            field="allocation domain",
        )
    local = buffer.allocation_id()
    if local is None:
        raise _import_error(
            op,
            raw,
            f"backend `{family}` did not provide allocation id allocation identity",
            kind="MISSING_ALLOCATION_IDENTITY",
            backend=family,
            field="allocation id",
        )
    placement = _backend_placement(op, buffer, raw, family)
    extent = _import_extent(op, AllocationKey(domain, local), n * dt.itemsize, dt, raw.range)
    allocation = BackendStorageAllocation(extent, dt, buffer)
    return _sole_owner(allocation, extent, dt, placement)


def _backend_placement(
    op: StorageOperation, buffer: BackendStorage, requested: RequestedIdentity, family: str
) -> Placement:
    """``buffer.placement()`` when the buffer has one (it is optional), else DEVICE."""
    method = getattr(buffer, "placement", None)
    if method is None:
        return DEFAULT_BACKEND_PLACEMENT
    placement = method() if callable(method) else method
    if not isinstance(placement, Placement):
        raise _import_error(
            op,
            requested,
            f"backend `{family}` reported placement {placement!r}, which is not a Placement",
            kind="INVALID_PLACEMENT",
            backend=family,
        )
    return placement
