"""tenferro.autodiff against torch.autograd on the same programs (ratios in one run).

Usage: ``python benchmarks/bench_autodiff.py [--quick] [--repeats N] [--json PATH]``.

Cases (each program written once against an ``xp`` namespace, run with
``xp = tenferro`` under `tenferro.autodiff.value_and_grad` and with a thin torch
shim under ``torch.autograd``; float64, one BLAS thread each):

* ``mps_energy``: <psi|H|psi> / <psi|psi> of a random MPS (L = 16, D = 32, d = 2)
  with the Heisenberg MPO, contracted site by site with einsum; gradient in all
  sites.
* ``peps_norm``: <psi|psi> of a random 4 x 4 PEPS (D = 3, d = 2), double-layer
  tensors contracted row by row; gradient in all sites.
* ``trg_grad``: d(ln Z/N)/dK of 20 TRG steps at chi = 16 (examples/trg_ising.py's
  `lnz_per_site`). torch's SVD rule divides by the gaps of the Ising tensor's
  degenerate singular values: the row says whether its gradient came out finite.

Time: the paired-ratio harness (`tenferro.bench.harness.time_case`). Peak memory:
each contender runs once more in a fresh child process, which resets the kernel's
high-water mark after its imports and set-up and reports ``VmHWM - VmRSS``, the
resident memory the call itself added (everything: pools, torch's allocator,
LAPACK workspace). torch rows are skipped when torch is not installed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

SIZES = {
    "full": {"mps": (16, 32), "peps": (4, 3), "trg": (16, 20)},
    "quick": {"mps": (8, 8), "peps": (3, 2), "trg": (8, 6)},
}


# ---------------------------------------------------------------------------- torch shim
class TorchXP:
    """The namespace functions the programs use, spelled for torch."""

    def __init__(self) -> None:
        import torch

        self.t = torch
        self.linalg = self._Linalg(torch)

    class _Linalg:
        def __init__(self, torch: Any) -> None:
            self.t = torch

        def vector_norm(self, x: Any) -> Any:
            return self.t.linalg.vector_norm(x)

        def svd_truncated(self, m: Any, max_rank: int, cutoff: float = 0.0) -> Any:
            u, s, vh = self.t.linalg.svd(m, full_matrices=False)
            keep = int((s >= cutoff * s[0]).sum().clamp(min=1))
            r = min(max_rank, keep)
            return u[:, :r], s[:r], vh[:r], None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.t, name)

    def permute_dims(self, x: Any, axes: Any) -> Any:
        return x.permute(*axes)

    def expand_dims(self, x: Any, axis: int) -> Any:
        return x.unsqueeze(axis)

    def stack(self, xs: Any) -> Any:
        return self.t.stack(list(xs))


# ---------------------------------------------------------------------------- programs
def heisenberg_mpo() -> np.ndarray[Any, Any]:
    """W[w_left, w_right, s_out, s_in] of the Heisenberg chain (bond 5): the numpy DMRG
    reference's (`benchmarks/dmrg_numpy.py`)."""
    from dmrg_numpy import heisenberg_mpo as mpo

    w: np.ndarray[Any, Any] = mpo()
    return w


def mps_inputs(length: int, bond: int, seed: int = 0) -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    sites = []
    for i in range(length):
        left = 1 if i == 0 else bond
        right = 1 if i == length - 1 else bond
        sites.append(rng.standard_normal((left, 2, right)) / math.sqrt(2 * bond))
    return sites


def mps_energy(xp: Any, sites: list[Any], w: Any) -> Any:
    """<psi|H|psi> / <psi|psi>, left to right, three einsums per site and two for the norm."""
    env = None
    norm = None
    wl = len(w) - 1
    for i, a in enumerate(sites):
        wi = w[wl : wl + 1] if i == 0 else (w[:, :1] if i == len(sites) - 1 else w)
        if env is None:
            env = xp.einsum("asc,wvts,bte->cve", a, wi, a)
            norm = xp.einsum("asc,ase->ce", a, a)
        else:
            x = xp.einsum("awb,asc->wbsc", env, a)
            y = xp.einsum("wbsc,wvts->bcvt", x, wi)
            env = xp.einsum("bcvt,bte->cve", y, a)
            norm = xp.einsum("ce,csf,esg->fg", norm, a, a)
    return xp.sum(env) / xp.sum(norm)


def peps_inputs(side: int, bond: int, seed: int = 1) -> list[np.ndarray[Any, Any]]:
    """Site tensors A[p, u, d, l, r] (boundary bonds of dimension 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(side):
        for j in range(side):
            u = 1 if i == 0 else bond
            d = 1 if i == side - 1 else bond
            left = 1 if j == 0 else bond
            r = 1 if j == side - 1 else bond
            out.append(rng.standard_normal((2, u, d, left, r)) / math.sqrt(2 * bond))
    return out


def peps_norm(xp: Any, sites: list[Any]) -> Any:
    """<psi|psi>: double-layer tensors, then a boundary tensor absorbed row by row."""
    side = math.isqrt(len(sites))
    layers = []
    for a in sites:
        _, u, d, left, r = a.shape
        t = xp.einsum("pudlr,pUDLR->uUdDlLrR", a, a)
        layers.append(xp.reshape(t, (u * u, d * d, left * left, r * r)))
    letters = "abcdefghijklmnopqrstuvwxyz"
    boundary = None
    for i in range(side):
        row = layers[i * side : (i + 1) * side]
        if boundary is None:
            boundary = row[0]  # [u=1, d, l=1, r]
            boundary = xp.reshape(boundary, (boundary.shape[1], boundary.shape[3]))
            for t in row[1:]:
                t2 = xp.reshape(t, (t.shape[1], t.shape[2], t.shape[3]))  # [d, l, r]
                n = boundary.ndim
                ins = letters[:n]
                # boundary[d_0, ..., d_{j-1}, r] with T[d, l, r]: l meets the open bond.
                boundary = xp.einsum(f"{ins},Y{ins[-1]}X->{ins[:-1]}YX", boundary, t2)
            boundary = xp.reshape(boundary, tuple(boundary.shape[:-1]))  # drop r = 1
            continue
        # boundary[d_0, ..., d_{side-1}]; absorb each tensor T[u, d, l, r] of the row.
        bl = letters[:side]
        first = row[0]
        first = xp.reshape(first, (first.shape[0], first.shape[1], first.shape[3]))  # l = 1
        boundary = xp.einsum(f"{bl},aYX->Y{bl[1:]}X", boundary, first)
        for j, t in enumerate(row[1:], start=1):
            cur = letters[: side + 1]  # side down legs (some new) and the open right bond
            new = cur[:j] + "Y" + cur[j + 1 : side] + "X"
            boundary = xp.einsum(f"{cur},{cur[j]}Y{cur[side]}X->{new}", boundary, t)
        boundary = xp.reshape(boundary, tuple(boundary.shape[:-1]))
    return xp.sum(boundary)


# ---------------------------------------------------------------------------- runners
def tenferro_runner(case: str, size: Any) -> Any:
    import tenferro as tfr
    import tenferro.autodiff as ad

    if case == "mps":
        sites = [tfr.asarray(a) for a in mps_inputs(*size)]
        w = tfr.asarray(heisenberg_mpo())
        vg = ad.value_and_grad(lambda s: mps_energy(tfr, s, w))
        return lambda: vg(sites)
    if case == "peps":
        sites = [tfr.asarray(a) for a in peps_inputs(*size)]
        vg = ad.value_and_grad(lambda s: peps_norm(tfr, s))
        return lambda: vg(sites)
    from trg_ising import lnz_per_site

    chi, steps = size
    g = ad.value_and_grad(lambda k: lnz_per_site(k, chi, steps))
    k0 = tfr.asarray(0.44)
    return lambda: g(k0)


def torch_runner(case: str, size: Any) -> Any:
    import torch

    torch.set_num_threads(1)
    xp = TorchXP()
    if case == "mps":
        w = torch.tensor(heisenberg_mpo())
        arrays = mps_inputs(*size)

        def run() -> Any:
            sites = [torch.tensor(a, requires_grad=True) for a in arrays]
            loss = mps_energy(xp, sites, w)
            return loss.detach(), torch.autograd.grad(loss, sites)

        return run
    if case == "peps":
        arrays = peps_inputs(*size)

        def run_peps() -> Any:
            sites = [torch.tensor(a, requires_grad=True) for a in arrays]
            loss = peps_norm(xp, sites)
            return loss.detach(), torch.autograd.grad(loss, sites)

        return run_peps
    from trg_ising import lnz_per_site

    chi, steps = size

    def run_trg() -> Any:
        k = torch.tensor(0.44, dtype=torch.float64, requires_grad=True)
        loss = lnz_per_site(k, chi, steps, xp=xp)
        return loss.detach(), torch.autograd.grad(loss, k)

    return run_trg


def _record_products(fn: Any) -> list[tuple[Any, ...]]:
    """The matrix products one call of ``fn`` (a tenferro program) hands to BLAS: each
    ``(left shape, left transposed, right shape, right transposed)``, read by wrapping
    the einsum executor's and the planned products' numpy entry points for one call."""
    import tenferro.engine.einsum.executor as executor
    import tenferro.engine.einsum.fast as fast
    import tenferro.engine.gemm as gemm

    got: list[tuple[Any, ...]] = []

    def layout(g: Any) -> tuple[tuple[int, ...], bool]:
        transposed = g.ndim >= 2 and not g.flags.c_contiguous and g.flags.f_contiguous
        return tuple(g.shape), bool(transposed)

    def wrap(real: Any) -> Any:
        def recording(a: Any, b: Any, *args: Any, **kw: Any) -> Any:
            if a.ndim >= 2 and b.ndim >= 2:
                got.append((*layout(a), *layout(b)))
            return real(a, b, *args, **kw)

        return recording

    saved = [
        (m, n, getattr(m, n))
        for m, n in ((executor, "_matmul"), (executor, "_dot"), (fast, "_dot"), (gemm, "_matmul"))
    ]
    for m, n, real in saved:
        setattr(m, n, wrap(real))
    try:
        fn()
    finally:
        for m, n, real in saved:
            setattr(m, n, real)
    return got


def blas_floor(case: str, size: Any, repeats: int) -> tuple[float, Any, int] | None:
    """The BLAS floor of a case: the products tenferro's call hands to BLAS, replayed
    alone with numpy's BLAS (`np.matmul` into an output) and with torch's (`torch.matmul`
    into an output), same shapes and operand layouts; the paired ratio numpy/torch is
    what the library under each contender costs, with no framework around it.
    None when torch is missing or the call makes no product."""
    if not _has_torch():
        return None
    import torch

    from tenferro.bench.harness import time_case

    products = _record_products(tenferro_runner(case, size))
    if not products:
        return None
    rng = np.random.default_rng(1)

    def operand(shape: tuple[int, ...], transposed: bool) -> np.ndarray[Any, Any]:
        if not transposed:
            return rng.standard_normal(shape)
        flipped = (*shape[:-2], shape[-1], shape[-2])
        return np.swapaxes(rng.standard_normal(flipped), -1, -2)

    np_ops = []
    for sa, ta, sb, tb in products:
        a, b = operand(sa, ta), operand(sb, tb)
        np_ops.append((a, b, np.empty((*np.broadcast_shapes(sa[:-2], sb[:-2]), sa[-2], sb[-1]))))
    torch_ops = [
        (torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(o)) for a, b, o in np_ops
    ]

    def run_numpy() -> None:
        for a, b, o in np_ops:
            np.matmul(a, b, out=o)

    def run_torch() -> None:
        for a, b, o in torch_ops:
            torch.matmul(a, b, out=o)

    result = time_case(
        f"{case} BLAS floor",
        [("numpy", run_numpy), ("torch", run_torch)],
        repeats=repeats,
        warmup=1,
        targets=[],
    )
    return result.ratio("numpy", "torch"), result.ratio_spread("numpy", "torch"), len(products)


def _child(contender: str, case: str, mode: str) -> None:
    """The resident memory a call adds above the set-up (VmHWM - VmRSS): first and second call."""
    size = SIZES[mode][case]
    fn = tenferro_runner(case, size) if contender == "tenferro" else torch_runner(case, size)

    def status(key: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) * 1024
        return 0

    peaks = []
    for _ in range(2):
        Path("/proc/self/clear_refs").write_text("5")
        base = status("VmRSS:")
        fn()
        peaks.append(status("VmHWM:") - base)
    print(json.dumps({"first": peaks[0], "second": peaks[1]}))


def peak_memory(contender: str, case: str, mode: str) -> dict[str, int] | None:
    cmd = [sys.executable, __file__, "--child", contender, case, mode]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    got: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    from tenferro.bench.harness import Target, format_ratio, format_spread, time_case

    mode = "quick" if args.quick else "full"
    torch_ok = _has_torch()
    rows = []
    for case in ("mps", "peps", "trg"):
        size = SIZES[mode][case]
        contenders: list[tuple[str, Any]] = [("tenferro", tenferro_runner(case, size))]
        if torch_ok:
            contenders.append(("torch", torch_runner(case, size)))
        repeats = max(3, args.repeats // 2) if case == "trg" else args.repeats
        result = time_case(
            case,
            contenders,
            repeats=repeats,
            warmup=1,
            targets=[Target("tenferro", "torch", 1.0)] if torch_ok else [],
        )
        row: dict[str, Any] = {"case": case, "size": size, "medians_s": result.medians}
        if torch_ok:
            row["ratio"] = result.ratio("tenferro", "torch")
            row["ratio_iqr"] = result.ratio_spread("tenferro", "torch")
            value_t = contenders[1][1]()
            grads = value_t[1]
            row["torch_gradient_finite"] = bool(
                all(
                    bool(g.isfinite().all())
                    for g in (grads if isinstance(grads, tuple) else (grads,))
                )
            )
        floor = blas_floor(case, size, repeats) if torch_ok else None
        if floor is not None:
            row["blas_floor_ratio"], row["blas_floor_iqr"], row["blas_products"] = floor
        row["peak_bytes"] = {
            c: peak_memory(c, case, mode)
            for c in (["tenferro", "torch"] if torch_ok else ["tenferro"])
        }
        rows.append(row)
        meds = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in result.medians.items())
        line = f"{case:5s} {meds}"
        if torch_ok:
            line += (
                f"  ratio {format_ratio(row['ratio'])}{format_spread(row['ratio_iqr'])}"
                f"  torch grad finite: {row['torch_gradient_finite']}"
            )
        peaks = ", ".join(
            f"{k} {v['first'] / 2**20:.1f} / {v['second'] / 2**20:.1f} MiB"
            if v is not None
            else f"{k} n/a"
            for k, v in row["peak_bytes"].items()
        )
        if floor is not None:
            line += (
                f"\n      BLAS floor (its {floor[2]} products alone, numpy's BLAS / torch's): "
                f"{format_ratio(floor[0])}{format_spread(floor[1])}"
            )
        print(line + f"\n      peak memory added, first / second call: {peaks}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"mode": mode, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
