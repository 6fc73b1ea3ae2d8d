"""scipy's array-API functions on tenferro arrays (``SCIPY_ARRAY_API=1``), against numpy."""

from __future__ import annotations

from clients.client_runner import run_cases


def test_scipy_calls_match_numpy_in_a_fresh_interpreter() -> None:
    run_cases("_scipy_cases.py")
