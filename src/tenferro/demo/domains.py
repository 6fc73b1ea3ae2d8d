"""Demo section: allocation domains (seed chapter, "分配域": identity on the device side).

Upstream could only show this with a fake test domain; here it runs on the
shared-memory domain that ships, including a child process reading the tensor.
"""

from __future__ import annotations

import gc
import multiprocessing
import os

import numpy as np

from ..copies import copy_stats
from ..domains import SharedMemoryDomain, _children
from ..placement import MemoryKind, Placement
from ..storage.identity import AllocationId
from ..tensor import Tensor
from ._facts import Facts, refusal


def _engine_facts(f: Facts, domain: SharedMemoryDomain, t: Tensor) -> None:
    from ..engine import CpuEngine

    eng = CpuEngine(allocation_domain=domain)
    copy = eng.to_contiguous(t)
    f.check(
        "domain engine to_contiguous: allocation_domain, allocation_id",
        (copy.allocation_domain, copy.allocation_id),
        (domain.id(), AllocationId(2)),
    )
    f.check(
        "domain engine to_contiguous values",
        copy.with_host_read(lambda a: a.tolist()),
        [1.0, 2.0, 3.0, 4.0],
    )
    del copy
    refused = "CPU backend received backend buffer; download to host before CPU execution"
    f.check(
        "domain engine add -> Err",
        refusal(lambda: eng.add(t, t)).split(" (")[0],
        f"CpuEngine.add: {refused}",
    )
    plain = CpuEngine()
    f.check(
        "plain engine to_contiguous -> Err",
        refusal(lambda: plain.to_contiguous(t)).split(";")[0],
        "CpuEngine.to_contiguous: CPU backend requires source host placement, got SHARED_HOST",
    )
    f.check(
        "plain engine add -> Err",
        refusal(lambda: plain.add(t, t)).split(" (")[0],
        f"CpuEngine.add: {refused}",
    )


def _child_facts(f: Facts, t: Tensor) -> None:
    handle = t.share_handle()
    f.show("share handle", handle)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        seen = pool.apply_async(_children.describe_shared, (handle,)).get(120)
    f.check("child process sum (attached, no copy)", seen["sum"], 10.0)
    f.check(
        "child sees the same identity",
        (seen["allocation_domain"], seen["allocation_id"]),
        (t.allocation_domain, t.allocation_id),
    )
    f.check("child host_data -> Err", seen["host_data"], "HostAccessError")
    f.check("child map_write -> Err", seen["map_write"], "BorrowError:READ_ONLY")


def run(f: Facts) -> None:
    f.section("domains: identity on the device side, in shared memory")
    first = Tensor.from_vec_col_major((1,), np.zeros(1)).promote()
    second = Tensor.from_vec_col_major((1,), np.zeros(1)).promote()
    domain = SharedMemoryDomain()
    assert first.allocation_domain is not None and second.allocation_domain is not None
    serials = [first.allocation_domain.serial, second.allocation_domain.serial]
    serials.append(domain.id().serial)
    f.show("domain id serials (host import, host import, domain)", serials)
    f.check(
        "two host imports, then a domain: consecutive serials",
        [serials[0] + 1, serials[1] + 1],
        serials[1:],
    )
    t = domain.allocate("float64", (2, 2))
    with t.map_write() as w:
        w.array[...] = [[1.0, 3.0], [2.0, 4.0]]
    f.show("domain id", domain.id())
    f.check(
        "tensor allocation_domain, allocation_id",
        (t.allocation_domain, t.allocation_id),
        (domain.id(), AllocationId(1)),
    )
    f.check("placement", t.placement, Placement(MemoryKind.SHARED_HOST, None, None))
    f.check(
        "host_data -> Err",
        refusal(t.host_data),
        "Tensor.host_data: backend storage cannot be borrowed as host data; download "
        "explicitly first",
    )
    f.check("with_host_read", t.with_host_read(lambda a: a.tolist()), [1.0, 2.0, 3.0, 4.0])
    with t.map_read() as guard:
        f.check(
            "map_read (upstream refused mappable memory)", guard.tolist(), [[1.0, 3.0], [2.0, 4.0]]
        )
    before = copy_stats().copies
    host = t.download()
    f.check(
        "download: a plain host copy, counted",
        (host.allocation_id, copy_stats().copies - before),
        (None, 1),
    )
    _engine_facts(f, domain, t)

    f.section("domains: a child process reads the tensor through a share handle")
    _child_facts(f, t)
    name = t.share_handle().name
    del t, guard
    gc.collect()
    if os.path.isdir("/dev/shm"):
        f.check(
            "segment removed when the owner's tensor is dropped",
            not os.path.exists(f"/dev/shm/{name}"),
        )
