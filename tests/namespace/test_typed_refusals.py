"""Refusals the namespace fuzz found untyped (issue 23, item 4): each is a typed error now.

Each keeps the Python base class a user catches (the second column), and a
refused call leaves the operand as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tfr


def _f() -> Any:
    return tfr.asarray(np.arange(6.0).reshape(2, 3))


def _i() -> Any:
    return tfr.asarray(np.array([5, 2, 3]))


def _pow_assign(t: Any) -> None:
    t **= -1


H = 2**40
CASES: list[tuple[str, Callable[[], Any], type[BaseException], str]] = [
    ("int ** -1", lambda: _i() ** -1, ValueError, "NEGATIVE_INTEGER_POWER"),
    ("int **= -1", lambda: _pow_assign(_i()), ValueError, "NEGATIVE_INTEGER_POWER"),
    ("int ** negative array", lambda: _i() ** tfr.asarray(np.array([1, -1, 2])), ValueError,
     "NEGATIVE_INTEGER_POWER"),
    ("ragged list index", lambda: _f()[[[0, 1], [0]]], ValueError, "INVALID_ARGUMENT"),
    ("eye", lambda: tfr.eye(H), MemoryError, "OUT_OF_MEMORY"),
    ("arange", lambda: tfr.arange(2**62), MemoryError, "OUT_OF_MEMORY"),
    ("linspace", lambda: tfr.linspace(0, 1, 2**62), MemoryError, "OUT_OF_MEMORY"),
    ("tile", lambda: tfr.tile(_f(), (H, H)), MemoryError, "OUT_OF_MEMORY"),
    ("repeat", lambda: tfr.repeat(_f(), 2**60), MemoryError, "OUT_OF_MEMORY"),
    ("kron", lambda: tfr.kron(tfr.ones((2**20,)), tfr.ones((2**20,))), MemoryError,
     "OUT_OF_MEMORY"),
    ("meshgrid", lambda: tfr.meshgrid(tfr.ones((2**25,)), tfr.ones((2**25,))), MemoryError,
     "OUT_OF_MEMORY"),
    ("pad", lambda: tfr.pad(_f(), H), MemoryError, "OUT_OF_MEMORY"),
    ("outer", lambda: tfr.outer(tfr.ones((2**20,)), tfr.ones((2**20,))), MemoryError,
     "OUT_OF_MEMORY"),
    ("zeros((0, 2**63))", lambda: tfr.zeros((0, 2**63)), MemoryError, "OUT_OF_MEMORY"),
    ("ones((1,) * 65)", lambda: tfr.ones((1,) * 65), ValueError, "INVALID_SHAPE"),
    ("argmax of empty", lambda: tfr.argmax(tfr.zeros((0,))), ValueError, "EMPTY_REDUCTION"),
    ("argmin of empty", lambda: tfr.argmin(tfr.zeros((2, 0)), axis=1), ValueError,
     "EMPTY_REDUCTION"),
    ("roll axis", lambda: tfr.roll(_f(), 1, axis=5), IndexError, "INVALID_AXIS"),
    ("repeat axis", lambda: tfr.repeat(_f(), 2, axis=5), IndexError, "INVALID_AXIS"),
    ("argmax axis", lambda: tfr.argmax(_f(), axis=5), IndexError, "INVALID_AXIS"),
    ("moveaxis", lambda: tfr.moveaxis(_f(), 5, 0), IndexError, "INVALID_AXIS"),
    ("moveaxis huge", lambda: tfr.moveaxis(_f(), (0, 2**63), (0, 1)), ValueError,
     "INVALID_ARGUMENT"),
    ("stack axis", lambda: tfr.stack([_f(), _f()], axis=5), IndexError, "INVALID_AXIS"),
    ("concat axis", lambda: tfr.concat([_f(), _f()], axis=5), IndexError, "INVALID_AXIS"),
    ("all, axis a 0-d tensor", lambda: tfr.all(_f(), axis=tfr.asarray(7.0)), TypeError,
     "INVALID_TYPE"),
    ("concat of a non-sequence", lambda: tfr.concat(3), ValueError, "INVALID_ARGUMENT"),
    ("tril of 0-d", lambda: tfr.tril(tfr.asarray(3.0)), ValueError, "INVALID_RANK"),
    ("triu of 0-d", lambda: tfr.triu(tfr.asarray(3.0)), ValueError, "INVALID_RANK"),
    ("outer(t, 3)", lambda: tfr.outer(_f(), 3), ValueError, "INVALID_OPERAND"),
    ("kron(t, 3)", lambda: tfr.kron(_f(), 3), ValueError, "INVALID_OPERAND"),
    ("np.float64(2) & t", lambda: np.float64(2) & _i(), TypeError, "SCALAR_DTYPE"),
    ("tensordot axes a string", lambda: tfr.tensordot(_f(), _f(), "ij"), ValueError,
     "INVALID_AXIS"),
    ("tensordot axes a matrix", lambda: tfr.tensordot(_f(), _f(), _f()), ValueError,
     "INVALID_AXIS"),
    ("transpose axes a bool", lambda: tfr.transpose(_f(), False), ValueError, "INVALID_AXIS"),
    ("einsum output with ','", lambda: tfr.einsum("ij,jk->ik,", _f(), tfr.ones((3, 2))),
     ValueError, "SUBSCRIPTS"),
    ("einsum invalid path", lambda: tfr.einsum("ij,jk->ik", _f(), tfr.ones((3, 2)),
                                               optimize=[(0, 5)]), ValueError, "INVALID_PATH"),
    ("setitem bool key, 2-D value", lambda: tfr.asarray(7.0).__setitem__(True, _f()),
     TypeError, "INVALID_TYPE"),
    ("shape given as a view", lambda: tfr.ones(_f()[::-1]), ValueError, "INVALID_SHAPE"),
    # found by randomized 10x runs of the fuzz (HYPOTHESIS_PROFILE=thorough)
    ("any, keepdims a numpy array", lambda: tfr.any(_f(), keepdims=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
    ("sum, keepdims a numpy array", lambda: tfr.sum(_f(), keepdims=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
    ("split at a nested list", lambda: tfr.split(_i(), [[0, 1], [1, 0]]), ValueError,
     "INVALID_ARGUMENT"),
    ("reshape to a numpy array of two dims", lambda: tfr.reshape(_f(), np.array([3, 3])),
     ValueError, "LENGTH_MISMATCH"),
    ("full_like with a sequence", lambda: tfr.full_like(_i(), (2**40,)), ValueError,
     "INVALID_DATA"),
    ("full with a list", lambda: tfr.full((2,), [1.0, 2.0]), ValueError, "INVALID_DATA"),
    ("searchsorted, side an array", lambda: tfr.searchsorted(_i(), _i(), side=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
    # found by a sweep of every parameter with arrays and junk (/tmp script, see issue 23)
    ("cholesky, upper an array", lambda: tfr.linalg.cholesky(_f(), upper=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
    ("svd, full_matrices an array", lambda: tfr.linalg.svd(_f(), full_matrices=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
    ("matrix_norm, keepdims an array",
     lambda: tfr.linalg.matrix_norm(_f(), keepdims=np.array([0, 1])), ValueError,
     "INVALID_ARGUMENT"),
    ("vector_norm, keepdims an array",
     lambda: tfr.linalg.vector_norm(_f(), keepdims=np.array([0, 1])), ValueError,
     "INVALID_ARGUMENT"),
    ("vector_norm, an axis past C int", lambda: tfr.linalg.vector_norm(_f(), axis=(2**62, 0)),
     IndexError, "INVALID_AXIS"),
    ("lstsq, rcond a list", lambda: tfr.linalg.lstsq(_f(), _f(), rcond=[[0, 1]]), ValueError,
     "INVALID_ARGUMENT"),
    ("meshgrid, indexing an array", lambda: tfr.meshgrid(_i(), indexing=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
    ("reshape, copy an array", lambda: tfr.reshape(_f(), (3, 2), copy=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
    ("array_split into 2**40 sections", lambda: tfr.array_split(_i(), 2**40), MemoryError,
     "OUT_OF_MEMORY"),
    ("vecdot, axis a tuple", lambda: tfr.vecdot(_f(), _f(), axis=(1,)), ValueError,
     "INVALID_AXIS"),
    ("asarray, copy a numpy array", lambda: tfr.asarray(_f(), copy=np.array([0, 1])),
     ValueError, "INVALID_ARGUMENT"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "base", "kind"), CASES, ids=[c[0] for c in CASES])
def test_the_refusal_is_typed_and_keeps_its_python_base_class(
    name: str, call: Callable[[], Any], base: type[BaseException], kind: str
) -> None:
    with pytest.raises(tfr.TenferroError) as info:
        call()
    assert isinstance(info.value, base), type(info.value).__mro__
    assert info.value.kind == kind


def test_a_refused_power_leaves_the_integer_array_unchanged() -> None:
    t = _i()
    with pytest.raises(tfr.ValidationError):
        t **= tfr.asarray(np.array([2, -1, 2]))
    assert np.asarray(t).tolist() == [5, 2, 3]


def test_numpy_where_a_tensor_is_read_like_the_inputs() -> None:
    t = _f()
    out = np.add(t, 1, out=np.zeros((2, 3)), where=t > 2)
    assert out.tolist() == [[0, 0, 0], [4, 5, 6]]


def test_a_zero_size_reversed_view_accepts_a_write() -> None:
    t = tfr.asarray(np.asfortranarray(np.arange(9.0).reshape(3, 3)))  # an owner
    v = t[0:0, ::-1]
    v[...] = 1.0
    del v
    assert np.asarray(t).tolist() == np.arange(9.0).reshape(3, 3).tolist()


def test_einsum_reduces_an_operand_of_more_than_52_indices() -> None:
    # numpy's einsum has 52 letters; a single-operand step beyond them sums and
    # takes diagonals itself (docs promise hundreds of indices).
    labels = "".join(chr(0x100 + i) for i in range(60))
    a = np.arange(6.0).reshape((1,) * 57 + (2, 3, 1))
    out = tfr.einsum(labels + "->" + labels[58], tfr.asarray(a))
    assert np.asarray(out).tolist() == a.reshape(2, 3).sum(axis=0).tolist()
    trace = tfr.einsum(labels[:58] + labels[57] + labels[59] + "->", tfr.asarray(a[..., :2, :]))
    assert float(np.asarray(trace)) == np.trace(a.reshape(2, 3)[:, :2])
