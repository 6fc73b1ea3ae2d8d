"""The plain-text benchmark report: ratios stay readable however small they are."""

from __future__ import annotations

import pytest

from tenferro.bench.harness import CaseResult, Target, format_ratio, print_results


def report(medians: dict[str, float], max_ratio: float = 0.01) -> CaseResult:
    return CaseResult("case", "storage", 1, medians, [Target("tenferro", "np.copy", max_ratio)])


def test_a_tiny_ratio_is_printed_in_significant_digits_not_as_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_results([report({"tenferro": 1e-6, "np.copy": 0.016})])
    out = capsys.readouterr().out
    assert "6.25e-05" in out
    assert "0.000" not in out


def test_a_tiny_ratio_is_printed_as_a_speed_up_too(capsys: pytest.CaptureFixture[str]) -> None:
    print_results([report({"tenferro": 1e-6, "np.copy": 0.016})])
    assert "16,000x faster" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("ratio", "text"),
    [
        (0.3612, "0.361 (2.8x faster)"),
        (1.0, "1"),
        (1.234, "1.23"),
        (0.05, "0.05 (20x faster)"),
        (1e-3 / 7, "0.000143 (7,000x faster)"),
    ],
)
def test_format_ratio_keeps_three_significant_digits(ratio: float, text: str) -> None:
    assert format_ratio(ratio) == text
