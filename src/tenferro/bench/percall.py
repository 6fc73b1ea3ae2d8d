"""Per-call cost and large strided copies, side by side with numpy and (if installed) torch.

Issue 12's table: at 16 and 4096 elements (F64, one thread), each operation
family's per-call time against numpy's and torch CPU's (engine methods, view
transforms, and the namespace: ``tfr.*`` functions, operators, indexing),
plus transposes of
256x256 and 2048x2048 matrices (strided copies) and a 3-d permute. The numpy
and torch contenders read the very memory the tensors own and do the same
physical work: tensors are column-major, so a tenferro transpose is, byte for
byte, numpy's ``np.ascontiguousarray`` / torch's ``.contiguous()`` of the
column-major array. torch is optional (never a dependency of tenferro): without
it the torch column is simply absent.

Targets: tenferro / numpy <= 2.5 and tenferro / torch <= 1.0 per call; large
copies tenferro / torch <= 1.2.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .engine import _tensor
from .harness import CaseResult, Target, time_case

__all__ = ["load_torch", "run"]

Array = np.ndarray[Any, Any]


def load_torch() -> Any:
    """torch, limited to one thread, or None when it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _case(
    name: str,
    tf: Callable[[], Any],
    npf: Callable[[], Any],
    thf: Callable[[], Any] | None,
    *,
    group: str,
    size: int,
    reps: int,
    inner: int,
    torch_ratio: float = 1.0,
    numpy_ratio: float | None = 2.5,
) -> CaseResult:
    contenders: list[tuple[str, Callable[[], Any]]] = [("tenferro", tf), ("numpy", npf)]
    targets = [] if numpy_ratio is None else [Target("tenferro", "numpy", numpy_ratio)]
    if thf is not None:
        contenders.append(("torch", thf))
        targets.append(Target("tenferro", "torch", torch_ratio))
    return time_case(
        name, contenders, group=group, size=size, repeats=reps, inner=inner, targets=targets
    )


def _per_call(
    eng: Any,
    torch: Any,
    th: Callable[[Array], Any],
    rng: np.random.Generator,
    n: int,
    side: int,
    reps: int,
    quick: bool,
) -> list[CaseResult]:
    """The per-call rows at ``n`` elements (``side`` x ``side`` for the matrix rows)."""
    import tenferro

    # The namespace functions are attributes the package re-exports at import time.
    tfr: Any = tenferro
    results: list[CaseResult] = []
    inner = (200 if quick else 2000) if n == 16 else (50 if quick else 500)
    group = f"per call, {n} elements"
    x, xn = _tensor(rng, (n,))
    y, yn = _tensor(rng, (n,))
    xt, yt = th(xn), th(yn)
    m, mn = _tensor(rng, (side, side))
    k, kn = _tensor(rng, (side, side))
    mt, kt = th(mn), th(kn)
    # torch/numpy C-ordered views of the same memory: A @ B column-major is
    # B^T @ A^T row-major, one BLAS call on the same bytes.
    mct, kct = th(mn.T), th(kn.T)
    view = m.as_view()
    tview = view.transpose_view((1, 0))
    rows: list[tuple[str, Callable[[], Any], Callable[[], Any], Any]] = [
        ("add", lambda: eng.add(x, y), lambda: np.add(xn, yn), lambda: torch.add(xt, yt)),
        ("exp", lambda: eng.exp(x), lambda: np.exp(xn), lambda: torch.exp(xt)),
        ("sum", lambda: eng.reduce_sum(x), lambda: np.sum(xn), lambda: torch.sum(xt)),
        (
            f"matmul {side}x{side}",
            lambda: eng.matmul(m, k),
            lambda: np.matmul(kn.T, mn.T),
            lambda: torch.matmul(kct, mct),
        ),
        (
            f"transpose {side}x{side}",
            lambda: eng.transpose(m, (1, 0)),
            lambda: np.ascontiguousarray(mn),
            lambda: mt.contiguous(),
        ),
        (
            f"to_contiguous(transpose_view) {side}x{side}",
            lambda: eng.to_contiguous(tview),
            lambda: np.ascontiguousarray(mn),
            lambda: mt.contiguous(),
        ),
        (
            "reshape_view",
            lambda: view.reshape_view((side * side,)),
            lambda: mn.reshape(side * side, order="F"),
            lambda: mt.T.reshape(side * side),
        ),
        (
            "slice_view",
            lambda: view.slice_view((slice(0, 2), slice(None))),
            lambda: mn[0:2, :],
            lambda: mt[0:2, :],
        ),
        (
            "einsum ij,jk->ik",
            lambda: eng.einsum("ij,jk->ik", m, k),
            lambda: np.einsum("ij,jk->ik", mn, kn),
            lambda: torch.einsum("ij,jk->ik", mt, kt),
        ),
        # The namespace (array API functions and operators) on the default engine.
        ("tfr.add", lambda: tfr.add(x, y), lambda: np.add(xn, yn), lambda: torch.add(xt, yt)),
        ("a + b", lambda: x + y, lambda: xn + yn, lambda: xt + yt),
        ("a * 2.0", lambda: x * 2.0, lambda: xn * 2.0, lambda: xt * 2.0),
        ("tfr.exp", lambda: tfr.exp(x), lambda: np.exp(xn), lambda: torch.exp(xt)),
        ("tfr.sum", lambda: tfr.sum(x), lambda: np.sum(xn), lambda: torch.sum(xt)),
        (
            "axis-0 sum (tfr.sum)",
            lambda: tfr.sum(m, axis=0),
            lambda: np.sum(mn, axis=0),
            lambda: torch.sum(mt, dim=0),
        ),
        (
            f"tfr.matmul {side}x{side}",
            lambda: tfr.matmul(m, k),
            lambda: np.matmul(mn, kn),
            lambda: torch.matmul(mt, kt),
        ),
        (f"a @ b {side}x{side}", lambda: m @ k, lambda: mn @ kn, lambda: mt @ kt),
        ("x[0:2, :]", lambda: m[0:2, :], lambda: mn[0:2, :], lambda: mt[0:2, :]),
        (
            f"tfr.reshape {n} -> {side}x{side}",
            lambda: tfr.reshape(x, (side, side)),
            lambda: xn.reshape(side, side),
            lambda: xt.reshape(side, side),
        ),
        (
            "tfr.permute_dims",
            lambda: tfr.permute_dims(m, (1, 0)),
            lambda: np.permute_dims(mn, (1, 0)),
            lambda: torch.permute(mt, (1, 0)),
        ),
    ]
    for label, tf, npf, thf in rows:
        results.append(
            _case(
                f"{label} ({n} el)",
                tf,
                npf,
                thf if torch is not None else None,
                group=group,
                size=n,
                reps=reps,
                inner=inner,
            )
        )
    return results


def run(quick: bool = False) -> list[CaseResult]:
    """Per-call rows (16 and 4096 elements) and large strided copies."""
    from ..engine import CpuEngine

    torch = load_torch()
    eng = CpuEngine(threads=1)
    rng = np.random.default_rng(0)
    reps = 5 if quick else 15
    results: list[CaseResult] = []

    def th(arr: Array) -> Any:
        if torch is None:
            return None
        with warnings.catch_warnings():
            # The arrays are read-only views of the tensors' memory; torch only reads.
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(arr)

    for n, side in ((16, 4), (4096, 64)):
        results += _per_call(eng, torch, th, rng, n, side, reps, quick)

    # -- large strided copies ------------------------------------------------------------
    for side in (256, 2048):
        big, bign = _tensor(rng, (side, side))
        bigt = th(bign)
        bview = big.as_view().transpose_view((1, 0))
        inner = 1 if side > 256 else (5 if quick else 20)
        big_reps = 3 if quick and side > 256 else reps
        # The same column-major result from a plain tensor and from a transposed view.
        for name, fn in (
            (f"transpose {side}x{side}", partial(eng.transpose, big, (1, 0))),
            (f"to_contiguous(transpose_view) {side}x{side}", partial(eng.to_contiguous, bview)),
        ):
            results.append(
                _case(
                    name,
                    fn,
                    partial(np.ascontiguousarray, bign),
                    None if bigt is None else bigt.contiguous,
                    group="large strided copies",
                    size=side * side,
                    reps=big_reps,
                    inner=inner,
                    torch_ratio=1.2,
                    numpy_ratio=1.0,
                )
            )
    cube = (32, 32, 32) if quick else (128, 128, 128)
    c3, c3n = _tensor(rng, cube)
    c3t = th(c3n)
    perm = (2, 0, 1)
    results.append(
        _case(
            f"permute {cube} -> {perm}",
            lambda: eng.transpose(c3, perm),
            # torch: the column-major result is the row-major copy of the reversed axes.
            lambda: np.asfortranarray(c3n.transpose(perm)),
            (lambda: c3t.permute(perm).permute(2, 1, 0).contiguous())
            if torch is not None
            else None,
            group="large strided copies",
            size=c3n.size,
            reps=reps,
            inner=1 if not quick else 5,
            torch_ratio=1.2,
            numpy_ratio=1.0,
        )
    )
    return results
