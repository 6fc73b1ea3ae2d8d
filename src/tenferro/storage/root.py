"""Allocation roots, one concern per module; this module gathers their public names.

* `storage.provider`: `ProviderKind`, `ProviderCapabilities`, `DeviceAccessRequest`,
  `PreparedDeviceAccess` (what a provider is and can do);
* `storage.backend`: `BackendStorage` (a provider *buffer*, before import);
* `storage.allocation`: `BackendAllocation` (a provider *root*) and the roots
  tenferro builds (`HostAllocation`, `BackendStorageAllocation`);
* `storage.owned`: `OwnedStorage`, the single owner of one root (the one-owner rule);
* `storage.imports`: `import_host_vec`, `import_unique_root`, `import_backend_buffer`.

Import from here (the stable name) or from the module that defines a name.
"""

from __future__ import annotations

from .allocation import (
    BackendAllocation,
    BackendAllocationBase,
    BackendStorageAllocation,
    HostAllocation,
)
from .backend import DEFAULT_BACKEND_PLACEMENT, BackendStorage, BackendStorageBase
from .imports import import_backend_buffer, import_host_vec, import_unique_root
from .owned import OwnedSpanClaim, OwnedStorage
from .provider import (
    CPU,
    DeviceAccessRequest,
    PreparedDeviceAccess,
    ProviderCapabilities,
    ProviderKind,
)

__all__ = [
    "CPU",
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
