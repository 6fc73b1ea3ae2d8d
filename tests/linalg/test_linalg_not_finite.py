"""Linear algebra refuses NaN and +-inf entries before LAPACK (issue 23, item 1).

``?gesdd`` loops forever on some matrices with infinities (the 3 x 3 one below:
-inf and +inf in one column), and a LAPACK call cannot be interrupted, so
every case runs in a child process with a timeout: on code without the check
the child never finishes and the test fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import tenferro as tfr

# One child runs every case (importing tenferro and scipy once) and prints one
# JSON line per case as it finishes, so a hang names the case that hung.
_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tenferro as tfr
    import tenferro.linalg as la

    eng = tfr.default_engine()

    def hanging(dt, batch):
        # gesdd never returns on this matrix (OpenBLAS and reference LAPACK).
        a = np.arange(1.0, 10.0).reshape(3, 3).astype(dt)
        a[0, 0] = -np.inf
        a[1, 0] = np.inf
        return np.stack([a] * batch, axis=-1) if batch else a

    def engine_operand(dt, batch, view):
        t = tfr.asarray(np.asfortranarray(hanging(dt, batch)))
        return t[...] if view else t  # a view takes the general path

    def ns_operand(dt, batch):
        a = hanging(dt, batch)
        return tfr.asarray(np.moveaxis(a, -1, 0) if batch else a)

    ENGINE = {
        "svd": lambda a, b: eng.svd(a),
        "svd_full": lambda a, b: eng.svd(a, full_matrices=True),
        "svdvals": lambda a, b: eng.svdvals(a),
        "pinv": lambda a, b: eng.pinv(a),
        "lstsq": lambda a, b: eng.lstsq(a, b),
        "norm_2": lambda a, b: eng.matrix_norm(a, 2),
        "norm_nuc": lambda a, b: eng.matrix_norm(a, "nuc"),
        "trunc_rank": lambda a, b: eng.svd_truncated(a, max_rank=2),
        "trunc_cutoff": lambda a, b: eng.svd_truncated(a, cutoff=1e-3),
        "eig": lambda a, b: eng.eig(a),
        "eigh": lambda a, b: eng.eigh(a),
        "eigvalsh": lambda a, b: eng.eigvalsh(a),
    }
    NAMESPACE = {
        "svd": lambda a: la.svd(a),
        "svd_full": lambda a: la.svd(a, full_matrices=True),
        "svdvals": lambda a: la.svdvals(a),
        "pinv": lambda a: la.pinv(a),
        "matrix_rank": lambda a: la.matrix_rank(a),
        "norm_2": lambda a: la.matrix_norm(a, ord=2),
        "norm_nuc": lambda a: la.matrix_norm(a, ord="nuc"),
        "trunc_rank": lambda a: la.svd_truncated(a, max_rank=2),
        "eig": lambda a: la.eig(a),
        "eigh": lambda a: la.eigh(a),
    }

    def run(name, call):
        try:
            call()
            out = {"case": name, "raised": None}
        except Exception as exc:
            kind = str(getattr(exc, "kind", ""))
            out = {"case": name, "raised": type(exc).__name__, "kind": kind}
        print(json.dumps(out), flush=True)

    for dt in ("float32", "float64", "complex128"):
        for batch in (0, 2):
            for view in (False, True):
                for name, call in ENGINE.items():
                    a = engine_operand(dt, batch, view)
                    rows = (3, batch) if batch else (3,)
                    b = tfr.asarray(np.ones(rows, dtype=dt))
                    run(f"eng.{name}/{dt}/b{batch}/view{int(view)}", lambda: call(a, b))
            for name, call in NAMESPACE.items():
                a = ns_operand(dt, batch)
                run(f"la.{name}/{dt}/b{batch}", lambda: call(a))
            a = ns_operand(dt, 0)
            b = tfr.asarray(np.ones(3, dtype=dt))
            run(f"la.lstsq/{dt}", lambda: la.lstsq(a, b))
    print(json.dumps({"done": True}), flush=True)
    """
)


def _run_child(timeout: float) -> tuple[list[dict[str, str]], bool]:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=timeout
        )
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or b""
        out = raw.decode() if isinstance(raw, bytes) else raw
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    done = bool(rows) and rows[-1].get("done") is True
    return [r for r in rows if "case" in r], done


def test_every_svd_family_call_refuses_infinities_instead_of_hanging() -> None:
    # ~150 cases; each takes microseconds once refused. 120 s is far above the
    # child's import time even on a loaded machine.
    rows, done = _run_child(timeout=120)
    last = rows[-1]["case"] if rows else "(none)"
    assert done, f"a linalg call did not return on +-inf input; the last to finish was {last}"
    wrong = [r for r in rows if (r["raised"], r.get("kind")) != ("LinAlgError", "NOT_FINITE")]
    assert not wrong, wrong
    assert len(rows) >= 150


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_eigh_accepts_a_non_finite_entry_in_the_triangle_it_does_not_read(value: float) -> None:
    a = np.array([[2.0, value], [1.0, 3.0]])  # uplo "L" reads the lower triangle only
    w = tfr.default_engine().eigvalsh(tfr.asarray(a))
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(np.array([[2.0, 1], [1, 3]])))


def test_the_refusal_names_the_batch_index_of_the_first_bad_matrix() -> None:
    a = np.stack([np.eye(3), np.eye(3)], axis=-1)
    a[0, 1, 1] = np.inf
    with pytest.raises(tfr.LinAlgError) as info:
        tfr.default_engine().svd(tfr.asarray(np.asfortranarray(a)))
    assert info.value.kind == "NOT_FINITE" and info.value.batch_index == (1,)


def test_a_refused_svd_gives_every_pooled_buffer_back() -> None:
    eng = tfr.CpuEngine()
    bad = tfr.asarray(np.array([[1.0, np.inf], [2.0, 3.0]]))
    for _ in range(2):
        with pytest.raises(tfr.LinAlgError):
            eng.svd(bad)
    misses = eng.buffer_pool_cache_stats().misses
    with pytest.raises(tfr.LinAlgError):
        eng.svd(bad)
    assert eng.buffer_pool_cache_stats().misses == misses


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_huge_finite_entries_are_not_mistaken_for_infinities(dtype: Any) -> None:
    # Their sum of squares overflows (the check's fast test); the entries are finite.
    big = np.finfo(np.dtype(dtype).char.lower() if dtype is np.complex128 else dtype).max / 4
    a = np.array([[big, 1.0], [2.0, big]], dtype=dtype)
    s = tfr.default_engine().svdvals(tfr.asarray(np.asfortranarray(a)))
    assert np.all(np.isfinite(np.asarray(s)))
