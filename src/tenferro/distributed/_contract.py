"""`contract`: a sliced tensor-network contraction, in-process or on a Dask cluster."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, Literal, overload

from ..domains import SharedMemoryDomain
from ..engine import default_engine
from ..errors import RuntimeStateError, ValidationError
from ..tensor import Tensor
from ..view import TensorView
from ._plan import SlicePlan, build_plan, check_operands, parse_equation
from ._plan import sliced_tree as _sliced_tree
from ._report import ContractionReport, WorkerReport
from ._slices import SliceStats, run_slices

__all__ = ["contract", "sliced_tree"]

_OP = "tenferro.distributed.contract"
_TRANSPORTS = ("auto", "scatter", "shared_memory")
#: Slice groups per worker thread: enough to even out the load (and to lose little
#: when a worker dies), few enough that task overhead stays small.
_GROUPS_PER_THREAD = 4
#: `contract`'s default ``timeout`` (seconds): an hour. A stopped or hung worker
#: must not block the caller forever; a contraction that needs longer passes more
#: (or None, no limit).
DEFAULT_TIMEOUT_S = 3600.0
#: How long a failed contraction waits for the workers to forget its operands (a
#: stopped worker never answers; the others have by then).
_FORGET_TIMEOUT_S = 5.0


def sliced_tree(eq: str, *operands: Tensor, memory_budget: int, optimize: Any = "greedy") -> Any:
    """The cotengra `ContractionTree` `contract` would use (borrows nothing, copies nothing).

    Pass it back as ``optimize=`` to contract along exactly this tree, or use it with
    cotengra directly (``tree.contract_slice(arrays, i)``).
    """
    inputs, output = parse_equation(eq, operands)
    dtype, sizes = check_operands(inputs, operands)
    return _sliced_tree(inputs, output, sizes, dtype, memory_budget, optimize)


@overload
def contract(
    eq: str,
    *operands: Tensor | TensorView,
    client: Any = None,
    memory_budget: int = 1 << 30,
    optimize: Any = "greedy",
    progress: bool = True,
    return_report: Literal[False] = False,
    transport: str = "auto",
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> Tensor: ...
@overload
def contract(
    eq: str,
    *operands: Tensor | TensorView,
    client: Any = None,
    memory_budget: int = 1 << 30,
    optimize: Any = "greedy",
    progress: bool = True,
    return_report: Literal[True],
    transport: str = "auto",
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> tuple[Tensor, ContractionReport]: ...
@overload
def contract(
    eq: str,
    *operands: Tensor | TensorView,
    client: Any = None,
    memory_budget: int = 1 << 30,
    optimize: Any = "greedy",
    progress: bool = True,
    return_report: bool,
    transport: str = "auto",
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> Tensor | tuple[Tensor, ContractionReport]: ...
def contract(
    eq: str,
    *operands: Tensor | TensorView,
    client: Any = None,
    memory_budget: int = 1 << 30,
    optimize: Any = "greedy",
    progress: bool = True,
    return_report: bool = False,
    transport: str = "auto",
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> Tensor | tuple[Tensor, ContractionReport]:
    """``einsum(eq, *operands)`` as a sum of slices, each within ``memory_budget`` bytes.

    Ownership: **borrows** the operands (reads them; never writes or moves them);
    a view operand (what ``tfr.asarray`` makes of a C-ordered array, a transpose, a
    slice) is first copied into a column-major tensor (named, counted). Returns a
    new host `Tensor` (with ``return_report=True``: ``(tensor, ContractionReport)``).

    cotengra finds a contraction tree and the summed indices to slice so that no
    intermediate exceeds ``memory_budget`` bytes (``optimize``: a cotengra preset
    such as ``"greedy"`` or ``"auto"``, an optimizer, or a `ContractionTree`, e.g.
    from `sliced_tree`). Without a ``client`` the slices run here on the calling
    thread's default engine. With a Dask ``client`` every operand goes to every
    worker once (``transport="scatter"``: pickled; ``"shared_memory"``: a
    `ShareHandle` to a `SharedMemoryDomain` copy, for workers on this host;
    ``"auto"`` picks shared memory when every worker is on this host), groups of
    slices run on one long-lived `CpuEngine` per worker, partial sums are added
    pairwise on the workers and only the total comes back.

    Raises `ValidationError` (bad equation, operand count, shapes or dtypes, a
    budget no slicing meets: kind ``BUDGET_UNREACHABLE``) or `RuntimeStateError`
    (a closed client or one without workers) before anything is sent.

    On a cluster, ``timeout`` (seconds, default `DEFAULT_TIMEOUT_S` = one hour;
    None: no limit) bounds the whole call: past it, the contraction's tasks are
    cancelled and `RuntimeStateError` kind ``TIMEOUT`` is raised (a stopped or
    hung worker cannot block the caller forever). Losing every worker that held
    the operands (kind ``WORKERS_LOST``) or the scheduler (``SCHEDULER_LOST``)
    mid-contraction also raises `RuntimeStateError`, saying what happened;
    losing some workers does not (their slices run again elsewhere).

    >>> import numpy as np, tenferro as tfr
    >>> from tenferro.distributed import contract
    >>> ring = [tfr.from_numpy(np.full((16, 16), 0.5, order="F")) for _ in range(4)]
    >>> t, report = contract("ab,bc,cd,da->", *ring, memory_budget=512, progress=False,
    ...                      return_report=True)
    >>> float(t.to_numpy()), report.slices, report.largest_intermediate_bytes <= 512
    (4096.0, 16, True)
    """
    start_time = time.perf_counter()
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
    ):
        raise ValidationError(
            _OP,
            f"timeout must be a positive number of seconds or None, got {timeout!r}",
            kind="INVALID_ARGUMENT",
        )
    if transport not in _TRANSPORTS:
        raise ValidationError(
            _OP,
            f"transport must be one of {_TRANSPORTS}, got {transport!r}",
            kind="INVALID_ARGUMENT",
        )
    plan, tree = build_plan(eq, operands, memory_budget, optimize)
    operands = _owners(operands)
    sliced = tuple(ix for ix, _ in plan.sliced)
    if client is None:
        result, workers = _contract_here(plan, operands, progress)
        report = ContractionReport(
            slices=plan.nslices,
            sliced_indices=sliced,
            flops=plan.flops,
            memory_budget=memory_budget,
            planned_intermediate_bytes=plan.max_intermediate_bytes,
            largest_intermediate_bytes=workers[0].max_intermediate_bytes,
            transport="in-process",
            bytes_sent_to_workers=0,
            tasks=0,
            workers=workers,
            shared_segments=(),
            wall_time_s=time.perf_counter() - start_time,
        )
    else:
        result, report = _contract_on(
            client, plan, operands, progress, transport, memory_budget, start_time, timeout
        )
    del tree
    return (result, report) if return_report else result


def _owners(operands: tuple[Any, ...]) -> tuple[Tensor, ...]:
    """Each operand as a column-major tensor: a view (``tfr.asarray`` of a C-ordered
    array, a transpose, a slice) becomes a named, counted copy of its elements
    (refused under `forbid_copies`); tensors are used as they are."""
    return tuple(
        t
        if isinstance(t, Tensor)
        else t._materialise(f"{_OP} (view operand {k} made column-major)")
        for k, t in enumerate(operands)
    )


def _groups(nslices: int, ngroups: int) -> list[tuple[int, int]]:
    """``ngroups`` contiguous ranges covering ``range(nslices)``, sizes within one."""
    ngroups = max(1, min(ngroups, nslices))
    q, r = divmod(nslices, ngroups)
    out, start = [], 0
    for g in range(ngroups):
        stop = start + q + (g < r)
        out.append((start, stop))
        start = stop
    return out


@contextmanager
def _progress_bar(enabled: bool, total: int) -> Iterator[Callable[[int], None]]:
    if not enabled:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[bold]contract[/] slices",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=total)
        yield lambda n: bar.advance(task, n)


def _contract_here(
    plan: SlicePlan, operands: tuple[Tensor, ...], progress: bool
) -> tuple[Tensor, tuple[WorkerReport, ...]]:
    eng = default_engine()
    stats = SliceStats()
    before = eng.buffer_pool_cache_stats()
    with _progress_bar(progress, plan.nslices) as advance:
        partials = [
            run_slices(eng, plan, operands, a, b, stats, lambda: advance(1))
            for a, b in _groups(plan.nslices, _GROUPS_PER_THREAD)
        ]
    # The same pairwise tree the workers use, here on one engine.
    while len(partials) > 1:
        nxt = [eng.add(partials[k], partials[k + 1]) for k in range(0, len(partials) - 1, 2)]
        if len(partials) % 2:
            nxt.append(partials[-1])
        partials = nxt
    after = eng.buffer_pool_cache_stats()
    worker = WorkerReport(
        address="in-process",
        pid=os.getpid(),
        slices=stats.slices,
        max_intermediate_bytes=stats.max_intermediate_bytes,
        peak_pool_bytes=stats.peak_pool_bytes,
        pool_hits=after.hits - before.hits,
        pool_misses=after.misses - before.misses,
        operand_receipts=0,
        bytes_copied=0,
    )
    return partials[0], (worker,)


def _check_client(client: Any) -> dict[str, int]:
    """Each worker's thread count; refuses a closed client or one without workers."""
    status = getattr(client, "status", None)
    if status != "running":
        raise RuntimeStateError(
            _OP,
            f"the Dask client is {status!r}, not running; pass an open "
            "distributed.Client (or client=None to contract in this process)",
            kind="CLIENT_CLOSED",
        )
    workers: dict[str, int] = client.nthreads()  # asks the scheduler now
    if not workers:
        raise RuntimeStateError(
            _OP,
            "the Dask cluster has no workers; start some (or wait with "
            "client.wait_for_workers) first",
            kind="NO_WORKERS",
        )
    return workers


def _cluster_failure(client: Any, exc: BaseException, timeout: float | None) -> RuntimeStateError:
    """The typed error for a contraction the cluster could not finish (``exc``: Dask's)."""
    if isinstance(exc, TimeoutError):
        return RuntimeStateError(
            _OP,
            f"the contraction did not finish within timeout={timeout} s (a stopped, hung or "
            "overloaded worker?); its tasks were cancelled. Check the cluster, or pass a "
            "larger timeout (None: no limit)",
            kind="TIMEOUT",
        )
    why = f"{type(exc).__name__}: {exc}"
    if getattr(client, "status", None) != "running":
        return RuntimeStateError(
            _OP,
            f"the Dask scheduler went away during the contraction ({why}); the partial "
            "results are lost. Restart the cluster and call contract again",
            kind="SCHEDULER_LOST",
        )
    return RuntimeStateError(
        _OP,
        f"the Dask workers holding the operands or partial sums died during the "
        f"contraction ({why}); with every copy of that data gone, nothing could be "
        "resumed. Check the workers (memory limits, crashes) and call contract again",
        kind="WORKERS_LOST",
    )


def _contract_on(
    client: Any,
    plan: SlicePlan,
    operands: tuple[Tensor, ...],
    progress: bool,
    transport: str,
    memory_budget: int,
    start_time: float,
    timeout: float | None,
) -> tuple[Tensor, ContractionReport]:
    from concurrent.futures import CancelledError

    from distributed import KilledWorker, as_completed

    from . import _worker as w

    deadline = None if timeout is None else start_time + timeout

    def left() -> float | None:
        """Seconds left before the deadline (None: no limit); a timeout once it passed."""
        if deadline is None:
            return None
        rest = deadline - time.perf_counter()
        if rest <= 0:
            raise TimeoutError
        return rest

    def run(fn: Any, *args: Any) -> Any:
        # client.run, bounded by the deadline (a stopped worker never answers).
        return client.sync(client._run, fn, *args, on_error="return", callback_timeout=left())

    workers = _check_client(client)
    if not client.run_on_scheduler(w.has_plugin):
        client.register_plugin(w.EnginePlugin(), name=w.PLUGIN_NAME)
    if transport == "auto":
        here = w.host_identity()
        hosts = run(w.host_identity)
        same = all(
            isinstance(h, (tuple, list)) and tuple(h) == here for h in hosts.values()
        ) and os.path.isdir("/dev/shm")
        transport = "shared_memory" if same else "scatter"
    cid = uuid.uuid4().hex
    threads = sum(workers.values())
    groups = _groups(plan.nslices, _GROUPS_PER_THREAD * threads)
    shared: list[Tensor] = []
    futures: list[Any] = []
    stats: dict[str, Any] | None = None
    failure: BaseException | None = None
    try:
        if transport == "shared_memory":
            domain = SharedMemoryDomain()
            # A named copy per operand into shared memory; workers map it without pickling.
            shared = [domain.copy_from(t) for t in operands]
            payloads = [w.OperandPayload(cid, s.share_handle()) for s in shared]
        else:
            # One named copy here, writable: Dask keeps writability across the wire,
            # so each worker adopts what it receives without copying again (a
            # read-only view would arrive read-only, and every worker would copy).
            payloads = [w.OperandPayload(cid, t.to_numpy(copy=True)) for t in operands]
        sent = sum(p.nbytes for p in payloads) * len(workers)
        # One broadcast for the plan and every operand: one round trip.
        *payload_futs, plan_fut = client.scatter(
            [*payloads, plan], broadcast=True, hash=False, timeout=left()
        )
        futures.extend(payload_futs)
        futures.append(plan_fut)
        parts = [
            client.submit(
                w.run_group, cid, plan_fut, a, b, *payload_futs, key=f"tenferro-slices-{cid}-{g}"
            )
            for g, (a, b) in enumerate(groups)
        ]
        futures.extend(parts)
        sizes = {p.key: b - a for p, (a, b) in zip(parts, groups, strict=True)}
        level = 0
        ntasks = len(parts)
        layer = list(parts)
        while len(layer) > 1:
            nxt = [
                client.submit(
                    w.add_partials, layer[k], layer[k + 1], key=f"tenferro-sum-{cid}-{level}-{k}"
                )
                for k in range(0, len(layer) - 1, 2)
            ]
            futures.extend(nxt)
            ntasks += len(nxt)
            if len(layer) % 2:
                nxt.append(layer[-1])
            layer = nxt
            level += 1
        with _progress_bar(progress, plan.nslices) as advance:
            for done in as_completed(parts, timeout=left()):  # type: ignore[no-untyped-call]
                advance(sizes[done.key])
        total = layer[0].result(timeout=left())
        stats = run(w.collect_stats, cid)
    except (CancelledError, KilledWorker, OSError) as exc:
        # The cluster's failures (OSError: TimeoutError and lost connections); a
        # task's own error (a refusal on a worker) propagates as it is.
        failure = exc
    finally:
        if stats is None and client.status == "running":
            # A failed contraction: cancel what still runs and make the workers forget
            # its operands now, without waiting for any of them (one may be stopped).
            with suppress(Exception):
                client.cancel(futures, force=True)
            with suppress(Exception):
                client.sync(
                    client._run,
                    w.collect_stats,
                    cid,
                    on_error="return",
                    callback_timeout=_FORGET_TIMEOUT_S,
                )
        for f in futures:
            f.release()
        segments = tuple(s.share_handle().name for s in shared)
        # Dropping the owner's tensors removes the segments (workers only read them).
        del shared[:]
    if failure is not None:
        raise _cluster_failure(client, failure, timeout) from failure
    # INVARIANT: reaching here means the try block finished, so stats were collected.
    assert stats is not None
    workers_report = tuple(
        WorkerReport(
            address=addr,
            pid=int(s["pid"]),
            slices=int(s.get("slices", 0)),
            max_intermediate_bytes=int(s.get("max_intermediate_bytes", 0)),
            peak_pool_bytes=int(s.get("peak_pool_bytes", 0)),
            pool_hits=int(s.get("pool_hits", 0)),
            pool_misses=int(s.get("pool_misses", 0)),
            operand_receipts=int(s["receipts"]),
            bytes_copied=int(s.get("bytes_copied", 0)),
        )
        for addr, s in sorted(stats.items())
        if isinstance(s, dict)
    )
    result, _ = w._host_tensor(total)
    report = ContractionReport(
        slices=plan.nslices,
        sliced_indices=tuple(ix for ix, _ in plan.sliced),
        flops=plan.flops,
        memory_budget=memory_budget,
        planned_intermediate_bytes=plan.max_intermediate_bytes,
        largest_intermediate_bytes=max(
            (r.max_intermediate_bytes for r in workers_report), default=0
        ),
        transport=transport,
        bytes_sent_to_workers=sent,
        tasks=ntasks,
        workers=workers_report,
        shared_segments=segments,
        wall_time_s=time.perf_counter() - start_time,
    )
    return result, report
