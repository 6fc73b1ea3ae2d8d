"""The compiled broadcasting path (`engine._core.broadcast2`) reads a unit-stride slice of
a vector (``s[:k]``, ``s[i:j]``) as a slice of its root (issue 20: the MPS sweep's
``u[:, :k] * s[:k]``): numpy's values and the general path's result, at any offset."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.engine.interface import broadcast2
from tenferro.namespace import _elementwise as ew

ROWS = {row[0]: row for row in ew._BINARY}
DTYPES = [np.float64, np.float32, np.complex128, np.int64]


def _general(name: str, a: Any, b: Any) -> Any:
    _, ufunc, category, rule = ROWS[name]
    return ew.binary(f"tenferro.{name}", ufunc, category, rule, a, b)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 9),
    start=st.integers(0, 4),
    rows=st.integers(1, 5),
    dt=st.sampled_from(DTYPES),
    vector_kind=st.sampled_from(["owner", "c"]),
    name=st.sampled_from(["multiply", "add", "subtract"]),
    vector_first=st.booleans(),
)
def test_a_unit_stride_slice_of_a_vector_broadcasts_as_numpy_does(
    n: int,
    start: int,
    rows: int,
    dt: Any,
    vector_kind: str,
    name: str,
    vector_first: bool,
) -> None:
    rng = np.random.default_rng(n * 100 + start)
    vec = rng.integers(-5, 6, size=start + n + 2).astype(dt)
    mat = rng.integers(-5, 6, size=(rows, n + 3)).astype(dt)
    # A Tensor (F-ordered owner) or a C-ordered view: both slices are views of a root.
    tv = tfr.asarray(np.asfortranarray(vec) if vector_kind == "owner" else vec.copy())
    tm = tfr.asarray(mat.copy())
    sv = tv[start : start + n]
    sm = tm[:, 1 : 1 + n]
    x1, x2 = (sv, sm) if vector_first else (sm, sv)
    a1, a2 = (vec[start : start + n], mat[:, 1 : 1 + n])
    if not vector_first:
        a1, a2 = a2, a1
    allowed = ew._fast_tuple(ROWS[name][2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = broadcast2(ROWS[name][1], x1, x2, allowed, False, "t")
    assert fast is not None
    general = _general(name, x1, x2)
    assert (fast.dtype, fast.shape) == (general.dtype, general.shape)
    want = getattr(np, name)(a1, a2)
    np.testing.assert_array_equal(np.asarray(fast), want)
    np.testing.assert_array_equal(np.asarray(general), want)
    # The operands are untouched.
    np.testing.assert_array_equal(np.asarray(tv), vec)
    np.testing.assert_array_equal(np.asarray(tm), mat)


def test_the_scale_of_a_truncated_svd_matches_numpy() -> None:
    a = np.random.default_rng(1).standard_normal((8, 6))
    u, s, _ = tfr.linalg.svd(tfr.asarray(a.copy()), full_matrices=False)
    un, sn, _ = np.linalg.svd(a, full_matrices=False)
    r = u[:, :3] * s[:3]
    assert isinstance(r, tfr.TensorView)
    assert r.strides[0] > r.strides[1]  # C-ordered, as numpy's
    np.testing.assert_allclose(np.abs(np.asarray(r)), np.abs(un[:, :3] * sn[:3]), rtol=1e-12)


def test_a_sliced_vector_operand_leaves_no_alias_behind() -> None:
    s = tfr.asarray(np.arange(6.0))
    sk = s[1:4]
    m = tfr.asarray(np.ones((2, 3)))
    r = m * sk
    del r
    np.testing.assert_array_equal(np.asarray(sk), [1.0, 2.0, 3.0])
    del sk
    with s.map_write() as w:  # no array of the call outlives it: writing is allowed
        w[0] = 5.0
    assert float(np.asarray(s)[0]) == 5.0
