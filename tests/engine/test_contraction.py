"""Contractions: matmul (2-D and trailing batch), dot_general, einsum."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr
from tenferro.tensor import Tensor

R = Callable[..., Tensor]


def test_matmul_of_two_matrices(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((5, 4), 1), rand((4, 3), 2)
    out = eng.matmul(a, b)
    assert out.shape == (5, 3)
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() @ b.to_numpy())


def test_matmul_batches_over_trailing_axes(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((3, 4, 2, 5), 1), rand((4, 6, 2, 5), 2)
    out = eng.matmul(a, b)
    assert out.shape == (3, 6, 2, 5)
    np.testing.assert_allclose(
        out.to_numpy(), np.einsum("mkxy,knxy->mnxy", a.to_numpy(), b.to_numpy())
    )


def test_matmul_takes_transposed_and_strided_views(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((4, 5)).as_view().transpose_view((1, 0))  # 5x4
    b = rand((8, 6), 3).as_view().slice_view((slice(None, None, 2), slice(None, None, -2)))  # 4x3
    out = eng.matmul(a, b)
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() @ b.to_numpy())


def test_matmul_of_integers(eng: tfr.CpuEngine) -> None:
    a = tfr.from_numpy(np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)))
    out = eng.matmul(a, eng.transpose(a, (1, 0)))
    assert out.dtype is tfr.DType.I64
    assert out.to_numpy().tolist() == [[5, 14], [14, 50]]


def test_matmul_of_complex(eng: tfr.CpuEngine) -> None:
    z = np.asfortranarray(np.array([[1 + 1j, 2], [0, 1j]]))
    out = eng.matmul(tfr.from_numpy(z.copy(order="F")), tfr.from_numpy(z.copy(order="F")))
    np.testing.assert_allclose(out.to_numpy(), z @ z)


def test_matmul_with_an_empty_inner_dimension_gives_zeros(eng: tfr.CpuEngine) -> None:
    a = tfr.from_numpy(np.empty((3, 0), order="F"))
    b = tfr.from_numpy(np.empty((0, 2), order="F"))
    assert eng.matmul(a, b).to_numpy().tolist() == [[0.0, 0.0]] * 3


def test_matmul_refuses_mismatched_inner_dimensions(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.matmul(rand((2, 3)), rand((4, 2)))
    assert err.value.kind == "DIM_MISMATCH"
    assert err.value.op == "CpuEngine.matmul"


def test_matmul_refuses_vectors(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError, match="rank >= 2") as err:
        eng.matmul(rand((3,)), rand((3, 2)))
    assert err.value.kind == "RANK_MISMATCH"


def test_matmul_refuses_unequal_batch_shapes(eng: tfr.CpuEngine, rand: R) -> None:
    with pytest.raises(tfr.ValidationError, match="batch"):
        eng.matmul(rand((2, 2, 3)), rand((2, 2, 4)))


def test_matmul_refuses_mixed_dtypes(eng: tfr.CpuEngine, rand: R) -> None:
    b = tfr.from_numpy(np.ones((2, 2), dtype=np.float32, order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        eng.matmul(rand((2, 2)), b)
    assert err.value.kind == "DTYPE_MISMATCH"


def test_matmul_refuses_bool(eng: tfr.CpuEngine) -> None:
    b = tfr.from_numpy(np.ones((2, 2), dtype=bool, order="F"))
    with pytest.raises(tfr.ValidationError, match="numeric"):
        eng.matmul(b, b)


def test_matmul_into_out(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((3, 3), 1), rand((3, 3), 2)
    out = tfr.from_numpy(np.zeros((3, 3), order="F"))
    assert eng.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() @ b.to_numpy())


def test_matmul_refuses_an_out_that_is_an_input(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 3))
    before = a.to_numpy().copy()
    with pytest.raises(tfr.BorrowError) as err:
        eng.matmul(a, a, out=a)
    assert err.value.kind == "OUT_ALIASES_INPUT"
    np.testing.assert_array_equal(a.to_numpy(), before)


def test_dot_general_orders_output_lhs_free_rhs_free_batch(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((2, 3, 4, 5), 1), rand((5, 3, 6), 2)  # a: i j b k ; b: k j n
    out = eng.dot_general(a, b, contracting=((1,), (1,)), batch=((3,), (0,)))
    assert out.shape == (2, 4, 6, 5)
    np.testing.assert_allclose(
        out.to_numpy(), np.einsum("ijbk,kjn->ibnk", a.to_numpy(), b.to_numpy())
    )


def test_dot_general_without_contraction_is_an_outer_product(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((3,), 1), rand((2,), 2)
    out = eng.dot_general(a, b)
    np.testing.assert_allclose(out.to_numpy(), np.outer(a.to_numpy(), b.to_numpy()))


def test_dot_general_full_contraction_gives_rank0(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((3, 2), 1), rand((3, 2), 2)
    out = eng.dot_general(a, b, contracting=((0, 1), (0, 1)))
    assert out.shape == ()
    assert out.host_data()[0] == pytest.approx(float((a.to_numpy() * b.to_numpy()).sum()))


def test_dot_general_accepts_single_ints_for_one_axis(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((2, 3), 1), rand((3, 4), 2)
    out = eng.dot_general(a, b, contracting=(1, 0))
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() @ b.to_numpy())


def test_dot_general_accepts_negative_axes(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((2, 3), 1), rand((3, 4), 2)
    out = eng.dot_general(a, b, contracting=((-1,), (0,)))
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() @ b.to_numpy())


@pytest.mark.parametrize(
    ("contracting", "batch", "kind"),
    [
        (((1,), (1,)), ((), ()), "DIM_MISMATCH"),
        (((1, 1), (0, 0)), ((), ()), "DUPLICATE_AXES"),
        (((1,), (0,)), ((1,), (0,)), "ROLE_CONFLICT"),
        (((1,), ()), ((), ()), "DIM_MISMATCH"),
        (((5,), (0,)), ((), ()), "INVALID_AXES"),
        (((1,),), ((), ()), "INVALID_AXES"),
        (5, ((), ()), "INVALID_AXES"),
        ((("x",), (0,)), ((), ()), "INVALID_AXES"),
    ],
)
def test_dot_general_typed_errors(
    eng: tfr.CpuEngine, rand: R, contracting: Any, batch: Any, kind: str
) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.dot_general(rand((2, 3)), rand((3, 4)), contracting=contracting, batch=batch)
    assert err.value.kind == kind
    assert err.value.op == "CpuEngine.dot_general"


def test_dot_general_refuses_mixed_dtypes(eng: tfr.CpuEngine, rand: R) -> None:
    b = tfr.from_numpy(np.ones((3, 4), dtype=np.complex128, order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        eng.dot_general(rand((2, 3)), b, contracting=((1,), (0,)))
    assert err.value.kind == "DTYPE_MISMATCH"


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 5)]),
        ("ij,jk,kl->li", [(3, 4), (4, 5), (5, 2)]),
        ("ii->", [(4, 4)]),
        ("ii->i", [(4, 4)]),
        ("ii", [(4, 4)]),
        ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
        ("i,j->ij", [(3,), (4,)]),
        ("ij,ij->", [(3, 4), (3, 4)]),
        ("ij,ij->ij", [(3, 4), (3, 4)]),
        ("ijb,jkb->ikb", [(2, 3, 4), (3, 5, 4)]),
        ("bij,bjk->bik", [(4, 2, 3), (4, 3, 5)]),
        ("abc,cd,bde->ae", [(2, 3, 4), (4, 5), (3, 5, 6)]),
        ("ij->ji", [(2, 3)]),
        ("ij->", [(2, 3)]),
        ("ijk,k->ij", [(2, 3, 4), (4,)]),
        ("ab,bc,cd,de,ef->af", [(3, 4), (4, 5), (5, 6), (6, 7), (7, 3)]),
    ],
)
def test_einsum_matches_numpy(eng: tfr.CpuEngine, subscripts: str, shapes: list[tuple]) -> None:
    rng = np.random.default_rng(0)
    arrays = [np.asfortranarray(rng.random(s)) for s in shapes]
    tensors = [tfr.from_numpy(a.copy(order="F")) for a in arrays]
    out = eng.einsum(subscripts, *tensors)
    np.testing.assert_allclose(out.to_numpy(), np.einsum(subscripts, *arrays), rtol=1e-12)


def test_einsum_full_reduction_gives_rank0(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((3, 3))
    out = eng.einsum("ij,ij->", a, a)
    assert out.shape == ()


def test_einsum_takes_views(eng: tfr.CpuEngine, rand: R) -> None:
    a = rand((4, 6)).as_view().slice_view((slice(None), slice(None, None, 2)))
    b = rand((3, 5), 2).as_view().transpose_view((1, 0))
    out = eng.einsum("ij,kj->ik", a, b.slice_view((slice(None, 4), slice(None))))
    np.testing.assert_allclose(
        out.to_numpy(), np.einsum("ij,kj->ik", a.to_numpy(), b.to_numpy()[:4])
    )


def test_einsum_into_out(eng: tfr.CpuEngine, rand: R) -> None:
    a, b = rand((2, 3), 1), rand((3, 2), 2)
    out = tfr.from_numpy(np.zeros((2, 2), order="F"))
    assert eng.einsum("ij,jk->ik", a, b, out=out) is out
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() @ b.to_numpy())


def test_einsum_plans_are_cached(eng: tfr.CpuEngine, rand: R) -> None:
    from tenferro.engine.einsum import plans_built

    a, b = rand((2, 3), 1), rand((3, 2), 2)
    eng.einsum("ij,jk->ki", a, b)
    built = plans_built()
    eng.einsum("ij,jk->ki", a, b)
    assert plans_built() == built


def test_einsum_gives_every_intermediate_back(eng: tfr.CpuEngine, rand: R) -> None:
    ts = [rand((8, 8), i) for i in range(5)]
    out = eng.einsum("ab,bc,cd,de,ef->af", *ts)
    # Three 8x8 intermediates were made; at most one scratch remains per size.
    retained = eng.buffer_pool_stats()
    assert retained.buffers >= 1
    del out
    assert eng.buffer_pool_stats().buffers == retained.buffers + 1


@pytest.mark.parametrize(
    ("subscripts", "shapes", "kind"),
    [
        ("ij,jk->ik", [(2, 3)], "OPERAND_COUNT"),
        ("ij,jk->ik", [(2, 3), (4, 2)], "DIM_MISMATCH"),
        ("ijk->i", [(2, 3)], "RANK_MISMATCH"),
        ("ij->ii", [(2, 2)], "SUBSCRIPTS"),
        ("ij->k", [(2, 2)], "SUBSCRIPTS"),
        ("..i->i", [(2, 2)], "SUBSCRIPTS"),
        ("....i->i", [(2, 2)], "SUBSCRIPTS"),
        ("...ijk->i", [(2, 2)], "RANK_MISMATCH"),
        ("ij->i->j", [(2, 2)], "SUBSCRIPTS"),
    ],
)
def test_einsum_typed_errors(
    eng: tfr.CpuEngine, subscripts: str, shapes: list[tuple], kind: str
) -> None:
    ts = [tfr.from_numpy(np.ones(s, order="F")) for s in shapes]
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum(subscripts, *ts)
    assert err.value.kind == kind
    assert err.value.op == "CpuEngine.einsum"


def test_einsum_needs_an_operand(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError, match="at least one operand"):
        eng.einsum("ij->")


def test_einsum_refuses_mixed_dtypes(eng: tfr.CpuEngine, rand: R) -> None:
    b = tfr.from_numpy(np.ones((3, 2), dtype=np.float32, order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum("ij,jk->ik", rand((2, 3)), b)
    assert err.value.kind == "DTYPE_MISMATCH"


def test_contractions_refuse_backend_buffers(eng: tfr.CpuEngine, fake_domain: Any, rand: R) -> None:
    d = fake_domain.tensor(np.ones((2, 2)))
    for call in (
        lambda: eng.matmul(d, rand((2, 2))),
        lambda: eng.dot_general(rand((2, 2)), d, contracting=((1,), (0,))),
        lambda: eng.einsum("ij,jk", d, d),
    ):
        with pytest.raises(tfr.RuntimeStateError, match="download to host"):
            call()
