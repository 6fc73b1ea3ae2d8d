"""Where a small ``eng.evaluate`` call spends its time, piece by piece (issue 12).

Usage::

    python benchmarks/bench_evaluate_floor.py [--n 1024] [--rounds 15]

Times, interleaved round by round on the same F64 operands (the fusion bench's
``a * b + c``), each piece of a small-path call and what numpy does for it:

* eager numpy (``a * b + c``: two ufunc calls, each allocating its result);
* the two ufunc calls alone, into a given output (the work both must do);
* ``eng.evaluate`` as a user calls it;
* the method call with three keyword operands and the kernel cache lookup;
* the generated kernel alone (checks, pins, pooled output, the ufuncs);
* one pooled buffer taken and given back;
* a `Tensor` and its `HostBuffer` built around it and dropped.

and prints each piece's median (ns) with the floor: what any engine call that
returns a pooled tensor pays in pure Python (call + pool + tensor), against
numpy's own per-operation allocations (eager minus the bare ufuncs).
"""

from __future__ import annotations

import statistics
import sys
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import tenferro as tfr
from tenferro.engine import fusion
from tenferro.storage.host import HostBuffer

EXPR = "a * b + c"


class _Bare:
    """`evaluate`'s signature and its first two lines: the cost of reaching the kernel."""

    def evaluate(self, expr: str, /, *, out: Any = None, backend: str = "auto", **ops: Any) -> Any:
        if out is None and (backend == "auto" or backend == "tiled") and ops:
            return fusion._kernels.get(expr)
        return None


def pieces(n: int) -> dict[str, Callable[[], Any]]:
    """Every piece as a no-argument callable, on operands of ``n`` elements."""
    eng = tfr.CpuEngine()
    rng = np.random.default_rng(0)
    ts = [tfr.from_numpy(rng.random(n)) for _ in range(3)]
    a, b, c = ts
    an, bn, cn = (t.to_numpy() for t in ts)
    xa, xb, xc = (t._st.flat for t in ts)
    ops = {"a": a, "b": b, "c": c}
    eng.evaluate(EXPR, **ops)  # builds the kernel
    kernel = fusion._kernels[EXPR]
    pool = eng._pool
    f8 = np.dtype(np.float64)
    out = pool.acquire(f8, n)
    mul, add = np.multiply, np.add
    bare = _Bare()
    new = object.__new__

    def ufuncs() -> None:
        mul(xa, xb, out)
        add(out, xc, out)

    def kernel_alone() -> None:
        pool.recycle(kernel(ops, pool)[0], 0)

    def pooled() -> None:
        pool.recycle(pool.acquire(f8, n), 0)

    def tensor() -> None:
        t = new(tfr.Tensor)
        t._shape = (n,)
        t._dtype = tfr.DType.F64
        t._st = HostBuffer(out, out, None)
        t._moved = None

    return {
        "numpy eager": lambda: an * bn + cn,
        "the 2 ufuncs alone": ufuncs,
        "eng.evaluate": lambda: eng.evaluate(EXPR, a=a, b=b, c=c),
        "call + kwargs + cache get": lambda: bare.evaluate(EXPR, a=a, b=b, c=c),
        "kernel (incl. ufuncs, pool)": kernel_alone,
        "pool acquire + recycle": pooled,
        "Tensor + HostBuffer, dropped": tensor,
        "empty lambda": lambda: None,
    }


def main(argv: list[str]) -> int:
    n = int(argv[argv.index("--n") + 1]) if "--n" in argv else 1024
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 15
    fns = pieces(n)
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            best = min(timeit.repeat(f, number=2000, repeat=3)) / 2000
            samples[k].append(best * 1e9)
    m = {k: statistics.median(v) for k, v in samples.items()}
    for k, v in m.items():
        print(f"{k:30s} {v:8.0f} ns")
    empty = m["empty lambda"]
    floor = (
        m["call + kwargs + cache get"]
        + m["pool acquire + recycle"]
        + m["Tensor + HostBuffer, dropped"]
        - 3 * empty
    )
    work = m["the 2 ufuncs alone"]
    print(f"fixed cost of eng.evaluate (evaluate - ufuncs): {m['eng.evaluate'] - work:.0f} ns")
    print(f"numpy's own cost beyond the ufuncs (eager - ufuncs): {m['numpy eager'] - work:.0f} ns")
    print(f"floor of any pooled-tensor call (call + pool + tensor): {floor:4.0f} ns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
