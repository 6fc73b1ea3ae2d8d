"""Sliced tensor-network contraction, in-process or on a Dask cluster.

An optional part of tenferro (``pip install 'tenferro[distributed]'``: Dask
distributed and cotengra); ``import tenferro`` does not import it. See
docs/distributed.md.
"""

from __future__ import annotations

from ._report import ContractionReport, WorkerReport
from .contract import contract, sliced_tree

__all__ = ["ContractionReport", "WorkerReport", "contract", "sliced_tree"]
