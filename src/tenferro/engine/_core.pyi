"""Type stubs of the compiled per-operation protocol (engine/_core.pyx)."""

from collections.abc import Container
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
def elementwise2(
    kernel: Any, x1: Any, x2: Any, allowed: Container[DType], out_bool: bool
) -> Any: ...
def elementwise1(kernel: Any, x: Any, allowed: Container[DType]) -> Any: ...
def full(kernel: Any, x: Any, fast: Container[DType], eng: Any, arg: Any) -> Tensor | None: ...
def view_of(
    t: Tensor, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = ...
) -> TensorView: ...
def c_source(x: Any) -> HostBuffer | None: ...
def c_view(t: Any) -> Any: ...
def permuted_view(t: Tensor, axes: tuple[int, ...]) -> TensorView: ...
def dot_planned(
    p: Any, q: Any, plan: tuple[Any, ...], out_dt: DType, eng: Any
) -> Tensor | None: ...
