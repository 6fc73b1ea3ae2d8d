"""`OwnedStorage`: the single owner of one root resource (the one-owner rule).

What an allocation group's ``allocations`` table holds: a root plus the one
claim on its byte range. Neither part can be copied or pickled.
"""

from __future__ import annotations

import threading

from ..copies import NotCopyable
from ..dtype import DType
from ..errors import (
    AccessError,
    DeviceAccessError,
    GroupError,
    HostAccessError,
)
from ..placement import Placement
from .allocation import BackendAllocation, BackendStorageAllocation, HostAllocation, check_mapping
from .backend import BackendStorage
from .host import HostBuffer
from .identity import (
    AllocationKey,
    RootResourceIdentity,
)
from .provider import DeviceAccessRequest, PreparedDeviceAccess, ProviderKind
from .span import RootBoundSpan, RootResourceExtent


# ---------------------------------------------------------------------------- the owner
class OwnedSpanClaim(NotCopyable):
    """The one claim on a root's byte span (not copyable)."""

    __slots__ = ("identity", "span")

    def __init__(self, identity: RootResourceIdentity, span: RootBoundSpan) -> None:
        self.identity = identity
        self.span = span


_map_lock = threading.Lock()


class OwnedStorage(NotCopyable):
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
                    dtype=host.dtype,
                    owner_dtype=self.dtype,
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
                    allocation=self.key,
                ) from None
        check_mapping(op, arr, self.dtype, span.byte_len, False, str(pin.provider_kind()))
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

    def __repr__(self) -> str:
        return (
            f"OwnedStorage({self.key!r}, {self.dtype.name}, {self.extent.byte_len} bytes, "
            f"{self.pin.provider_kind()})"
        )
