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

One concern in one module of about 700 lines: the segment, its handle, the
buffer over it and the domain share the segment's lifetime rules above.

Hardening (docs/domains.md, "What shared memory cannot protect"):

* ``allocate`` reserves the segment's bytes (``posix_fallocate``): a full or small
  /dev/shm is an `OutOfMemoryError` at allocation, not SIGBUS at the first write;
* ``attach`` opens the named file without blocking and without following links, and
  maps it only if it is a regular file of this user, mode 0600, of exactly the
  handle's size (else `HostAccessError` kind UNTRUSTED_SEGMENT, or LENGTH_MISMATCH);
* every mapped access re-checks the segment's size first (``check_mapped``): one
  shrunk by another process is `HostAccessError` kind SEGMENT_SHRUNK, not SIGBUS.
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import stat
import sys
import weakref
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory
from typing import Any, NoReturn

import numpy as np

from .. import _services
from ..copies import check_copy, count_copy
from ..dtype import DType, as_dtype, dtype_of_array
from ..errors import (
    AccessError,
    HostAccessError,
    OutOfMemoryError,
    RuntimeStateError,
    ValidationError,
)
from ..group import GroupTensorRef, tensor_from_owner
from ..layout import normalize_shape, shape_size, strict_index
from ..placement import MemoryKind, Placement
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


#: On Linux ``shm_open`` is ``open(2)`` of a file under /dev/shm, so any file there can
#: be named by a handle: open it without blocking (a FIFO would block a read-only open
#: until a writer comes) and without following a symlink. Other platforms keep segments
#: outside the file system and accept only the access-mode flags.
_ATTACH_FLAGS = os.O_RDONLY | (
    (os.O_NONBLOCK | os.O_NOFOLLOW) if sys.platform.startswith("linux") else 0
)

#: What a segment name may be: one file name, no separator, not "." or "..", not hidden.
#: (Python names its segments ``psm_`` and hex digits.)
_SEGMENT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")

#: Errors of ``posix_fallocate`` (and of creating the segment) that mean "no room".
_NO_SPACE = frozenset({errno.ENOSPC, errno.ENOMEM, errno.EFBIG})

#: Where Linux keeps POSIX shared memory (named in messages only).
_SHM_DIR = "/dev/shm"


def _out_of_memory(op: str, nbytes: int, exc: BaseException) -> OutOfMemoryError:
    return OutOfMemoryError(
        op,
        f"cannot reserve {nbytes} bytes of shared memory ({exc}): the shared-memory file "
        f"system ({_SHM_DIR} on Linux) is full or too small. Drop shared tensors you no "
        "longer need, allocate less, or give the machine more shared memory (docker "
        "--shm-size, or remount /dev/shm with a larger size=)",
        nbytes=nbytes,
    )


def _reserve(op: str, fd: int, nbytes: int) -> None:
    """Reserve ``nbytes`` of the new segment now, so that no later write can fault.

    Without it a segment is sparse: creating it succeeds on a small /dev/shm and the
    first write to a page that finds no room kills the process with SIGBUS.
    """
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is None:
        return  # macOS has none (and no /dev/shm to run out of the same way)
    try:
        fallocate(fd, 0, nbytes)
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise _out_of_memory(op, nbytes, exc) from exc
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOSYS):
            return  # a file system that cannot reserve: nothing more can be done here
        raise RuntimeStateError(
            op,
            f"could not reserve {nbytes} bytes for a shared-memory segment: {exc}",
            kind="PROVIDER",
            nbytes=nbytes,
        ) from exc


def _untrusted(op: str, name: str, why: str) -> HostAccessError:
    return HostAccessError(
        op,
        f"it {why}; attach only handles that Tensor.share_handle() returned",
        kind="UNTRUSTED_SEGMENT",
        name=name,
    )


def _attach_segment(op: str, handle: ShareHandle) -> mmap.mmap:
    """Map the handle's segment read-only, after checking that it is one a domain made.

    The file must be a regular file (not a FIFO, directory, device or symlink) owned by
    this process's effective user, with no group or other permission bits (a domain's
    segments are 0600), and exactly ``handle.segment_bytes`` long. The resource tracker
    is not involved (see the module docstring).
    """
    import _posixshmem  # CPython's own helper for multiprocessing.shared_memory (POSIX)

    name = handle.name
    try:
        fd = _posixshmem.shm_open("/" + name, _ATTACH_FLAGS, 0o600)
    except FileNotFoundError:
        raise HostAccessError(
            op,
            "keep the owner's tensor alive until every reader has attached",
            kind="SEGMENT_GONE",
            name=name,
            owner_pid=handle.owner_pid,
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _untrusted(op, name, "is a symbolic link") from None
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
            raise _untrusted(op, name, "is not a regular file") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise _untrusted(op, name, "cannot be opened by this user") from None
        raise HostAccessError(
            op, f"it cannot be opened: {exc}", kind="PROVIDER", name=name
        ) from exc
    try:
        st = os.fstat(fd)
        mode = stat.filemode(st.st_mode)
        if not stat.S_ISREG(st.st_mode):
            raise _untrusted(op, name, f"is not a regular file ({mode})")
        if st.st_uid != os.geteuid():
            raise _untrusted(op, name, f"belongs to user {st.st_uid}, not to {os.geteuid()}")
        if st.st_mode & 0o077:
            raise _untrusted(op, name, f"is open to other users ({mode}, not -rw-------)")
        if st.st_size != handle.segment_bytes:
            raise AccessError(
                op,
                f"segment {name} has {st.st_size} bytes but the handle describes "
                f"{handle.segment_bytes}; pass the handle that Tensor.share_handle() returned",
                kind="LENGTH_MISMATCH",
                expected=handle.segment_bytes,
                actual=st.st_size,
            )
        try:
            return mmap.mmap(fd, handle.segment_bytes, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        except OSError as exc:
            raise HostAccessError(
                op, f"it cannot be mapped: {exc}", kind="PROVIDER", name=name
            ) from exc
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

    def check_mapped(self, op: str) -> None:
        """Refuse (`HostAccessError` kind SEGMENT_SHRUNK) once the segment is shorter than mapped.

        Another process of the same user can ``ftruncate`` the segment under every
        mapping of it; a read (or write) of a page past the new end is SIGBUS. Called
        before every mapped access (see ``OwnedStorage.host_view``); a shrink after this
        check, or through an array already handed out, cannot be caught (docs/domains.md).
        """
        mm = self._mm
        try:
            actual = mm.size()  # fstat of the mapping's own descriptor
        except (OSError, ValueError) as exc:
            raise HostAccessError(
                op,
                f"it cannot be checked: {exc}",
                kind="PROVIDER",
                name=self.name,
            ) from exc
        if actual < len(mm):
            raise HostAccessError(
                op,
                "another process shrank it after it was mapped, and reading it "
                "would kill this process (SIGBUS). Its contents are lost; have the owner "
                "share a new tensor (and find what truncates its segments)",
                kind="SEGMENT_SHRUNK",
                name=self.name,
                expected=len(mm),
                actual=actual,
            )

    def map_read(self) -> np.ndarray[Any, Any]:
        self.check_mapped("SharedMemoryBuffer.map_read")
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
        self.check_mapped("SharedMemoryBuffer.map_write")
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
            if exc.errno in _NO_SPACE:
                raise _out_of_memory(op, nbytes, exc) from exc
            raise RuntimeStateError(
                op,
                f"could not create a shared-memory segment of {nbytes} bytes: {exc}",
                kind="PROVIDER",
                nbytes=nbytes,
            ) from exc
        try:
            # The descriptor SharedMemory created the segment with (not the name, which
            # another process could replace meanwhile).
            fd: int = shm._fd  # type: ignore[attr-defined]
            _reserve(op, fd, shm.size)
            try:
                mm = mmap.mmap(fd, shm.size, flags=mmap.MAP_SHARED)
            except OSError as exc:
                if exc.errno in _NO_SPACE:
                    raise _out_of_memory(op, shm.size, exc) from exc
                raise RuntimeStateError(
                    op,
                    f"could not map a new shared-memory segment: {exc}",
                    kind="PROVIDER",
                    nbytes=shm.size,
                ) from exc
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
        nbytes = shape_size(sh) * dt.itemsize
        check_copy(op, nbytes)
        out = self.allocate(dt, sh)  # may be OutOfMemoryError: then no copy was made
        dst, offset = out._resolve(op, mapped=True)
        target = dst.flat[offset : offset + shape_size(sh)]
        if src.ndim <= 1:
            np.copyto(target, src)
        else:
            np.copyto(target.reshape(sh, order="F"), src)
        count_copy(nbytes)
        return out

    def _check_own_process(self, op: str) -> None:
        # INVARIANT: (domain id, allocation id) names one segment in every process.
        # A forked child holds a copy of this domain and of its allocation counter;
        # allocating there would give the child's segment and the parent's next one
        # the same key.
        if os.getpid() != self._pid:
            raise RuntimeStateError(
                op,
                f"it reached this one ({os.getpid()}) by fork; its allocations here would "
                "reuse the parent's "
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
        mm = _attach_segment(op, handle)
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
            name=getattr(handle, "name", None),
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
    if type(name) is not str or not _SEGMENT_NAME.fullmatch(name):
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


_services.register_share_handle(share_handle)
