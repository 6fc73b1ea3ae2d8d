"""Every ``do("...")`` name quimb's decompositions, tensor core, 1-D networks, circuits
and optimizer reach, called through autoray on tenferro arrays, against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tfr

ar = pytest.importorskip("autoray")
pytest.importorskip("quimb.tensor")  # registers quimb's composed functions (fuse, ...)

A = np.arange(1.0, 7.0).reshape(2, 3)
S = np.array([[2.0, 1.0], [1.0, 3.0]])
V = np.array([0.5, 0.25, 0.125])

#: name -> the arguments, built with ``X`` (np.array or tfr.asarray).
C: dict[str, Any] = {
    "reshape": lambda X: (X(A), (3, 2)),
    "abs": lambda X: (X(-A),),
    "max": lambda X: (X(A),),
    "linalg.norm": lambda X: (X(A),),
    "pad": lambda X: (X(A), ((1, 0), (0, 1))),
    "diag": lambda X: (X(V),),
    "transpose": lambda X: (X(A),),
    "tensordot": lambda X: (X(A), X(A.T), 1),
    "sum": lambda X: (X(A),),
    "linalg.inv": lambda X: (X(S),),
    "concatenate": lambda X: ((X(A), X(A)),),
    "where": lambda X: (X(A) > 2, X(A), X(A) * 0),
    "take": lambda X: (X(A), [0, 2], 1),
    "stack": lambda X: ((X(V), X(V)),),
    "linalg.pinv": lambda X: (X(A),),
    "kron": lambda X: (X(S), X(S)),
    "isfinite": lambda X: (X(A),),
    "flip": lambda X: (X(A), 1),
    "expand_dims": lambda X: (X(V), 0),
    "count_nonzero": lambda X: (X(A) > 2,),
    "argmin": lambda X: (X(V),),
    "argmax": lambda X: (X(V),),
    "allclose": lambda X: (X(A), X(A)),
    "all": lambda X: (X(A) > 0,),
    "arccos": lambda X: (X(V),),
    "arcsin": lambda X: (X(V),),
    "arctan": lambda X: (X(V),),
    "argsort": lambda X: (X(V),),
    "clip": lambda X: (X(A), 2.0, 4.0),
    "complex": lambda X: (X(V), X(V)),
    "conj": lambda X: (X(A) * 1j,),
    "copy": lambda X: (X(A),),
    "cos": lambda X: (X(V),),
    "einsum": lambda X: ("ij,kj->ik", X(A), X(A)),
    "exp": lambda X: (X(V),),
    "linalg.eig": lambda X: (X(S),),
    "linalg.eigh": lambda X: (X(S),),
    "linalg.lstsq": lambda X: (X(A.T), X(V)),
    "linalg.solve": lambda X: (X(S), X(V[:2])),
    "linalg.svd": lambda X: (X(A),),
    "linalg.qr": lambda X: (X(A.T),),
    "log": lambda X: (X(V),),
    "outer": lambda X: (X(V), X(V)),
    "real": lambda X: (X(A) * 1j + 1,),
    "imag": lambda X: (X(A) * 1j + 1,),
    "scipy.linalg.expm": lambda X: (X(S),),
    "sin": lambda X: (X(V),),
    "sqrt": lambda X: (X(V),),
    "squeeze": lambda X: (X(A[None]),),
    "tan": lambda X: (X(V),),
    "to_numpy": lambda X: (X(A),),
    "trace": lambda X: (X(S),),
    "zeros_like": lambda X: (X(A),),
    "ones_like": lambda X: (X(A),),
    "swapaxes": lambda X: (X(A), 0, 1),
    "indices": lambda X: ((2, 3),),
    "split": lambda X: (X(A), 3, 1),
    "array_split": lambda X: (X(A), 2, 1),
    "conjugate": lambda X: (X(A),),
    "dot": lambda X: (X(A), X(A.T)),
    "multiply": lambda X: (X(A), X(A)),
    "power": lambda X: (X(V), 2),
    "maximum": lambda X: (X(V), 0.2),
    "ndim": lambda X: (X(A),),
    "shape": lambda X: (X(A),),
    "size": lambda X: (X(A),),
    "astype": lambda X: (X(A), "float32"),
    "sgn": lambda X: (X(A) - 3,),
    "linalg.cholesky": lambda X: (X(S),),
    "scipy.linalg.lu": lambda X: (X(S),),
    "scipy.linalg.solve_triangular": lambda X: (X(np.tril(S)), X(V[:2])),
    "fuse": lambda X: (X(np.arange(24.0).reshape(2, 3, 4)), (0, 2), (1,)),
    "multiply_diagonal": lambda X: (X(A), X(V), 1),
    "cumsum": lambda X: (X(V),),
    "nonzero": lambda X: (X(A) > 2,),
    "isclose": lambda X: (X(A), X(A)),
    "prod": lambda X: (X(A),),
    "mean": lambda X: (X(A),),
    "min": lambda X: (X(A),),
    "log2": lambda X: (X(V),),
    "log10": lambda X: (X(V),),
    "tanh": lambda X: (X(V),),
    "sort": lambda X: (X(V),),
}

#: Calls whose results are not unique (eigenvectors and singular vectors up to
#: phases): compared through what they reconstruct instead.
_RECONSTRUCT = {"linalg.eig", "linalg.eigh", "linalg.svd", "linalg.qr", "scipy.linalg.lu"}


def _same(got: Any, ref: Any) -> None:
    if isinstance(ref, (tuple, list)):
        assert len(got) == len(ref)
        for g, r in zip(got, ref, strict=True):
            _same(g, r)
        return
    if isinstance(ref, (bool, int, float, str, tuple)) or ref is None:
        assert got == ref
        return
    assert isinstance(got, (tfr.Tensor, tfr.TensorView, np.ndarray, np.generic)), type(got)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), atol=1e-12)


def _product(name: str, res: Any) -> Any:
    if name == "linalg.eigh":
        w, v = (np.asarray(a) for a in res)
        return v @ np.diag(w) @ v.T
    if name == "linalg.eig":
        w, v = (np.asarray(a) for a in res)
        return (v @ np.diag(w) @ np.linalg.inv(v)).real
    if name == "linalg.svd":
        u, s, vh = (np.asarray(a) for a in res)
        return u @ np.diag(s) @ vh
    if name == "linalg.qr":
        q, r = (np.asarray(a) for a in res)
        return q @ r
    p, lo, up = (np.asarray(a) for a in res)
    return p @ lo @ up


@pytest.mark.parametrize("name", sorted(C))
def test_autoray_name_on_tenferro_matches_numpy(name: str) -> None:
    like = {"like": "tenferro"} if name == "indices" else {}
    ref = ar.do(name, *C[name](np.array), **({"like": "numpy"} if like else {}))
    got = ar.do(name, *C[name](tfr.asarray), **like)
    if name in _RECONSTRUCT:
        np.testing.assert_allclose(_product(name, got), _product(name, ref), atol=1e-10)
    elif name in ("linalg.lstsq",):
        _same(got[0], ref[0])
    else:
        _same(got, ref)
