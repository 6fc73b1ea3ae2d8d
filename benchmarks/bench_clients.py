"""The path real users take, tenferro against numpy side by side (issue 20's table).

Usage: ``python benchmarks/bench_clients.py [--quick] [--repeats N] [--out PATH]``.

Every row times a tenferro call and the same call in numpy, interleaved in one
run with the project's paired-ratio harness (`tenferro.bench.harness`): a ratio
is the median of per-repetition ratios tenferro/numpy, reported with its
interquartile range. Data enters as a user's does: C-ordered numpy arrays
through ``tfr.asarray`` (a ``TensorView`` over an adopted column-major owner),
and where a row says "owner", an F-ordered array (a plain ``Tensor``). numpy
runs on arrays of the same memory order, so both sides do the same work.

Rows: 512x512 C-ordered ``a * 2.0``, ``a + b``, ``exp(a)``, ``sum(a, axis=1)``;
4x4 (16 elements) add, multiply by a scalar, exp, sum, ``@``, ``x[1]`` and
``reshape`` on owners and on C-ordered views; 4x4 ``tensordot``; MPS sweeps
written once against the array API (``xp`` is ``numpy`` or ``tenferro``; L=16,
D=32): norm by tensordot, QR canonicalisation, SVD truncation to D/2, with the
named copies tenferro made (``tfr.copy_stats()``); cotengra ``tree.contract``
of a 4x4 PEPS-like network and quimb ``MPS.compress`` (L=16, D=32 -> 12) on
tenferro arrays against the same client on numpy arrays.

Small rows also time, on the same data, the floor of any Python wrapper (`FloorArray`:
one slot, each operator one numpy call and one wrap) and array-api-strict's
``Array``, each as a ratio to numpy: how close tenferro is to what a Python-level
wrapper over numpy can cost at all.

BLAS runs on one thread for both sides (threadpoolctl), so the ratios compare
per-call overheads and memory order, not thread scheduling.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

import tenferro as tfr
from tenferro.bench.harness import CaseResult, Target, format_ratio, time_case

#: (name, tenferro call, numpy call, calls per sample, target, other contenders: the
#: floor wrapper and array-api-strict on the same data, where the row has them).
Row = tuple[
    str, Callable[[], Any], Callable[[], Any], int, float, list[tuple[str, Callable[[], Any]]]
]


def _pair(
    name: str,
    ours: Callable[[], Any],
    theirs: Callable[[], Any],
    inner: int,
    target: float,
    extra: list[tuple[str, Callable[[], Any]]] | None = None,
) -> Row:
    return (name, ours, theirs, inner, target, extra or [])


# ---------------------------------------------------------------------- the floor
_new = object.__new__


class FloorArray:
    """The cheapest Python-level array wrapper over numpy this benchmark knows: one
    slot, each operator one numpy call and one wrap (no checks, no ownership, no
    memory order of its own). Its ratio to numpy is the floor any Python wrapper
    pays per call; tenferro's distance to it is tenferro's own cost."""

    __slots__ = ("a",)
    a: Any

    def __add__(self, other: Any) -> FloorArray:
        return _floor(np.add(self.a, other.a if other.__class__ is FloorArray else other))

    def __mul__(self, other: Any) -> FloorArray:
        return _floor(np.multiply(self.a, other.a if other.__class__ is FloorArray else other))

    def __matmul__(self, other: FloorArray) -> FloorArray:
        return _floor(np.matmul(self.a, other.a))

    def __getitem__(self, key: Any) -> FloorArray:
        return _floor(self.a[key])


def _floor(a: Any) -> FloorArray:
    w = _new(FloorArray)
    w.a = a
    return w


def floor_exp(x: FloorArray) -> FloorArray:
    return _floor(np.exp(x.a))


def floor_sum(x: FloorArray) -> FloorArray:
    return _floor(np.sum(x.a))


def floor_reshape(x: FloorArray, shape: tuple[int, ...]) -> FloorArray:
    return _floor(np.reshape(x.a, shape))


def floor_tensordot(x: FloorArray, y: FloorArray, axes: int) -> FloorArray:
    return _floor(np.tensordot(x.a, y.a, axes=axes))


def _strict() -> Any:
    """array-api-strict (the test extra installs it), or None."""
    try:
        import array_api_strict
    except ImportError:  # pragma: no cover
        return None
    return array_api_strict


def large_rows(rng: np.random.Generator) -> list[Row]:
    a_np = rng.random((512, 512))
    b_np = rng.random((512, 512))
    a = tfr.asarray(a_np.copy())
    b = tfr.asarray(b_np.copy())
    return [
        _pair("512x512 C  a * 2.0", lambda: a * 2.0, lambda: a_np * 2.0, 5, 1.2),
        _pair("512x512 C  a + b", lambda: a + b, lambda: a_np + b_np, 5, 1.2),
        _pair("512x512 C  exp(a)", lambda: tfr.exp(a), lambda: np.exp(a_np), 2, 1.2),
        _pair(
            "512x512 C  sum(a, axis=1)",
            lambda: tfr.sum(a, axis=1),
            lambda: np.sum(a_np, axis=1),
            5,
            1.2,
        ),
    ]


def small_rows(rng: np.random.Generator) -> list[Row]:
    rows: list[Row] = []
    xps = _strict()
    for kind, order in (("owner", "F"), ("C view", "C")):
        a_np = np.array(rng.random((4, 4)), order=order)
        b_np = np.array(rng.random((4, 4)), order=order)
        a = tfr.asarray(a_np.copy(order=order))
        b = tfr.asarray(b_np.copy(order=order))
        # The floor wrapper and array-api-strict over arrays of the same memory order.
        fa, fb = _floor(a_np.copy(order=order)), _floor(b_np.copy(order=order))
        sa = sb = None
        if xps is not None:
            sa, sb = xps.asarray(a_np.copy(order=order)), xps.asarray(b_np.copy(order=order))

        def extra(
            floor: Callable[[], Any], strict: Callable[[], Any] | None
        ) -> list[tuple[str, Callable[[], Any]]]:
            out = [("floor", floor)]
            if xps is not None and strict is not None:
                out.append(("strict", strict))
            return out

        inner = 200
        rows += [
            _pair(
                f"4x4 {kind}  a + b",
                lambda a=a, b=b: a + b,
                lambda x=a_np, y=b_np: x + y,
                inner,
                1.5,
                extra(lambda x=fa, y=fb: x + y, lambda x=sa, y=sb: x + y),
            ),
            _pair(
                f"4x4 {kind}  a * 2.0",
                lambda a=a: a * 2.0,
                lambda x=a_np: x * 2.0,
                inner,
                1.5,
                extra(lambda x=fa: x * 2.0, lambda x=sa: x * 2.0),
            ),
            _pair(
                f"4x4 {kind}  exp(a)",
                lambda a=a: tfr.exp(a),
                lambda x=a_np: np.exp(x),
                inner,
                1.5,
                extra(lambda x=fa: floor_exp(x), lambda x=sa: xps.exp(x)),
            ),
            _pair(
                f"4x4 {kind}  sum(a)",
                lambda a=a: tfr.sum(a),
                lambda x=a_np: np.sum(x),
                inner,
                1.5,
                extra(lambda x=fa: floor_sum(x), lambda x=sa: xps.sum(x)),
            ),
            _pair(
                f"4x4 {kind}  a @ b",
                lambda a=a, b=b: a @ b,
                lambda x=a_np, y=b_np: x @ y,
                inner,
                1.5,
                extra(lambda x=fa, y=fb: x @ y, lambda x=sa, y=sb: x @ y),
            ),
            _pair(
                f"4x4 {kind}  x[1]",
                lambda a=a: a[1],
                lambda x=a_np: x[1],
                inner,
                1.5,
                extra(lambda x=fa: x[1], lambda x=sa: x[1, ...]),  # strict insists on the ellipsis
            ),
            _pair(
                f"4x4 {kind}  reshape(a, (16,))",
                lambda a=a: tfr.reshape(a, (16,)),
                lambda x=a_np: np.reshape(x, (16,)),
                inner,
                1.5,
                extra(lambda x=fa: floor_reshape(x, (16,)), lambda x=sa: xps.reshape(x, (16,))),
            ),
        ]
        if kind == "C view":
            rows.append(
                _pair(
                    "4x4 C view  tensordot(a, b, 1)",
                    lambda a=a, b=b: tfr.tensordot(a, b, axes=1),
                    lambda x=a_np, y=b_np: np.tensordot(x, y, axes=1),
                    inner,
                    2.0,
                    extra(
                        lambda x=fa, y=fb: floor_tensordot(x, y, 1),
                        lambda x=sa, y=sb: xps.tensordot(x, y, axes=1),
                    ),
                )
            )
    return rows


def broadcast_rows(rng: np.random.Generator) -> list[Row]:
    """What an SVD truncation does between the factorisations: broadcast products of
    C-ordered results and their slices, a mask, a one-element view times a float,
    slicing and a row-major reshape of a C-ordered view."""
    u_np = rng.random((64, 16))
    s_np = rng.random(16) + 0.5
    w_np = rng.random((32, 32))
    one_np = rng.random(5)
    u, s, w, one = (tfr.asarray(a.copy()) for a in (u_np, s_np, w_np, one_np))
    k = 12
    inner = 200
    return [
        _pair(
            "64x16 C view  u * s[None, :]",
            lambda: u * s[None, :],
            lambda: u_np * s_np[None, :],
            inner,
            1.5,
        ),
        _pair(
            "32x32 C view  w[:, :k] * s[:k]",
            lambda: w[:, :k] * s[:k],
            lambda: w_np[:, :k] * s_np[:k],
            inner,
            1.5,
        ),
        _pair("16 owner  s < 1e-3", lambda: s < 1e-3, lambda: s_np < 1e-3, inner, 1.5),
        _pair(
            "1-element view  v[2:3] * 2.0",
            lambda: one[2:3] * 2.0,
            lambda: one_np[2:3] * 2.0,
            inner,
            1.5,
        ),
        _pair("32x32 C view  w[:, :k]", lambda: w[:, :k], lambda: w_np[:, :k], inner, 1.5),
        _pair(
            "32x32 C view  reshape(w, (16, 64))",
            lambda: tfr.reshape(w, (16, 64)),
            lambda: np.reshape(w_np, (16, 64)),
            inner,
            1.5,
        ),
    ]


# ---------------------------------------------------------------------- MPS sweeps
def random_mps(rng: np.random.Generator, length: int, bond: int, phys: int = 2) -> list[Any]:
    dims = [min(phys**i, phys ** (length - i), bond) for i in range(length + 1)]
    return [rng.standard_normal((dims[i], phys, dims[i + 1])) for i in range(length)]


def mps_norm(xp: Any, mps: list[Any]) -> Any:
    """<psi|psi> of a real MPS by a left-to-right sweep of tensordots."""
    env = xp.tensordot(mps[0], mps[0], axes=([0, 1], [0, 1]))
    for a in mps[1:]:
        t = xp.tensordot(env, a, axes=([0], [0]))
        env = xp.tensordot(t, a, axes=([0, 1], [0, 1]))
    return env


def mps_qr_sweep(xp: Any, mps: list[Any]) -> list[Any]:
    """Left canonical form by QR, site by site (reshape, qr, reshape, absorb R)."""
    out = list(mps)
    for i in range(len(out) - 1):
        a = out[i]
        dl, d, dr = a.shape
        q, r = xp.linalg.qr(xp.reshape(a, (dl * d, dr)))
        out[i] = xp.reshape(q, (dl, d, q.shape[1]))
        out[i + 1] = xp.tensordot(r, out[i + 1], axes=1)
    return out


def mps_svd_sweep(xp: Any, mps: list[Any], chi: int) -> list[Any]:
    """Right-to-left SVD truncation to ``chi`` (reshape, svd, slice, scale, absorb)."""
    out = list(mps)
    for i in range(len(out) - 1, 0, -1):
        a = out[i]
        dl, d, dr = a.shape
        u, s, vh = xp.linalg.svd(xp.reshape(a, (dl, d * dr)), full_matrices=False)
        k = min(chi, s.shape[0])
        out[i] = xp.reshape(vh[:k, :], (k, d, dr))
        out[i - 1] = xp.tensordot(out[i - 1], u[:, :k] * s[:k], axes=1)
    return out


def mps_rows(rng: np.random.Generator, length: int, bond: int) -> tuple[list[Row], dict[str, int]]:
    mps_np = random_mps(rng, length, bond)
    mps_t = [tfr.asarray(a.copy()) for a in mps_np]
    # Checks and named-copy counts, one call each, outside the timing.
    copies: dict[str, int] = {}
    for name, fn in (
        ("norm", lambda xp, m: mps_norm(xp, m)),
        ("qr", lambda xp, m: mps_qr_sweep(xp, m)),
        ("svd", lambda xp, m: mps_svd_sweep(xp, m, bond // 2)),
    ):
        before = tfr.copy_stats().copies
        got = fn(tfr, mps_t)
        copies[name] = tfr.copy_stats().copies - before
        want = fn(np, mps_np)
        if name == "norm":
            np.testing.assert_allclose(np.asarray(got).sum(), want.sum(), rtol=1e-8)
        del got, want
    rows = [
        _pair(
            f"MPS L={length} D={bond}  norm by tensordot",
            lambda: mps_norm(tfr, mps_t),
            lambda: mps_norm(np, mps_np),
            3,
            1.1,
        ),
        _pair(
            f"MPS L={length} D={bond}  QR sweep",
            lambda: mps_qr_sweep(tfr, mps_t),
            lambda: mps_qr_sweep(np, mps_np),
            2,
            1.1,
        ),
        _pair(
            f"MPS L={length} D={bond}  SVD sweep (chi {bond // 2})",
            lambda: mps_svd_sweep(tfr, mps_t, bond // 2),
            lambda: mps_svd_sweep(np, mps_np, bond // 2),
            1,
            1.1,
        ),
    ]
    return rows, copies


# ---------------------------------------------------------------------- clients
def client_rows(rng: np.random.Generator) -> list[Row]:
    rows: list[Row] = []
    try:
        import cotengra as ctg
        import quimb.tensor as qtn
    except ImportError:  # pragma: no cover - the test extra installs both
        print("cotengra/quimb not installed: client rows skipped", file=sys.stderr)
        return rows
    # A 4x4 PEPS-like network: a grid of tensors with bond dimension 6, closed.
    side, bond = 4, 6
    inputs: list[tuple[str, ...]] = []
    sizes: dict[str, int] = {}

    def edge(a: tuple[int, int], b: tuple[int, int]) -> str:
        key = f"e{min(a, b)}{max(a, b)}".replace(" ", "")
        sizes[key] = bond
        return key

    for i in range(side):
        for j in range(side):
            legs = []
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                ni, nj = i + di, j + dj
                if 0 <= ni < side and 0 <= nj < side:
                    legs.append(edge((i, j), (ni, nj)))
            inputs.append(tuple(legs))
    arrays_np = [rng.random(tuple(sizes[k] for k in legs)) / 2 for legs in inputs]
    arrays_t = [tfr.asarray(a.copy()) for a in arrays_np]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ctg.array_contract_tree(inputs, (), sizes, optimize="greedy")
    np.testing.assert_allclose(
        float(tree.contract(arrays_t)), float(tree.contract(arrays_np)), rtol=1e-8
    )
    rows.append(
        _pair(
            "cotengra tree.contract 4x4 grid D=6",
            lambda: tree.contract(arrays_t),
            lambda: tree.contract(arrays_np),
            2,
            1.2,
        )
    )
    mps = qtn.MPS_rand_state(16, bond_dim=32, seed=3)
    mps_t = mps.copy()
    mps_t.apply_to_arrays(lambda x: tfr.asarray(np.array(x)))

    def compress(m: Any) -> Any:
        c = m.copy()
        c.compress(max_bond=12)
        return c

    rows.append(
        _pair(
            "quimb MPS.compress L=16 D=32->12",
            lambda: compress(mps_t),
            lambda: compress(mps),
            1,
            1.2,
        )
    )
    return rows


def run(quick: bool, repeats: int) -> tuple[list[CaseResult], dict[str, int]]:
    rng = np.random.default_rng(0)
    rows = large_rows(rng) + small_rows(rng) + broadcast_rows(rng)
    m_rows, copies = mps_rows(rng, 16, 32)
    rows += m_rows + client_rows(rng)
    results = []
    for name, ours, theirs, inner, target, extra in rows:
        n_inner = max(1, inner // 10) if quick else inner
        results.append(
            time_case(
                name,
                [("tenferro", ours), ("numpy", theirs), *extra],
                group="clients",
                repeats=repeats,
                inner=n_inner,
                targets=[Target("tenferro", "numpy", target)],
            )
        )
    return results, copies


def table(results: list[CaseResult], copies: dict[str, int]) -> str:
    lines = [
        "| call | tenferro | numpy | ratio (IQR) | target | floor wrapper / numpy (IQR) "
        "| array-api-strict / numpy (IQR) |",
        "|---|---|---|---|---|---|---|",
    ]

    def ratio_of(r: CaseResult, who: str) -> str:
        if who not in r.medians:
            return ""
        spread = r.ratio_spread(who, "numpy")
        iqr = f" ({spread[0]:.2f}-{spread[1]:.2f})" if spread else ""
        return f"{format_ratio(r.ratio(who, 'numpy'))}{iqr}"

    for r in results:
        ratio = r.ratio("tenferro", "numpy")
        tgt = r.targets[0].max_ratio
        us = {k: f"{v * 1e6:.1f} us" for k, v in r.medians.items()}
        lines.append(
            f"| {r.name} | {us['tenferro']} | {us['numpy']} | {ratio_of(r, 'tenferro')} | "
            f"<= {tgt:g} {'met' if ratio <= tgt else 'MISSED'} | {ratio_of(r, 'floor')} | "
            f"{ratio_of(r, 'strict')} |"
        )
    lines.append(
        "| MPS sweeps: named copies (norm / QR / SVD) | "
        f"{copies['norm']} / {copies['qr']} / {copies['svd']} | 0 | | 0 | | |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer calls per sample")
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--out", help="also write the markdown table here")
    args = p.parse_args(argv)
    with threadpool_limits(limits=1):
        results, copies = run(args.quick, args.repeats)
    text = table(results, copies)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
