"""The tiled executor: a program run over cache-sized tiles (`TILE` elements), each
step a numpy ufunc writing into a pooled per-worker register and the last step
writing the output tile; and the value checks of the integer steps."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ValidationError
from ...layout import shape_size
from ._shared import OP, Array
from .compiler import _Program

#: Elements per tile: 32768 x 8 bytes = 256 KiB per stream, so three operands, a
#: register and the output tile (1.25 MiB) stay in one core's 2 MiB L2 cache;
#: measured side by side on 16M f64 against 4096-65536 (`python -m tenferro bench
#: --only fusion`), 16K-32K were fastest and 64K about 10% slower.
TILE = 32768


def _nonzero(x: Array) -> None:
    """Refuse an integer divisor holding a zero (the "nonzero" step)."""
    if not np.all(x):
        raise ValidationError(
            OP,
            "integer division by zero; integer / is floor division and has "
            "no value for a zero divisor",
            kind="DIVISION_BY_ZERO",
        )


def _nonneg(x: Array) -> None:
    """Refuse a negative integer exponent (the "nonneg" step)."""
    if np.any(np.less(x, 0)):
        raise ValidationError(
            OP,
            "an integer cannot be raised to a negative power; convert to a float dtype first",
            kind="NEGATIVE_INTEGER_POWER",
        )


def _slot_code(prog: _Program) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """The program with every argument as an index into one per-tile slot list.

    Slots: the inputs (in ``prog.inputs`` order), the registers, the output tile,
    then the constants. Built once per program (programs are cached).
    """
    code = prog.slot_code
    if code is not None:
        return code
    nin = len(prog.inputs)
    index = {name: i for i, name in enumerate(prog.inputs)}
    out_slot = nin + len(prog.reg_dtypes)
    consts: list[Any] = []

    def slot(ref: tuple[Any, ...]) -> int:
        if ref[0] == "in":
            return index[ref[1]]
        if ref[0] == "reg":
            return nin + int(ref[1])
        if ref[0] == "out":
            return out_slot
        consts.append(ref[1])
        return out_slot + len(consts)

    instrs = [
        (kind, fn, tuple(slot(a) for a in args), None if dst is None else slot(dst))
        for kind, fn, args, dst in prog.instrs
    ]
    prog.slot_code = code = (instrs, consts)
    return code


def _run_tiles(
    prog: _Program,
    pool: Any,
    inputs: list[Array],
    out: Array,
    start: int,
    stop: int,
    flat_mode: bool,
) -> None:
    """Run the program over tiles [start, stop) (elements, or last-axis slabs)."""
    instrs, consts = _slot_code(prog)
    inner = 1 if flat_mode or not out.ndim else shape_size(out.shape[:-1])
    tile = max(1, TILE // max(inner, 1))
    span = min(tile, max(stop - start, 1))
    regs: list[Array] = []
    try:
        for npd in prog.reg_dtypes:
            regs.append(pool.acquire(npd, max(span * inner, 1)))
        for s in range(start, stop, tile):
            e = min(s + tile, stop)
            if not out.ndim:
                slots = [*inputs]
                out_t = out
            elif flat_mode:
                slots = [x[s:e] for x in inputs]
                out_t = out[s:e]
            else:
                slots = [x[..., s:e] for x in inputs]
                out_t = out[..., s:e]
            m = out_t.size
            if out_t.ndim == 1:
                slots += [r[:m] for r in regs]
            else:
                slots += [r[:m].reshape(out_t.shape, order="F") for r in regs]
            slots.append(out_t)
            slots += consts
            # Every operand has the tile's shape (or is a scalar), so each step writes
            # every element of its target; the last step writes the output tile, and
            # the tiles cover the output exactly.
            _exec(instrs, slots)
    except BaseException:
        # Dropped, never pooled: the traceback keeps this frame's writable views of
        # the registers (slots; see EngineBase._run).
        regs.clear()
        raise
    for owner in regs:
        pool.recycle(owner, 0)


def _exec(instrs: list[tuple[Any, ...]], slots: list[Any]) -> None:
    """Run a slot program once over ``slots`` (operands of one shape, or scalars)."""
    for kind, fn, args, dst in instrs:
        if kind == "ufunc":
            # Every "ufunc" step is a numpy ufunc of one or two operands (no unpacking
            # of a list per step: this loop is most of a small expression's cost).
            if len(args) == 2:
                fn(slots[args[0]], slots[args[1]], out=slots[dst])
            else:
                fn(slots[args[0]], out=slots[dst])
        elif kind == "where":
            target = slots[dst]
            np.copyto(target, slots[args[2]])
            np.copyto(target, slots[args[1]], where=slots[args[0]])
        elif kind == "copy":
            np.copyto(slots[dst], slots[args[0]])
        elif kind == "nonzero":
            _nonzero(slots[args[0]])
        else:
            _nonneg(slots[args[0]])
