"""`FusionOps`, the fused evaluator's face on the engine: ``eng.evaluate`` tries the
small path's kernel, and otherwise reads its operands, chooses a backend and runs
the compiled program (see the package docstring)."""

from __future__ import annotations

import os
from typing import Any

from ...dtype import DType
from ...errors import ValidationError
from ...storage.host import HostBuffer
from ...tensor import Tensor
from .._base import EngineBase, Reads, check_out
from ._shared import OP, Array, Shape, _not_a_string
from .backend import _choose
from .kernel import _REPLAN, _built, _kernels, _small_kernel
from .programs import _MAX_PROGRAMS, _cache_lock, _program
from .workers import _parallel


class FusionOps(EngineBase):
    """The fused evaluator of `CpuEngine` (mixed in; see the module docstring)."""

    __slots__ = ()

    def evaluate(
        self,
        expr: str,
        /,
        *,
        out: Tensor | None = None,
        backend: str = "auto",
        **operands: Any,
    ) -> Tensor:
        """Evaluate an elementwise expression in one pass into one pooled output.

        ``eng.evaluate("exp(a + b) * c", a=ta, b=tb, c=tc)``: operands are tensors
        or views of one shape (literals are weak scalars); ``out`` and ``backend``
        are reserved names (``expr`` and ``self`` are ordinary operand names).
        Unsupported syntax raises `ValidationError` (kind UNSUPPORTED_EXPRESSION)
        naming the part that cannot be fused; an expression nested too deeply to
        compile is kind TOO_DEEP.
        """
        if not isinstance(expr, str):
            # INVARIANT: validated before the small path, whose cache key hashes it.
            raise _not_a_string(expr)
        if out is None and (backend == "auto" or backend == "tiled") and operands:
            # The small path: one generated kernel per expression (`_kernel_source`).
            kernel = _kernels.get(expr)
            got: Any = _REPLAN if kernel is None else kernel(operands, self, self._pool)
            if got is _REPLAN:
                got = self._plan_small(expr, operands)
            if got is not None:
                return got  # type: ignore[no-any-return]
        if backend not in ("auto", "tiled", "numexpr"):
            raise ValidationError(
                OP,
                f"backend must be 'auto', 'tiled' or 'numexpr', got {backend!r}",
                kind="INVALID_BACKEND",
            )
        with Reads() as reads:
            return self._evaluate(reads, expr, out, backend, operands)

    def _plan_small(self, expr: str, operands: dict[str, Any]) -> Tensor | None:
        """Build the small path's kernel for these operands, cache it and run it (or None).

        Only plain host tensors get a kernel (anything else takes the general path,
        which also raises every error); the kernel replaces any earlier one for the
        same expression, so a loop that alternates dtypes swaps kernels on every
        switch (each is built once, and `_program` caches the compiled programs).
        """
        dtypes: dict[str, DType] = {}
        numpy_dtypes: dict[str, Any] = {}
        for name, t in operands.items():
            if t.__class__ is not Tensor or t._st.__class__ is not HostBuffer:
                return None
            dtypes[name] = t._dtype
            numpy_dtypes[name] = t._st.flat.dtype
        key = (expr, *sorted(numpy_dtypes.items()))
        kernel = _built.get(key)
        if kernel is None:
            kernel = _small_kernel(expr, dtypes, numpy_dtypes)  # raises every expression error
        with _cache_lock:
            if len(_built) >= _MAX_PROGRAMS:
                _built.clear()
                _kernels.clear()
            _built[key] = _kernels[expr] = kernel
        got = kernel(operands, self, self._pool)
        # A fresh kernel took these very dtype objects: it never asks to be rebuilt.
        return None if got is _REPLAN else got

    def _evaluate(
        self, reads: Reads, expr: str, out: Tensor | None, backend: str, operands: dict[str, Any]
    ) -> Tensor:
        arrays: dict[str, Array] = {}
        dtypes: dict[str, DType] = {}
        shape: Shape | None = None
        for name, value in operands.items():
            arr, dt, sh = reads.operand(value, OP)
            if shape is None:
                shape = sh
            elif sh != shape:
                raise ValidationError(
                    OP,
                    f"operand {name!r} has shape {sh}, others have {shape}; fused operands "
                    "need equal shapes (broadcast explicitly with eng.broadcast_in_dim)",
                    kind="SHAPE_MISMATCH",
                    shapes=(shape, sh),
                )
            arrays[name] = arr
            dtypes[name] = dt
        # Tensors (and compact views) run in flat tiles; strided views in slabs of
        # the last axis.
        compact = all(a.flags.f_contiguous for a in arrays.values())
        threads = self._threads or os.cpu_count() or 1
        if backend == "auto":
            backend = _choose(expr, dtypes, shape, threads)
        prog = _program(expr, dtypes, backend)
        assert shape is not None  # _compile refuses expressions without operands
        pool = self._pool

        if backend == "numexpr":
            names = prog.inputs
            nex = prog.nex

            def nex_kernel(nd: Array) -> None:
                # numexpr evaluates the whole expression over nd's shape and writes
                # every element of out.
                nex(
                    *[arrays[n] for n in names],
                    out=nd,
                    order="K",
                    casting="safe",
                    ex_uses_vml=False,
                )

            return self._run(OP, shape, prog.dtype, nex_kernel, out, reads, in_place_ok=True)

        ordered = [arrays[name] for name in prog.inputs]

        def kernel(nd: Array) -> None:
            if compact:
                flat_in = [v.reshape(-1, order="F") for v in ordered]
                flat_out = nd.reshape(-1, order="F")
                total = flat_out.shape[0]
                _parallel(prog, pool, flat_in, flat_out, total, True, threads)
            else:
                total = nd.shape[-1] if nd.ndim else 1
                _parallel(prog, pool, ordered, nd, total, False, threads)

        if out is not None and prog.checked:
            # The checks run tile by tile, after earlier tiles were written: compute
            # into a pooled buffer (given back if a check fails) and copy into out=
            # only on success, so a refused expression leaves out= as it was.
            check_out(out, shape, prog.dtype, OP)
            return self._run_staged(OP, shape, prog.dtype, kernel, out, reads, in_place_ok=True)
        # In place (out= also an operand) is safe when the last step is one ufunc: a
        # tile's earlier steps only write registers, and a ufunc reads each element
        # before writing it. A final `where` writes in two passes, so it is not.
        in_place = compact and prog.instrs[-1][0] != "where"
        return self._run(OP, shape, prog.dtype, kernel, out, reads, in_place_ok=in_place)
