"""Cases run by test_scipy.py in a child interpreter with ``SCIPY_ARRAY_API=1``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

assert os.environ.get("SCIPY_ARRAY_API") == "1", "run through tests/clients/test_scipy.py"

import scipy.cluster.vq as vq  # noqa: E402
import scipy.fft as sf  # noqa: E402
import scipy.integrate as si  # noqa: E402
import scipy.signal as sg  # noqa: E402
import scipy.special as sp  # noqa: E402
import scipy.stats as ss  # noqa: E402

import tenferro as tfr  # noqa: E402

X = np.linspace(0.1, 2.0, 7)
M = np.abs(np.random.default_rng(0).normal(size=(6, 3))) + 0.1

CASES: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "special.logsumexp": (sp.logsumexp, X),
    "special.softmax": (sp.softmax, X),
    "special.log_softmax": (sp.log_softmax, X),
    "special.entr": (sp.entr, X),
    "special.xlogy": (lambda a: sp.xlogy(a, a), X),
    "special.erf": (sp.erf, X),
    "special.gammaln": (sp.gammaln, X),
    "stats.zscore": (ss.zscore, M),
    "stats.moment": (lambda a: ss.moment(a, 2), M),
    "stats.skew": (ss.skew, M),
    "stats.kurtosis": (ss.kurtosis, M),
    "stats.gmean": (ss.gmean, M),
    "stats.hmean": (ss.hmean, M),
    "stats.variation": (ss.variation, M),
    "stats.sem": (ss.sem, M),
    "stats.entropy": (ss.entropy, X),
    "integrate.trapezoid": (si.trapezoid, X),
    "fft.fft": (sf.fft, X),
    "fft.rfft": (sf.rfft, X),
    "cluster.vq.whiten": (vq.whiten, M),
    "signal.detrend": (sg.detrend, X),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_scipy_function_on_tenferro_matches_numpy(name: str) -> None:
    fn, data = CASES[name]
    out = fn(tfr.asarray(data.copy()))
    assert isinstance(out, (tfr.Tensor, tfr.TensorView)), type(out)
    np.testing.assert_allclose(np.asarray(out), fn(data), rtol=1e-12, atol=1e-14)
