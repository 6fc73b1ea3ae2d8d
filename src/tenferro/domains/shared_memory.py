"""`SharedMemoryDomain`: tensors in POSIX shared memory, readable by other processes.

A `SharedMemoryDomain` allocates each tensor in its own POSIX shared-memory
segment (`multiprocessing.shared_memory`). Its tensors have memory kind
``SHARED_HOST`` and an allocation identity; like all provider memory they are
never read implicitly (``host_data()`` refuses), but they are host-mappable, so
``map_read()``, ``with_host_read``, ``map_write()`` (in the owning process) and
``download()`` work, with the usual alias counting.

``t.share_handle()`` returns a small picklable `ShareHandle`. In another process
``SharedMemoryDomain.attach(handle)`` maps the very same memory, read-only at the
operating-system level, as a tensor with the same allocation identity: no copy
and no pickling of the elements.

Lifetime:

* the owner unlinks the segment's name when its last tensor (or group view) is
  dropped, or at interpreter exit; the memory itself stays mapped for arrays
  still borrowed from it, and for attached readers until they drop theirs;
* readers never unlink and never register the segment with Python's
  ``resource_tracker`` (which, on Python < 3.13, would unlink the owner's
  segment when the *reader* exits, and warn about a "leak"); they map it
  through ``_posixshmem`` directly, so a reader that is killed leaves nothing
  behind;
* the owner's segment *is* registered with the resource tracker (that is what
  ``SharedMemory(create=True)`` does), so even an owner that is killed has its
  segment removed when the tracker shuts down.

The owner's write while a reader reads is not detected across processes:
finish writing (leave ``map_write``) before handing out handles.
"""

from __future__ import annotations

import mmap
import os
import weakref
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory
from typing import Any, NoReturn

import numpy as np

from ..copies import record_copy
from ..dtype import DType, as_dtype, dtype_of_array
from ..errors import AccessError, HostAccessError, RuntimeStateError, ValidationError
from ..layout import normalize_shape, shape_size, strict_index
from ..placement import MemoryKind, Placement
from ..storage.group import GroupTensorRef, tensor_from_owner
from ..storage.host import HostBuffer, shared_refusal
from ..storage.identity import AllocationDomainId, AllocationId, AllocationIdCounter
from ..storage.root import (
    BackendStorageBase,
    OwnedStorage,
    ProviderCapabilities,
    import_backend_buffer,
)
from ..tensor import Tensor

__all__ = [
    "SHARED_HOST_PLACEMENT",
    "ShareHandle",
    "SharedMemoryBuffer",
    "SharedMemoryDomain",
    "share_handle",
]

#: The placement of every shared-memory tensor.
SHARED_HOST_PLACEMENT = Placement(MemoryKind.SHARED_HOST, None, None)

_FAMILY = "shared-memory"

#: Segment name -> the owner (in this process) of the segment's memory, while it
#: lives. An attach in the allocating process reads through that owner's
#: HostBuffer, so the owner's writes and the reader's reads count each other.
_owners: weakref.WeakValueDictionary[str, OwnedStorage] = weakref.WeakValueDictionary()


def _require_posix(op: str) -> None:
    if os.name != "posix":
        raise RuntimeStateError(
            op,
            "SharedMemoryDomain needs POSIX shared memory (Linux, macOS); this platform "
            f"({os.name}) has none",
            kind="UNSUPPORTED_PLATFORM",
        )


def _map_segment(op: str, name: str, size: int, writable: bool) -> mmap.mmap:
    """Map ``size`` bytes of the named segment without touching the resource tracker."""
    import _posixshmem  # CPython's own helper for multiprocessing.shared_memory (POSIX)

    fd = _posixshmem.shm_open("/" + name, os.O_RDWR if writable else os.O_RDONLY, 0o600)
    try:
        actual = os.fstat(fd).st_size
        if actual < size:
            raise AccessError(
                op,
                f"segment {name} has {actual} bytes but the handle describes {size}",
                kind="LENGTH_MISMATCH",
                expected=size,
                actual=actual,
            )
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        return mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=prot)
    finally:
        # The mapping keeps its own descriptor; ours is not needed any more.
        os.close(fd)


def _unlink_segment(shm: shared_memory.SharedMemory, pid: int) -> None:
    """Remove the segment's name (the owner's finalizer)."""
    if os.getpid() != pid:
        return  # a forked child holds a copy of the owner's objects, not the segment
    try:
        shm.unlink()  # shm_unlink + resource_tracker.unregister
    except FileNotFoundError:
        # Someone removed the name already; still drop our tracker registration.
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class ShareHandle:
    """What another process needs to attach a shared-memory tensor (small, picklable).

    Holds the segment name and size, the element type and shape, the allocation
    identity (``domain``, ``allocation``: the owner's key, the same in every
    process) and ``owner_pid``, the process that created the segment and unlinks it
    (also in a handle a reader shares again). It grants read access to anyone who
    can open the segment (same user); it does not keep the segment alive.
    `SharedMemoryDomain.attach` validates every field.
    """

    name: str
    segment_bytes: int
    dtype: DType
    shape: tuple[int, ...]
    domain: int
    allocation: int
    owner_pid: int

    @property
    def nbytes(self) -> int:
        return shape_size(self.shape) * self.dtype.itemsize

    @property
    def allocation_domain(self) -> AllocationDomainId:
        return AllocationDomainId(self.domain)

    @property
    def allocation_id(self) -> AllocationId:
        return AllocationId(self.allocation)


class SharedMemoryBuffer(BackendStorageBase):
    """One shared-memory segment mapped into this process, as a provider buffer.

    The owner's buffer (``writable``) unlinks the segment when it is collected;
    an attached buffer is read-only and never unlinks.
    """

    __slots__ = (
        "__weakref__",
        "_alloc_id",
        "_domain_id",
        "_dtype",
        "_mm",
        "_n",
        "domain",
        "name",
        "owner_pid",
        "segment_bytes",
        "writable",
    )

    def __init__(
        self,
        mm: mmap.mmap,
        name: str,
        segment_bytes: int,
        dtype: DType,
        count: int,
        domain_id: AllocationDomainId,
        alloc_id: AllocationId,
        domain: SharedMemoryDomain | None,
        shm: shared_memory.SharedMemory | None,
        owner_pid: int | None = None,
    ) -> None:
        self._mm = mm
        self.name = name
        self.segment_bytes = segment_bytes
        self._dtype = dtype
        self._n = count
        self._domain_id = domain_id
        self._alloc_id = alloc_id
        #: The domain that allocated this buffer (None when attached from elsewhere).
        self.domain = domain
        self.writable = shm is not None
        #: The process that created the segment (and unlinks it): this one for the
        #: owner's buffer, the handle's ``owner_pid`` for an attached one.
        self.owner_pid = os.getpid() if owner_pid is None else owner_pid
        if shm is not None:
            weakref.finalize(self, _unlink_segment, shm, self.owner_pid)

    def allocation_domain(self) -> AllocationDomainId | None:
        return self._domain_id

    def allocation_id(self) -> AllocationId | None:
        return self._alloc_id

    def backend_family(self) -> str:
        return _FAMILY

    def len(self) -> int:
        return self._n

    def placement(self) -> Placement:
        return SHARED_HOST_PLACEMENT

    def capabilities(self) -> ProviderCapabilities:
        return ProviderCapabilities.mappable()

    def map_read(self) -> np.ndarray[Any, Any]:
        arr = np.frombuffer(self._mm, dtype=self._dtype.numpy, count=self._n)
        arr.flags.writeable = False
        return arr

    def map_write(self) -> np.ndarray[Any, Any]:
        if not self.writable:
            raise AccessError(
                "SharedMemoryBuffer.map_write",
                f"segment {self.name} is attached read-only from another process",
                kind="UNSUPPORTED",
                backend=_FAMILY,
            )
        return np.frombuffer(self._mm, dtype=self._dtype.numpy, count=self._n)

    def __reduce__(self) -> NoReturn:
        raise RuntimeStateError(
            "SharedMemoryBuffer.__reduce__",
            "a mapped segment cannot be pickled; send Tensor.share_handle() instead",
            kind="NOT_PICKLABLE",
        )

    def __repr__(self) -> str:
        role = "owner" if self.writable else "attached"
        return f"SharedMemoryBuffer({self.name}, {self._n} x {self._dtype.name}, {role})"


class SharedMemoryDomain:
    """A `SharedTensorAllocationDomain` in POSIX shared memory (memory kind SHARED_HOST).

    ``allocate(dtype, shape)`` makes a tensor in a new segment (zero-filled by the
    operating system; treat it as uninitialised). Every allocation shares this
    domain's ``id()`` and gets a fresh allocation id. ``copy_from(t)`` copies a host
    tensor in (a named copy); ``CpuEngine(allocation_domain=...)`` keeps the result
    of ``to_contiguous`` on a domain tensor in the domain.

    A domain belongs to the process that made it: a copy inherited by fork refuses
    to allocate (`RuntimeStateError` kind FORKED_DOMAIN), since its copied counter
    would repeat the parent's allocation ids.
    """

    __slots__ = ("__weakref__", "_id", "_ids", "_pid")

    memory_kind = MemoryKind.SHARED_HOST

    def __init__(self) -> None:
        self._id = AllocationDomainId.fresh()
        self._ids = AllocationIdCounter()
        self._pid = os.getpid()

    def id(self) -> AllocationDomainId:
        """The identity shared by every allocation of this domain."""
        return self._id

    @property
    def placement(self) -> Placement:
        return SHARED_HOST_PLACEMENT

    def allocate(self, dtype: Any, shape: Any) -> Tensor:
        """A new tensor in its own shared-memory segment. Ownership: the tensor owns it."""
        op = "SharedMemoryDomain.allocate"
        dt = as_dtype(dtype, op)
        sh = normalize_shape(shape, op, dt.itemsize)
        _require_posix(op)
        self._check_own_process(op)
        n = shape_size(sh)
        nbytes = n * dt.itemsize
        try:
            # SharedMemory refuses size 0; an empty tensor still gets a (1-byte) segment.
            shm = shared_memory.SharedMemory(create=True, size=max(nbytes, 1))
        except OSError as exc:
            raise RuntimeStateError(
                op,
                f"could not create a shared-memory segment of {nbytes} bytes: {exc}",
                kind="PROVIDER",
                nbytes=nbytes,
            ) from exc
        try:
            mm = _map_segment(op, shm.name, shm.size, writable=True)
        except BaseException:
            shm.close()
            shm.unlink()
            raise
        # Our own mapping replaces SharedMemory's: closing it now means no exported
        # buffer can ever make SharedMemory.close() fail later.
        shm.close()
        buf = SharedMemoryBuffer(
            mm, shm.name, shm.size, dt, n, self._id, self._ids.next(), self, shm
        )
        owner = import_backend_buffer(buf, dt)
        _owners[shm.name] = owner
        return tensor_from_owner(owner, dt, sh, op)

    def copy_from(self, source: Any) -> Tensor:
        """A new tensor in this domain with the elements of ``source`` (a Tensor or array).

        Ownership: **copies** (a named copy, counted); ``source`` is untouched.
        """
        op = "SharedMemoryDomain.copy_from"
        if isinstance(source, Tensor):
            src = source._read_flat(op, mapped=True)
            dt, sh = source.dtype, source.shape
        elif isinstance(source, np.ndarray):
            dt = dtype_of_array(source, op)
            sh = tuple(int(d) for d in source.shape)
            src = source
        else:
            raise ValidationError(
                op,
                f"expected a Tensor or a numpy array, got {type(source).__name__}",
                kind="INVALID_DATA",
            )
        record_copy(op, shape_size(sh) * dt.itemsize)
        out = self.allocate(dt, sh)
        dst, offset = out._resolve(op, mapped=True)
        target = dst.flat[offset : offset + shape_size(sh)]
        if src.ndim <= 1:
            np.copyto(target, src)
        else:
            np.copyto(target.reshape(sh, order="F"), src)
        return out

    def _check_own_process(self, op: str) -> None:
        # INVARIANT: (domain id, allocation id) names one segment in every process.
        # A forked child holds a copy of this domain and of its allocation counter;
        # allocating there would give the child's segment and the parent's next one
        # the same key.
        if os.getpid() != self._pid:
            raise RuntimeStateError(
                op,
                f"this domain belongs to process {self._pid} and reached this one "
                f"({os.getpid()}) by fork; its allocations here would reuse the parent's "
                "allocation ids. Make a SharedMemoryDomain() in this process (attaching "
                "the parent's tensors is fine)",
                kind="FORKED_DOMAIN",
                owner_pid=self._pid,
            )

    @staticmethod
    def attach(handle: ShareHandle) -> Tensor:
        """Map a shared tensor of another process (or this one): read-only, no copy.

        The tensor has the owner's allocation identity and memory kind SHARED_HOST.
        Raises `HostAccessError` kind SEGMENT_GONE when the owner has already dropped
        the tensor. In the process that allocated the tensor, the attached tensor
        reads through the owner's host buffer, so each refuses to write while the
        other's arrays live (and to read while the other writes). Ownership: the
        attached tensor owns only its mapping.
        """
        op = "SharedMemoryDomain.attach"
        if not isinstance(handle, ShareHandle):
            raise ValidationError(
                op,
                f"expected a ShareHandle (from Tensor.share_handle()), got {type(handle).__name__}",
                kind="INVALID_ARGUMENT",
            )
        # A handle is plain data that anyone can build or unpickle: check it all here,
        # not at the first read of a mapping it describes wrongly.
        handle = _checked_handle(op, handle)
        _require_posix(op)
        try:
            mm = _map_segment(op, handle.name, handle.segment_bytes, writable=False)
        except FileNotFoundError:
            raise HostAccessError(
                op,
                f"shared-memory segment {handle.name} no longer exists: its owner (process "
                f"{handle.owner_pid}) dropped the tensor (or exited) before this attach; keep "
                "the owner's tensor alive until every reader has attached",
                kind="SEGMENT_GONE",
                name=handle.name,
                owner_pid=handle.owner_pid,
            ) from None
        except OSError as exc:
            raise HostAccessError(
                op,
                f"cannot map shared-memory segment {handle.name}: {exc}",
                kind="PROVIDER",
                name=handle.name,
            ) from exc
        n = shape_size(handle.shape)
        buf = SharedMemoryBuffer(
            mm,
            handle.name,
            handle.segment_bytes,
            handle.dtype,
            n,
            handle.allocation_domain,
            handle.allocation_id,
            None,
            None,
            handle.owner_pid,
        )
        owner = import_backend_buffer(buf, handle.dtype)
        owner.read_through(_owner_host(op, handle, owner))
        return tensor_from_owner(owner, handle.dtype, handle.shape, op)

    def __reduce__(self) -> NoReturn:
        raise RuntimeStateError(
            "SharedMemoryDomain.__reduce__",
            "a domain belongs to the process that made it; send Tensor.share_handle() to "
            "other processes and SharedMemoryDomain.attach() it there",
            kind="NOT_PICKLABLE",
        )

    def __repr__(self) -> str:
        return f"SharedMemoryDomain({self._id!r})"


def _checked_handle(op: str, handle: ShareHandle) -> ShareHandle:
    """``handle`` with every field validated and normalised (plain ints, a shape tuple).

    Malformed fields are `ValidationError` kind INVALID_HANDLE (a bad shape keeps the
    shape check's kind); a shape needing more bytes than the segment is `AccessError`
    kind LENGTH_MISMATCH. All name ``op``.
    """

    def refuse(what: str) -> NoReturn:
        raise ValidationError(
            op,
            f"the handle's {what}; pass the handle that Tensor.share_handle() returned",
            kind="INVALID_HANDLE",
        )

    def count(field: str, minimum: int) -> int:
        value = getattr(handle, field)
        try:
            n = strict_index(value)
        except TypeError:
            refuse(f"{field} must be an int, got {value!r}")
        if n < minimum:
            refuse(f"{field} must be >= {minimum}, got {n}")
        return n

    name = handle.name
    if not isinstance(name, str) or not name or "/" in name or "\x00" in name:
        refuse(f"segment name {name!r} is not the name of a shared-memory segment")
    dtype = handle.dtype
    if not isinstance(dtype, DType):
        refuse(f"dtype {dtype!r} is not a tenferro DType")
    shape = normalize_shape(handle.shape, op, dtype.itemsize)
    segment_bytes = count("segment_bytes", 1)
    nbytes = shape_size(shape) * dtype.itemsize
    if nbytes > segment_bytes:
        raise AccessError(
            op,
            f"the handle describes {dtype.name} {list(shape)} ({nbytes} bytes) in segment "
            f"{name} of {segment_bytes} bytes",
            kind="LENGTH_MISMATCH",
            expected=nbytes,
            actual=segment_bytes,
        )
    return ShareHandle(
        name,
        segment_bytes,
        dtype,
        shape,
        count("domain", 0),
        count("allocation", 0),
        count("owner_pid", 1),
    )


def _owner_host(op: str, handle: ShareHandle, reader: OwnedStorage) -> HostBuffer | None:
    """The host buffer of the segment's owner when it lives in this process, else None."""
    owner = _owners.get(handle.name)
    if owner is None:
        return None  # another process's segment (or a dropped one): map it alone
    if (
        owner.key != reader.key
        or owner.dtype is not reader.dtype
        or owner.extent.byte_len < reader.extent.byte_len
    ):
        raise ValidationError(
            op,
            f"the handle describes segment {handle.name} as {reader.dtype.name} "
            f"{list(handle.shape)} of {reader.key!r}, but this process allocated it as "
            f"{owner.extent.byte_len} bytes of {owner.dtype.name} of {owner.key!r}; pass "
            "the handle that share_handle() returned",
            kind="INVALID_HANDLE",
            name=handle.name,
        )
    return owner.host_view(op)


def shared_buffer_of(t: Tensor, op: str) -> SharedMemoryBuffer | None:
    """The shared-memory buffer behind ``t``, or None for any other storage."""
    st = t._live(op)
    if not isinstance(st, GroupTensorRef):
        return None
    buf = st.owner.backend_buffer()
    return buf if isinstance(buf, SharedMemoryBuffer) else None


def share_handle(t: Tensor) -> ShareHandle:
    """`Tensor.share_handle`: a picklable handle to a shared-memory tensor.

    Ownership: **borrows** nothing in this process; the handle does not keep the
    segment alive (keep the tensor alive until readers have attached). Refused
    while the tensor is exclusively borrowed (finish writing first), and for
    tensors that are not in shared memory (`RuntimeStateError` kind
    NOT_SHARED_MEMORY).
    """
    op = "Tensor.share_handle"
    buf = shared_buffer_of(t, op)
    if buf is None:
        raise RuntimeStateError(
            op,
            f"the tensor lives in {t.placement.memory_kind.name} memory, not in a "
            "SharedMemoryDomain; copy it in with SharedMemoryDomain().copy_from(t) (a named "
            "copy) and share that tensor",
            kind="NOT_SHARED_MEMORY",
        )
    st: GroupTensorRef = t._st
    host = st.owner.mapped
    if host is not None and host.exclusive is not None:
        raise shared_refusal(op, host.exclusive)
    key = st.owner.key
    return ShareHandle(
        buf.name,
        buf.segment_bytes,
        t._dtype,
        t._shape,
        key.domain.value,
        key.local.value,
        buf.owner_pid,
    )
