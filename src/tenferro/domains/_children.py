"""Functions that child processes run on shared tensors.

They live in the package (not in the tests) so that every start method (spawn,
forkserver, fork) can import them by name: the cross-process tests, the demo and
the documentation use them.
"""

from __future__ import annotations

from typing import Any

from .shared_memory import SharedMemoryDomain, ShareHandle

__all__ = ["attach_and_hold", "describe_shared", "report_sum", "sum_shared"]


def sum_shared(handle: ShareHandle) -> float:
    """Attach ``handle`` and return the sum of its elements (read through the mapping)."""
    t = SharedMemoryDomain.attach(handle)
    total = float(t.with_host_read(lambda a: a.sum()))
    del t
    return total


def report_sum(handle: ShareHandle, conn: Any) -> None:
    """`sum_shared`, sent back over a `multiprocessing` connection with this process's id."""
    import os

    conn.send((os.getpid(), sum_shared(handle)))
    conn.close()


def describe_shared(handle: ShareHandle) -> dict[str, Any]:
    """Attach ``handle`` and report what this process sees (identity, placement, values)."""
    t = SharedMemoryDomain.attach(handle)
    with t.map_read() as guard:
        total = float(guard.array.sum())
        writable = bool(guard.array.flags.writeable)
    try:
        t.host_data()
        host_data = "allowed"
    except Exception as exc:
        host_data = type(exc).__name__
    try:
        with t.map_write():
            pass
        map_write = "allowed"
    except Exception as exc:
        map_write = f"{type(exc).__name__}:{getattr(exc, 'kind', '')}"
    return {
        "allocation_domain": t.allocation_domain,
        "allocation_id": t.allocation_id,
        "memory_kind": t.placement.memory_kind,
        "shape": t.shape,
        "sum": total,
        "array_writable": writable,
        "host_data": host_data,
        "map_write": map_write,
    }


def attach_and_hold(handle: ShareHandle, conn: Any, timeout: float) -> None:
    """Attach, start reading, say ``"reading"`` on ``conn``, then wait inside the read.

    The parent kills this process while it waits: a reader killed mid-read. The
    wait is on the pipe (not on a shared lock or event, which a killed waiter
    would leave broken for the parent); ``timeout`` bounds it so no test can hang.
    """
    t = SharedMemoryDomain.attach(handle)
    with t.map_read() as guard:
        guard.array[: max(1, len(guard.array) // 2)].sum()
        conn.send("reading")
        conn.poll(timeout)
