"""The code generator of the small path: Python source written once per expression
and operand dtypes (`_kernel_source`) that checks exactly these operands and hands
exactly these ufuncs to the compiled per-operation protocol (`_core`), the kernels
it built, and their caches."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtype import DType
from ...storage.host import HostBuffer
from ...tensor import Tensor
from .. import _core
from .compiler import _BINARY_FUNCS, _Program
from .programs import _program
from .tiles import _nonneg, _nonzero, _slot_code

#: Below this many elements, plain host operands run the program on the calling
#: thread (the small path's kernel, `_kernel_source`): over whole arrays below
#: `SMALL_SPLIT` elements, over `SMALL_TILE` tiles above; no thread hand-off, none of
#: the general path's bookkeeping. This is numpy's own eager evaluation without its
#: allocations (registers and output come from the pool, the last step ends in
#: place), so it is never slower than numpy beyond a fixed per-call cost. Measured
#: side by side from 128K to 1M elements, the tiled executor (slices, tiles, thread
#: hand-off) lost to numpy on + - * chains there (1.2-2x) while this path matched it;
#: from 1M numexpr's blocked threads win for + - * /.
SMALL = 1 << 20

#: The small path's kernels, one per expression (`_kernel_source`). The operand
#: names are those of the expression (an unused operand and an unknown name are
#: refused), so the expression alone keys the cache; the operands' dtypes are
#: checked by the kernel itself, and a kernel built for other dtypes says so
#: (`_REPLAN`) and is replaced by the one for these (`_built`, or a new one).
_kernels: dict[str, Any] = {}
#: Every kernel built, by (expression, operand names and numpy dtypes): a loop that
#: alternates dtypes swaps kernels in `_kernels` without building one again.
_built: dict[tuple[Any, ...], Any] = {}
#: What a kernel returns when an operand's dtype is not the one it was built for.
_REPLAN = object()
#: Elements per tile of the small path's tiled loop (`_kernel_source`, from
#: `SMALL_SPLIT` elements): 256 KiB per stream, so a tile's operands, register and
#: output stay in one core's L2 cache between steps. Measured side by side (kernels
#: alone, a shared 2-core machine with 2 MiB L2 per core, medians of 31): at 128K-512K
#: f64 elements, 32K tiles ran 4-6-op chains at 0.62-0.76 of numpy against 0.93-1.00
#: for the same ufuncs over whole arrays, and 2-op chains at 0.81-0.90 against
#: 0.93-0.96; 16K tiles were 2-5% slower and 8K tiles 10-20%; at 64K whole arrays won
#: (0.95 against 1.02 for a 4-op chain).
SMALL_TILE = 32768
SMALL_SPLIT = 4 * SMALL_TILE


#: ufuncs whose output numpy wants as ``out=`` (a third positional is deprecated).
_OUT_BY_KEYWORD = frozenset(_BINARY_FUNCS.values())


def _step_lines(instrs: list[tuple[Any, ...]], local: list[str], env: dict[str, Any]) -> list[str]:
    """Python statements running ``instrs`` (`_slot_code`) over the locals ``local``.

    ``local[slot]`` names each slot's array; every function and constant is bound
    in ``env`` under a generated name, so the source holds no text of the caller's.
    """
    lines = []
    for i, (kind, fn, args, dst) in enumerate(instrs):
        a = [local[s] for s in args]
        if kind == "ufunc":
            env[f"F{i}"] = fn
            if len(a) == 1:
                lines.append(f"F{i}({a[0]}, {local[dst]})")
            elif fn in _OUT_BY_KEYWORD:
                lines.append(f"F{i}({a[0]}, {a[1]}, out={local[dst]})")
            else:
                # Positional out: a keyword costs numpy one dispatch more.
                lines.append(f"F{i}({a[0]}, {a[1]}, {local[dst]})")
        elif kind == "where":
            lines.append(f"copyto({local[dst]}, {a[2]})")
            lines.append(f"copyto({local[dst]}, {a[1]}, where={a[0]})")
        elif kind == "copy":
            lines.append(f"copyto({local[dst]}, {a[0]})")
        else:  # "nonzero" / "nonneg": checks that raise
            lines.append(f"_{kind}({a[0]})")
    return lines


def _kernel_source(prog: _Program, numpy_dtypes: list[np.dtype[Any]], env: dict[str, Any]) -> str:
    """The source of the small path's kernel for ``prog`` and these operand dtypes.

    ``kernel(operands, eng, pool)`` returns a new pooled tensor (made by the compiled
    core, `_core.shaped`, `shaped2` or `shapedn`, with the generated ``body`` as its
    kernel), `_REPLAN` when an operand has another dtype, or None when the operands
    are not plain host tensors of one shape with 1 to `SMALL` - 1 elements, or one
    is being written (the general path takes those, and raises every error).
    Straight-line code: the checks and the ufunc calls of this one expression,
    nothing looked up or looped over per call but the tiles.
    """
    instrs, consts = _slot_code(prog)
    nin = len(prog.inputs)
    nreg = len(prog.reg_dtypes)
    out_slot = nin + nreg
    # The register the last step reads becomes the output itself (a fresh buffer,
    # never an operand, on this path): the chain then ends in place, as numpy's
    # temporary elision does, and one stream of memory traffic less. Only after a
    # ufunc step (one pass, each element read before written) of the result dtype.
    alias = -1
    kind, _, args, dst = instrs[-1]
    if kind == "ufunc" and dst == out_slot:
        for s in args:
            if nin <= s < dst and prog.reg_dtypes[s - nin] == prog.dtype.numpy:
                alias = s - nin
                break
    regs = [r for r in range(nreg) if r != alias]
    for i, name in enumerate(prog.inputs):
        env[f"N{i}"] = name
        env[f"D{i}"] = numpy_dtypes[i]
    for r in regs:
        env[f"R{r}"] = prog.reg_dtypes[r]
    env["RESULT"] = prog.dtype
    env["RESULT_NP"] = prog.dtype.numpy
    for k, value in enumerate(consts):
        env[f"C{k}"] = value
    xs = [f"x{i}" for i in range(nin)]
    ts = [f"t{i}" for i in range(nin)]
    ss = [f"s{i}" for i in range(nin)]
    const_names = [f"C{k}" for k in range(len(consts))]

    def names(inputs: list[str], reg: str, out: str) -> list[str]:
        return [
            *inputs,
            *(out if r == alias else f"{reg}{r}" for r in range(nreg)),
            out,
            *const_names,
        ]

    whole = _step_lines(instrs, names(xs, "r", "o"), env)
    tiled = _step_lines(instrs, names([f"y{i}" for i in range(nin)], "g", "q"), env)
    # Sizes are the module's own integers, written as literals (a global costs a
    # dictionary lookup per use).
    split, tile = int(SMALL_SPLIT), int(SMALL_TILE)
    either = " or "
    # The per-operation protocol is the compiled core's (engine/_core.pyx: pin, check
    # for a writer, the pooled output, the failure policy, unpin): `body` is its
    # kernel, the compiled expression over the pinned operands' flat arrays into the
    # output ``o`` (taken first, as the general path does: a loop gets its last
    # output's buffer back, since registers are given back before it is dropped).
    if nin == 1:
        head, call = "def body(x0, o, pool):", "shaped(body, t0, shape, n, RESULT, eng, pool)"
    elif nin == 2:
        head = "def body(x0, x1, o, pool):"
        call = "shaped2(body, t0, t1, shape, n, RESULT, eng, pool)"
    else:
        head = "def body(xs, o, pool):"
        call = f"shapedn(body, ({', '.join(ts)},), shape, n, RESULT, eng, pool)"
    src = [
        head,
        *([f"    {', '.join(xs)}, = xs"] if nin > 2 else []),
        "    n = len(o)",
        *([f"    m = n if n < {split} else {tile}"] if regs else []),
        *(
            line
            for r in regs
            for line in (
                f"    h{r} = pool.acquire(R{r}, m)",
                f"    r{r} = h{r} if len(h{r}) == m else h{r}[:m]",
            )
        ),
        # Every operand holds exactly n elements (plain host INVARIANT, equal shapes):
        # the last step writes every element of o (of each tile of it). A step that
        # raises leaves the registers unreturned: dropped, never pooled (the
        # traceback keeps this frame's writable views of them).
        f"    if n < {split}:",
        *(f"        {line}" for line in whole),
        "    else:",
        f"        for s in range(0, n, {tile}):",
        f"            e = s + {tile}",
        "            if e > n:",
        "                e = n",
        *(f"                g{r} = r{r}[: n - s]" for r in regs),
        *(["            else:"] if regs else []),
        *(f"                g{r} = r{r}" for r in regs),
        *(f"            y{i} = {xs[i]}[s:e]" for i in range(nin)),
        "            q = o[s:e]",
        *(f"            {line}" for line in tiled),
        *(f"    pool.recycle(h{r}, 0)" for r in regs),
        "",
        "",
        "def kernel(ops, eng, pool):",
        f"    if len(ops) != {nin}:",
        "        return None",
        "    try:",
        *(f"        {ts[i]} = ops[N{i}]" for i in range(nin)),
        "    except KeyError:",
        "        return None",
        f"    if {either.join(f'{t}.__class__ is not Tensor' for t in ts)}:",
        "        return None",
        *(f"    {ss[i]} = {ts[i]}._st" for i in range(nin)),
        f"    if {either.join(f'{s}.__class__ is not HostBuffer' for s in ss)}:",
        "        return None",
        "    shape = t0._shape",
    ]
    if nin > 1:
        src += [
            f"    if {either.join(f'{t}._shape != shape' for t in ts[1:])}:",
            "        return None",
        ]
    src += [
        # A buffer's flat array is fixed for its life: its dtype and length are read
        # before the core pins it.
        *(f"    {xs[i]} = {ss[i]}.flat" for i in range(nin)),
        f"    if {either.join(f'{xs[i]}.dtype is not D{i}' for i in range(nin))}:",
        "        return REPLAN",
        "    n = len(x0)",
        f"    if not 0 < n < {int(SMALL)}:",
        "        return None",
        f"    return {call}",
    ]
    return "\n".join(src) + "\n"


def _small_kernel(expr: str, dtypes: dict[str, DType], numpy_dtypes: dict[str, Any]) -> Any:
    """The small path's kernel for these operand dtypes (compiling the program if needed)."""
    prog = _program(expr, dtypes, "tiled")  # raises every expression error
    env: dict[str, Any] = {
        "Tensor": Tensor,
        "HostBuffer": HostBuffer,
        "shaped": _core.shaped,
        "shaped2": _core.shaped2,
        "shapedn": _core.shapedn,
        "REPLAN": _REPLAN,
        "copyto": np.copyto,
        "_nonzero": _nonzero,
        "_nonneg": _nonneg,
    }
    source = _kernel_source(prog, [numpy_dtypes[name] for name in prog.inputs], env)
    # INVARIANT: the source is built from generated names only (operand names,
    # functions and constants are values in env), never from the caller's text.
    exec(compile(source, "<tenferro evaluate kernel>", "exec"), env)
    return env["kernel"]
