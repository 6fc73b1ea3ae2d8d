"""The thread pool: the tiled executor's work split into contiguous chunks of whole
tiles, run on the engine's worker threads (numpy releases the GIL inside its
loops), every worker finished before the call returns or raises."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ...layout import shape_size
from ._shared import Array
from .compiler import _Program
from .tiles import TILE, _run_tiles

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(
                    max_workers=max(1, min(32, os.cpu_count() or 1)),
                    thread_name_prefix="tenferro-fusion",
                )
    return _executor


def _parallel(
    prog: _Program,
    pool: Any,
    inputs: list[Array],
    out: Array,
    total: int,
    flat_mode: bool,
    threads: int,
) -> None:
    per_unit = 1 if flat_mode else (shape_size(out.shape[:-1]) if out.ndim else 1)
    elements = total * per_unit
    workers = min(threads, elements // (2 * TILE)) if elements >= 4 * TILE else 1
    if workers <= 1 or total < 2:
        _run_tiles(prog, pool, inputs, out, 0, total, flat_mode)
        return
    workers = min(workers, total)
    # Contiguous chunks, each a whole number of tiles (so threads never share one).
    unit = TILE if flat_mode else max(1, TILE // max(per_unit, 1))
    tiles = -(-total // unit)
    bounds = [min(total, (tiles * w // workers) * unit) for w in range(workers + 1)]
    futures: list[Future[None]] = []
    executor = _workers()
    for w in range(1, workers):
        futures.append(
            executor.submit(
                _run_tiles, prog, pool, inputs, out, bounds[w], bounds[w + 1], flat_mode
            )
        )
    error: BaseException | None = None
    try:
        _run_tiles(prog, pool, inputs, out, bounds[0], bounds[1], flat_mode)
    except BaseException as exc:
        error = exc
    # INVARIANT: every worker has stopped writing into `out` before this returns or
    # raises (the caller may give the buffer back to the pool), even when the wait
    # itself is interrupted (Ctrl-C): then it waits again.
    for f in futures:
        while True:
            try:
                failure = f.exception()
                break
            except BaseException as interrupt:
                if error is None:
                    error = interrupt
        if failure is not None and error is None:
            error = failure
    if error is not None:
        raise error
