"""The reference: Levin-Nave TRG for the 2D Ising model in plain numpy.

The same algorithm, step for step, as ``examples/trg_ising.py`` (the same
cuts, the same einsum, the same normalisation), with numpy arrays and
``np.linalg.svd``; used by ``benchmarks/bench_tn.py`` as the baseline.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def initial_tensor(temperature: float) -> Array:
    beta = 1.0 / temperature
    w = np.array(
        [
            [math.sqrt(math.cosh(beta)), math.sqrt(math.sinh(beta))],
            [math.sqrt(math.cosh(beta)), -math.sqrt(math.sinh(beta))],
        ]
    )
    t: Array = np.einsum("si,sj,sk,sl->ijkl", w, w, w, w)
    return t


def _split(m: Array, chi: int) -> tuple[Array, Array]:
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    k = min(chi, s.shape[0])
    r = np.sqrt(s[:k])
    return u[:, :k] * r, r[:, None] * vh[:k]


def trg_factors(t: Array, chi: int) -> tuple[Array, Array, Array, Array]:
    d = t.shape[0]
    f1, f3 = _split(t.reshape(d * d, d * d), chi)
    f2, f4 = _split(t.transpose(1, 2, 3, 0).reshape(d * d, d * d), chi)
    return f1, f2, f3, f4


def trg_contract(factors: tuple[Array, Array, Array, Array], d: int) -> tuple[Array, float]:
    f1, f2, f3, f4 = factors
    k1 = f1.shape[1]
    k2 = f2.shape[1]
    new = np.einsum(
        "axy,yzb,zwc,dwx->adcb",
        f3.reshape(k1, d, d),
        f2.reshape(d, d, k2),
        f1.reshape(d, d, k1),
        f4.reshape(k2, d, d),
        optimize=True,
    )
    norm = float(np.linalg.norm(new))
    return new / norm, norm


def trg_step(t: Array, chi: int) -> tuple[Array, float]:
    return trg_contract(trg_factors(t, chi), t.shape[0])


def run_trg(temperature: float, chi: int, steps: int) -> float:
    """ln Z per site after ``steps`` steps."""
    t = initial_tensor(temperature)
    c0 = float(np.linalg.norm(t))
    t = t / c0
    lnz = math.log(c0)
    for k in range(1, steps + 1):
        # As in the tenferro example: T is dropped once cut, before the contraction.
        d = t.shape[0]
        factors = trg_factors(t, chi)
        del t
        t, norm = trg_contract(factors, d)
        del factors
        lnz += math.log(norm) / 2.0**k
    lnz += math.log(float(np.einsum("abab->", t))) / 2.0**steps
    return lnz
