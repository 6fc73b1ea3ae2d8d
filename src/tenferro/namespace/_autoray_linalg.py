"""autoray registrations for the decompositions quimb's ``split`` and TEBD call.

* ``linalg.rsvd``: a randomized SVD (range finder with power iterations, then a
  small SVD) written with tenferro's own ``qr``/``svd``/``matmul``;
* ``scipy.linalg.expm``: `tenferro.linalg.expm`;
* ``scipy.linalg.lu``, ``scipy.linalg.solve_triangular``,
  ``scipy.sparse.linalg.svds``, ``scipy.sparse.linalg.eigsh`` (and their
  ``linalg.svds``/``linalg.eigsh`` spellings): scipy, reading the operands
  through a borrow for the call (no copy), with results written into new pooled
  tensors.

Ownership, for each: **borrows** its inputs and **computes** new pooled results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["register"]


def _emit_all(op: str, res: Any) -> Any:
    from ._adapter import emit

    if isinstance(res, tuple):
        return tuple(_emit_all(op, r) for r in res)
    return emit(op, np.asarray(res))


def _on_borrows(op: str, fn: Any, *arrays: Any) -> Any:
    from ._adapter import compute

    def run(*vals: Any) -> Any:
        res = fn(*vals)
        # Results may be views of scipy's work arrays; `emit` writes them once.
        return tuple(np.array(r) for r in res) if isinstance(res, tuple) else np.array(res)

    return _emit_all(op, compute(op, run, arrays))


def rsvd(x: Any, k: int, q: int = 2, p: int = 10, seed: Any = None) -> Any:
    """The ``k`` leading singular triplets of ``x`` by a randomized SVD (Halko et al.):
    a Gaussian range finder of ``k + p`` columns, ``q`` power iterations with QR
    re-orthonormalisation, then the SVD of the small projected matrix."""
    from .. import linalg as la
    from .. import random as trandom
    from ._elementwise import FUNCTIONS

    conj = FUNCTIONS["conj"]

    m, n = x.shape
    k = max(1, min(int(k), m, n))
    width = min(k + p, m, n)
    g = trandom.default_rng(seed).standard_normal((n, width), dtype=x.dtype)
    xh = conj(x.mT) if x.dtype.is_complex else x.mT
    qm = la.qr(x @ g).Q
    for _ in range(q):
        qm = la.qr(xh @ qm).Q
        qm = la.qr(x @ qm).Q
    qh = conj(qm.mT) if x.dtype.is_complex else qm.mT
    u, s, vh = la.svd(qh @ x, full_matrices=False)
    return (qm @ u)[:, :k], s[:k], vh[:k]


def expm(x: Any, *args: Any, **kwargs: Any) -> Any:
    from .. import linalg as la

    return la.expm(x)


def lu(x: Any, permute_l: bool = False, **kwargs: Any) -> Any:
    import scipy.linalg as sl

    return _on_borrows("scipy.linalg.lu", lambda a: sl.lu(a, permute_l=permute_l, **kwargs), x)


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False, **kwargs: Any) -> Any:
    import scipy.linalg as sl

    return _on_borrows(
        "scipy.linalg.solve_triangular",
        lambda p, q: sl.solve_triangular(p, q, trans=trans, lower=lower, **kwargs),
        a,
        b,
    )


def svds(x: Any, k: int = 6, **kwargs: Any) -> Any:
    import scipy.sparse.linalg as spla

    return _on_borrows("scipy.sparse.linalg.svds", lambda a: spla.svds(a, k=k, **kwargs), x)


def eigsh(x: Any, k: int = 6, **kwargs: Any) -> Any:
    import scipy.sparse.linalg as spla

    return _on_borrows("scipy.sparse.linalg.eigsh", lambda a: spla.eigsh(a, k=k, **kwargs), x)


def register(autoray: Any) -> None:
    """Register the functions above for the ``tenferro`` backend."""
    for name, fn in (
        ("linalg.rsvd", rsvd),
        ("scipy.linalg.expm", expm),
        ("scipy.linalg.lu", lu),
        ("scipy.linalg.solve_triangular", solve_triangular),
        ("scipy.sparse.linalg.svds", svds),
        ("scipy.sparse.linalg.eigsh", eigsh),
        ("linalg.svds", svds),
        ("linalg.eigsh", eigsh),
    ):
        autoray.register_function("tenferro", name, fn)
