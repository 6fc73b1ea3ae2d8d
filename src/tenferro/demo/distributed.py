"""`python -m tenferro distributed-demo`: a sliced lattice contraction on a LocalCluster.

Starts a local Dask cluster, contracts a 2D lattice network under a memory
budget that forces slicing, checks the value against the same contraction run
in this process, checks the budget held, and prints the report. Needs the
``distributed`` extra (from a checkout: ``pip install -e '.[distributed]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["run_distributed_demo"]


def run_distributed_demo(
    workers: int = 2, side: int = 4, bond: int = 8, out: Callable[[str], None] = print
) -> bool:
    """Run the demo; returns whether every check held (borrows nothing of the caller's)."""
    import distributed
    from rich.console import Console
    from rich.table import Table

    import tenferro as tfr
    from tenferro.bench.distributed import lattice
    from tenferro.distributed import contract, sliced_tree

    eq, arrays = lattice(side, bond)
    operands = [tfr.from_numpy(a) for a in arrays]  # adopts: no copy
    whole = sliced_tree(eq, *operands, memory_budget=1 << 40).max_size() * 8
    budget = whole // 8
    out(
        f"{side}x{side} lattice, bond {bond}: {len(operands)} tensors; the unsliced "
        f"contraction's largest intermediate is {whole} bytes, the budget {budget} bytes"
    )
    out(f"starting a LocalCluster with {workers} worker process(es) ...")
    cluster: Any = distributed.LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        with distributed.Client(cluster) as client:  # type: ignore[no-untyped-call]
            value, report = contract(
                eq, *operands, client=client, memory_budget=budget, return_report=True
            )
    finally:
        cluster.close()
    here = contract(eq, *operands, memory_budget=budget, progress=False)
    got, want = complex(value.to_numpy()), complex(here.to_numpy())
    same = bool(np.isclose(got, want, rtol=1e-10, atol=0.0))
    within = 0 < report.largest_intermediate_bytes <= budget

    table = Table(title="ContractionReport", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for key, val in (
        ("value (cluster)", f"{got.real:.12g}"),
        ("value (in-process)", f"{want.real:.12g}"),
        ("slices", str(report.slices)),
        ("sliced indices", " ".join(report.sliced_indices)),
        ("flops", f"{report.flops:,}"),
        ("largest intermediate", f"{report.largest_intermediate_bytes:,} B (budget {budget:,})"),
        ("transport", report.transport),
        ("bytes sent to workers", f"{report.bytes_sent_to_workers:,}"),
        ("tasks", str(report.tasks)),
        ("wall time", f"{report.wall_time_s:.2f} s"),
    ):
        table.add_row(key, val)
    for w in report.workers:
        table.add_row(
            f"worker {w.address}",
            f"{w.slices} slices, pool peak {w.peak_pool_bytes:,} B, hit rate {w.hit_rate:.1%}, "
            f"{w.operand_receipts} operand receipt(s)",
        )
    Console().print(table)
    out(f"{'ok' if same else 'FAILED'}: the cluster's value equals the in-process value")
    out(f"{'ok' if within else 'FAILED'}: every intermediate stayed within the budget")
    return same and within
