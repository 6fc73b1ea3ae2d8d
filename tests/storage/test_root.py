"""Roots: the single owner, host imports, provider imports and their diagnostics."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tenferro as tfr
from provider_fakes import FakeBuffer
from tenferro.storage.diagnostics import StorageOperation, StorageOperationContext
from tenferro.storage.host import HostBuffer
from tenferro.storage.identity import AllocationKey
from tenferro.storage.root import (
    BackendAllocationBase,
    BackendStorage,
    BackendStorageBase,
    DeviceAccessRequest,
    OwnedStorage,
    ProviderCapabilities,
    ProviderKind,
    import_backend_buffer,
    import_host_vec,
    import_unique_root,
)
from tenferro.storage.span import RootResourceExtent

D, A = tfr.AllocationDomainId, tfr.AllocationId


def host_owner(n: int = 4) -> OwnedStorage:
    arr = np.arange(float(n))
    return import_host_vec(HostBuffer(arr, arr))


# -- the one owner -------------------------------------------------------------------------
def test_owned_storage_cannot_be_pickled() -> None:
    with pytest.raises(tfr.GroupError) as err:
        pickle.dumps(host_owner())
    assert err.value.kind == "NOT_COPYABLE"


def test_owned_storage_cannot_be_copied() -> None:
    with pytest.raises(tfr.GroupError):
        copy.copy(host_owner())


def test_owned_storage_cannot_be_deep_copied() -> None:
    with pytest.raises(tfr.GroupError):
        copy.deepcopy(host_owner())


def test_owned_storage_claim_covers_the_whole_root() -> None:
    owner = host_owner(4)
    assert (owner.root_span.byte_offset, owner.root_span.byte_len) == (0, 32)


# -- host imports ---------------------------------------------------------------------------
def test_import_host_vec_keeps_the_buffer_without_copying() -> None:
    arr = np.arange(4.0)
    buf = HostBuffer(arr, arr)
    owner = import_host_vec(buf)
    assert owner.host_view("test") is buf


def test_import_host_vec_gives_a_cpu_host_root() -> None:
    owner = host_owner()
    assert (owner.is_host, owner.host_addressable, owner.provider_kind()) == (
        True,
        True,
        ProviderKind.CPU,
    )


def test_host_root_map_read_returns_the_span_as_a_counted_alias() -> None:
    owner = host_owner(4)
    pin = owner.pin
    span = owner.root_span
    arr = pin.map_read(span, tfr.DType.F64)
    assert (arr.tolist(), owner.host_view("t").alias_count() > 0) == ([0.0, 1.0, 2.0, 3.0], True)


def test_host_root_map_write_points_at_exclusive_borrows() -> None:
    owner = host_owner()
    with pytest.raises(tfr.AccessError) as err:
        owner.pin.map_write(owner.root_span, tfr.DType.F64)
    assert err.value.kind == "UNSUPPORTED"


# -- provider imports -----------------------------------------------------------------------
def test_import_backend_buffer_takes_the_providers_identity() -> None:
    owner = import_backend_buffer(FakeBuffer(np.zeros(3)), tfr.DType.F64)
    assert owner.key == AllocationKey(D(900), A(1))


def test_import_backend_buffer_without_a_domain_is_missing_allocation_identity() -> None:
    with pytest.raises(tfr.RootImportError) as err:
        import_backend_buffer(FakeBuffer(np.zeros(3), domain_id=None), tfr.DType.F64)
    assert (err.value.kind, err.value.backend, err.value.field) == (
        "MISSING_ALLOCATION_IDENTITY",
        "fake",
        "allocation domain",
    )


def test_import_backend_buffer_without_an_id_is_missing_allocation_identity() -> None:
    with pytest.raises(tfr.RootImportError) as err:
        import_backend_buffer(FakeBuffer(np.zeros(3), local=None), tfr.DType.F64)
    assert err.value.field == "allocation id"


def test_import_error_carries_the_operation_and_the_requested_identity() -> None:
    with pytest.raises(tfr.RootImportError) as err:
        import_backend_buffer(FakeBuffer(np.zeros(3), local=None), tfr.DType.F64)
    ctx = err.value.context
    assert isinstance(ctx, StorageOperationContext)
    assert (ctx.operation, ctx.requested.range.length) == (
        StorageOperation.IMPORT_BACKEND_BUFFER,
        24,
    )


def test_import_backend_buffer_refuses_a_host_buffer() -> None:
    arr = np.zeros(2)
    with pytest.raises(tfr.RootImportError) as err:
        import_backend_buffer(HostBuffer(arr, arr), tfr.DType.F64)  # type: ignore[arg-type]
    assert (err.value.kind, err.value.backend) == ("MISSING_ALLOCATION_IDENTITY", "host")


def test_provider_root_is_not_host_addressable() -> None:
    owner = import_backend_buffer(FakeBuffer(np.zeros(3)), tfr.DType.F64)
    assert owner.host_addressable is False


def test_provider_mapping_is_made_once_and_cached() -> None:
    owner = import_backend_buffer(FakeBuffer(np.zeros(3)), tfr.DType.F64)
    assert owner.host_view("t") is owner.host_view("t")


def test_unmappable_provider_is_host_access_unsupported() -> None:
    owner = import_backend_buffer(FakeBuffer(np.zeros(3), mappable=False), tfr.DType.F64)
    with pytest.raises(tfr.HostAccessError) as err:
        owner.host_view("Tensor.map_read")
    assert (err.value.op, err.value.kind) == ("Tensor.map_read", "UNSUPPORTED")


def test_provider_mapping_of_the_wrong_length_is_length_mismatch() -> None:
    owner = import_backend_buffer(FakeBuffer(np.zeros(3), mapped=np.zeros(2)), tfr.DType.F64)
    with pytest.raises(tfr.AccessError) as err:
        owner.host_view("t")
    assert err.value.kind == "LENGTH_MISMATCH"


def test_provider_mapping_of_the_wrong_dtype_is_dtype_mismatch() -> None:
    buf = FakeBuffer(np.zeros(3), mapped=np.zeros(3, dtype=np.int64))
    owner = import_backend_buffer(buf, tfr.DType.F64)
    with pytest.raises(tfr.AccessError) as err:
        owner.host_view("t")
    assert err.value.kind == "DTYPE_MISMATCH"


def test_provider_mapping_failure_is_a_provider_error() -> None:
    class Broken(FakeBuffer):
        def map_write(self) -> np.ndarray:
            raise OSError("device lost")

    owner = import_backend_buffer(Broken(np.zeros(3)), tfr.DType.F64)
    with pytest.raises(tfr.AccessError) as err:
        owner.host_view("t")
    assert err.value.kind == "PROVIDER"


def test_backend_storage_defaults_have_no_identity_and_no_mapping() -> None:
    class Bare(BackendStorageBase):
        def len(self) -> int:
            return 1

    bare = Bare()
    with pytest.raises(tfr.AccessError) as err:
        bare.map_read()
    assert (bare.allocation_domain(), bare.allocation_id(), err.value.kind) == (
        None,
        None,
        "UNSUPPORTED",
    )


class Minimal:
    """A duck-typed provider buffer with exactly the protocol's six methods (no base class)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    def allocation_domain(self) -> tfr.AllocationDomainId:
        return D(901)

    def allocation_id(self) -> tfr.AllocationId:
        return A(1)

    def backend_family(self) -> str:
        return "minimal"

    def len(self) -> int:
        return int(self.data.shape[0])

    def map_read(self) -> np.ndarray:
        view = self.data.view()
        view.flags.writeable = False
        return view

    def map_write(self) -> np.ndarray:
        return self.data


def test_a_minimal_duck_typed_buffer_is_backend_storage() -> None:
    assert isinstance(Minimal(np.zeros(2)), BackendStorage)


def test_a_buffer_without_placement_imports_as_device_memory() -> None:
    owner = import_backend_buffer(Minimal(np.zeros(2)), tfr.DType.F64)
    assert owner.placement == tfr.Placement(tfr.MemoryKind.DEVICE)


def test_a_buffer_whose_placement_is_not_a_placement_is_a_root_import_error() -> None:
    class Odd(Minimal):
        def placement(self) -> str:
            return "gpu"

    with pytest.raises(tfr.RootImportError) as err:
        import_backend_buffer(Odd(np.zeros(2)), tfr.DType.F64)
    assert (err.value.op, err.value.kind) == ("import_backend_buffer", "INVALID_PLACEMENT")


# -- BackendAllocation roots ------------------------------------------------------------------
class Root(BackendAllocationBase):
    def __init__(self, key: AllocationKey, nbytes: int) -> None:
        self.extent = RootResourceExtent(key, 0, nbytes, 8)

    def root_extent(self) -> RootResourceExtent:
        return self.extent

    def provider_kind(self) -> ProviderKind:
        return ProviderKind("device-x")


def device_owner(domain: int, local: int) -> OwnedStorage:
    """A 32-byte F64 ``Root`` in DEVICE memory, imported with `import_unique_root`."""
    root = Root(AllocationKey(D(domain), A(local)), 32)
    return import_unique_root(root, tfr.DType.F64, tfr.Placement(tfr.MemoryKind.DEVICE))


def test_backend_allocation_mapping_defaults_to_unsupported() -> None:
    owner = device_owner(901, 1)
    with pytest.raises(tfr.HostAccessError) as err:
        owner.host_view("Tensor.map_read")
    assert err.value.kind == "UNSUPPORTED"


def test_backend_allocation_capabilities_default_to_none() -> None:
    assert Root(AllocationKey(D(1), A(1)), 8).capabilities() == ProviderCapabilities.none()


def test_prepare_device_access_defaults_to_unsupported() -> None:
    owner = device_owner(902, 4)
    with pytest.raises(tfr.DeviceAccessError) as err:
        owner.prepare_device_access(DeviceAccessRequest(D(902), A(4), 32, 8))
    assert err.value.kind == "UNSUPPORTED"


def test_prepare_device_access_refuses_a_request_for_another_allocation() -> None:
    owner = device_owner(903, 4)
    with pytest.raises(tfr.DeviceAccessError) as err:
        owner.prepare_device_access(DeviceAccessRequest(D(903), A(5), 32, 8))
    assert err.value.kind == "INVALID_REQUEST"


def test_prepare_device_access_refuses_a_request_past_the_extent() -> None:
    owner = device_owner(904, 4)
    with pytest.raises(tfr.DeviceAccessError, match="exceeds"):
        owner.prepare_device_access(DeviceAccessRequest(D(904), A(4), 40, 8))


def test_import_unique_root_refuses_something_that_is_not_a_root() -> None:
    with pytest.raises(tfr.RootImportError) as err:
        import_unique_root(object(), tfr.DType.F64, tfr.Placement())  # type: ignore[arg-type]
    assert err.value.kind == "INVALID_ROOT"
