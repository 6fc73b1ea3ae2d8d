"""Type stubs of the compiled per-operation protocol (engine/_core.pyx)."""

from collections.abc import Callable, Container
from typing import Any

from ..dtype import DType
from ..storage.host import HostBuffer
from ..tensor import Tensor
from ..view import TensorView

def pooled(
    shape: tuple[int, ...], dtype: DType, owner: Any, flat: Any, recycler: Any
) -> Tensor: ...
def unary(kernel: Any, t: Tensor, out_dt: DType, eng: Any) -> Tensor | None: ...
def binary(kernel: Any, a: Tensor, b: Tensor, out_dt: DType, eng: Any) -> Tensor | None: ...
def scalar(
    kernel: Any, t: Tensor, value: Any, first: bool, out_dt: DType, eng: Any
) -> Tensor | None: ...
def shaped(
    kernel: Any,
    t: Tensor,
    out_shape: tuple[int, ...],
    n_out: int,
    out_dt: DType,
    eng: Any,
    arg: Any,
) -> Tensor | None: ...
def shaped2(
    kernel: Any,
    a: Tensor,
    b: Tensor,
    out_shape: tuple[int, ...],
    n_out: int,
    out_dt: DType,
    eng: Any,
    arg: Any,
    kept: bool = ...,
) -> Tensor | None: ...
def shapedn(
    kernel: Any,
    ts: tuple[Tensor, ...],
    out_shape: tuple[int, ...],
    n_out: int,
    out_dt: DType,
    eng: Any,
    arg: Any,
) -> Tensor | None: ...
def pinned(body: Any, st: Any, args: tuple[Any, ...]) -> Any: ...
def bind_current(state: Any, default_engine: Any) -> None: ...
def current() -> Any: ...
def current_changed() -> None: ...
def elementwise2(
    kernel: Any, x1: Any, x2: Any, allowed: Container[DType], out_bool: bool
) -> Any: ...
def broadcast2(
    ufunc: Any, x1: Any, x2: Any, allowed: Container[DType], out_bool: bool, op: str
) -> Any: ...
def elementwise1(kernel: Any, x: Any, allowed: Container[DType]) -> Any: ...
def binary_entry(
    ufunc: Any,
    call: Any,
    allowed: Container[DType],
    out_bool: bool,
    general: Callable[[Any, Any], Any],
    op: str,
    typed: Callable[[Any, BaseException, str], BaseException],
) -> Callable[..., Any]: ...
def unary_entry(
    ufunc: Any, allowed: Container[DType], general: Callable[[Any], Any]
) -> Callable[..., Any]: ...
def full(kernel: Any, x: Any, fast: Container[DType], eng: Any, arg: Any) -> Tensor | None: ...
def view_of(
    t: Tensor, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = ...
) -> TensorView: ...
def c_source(x: Any) -> HostBuffer | None: ...
def prefers_c(x: Any) -> bool: ...
def c_view(t: Any) -> Any: ...
def permuted_view(t: Tensor, axes: tuple[int, ...]) -> TensorView: ...
def dot_planned(
    p: Any, q: Any, plan: tuple[Any, ...], out_dt: DType, eng: Any
) -> Tensor | None: ...
def basic_view(x: Any, key: Any) -> TensorView | None: ...
def matmul2(x1: Any, x2: Any, plans: dict[Any, Any], marker: object) -> Any: ...
def bind_getitem(rest: Any) -> None: ...
def getitem(x: Any, key: Any, /) -> Any: ...
def copy_counts() -> tuple[int, int]: ...
def reshape_kernel(fa: Any, out: Any, arg: tuple[Any, ...]) -> None: ...
def reshape_planned(x: Any, shape: Any, may_copy: bool, plans: dict[Any, Any]) -> Any: ...
def bind_matmul(namespace: Any, plans: dict[Any, Any], marker: object) -> None: ...
def matmul_operator(x1: Any, x2: Any, /) -> Any: ...

# quimb's split kernels and the lean QR/SVD bodies (engine/_split.pxi).
def bind_split(
    svd_forms: dict[Any, Any],
    cutoff_modes: dict[Any, Any],
    qr_forms: dict[Any, Any],
    fallback: Any,
    plan: Any,
    error: Any,
    linalg: Any,
) -> None: ...
def svd_truncated(
    x: Any,
    cutoff: Any = ...,
    cutoff_mode: Any = ...,
    max_bond: Any = ...,
    absorb: Any = ...,
    renorm: Any = ...,
    info: dict[str, Any] | None = ...,
    **kwargs: Any,
) -> tuple[Any, Any, Any]: ...
def qr_stabilized(
    x: Any, absorb: Any = ..., stabilized: Any = ..., **kwargs: Any
) -> tuple[Any, None, Any]: ...
def lean_qr(
    eng: Any,
    fa: Any,
    dt: DType,
    m: int,
    n: int,
    complete: bool,
    rows: bool,
    stabilize: bool = ...,
) -> tuple[Tensor, Tensor] | None: ...
def lean_svd(
    eng: Any, fa: Any, dt: DType, m: int, n: int, full: bool, swapped: bool
) -> tuple[Tensor, Tensor, Tensor] | None: ...
