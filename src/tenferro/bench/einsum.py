"""The einsum benchmark: upstream's tensor-network instances, each with its given path.

The 14 instances of the tenferro einsum benchmark (``data/einsum_instances.json``,
see the README there: language-model, graphical-model, MPS, MERA, matrix-chain
and 300-400 tensor network instances, plus four binary diagnostics) run with
their precomputed ``opt_flops`` path, on one thread, side by side with
``opt_einsum.contract`` given the same path (numpy backend), and with
``torch.einsum``'s backend through opt_einsum when torch is installed. Each
value is checked against opt_einsum's before anything is timed.

Per instance: medians, the ratio tenferro / opt_einsum against its target
(<= 0.5, <= 1.0 for the memory-bound outer product), and in ``extra`` the
peak memory traced by `tracemalloc` during one contraction next to the path's
largest live set (target <= 1.2x; measured with an engine that retains no
buffers, so the pool's own cache is not counted). The live set is the path's
own (`path_live_elements`: the most intermediate and output elements alive at
once, whatever layout runs them), not tenferro's plan's, so a layout choice
that holds more (a transposed copy of the result) counts against tenferro.

Operands are random in ``[0, 2)``, scaled by the summed dimensions so that
products of hundreds of tensors stay in floating-point range. ``quick`` skips
the instances opt_einsum needs more than a few seconds for.
"""

from __future__ import annotations

import json
import math
import time
import tracemalloc
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

import numpy as np

from ..tensor import Tensor, from_numpy
from .harness import CaseResult, Target, time_case

__all__ = ["SLOW", "instances", "operands", "path_live_elements", "run", "selected"]

Array = np.ndarray[Any, Any]

#: Instances opt_einsum takes seconds to a minute and more for, single-threaded
#: (its np.einsum fallback on batched steps): skipped by ``quick``.
SLOW = frozenset(
    {
        "gm_queen5_5_3.wcsp",
        "str_nw_mera_closed_120",
        "str_nw_mera_open_26",
        "tensornetwork_permutation_focus_step409_316",
        "tensornetwork_permutation_light_415",
    }
)

#: Time budget (seconds per contender) for the timed repetitions of one instance.
_BUDGET = 2.0
#: An instance opt_einsum needs longer than this for is timed once per contender.
_ONE_SHOT = 10.0


def instances() -> list[dict[str, Any]]:
    """The instance metadata (name, subscripts, shapes, dtype, opt_flops path)."""
    text = resources.files(__package__).joinpath("data/einsum_instances.json").read_text("utf-8")
    data: list[dict[str, Any]] = json.loads(text)
    return data


def operands(inst: dict[str, Any], seed: int = 0) -> list[Array]:
    """Random column-major operands of an instance, scaled to keep the result finite."""
    rng = np.random.default_rng(seed)
    lhs, _, out = inst["subscripts"].partition("->")
    arrays = []
    for term, shape in zip(lhs.split(","), inst["shapes"], strict=True):
        summed = math.prod(d for ch, d in zip(term, shape, strict=True) if ch not in out)
        arr = rng.random(shape) * (2.0 / math.sqrt(summed))
        arrays.append(np.asfortranarray(arr.astype(inst["dtype"])))
    return arrays


def path_live_elements(subscripts: str, shapes: Sequence[Sequence[int]], path: Any) -> int:
    """The most intermediate and output elements alive at once along ``path`` (opt_einsum's
    linear form; a result lives from its step until the step that consumes it)."""
    lhs, _, out = subscripts.partition("->")
    terms = [set(t) for t in lhs.split(",")]
    sizes = {
        ch: d
        for t, shape in zip(lhs.split(","), shapes, strict=True)
        for ch, d in zip(t, shape, strict=True)
    }
    alive: dict[int, int] = {}
    ids = list(range(len(terms)))
    live = peak = 0
    for step in path:
        picked = [ids.pop(i) for i in sorted(step, reverse=True)]
        needed = set(out).union(*(terms[j] for j in ids))
        result = set().union(*(terms[j] for j in picked)) & needed
        terms.append(result)
        ids.append(len(terms) - 1)
        alive[len(terms) - 1] = math.prod(sizes[ch] for ch in result)
        live += alive[len(terms) - 1]
        peak = max(peak, live)
        for j in picked:
            live -= alive.pop(j, 0)
    return peak


def _torch_contender(subs: str, arrays: list[Array], path: list[Any]) -> Callable[[], Any] | None:
    try:
        import torch
    except ModuleNotFoundError:
        return None
    import opt_einsum

    tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]

    def go() -> Any:
        return opt_einsum.contract(subs, *tensors, optimize=path, backend="torch")

    return go


def _peak_traced(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated (tracemalloc) while ``fn`` runs, its result included."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return peak - base


def selected(quick: bool = False, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The instances a run covers: ``names`` if given, else all (``quick``: all but `SLOW`)."""
    every = instances()
    if names:
        unknown = sorted(set(names) - {i["name"] for i in every})
        if unknown:
            raise ValueError(f"unknown einsum instance(s) {unknown}")
        return [i for i in every if i["name"] in names]
    return [i for i in every if not (quick and i["name"] in SLOW)]


def run(
    quick: bool = False,
    names: Sequence[str] | None = None,
    on_instance: Callable[[str], None] | None = None,
) -> list[CaseResult]:
    """Run the `selected` instances on one thread (see the module docstring);
    ``on_instance(name)`` is told each instance as it starts (a progress bar)."""
    import opt_einsum
    from threadpoolctl import threadpool_limits

    from ..engine import CpuEngine

    results: list[CaseResult] = []
    with threadpool_limits(limits=1):
        eng = CpuEngine(threads=None)
        lean = CpuEngine(buffer_limit_bytes=0)
        for inst in selected(quick, names):
            if on_instance is not None:
                on_instance(inst["name"])
            results.append(_instance(inst, eng, lean, opt_einsum))
    return results


def _instance(inst: dict[str, Any], eng: Any, lean: Any, opt_einsum: Any) -> CaseResult:
    name = inst["name"]
    subs = inst["subscripts"]
    path = [tuple(c) for c in inst["opt_flops"]]
    arrays = operands(inst)
    tensors: list[Tensor] = [from_numpy(a) for a in arrays]
    views = [t.to_numpy() for t in tensors]  # read-only views of the tensors' memory

    def tenferro() -> Any:
        return eng.einsum(subs, *tensors, optimize=path)

    def reference() -> Any:
        return opt_einsum.contract(subs, *views, optimize=path)

    # The check run, which also tells how many timed repetitions fit the budget.
    t0 = time.perf_counter()
    want = reference()
    t_ref = time.perf_counter() - t0
    got = tenferro().to_numpy()
    scale = float(np.max(np.abs(want))) if want.size else 1.0
    err = float(np.max(np.abs(got - want))) / scale if want.size and scale else 0.0
    if not err <= 1e-8:
        raise AssertionError(f"einsum instance {name}: relative error {err:.2e} vs opt_einsum")
    del got, want
    contenders: list[Any] = [("tenferro", tenferro), ("opt_einsum", reference)]
    torch_fn = _torch_contender(subs, arrays, path)
    if torch_fn is not None:
        contenders.append(("torch", torch_fn))
    targets = [Target("tenferro", "opt_einsum", 1.0 if "outer_product" in name else 0.5)]
    if t_ref > _ONE_SHOT:
        # opt_einsum needs a minute on some instances: its check run is its sample,
        # and each other contender is timed once, right after it.
        medians = {"opt_einsum": t_ref}
        for label, fn in contenders:
            if label != "opt_einsum":
                t0 = time.perf_counter()
                fn()
                medians[label] = time.perf_counter() - t0
        case = CaseResult(name, "einsum-benchmark", len(arrays), medians, targets)
    else:
        case = time_case(
            name,
            contenders,
            group="einsum-benchmark",
            size=len(arrays),
            repeats=max(1, min(7, int(_BUDGET / max(t_ref, 1e-9)))),
            warmup=0 if t_ref > 1.0 else 1,
            targets=targets,
        )
    expr = lean.contract_expression(subs, *[a.shape for a in arrays], optimize=path)
    peak = _peak_traced(lambda: expr(*tensors))
    live = path_live_elements(subs, inst["shapes"], path) * arrays[0].itemsize
    case.extra.update(
        {
            "relative_error": err,
            "peak_traced_bytes": peak,
            "largest_live_bytes": live,
            "plan_live_bytes": expr.largest_live_elements * arrays[0].itemsize,
            "memory_ratio": peak / live if live else 0.0,
            "tensors": len(arrays),
            "indices": len(set(subs) - set(",->")),
        }
    )
    return case
