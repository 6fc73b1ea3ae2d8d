"""tenferro.distributed.contract: in-process and on a two-process LocalCluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

cotengra = pytest.importorskip("cotengra")
distributed = pytest.importorskip("distributed")

import tenferro as tfr  # noqa: E402
from tenferro.distributed import contract, sliced_tree  # noqa: E402

RTOL = 1e-12


@pytest.fixture(scope="module")
def client() -> Any:
    import dask

    # Dask's active memory manager drops broadcast replicas once fewer tasks wait for
    # them, at moments that depend on timing; a later task then fetches the operand
    # again. Off here, so the receipt count measures what contract sends.
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def network(
    seed: int, n: int = 8, reg: int = 3, n_out: int = 0, complex_: bool = False
) -> tuple[str, list[np.ndarray[Any, Any]]]:
    """A random tensor network: its equation and F-ordered operands."""
    inputs, output, shapes, _ = cotengra.utils.rand_equation(
        n, reg, n_out=n_out, d_min=2, d_max=5, seed=seed
    )
    eq = ",".join("".join(t) for t in inputs) + "->" + "".join(output)
    rng = np.random.default_rng(seed)
    arrays = []
    for s in shapes:
        a = rng.standard_normal(s)
        if complex_:
            a = a + 1j * rng.standard_normal(s)
        arrays.append(np.asarray(a, order="F"))  # keeps rank 0 (asfortranarray would not)
    return eq, arrays


def tensors(arrays: list[np.ndarray[Any, Any]]) -> list[tfr.Tensor]:
    return [tfr.from_numpy(a.copy(order="F")) for a in arrays]


def budget_for(eq: str, ts: list[tfr.Tensor], lo: int, hi: int) -> int:
    """A budget (bytes) under which the contraction needs between lo and hi slices."""
    whole = int(sliced_tree(eq, *ts, memory_budget=1 << 40).max_size()) * ts[0].dtype.itemsize
    for div in range(2, 257):
        try:
            n = sliced_tree(eq, *ts, memory_budget=whole // div).nslices
        except tfr.ValidationError:
            break  # below the output's size
        if lo <= n <= hi:
            return whole // div
    raise AssertionError(f"no budget gives {lo}..{hi} slices for {eq}")


def reference(eq: str, arrays: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    return np.asarray(np.einsum(eq, *arrays, optimize="greedy"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_in_process_equals_einsum_f64(seed: int) -> None:
    eq, arrays = network(seed, n_out=1)
    ts = tensors(arrays)
    budget = budget_for(eq, ts, 2, 200)
    got, report = contract(eq, *ts, memory_budget=budget, progress=False, return_report=True)
    assert report.slices > 1
    np.testing.assert_allclose(got.to_numpy(), reference(eq, arrays), rtol=RTOL)


@pytest.mark.parametrize(("seed", "complex_"), [(4, False), (5, True), (6, False), (7, True)])
def test_cluster_equals_einsum(client: Any, seed: int, complex_: bool) -> None:
    eq, arrays = network(seed, n=9, n_out=seed % 2, complex_=complex_)
    ts = tensors(arrays)
    budget = budget_for(eq, ts, 2, 64)
    got, report = contract(
        eq, *ts, client=client, memory_budget=budget, progress=False, return_report=True
    )
    assert got.dtype is (tfr.DType.C64 if complex_ else tfr.DType.F64)
    assert report.slices > 1
    np.testing.assert_allclose(got.to_numpy(), reference(eq, arrays), rtol=RTOL)


@pytest.mark.parametrize("transport", ["scatter", "shared_memory"])
def test_sixteen_plus_slices_equal_einsum_on_each_transport(client: Any, transport: str) -> None:
    eq, arrays = network(22, n=10, complex_=transport == "scatter")
    ts = tensors(arrays)
    budget = budget_for(eq, ts, 16, 128)
    got, report = contract(
        eq,
        *ts,
        client=client,
        memory_budget=budget,
        progress=False,
        return_report=True,
        transport=transport,
    )
    assert report.slices >= 16
    assert report.transport == transport
    np.testing.assert_allclose(got.to_numpy(), reference(eq, arrays), rtol=RTOL)


def test_no_intermediate_exceeds_the_budget(client: Any) -> None:
    eq, arrays = network(12, n=10)
    ts = tensors(arrays)
    budget = budget_for(eq, ts, 16, 128)
    _, report = contract(
        eq, *ts, client=client, memory_budget=budget, progress=False, return_report=True
    )
    measured = [w.max_intermediate_bytes for w in report.workers]
    assert 0 < max(measured) <= budget
    assert report.largest_intermediate_bytes <= budget
    assert report.planned_intermediate_bytes <= budget


def test_each_operand_reaches_each_worker_once(client: Any) -> None:
    eq, arrays = network(13, n=10)
    ts = tensors(arrays)
    budget = budget_for(eq, ts, 16, 128)
    _, report = contract(
        eq,
        *ts,
        client=client,
        memory_budget=budget,
        progress=False,
        return_report=True,
        transport="scatter",
    )
    assert report.tasks > 2 * len(report.workers)  # far more tasks than workers
    assert len(report.workers) == 2
    for w in report.workers:
        assert w.slices > 0
        assert w.operand_receipts == len(ts)
    assert report.bytes_sent_to_workers == 2 * sum(a.nbytes for a in arrays)


def test_scattered_operands_are_adopted_by_workers_without_a_copy(client: Any) -> None:
    eq, arrays = network(21, n=8)
    ts = tensors(arrays)
    _, report = contract(
        eq,
        *ts,
        client=client,
        memory_budget=budget_for(eq, ts, 2, 64),
        progress=False,
        return_report=True,
        transport="scatter",
    )
    assert [w.bytes_copied for w in report.workers] == [0, 0]


def test_each_worker_engine_reuses_its_pool(client: Any) -> None:
    eq, arrays = network(14, n=10)
    ts = tensors(arrays)
    budget = budget_for(eq, ts, 16, 128)
    _, report = contract(
        eq, *ts, client=client, memory_budget=budget, progress=False, return_report=True
    )
    for w in report.workers:
        assert w.pool_hits > w.pool_misses
        assert w.peak_pool_bytes > 0


def test_shared_memory_segments_are_removed_when_contract_returns(client: Any) -> None:
    eq, arrays = network(15)
    ts = tensors(arrays)
    _, report = contract(
        eq,
        *ts,
        client=client,
        memory_budget=budget_for(eq, ts, 2, 64),
        progress=False,
        return_report=True,
        transport="shared_memory",
    )
    assert len(report.shared_segments) == len(ts)
    assert report.bytes_sent_to_workers < sum(a.nbytes for a in arrays)
    for name in report.shared_segments:
        assert not Path("/dev/shm", name).exists()


def test_operands_are_left_as_they_were(client: Any) -> None:
    eq, arrays = network(16)
    ts = tensors(arrays)
    contract(eq, *ts, client=client, memory_budget=budget_for(eq, ts, 2, 64), progress=False)
    for t, a in zip(ts, arrays, strict=True):
        np.testing.assert_array_equal(t.to_numpy(), a)
        with t.map_write():
            pass  # no alias of an operand outlives the call


def test_given_tree_is_followed(client: Any) -> None:
    eq, arrays = network(17, n=9)
    ts = tensors(arrays)
    tree = sliced_tree(eq, *ts, memory_budget=budget_for(eq, ts, 8, 64))
    got, report = contract(
        eq, *ts, client=client, optimize=tree, progress=False, return_report=True
    )
    assert report.slices == tree.nslices
    np.testing.assert_allclose(got.to_numpy(), reference(eq, arrays), rtol=RTOL)


def test_progress_bar_run_gives_the_same_value() -> None:
    eq, arrays = network(18)
    ts = tensors(arrays)
    got = contract(eq, *ts, memory_budget=budget_for(eq, ts, 2, 32), progress=True)
    np.testing.assert_allclose(got.to_numpy(), reference(eq, arrays), rtol=RTOL)


def test_unreachable_budget_is_a_validation_error_before_any_work(client: Any) -> None:
    eq, arrays = network(19, n_out=2)
    ts = tensors(arrays)
    before = client.run_on_scheduler(_task_count)
    with pytest.raises(tfr.ValidationError) as err:
        contract(eq, *ts, client=client, memory_budget=8, progress=False)
    assert err.value.kind == "BUDGET_UNREACHABLE"
    assert "raise the budget" in str(err.value)
    assert client.run_on_scheduler(_task_count) == before


def _task_count(dask_scheduler: Any) -> int:
    return (
        int(dask_scheduler.n_tasks)
        if hasattr(dask_scheduler, "n_tasks")
        else len(dask_scheduler.tasks)
    )


def test_mismatched_operand_shapes_are_a_validation_error() -> None:
    a = tfr.from_numpy(np.asfortranarray(np.ones((2, 3))))
    b = tfr.from_numpy(np.asfortranarray(np.ones((4, 2))))
    with pytest.raises(tfr.ValidationError) as err:
        contract("ij,jk->ik", a, b, memory_budget=1 << 20, progress=False)
    assert err.value.kind == "SHAPE_MISMATCH"


def test_operand_count_mismatch_is_a_validation_error() -> None:
    a = tfr.from_numpy(np.asfortranarray(np.ones((2, 3))))
    with pytest.raises(tfr.ValidationError) as err:
        contract("ij,jk->ik", a, memory_budget=1 << 20, progress=False)
    assert err.value.kind == "OPERAND_COUNT"


def test_mixed_dtypes_are_a_validation_error() -> None:
    a = tfr.from_numpy(np.asfortranarray(np.ones((2, 3))))
    b = tfr.from_numpy(np.asfortranarray(np.ones((3, 2), dtype=np.complex128)))
    with pytest.raises(tfr.ValidationError) as err:
        contract("ij,jk->ik", a, b, memory_budget=1 << 20, progress=False)
    assert err.value.kind == "DTYPE_MISMATCH"


def test_closed_client_is_a_runtime_state_error(client: Any) -> None:
    closed = distributed.Client(client.cluster)
    closed.close()
    a = tfr.from_numpy(np.asfortranarray(np.ones((2, 3))))
    b = tfr.from_numpy(np.asfortranarray(np.ones((3, 2))))
    with pytest.raises(tfr.RuntimeStateError) as err:
        contract("ij,jk->ik", a, b, client=closed, memory_budget=1 << 20, progress=False)
    assert err.value.kind == "CLIENT_CLOSED"


def test_import_tenferro_does_not_import_dask_or_cotengra() -> None:
    code = (
        "import sys, tenferro; "
        "bad = [m for m in ('dask', 'distributed', 'cotengra') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


class _KillOnSecondGroup(distributed.WorkerPlugin):  # type: ignore[misc]
    """SIGKILLs its worker when it starts its second slice group, once per test."""

    name = "tenferro-test-kill-once"

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def setup(self, worker: Any) -> None:
        self.started = 0

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or not str(key).startswith("tenferro-slices"):
            return
        self.started += 1
        if self.started < 2:
            return
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return  # already killed one worker
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.timeout(240)
def test_killed_worker_still_gives_the_right_answer_and_leaves_no_segment(
    client: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    client.register_plugin(_KillOnSecondGroup(str(marker)))
    try:
        eq, arrays = network(20, n=10)
        ts = tensors(arrays)
        got, report = contract(
            eq,
            *ts,
            client=client,
            memory_budget=budget_for(eq, ts, 16, 128),
            progress=False,
            return_report=True,
            transport="shared_memory",
        )
    finally:
        client.unregister_worker_plugin(_KillOnSecondGroup.name)
        client.wait_for_workers(2, timeout=120)
    assert marker.exists()  # a worker really was killed mid-contraction
    np.testing.assert_allclose(got.to_numpy(), reference(eq, arrays), rtol=RTOL)
    for name in report.shared_segments:
        assert not Path("/dev/shm", name).exists()


def test_distributed_demo_checks_its_value_and_budget(capsys: pytest.CaptureFixture[str]) -> None:
    from tenferro.cli import main

    assert main(["distributed-demo", "--workers", "1", "--side", "3", "--bond", "4"]) == 0
    out = capsys.readouterr().out
    assert "ok: the cluster's value equals the in-process value" in out
    assert "ok: every intermediate stayed within the budget" in out
