"""Two-site DMRG for the open spin-1/2 Heisenberg chain, H = sum_i S_i . S_{i+1}.

The state is an MPS, the Hamiltonian an MPO of bond dimension 5. Every step of
a sweep runs inside tenferro: the effective Hamiltonian is applied by
``eng.einsum`` (four pairwise contractions into pooled buffers), the ground
state of each two-site problem comes from a Lanczos eigensolver written with
engine operations (einsum dot products, scalings, subtractions, norms), the
new bond is cut by ``eng.svd_truncated``, and the environments are updated by
``eng.einsum``; all under ``tfr.forbid_copies()``. The Krylov coefficients are
Python floats, and the small tridiagonal eigenproblem they form is solved by
``scipy.linalg.eigh_tridiagonal`` on those floats (no tensor data leaves
tenferro). numpy only builds the MPO and the random initial state.

    python examples/dmrg_heisenberg.py --length 16 --bond-dim 64 --sweeps 6 --json d.json

For L <= 20 the result is compared with exact diagonalisation (scipy.sparse).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import numpy as np
from scipy.linalg import eigh_tridiagonal

import tenferro as tfr

#: Sweeps after which the bond dimensions (and so the buffer sizes) are fixed.
WARMUP_SWEEPS = 2


def heisenberg_mpo() -> tfr.Tensor:
    """The bulk MPO tensor W[w_left, w_right, out, in] (bond 5; lower-triangular form)."""
    sp = np.array([[0.0, 1.0], [0.0, 0.0]])
    sm = sp.T.copy()
    sz = np.diag([0.5, -0.5])
    eye = np.eye(2)
    w = np.zeros((5, 5, 2, 2))
    w[0, 0] = eye
    w[1, 0] = sp
    w[2, 0] = sm
    w[3, 0] = sz
    w[4, 1] = 0.5 * sm
    w[4, 2] = 0.5 * sp
    w[4, 3] = sz
    w[4, 4] = eye
    return tfr.from_numpy(np.asfortranarray(w))


def _boundary(index: int) -> tfr.Tensor:
    env = np.zeros((1, 5, 1), order="F")
    env[0, index, 0] = 1.0
    return tfr.from_numpy(env)


def _reshape(x: Any, shape: tuple[int, ...]) -> tfr.TensorView:
    """A reshaped view of a compact tensor or view: the same memory, no copy."""
    view = x.as_view() if isinstance(x, tfr.Tensor) else x
    reshaped: tfr.TensorView = view.reshape_view(shape)
    return reshaped


def _scalar(t: tfr.Tensor) -> float:
    """The value of a rank-0 result (a read-only borrow, no copy)."""
    return float(t.to_numpy())


class Dmrg:
    """Two-site DMRG state: MPS tensors A[i] [Dl, 2, Dr], environments, MPO."""

    def __init__(
        self, eng: tfr.CpuEngine, length: int, bond_dim: int, seed: int = 0, cutoff: float = 1e-14
    ) -> None:
        self.eng = eng
        self.length = length
        self.bond_dim = bond_dim
        self.cutoff = cutoff
        self.w = heisenberg_mpo()
        rng = np.random.default_rng(seed)
        dims = [1]
        for i in range(1, length):
            dims.append(min(2**i, 2 ** (length - i), bond_dim))
        dims.append(1)
        # Site tensors are tensors or reshaped views of the engine's outputs.
        self.mps: list[Any] = [
            tfr.from_numpy(np.asfortranarray(rng.standard_normal((dims[i], 2, dims[i + 1]))))
            for i in range(length)
        ]
        self._right_canonicalise()
        self.left: list[tfr.Tensor | None] = [None] * (length + 1)
        self.right: list[tfr.Tensor | None] = [None] * (length + 1)
        self.left[0] = _boundary(4)
        self.right[length] = _boundary(0)
        for i in range(length - 1, 0, -1):
            self.right[i] = self._grow_right(self.right[i + 1], self.mps[i])

    def _right_canonicalise(self) -> None:
        """Make sites 1..L-1 right-orthonormal with LQ decompositions (engine ``lq``)."""
        eng = self.eng
        for i in range(self.length - 1, 0, -1):
            a = self.mps[i]
            dl, d, dr = a.shape
            lo, q = eng.lq(_reshape(a, (dl, d * dr)))
            k = q.shape[0]
            self.mps[i] = _reshape(q, (k, d, dr))
            self.mps[i - 1] = eng.einsum("asb,bc->asc", self.mps[i - 1], lo)
        a0 = self.mps[0]
        self.mps[0] = eng.div(a0, _scalar(eng.vector_norm(a0)))

    # -- environments -------------------------------------------------------------
    def _grow_left(self, env: Any, a: Any) -> tfr.Tensor:
        return self.eng.einsum("awb,atx,wvts,bsy->xvy", env, a, self.w, a)

    def _grow_right(self, env: Any, b: Any) -> tfr.Tensor:
        return self.eng.einsum("xtg,vuts,ysh,guh->xvy", b, self.w, b, env)

    # -- the effective Hamiltonian and Lanczos ----------------------------------------
    def _apply(self, lenv: tfr.Tensor, renv: tfr.Tensor, theta: tfr.Tensor) -> tfr.Tensor:
        """H_eff theta for theta [Dl, 2, 2, Dr]."""
        w = self.w
        return self.eng.einsum("awb,wvcd,vuef,guh,bdfh->aceg", lenv, w, w, renv, theta)

    def _dot(self, x: tfr.Tensor, y: tfr.Tensor) -> float:
        return _scalar(self.eng.einsum("abcd,abcd->", x, y))

    def lanczos(
        self,
        lenv: tfr.Tensor,
        renv: tfr.Tensor,
        theta: tfr.Tensor,
        max_iter: int = 40,
        tol: float = 1e-13,
    ) -> tuple[float, tfr.Tensor]:
        """Lowest eigenpair of H_eff by Lanczos (local reorthogonalisation)."""
        eng = self.eng
        # theta is the caller's to give away (``_bond`` drops its own reference): it is
        # normalised in place and becomes the first Krylov vector, not a copy of it.
        v = eng.div(theta, _scalar(eng.vector_norm(theta)), out=theta)
        del theta
        basis = [v]
        alphas: list[float] = []
        betas: list[float] = []
        energy = math.inf
        coeffs: Any = np.ones(1)
        # The Krylov space cannot be larger than theta's space (tiny at the chain ends).
        steps = min(max_iter, v.size)
        for j in range(steps):
            w = self._apply(lenv, renv, basis[j])
            alpha = self._dot(basis[j], w)
            alphas.append(alpha)
            # Local reorthogonalisation against the last two vectors, twice (a single
            # Gram-Schmidt pass leaves noise once w is mostly cancellation). Against the
            # whole basis it costs O(k^2) small operations per bond and buys nothing
            # for the lowest eigenpair, which is all DMRG needs.
            # In place (elementwise out= may alias its input): w is this call's own
            # result, so each update needs one temporary instead of two new buffers.
            for _ in range(2):
                for u in basis[-2:]:
                    eng.sub(w, eng.mul(u, self._dot(u, w)), out=w)
            vals, vecs = eigh_tridiagonal(np.array(alphas), np.array(betas))
            new_energy = float(vals[0])
            coeffs = vecs[:, 0]
            beta = _scalar(eng.vector_norm(w))
            converged = abs(new_energy - energy) < tol * max(1.0, abs(new_energy))
            energy = new_energy
            if converged or beta < 1e-10 * max(1.0, abs(alphas[-1])) or j == steps - 1:
                break
            betas.append(beta)
            basis.append(eng.div(w, beta, out=w))
        del w
        # The Ritz vector, accumulated in place in the first Krylov vector's buffer;
        # each later vector is scaled in place and dropped once added, so the Ritz
        # step needs no buffer beyond the basis itself.
        ground = eng.mul(basis[0], float(coeffs[0]), out=basis[0])
        for j in range(1, len(coeffs)):
            eng.add(ground, eng.mul(basis[j], float(coeffs[j]), out=basis[j]), out=ground)
            basis[j] = ground
        del basis
        return energy, eng.div(ground, _scalar(eng.vector_norm(ground)), out=ground)

    # -- the sweep ---------------------------------------------------------------------
    def _bond(self, i: int, to_right: bool) -> tuple[float, float]:
        """Optimise sites (i, i+1); returns (energy, discarded weight)."""
        eng = self.eng
        theta = eng.einsum("asb,btc->astc", self.mps[i], self.mps[i + 1])
        # The two site tensors live on in theta only: drop them now (they are replaced
        # after the SVD), so their buffers are free during the eigensolver.
        self.mps[i] = self.mps[i + 1] = None
        lenv, renv = self.left[i], self.right[i + 2]
        assert lenv is not None and renv is not None
        # lanczos takes theta over (it becomes the first Krylov vector).
        energy, theta = self.lanczos(lenv, renv, theta)
        dl, d1, d2, dr = theta.shape
        u, s, vh, disc = eng.svd_truncated(
            _reshape(theta, (dl * d1, d2 * dr)),
            max_rank=self.bond_dim,
            cutoff=self.cutoff,
        )
        del theta  # the SVD's operand: its buffer is free for what follows
        k = s.shape[0]
        # The environment that the new one replaces is stale once the eigensolver ran:
        # it is dropped *before* the update, so that its buffer (of exactly the new
        # environment's size in the bulk) is the one the update's output gets back
        # from the pool, and the update does not hold both.
        if to_right:
            del renv
            if i + 2 < self.length:
                self.right[i + 2] = None
            self.mps[i] = _reshape(u, (dl, d1, k))
            self.mps[i + 1] = _reshape(eng.einsum("k,kj->kj", s, vh), (k, d2, dr))
            del u, s, vh
            self.left[i + 1] = self._grow_left(lenv, self.mps[i])
        else:
            del lenv
            if i > 0:
                self.left[i] = None
            self.mps[i] = _reshape(eng.einsum("ik,k->ik", u, s), (dl, d1, k))
            self.mps[i + 1] = _reshape(vh, (k, d2, dr))
            del u, s, vh
            self.right[i + 1] = self._grow_right(renv, self.mps[i + 1])
        return energy, _scalar(disc)

    def sweep(self) -> tuple[float, float]:
        """One left-to-right and right-to-left sweep; (energy, largest discarded weight)."""
        energy = math.inf
        worst = 0.0
        for i in range(self.length - 1):
            energy, disc = self._bond(i, True)
            worst = max(worst, disc)
        for i in range(self.length - 2, -1, -1):
            energy, disc = self._bond(i, False)
            worst = max(worst, disc)
        return energy, worst


def exact_energy(length: int) -> float:
    """Ground-state energy by exact diagonalisation (scipy.sparse, for small chains)."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigsh

    sx = sp.csr_matrix(np.array([[0, 0.5], [0.5, 0]]))
    sy = sp.csr_matrix(np.array([[0, -0.5j], [0.5j, 0]]))
    sz = sp.csr_matrix(np.array([[0.5, 0], [0, -0.5]]))
    h = sp.csr_matrix((2**length, 2**length), dtype=complex)
    for i in range(length - 1):
        for s in (sx, sy, sz):
            left = sp.identity(2**i, format="csr")
            right = sp.identity(2 ** (length - i - 2), format="csr")
            h = h + sp.kron(sp.kron(left, sp.kron(s, s)), right, format="csr")
    h = h.real.tocsr()
    value = eigsh(h, k=1, which="SA", tol=1e-14)[0][0]
    return float(value)


def run_dmrg(
    length: int,
    bond_dim: int,
    sweeps: int,
    eng: tfr.CpuEngine | None = None,
    progress: Any = None,
    seed: int = 0,
    warmup: int = WARMUP_SWEEPS,
) -> dict[str, Any]:
    """Ground-state energy after ``sweeps`` sweeps, with timings and pool statistics.

    Pool allocations per bond step are counted over the sweeps after the first
    ``warmup`` ones (None when there are none).
    """
    eng = eng or tfr.CpuEngine()
    start = time.perf_counter()
    state = Dmrg(eng, length, bond_dim, seed)
    energies: list[float] = []
    discarded: list[float] = []
    sweep_seconds: list[float] = []
    copies_before = tfr.copy_stats().copies
    warm = None
    with tfr.forbid_copies():
        for k in range(1, sweeps + 1):
            t0 = time.perf_counter()
            energy, disc = state.sweep()
            sweep_seconds.append(time.perf_counter() - t0)
            energies.append(energy)
            discarded.append(disc)
            if k == min(warmup, sweeps):
                warm = eng.buffer_pool_cache_stats()
            if progress is not None:
                progress(k)
    seconds = time.perf_counter() - start
    stats = eng.buffer_pool_cache_stats()
    measured = sweeps - warmup
    bonds = 2 * (length - 1)
    allocations = (
        (stats.misses - warm.misses) / (measured * bonds) if warm and measured > 0 else None
    )
    return {
        "length": length,
        "bond_dim": bond_dim,
        "sweeps": sweeps,
        "energy": energies[-1],
        "energy_per_sweep": energies,
        "max_discarded_weight_per_sweep": discarded,
        "seconds": seconds,
        "sweep_seconds": sweep_seconds,
        "warmup_sweeps": warmup,
        "allocations_per_bond_step_after_warmup": allocations,
        "pool_hit_rate": stats.hit_rate,
        "pool": stats._asdict(),
        "copies_in_loop": tfr.copy_stats().copies - copies_before,
    }


def _plot(path: str, result: dict[str, Any], exact: float | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    energies = result["energy_per_sweep"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    sweeps = list(range(1, len(energies) + 1))
    if exact is not None:
        ax.semilogy(sweeps, [max(abs(e - exact), 1e-16) for e in energies], "o-")
        ax.set_ylabel("|E - E_exact|")
    else:
        ax.plot(sweeps, energies, "o-")
        ax.set_ylabel("energy")
    ax.set_xlabel("sweep")
    ax.set_title(f"two-site DMRG, Heisenberg L={result['length']}, D={result['bond_dim']}")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=16, help="number of spins (default 16)")
    parser.add_argument("--bond-dim", type=int, default=64, help="MPS bond dimension (default 64)")
    parser.add_argument("--sweeps", type=int, default=6, help="number of sweeps (default 6)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random initial state")
    parser.add_argument("--json", metavar="PATH", help="write the result and timings as JSON")
    parser.add_argument("--plot", metavar="PATH", help="plot the energy error against sweeps")
    parser.add_argument("--no-exact", action="store_true", help="skip exact diagonalisation")
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads")
    args = parser.parse_args(argv)
    if args.length < 2 or args.bond_dim < 1 or args.sweeps < 1:
        parser.error("need --length >= 2, --bond-dim >= 1 and --sweeps >= 1")

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    eng = tfr.CpuEngine(threads=args.threads)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(f"DMRG L={args.length} D={args.bond_dim}", total=args.sweeps)
        result = run_dmrg(
            args.length,
            args.bond_dim,
            args.sweeps,
            eng,
            lambda k: bar.update(task, completed=k),
            args.seed,
        )
    exact = None if args.no_exact or args.length > 20 else exact_energy(args.length)
    result["exact_energy"] = exact
    result["abs_error"] = None if exact is None else abs(result["energy"] - exact)
    lines = [
        f"L = {args.length}  D = {args.bond_dim}  sweeps = {args.sweeps}",
        f"energy = {result['energy']:.12f}",
    ]
    if exact is not None:
        lines += [f"exact  = {exact:.12f}", f"|error| = {result['abs_error']:.3e}"]
    lines += [
        f"time = {result['seconds']:.3f} s",
        f"pool allocations per bond step after {WARMUP_SWEEPS} warm-up sweeps = "
        f"{result['allocations_per_bond_step_after_warmup']}",
        f"pool hit rate = {result['pool_hit_rate']:.4f}",
        f"named copies in the loop = {result['copies_in_loop']}",
    ]
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    if args.plot:
        _plot(args.plot, result, exact)
    return 0


if __name__ == "__main__":
    sys.exit(main())
