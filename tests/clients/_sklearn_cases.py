"""Cases run by test_sklearn.py in a child interpreter with ``SCIPY_ARRAY_API=1``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

assert os.environ.get("SCIPY_ARRAY_API") == "1", "run through tests/clients/test_sklearn.py"

import sklearn  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler  # noqa: E402

import tenferro as tfr  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 5))
Y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(np.int64)
YR = X @ np.arange(1.0, 6.0) + 0.1


@pytest.fixture(autouse=True)
def dispatch() -> Iterator[None]:
    with sklearn.config_context(array_api_dispatch=True):
        yield


def t(a: Any) -> Any:
    return tfr.asarray(np.array(a))


def close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("solver", [None, "covariance_eigh", "full", "randomized"])
def test_pca_matches_numpy(solver: str | None) -> None:
    kw: dict[str, Any] = {"n_components": 3, "random_state": 0}
    if solver is not None:
        kw["svd_solver"] = solver
    ours = PCA(**kw).fit(t(X))
    ref = PCA(**kw).fit(X)
    assert isinstance(ours.components_, (tfr.Tensor, tfr.TensorView))
    close(ours.components_, ref.components_)
    close(ours.explained_variance_, ref.explained_variance_)
    close(ours.transform(t(X)), ref.transform(X))


def test_gaussian_nb_matches_numpy() -> None:
    ours = GaussianNB().fit(t(X), t(Y))
    ref = GaussianNB().fit(X, Y)
    close(ours.theta_, ref.theta_)
    close(ours.var_, ref.var_)
    close(ours.predict_proba(t(X)), ref.predict_proba(X))


def test_lda_matches_numpy() -> None:
    ours = LinearDiscriminantAnalysis().fit(t(X), t(Y))
    ref = LinearDiscriminantAnalysis().fit(X, Y)
    close(ours.coef_, ref.coef_)


def test_ridge_matches_numpy() -> None:
    ours = Ridge(alpha=0.5, solver="svd").fit(t(X), t(YR))
    ref = Ridge(alpha=0.5, solver="svd").fit(X, YR)
    close(ours.coef_, ref.coef_)


@pytest.mark.parametrize("scaler", [StandardScaler, MinMaxScaler, MaxAbsScaler])
def test_scalers_match_numpy(scaler: Any) -> None:
    close(scaler().fit_transform(t(X)), scaler().fit_transform(X))
