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


def paired(a: list[float], b: list[float]) -> CaseResult:
    medians = {"tenferro": sorted(a)[len(a) // 2], "numpy": sorted(b)[len(b) // 2]}
    return CaseResult(
        "case",
        "linalg",
        1,
        medians,
        [Target("tenferro", "numpy", 1.0)],
        samples={"tenferro": a, "numpy": b},
    )


def test_a_ratio_is_the_median_of_the_paired_repetitions() -> None:
    # The machine runs 3x slower for three pairs, and one baseline sample is an
    # outlier: four pairs of five say 0.9; the ratio of the medians says 3.0 / 1.1.
    r = paired([1.0, 1.0, 3.0, 3.0, 3.0], [1.1, 1.1, 3.3, 3.3, 0.5])
    assert r.ratio("tenferro", "numpy") == pytest.approx(1 / 1.1)
    assert r.medians["tenferro"] / r.medians["numpy"] == pytest.approx(3.0 / 1.1)


def test_the_ratio_of_a_case_without_samples_is_the_ratio_of_its_medians() -> None:
    assert report({"tenferro": 2.0, "np.copy": 4.0}).ratio("tenferro", "np.copy") == 0.5


def test_the_spread_is_the_interquartile_range_of_the_paired_ratios() -> None:
    r = paired([1.0, 2.0, 3.0, 4.0, 5.0], [1.0] * 5)
    assert r.ratio_spread("tenferro", "numpy") == (2.0, 4.0)
    assert r.as_dict()["targets"][0]["ratio_iqr"] == (2.0, 4.0)


def test_too_few_paired_samples_fall_back_to_the_medians() -> None:
    r = paired([1.0, 3.0], [2.0, 2.0])
    assert r.ratio_spread("tenferro", "numpy") is None
    assert r.ratio("tenferro", "numpy") == r.medians["tenferro"] / r.medians["numpy"]


def test_the_report_prints_the_spread(capsys: pytest.CaptureFixture[str]) -> None:
    print_results([paired([1.0, 2.0, 3.0, 4.0, 5.0], [1.0] * 5)])
    assert "IQR 2-4" in capsys.readouterr().out


def test_time_case_keeps_every_repetition_of_every_contender() -> None:
    from tenferro.bench.harness import time_case

    r = time_case("noop", [("tenferro", lambda: None), ("numpy", lambda: None)], repeats=5)
    assert [len(v) for v in r.samples.values()] == [5, 5]
    assert r.ratio_spread("tenferro", "numpy") is not None
