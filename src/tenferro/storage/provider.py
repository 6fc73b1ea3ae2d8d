"""Provider metadata: which provider holds a root, what it can do, device requests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NoReturn, Protocol, runtime_checkable

from ..errors import (
    DeviceAccessError,
)
from .identity import (
    AllocationDomainId,
    AllocationId,
)


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


def unsupported_device(backend: str) -> NoReturn:
    raise DeviceAccessError(
        "prepare_device_access",
        "use a provider that prepares device access",
        kind="UNSUPPORTED",
        backend=backend,
    )
