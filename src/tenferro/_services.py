"""The registration point through which `Tensor` and the views reach upper layers.

`tensor.py` and `view.py` sit below the engine, interop, domains and the group
branch (DESIGN section 9: import only downward), yet a tensor's operators run on
the default engine, ``__dlpack__`` exports through `tenferro.interop`,
``share_handle`` asks the shared-memory domain, and ``promote`` moves the tensor
into a group. Each upper module fills its slot here when it is imported
(`tenferro/__init__.py` imports them all, so ``import tenferro`` registers every
service); the tensor calls the slot. A slot nobody filled raises
`RuntimeStateError` kind SERVICE_NOT_REGISTERED naming the module to import.

Only functions live here; no module of this package is imported by it except
the bottom layer (errors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from .errors import RuntimeStateError

if TYPE_CHECKING:
    import numpy as np

    from .dtype import DType
    from .storage.host import HostBuffer
    from .tensor import Tensor

__all__ = [
    "array_ufunc",
    "default_engine",
    "dlpack_device",
    "export_dlpack",
    "group_into_host",
    "group_into_vec",
    "host_tensor",
    "mixed_ufunc",
    "promote",
    "register_dlpack",
    "register_engine",
    "register_group",
    "register_host_tensor",
    "register_mixed_ufunc",
    "register_share_handle",
    "share_handle",
    "tensor_type",
]


def _missing(service: str, module: str) -> NoReturn:
    raise RuntimeStateError(
        service,
        f"import {module} (import tenferro does)",
        kind="SERVICE_NOT_REGISTERED",
        service=service,
    )


def _no_engine() -> Any:
    _missing("default_engine", "tenferro.engine")


def _no_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    _missing("array_ufunc", "tenferro.engine")


def _no_export(*args: Any) -> Any:
    _missing("export_dlpack", "tenferro.interop")


def _no_device(obj: Any) -> tuple[int, int]:
    _missing("dlpack_device", "tenferro.interop")


def _no_share(t: Tensor) -> Any:
    _missing("share_handle", "tenferro.domains")


def _no_promote(t: Tensor) -> Tensor:
    _missing("promote", "tenferro.group")


def _no_into_host(t: Tensor, op: str) -> Tensor:
    _missing("group_into_host", "tenferro.group")


def _no_into_vec(t: Tensor, op: str) -> np.ndarray[Any, Any]:
    _missing("group_into_vec", "tenferro.group")


def _no_host_tensor(shape: tuple[int, ...], dtype: DType, buf: HostBuffer) -> Tensor:
    _missing("host_tensor", "tenferro.tensor")


# The slots. Read them as module attributes at call time (`_services.promote(t)`),
# never bind them with `from ._services import promote`: registration replaces them.
#: The calling thread's default engine (`tenferro.engine.default_engine`).
default_engine: Callable[[], Any] = _no_engine
#: numpy's ufunc protocol for tensors (`tenferro.engine.ufuncs.array_ufunc`).
array_ufunc: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any] = _no_ufunc


#: numpy's ufuncs with a numpy operand next to a tensor or view (``ndarray + t``):
#: the namespace's function, or NotImplemented for the protocol above
#: (`tenferro.namespace._interop`; unset, every call takes the protocol above).
def _no_mixed(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return NotImplemented


mixed_ufunc: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any] = _no_mixed
#: ``export_dlpack(obj, array, stream, max_version, dl_device, copy)`` (`tenferro.interop`).
export_dlpack: Callable[..., Any] = _no_export
#: ``(device_type, device_id)`` of a tensor (`tenferro.interop`).
dlpack_device: Callable[[Any], tuple[int, int]] = _no_device
#: `Tensor.share_handle` (`tenferro.domains.shared_memory`).
share_handle: Callable[[Tensor], Any] = _no_share
#: `Tensor.promote`, `Tensor.into_host` / `into_vec_col_major` of a group-backed
#: tensor (`tenferro.group`).
promote: Callable[[Tensor], Tensor] = _no_promote
group_into_host: Callable[[Tensor, str], Tensor] = _no_into_host
group_into_vec: Callable[[Tensor, str], np.ndarray[Any, Any]] = _no_into_vec


class _NoTensor:
    """Stands for `Tensor` until `tenferro.tensor` registers it: nothing is one."""


#: A plain host tensor over a new buffer (`tenferro.tensor`, for the views).
host_tensor: Callable[[tuple[int, ...], DType, HostBuffer], Tensor] = _no_host_tensor
#: The `Tensor` class, for the views' isinstance checks (`tenferro.tensor`).
tensor_type: type = _NoTensor


def register_engine(
    get_default: Callable[[], Any],
    ufunc: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any],
) -> None:
    """Called by `tenferro.engine`: the default-engine getter and the ufunc protocol."""
    global default_engine, array_ufunc
    default_engine = get_default
    array_ufunc = ufunc


def register_mixed_ufunc(
    fn: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any],
) -> None:
    """Called by `tenferro.namespace`: numpy ufuncs mixing numpy and tenferro operands."""
    global mixed_ufunc
    mixed_ufunc = fn


def register_dlpack(export: Callable[..., Any], device: Callable[[Any], tuple[int, int]]) -> None:
    """Called by `tenferro.interop.dlpack`."""
    global export_dlpack, dlpack_device
    export_dlpack = export
    dlpack_device = device


def register_share_handle(fn: Callable[[Tensor], Any]) -> None:
    """Called by `tenferro.domains.shared_memory`."""
    global share_handle
    share_handle = fn


def register_group(
    promote_fn: Callable[[Tensor], Tensor],
    into_host: Callable[[Tensor, str], Tensor],
    into_vec: Callable[[Tensor, str], np.ndarray[Any, Any]],
) -> None:
    """Called by `tenferro.group`."""
    global promote, group_into_host, group_into_vec
    promote = promote_fn
    group_into_host = into_host
    group_into_vec = into_vec


def register_host_tensor(
    cls: type, fn: Callable[[tuple[int, ...], DType, HostBuffer], Tensor]
) -> None:
    """Called by `tenferro.tensor`: the class and the constructor the views use."""
    global host_tensor, tensor_type
    tensor_type = cls
    host_tensor = fn
