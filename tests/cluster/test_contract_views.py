"""`tenferro.distributed.contract` takes what the namespace makes: views, C-ordered arrays."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cotengra")

import tenferro as tfr
from tenferro.distributed import contract

A = np.random.default_rng(0).normal(size=(6, 5))
B = np.random.default_rng(1).normal(size=(5, 4))


def test_c_ordered_asarray_operands_contract_in_process() -> None:
    out = contract("ab,bc->ac", tfr.asarray(A.copy()), tfr.asarray(B.copy()), progress=False)
    assert isinstance(out, tfr.Tensor)
    np.testing.assert_allclose(np.asarray(out), A @ B)


def test_transposed_and_sliced_views_contract_in_process() -> None:
    at = tfr.asarray(np.asfortranarray(A.T))
    b = tfr.asarray(np.asfortranarray(np.vstack([B, B])))
    out = contract("ba,bc->ac", at.T.T, b[:5], progress=False)
    np.testing.assert_allclose(np.asarray(out), A @ B)


def test_each_view_operand_is_one_counted_copy() -> None:
    before = tfr.copy_stats().copies
    contract(
        "ab,bc->ac", tfr.asarray(A.copy()), tfr.from_numpy(np.asfortranarray(B)), progress=False
    )
    assert tfr.copy_stats().copies == before + 1


def test_view_operands_are_refused_under_forbid_copies() -> None:
    a = tfr.asarray(A.copy())
    with tfr.forbid_copies(), pytest.raises(tfr.CopyForbiddenError):
        contract("ab,bc->ac", a, tfr.from_numpy(np.asfortranarray(B)), progress=False)


def test_a_bad_equation_with_view_operands_copies_nothing() -> None:
    before = tfr.copy_stats().copies
    with pytest.raises(tfr.ValidationError):
        contract("ab,bd,x->ac", tfr.asarray(A.copy()), tfr.asarray(B.copy()), progress=False)
    assert tfr.copy_stats().copies == before
