"""The reference: two-site DMRG for the Heisenberg chain in plain numpy.

The same algorithm as ``examples/dmrg_heisenberg.py`` (the same MPO, random
initial state, LQ right-canonicalisation, Lanczos with local
reorthogonalisation, truncated SVD and environment updates), with numpy arrays,
``opt_einsum.contract`` (numpy tensordot) and ``np.linalg.svd``; the baseline of
``benchmarks/bench_tn.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from opt_einsum import contract
from scipy.linalg import eigh_tridiagonal

Array = np.ndarray[Any, Any]


def heisenberg_mpo() -> Array:
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
    return w


def _einsum(subscripts: str, *ops: Any) -> Array:
    """opt_einsum's ``contract`` on numpy arrays (pairwise ``np.tensordot``/BLAS).

    ``np.einsum(optimize=...)`` runs some pairwise steps of these networks in its
    unblocked C loop, 50x slower; opt_einsum is what a numpy user would reach for.
    """
    out: Array = contract(subscripts, *ops)
    return out


class Dmrg:
    def __init__(self, length: int, bond_dim: int, seed: int = 0, cutoff: float = 1e-14) -> None:
        self.length = length
        self.bond_dim = bond_dim
        self.cutoff = cutoff
        self.w = heisenberg_mpo()
        rng = np.random.default_rng(seed)
        dims = [1] + [min(2**i, 2 ** (length - i), bond_dim) for i in range(1, length)] + [1]
        self.mps: list[Any] = [
            rng.standard_normal((dims[i], 2, dims[i + 1])) for i in range(length)
        ]
        for i in range(length - 1, 0, -1):
            a = self.mps[i]
            dl, d, dr = a.shape
            q, r = np.linalg.qr(a.reshape(dl, d * dr).T)
            lo, q = r.T, q.T
            self.mps[i] = q.reshape(q.shape[0], d, dr)
            self.mps[i - 1] = _einsum("asb,bc->asc", self.mps[i - 1], lo)
        self.mps[0] = self.mps[0] / np.linalg.norm(self.mps[0])
        self.left: list[Array | None] = [None] * (length + 1)
        self.right: list[Array | None] = [None] * (length + 1)
        boundary = np.zeros((1, 5, 1))
        boundary[0, 4, 0] = 1.0
        self.left[0] = boundary
        boundary = np.zeros((1, 5, 1))
        boundary[0, 0, 0] = 1.0
        self.right[length] = boundary
        for i in range(length - 1, 0, -1):
            self.right[i] = self._grow_right(self.right[i + 1], self.mps[i])

    def _grow_left(self, env: Array | None, a: Array) -> Array:
        return _einsum("awb,atx,wvts,bsy->xvy", env, a, self.w, a)

    def _grow_right(self, env: Array | None, b: Array) -> Array:
        return _einsum("xtg,vuts,ysh,guh->xvy", b, self.w, b, env)

    def _apply(self, lenv: Array, renv: Array, theta: Array) -> Array:
        w = self.w
        return _einsum("awb,wvcd,vuef,guh,bdfh->aceg", lenv, w, w, renv, theta)

    def lanczos(
        self, lenv: Array, renv: Array, theta: Array, max_iter: int = 40, tol: float = 1e-13
    ) -> tuple[float, Array]:
        # As the tenferro example: theta is normalised in place as the first vector.
        v = theta
        v /= np.linalg.norm(v)
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
            alphas.append(float(np.vdot(basis[j], w)))
            # In place, as the tenferro example does (one temporary per update).
            for _ in range(2):
                for u in basis[-2:]:
                    w -= u * float(np.vdot(u, w))
            vals, vecs = eigh_tridiagonal(np.array(alphas), np.array(betas))
            new_energy = float(vals[0])
            coeffs = vecs[:, 0]
            beta = float(np.linalg.norm(w))
            converged = abs(new_energy - energy) < tol * max(1.0, abs(new_energy))
            energy = new_energy
            if converged or beta < 1e-10 * max(1.0, abs(alphas[-1])) or j == steps - 1:
                break
            betas.append(beta)
            w /= beta
            basis.append(w)
        del w
        # The Ritz vector in the basis' own buffers, as the tenferro example builds it.
        ground = basis[0]
        ground *= float(coeffs[0])
        for j in range(1, len(coeffs)):
            vec = basis[j]
            vec *= float(coeffs[j])
            ground += vec
            del vec
            basis[j] = ground
        del basis
        ground /= np.linalg.norm(ground)
        return energy, ground

    def _bond(self, i: int, to_right: bool) -> float:
        theta = _einsum("asb,btc->astc", self.mps[i], self.mps[i + 1])
        # As the tenferro example: the site tensors are dropped once theta is built.
        self.mps[i] = self.mps[i + 1] = None
        lenv, renv = self.left[i], self.right[i + 2]
        assert lenv is not None and renv is not None
        energy, theta = self.lanczos(lenv, renv, theta)
        dl, d1, d2, dr = theta.shape
        u, s, vh = np.linalg.svd(theta.reshape(dl * d1, d2 * dr), full_matrices=False)
        kept = int(np.count_nonzero(s >= self.cutoff * s[0])) if self.cutoff > 0 else s.size
        k = max(1, min(kept, self.bond_dim))
        u, s, vh = u[:, :k], s[:k], vh[:k]
        del theta
        # As the tenferro example: the stale environment is dropped before the update.
        if to_right:
            del renv
            if i + 2 < self.length:
                self.right[i + 2] = None
            self.mps[i] = u.reshape(dl, d1, k)
            self.mps[i + 1] = (s[:, None] * vh).reshape(k, d2, dr)
            del u, s, vh
            self.left[i + 1] = self._grow_left(lenv, self.mps[i])
        else:
            del lenv
            if i > 0:
                self.left[i] = None
            self.mps[i] = (u * s).reshape(dl, d1, k)
            self.mps[i + 1] = vh.reshape(k, d2, dr)
            del u, s, vh
            self.right[i + 1] = self._grow_right(renv, self.mps[i + 1])
        return energy

    def sweep(self) -> float:
        energy = math.inf
        for i in range(self.length - 1):
            energy = self._bond(i, True)
        for i in range(self.length - 2, -1, -1):
            energy = self._bond(i, False)
        return energy


def run_dmrg(length: int, bond_dim: int, sweeps: int, seed: int = 0) -> float:
    """Ground-state energy after ``sweeps`` sweeps."""
    state = Dmrg(length, bond_dim, seed)
    energy = math.inf
    for _ in range(sweeps):
        energy = state.sweep()
    return energy
