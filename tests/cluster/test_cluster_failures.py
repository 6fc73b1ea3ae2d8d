"""contract on a cluster that fails mid-contraction raises a typed error (issue 23, item 5).

Each test has its own two-worker LocalCluster (it breaks it) and a bounded
timeout; the failure is triggered from inside the cluster when the first slice
task starts, so the contraction really is in flight.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

cotengra = pytest.importorskip("cotengra")
distributed = pytest.importorskip("distributed")

import tenferro as tfr  # noqa: E402
from tenferro.distributed import contract  # noqa: E402


def _ring(n: int = 6, d: int = 12) -> tuple[str, list[tfr.Tensor], int]:
    letters = "abcdefghij"[:n]
    eq = ",".join(letters[i] + letters[(i + 1) % n] for i in range(n)) + "->"
    rng = np.random.default_rng(0)
    ts = [tfr.from_numpy(np.asfortranarray(rng.standard_normal((d, d)))) for _ in range(n)]
    return eq, ts, 8 * d * d  # a budget that forces slicing: several slice tasks


@pytest.fixture
def cluster() -> Any:
    import dask

    with dask.config.set(
        {
            "distributed.scheduler.active-memory-manager.start": False,
            # One try per task: a worker death is final at once (no retries elsewhere).
            "distributed.scheduler.allowed-failures": 0,
        }
    ):
        c = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = distributed.Client(c)
        yield c, client
    for pid in _stopped_pids():
        with_suppressed(os.kill, pid, signal.SIGCONT)
    with_suppressed(client.close, timeout=10)
    with_suppressed(c.close, timeout=10)


_STOPPED = Path(os.environ.get("TMPDIR", "/tmp")) / f"tenferro-stopped-{os.getpid()}"


def _stopped_pids() -> list[int]:
    if not _STOPPED.exists():
        return []
    pids = [int(x) for x in _STOPPED.read_text().split()]
    _STOPPED.unlink()
    return pids


def with_suppressed(fn: Any, *args: Any, **kwargs: Any) -> None:
    with contextlib.suppress(Exception):
        fn(*args, **kwargs)


class _OnFirstSlice(distributed.WorkerPlugin):
    """Runs ``action`` in a worker when a slice task starts there."""

    name = "tenferro-test-on-first-slice"

    def __init__(self, action: str, record: str) -> None:
        self.action = action
        self.record = record

    def setup(self, worker: Any) -> None:
        self.worker = worker

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or not str(key).startswith("tenferro-slices"):
            return
        with open(self.record, "a") as f:
            f.write(f"{os.getpid()}\n")
        if self.action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        else:
            os.kill(os.getpid(), signal.SIGSTOP)


@pytest.mark.timeout(180)
def test_losing_every_worker_mid_contraction_is_a_typed_error(cluster: Any) -> None:
    _, client = cluster
    client.wait_for_workers(2, timeout=60)
    record = str(_STOPPED) + ".killed"
    client.register_plugin(_OnFirstSlice("kill", record))
    eq, ts, budget = _ring()
    with pytest.raises(tfr.RuntimeStateError) as info:
        contract(eq, *ts, client=client, memory_budget=budget, progress=False, timeout=120)
    assert info.value.kind == "WORKERS_LOST"
    assert "died" in str(info.value)
    with_suppressed(os.unlink, record)


class _CloseSchedulerOnFirstSlice(distributed.SchedulerPlugin):
    """Closes the scheduler as soon as a slice task starts executing."""

    def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.closing = False

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if self.closing or finish != "processing" or not str(key).startswith("tenferro-slices"):
            return
        self.closing = True
        self.scheduler.loop.add_callback(self.scheduler.close)


@pytest.mark.timeout(180)
def test_losing_the_scheduler_mid_contraction_is_a_typed_error(cluster: Any) -> None:
    _, client = cluster
    client.wait_for_workers(2, timeout=60)
    client.register_plugin(_CloseSchedulerOnFirstSlice())
    eq, ts, budget = _ring()
    with pytest.raises(tfr.RuntimeStateError) as info:
        contract(eq, *ts, client=client, memory_budget=budget, progress=False, timeout=120)
    assert info.value.kind in ("SCHEDULER_LOST", "WORKERS_LOST", "TIMEOUT")
    assert info.value.kind == "SCHEDULER_LOST", info.value


@pytest.mark.timeout(180)
def test_a_stopped_worker_ends_in_a_timeout_error_not_a_hang(cluster: Any) -> None:
    _, client = cluster
    client.wait_for_workers(2, timeout=60)
    client.register_plugin(_OnFirstSlice("stop", str(_STOPPED)))
    eq, ts, budget = _ring()
    t0 = time.monotonic()
    with pytest.raises(tfr.RuntimeStateError) as info:
        contract(eq, *ts, client=client, memory_budget=budget, progress=False, timeout=10)
    assert info.value.kind == "TIMEOUT"
    assert time.monotonic() - t0 < 90  # the timeout, plus cancelling, not forever


def test_a_bad_timeout_is_a_validation_error() -> None:
    eq, ts, budget = _ring()
    for bad in (0, -1.0, True, "10"):
        with pytest.raises(tfr.ValidationError):
            contract(eq, *ts, memory_budget=budget, progress=False, timeout=bad)
