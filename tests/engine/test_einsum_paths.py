"""einsum's ``optimize=``: a given path, a strategy name, a path-finder object; typed errors."""

from __future__ import annotations

import warnings

import numpy as np
import opt_einsum
import pytest

import tenferro as tfr

SUBS = "ab,bc,cd,de,ea->"
SHAPES = [(3, 4), (4, 5), (5, 2), (2, 3), (3, 3)]


@pytest.fixture
def operands() -> tuple[list[np.ndarray], list[tfr.Tensor]]:
    rng = np.random.default_rng(1)
    arrays = [np.asfortranarray(rng.random(s)) for s in SHAPES]
    return arrays, [tfr.from_numpy(a) for a in arrays]


def _want(arrays: list[np.ndarray]) -> np.ndarray:
    return np.einsum(SUBS, *arrays)


@pytest.mark.parametrize(
    "path",
    [
        [(0, 1), (0, 1), (0, 1), (0, 1)],
        [(3, 4), (0, 3), (0, 1), (0, 1)],
        [(0, 1, 2), (0, 1, 2)],  # steps of three tensors run as pairs
        ((4,), (0, 4), (0, 1), (0, 1), (0, 1)),  # a single-tensor step
    ],
)
def test_a_given_path_gives_numpys_value(eng: tfr.CpuEngine, operands: tuple, path: list) -> None:
    arrays, tensors = operands
    got = eng.einsum(SUBS, *tensors, optimize=path)
    np.testing.assert_allclose(got.to_numpy(), _want(arrays), rtol=1e-12)


@pytest.mark.parametrize("name", ["auto", "greedy", "optimal", "dp", "branch-2", "random-greedy"])
def test_an_opt_einsum_strategy_name_gives_numpys_value(
    eng: tfr.CpuEngine, operands: tuple, name: str
) -> None:
    arrays, tensors = operands
    got = eng.einsum(SUBS, *tensors, optimize=name)
    np.testing.assert_allclose(got.to_numpy(), _want(arrays), rtol=1e-12)


def test_an_opt_einsum_path_optimizer_object_is_asked_for_the_path(
    eng: tfr.CpuEngine, operands: tuple
) -> None:
    arrays, tensors = operands

    class Recording(opt_einsum.paths.PathOptimizer):
        calls = 0

        def __call__(self, inputs, output, size_dict, memory_limit=None):  # type: ignore[no-untyped-def]
            Recording.calls += 1
            return opt_einsum.paths.greedy(inputs, output, size_dict)

    got = eng.einsum(SUBS, *tensors, optimize=Recording())
    assert Recording.calls == 1
    np.testing.assert_allclose(got.to_numpy(), _want(arrays), rtol=1e-12)


def test_cotengra_hyper_optimizer_and_contraction_tree_are_taken(
    eng: tfr.CpuEngine, operands: tuple
) -> None:
    ctg = pytest.importorskip("cotengra")
    arrays, tensors = operands
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cotengra warns when optional kahypar is missing
        opt = ctg.HyperOptimizer(methods=["greedy"], max_repeats=4)
    got = eng.einsum(SUBS, *tensors, optimize=opt)
    np.testing.assert_allclose(got.to_numpy(), _want(arrays), rtol=1e-12)
    inputs = [tuple(t) for t in SUBS.split("->")[0].split(",")]
    sizes = {ch: d for t, s in zip(inputs, SHAPES, strict=True) for ch, d in zip(t, s, strict=True)}
    tree = ctg.array_contract_tree(inputs, (), sizes, optimize="greedy")
    got = eng.einsum(SUBS, *tensors, optimize=tree)
    np.testing.assert_allclose(got.to_numpy(), _want(arrays), rtol=1e-12)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ([(0, 5), (0, 1), (0, 1), (0, 1)], "INVALID_PATH"),  # position out of range
        ([(0, 0), (0, 1), (0, 1), (0, 1)], "INVALID_PATH"),  # a position twice
        ([(0, 1), (0, 1)], "INVALID_PATH"),  # three tensors left
        ([(0, 1), (0, 1), (0, 1), (0, 1), (0, 1)], "INVALID_PATH"),  # one step too many
        ([("a", 1)], "INVALID_PATH"),
        ([(0, 1.5)], "INVALID_PATH"),
        ([(True, 1)], "INVALID_PATH"),
        ([()], "INVALID_PATH"),
        ([0, 1], "INVALID_PATH"),
        ("no-such-strategy", "INVALID_OPTIMIZE"),
        (42, "INVALID_OPTIMIZE"),
    ],
)
def test_a_malformed_path_is_a_typed_error(
    eng: tfr.CpuEngine, operands: tuple, path: object, kind: str
) -> None:
    arrays, tensors = operands
    before = [a.copy() for a in arrays]
    with pytest.raises(tfr.ValidationError) as err:
        eng.einsum(SUBS, *tensors, optimize=path)
    assert err.value.kind == kind
    assert err.value.op == "CpuEngine.einsum"
    for t, a in zip(tensors, before, strict=True):
        np.testing.assert_array_equal(t.to_numpy(), a)  # operands untouched


def test_a_malformed_path_is_refused_by_contract_expression_too(eng: tfr.CpuEngine) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        eng.contract_expression("ab,bc->ac", (2, 3), (3, 4), optimize=[(0, 2)])
    assert err.value.kind == "INVALID_PATH"
    assert err.value.op == "CpuEngine.contract_expression"


@pytest.mark.parametrize(
    "path",
    [
        [(1, 2), (0, 1), (0, 2), (0, 1)],
        [[1, 2], [0, 1], [0, 2], [0, 1]],
        [(np.int64(1), 2), (0, 1), (0, 2), (0, 1)],
        ((1, 2), (0, 1), (0, 2), (0, 1)),
    ],
)
def test_every_form_of_one_path_gives_the_same_plan_key(path: object) -> None:
    from tenferro.engine.einsum.paths import optimize_key

    assert optimize_key("op", path) == ((1, 2), (0, 1), (0, 2), (0, 1))
