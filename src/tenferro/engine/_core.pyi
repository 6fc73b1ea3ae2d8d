"""Type stubs of the compiled per-operation protocol (engine/_core.pyx)."""

from typing import Any

from ..dtype import DType
from ..tensor import Tensor

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
def dot_planned(
    p: Any, q: Any, plan: tuple[Any, ...], out_dt: DType, eng: Any
) -> Tensor | None: ...
