"""Domain benchmarks: handing a large tensor to a worker process.

Two ways to give a worker process 256 MiB of float64 (32 MiB with ``quick``):

* ``share_handle``: the tensor already lives in a `SharedMemoryDomain`; the parent
  sends ``t.share_handle()`` (a few hundred bytes), the worker attaches (maps the
  same memory, no copy) and reads an element;
* ``pickle``: the parent sends the numpy array itself through the same pipe, as
  ``multiprocessing`` does for pool arguments (pickled, copied through the pipe,
  unpickled into new memory), and the worker reads the same element.

A third contender, ``copy_from+share``, first copies the array into a new shared
segment (a named copy) and then shares it: what it costs when the data is not in
shared memory yet. The worker process is started once, outside the timings.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import numpy as np

from ..domains import SharedMemoryDomain
from .harness import CaseResult, Target, time_case

__all__ = ["run", "serve"]


def serve(conn: Any) -> None:
    """The worker loop (runs in the child): answer each message with the last element."""
    while True:
        msg = conn.recv()
        if msg is None:
            break
        kind, payload = msg
        if kind == "handle":
            t = SharedMemoryDomain.attach(payload)
            value = float(t.with_host_read(lambda a: a[-1]))
            del t
        else:
            value = float(payload[-1])
            del payload
        conn.send(value)


def run(quick: bool = False) -> list[CaseResult]:
    mib = 32 if quick else 256
    n = mib * 2**20 // 8
    arr = np.arange(n, dtype=np.float64)
    domain = SharedMemoryDomain()
    shared = domain.copy_from(arr)
    handle = shared.share_handle()
    expected = float(n - 1)

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    worker = ctx.Process(target=serve, args=(child,), daemon=True)
    worker.start()
    child.close()

    def ask(msg: Any) -> None:
        parent.send(msg)
        if parent.recv() != expected:
            raise AssertionError("the worker read a wrong value")

    def by_handle() -> None:
        ask(("handle", handle))

    def by_pickle() -> None:
        ask(("array", arr))

    def copy_then_share() -> None:
        t = domain.copy_from(arr)
        ask(("handle", t.share_handle()))

    try:
        result = time_case(
            f"hand {mib} MiB f64 to a worker process",
            [
                ("share_handle", by_handle, 5),
                ("pickle", by_pickle),
                ("copy_from+share", copy_then_share),
            ],
            group="domains",
            size=n,
            repeats=3 if quick else 7,
            warmup=1,
            targets=[Target("share_handle", "pickle", 0.05)],
        )
    finally:
        parent.send(None)
        worker.join(60)
        parent.close()
    ratio = result.ratio("share_handle", "pickle")
    result.extra["share_handle_over_pickle"] = ratio
    print(
        f"{result.name}: share handle {ratio:.4f} x the time of pickling ({1 / ratio:.0f}x faster)"
    )
    return [result]
