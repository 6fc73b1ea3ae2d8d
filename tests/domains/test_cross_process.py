"""SharedMemoryDomain across processes: children attach and read, nothing is left behind.

Every wait is bounded by `TIMEOUT` (a hang fails instead of blocking the run); no
result depends on timing: children say when they are ready through events and
pipes, and the parent only checks state after joining them.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.domains import _children

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX shared memory")

TIMEOUT = 60.0
SHM_DIR = "/dev/shm"
SPAWN = multiprocessing.get_context("spawn")
METHODS = [m for m in ("spawn", "fork") if m in multiprocessing.get_all_start_methods()]


def segment_exists(name: str) -> bool:
    if not os.path.isdir(SHM_DIR):
        pytest.skip("no /dev/shm to inspect on this platform")
    return os.path.exists(os.path.join(SHM_DIR, name))


def written(n: int = 3000) -> tfr.Tensor:
    """A shared tensor the parent fills through map_write."""
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (n // 3, 3))
    with t.map_write() as w:
        w.array[...] = np.arange(n, dtype=np.float64).reshape((n // 3, 3), order="F")
    return t


def expected_sum(n: int = 3000) -> float:
    return float(n * (n - 1) // 2)


def run_reader(handle: tfr.ShareHandle) -> tuple[Any, Any]:
    parent, child = SPAWN.Pipe(duplex=False)
    proc = SPAWN.Process(target=_children.report_sum, args=(handle, child))
    proc.start()
    child.close()
    return proc, parent


def finish(proc: Any, conn: Any) -> tuple[int, float]:
    assert conn.poll(TIMEOUT), "the reader did not answer in time"
    pid, total = conn.recv()
    proc.join(TIMEOUT)
    assert proc.exitcode == 0
    return pid, total


@pytest.fixture(scope="module", params=METHODS)
def pool(request: pytest.FixtureRequest) -> Iterator[Any]:
    ctx = multiprocessing.get_context(request.param)
    with ctx.Pool(2) as p:
        yield p


# -- two readers ----------------------------------------------------------------------------
def test_two_child_processes_attach_and_sum_what_the_parent_wrote() -> None:
    t = written()
    h = t.share_handle()
    readers = [run_reader(h), run_reader(h)]
    results = [finish(proc, conn) for proc, conn in readers]
    assert (len({pid for pid, _ in results}), [s for _, s in results]) == (
        2,
        [expected_sum(), expected_sum()],
    )


def test_no_segment_is_left_after_the_readers_and_the_owner_are_done() -> None:
    t = written()
    h = t.share_handle()
    for proc, conn in [run_reader(h), run_reader(h)]:
        finish(proc, conn)
    assert segment_exists(h.name)  # readers exiting must not unlink the owner's segment
    del t
    gc.collect()
    assert not segment_exists(h.name)


def test_a_reader_killed_mid_read_leaves_nothing_behind() -> None:
    t = written()
    h = t.share_handle()
    parent, child = SPAWN.Pipe()
    proc = SPAWN.Process(target=_children.attach_and_hold, args=(h, child, TIMEOUT))
    proc.start()
    child.close()
    try:
        assert parent.poll(TIMEOUT), "the reader did not start reading in time"
        assert parent.recv() == "reading"
    finally:
        proc.kill()
        proc.join(TIMEOUT)
        parent.close()
    assert proc.exitcode == -signal.SIGKILL
    assert t.with_host_read(lambda a: float(a.sum())) == expected_sum()
    del t
    gc.collect()
    assert not segment_exists(h.name)


# -- identities are unambiguous across processes -------------------------------------------
@pytest.fixture(scope="module")
def fresh_reader_report() -> dict[str, Any]:
    """Two fresh processes each make their first domain; the second attaches the first's.

    With domain ids from a plain per-process counter both first domains had the same
    id and both first allocations id 1: equal keys for different memory.
    """
    owner_end, owner_child = SPAWN.Pipe()
    owner = SPAWN.Process(target=_children.own_and_share, args=(owner_child, TIMEOUT))
    reader_end, reader_child = SPAWN.Pipe(duplex=False)
    reader = None
    owner.start()
    owner_child.close()
    try:
        assert owner_end.poll(TIMEOUT), "the owner did not share in time"
        handle = owner_end.recv()
        reader = SPAWN.Process(target=_children.attach_beside_own, args=(handle, reader_child))
        reader.start()
        reader_child.close()
        assert reader_end.poll(TIMEOUT), "the reader did not report in time"
        report: dict[str, Any] = reader_end.recv()
    finally:
        owner_end.send("done")  # the owner may drop its tensor now, whatever happened
        for proc in (reader, owner):
            if proc is not None:
                proc.join(TIMEOUT)
                if proc.is_alive():
                    proc.kill()
                    proc.join(TIMEOUT)
    assert (owner.exitcode, reader.exitcode if reader else None) == (0, 0)
    return report


def test_a_fresh_reader_gives_its_own_and_an_attached_tensor_different_keys(
    fresh_reader_report: dict[str, Any],
) -> None:
    r = fresh_reader_report
    assert r["local_key"] != r["attached_key"]


def test_a_fresh_reader_can_group_its_own_tensor_with_an_attached_one(
    fresh_reader_report: dict[str, Any],
) -> None:
    assert fresh_reader_report["from_tensors"] == "allowed"


def test_a_fresh_readers_domain_engine_refuses_an_attached_foreign_tensor(
    fresh_reader_report: dict[str, Any],
) -> None:
    assert fresh_reader_report["to_contiguous"] == "RuntimeStateError:NOT_HOST"


@pytest.mark.skipif("fork" not in METHODS, reason="needs the fork start method")
def test_a_forked_child_and_its_parent_mint_different_domain_ids() -> None:
    end, child_end = multiprocessing.get_context("fork").Pipe(duplex=False)
    proc = multiprocessing.get_context("fork").Process(
        target=_children.mint_domain_id, args=(child_end,)
    )
    proc.start()
    child_end.close()
    mine = tfr.AllocationDomainId.fresh()
    assert end.poll(TIMEOUT), "the child did not answer in time"
    theirs = end.recv()
    proc.join(TIMEOUT)
    assert (proc.exitcode, theirs != mine) == (0, True)


@pytest.mark.skipif("fork" not in METHODS, reason="needs the fork start method")
def test_a_forked_child_cannot_allocate_in_a_domain_it_inherited() -> None:
    # Its copy of the allocation counter would hand out the ids the parent uses next.
    domain = tfr.SharedMemoryDomain()
    ctx = multiprocessing.get_context("fork")
    end, child_end = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_children.allocate_in_inherited_domain, args=(domain, child_end))
    proc.start()
    child_end.close()
    assert end.poll(TIMEOUT), "the child did not answer in time"
    outcome = end.recv()
    proc.join(TIMEOUT)
    assert (proc.exitcode, outcome) == (0, "RuntimeStateError:FORKED_DOMAIN")


# -- the guide's worker-pool example ----------------------------------------------------------
DOMAINS_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "domains.md"


def test_the_worker_pool_example_of_the_domains_guide_runs(tmp_path: Path) -> None:
    # The guide's block holds a module and a main program; run exactly that code.
    found = re.search(r"```python\n(# mymodule\.py\n.*?)```", DOMAINS_GUIDE.read_text(), re.S)
    assert found, "docs/domains.md has no worker-pool example"
    module, main = found.group(1).split("# main program\n")
    (tmp_path / "mymodule.py").write_text(module)
    (tmp_path / "main.py").write_text(main)
    done = subprocess.run(
        [sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert (done.returncode, done.stdout) == (0, f"{[1000000.0] * 4}\n"), done.stderr


# -- pools --------------------------------------------------------------------------------
def test_a_pool_sums_a_shared_tensor(pool: Any) -> None:
    t = written()
    sums = pool.map_async(_children.sum_shared, [t.share_handle()] * 4).get(TIMEOUT)
    assert sums == [expected_sum()] * 4


def test_a_pool_worker_sees_the_same_allocation_identity(pool: Any) -> None:
    t = written()
    seen = pool.apply_async(_children.describe_shared, (t.share_handle(),)).get(TIMEOUT)
    assert (seen["allocation_domain"], seen["allocation_id"], seen["memory_kind"]) == (
        t.allocation_domain,
        t.allocation_id,
        tfr.MemoryKind.SHARED_HOST,
    )


def test_a_pool_worker_cannot_borrow_host_data(pool: Any) -> None:
    t = written()
    seen = pool.apply_async(_children.describe_shared, (t.share_handle(),)).get(TIMEOUT)
    assert seen["host_data"] == "HostAccessError"


def test_a_pool_worker_cannot_write(pool: Any) -> None:
    t = written()
    seen = pool.apply_async(_children.describe_shared, (t.share_handle(),)).get(TIMEOUT)
    assert (seen["map_write"], seen["array_writable"]) == ("BorrowError:READ_ONLY", False)


def test_a_handle_a_pool_worker_shares_again_names_the_owners_pid(pool: Any) -> None:
    t = written()
    again = pool.apply_async(_children.reshare, (t.share_handle(),)).get(TIMEOUT)
    assert (again.owner_pid, again.name) == (os.getpid(), t.share_handle().name)


def test_pool_workers_leave_the_owners_segment_in_place(pool: Any) -> None:
    # Forked workers hold copies of the owner's objects: they must never unlink.
    t = written()
    h = t.share_handle()
    pool.map_async(_children.sum_shared, [h] * 2).get(TIMEOUT)
    assert segment_exists(h.name)


_HELD: list[tfr.Tensor] = []


def _drop_held() -> None:
    _HELD.clear()
    gc.collect()  # runs the owner's finalizer in this (forked) process


@pytest.mark.skipif("fork" not in METHODS, reason="needs the fork start method")
def test_a_forked_child_dropping_its_copy_of_the_owner_does_not_unlink() -> None:
    t = written()
    h = t.share_handle()
    _HELD.append(t)
    del t
    proc = multiprocessing.get_context("fork").Process(target=_drop_held)
    proc.start()
    proc.join(TIMEOUT)
    try:
        assert (proc.exitcode, segment_exists(h.name)) == (0, True)
    finally:
        _HELD.clear()
        gc.collect()
    assert not segment_exists(h.name)
