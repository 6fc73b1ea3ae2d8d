"""Sliced tensor-network contraction, in-process or on a Dask cluster.

An optional part of tenferro (from a checkout: ``pip install -e '.[distributed]'``,
Dask distributed and cotengra); ``import tenferro`` does not import it. See
docs/distributed.md.
"""

from __future__ import annotations

from ._contract import contract, sliced_tree
from ._report import ContractionReport, WorkerReport

__all__ = ["ContractionReport", "WorkerReport", "contract", "sliced_tree"]
