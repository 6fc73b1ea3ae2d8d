"""scikit-learn with ``array_api_dispatch=True`` on tenferro arrays, against numpy."""

from __future__ import annotations

from clients.client_runner import run_cases


def test_sklearn_estimators_match_numpy_in_a_fresh_interpreter() -> None:
    run_cases("_sklearn_cases.py")
