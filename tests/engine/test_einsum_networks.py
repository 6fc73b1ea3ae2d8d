"""einsum on random networks of 60-300 indices: Unicode and interleaved subscripts.

Each network is checked against opt_einsum on the same operands; dimensions are
small (1-3) so a network of hundreds of indices contracts in milliseconds.
"""

from __future__ import annotations

import numpy as np
import opt_einsum
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from einsum_networks import Network, networks
from tenferro.dtype import as_dtype

ENG = tfr.CpuEngine()
EXAMPLES = settings(max_examples=12, deadline=None)


def close(got: tfr.Tensor, want: np.ndarray) -> None:
    scale = float(np.max(np.abs(want))) if want.size else 1.0
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-9, atol=1e-12 * scale)


@EXAMPLES
@given(networks(), st.integers(0, 2**16))
def test_unicode_subscripts_match_opt_einsum(net: Network, seed: int) -> None:
    arrays = net.arrays(seed)
    assert net.n_indices >= 60
    got = ENG.einsum(net.subscripts, *[tfr.from_numpy(a) for a in arrays])
    close(got, opt_einsum.contract(net.subscripts, *arrays))


@EXAMPLES
@given(networks(), st.integers(0, 2**16))
def test_interleaved_integer_labels_match_opt_einsum(net: Network, seed: int) -> None:
    arrays = net.arrays(seed)
    tensors = [tfr.from_numpy(a) for a in arrays]
    args: list = []
    for t, labels in zip(tensors, net.terms, strict=True):
        args += [t, labels]
    got = ENG.einsum(*args, net.out)
    close(got, opt_einsum.contract(net.subscripts, *arrays))


@settings(max_examples=6, deadline=None)
@given(networks(60, 120), st.sampled_from([np.float32, np.complex128]), st.integers(0, 2**16))
def test_networks_in_f32_and_c128_match_opt_einsum(net: Network, dtype: type, seed: int) -> None:
    arrays = net.arrays(seed, dtype)
    got = ENG.einsum(net.subscripts, *[tfr.from_numpy(a) for a in arrays])
    want = opt_einsum.contract(net.subscripts, *[a.astype(np.complex128) for a in arrays])
    assert got.dtype == as_dtype(dtype)
    scale = float(np.max(np.abs(want)))
    tol = 1e-4 if dtype is np.float32 else 1e-9
    np.testing.assert_allclose(got.to_numpy(), want, rtol=tol, atol=tol * scale)


@settings(max_examples=6, deadline=None)
@given(networks(), st.integers(0, 2**16))
def test_a_given_opt_einsum_path_gives_the_same_value(net: Network, seed: int) -> None:
    arrays = net.arrays(seed)
    path, _ = opt_einsum.contract_path(net.subscripts, *arrays, optimize="greedy")
    got = ENG.einsum(net.subscripts, *[tfr.from_numpy(a) for a in arrays], optimize=path)
    close(got, opt_einsum.contract(net.subscripts, *arrays, optimize=path))


@settings(max_examples=8, deadline=None)
@given(networks(60, 120), st.integers(0, 2**16))
def test_networks_with_slabs_and_tails_everywhere_match_opt_einsum(net: Network, seed: int) -> None:
    from unittest import mock

    from tenferro.engine.einsum import planner

    arrays = net.arrays(seed)
    # Slabs and tails everywhere (the limits are sized for large tensors): the slab
    # loops of transposed operands and of a last product written into the output
    # order, and products batched over an operand's slowest free indices.
    with mock.patch.object(planner, "_SLAB_MIN", 1), mock.patch.object(planner, "_TAIL_MIN", 1):
        expr = tfr.CpuEngine().contract_expression(net.subscripts, *[a.shape for a in arrays])
    got = expr(*[tfr.from_numpy(a) for a in arrays])
    close(got, opt_einsum.contract(net.subscripts, *arrays))
