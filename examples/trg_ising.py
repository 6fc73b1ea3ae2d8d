"""Levin-Nave tensor renormalization group (TRG) for the 2D classical Ising model.

Every step of the inner loop runs inside tenferro: two truncated SVDs
(``eng.svd_truncated``), square roots and scalings (engine elementwise and
einsum), one transposition (``eng.transpose``, into a pooled buffer) and the
four-tensor contraction (``eng.einsum``), all under ``tfr.forbid_copies()``.
The only numpy is the setup of the initial 2x2x2x2 tensor and the exact
(Onsager) reference.

    python examples/trg_ising.py --chi 24 --steps 30 --json trg.json --plot trg.png

Reports ln Z per site, the relative error against Onsager's solution, pool
allocations per step after the warm-up steps and the pool hit rate.

Differentiable TRG (``--thermo``): the same algorithm written as ordinary
array-API code (``xp = tenferro``, `lnz_per_site`) is differentiated by
`tenferro.autodiff`: the energy ``u = -d(ln Z/N)/dK`` by `grad` and the specific
heat ``c = K^2 d^2(ln Z/N)/dK^2`` by `grad` of `grad`, through the truncated
SVDs (whose singular values are degenerate: the Z2 symmetry of the model), and
compared with Onsager's exact solution:

    python examples/trg_ising.py --thermo 0.40 0.46 0.50 --chi 16 --steps 20
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import numpy as np

import tenferro as tfr

#: The critical temperature of the square-lattice Ising model (J = k_B = 1).
TC = 2.0 / math.log(1.0 + math.sqrt(2.0))
#: Steps after which the bond dimension (and so every buffer size) is fixed; the
#: pool is reset then, and allocations are counted from the step after.
WARMUP = 4


def onsager_lnz(temperature: float) -> float:
    """Onsager's exact ln Z per site of the infinite square lattice (J = 1).

    ln Z/N = ln(2 cosh 2b) + (1/2pi) int_0^pi ln((1 + sqrt(1 - k^2 sin^2 t)) / 2) dt with
    k = 2 sinh 2b / cosh^2 2b. The integrand is smooth on each half of [0, pi]
    (at T_c it has a kink at pi/2), so Gauss-Legendre on each half converges to
    machine precision.
    """
    beta = 1.0 / temperature
    k = 2.0 * math.sinh(2 * beta) / math.cosh(2 * beta) ** 2
    x, w = np.polynomial.legendre.leggauss(200)
    total = 0.0
    for lo, hi in ((0.0, math.pi / 2), (math.pi / 2, math.pi)):
        theta = 0.5 * (hi - lo) * x + 0.5 * (hi + lo)
        root = np.sqrt(np.maximum(0.0, 1.0 - (k * np.sin(theta)) ** 2))
        total += 0.5 * (hi - lo) * float(np.dot(w, np.log(0.5 * (1.0 + root))))
    return math.log(2.0 * math.cosh(2 * beta)) + total / (2.0 * math.pi)


def onsager_energy(k: float) -> float:
    """Onsager's exact energy per site u = -d(ln Z/N)/dK at coupling K = J/T (J = 1).

    u = -coth(2K) [1 + (2/pi)(2 tanh^2(2K) - 1) K1(q)], q = 2 sinh 2K / cosh^2 2K,
    with K1 the complete elliptic integral of the first kind (modulus q).
    """
    from scipy.special import ellipk

    q = 2.0 * math.sinh(2 * k) / math.cosh(2 * k) ** 2
    t2 = math.tanh(2 * k) ** 2
    return (
        -1.0 / math.tanh(2 * k) * (1.0 + (2.0 / math.pi) * (2.0 * t2 - 1.0) * float(ellipk(q * q)))
    )


def onsager_specific_heat(k: float) -> float:
    """Onsager's exact specific heat per site c = K^2 d^2(ln Z/N)/dK^2 (J = 1).

    c = (4/pi) (K coth 2K)^2 [K1(q) - E1(q) - (1 - tanh^2 2K)(pi/2 + (2 tanh^2 2K - 1) K1(q))],
    with K1, E1 the complete elliptic integrals of the first and second kind.
    """
    from scipy.special import ellipe, ellipk

    q = 2.0 * math.sinh(2 * k) / math.cosh(2 * k) ** 2
    k1 = float(ellipk(q * q))
    e1 = float(ellipe(q * q))
    t2 = math.tanh(2 * k) ** 2
    lead = (4.0 / math.pi) * (k / math.tanh(2 * k)) ** 2
    return lead * (k1 - e1 - (1.0 - t2) * (math.pi / 2 + (2.0 * t2 - 1.0) * k1))


def lnz_per_site(coupling: Any, chi: int, steps: int, xp: Any = tfr) -> Any:
    """ln Z per site by TRG, as ordinary array-API code: differentiable in ``coupling``.

    ``coupling`` is K = J/T as a 0-d array (a tracer under `tenferro.autodiff`).
    The same cuts and contraction as `trg_factors`/`trg_contract`, written with the
    namespace (``xp.linalg.svd_truncated``, ``xp.einsum``, ``xp.reshape``, ...).
    """
    ch = xp.sqrt(xp.cosh(coupling))
    sh = xp.sqrt(xp.sinh(coupling))
    w = xp.stack([xp.stack([ch, sh]), xp.stack([ch, -sh])])
    t = xp.einsum("si,sj,sk,sl->ijkl", w, w, w, w)
    c0 = xp.linalg.vector_norm(t)
    t = t / c0
    lnz = xp.log(c0)

    def split(m: Any) -> tuple[Any, Any]:
        # Exactly zero singular values (the ordered phase has them) are cut: sqrt has
        # no derivative at 0. Equal ones are kept: the SVD rule's broadening handles them.
        u, s, vh, _ = xp.linalg.svd_truncated(m, max_rank=chi, cutoff=1e-13)
        r = xp.sqrt(s)
        return u * r, xp.expand_dims(r, axis=1) * vh

    for k in range(1, steps + 1):
        d = t.shape[0]
        f1, f3 = split(xp.reshape(t, (d * d, d * d)))
        f2, f4 = split(xp.reshape(xp.permute_dims(t, (1, 2, 3, 0)), (d * d, d * d)))
        k1, k2 = f1.shape[1], f2.shape[1]
        new = xp.einsum(
            "axy,yzb,zwc,dwx->adcb",
            xp.reshape(f3, (k1, d, d)),
            xp.reshape(f2, (d, d, k2)),
            xp.reshape(f1, (d, d, k1)),
            xp.reshape(f4, (k2, d, d)),
        )
        norm = xp.linalg.vector_norm(new)
        t = new / norm
        lnz = lnz + xp.log(norm) / 2.0**k
    return lnz + xp.log(xp.einsum("abab->", t)) / 2.0**steps


def thermodynamics(coupling: float, chi: int, steps: int) -> dict[str, float]:
    """ln Z/N, u = -d(ln Z/N)/dK and c = K^2 d^2(ln Z/N)/dK^2 by automatic differentiation,
    with Onsager's exact values."""
    import tenferro.autodiff as ad

    def f(k: Any) -> Any:
        return lnz_per_site(k, chi, steps)

    def dfdk(k: Any) -> Any:
        return ad.grad(f)(k)

    k = tfr.asarray(coupling)
    first, second = ad.value_and_grad(dfdk)(k)
    return {
        "K": coupling,
        "u": -float(first),
        "c": coupling**2 * float(second),
        "exact_lnz": onsager_lnz(1.0 / coupling),
        "exact_u": onsager_energy(coupling),
        "exact_c": onsager_specific_heat(coupling),
    }


def initial_tensor(temperature: float) -> tfr.Tensor:
    """The site tensor T[N, W, S, E] = sum_s W[s,N] W[s,W] W[s,S] W[s,E] (adopted, no copy)."""
    beta = 1.0 / temperature
    w = np.array(
        [
            [math.sqrt(math.cosh(beta)), math.sqrt(math.sinh(beta))],
            [math.sqrt(math.cosh(beta)), -math.sqrt(math.sinh(beta))],
        ]
    )
    t = np.einsum("si,sj,sk,sl->ijkl", w, w, w, w)
    return tfr.from_numpy(np.asfortranarray(t))


def _value(t: tfr.Tensor) -> float:
    """The value of a rank-0 result, read through a borrow that ends before ``t`` is dropped.

    (``float(eng.op(x).to_numpy())`` would drop the tensor while its view is still
    alive, and the pool would then refuse the aliased buffer.)
    """
    return float(t.to_numpy())


#: The truncated SVD's route (``eng.svd_truncated(method=...)``): "gram" computes only
#: the chi leading triplets; "gesdd" the full SVD, then the cut (as numpy does).
DEFAULT_SVD = "gram"


def _split(
    eng: tfr.CpuEngine, m: Any, chi: int, svd: str = DEFAULT_SVD
) -> tuple[tfr.Tensor, tfr.Tensor]:
    """``m ~ A @ B`` with A = U sqrt(S), B = sqrt(S) Vh, rank at most ``chi``."""
    u, s, vh, _ = eng.svd_truncated(m, max_rank=chi, method=svd)
    r = eng.sqrt(s)
    return eng.einsum("ik,k->ik", u, r), eng.einsum("k,kj->kj", r, vh)


Factors = tuple[tfr.Tensor, tfr.Tensor, tfr.Tensor, tfr.Tensor]


def trg_factors(eng: tfr.CpuEngine, t: tfr.Tensor, chi: int, svd: str = DEFAULT_SVD) -> Factors:
    """The two cuts of T[N, W, S, E]: ``(F1, F2, F3, F4)``, each of rank at most ``chi``."""
    d = t.shape[0]
    # Cut 1: (N, W) | (S, E): a free column-major view, no copy.
    f1, f3 = _split(eng, t.as_view().reshape_view((d * d, d * d)), chi, svd)
    # Cut 2: (W, S) | (E, N): the permuted tensor, computed into a pooled buffer.
    t2 = eng.transpose(t, (1, 2, 3, 0))
    f2, f4 = _split(eng, t2.as_view().reshape_view((d * d, d * d)), chi, svd)
    return f1, f2, f3, f4


def trg_contract(eng: tfr.CpuEngine, factors: Factors, d: int) -> tuple[tfr.Tensor, float]:
    """The rotated lattice's site from the four factors; the normalised tensor and its norm."""
    f1, f2, f3, f4 = factors
    k1 = f1.shape[1]
    k2 = f2.shape[1]
    # The four pieces around one plaquette, contracted into the rotated lattice's site:
    # F3 (SE of the top-left site), F2 (SW of top-right), F1 (NW of bottom-right),
    # F4 (NE of bottom-left); new bonds in the order N, W, S, E.
    new = eng.einsum(
        "axy,yzb,zwc,dwx->adcb",
        f3.as_view().reshape_view((k1, d, d)),
        f2.as_view().reshape_view((d, d, k2)),
        f1.as_view().reshape_view((d, d, k1)),
        f4.as_view().reshape_view((k2, d, d)),
    )
    norm = _value(eng.vector_norm(new))
    # Normalised in place (elementwise out= may alias its input): one buffer fewer.
    eng.div(new, norm, out=new)
    return new, norm


def trg_step(
    eng: tfr.CpuEngine, t: tfr.Tensor, chi: int, svd: str = DEFAULT_SVD
) -> tuple[tfr.Tensor, float]:
    """One TRG step on T[N, W, S, E]; returns the normalised new tensor and its norm.

    (The caller still holds ``t`` during the contraction; `run_trg` drops it between
    `trg_factors` and `trg_contract` instead, one buffer of T's size fewer at the peak.)
    """
    return trg_contract(eng, trg_factors(eng, t, chi, svd), t.shape[0])


def run_trg(
    temperature: float,
    chi: int,
    steps: int,
    eng: tfr.CpuEngine | None = None,
    progress: Any = None,
    exact: bool = True,
    svd: str = DEFAULT_SVD,
) -> dict[str, Any]:
    """ln Z per site after ``steps`` TRG steps, with timings and pool statistics.

    ``exact``: also compute Onsager's value and the relative error. ``svd``: the
    truncated SVD's method ("gram" or "gesdd", see `DEFAULT_SVD`).
    """
    eng = eng or tfr.CpuEngine()
    t = initial_tensor(temperature)
    c0 = _value(eng.vector_norm(t))
    t = eng.div(t, c0)
    lnz = math.log(c0)
    step_seconds: list[float] = []
    copies_before = tfr.copy_stats().copies
    warm_stats = None
    start = time.perf_counter()
    with tfr.forbid_copies():
        for k in range(1, steps + 1):
            t0 = time.perf_counter()
            d = t.shape[0]
            factors = trg_factors(eng, t, chi, svd)
            # T is not needed once it is cut: dropping it here returns its buffer to
            # the pool before the contraction, whose intermediates are the step's peak.
            del t
            t, norm = trg_contract(eng, factors, d)
            del factors
            lnz += math.log(norm) / 2.0**k
            step_seconds.append(time.perf_counter() - t0)
            if k == WARMUP:
                # The bond dimension has stopped growing: drop the buffers of the
                # warm-up sizes, which would otherwise stay retained (and resident)
                # without ever being reused. The next step refills the pool.
                eng.reset_buffer_pool()
            if k == min(WARMUP + 1, steps):
                warm_stats = eng.buffer_pool_cache_stats()
            if progress is not None:
                progress(k)
        # The remaining tensor on a one-site torus: N meets S, W meets E.
        trace = _value(eng.einsum("abab->", t))
    seconds = time.perf_counter() - start
    lnz += math.log(trace) / 2.0**steps
    end_stats = eng.buffer_pool_cache_stats()
    measured = max(steps - WARMUP - 1, 0)
    allocations = (
        (end_stats.misses - warm_stats.misses) / measured if warm_stats and measured else None
    )
    reference = onsager_lnz(temperature) if exact else math.nan
    return {
        "temperature": temperature,
        "chi": chi,
        "steps": steps,
        "svd_method": svd,
        "lnz_per_site": lnz,
        "exact_lnz_per_site": reference,
        "relative_error": abs(lnz - reference) / abs(reference),
        "seconds": seconds,
        "step_seconds": step_seconds,
        "allocations_per_step_after_warmup": allocations,
        "pool_hit_rate": end_stats.hit_rate,
        "pool": end_stats._asdict(),
        "copies_in_loop": tfr.copy_stats().copies - copies_before,
    }


def _plot(path: str, temperature: float, chis: list[int], errors: list[float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(chis, errors, "o-")
    ax.set_xlabel("bond dimension chi")
    ax.set_ylabel("relative error of ln Z per site")
    ax.set_title(f"TRG, 2D Ising, T = {temperature:.6g}")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--temperature", type=float, default=TC, help="temperature (default: T_c = 2.269...)"
    )
    parser.add_argument("--chi", type=int, default=24, help="bond dimension (default 24)")
    parser.add_argument("--steps", type=int, default=30, help="TRG steps (default 30)")
    parser.add_argument("--json", metavar="PATH", help="write the result and timings as JSON")
    parser.add_argument(
        "--plot",
        metavar="PATH",
        help="plot the error against chi (runs chi = 4, 8, ... up to --chi)",
    )
    parser.add_argument(
        "--svd",
        choices=("gram", "gesdd"),
        default=DEFAULT_SVD,
        help="truncated SVD route: 'gram' (only the chi leading triplets, default) or "
        "'gesdd' (the full SVD, then the cut)",
    )
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads")
    parser.add_argument(
        "--thermo",
        type=float,
        nargs="+",
        metavar="K",
        help="differentiate TRG at these couplings K = 1/T: energy and specific heat by "
        "tenferro.autodiff against Onsager (uses --chi and --steps)",
    )
    args = parser.parse_args(argv)
    if args.thermo:
        print(f"chi = {args.chi}  steps = {args.steps}")
        print(
            f"{'K':>6} {'u (grad)':>14} {'u exact':>14} {'|du|':>9} "
            f"{'c (grad grad)':>14} {'c exact':>14} {'|dc|/c':>9}"
        )
        for kk in args.thermo:
            r = thermodynamics(kk, args.chi, args.steps)
            print(
                f"{kk:6.3f} {r['u']:14.8f} {r['exact_u']:14.8f} {abs(r['u'] - r['exact_u']):9.2e} "
                f"{r['c']:14.8f} {r['exact_c']:14.8f} "
                f"{abs(r['c'] - r['exact_c']) / r['exact_c']:9.2e}"
            )
        return 0
    if args.chi < 2 or args.steps < 1 or args.temperature <= 0:
        parser.error("need --chi >= 2, --steps >= 1 and --temperature > 0")

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console(stderr=True)
    eng = tfr.CpuEngine(threads=args.threads)
    chis = sorted({c for c in range(4, args.chi, 4)} | {args.chi}) if args.plot else [args.chi]
    results = []
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        for chi in chis:
            task = bar.add_task(f"TRG chi={chi}", total=args.steps)
            results.append(
                run_trg(
                    args.temperature,
                    chi,
                    args.steps,
                    eng,
                    lambda k, task=task: bar.update(task, completed=k),
                    svd=args.svd,
                )
            )
    main_result = results[-1]
    print(
        f"T = {args.temperature:.10g}  chi = {args.chi}  steps = {args.steps}  "
        f"svd = {args.svd}\n"
        f"ln Z per site = {main_result['lnz_per_site']:.12f}\n"
        f"Onsager       = {main_result['exact_lnz_per_site']:.12f}\n"
        f"relative error = {main_result['relative_error']:.3e}\n"
        f"time = {main_result['seconds']:.3f} s "
        f"({1e3 * main_result['seconds'] / args.steps:.1f} ms/step)\n"
        f"pool allocations per step after {WARMUP + 1} warm-up steps = "
        f"{main_result['allocations_per_step_after_warmup']}\n"
        f"pool hit rate = {main_result['pool_hit_rate']:.4f}\n"
        f"named copies in the loop = {main_result['copies_in_loop']}"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"result": main_result, "by_chi": results}, fh, indent=2)
    if args.plot:
        _plot(args.plot, args.temperature, chis, [r["relative_error"] for r in results])
    return 0


if __name__ == "__main__":
    sys.exit(main())
