"""The linalg benchmark group runs (quick mode) and reports every case; no timing is checked."""

from __future__ import annotations

from tenferro.bench import linalg as bench
from tenferro.cli import BENCH_MODULES


def test_linalg_is_a_bench_group() -> None:
    assert "linalg" in BENCH_MODULES


def test_quick_run_times_tenferro_numpy_and_scipy_on_every_case() -> None:
    results = bench.run(quick=True)
    names = {r.name for r in results}
    for op in ("svd", "qr (tall)", "eigh", "cholesky", "solve", "inv", "det", "lstsq (tall)"):
        assert f"linalg {op} 64x64 f64" in names
    assert any("batched svd" in n for n in names)
    cut = next(r for r in results if "svd_truncated" in r.name)
    assert {"tenferro", "tenferro-gesdd", "numpy", "scipy"} == set(cut.medians)
    for r in results:
        assert {"tenferro", "numpy"} <= set(r.medians)
        assert [t.describe() for t in r.targets] == ["tenferro/numpy <= 1"]
