"""Issue 12's table for two revisions of tenferro, measured in one run.

Usage::

    git archive <old-commit> src | tar -x -C /tmp/old
    python benchmarks/bench_revisions.py /tmp/old/src src [--rounds 5] [--only add,sum]

Each round starts one worker process per revision (alternating which goes
first), and every worker times its tenferro next to numpy and, when installed,
torch (one thread) on the same memory, interleaved, with medians. The report
gives each row's tenferro time and its ratios to numpy and torch, per revision,
as the median over the rounds. The machine's noise therefore hits both
revisions alike; the ratios are what to read, not the absolute times.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from typing import Any

from _revisions import alternate, median_ratio, median_time, shown

#: (row, elements) of the issue's table; the worker builds each case.
ROWS = [
    "add 16",
    "exp 16",
    "sum 16",
    "matmul 4x4",
    "transpose 4x4",
    "to_contiguous(transpose_view) 4x4",
    "einsum ij,jk->ik 4x4",
    "reshape_view 4x4",
    "slice_view 4x4",
    "tfr.add 16",
    "operator a + b 16",
    "operator a * 2.0 16",
    "tfr.exp 16",
    "tfr.sum 16",
    "tfr.sum axis=0 4x4",
    "tfr.matmul 4x4",
    "operator a @ b 4x4",
    "indexing x[0:2] 4x4",
    "tfr.permute_dims 4x4",
    "tfr.reshape 16",
    "add 4096",
    "exp 4096",
    "sum 4096",
    "transpose 64x64",
    "transpose 256x256",
    "transpose 2048x2048",
    "evaluate 2 ops 1M",
    "evaluate 4 ops 1M",
    "evaluate 4 ops 16M",
    "evaluate exp chain 16M",
    "steady add 64 MiB",
]


def worker(rows: list[str]) -> dict[str, dict[str, float]]:
    """Time ``rows`` with the tenferro on sys.path (run in a child process)."""
    import warnings

    import numpy as np

    import tenferro as tfr

    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None

    eng = tfr.CpuEngine(threads=1)
    rng = np.random.default_rng(0)

    def t_(shape: tuple[int, ...]) -> tuple[Any, Any, Any]:
        t = tfr.from_numpy(np.asfortranarray(rng.random(shape)))
        arr = t.to_numpy()
        th = None
        if torch is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                th = torch.from_numpy(arr)
        return t, arr, th

    def case(row: str) -> tuple[dict[str, Callable[[], Any]], int, int]:
        name, size = row.rsplit(" ", 1)
        fns: dict[str, Callable[[], Any]] = {}
        reps, inner = 15, 1000
        if name in ("add", "exp", "sum") and size.isdigit():
            n = int(size)
            (x, xn, xt), (y, yn, yt) = t_((n,)), t_((n,))
            inner = 2000 if n == 16 else 300
            if name == "add":
                fns = {"tenferro": lambda: eng.add(x, y), "numpy": lambda: np.add(xn, yn)}
                if torch is not None:
                    fns["torch"] = lambda: torch.add(xt, yt)
            elif name == "exp":
                fns = {"tenferro": lambda: eng.exp(x), "numpy": lambda: np.exp(xn)}
                if torch is not None:
                    fns["torch"] = lambda: torch.exp(xt)
            else:
                fns = {"tenferro": lambda: eng.reduce_sum(x), "numpy": lambda: np.sum(xn)}
                if torch is not None:
                    fns["torch"] = lambda: torch.sum(xt)
        elif name in ("matmul", "transpose", "to_contiguous(transpose_view)", "einsum ij,jk->ik"):
            side = int(size.split("x")[0])
            (m, mn, mt), (k, kn, kt) = t_((side, side)), t_((side, side))
            inner = 2000 if side <= 4 else (300 if side <= 64 else (20 if side <= 256 else 1))
            reps = 15 if side <= 256 else 5
            if name == "matmul":
                fns = {"tenferro": lambda: eng.matmul(m, k), "numpy": lambda: np.matmul(kn.T, mn.T)}
                if torch is not None:
                    # C-ordered twins made once, as numpy's .T views are: the per-call
                    # work is the product alone (torch's .T costs about 1 us a call).
                    kct, mct = kt.T, mt.T
                    fns["torch"] = lambda: torch.matmul(kct, mct)
            elif name == "einsum ij,jk->ik":
                fns = {
                    "tenferro": lambda: eng.einsum("ij,jk->ik", m, k),
                    "numpy": lambda: np.einsum("ij,jk->ik", mn, kn),
                }
                if torch is not None:
                    fns["torch"] = lambda: torch.einsum("ij,jk->ik", mt, kt)
            else:
                view = m.as_view().transpose_view((1, 0))
                tf = (
                    (lambda: eng.transpose(m, (1, 0)))
                    if name == "transpose"
                    else (lambda: eng.to_contiguous(view))
                )
                fns = {"tenferro": tf, "numpy": lambda: np.ascontiguousarray(mn)}
                if torch is not None:
                    fns["torch"] = lambda: mt.contiguous()
        elif name in ("reshape_view", "slice_view") or name.startswith(
            ("tfr.", "operator", "indexing")
        ):
            fns, inner = _namespace_case(name, size, t_, torch)
        elif name.startswith("evaluate"):
            n = (1 << 20) if size == "1M" else (1 << 24)
            (a, an, _), (b, bn, _), (c, cn, _) = t_((n,)), t_((n,)), t_((n,))
            expr, eager = {
                "evaluate 2 ops": ("a * b + c", lambda: an * bn + cn),
                "evaluate 4 ops": ("(a * b + c) * a - b", lambda: (an * bn + cn) * an - bn),
                "evaluate exp chain": ("exp(a + b) * c", lambda: np.exp(an + bn) * cn),
            }[name]
            fast = tfr.CpuEngine()  # the default threads, as a user gets them
            fns = {
                "tenferro": lambda: fast.evaluate(expr, a=a, b=b, c=c),
                "numpy": eager,
            }
            reps, inner = (9, 3) if n < (1 << 24) else (5, 1)
        elif name == "steady add 64":
            n = 8 << 20
            (a, an, _), (b, bn, _) = t_((n,)), t_((n,))
            steady = tfr.CpuEngine()
            fns = {"tenferro": lambda: steady.add(a, b), "numpy": lambda: np.add(an, bn)}
            reps, inner = 7, 2
        return fns, reps, inner

    out: dict[str, dict[str, float]] = {}
    for row in rows:
        fns, reps, inner = case(row)
        out[row] = median_time(fns, reps, inner)
    return out


def _namespace_case(
    name: str, size: str, t_: Callable[[tuple[int, ...]], Any], torch: Any
) -> tuple[dict[str, Callable[[], Any]], int]:
    """The rows of the namespace (``tfr.*``, operators, indexing) and of view transforms.

    numpy and torch do the same logical work on the same memory: a function or
    operator call for the elementwise, reduction and product rows, a view (no
    copy) for indexing, ``permute_dims`` and the view transforms.
    """
    import numpy as np

    import tenferro as tfr

    if size.isdigit():
        (x, xn, xt), (y, yn, yt) = t_((int(size),)), t_((int(size),))
    else:
        side = int(size.split("x")[0])
        (x, xn, xt), (y, yn, yt) = t_((side, side)), t_((side, side))
    fns: dict[str, Callable[[], Any]]
    th: Callable[[], Any] | None = None
    if name == "reshape_view":
        view = x.as_view()
        n = xn.size
        fns = {
            "tenferro": lambda: view.reshape_view((n,)),
            "numpy": lambda: xn.reshape(n, order="F"),
        }
        th = lambda: xt.T.reshape(n)  # noqa: E731 - torch's row-major twin of the F order
    elif name == "slice_view":
        view = x.as_view()
        fns = {
            "tenferro": lambda: view.slice_view((slice(0, 2), slice(None))),
            "numpy": lambda: xn[0:2, :],
        }
        th = lambda: xt[0:2, :]  # noqa: E731
    elif name == "tfr.add":
        fns = {"tenferro": lambda: tfr.add(x, y), "numpy": lambda: np.add(xn, yn)}
        th = lambda: torch.add(xt, yt)  # noqa: E731
    elif name == "operator a + b":
        fns = {"tenferro": lambda: x + y, "numpy": lambda: xn + yn}
        th = lambda: xt + yt  # noqa: E731
    elif name == "operator a * 2.0":
        fns = {"tenferro": lambda: x * 2.0, "numpy": lambda: xn * 2.0}
        th = lambda: xt * 2.0  # noqa: E731
    elif name == "tfr.exp":
        fns = {"tenferro": lambda: tfr.exp(x), "numpy": lambda: np.exp(xn)}
        th = lambda: torch.exp(xt)  # noqa: E731
    elif name == "tfr.sum":
        fns = {"tenferro": lambda: tfr.sum(x), "numpy": lambda: np.sum(xn)}
        th = lambda: torch.sum(xt)  # noqa: E731
    elif name == "tfr.sum axis=0":
        fns = {"tenferro": lambda: tfr.sum(x, axis=0), "numpy": lambda: np.sum(xn, axis=0)}
        th = lambda: torch.sum(xt, dim=0)  # noqa: E731
    elif name == "tfr.matmul":
        fns = {"tenferro": lambda: tfr.matmul(x, y), "numpy": lambda: np.matmul(xn, yn)}
        th = lambda: torch.matmul(xt, yt)  # noqa: E731
    elif name == "operator a @ b":
        fns = {"tenferro": lambda: x @ y, "numpy": lambda: xn @ yn}
        th = lambda: xt @ yt  # noqa: E731
    elif name == "indexing x[0:2]":
        fns = {"tenferro": lambda: x[0:2, :], "numpy": lambda: xn[0:2, :]}
        th = lambda: xt[0:2, :]  # noqa: E731
    elif name == "tfr.reshape":
        # A 1-D owner to 4 x 4 in row-major order: a view in all three.
        fns = {"tenferro": lambda: tfr.reshape(x, (4, 4)), "numpy": lambda: xn.reshape(4, 4)}
        th = lambda: xt.reshape(4, 4)  # noqa: E731
    else:  # tfr.permute_dims
        fns = {
            "tenferro": lambda: tfr.permute_dims(x, (1, 0)),
            "numpy": lambda: np.permute_dims(xn, (1, 0)),
        }
        th = lambda: torch.permute(xt, (1, 0))  # noqa: E731
    if torch is not None:
        fns["torch"] = th
    return fns, 2000


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--worker":
        print(json.dumps(worker(argv[1:])))
        return 0
    old, new = argv[0], argv[1]
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 5
    rows = ROWS
    if "--only" in argv:
        # Comma-separated substrings: the rows whose name contains one of them.
        wanted = argv[argv.index("--only") + 1].split(",")
        rows = [r for r in ROWS if any(w in r for w in wanted)]
    runs = alternate(__file__, old, new, rounds, rows)
    print(f"{'row':38s} {'':6s} {'tenferro':>11s} {'/numpy':>8s} {'/torch':>8s}")
    for row in rows:
        for label in ("before", "after"):
            per_round = runs[label]
            tf = statistics.median(x[row]["tenferro"] for x in per_round)
            np_r = median_ratio(per_round, row, "numpy")
            th_r = median_ratio(per_round, row, "torch")
            first = row if label == "before" else ""
            print(f"{first:38s} {label:6s} {shown(tf):>11s} {np_r:>8s} {th_r:>8s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
