"""einsum subscripts as numpy defines them: ellipsis, broadcasting, repeated indices."""

from __future__ import annotations

import numpy as np
import pytest

import tenferro as tfr

CASES = [
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 2)]),
    ("...ij,...jk", [(3, 4, 5), (5, 2)]),  # ellipsis of different lengths
    ("i...->...", [(3, 2, 4)]),
    ("...,...->...", [(2, 3), (2, 3)]),
    ("ij...,j...->i...", [(2, 3, 4), (3, 1)]),  # size-1 broadcasting in the ellipsis
    ("ij,jk->ik", [(2, 1), (3, 4)]),  # a size-1 contracted axis broadcasts
    ("ij,ij->ij", [(2, 1), (2, 4)]),
    ("ij,ij->ij", [(1, 4), (3, 1)]),
    ("bij,bjk->bik", [(1, 2, 3), (4, 3, 2)]),  # a size-1 batch axis broadcasts
    ("iij->ij", [(3, 3, 2)]),
    ("iji->j", [(2, 4, 2)]),
    ("iijj->", [(2, 2, 3, 3)]),
    ("ii,ij->j", [(3, 3), (3, 4)]),
    ("ijk,kji->", [(2, 3, 4), (4, 3, 2)]),
    ("ab,ab,ab->ab", [(2, 3), (2, 3), (2, 3)]),  # Hadamard over three operands
    ("a,b,c->abc", [(2,), (3,), (4,)]),
    ("i,i->", [(0,), (0,)]),  # an empty sum is zero
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("ba", [(2, 3)]),  # implicit output: sorted, so a transposition
    ("ab,cb", [(2, 3), (4, 3)]),
    ("a,a", [(3,), (3,)]),
    (",ab->ab", [(), (2, 3)]),  # a rank-0 operand
    ("abc,abd->abcd", [(2, 3, 4), (2, 3, 5)]),  # batch indices leading, not trailing
    ("abcd,dcbe->ae", [(2, 3, 4, 5), (5, 4, 3, 2)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_einsum_matches_numpy(
    eng: tfr.CpuEngine, subscripts: str, shapes: list[tuple], dtype: type
) -> None:
    rng = np.random.default_rng(0)
    arrays = [np.array(rng.random(s), dtype=dtype, order="F") for s in shapes]
    got = eng.einsum(subscripts, *[tfr.from_numpy(a.copy(order="F")) for a in arrays])
    want = np.einsum(subscripts, *arrays)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5 if dtype is np.float32 else 1e-12)


def test_interleaved_form_with_ellipsis_matches_numpy(eng: tfr.CpuEngine) -> None:
    rng = np.random.default_rng(1)
    a = np.asfortranarray(rng.random((2, 3, 4)))
    b = np.asfortranarray(rng.random((4, 5)))
    got = eng.einsum(tfr.from_numpy(a), [..., 0], tfr.from_numpy(b), [0, 1], [..., 1])
    np.testing.assert_allclose(got.to_numpy(), np.einsum(a, [..., 0], b, [0, 1], [..., 1]))


def test_interleaved_form_takes_any_sortable_labels(eng: tfr.CpuEngine) -> None:
    a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    got = eng.einsum(tfr.from_numpy(a), ["row", "col"], ["col", "row"])
    np.testing.assert_array_equal(got.to_numpy(), a.T)


def test_unicode_and_digit_symbols_are_labels(eng: tfr.CpuEngine) -> None:
    a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    got = eng.einsum("Ωλ,λ0->Ω0", tfr.from_numpy(a), tfr.from_numpy(np.ones((3, 2), order="F")))
    np.testing.assert_array_equal(got.to_numpy(), a @ np.ones((3, 2)))


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        (("ij,jk", (2, 3), (4, 5)), "DIM_MISMATCH"),
        (("ii->i", (2, 3)), "DIM_MISMATCH"),  # a diagonal needs equal sizes
        (("ij,ij->ij", (2, 3), (3, 2)), "DIM_MISMATCH"),
        (("ij->i->j", (2, 2)), "SUBSCRIPTS"),
        (("ij-i", (2, 2)), "SUBSCRIPTS"),
        (("i..j->ij", (2, 2)), "SUBSCRIPTS"),
        (("ij->jj", (2, 2)), "SUBSCRIPTS"),
        (("ij->k", (2, 2)), "SUBSCRIPTS"),
        (("...ijk->i", (2, 2)), "RANK_MISMATCH"),
        (("ijk->i", (2, 2)), "RANK_MISMATCH"),
        (("ij,jk", (2, 2)), "OPERAND_COUNT"),
    ],
)
def test_bad_subscripts_are_typed_errors(eng: tfr.CpuEngine, args: tuple, kind: str) -> None:
    subscripts, *shapes = args
    tensors = [tfr.from_numpy(np.ones(s, order="F")) for s in shapes]
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum(subscripts, *tensors)
    assert err.value.kind == kind


@pytest.mark.parametrize(
    "args",
    [
        (5,),
        ("a",),  # a sublist that is not a list
    ],
)
def test_a_malformed_interleaved_call_is_a_typed_error(eng: tfr.CpuEngine, args: tuple) -> None:
    t = tfr.from_numpy(np.ones((2, 2), order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum(*args, t) if args == (5,) else eng.einsum(t, *args)
    assert err.value.kind == "SUBSCRIPTS"


@pytest.mark.parametrize("rest", [(), ("ij",), (None,)], ids=["alone", "string", "none"])
def test_a_tensor_where_the_subscripts_go_is_a_typed_error_naming_einsum(
    eng: tfr.CpuEngine, rest: tuple
) -> None:
    t = tfr.from_numpy(np.ones((2, 2), order="F"))
    before = t.to_numpy().copy()
    with pytest.raises(tfr.ValidationError, match="where the subscripts go") as err:
        eng.einsum(t, *rest, t)
    assert err.value.kind == "SUBSCRIPTS"
    assert "CpuEngine.einsum" in str(err.value)
    np.testing.assert_array_equal(t.to_numpy(), before)


@pytest.mark.parametrize("output", [[5], [0, 7]], ids=["unknown", "one-unknown"])
def test_interleaved_output_labels_must_name_an_input_axis(
    eng: tfr.CpuEngine, output: list
) -> None:
    t = tfr.from_numpy(np.ones((2, 2), order="F"))
    with pytest.raises(tfr.ValidationError, match="name no operand's axis") as err:
        eng.einsum(t, [0, 1], output)
    assert err.value.kind == "SUBSCRIPTS"


def test_an_unhashable_interleaved_label_is_a_typed_error(eng: tfr.CpuEngine) -> None:
    t = tfr.from_numpy(np.ones((2, 2), order="F"))
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum(t, [[0], 1], [0])
    assert err.value.kind == "SUBSCRIPTS"
