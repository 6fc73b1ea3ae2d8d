"""The einsum benchmark instances, each with its given path, against opt_einsum (and torch).

Usage: ``python benchmarks/bench_einsum.py [--quick] [--plot FILE.png] [NAME ...]``.
One thread; every value is checked against ``opt_einsum.contract`` with the same
path before it is timed; see `tenferro.bench.einsum`. The full run takes
minutes (opt_einsum needs about a minute on each tensornetwork instance);
``--quick`` skips the slow instances.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tenferro.bench.einsum import run, selected
from tenferro.bench.harness import format_seconds


def _plot(results: list[Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.name for r in results]
    ys = range(len(results))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(results) + 1.5))
    ax.barh(ys, [r.ratio("tenferro", "opt_einsum") for r in results], label="tenferro / opt_einsum")
    if all("torch" in r.medians for r in results):
        ax.scatter([r.ratio("tenferro", "torch") for r in results], ys, label="tenferro / torch")
    ax.scatter(
        [r.targets[0].max_ratio for r in results], ys, marker="|", s=300, color="k", label="target"
    )
    ax.set_yticks(list(ys), names, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("time ratio (lower is better), one thread, same opt_flops path")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    plot = argv[argv.index("--plot") + 1] if "--plot" in argv else None
    names = [a for a in argv if not a.startswith("--") and a != plot]
    todo = selected(quick, names)
    # Full instance names even when the output is not a terminal (a log file, CI).
    console = Console(width=None if sys.stdout.isatty() else 160)
    with Progress(
        TextColumn("[bold]einsum[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=len(todo))
        started: list[str] = []

        def on_instance(name: str) -> None:
            if started:
                progress.advance(task)
            started.append(name)
            progress.update(task, description=name)

        results = run(quick, [i["name"] for i in todo], on_instance)
    table = Table(title="einsum benchmark, one thread, opt_flops path (ratio: tenferro / other)")
    for col in ("instance", "tenferro", "opt_einsum", "ratio", "target", "torch", "peak/live mem"):
        table.add_column(col, no_wrap=True)
    for r in results:
        ratio = r.ratio("tenferro", "opt_einsum")
        limit = r.targets[0].max_ratio
        table.add_row(
            r.name,
            format_seconds(r.medians["tenferro"]),
            format_seconds(r.medians["opt_einsum"]),
            f"[{'green' if ratio <= limit else 'red'}]{ratio:.3f}[/]",
            f"<= {limit:g}",
            f"{r.ratio('tenferro', 'torch'):.3f}" if "torch" in r.medians else "-",
            f"{r.extra['memory_ratio']:.2f}",
        )
    console.print(table)
    if plot:
        _plot(results, plot)
        console.print(f"wrote {plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
