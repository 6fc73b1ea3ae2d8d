"""Linear-algebra benchmarks: each engine operation against numpy.linalg and scipy.linalg.

Every case times ``eng.<op>`` next to ``numpy.linalg`` and ``scipy.linalg`` on
the same Fortran-ordered data (the numpy arrays are read-only views of the
tensors' own memory), interleaved, at n = 64, 256 and 1024 (quick mode: 64
only), with one BLAS thread. Target: tenferro / numpy <= 1.0 (never slower than
numpy.linalg); the ratio is the median of paired repetitions (see
`harness`), with its interquartile range. The full run takes a few minutes:
at 1024 one ``eig`` is several seconds on one thread. One batched case (32
matrices of 64 x 64; quick: 4 of 32 x 32; trailing batch in tenferro; numpy
and scipy get the leading-batch view of the same memory, which they copy to
make each matrix contiguous) shows the batch
convention. scipy runs with ``check_finite=False`` (tenferro does not scan
the input either). One case is TRG's truncated SVD (576 x 576 cut to 24):
``tenferro`` is ``svd_truncated(method="gram")``, ``tenferro-gesdd`` the exact
route, numpy and scipy the full thin SVD and slicing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla

from ..engine.cpu import CpuEngine
from ..tensor import Tensor, from_numpy
from .harness import CaseResult, Target, time_case

__all__ = ["run"]

Array = np.ndarray[Any, Any]

_TARGET = Target("tenferro", "numpy", 1.0)


def _tensor(a: Array) -> tuple[Tensor, Array]:
    """Adopt ``a`` (made Fortran-ordered) and return a read-only view of the same memory."""
    t = from_numpy(np.asfortranarray(a))
    return t, t.to_numpy()


def _cases(
    eng: CpuEngine, rng: np.random.Generator, n: int
) -> list[tuple[str, Callable[[], Any], Callable[[], Any], Callable[[], Any] | None]]:
    """(name, tenferro, numpy, scipy) for each operation at size ``n``."""
    a, an = _tensor(rng.standard_normal((n, n)))
    tall, tn = _tensor(rng.standard_normal((n + n // 2, n)))
    spd_np = an @ an.T + n * np.eye(n)
    spd, sn = _tensor(spd_np)
    b, bn = _tensor(rng.standard_normal((n, 8)))
    rhs, rhsn = _tensor(rng.standard_normal((n + n // 2, 8)))
    e_, en = _tensor(0.1 * spd_np / n)
    return [
        (
            "svd",
            lambda: eng.svd(a),
            lambda: np.linalg.svd(an, full_matrices=False),
            lambda: sla.svd(an, full_matrices=False, check_finite=False),
        ),
        (
            "svdvals",
            lambda: eng.svdvals(a),
            lambda: np.linalg.svd(an, compute_uv=False),
            lambda: sla.svdvals(an, check_finite=False),
        ),
        (
            "qr (tall)",
            lambda: eng.qr(tall),
            lambda: np.linalg.qr(tn),
            lambda: sla.qr(tn, mode="economic", check_finite=False),
        ),
        (
            "eigh",
            lambda: eng.eigh(spd),
            lambda: np.linalg.eigh(sn),
            lambda: sla.eigh(sn, check_finite=False, driver="evd"),
        ),
        (
            "eigvalsh",
            lambda: eng.eigvalsh(spd),
            lambda: np.linalg.eigvalsh(sn),
            lambda: sla.eigh(sn, eigvals_only=True, check_finite=False, driver="evd"),
        ),
        (
            "eig",
            lambda: eng.eig(a),
            lambda: np.linalg.eig(an),
            lambda: sla.eig(an, check_finite=False),
        ),
        (
            "cholesky",
            lambda: eng.cholesky(spd),
            lambda: np.linalg.cholesky(sn),
            lambda: sla.cholesky(sn, lower=True, check_finite=False),
        ),
        (
            "solve",
            lambda: eng.solve(a, b),
            lambda: np.linalg.solve(an, bn),
            lambda: sla.solve(an, bn, check_finite=False),
        ),
        (
            "inv",
            lambda: eng.inv(a),
            lambda: np.linalg.inv(an),
            lambda: sla.inv(an, check_finite=False),
        ),
        (
            "det",
            lambda: eng.det(a),
            lambda: np.linalg.det(an),
            lambda: sla.det(an, check_finite=False),
        ),
        ("slogdet", lambda: eng.slogdet(a), lambda: np.linalg.slogdet(an), None),
        (
            "lstsq (tall)",
            lambda: eng.lstsq(tall, rhs),
            lambda: np.linalg.lstsq(tn, rhsn, rcond=None),
            lambda: sla.lstsq(tn, rhsn, check_finite=False),
        ),
        (
            "pinv",
            lambda: eng.pinv(a),
            lambda: np.linalg.pinv(an),
            lambda: sla.pinv(an, check_finite=False),
        ),
        (
            "matrix_norm fro",
            lambda: eng.matrix_norm(a),
            lambda: np.linalg.norm(an),
            lambda: sla.norm(an, check_finite=False),
        ),
        (
            "matrix_norm 2",
            lambda: eng.matrix_norm(a, 2),
            lambda: np.linalg.norm(an, 2),
            lambda: sla.norm(an, 2, check_finite=False),
        ),
        ("expm", lambda: eng.expm(e_), lambda: sla.expm(en), None),
    ]


# Operations whose n = 1024 call takes under a second on one thread: five
# repetitions there, three for the rest.
_CHEAP = ("qr (tall)", "cholesky", "solve", "inv", "det", "slogdet", "matrix_norm fro")


def _repeats(quick: bool, n: int, name: str) -> int:
    """Repetitions per contender: many where a call is short (its noise is larger)."""
    if quick:
        return 5
    if n <= 64:
        return 41
    if n <= 256:
        return 11
    return 5 if name in _CHEAP else 3


def run(quick: bool = False) -> list[CaseResult]:
    """Time every operation with one BLAS thread; quick mode: n = 64 only, fewer repeats.

    One thread for every BLAS in the process (numpy's and scipy's OpenBLAS are
    separate builds, each with its own thread pool): with the defaults, the
    pool that ran last keeps its threads spinning and slows the other's next
    call by up to 30x on a 2-core machine, which says nothing about either.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _run(quick)


def _run(quick: bool) -> list[CaseResult]:
    eng = CpuEngine()
    rng = np.random.default_rng(0)
    sizes = (64,) if quick else (64, 256, 1024)
    results: list[CaseResult] = []
    for n in sizes:
        for name, tf, npf, spf in _cases(eng, rng, n):
            repeats = _repeats(quick, n, name)
            contenders: list[tuple[str, Callable[[], Any]]] = [("tenferro", tf), ("numpy", npf)]
            if spf is not None:
                contenders.append(("scipy", spf))
            results.append(
                time_case(
                    f"linalg {name} {n}x{n} f64",
                    contenders,
                    group="linalg",
                    size=n,
                    repeats=repeats,
                    warmup=1,
                    targets=[_TARGET],
                )
            )
    # The truncated SVD of TRG at chi 24 (576 x 576 cut to 24; quick: 64 cut to 8):
    # tenferro's selective route and its exact route against the natural numpy and
    # scipy programs (the full thin SVD, then slicing).
    n, r = (64, 8) if quick else (576, 24)
    decay = np.exp(-np.arange(n) / 4.0)
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    tt, ttn = _tensor((q1 * decay) @ q2.T)

    def np_cut() -> Any:
        u, s, vh = np.linalg.svd(ttn, full_matrices=False)
        return u[:, :r], s[:r], vh[:r]

    def sp_cut() -> Any:
        u, s, vh = sla.svd(ttn, full_matrices=False, check_finite=False)
        return u[:, :r], s[:r], vh[:r]

    results.append(
        time_case(
            f"linalg svd_truncated {n}x{n}->{r} f64",
            [
                ("tenferro", lambda: eng.svd_truncated(tt, max_rank=r, method="gram")),
                ("tenferro-gesdd", lambda: eng.svd_truncated(tt, max_rank=r)),
                ("numpy", np_cut),
                ("scipy", sp_cut),
            ],
            group="linalg",
            size=n,
            repeats=5,
            warmup=1,
            targets=[_TARGET],
        )
    )
    # Batched: 32 matrices of 64 x 64. tenferro reads [64, 64, 32] (each matrix
    # contiguous); numpy and scipy read the same memory as (32, 64, 64).
    nb, m = (4, 32) if quick else (32, 64)
    bt, btn = _tensor(rng.standard_normal((m, m, nb)))
    lead = np.moveaxis(btn, -1, 0)
    results.append(
        time_case(
            f"linalg batched svd {nb}x({m}x{m}) f64",
            [
                ("tenferro", lambda: eng.svd(bt)),
                ("numpy", lambda: np.linalg.svd(lead, full_matrices=False)),
                ("scipy", lambda: sla.svd(lead, full_matrices=False, check_finite=False)),
            ],
            group="linalg",
            size=m,
            repeats=5,
            warmup=1,
            targets=[_TARGET],
        )
    )
    return results
