"""Roots: the `BackendAllocation` protocol and the two roots tenferro builds.

A `HostAllocation` wraps a `HostBuffer`; a `BackendStorageAllocation` wraps a
provider buffer (`BackendStorage`). A provider may also implement
`BackendAllocation` itself and import it with `import_unique_root`. The mapping
hooks default to ``UNSUPPORTED``.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

from ..dtype import DType
from ..errors import (
    AccessError,
    DeviceAccessError,
    TenferroError,
)
from .backend import BackendStorage
from .host import HostBuffer
from .provider import (
    CPU,
    DeviceAccessRequest,
    PreparedDeviceAccess,
    ProviderCapabilities,
    ProviderKind,
    unsupported_device,
)
from .span import RootBoundSpan, RootResourceExtent, validate_span

Array = np.ndarray[Any, Any]


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
        unsupported_device(str(self.provider_kind()))


#: The placement of a provider buffer that has no ``placement()`` method.
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
        check_mapping(
            op, arr, self.dtype, self.extent.byte_len, write, self.buffer.backend_family()
        )
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
            unsupported_device(self.buffer.backend_family())
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


def check_mapping(
    op: str, arr: Any, dtype: DType, byte_len: int, write: bool, backend: str
) -> None:
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
            op,
            "the provider returned a read-only mapping for a write",
            kind="PROVIDER",
            backend=backend,
        )
