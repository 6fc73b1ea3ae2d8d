"""Functions that child processes run on shared tensors.

They live in the package (not in the tests) so that every start method (spawn,
forkserver, fork) can import them by name: the cross-process tests, the demo and
the documentation use them.
"""

from __future__ import annotations

from typing import Any

from .shared_memory import SharedMemoryDomain, ShareHandle

__all__ = [
    "allocate_in_inherited_domain",
    "attach_and_hold",
    "attach_beside_own",
    "describe_shared",
    "mint_domain_id",
    "own_and_share",
    "report_sum",
    "reshare",
    "sum_shared",
]


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


def own_and_share(conn: Any, timeout: float) -> None:
    """Make this process's first domain and tensor, send its handle, hold it until told.

    Run in a fresh (spawned) process: its domain is the first one a process makes,
    like the reader's in `attach_beside_own`. The tensor lives until ``conn`` says
    anything (or ``timeout`` passes), so the reader can attach meanwhile.
    """
    t = SharedMemoryDomain().allocate("float64", (4,))
    with t.map_write() as w:
        w.array[:] = 1.0
    conn.send(t.share_handle())
    conn.poll(timeout)


def attach_beside_own(handle: ShareHandle, conn: Any) -> None:
    """Make this process's first domain and tensor, attach ``handle``, report on ``conn``.

    Reports both identities, what a domain engine of this process's domain does
    with the attached (foreign) tensor, and whether the two tensors, which are
    different memory, can enter one group.
    """
    from ..engine.cpu import CpuEngine
    from ..errors import TenferroError
    from ..group import AllocationGroup

    def outcome(fn: Any) -> str:
        try:
            fn()
        except TenferroError as exc:
            return f"{type(exc).__name__}:{exc.kind}"
        return "allowed"

    domain = SharedMemoryDomain()
    local = domain.allocate("float64", (4,))
    with local.map_write() as w:
        w.array[:] = 2.0
    attached = SharedMemoryDomain.attach(handle)
    report = {
        "local_key": (local.allocation_domain, local.allocation_id),
        "attached_key": (attached.allocation_domain, attached.allocation_id),
        "to_contiguous": outcome(
            lambda: CpuEngine(allocation_domain=domain).to_contiguous(attached)
        ),
        "from_tensors": outcome(lambda: AllocationGroup.from_tensors([local, attached])),
    }
    conn.send(report)
    conn.close()


def mint_domain_id(conn: Any) -> None:
    """Send a freshly minted `AllocationDomainId` on ``conn`` (run in a forked child)."""
    from ..storage.identity import AllocationDomainId

    conn.send(AllocationDomainId.fresh())
    conn.close()


def allocate_in_inherited_domain(domain: SharedMemoryDomain, conn: Any) -> None:
    """Try to allocate in ``domain``, a copy inherited by fork; send the outcome on ``conn``."""
    from ..errors import TenferroError

    try:
        domain.allocate("float64", (1,))
        conn.send("allowed")
    except TenferroError as exc:
        conn.send(f"{type(exc).__name__}:{exc.kind}")
    conn.close()


def reshare(handle: ShareHandle) -> ShareHandle:
    """Attach ``handle`` and share the attached tensor again (what a reader passes on)."""
    again: ShareHandle = SharedMemoryDomain.attach(handle).share_handle()
    return again
