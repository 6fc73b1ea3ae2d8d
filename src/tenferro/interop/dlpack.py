"""DLPack export and import without copies.

Export (``Tensor.__dlpack__``) hands out a *shared borrow*: a DLPack 1.x versioned
capsule with the READ_ONLY flag over the tensor's buffer. While the consumer
holds it, it counts as a live alias (exclusive borrows are refused and the
buffer is never recycled). Legacy (unversioned) capsules cannot say "read-only",
so they are only produced for ``copy=True``, where the consumer owns a new
buffer. Provider memory that ``host_data`` refuses is never exported implicitly:
``copy=True`` downloads it (a named copy), anything else raises ``BufferError``.

Import (`from_dlpack`) adopts any producer's host memory without copying and
keeps the producer alive; the copy rules follow the array API standard.
"""

from __future__ import annotations

import enum
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _services
from ..copies import record_copy
from ..dtype import dtype_of_array
from ..errors import InteropError
from ..placement import MemoryKind
from ..storage.host import HostBuffer

if TYPE_CHECKING:
    from ..tensor import Tensor

__all__ = ["DLDeviceType", "dlpack_device", "export_dlpack", "from_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack device type codes used by tenferro."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    CUDA_MANAGED = 13


_DEVICE_OF_KIND = {
    MemoryKind.UNPINNED_HOST: DLDeviceType.CPU,
    MemoryKind.SHARED_HOST: DLDeviceType.CPU,
    MemoryKind.PINNED_HOST: DLDeviceType.CUDA_HOST,
    MemoryKind.MANAGED: DLDeviceType.CUDA_MANAGED,
    MemoryKind.DEVICE: DLDeviceType.CUDA,
}


def dlpack_device(t: Tensor) -> tuple[int, int]:
    """``(device_type, device_id)`` of the memory the tensor lives in."""
    placement = t.placement
    kind = _DEVICE_OF_KIND[placement.memory_kind]
    return int(kind), int(placement.device or 0)


def _host_addressable(t: Tensor, op: str) -> bool:
    st = t._live(op)
    return st.__class__ is HostBuffer or bool(st.host_addressable)


def export_dlpack(
    t: Tensor | Any,
    array: np.ndarray[Any, Any] | None,
    stream: Any,
    max_version: tuple[int, int] | None,
    dl_device: tuple[int, int] | None,
    copy: bool | None,
) -> Any:
    """The capsule behind ``__dlpack__`` for a tensor (``array`` None) or a view's array."""
    op = "Tensor.__dlpack__"
    max_version = _version_pair(op, "max_version", max_version)
    if max_version is not None:
        # numpy reads the pair as C ints; any version past them means the same to it
        # ("newer than mine"), so clamping keeps the meaning without an OverflowError.
        max_version = (_c_int(max_version[0]), _c_int(max_version[1]))
    dl_device = _version_pair(op, "dl_device", dl_device)
    _check_copy_flag(op, copy)
    if stream is not None:
        raise InteropError(
            op,
            f"stream={stream!r} is only meaningful for device memory; CPU exports take stream=None",
            kind="INVALID_STREAM",
        )
    if dl_device is not None and tuple(dl_device) != (int(DLDeviceType.CPU), 0):
        raise InteropError(
            op,
            f"cannot export to device {tuple(dl_device)}: tenferro exports host memory to "
            "the CPU (1, 0) only",
            kind="UNSUPPORTED_DEVICE",
        )
    versioned = max_version is not None and max_version[0] >= 1
    if array is None:
        if not _host_addressable(t, op):
            if not copy:
                raise InteropError(
                    op,
                    f"the tensor lives in {t.placement.memory_kind.name} memory, which is never "
                    "exported implicitly; call t.download() first or pass copy=True",
                    kind="NOT_HOST",
                )
            array = t._read_array(op, mapped=True)
        else:
            array = t._read_array(op)
    if copy:
        record_copy(f"{op}(copy=True)", array.nbytes)
        owned = np.array(array, order="K", copy=True)
        return owned.__dlpack__(max_version=max_version) if versioned else owned.__dlpack__()
    if not versioned:
        raise InteropError(
            op,
            "the consumer asked for a legacy (unversioned) DLPack capsule, which cannot mark "
            "memory read-only, so it would allow writes through a shared borrow; use a "
            "consumer that supports DLPack >= 1.0 (max_version=(1, 0)) or pass copy=True",
            kind="LEGACY_CAPSULE",
        )
    # The capsule keeps `array` (a read-only view of the root) alive: a live alias.
    return array.__dlpack__(max_version=max_version, copy=False)


def _version_pair(op: str, name: str, value: Any) -> tuple[int, int] | None:
    """Validate a ``(major, minor)`` / ``(device_type, device_id)`` pair, or None."""
    if value is None:
        return None
    try:
        first, second = value
        pair = (operator.index(first), operator.index(second))
    except (TypeError, ValueError):
        raise InteropError(
            op, f"{name} must be None or a pair of ints, got {value!r}", kind="INVALID_ARGUMENT"
        ) from None
    if isinstance(first, bool) or isinstance(second, bool):
        raise InteropError(
            op, f"{name} must be a pair of ints, got {value!r}", kind="INVALID_ARGUMENT"
        )
    return pair


def _c_int(value: int) -> int:
    return max(-(2**31), min(value, 2**31 - 1))


def _check_copy_flag(op: str, copy: Any) -> None:
    if copy is not None and not isinstance(copy, bool):
        raise InteropError(
            op, f"copy must be None, True or False, got {copy!r}", kind="INVALID_ARGUMENT"
        )


def from_dlpack(x: Any, copy: bool | None = None) -> Tensor:
    """A tensor on the memory of any DLPack producer (numpy, PyTorch, ...).

    Ownership: with ``copy=None`` or ``False`` **adopts** the producer's host
    memory without copying when it is writable and column-major (any 1-D or
    F-contiguous array) and keeps the producer alive; a numpy producer's handle is
    frozen as in `from_numpy`, other producers' handles cannot be frozen (writes
    through them stay visible: see docs/interop.md). When adopting is impossible,
    ``copy=None`` makes a named copy and ``copy=False`` raises `InteropError`
    (a ``BufferError``). ``copy=True`` always makes a named copy.
    """
    from ..tensor import Tensor, _adopt, _col_major_copy, _unadoptable

    op = "tenferro.from_dlpack"
    _check_copy_flag(op, copy)
    if not hasattr(x, "__dlpack__"):
        raise InteropError(
            op,
            f"{type(x).__name__} does not support the DLPack protocol (__dlpack__)",
            kind="NOT_DLPACK",
        )
    try:
        view = np.from_dlpack(x)
    except (RuntimeError, TypeError, ValueError) as exc:
        # The producer refused to export (e.g. a PyTorch tensor that requires grad).
        raise InteropError(
            op, f"the producer refused to export its memory: {exc}", kind="PRODUCER_REFUSED"
        ) from exc
    except BufferError as exc:
        if copy is False:
            raise InteropError(
                op,
                f"the producer cannot share its memory with the host ({exc}); pass "
                "copy=None or copy=True for a named copy",
                kind="COPY_REQUIRED",
            ) from None
        try:
            view = np.from_dlpack(x, device="cpu", copy=True)
        except (BufferError, RuntimeError, TypeError, ValueError) as again:
            also = "" if str(again) == str(exc) else f"; a host copy was refused too: {again}"
            raise InteropError(
                op,
                f"the producer refused to export its memory: {exc}{also}",
                kind="PRODUCER_REFUSED",
            ) from again
        record_copy(f"{op}(to host)", view.nbytes)
        shape = tuple(int(d) for d in view.shape)
        dt = dtype_of_array(view, op)
        flat = np.asfortranarray(view).reshape(-1, order="F")
        return Tensor._wrap(shape, dt, HostBuffer(flat, flat))
    dt = dtype_of_array(view, op)
    shape = tuple(int(d) for d in view.shape)
    producer = x if isinstance(x, np.ndarray) else None
    reason = None
    if not view.flags.writeable:
        reason = "the producer exported read-only memory"
    elif not view.flags.f_contiguous:
        reason = f"the memory is not column-major (strides {view.strides})"
    elif producer is not None:
        # A numpy producer is frozen with its bases, as in from_numpy; memory that
        # one of them shares with another owner cannot be adopted.
        refusal = _unadoptable(producer)
        reason = None if refusal is None else refusal[1]
    if copy is True or reason is not None:
        if copy is False:
            raise InteropError(
                op,
                f"cannot adopt without a copy: {reason}; pass copy=None or copy=True",
                kind="COPY_REQUIRED",
            )
        record_copy(op, view.nbytes)
        return _col_major_copy(shape, dt, view)
    # The numpy producer's own handle (and its bases) see the same memory: frozen
    # too, and given back by into_vec_col_major.
    buf = _adopt(view, view.reshape(-1, order="F"), producer)
    return Tensor._wrap(shape, dt, buf)


_services.register_dlpack(export_dlpack, dlpack_device)
