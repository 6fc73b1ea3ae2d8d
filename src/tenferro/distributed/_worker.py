"""What runs inside a Dask worker: the engine plugin, operand payloads and the tasks.

Every task here is a pure function of its arguments: a slice group always
computes the same partial sum, an addition the same total. Dask may therefore
run a task again on another worker after a worker died, and the answer is the
same (the plan is idempotent). Tasks never write into their inputs.
"""

from __future__ import annotations

import os
import socket
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from distributed import WorkerPlugin, get_worker

from ..domains import SharedMemoryDomain, ShareHandle
from ..engine import CpuEngine
from ..errors import ValidationError
from ..tensor import Tensor, from_numpy
from ._plan import SlicePlan
from ._slices import SliceStats, run_slices

__all__ = [
    "PLUGIN_NAME",
    "EnginePlugin",
    "OperandPayload",
    "add_partials",
    "collect_stats",
    "host_identity",
    "run_group",
]

#: The name the plugin is registered under on every worker.
PLUGIN_NAME = "tenferro-engine"

# How many contractions' operands a worker keeps at most if `collect_stats`
# never comes (the client died): a backstop, not the normal way out.
_MAX_CACHED_RUNS = 4

# Per-process count of operand payloads unpickled, by contraction id: each count
# is one transfer of that operand into this process.
_receipts: dict[str, int] = {}
_receipts_lock = threading.Lock()


def _count_receipt(cid: str) -> None:
    with _receipts_lock:
        _receipts[cid] = _receipts.get(cid, 0) + 1


def _rebuild_payload(cid: str, data: Any) -> OperandPayload:
    _count_receipt(cid)
    return OperandPayload(cid, data)


class OperandPayload:
    """One operand on its way to the workers: an array (scatter) or a `ShareHandle`.

    Unpickling it counts one receipt in the receiving process, so the report can
    say how many times operands really travelled.
    """

    __slots__ = ("cid", "data")

    def __init__(self, cid: str, data: Any) -> None:
        self.cid = cid
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_payload, (self.cid, self.data))

    @property
    def nbytes(self) -> int:
        """Bytes this payload carries (an array's elements, or a handle's few fields)."""
        if isinstance(self.data, np.ndarray):
            return int(self.data.nbytes)
        import pickle

        return len(pickle.dumps(self.data))


class _Run:
    """One contraction's state on one worker."""

    __slots__ = ("bytes_copied", "hits0", "misses0", "operands", "stats")

    def __init__(self, operands: list[Tensor], bytes_copied: int, engine: CpuEngine) -> None:
        self.operands = operands
        self.bytes_copied = bytes_copied
        self.stats = SliceStats()
        c = engine.buffer_pool_cache_stats()
        self.hits0, self.misses0 = c.hits, c.misses


class EnginePlugin(WorkerPlugin):
    """Gives each Dask worker one long-lived `CpuEngine` whose pool outlives tasks.

    Registered once per client (name `PLUGIN_NAME`); a worker that joins later
    or is restarted gets its own. Also keeps each running contraction's
    operands as tensors, built once per worker from the payloads.
    """

    name = PLUGIN_NAME

    engine: CpuEngine | None
    runs: OrderedDict[str, _Run]
    lock: threading.Lock

    def __init__(self, buffer_limit_bytes: int | None = None) -> None:
        # Only configuration here: the plugin is pickled to the workers, and each
        # worker builds its own state in `setup`.
        self.buffer_limit_bytes = buffer_limit_bytes

    def setup(self, worker: Any) -> None:
        """Create the worker's engine (threads=None: Dask already pins BLAS threads)."""
        self.engine = CpuEngine(buffer_limit_bytes=self.buffer_limit_bytes)
        self.runs = OrderedDict()
        self.lock = threading.Lock()

    def teardown(self, worker: Any) -> None:
        """Drop cached operands and the engine's retained buffers."""
        self.runs.clear()
        if self.engine is not None:
            self.engine.reset_buffer_pool()

    def run_state(self, cid: str, payloads: tuple[OperandPayload, ...]) -> _Run:
        """This contraction's state, building its operand tensors on first use."""
        with self.lock:
            run = self.runs.get(cid)
            if run is None:
                assert self.engine is not None
                copied = 0
                operands = []
                for p in payloads:
                    t, n = _operand_tensor(p.data)
                    operands.append(t)
                    copied += n
                run = self.runs[cid] = _Run(operands, copied, self.engine)
                while len(self.runs) > _MAX_CACHED_RUNS:
                    self.runs.popitem(last=False)
            return run


def _operand_tensor(data: Any) -> tuple[Tensor, int]:
    """``(tensor, bytes copied)`` for a payload's data.

    A writable F-ordered array that arrived by scatter is adopted (no copy). A
    read-only one (Dask may hand out read-only frames) is copied once, a named
    copy. A `ShareHandle` is attached and downloaded once: the engine does not
    execute on attached shared memory, so the worker keeps one host copy per
    contraction (no pickling, no socket transfer of the elements).
    """
    if isinstance(data, ShareHandle):
        attached = SharedMemoryDomain.attach(data)
        host = attached.download()
        del attached  # unmap now; the owner removes the segment
        return host, host.nbytes
    return _host_tensor(data)


def _host_tensor(arr: np.ndarray[Any, Any]) -> tuple[Tensor, int]:
    """``(tensor, bytes copied)``: adopts ``arr`` when it can, else one named copy."""
    if arr.flags.writeable and arr.flags.f_contiguous:
        try:
            return from_numpy(arr), 0
        except ValidationError:
            pass  # a view of read-only memory (a received frame): copy below
    return from_numpy(arr, copy=True), int(arr.nbytes)


def _plugin(worker: Any = None) -> EnginePlugin:
    plugin = (worker if worker is not None else get_worker()).plugins[PLUGIN_NAME]
    assert isinstance(plugin, EnginePlugin)
    return plugin


def _to_array(t: Tensor) -> np.ndarray[Any, Any]:
    """A pooled output as a plain array to hand back to Dask (moves ``t``, no copy)."""
    shape, flat = t.into_vec_col_major()
    return flat.reshape(shape, order="F")


def run_group(
    cid: str, plan: SlicePlan, start: int, stop: int, *payloads: OperandPayload
) -> np.ndarray[Any, Any]:
    """Task: the sum of slices ``start <= s < stop`` on this worker's engine."""
    plugin = _plugin()
    run = plugin.run_state(cid, payloads)
    assert plugin.engine is not None
    return _to_array(run_slices(plugin.engine, plan, run.operands, start, stop, run.stats))


def add_partials(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Task: ``a + b`` on this worker's engine into a new buffer (never writes a or b)."""
    eng = _plugin().engine
    assert eng is not None
    ta, _ = _host_tensor(a)
    tb, _ = _host_tensor(b)
    return _to_array(eng.add(ta, tb))


def collect_stats(cid: str, dask_worker: Any = None) -> dict[str, Any]:
    """Run on every worker (``client.run``) at the end: this contraction's numbers.

    Also forgets the contraction's operands on the worker.
    """
    plugin = _plugin(dask_worker)
    with plugin.lock:
        run = plugin.runs.pop(cid, None)
    with _receipts_lock:
        receipts = _receipts.pop(cid, 0)
    eng = plugin.engine
    out: dict[str, Any] = {"pid": os.getpid(), "receipts": receipts}
    if run is None or eng is None:
        return out
    c = eng.buffer_pool_cache_stats()
    out.update(
        slices=run.stats.slices,
        max_intermediate_bytes=run.stats.max_intermediate_bytes,
        peak_pool_bytes=run.stats.peak_pool_bytes,
        pool_hits=c.hits - run.hits0,
        pool_misses=c.misses - run.misses0,
        bytes_copied=run.bytes_copied,
    )
    return out


def host_identity() -> tuple[str, str]:
    """``(hostname, boot id)``: equal in two processes iff they share /dev/shm's host."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return socket.gethostname(), boot


def has_plugin(dask_scheduler: Any) -> bool:
    """Run on the scheduler: whether the engine plugin is registered already."""
    return PLUGIN_NAME in dask_scheduler.worker_plugins
