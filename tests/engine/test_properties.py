"""Every engine operation against numpy on random shapes and dtypes (hypothesis).

Operands come in three layouts of the same logical shape: a compact tensor, a
transposed view, and a strided view (steps of 2 or -2 over a larger tensor), so
each op is also checked on non-compact inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tenferro as tfr

D = tfr.DType
ENG = tfr.CpuEngine()

FLOATS = [np.float64, np.float32]
NUMERIC = [np.float64, np.float32, np.int32, np.int64, np.complex128, np.complex64]
REAL = [np.float64, np.float32, np.int32, np.int64]

# Rank 0 (one element) and zero-size axes included: every operation takes them.
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
ranked_shapes = st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple)
layouts = st.sampled_from(["tensor", "transposed", "strided"])


def values(rng: np.random.Generator, shape: tuple, dtype: Any, positive: bool = False) -> Any:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 1 if positive else -20
        return rng.integers(lo, 20, size=shape).astype(dt)
    x = rng.uniform(0.1 if positive else -2.0, 2.0, size=shape)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(-1.0, 1.0, size=shape)
    return x.astype(dt)


def operand(arr: np.ndarray, layout: str, rng: np.random.Generator) -> Any:
    """A tensor or view whose elements equal ``arr``, in the given layout."""
    if layout == "tensor":
        return tfr.from_numpy(np.array(arr, order="F", copy=True))
    if layout == "transposed":
        perm = tuple(rng.permutation(arr.ndim))
        inv = tuple(np.argsort(perm))
        base = tfr.from_numpy(np.array(arr.transpose(perm), order="F", copy=True))
        return base.as_view().transpose_view(inv)
    # strided: every other element of a bigger tensor, some axes reversed
    steps = [int(rng.choice([2, -2])) for _ in range(arr.ndim)]
    big = np.zeros(tuple(2 * d for d in arr.shape), dtype=arr.dtype)
    index = tuple(slice(None, None, s) for s in steps)
    big[index] = arr
    # (np.asfortranarray would turn a rank-0 array into rank 1.)
    return tfr.from_numpy(np.array(big, order="F", copy=True)).as_view().slice_view(index)


def check(got: tfr.Tensor, want: Any) -> None:
    arr = got.to_numpy()
    want = np.asarray(want)
    assert arr.shape == want.shape
    assert arr.dtype == want.dtype, (arr.dtype, want.dtype)
    if arr.dtype.kind in "fc":
        tol = 1e-5 if arr.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(arr, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(arr, want)


seeds = st.integers(0, 2**32 - 1)


@given(
    shapes,
    st.sampled_from(NUMERIC),
    layouts,
    layouts,
    seeds,
    st.sampled_from(["add", "sub", "mul", "div"]),
)
def test_arithmetic_matches_numpy(shape, dtype, la, lb, seed, name) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    y = values(rng, shape, dtype, positive=name == "div")
    got = getattr(ENG, name)(operand(x, la, rng), operand(y, lb, rng))
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply}.get(name)
    if ref is None:
        ref = np.floor_divide if np.dtype(dtype).kind == "i" else np.true_divide
    check(got, ref(x, y))


@given(
    shapes,
    st.sampled_from(NUMERIC),
    layouts,
    seeds,
    st.sampled_from(["add", "sub", "mul", "div"]),
    st.booleans(),
)
def test_arithmetic_with_a_weak_scalar_matches_numpy(shape, dtype, la, seed, name, left) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype, positive=True)
    s = 3 if np.dtype(dtype).kind == "i" else 1.5
    t = operand(x, la, rng)
    got = getattr(ENG, name)(s, t) if left else getattr(ENG, name)(t, s)
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply}.get(name)
    if ref is None:
        ref = np.floor_divide if np.dtype(dtype).kind == "i" else np.true_divide
    sc = np.dtype(dtype).type(s)
    check(got, ref(sc, x) if left else ref(x, sc))


@given(
    shapes,
    st.sampled_from(REAL),
    layouts,
    layouts,
    seeds,
    st.sampled_from(
        [
            "maximum",
            "minimum",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
            "equal",
            "not_equal",
        ]
    ),
)
def test_comparisons_and_extrema_match_numpy(shape, dtype, la, lb, seed, name) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x, y = values(rng, shape, dtype), values(rng, shape, dtype)
    got = getattr(ENG, name)(operand(x, la, rng), operand(y, lb, rng))
    check(got, getattr(np, name)(x, y))


@given(shapes, st.sampled_from([np.float64, np.float32, np.int64]), layouts, seeds)
def test_pow_matches_numpy(shape, dtype, la, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype, positive=True)
    y = rng.integers(0, 3, size=shape).astype(dtype)
    check(ENG.pow(operand(x, la, rng), operand(y, "tensor", rng)), np.power(x, y))


@given(
    shapes,
    st.sampled_from([*FLOATS, np.complex128]),
    layouts,
    seeds,
    st.sampled_from(["neg", "abs", "exp", "log", "sin", "cos", "tanh", "sqrt"]),
)
def test_unary_ops_match_numpy(shape, dtype, la, seed, name) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype, positive=True)
    ref = {"neg": np.negative, "abs": np.abs}.get(name) or getattr(np, name)
    check(getattr(ENG, name)(operand(x, la, rng)), ref(x))


@given(shapes, st.sampled_from(NUMERIC), layouts, layouts, layouts, seeds)
def test_where_matches_numpy(shape, dtype, lc, lx, ly, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    c = rng.random(shape) < 0.5
    x, y = values(rng, shape, dtype), values(rng, shape, dtype)
    got = ENG.where(operand(c, lc, rng), operand(x, lx, rng), operand(y, ly, rng))
    check(got, np.where(c, x, y))


@given(
    shapes,
    st.sampled_from(NUMERIC),
    layouts,
    seeds,
    st.sampled_from(["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_mean"]),
    st.data(),
)
def test_reductions_match_numpy(shape, dtype, la, seed, name, data) -> None:  # type: ignore[no-untyped-def]
    if name in ("reduce_max", "reduce_min") and np.dtype(dtype).kind == "c":
        return
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    some = st.sets(st.integers(0, len(shape) - 1)).map(tuple) if shape else st.just(())
    axes = data.draw(st.none() | some)
    reduced = range(len(shape)) if axes is None else axes
    if name in ("reduce_max", "reduce_min", "reduce_mean") and axes != ():
        # An empty reduction has no value: refused (tested in test_reduction.py).
        assume(all(shape[i] for i in reduced))
    got = getattr(ENG, name)(operand(x, la, rng), axes)
    ref = {
        "reduce_sum": np.sum,
        "reduce_prod": np.prod,
        "reduce_max": np.max,
        "reduce_min": np.min,
        "reduce_mean": np.mean,
    }[name]
    kw: dict[str, Any] = {}
    if name in ("reduce_sum", "reduce_prod"):
        kw["dtype"] = x.dtype
    if name == "reduce_mean" and x.dtype.kind == "i":
        kw["dtype"] = np.float64
    want = ref(x, axis=axes, **kw) if axes != () else x.astype(kw.get("dtype", x.dtype))
    check(got, np.asarray(want).astype(got.dtype.numpy))


@given(shapes, st.sampled_from([*NUMERIC, np.bool_]), layouts, seeds, st.data())
def test_transpose_reshape_and_to_contiguous_match_numpy(shape, dtype, la, seed, data) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    check(ENG.transpose(operand(x, la, rng), perm), x.transpose(perm))
    new = tuple(reversed(shape))
    check(ENG.reshape(operand(x, la, rng), new), x.reshape(new, order="F"))
    check(ENG.to_contiguous(operand(x, la, rng)), x)


@given(shapes, st.sampled_from(NUMERIC), layouts, seeds, st.data())
def test_broadcast_in_dim_matches_numpy(shape, dtype, la, seed, data) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    extra = data.draw(st.integers(1, 3))
    out_rank = len(shape) + 1
    dims = sorted(data.draw(st.permutations(range(out_rank)))[: len(shape)])
    new_axis = next(j for j in range(out_rank) if j not in dims)
    out_shape = [0] * out_rank
    for i, j in enumerate(dims):
        out_shape[j] = shape[i]
    out_shape[new_axis] = extra
    got = ENG.broadcast_in_dim(operand(x, la, rng), tuple(out_shape), tuple(dims))
    check(got, np.broadcast_to(np.expand_dims(x, new_axis), tuple(out_shape)))


@given(ranked_shapes, st.sampled_from(NUMERIC), layouts, layouts, seeds, st.data())
def test_concatenate_matches_numpy(shape, dtype, la, lb, seed, data) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(0, len(shape) - 1))
    other = list(shape)
    other[axis] = data.draw(st.integers(0, 3))
    x, y = values(rng, shape, dtype), values(rng, tuple(other), dtype)
    got = ENG.concatenate([operand(x, la, rng), operand(y, lb, rng)], axis)
    check(got, np.concatenate([x, y], axis))


@given(
    st.lists(st.integers(0, 4), min_size=2, max_size=3).map(tuple),
    st.sampled_from(NUMERIC),
    layouts,
    seeds,
    st.integers(-2, 2),
)
def test_tril_triu_and_diagonal_match_numpy(shape, dtype, la, seed, k) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    moved = np.moveaxis(x, (0, 1), (-2, -1))  # numpy's matrices are the last two axes
    check(ENG.tril(operand(x, la, rng), k), np.moveaxis(np.tril(moved, k), (-2, -1), (0, 1)))
    check(ENG.triu(operand(x, la, rng), k), np.moveaxis(np.triu(moved, k), (-2, -1), (0, 1)))
    diag = np.diagonal(x, k, 0, 1)
    check(ENG.extract_diagonal(operand(x, la, rng), k), np.moveaxis(diag, -1, 0))


@given(
    shapes,
    st.sampled_from([np.int32, np.int64, np.float32, np.bool_]),
    layouts,
    seeds,
    st.sampled_from([D.F64, D.C64, D.I64]),
)
def test_lossless_convert_and_cast_match_numpy(shape, dtype, la, seed, target) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    if np.dtype(dtype).kind == "f" and target is D.I64:
        x = np.round(x)
    check(ENG.convert(operand(x, la, rng), target), x.astype(target.numpy))
    check(ENG.cast(operand(x, la, rng), target), x.astype(target.numpy))


@given(
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(0, 5),
    st.lists(st.integers(0, 3), max_size=2).map(tuple),
    st.sampled_from([np.float64, np.float32, np.complex128, np.int64]),
    layouts,
    layouts,
    seeds,
)
def test_matmul_matches_numpy(m, k, n, batch, dtype, la, lb, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = values(rng, (m, k, *batch), dtype)
    y = values(rng, (k, n, *batch), dtype)
    got = ENG.matmul(operand(x, la, rng), operand(y, lb, rng))
    want = np.einsum("mk...,kn...->mn...", x, y)
    check(got, want.astype(x.dtype))


@given(st.data(), st.sampled_from([np.float64, np.complex128, np.int64]), layouts, layouts, seeds)
def test_dot_general_matches_einsum(data, dtype, la, lb, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    letters = "abcdef"
    sizes = {ch: data.draw(st.integers(0, 3)) for ch in letters}
    roles = {ch: data.draw(st.sampled_from(["lhs", "rhs", "contract", "batch"])) for ch in letters}
    lhs = [ch for ch in letters if roles[ch] in ("lhs", "contract", "batch")]
    rhs = [ch for ch in letters if roles[ch] in ("rhs", "contract", "batch")]
    lhs = list(data.draw(st.permutations(lhs)))
    rhs = list(data.draw(st.permutations(rhs)))
    x = values(rng, tuple(sizes[ch] for ch in lhs), dtype)
    y = values(rng, tuple(sizes[ch] for ch in rhs), dtype)
    con = [ch for ch in letters if roles[ch] == "contract"]
    bat = [ch for ch in letters if roles[ch] == "batch"]
    got = ENG.dot_general(
        operand(x, la, rng),
        operand(y, lb, rng),
        contracting=([lhs.index(c) for c in con], [rhs.index(c) for c in con]),
        batch=([lhs.index(c) for c in bat], [rhs.index(c) for c in bat]),
    )
    out = [c for c in lhs if roles[c] == "lhs"] + [c for c in rhs if roles[c] == "rhs"] + bat
    want = np.einsum(f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}", x, y)
    check(got, want.astype(x.dtype))


@pytest.mark.parametrize(
    "subscripts",
    [
        "ij,jk->ik",
        "ij,jk,kl->il",
        "abc,cd,bde->ae",
        "ii->",
        "iij->j",
        "i,j->ij",
        "ijb,jkb->ikb",
        "ab,ab->ab",
        "ab,bc->",
        "abcd,dcba->",
        "ij,jk,ki->",
        "ijk,ikl,lj->",
    ],
)
@given(st.data(), st.sampled_from([np.float64, np.complex128, np.float32]), seeds)
def test_einsum_matches_numpy(subscripts, data, dtype, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    lhs, _, _ = subscripts.partition("->")
    letters = sorted(set(lhs) - {","})
    sizes = {ch: data.draw(st.integers(0, 4)) for ch in letters}
    arrays = [values(rng, tuple(sizes[ch] for ch in term), dtype) for term in lhs.split(",")]
    layouts_ = [data.draw(layouts) for _ in arrays]
    got = ENG.einsum(
        subscripts, *[operand(a, lay, rng) for a, lay in zip(arrays, layouts_, strict=True)]
    )
    check(got, np.einsum(subscripts, *arrays).astype(arrays[0].dtype))


@given(
    shapes,
    st.sampled_from([np.float64, np.float32, np.complex128]),
    layouts,
    layouts,
    seeds,
    st.sampled_from(["tiled", "numexpr"]),
)
def test_evaluate_matches_numpy(shape, dtype, la, lb, seed, backend) -> None:  # type: ignore[no-untyped-def]
    if backend == "numexpr" and dtype is not np.float64:
        return
    rng = np.random.default_rng(seed)
    x, y = values(rng, shape, dtype, positive=True), values(rng, shape, dtype)
    got = ENG.evaluate(
        "exp(a - b) * 2 + a / (b * b + 1)",
        a=operand(x, la, rng),
        b=operand(y, lb, rng),
        backend=backend,
    )
    check(got, np.exp(x - y) * 2 + x / (y * y + 1))
