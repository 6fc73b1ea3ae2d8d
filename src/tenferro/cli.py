"""The command line: ``python -m tenferro {demo,bench,distributed-demo,info}`` (also ``tenferro``).

Errors print one line and exit non-zero; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

#: Benchmark modules in `tenferro.bench`, in the order they run.
BENCH_MODULES = (
    "storage",
    "engine",
    "percall",
    "fusion",
    "pool",
    "domains",
    "sweep",
    "namespace",
    "einsum",
    "linalg",
    "distributed",
)


class CliError(Exception):
    """A user-facing command-line error (printed as one line)."""


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo()
    return 0


def _distributed_demo(args: argparse.Namespace) -> int:
    from .demo.distributed import run_distributed_demo

    for extra in ("distributed", "cotengra"):
        if importlib.util.find_spec(extra) is None:
            raise CliError(
                f"distributed-demo needs {extra}; from a checkout of tenferro: "
                "pip install -e '.[distributed]' (tenferro is not on the package index)"
            )
    ok = run_distributed_demo(workers=args.workers, side=args.side, bond=args.bond)
    return 0 if ok else 1


def _load_bench_modules(names: Sequence[str]) -> list[tuple[str, Callable[..., Any]]]:
    found = []
    for name in names:
        try:
            module = importlib.import_module(f"tenferro.bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("tenferro"):
                continue  # a bench module that this build does not have
            raise
        found.append((name, module.run))
    return found


def _bench(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from .bench import harness
    from .bench.harness import format_seconds, format_spread

    if args.plot:
        _require_matplotlib()
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path:
            _check_writable(option, path)
    only = args.only.split(",") if args.only else list(BENCH_MODULES)
    unknown = sorted(set(only) - set(BENCH_MODULES))
    if unknown:
        raise CliError(f"unknown benchmark group(s) {unknown}; choose from {list(BENCH_MODULES)}")
    console = Console(stderr=True)
    results = []
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.fields[module]}[/]"),
        TextColumn("{task.completed} cases"),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=None, module="")

        def on_case(name: str) -> None:
            progress.update(task, description=name, advance=1)

        harness.set_progress(on_case)
        try:
            for name, run in _load_bench_modules(only):
                progress.update(task, module=name)
                results.extend(run(quick=args.quick))
        finally:
            harness.set_progress(None)

    table = Table(
        title="tenferro benchmarks (medians; ratio = tenferro / baseline, median of paired"
        " repetitions, with its interquartile range)"
    )
    # The torch column appears when some case timed torch (installed, never required).
    with_torch = any("torch" in r.medians and "tenferro" in r.medians for r in results)
    columns = ["case", "medians", "target", "ratio", ""]
    if with_torch:
        columns.append("tenferro / torch")
    for col in columns:
        table.add_column(col)
    for r in results:
        meds = "  ".join(f"{k} {format_seconds(v)}" for k, v in r.medians.items())
        vs_torch = (
            [f"{r.ratio('tenferro', 'torch'):.3f}" if "torch" in r.medians else ""]
            if with_torch
            else []
        )
        checks = r.target_results()
        if not checks:
            # A case checked on something other than time says so in its "note".
            table.add_row(r.name, meds, str(r.extra.get("note", "")), "", "", *vs_torch)
        for i, (t, ratio, ok) in enumerate(checks):
            table.add_row(
                r.name if i == 0 else "",
                meds if i == 0 else "",
                t.describe(),
                f"{ratio:.3f}{format_spread(r.ratio_spread(t.contender, t.baseline))}",
                "[green]met[/]" if ok else "[red]missed[/]",
                *(vs_torch if i == 0 else [""] * len(vs_torch)),
            )
    Console().print(table)
    if args.json:
        payload = {
            "environment": _environment(),
            "quick": args.quick,
            "results": [r.as_dict() for r in results],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2))
        console.print(f"wrote {args.json}")
    if args.plot:
        _plot(results, args.plot)
        console.print(f"wrote {args.plot}")
    lines = missed_target_lines(results)
    if lines:
        console.print(f"{len(lines)} target(s) missed on this machine:")
        for line in lines:
            console.print(f"  - {line}", markup=False, highlight=False)
    return 0


def _machine_load() -> str:
    """The 1-minute load average against the CPU count, in words ("" where unknown)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return ""
    cpus = os.cpu_count() or 1
    busy = load > 0.75 * cpus
    return f"load average {load:.1f} on {cpus} CPU(s)" + (
        ": other processes were running, so timings are noisy" if busy else ""
    )


def missed_target_lines(results: Sequence[Any]) -> list[str]:
    """One plain line per missed target: the case, the ratio against the limit, and why.

    The reasons given are what the run measured: the paired ratios' interquartile
    range reaching the target (noise, not a real miss), the machine's load, and the
    case's own note; otherwise the miss is beyond the measured spread.
    """
    load = _machine_load()
    out = []
    for r in results:
        for t, ratio, ok in r.target_results():
            if ok:
                continue
            spread = r.ratio_spread(t.contender, t.baseline)
            if spread is not None and spread[0] <= t.max_ratio:
                why = (
                    f"within this run's noise: the paired ratios' interquartile range "
                    f"{spread[0]:.3g}-{spread[1]:.3g} reaches the target; rerun on a quiet machine"
                )
            else:
                rng = "" if spread is None else f" (IQR {spread[0]:.3g}-{spread[1]:.3g})"
                why = (
                    f"{t.contender} is {ratio / t.max_ratio:.2f}x slower than the target allows, "
                    f"beyond the measured spread{rng}"
                )
            if load:
                why += f"; {load}"
            note = r.extra.get("note")
            if note:
                why += f"; {note}"
            out.append(
                f"{r.name}: {t.contender}/{t.baseline} = {ratio:.3f}, target <= "
                f"{t.max_ratio:g} ({why})"
            )
    return out


def _check_writable(option: str, path: str) -> None:
    """Refuse an output path before the benchmarks run, not after."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise CliError(f"{option} {path}: is a folder; give a file name")
    if not folder.is_dir():
        raise CliError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise CliError(f"{option} {path}: folder {folder} is not writable")


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        raise CliError("--plot needs matplotlib: pip install 'tenferro[plot]'") from None


def _short(label: str, width: int = 58) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def _plot(results: Sequence[Any], path: str) -> None:
    """Sweeps (time against size) on top, then one panel of targets per benchmark group.

    Each target is drawn as its ratio divided by the ratio it must stay under, on
    one log axis whose line at 1 is every target: left of it met (green), right of
    it missed (red), with the ratio and the limit written at the bar. Labels are
    the case names, shortened; the group is the panel's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    sweeps: dict[str, list[Any]] = {}
    targets: dict[str, list[tuple[str, Any, float]]] = {}
    for r in results:
        if r.group.startswith("sweep"):
            sweeps.setdefault(r.group, []).append(r)
        for t, ratio, _ in r.target_results():
            targets.setdefault(r.group, []).append((r.name, t, ratio))
    if not sweeps and not targets:
        raise CliError("nothing to plot: the selected benchmarks produced no sweep or target")
    sweep_h = 3.6 if sweeps else 0.0
    heights = [0.9 + 0.26 * len(rows) for rows in targets.values()]
    fig = plt.figure(figsize=(13.0, sweep_h + sum(heights) + 0.4), layout="constrained")
    ratios = ([sweep_h] if sweeps else []) + heights
    figs = fig.subfigures(len(ratios), 1, height_ratios=ratios, squeeze=False)[:, 0]
    k = 0
    if sweeps:
        axes = figs[0].subplots(1, len(sweeps), squeeze=False)[0]
        for ax, (group, rs) in zip(axes, sorted(sweeps.items()), strict=True):
            rs = sorted(rs, key=lambda r: r.size)
            for contender in rs[0].medians:
                ax.plot(
                    [r.size for r in rs],
                    [r.medians[contender] * 1e6 for r in rs],
                    marker="o",
                    label=contender,
                )
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("size (elements)" if "add" in group else "matrix side")
            ax.set_ylabel("median time (µs)")
            ax.set_title(group)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        k = 1
    for sub, (group, rows) in zip(figs[k:], targets.items(), strict=True):
        ax = sub.subplots()
        rel = [ratio / t.max_ratio for _, t, ratio in rows]
        ys = list(range(len(rows)))[::-1]
        ax.barh(ys, rel, color=["tab:green" if v <= 1 else "tab:red" for v in rel], height=0.7)
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_xscale("log")
        lo = min([*rel, 0.5])
        hi = max([*rel, 2.0])
        ax.set_xlim(lo / 1.5, hi * 3.0)
        labels = [_short(f"{name} ({t.contender}/{t.baseline})") for name, t, _ in rows]
        ax.set_yticks(ys, labels, fontsize=8)
        for y, v, (_, t, ratio) in zip(ys, rel, rows, strict=True):
            ax.text(v * 1.05, y, f"{ratio:.3g} (≤ {t.max_ratio:.3g})", va="center", fontsize=7)
        ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(f"{group}: time ratio / its target (≤ 1 met, green)", fontsize=10)
        ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _environment() -> dict[str, Any]:
    import numpy as np
    from threadpoolctl import threadpool_info

    from . import __version__

    return {
        "tenferro": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "threadpools": [
            {
                k: v
                for k, v in p.items()
                if k
                in ("internal_api", "version", "num_threads", "threading_layer", "architecture")
            }
            for p in threadpool_info()
        ],
    }


def _info(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    env = _environment()
    if args.json:
        libraries: dict[str, str | None] = {}
        for lib in ("opt_einsum", "numexpr", "threadpoolctl", "scipy"):
            try:
                libraries[lib] = str(getattr(importlib.import_module(lib), "__version__", "?"))
            except ModuleNotFoundError:
                libraries[lib] = None
        payload = {
            **env,
            "libraries": libraries,
            "engine": _engine_info(),
            "domains": _domain_info(),
        }
        print(json.dumps(payload, indent=2))
        return 0
    console = Console()
    table = Table(title="tenferro info", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for key in ("tenferro", "python", "numpy", "machine", "cpus"):
        table.add_row(key, str(env[key]))
    for lib in ("opt_einsum", "numexpr", "threadpoolctl"):
        try:
            mod = importlib.import_module(lib)
            table.add_row(lib, str(getattr(mod, "__version__", "?")))
        except ModuleNotFoundError:
            table.add_row(lib, "not installed")
    for pool in env["threadpools"]:
        table.add_row(
            f"threads: {pool.get('internal_api')}",
            f"{pool.get('num_threads')} threads, {pool.get('version') or ''} "
            f"{pool.get('architecture') or ''}".strip(),
        )
    for key, value in _engine_info().items():
        table.add_row(key, value)
    for key, value in _domain_info().items():
        table.add_row(key, value)
    console.print(table)
    return 0


def _engine_info() -> dict[str, str]:
    try:
        from .engine import default_engine
    except ImportError:
        return {"engine": "not available"}
    eng = default_engine()
    stats = eng.buffer_pool_stats()
    from .engine.pool import ENV_LIMIT

    env_value = os.environ.get(ENV_LIMIT)
    return {
        "engine": type(eng).__name__,
        "pool limit": f"{eng.buffer_pool_limit_bytes} bytes"
        + (f" ({ENV_LIMIT}={env_value})" if env_value else ""),
        "pool retained": f"{stats.buffers} buffers, {stats.capacity_bytes} bytes",
    }


def _domain_info() -> dict[str, str]:
    out = {}
    try:
        from .domains import SharedMemoryDomain  # noqa: F401

        shm = Path("/dev/shm")
        out["domain: SharedMemoryDomain"] = (
            "available (POSIX shared memory)" if shm.is_dir() else "no /dev/shm on this machine"
        )
    except ImportError:
        out["domain: SharedMemoryDomain"] = "not available"
    out["devices"] = "no accelerator provider (CUDA tensors are not built into this release)"
    return out


def _build_parser() -> argparse.ArgumentParser:
    # --debug is accepted before or after the command (a parent parser on both levels;
    # SUPPRESS keeps the subcommand's default from overwriting the top level's value).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors"
    )
    parser = argparse.ArgumentParser(
        prog="tenferro",
        description="tenferro: explicit, checked memory ownership for tensors",
        parents=[common],
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"tenferro {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", parents=[common], help="walk the main line; every printed fact is checked"
    )
    demo.set_defaults(func=_demo)
    bench = sub.add_parser(
        "bench", parents=[common], help="benchmarks side by side with numpy and opt_einsum"
    )
    bench.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    bench.add_argument("--plot", metavar="FILE.png", help="write a plot of time against size")
    bench.add_argument("--json", metavar="FILE", help="write the results as JSON")
    bench.add_argument(
        "--only", metavar="GROUPS", help=f"comma-separated subset of {','.join(BENCH_MODULES)}"
    )
    bench.set_defaults(func=_bench)
    ddemo = sub.add_parser(
        "distributed-demo",
        parents=[common],
        help="a sliced lattice contraction on a local Dask cluster (needs the distributed extra)",
    )
    ddemo.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ddemo.add_argument("--side", type=int, default=4, help="lattice side (default 4)")
    ddemo.add_argument("--bond", type=int, default=8, help="bond dimension (default 8)")
    ddemo.set_defaults(func=_distributed_demo)
    info = sub.add_parser(
        "info", parents=[common], help="versions, BLAS threads, pool settings, domains"
    )
    info.add_argument("--json", action="store_true", help="print the facts as JSON")
    info.set_defaults(func=_info)
    return parser


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its message with runs of whitespace collapsed."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"tenferro {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        print(f"tenferro {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
