"""`BackendStorage`: a provider buffer before it is imported as a root.

`import_backend_buffer` (`storage.imports`) wraps it into a root; a buffer that
does not report both its allocation domain and its allocation id is refused.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import (
    AccessError,
)
from ..placement import MemoryKind, Placement
from .identity import (
    AllocationDomainId,
    AllocationId,
)
from .provider import (
    DeviceAccessRequest,
    PreparedDeviceAccess,
    ProviderCapabilities,
    unsupported_device,
)

Array = np.ndarray[Any, Any]


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
        unsupported_device(self.backend_family())
