"""`ContractionReport`: what one distributed contraction did and cost."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ContractionReport", "WorkerReport"]


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """One worker's share of a contraction (``address`` is ``"in-process"`` without a client).

    * ``slices``: slices this worker ran (a rerun after a failure counts again);
    * ``max_intermediate_bytes``: the largest intermediate it allocated, measured;
    * ``peak_pool_bytes``: the most its engine's pool retained after a slice (all of a
      slice's intermediates are back in the pool then: the slice's working set);
    * ``pool_hits`` / ``pool_misses`` / ``hit_rate``: its pool's requests during this
      contraction, served from a retained buffer or newly allocated;
    * ``operand_receipts``: how many operand payloads arrived in this process;
    * ``bytes_copied``: bytes of named copies it made to hold the operands (a
      read-only received frame, or the host copy of a shared-memory operand).
    """

    address: str
    pid: int
    slices: int
    max_intermediate_bytes: int
    peak_pool_bytes: int
    pool_hits: int
    pool_misses: int
    operand_receipts: int
    bytes_copied: int

    @property
    def hit_rate(self) -> float:
        """``pool_hits / (pool_hits + pool_misses)``; 1.0 when the pool was not asked."""
        total = self.pool_hits + self.pool_misses
        return 1.0 if total == 0 else self.pool_hits / total


@dataclass(frozen=True, slots=True)
class ContractionReport:
    """What `tenferro.distributed.contract` did (``return_report=True``).

    * ``slices``, ``sliced_indices``: how the contraction was cut; each slice fixes
      one value of every sliced index and the slices' results are summed;
    * ``flops``: cotengra's count for all slices together;
    * ``planned_intermediate_bytes``: the sliced tree's largest intermediate;
      ``largest_intermediate_bytes``: the largest one actually allocated, on any
      worker; both at most ``memory_budget``;
    * ``transport``: ``"in-process"``, ``"scatter"`` (operands pickled to each
      worker once) or ``"shared_memory"`` (each worker attached a `ShareHandle`);
    * ``bytes_sent_to_workers``: payload bytes the client sent (every operand to
      every worker, once; a shared-memory handle is a few hundred bytes);
    * ``tasks``: slice-group tasks plus pairwise addition tasks;
    * ``workers``: one `WorkerReport` per worker that was alive at the end;
    * ``shared_segments``: names of the shared-memory segments used (all removed
      when `contract` returns);
    * ``wall_time_s``: from the call to the result, planning included.
    """

    slices: int
    sliced_indices: tuple[str, ...]
    flops: int
    memory_budget: int
    planned_intermediate_bytes: int
    largest_intermediate_bytes: int
    transport: str
    bytes_sent_to_workers: int
    tasks: int
    workers: tuple[WorkerReport, ...]
    shared_segments: tuple[str, ...]
    wall_time_s: float

    @property
    def peak_pool_bytes(self) -> int:
        """The largest per-worker ``peak_pool_bytes``."""
        return max((w.peak_pool_bytes for w in self.workers), default=0)
