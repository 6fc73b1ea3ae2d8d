"""Side-by-side timing: interleaved repetitions, medians, ratios.

A case times several *contenders* (callables) on the same inputs. Repetitions
are interleaved (A, B, A, B, ...) so drift in machine load affects every
contender alike; each contender's median is reported, and ratios are taken
against a named baseline contender.

A ratio is the median of the *paired* ratios: repetition ``i`` of the contender
over repetition ``i`` of the baseline, timed back to back. On a shared machine
whose speed drifts by 10-30 % between seconds, the ratio of two medians mixes
that drift into the comparison; a pair shares it, so the paired median is the
steadier estimate (ratios near 1.0 are where it matters). The interquartile
range of the paired ratios is reported with it, so a reader can tell a 1.03
that is noise from one that is not.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CaseResult",
    "Target",
    "format_ratio",
    "format_spread",
    "print_results",
    "set_progress",
    "time_case",
]

_progress: Callable[[str], None] | None = None


def set_progress(callback: Callable[[str], None] | None) -> None:
    """Install a callback told the name of each case as it starts (the CLI's progress bar)."""
    global _progress
    _progress = callback


@dataclass(frozen=True)
class Target:
    """A ratio target: ``contender`` time / ``baseline`` time must be <= ``max_ratio``."""

    contender: str
    baseline: str
    max_ratio: float

    def describe(self) -> str:
        return f"{self.contender}/{self.baseline} <= {self.max_ratio:g}"


@dataclass
class CaseResult:
    """Medians (seconds) per contender, plus the targets checked on them."""

    name: str
    group: str
    size: int
    medians: dict[str, float]
    targets: list[Target] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    #: Per-repetition times (seconds) per contender, in the order they were taken;
    #: empty for a case built from medians alone.
    samples: dict[str, list[float]] = field(default_factory=dict)

    def _paired(self, contender: str, baseline: str) -> list[float] | None:
        """Repetition-by-repetition ratios, or None without paired samples."""
        a = self.samples.get(contender)
        b = self.samples.get(baseline)
        if not a or not b or len(a) != len(b) or len(a) < 3:
            return None
        return [x / y for x, y in zip(a, b, strict=True)]

    def ratio(self, contender: str, baseline: str) -> float:
        """``contender`` / ``baseline``: the median paired ratio (see the module
        docstring), or the ratio of the medians when there are no paired samples."""
        paired = self._paired(contender, baseline)
        if paired is None:
            return self.medians[contender] / self.medians[baseline]
        return statistics.median(paired)

    def ratio_spread(self, contender: str, baseline: str) -> tuple[float, float] | None:
        """The interquartile range of the paired ratios, or None without them."""
        paired = self._paired(contender, baseline)
        if paired is None:
            return None
        q1, _, q3 = statistics.quantiles(paired, n=4, method="inclusive")
        return q1, q3

    def target_results(self) -> list[tuple[Target, float, bool]]:
        out = []
        for t in self.targets:
            r = self.ratio(t.contender, t.baseline)
            out.append((t, r, r <= t.max_ratio))
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "group": self.group,
            "size": self.size,
            "medians_s": self.medians,
            "targets": [
                {
                    "target": t.describe(),
                    "ratio": r,
                    "ratio_iqr": self.ratio_spread(t.contender, t.baseline),
                    "met": ok,
                }
                for t, r, ok in self.target_results()
            ],
            **self.extra,
        }


def time_case(
    name: str,
    contenders: Sequence[tuple[str, Callable[[], Any]] | tuple[str, Callable[[], Any], int]],
    *,
    group: str = "",
    size: int = 0,
    repeats: int = 15,
    inner: int = 1,
    warmup: int = 2,
    targets: Sequence[Target] = (),
) -> CaseResult:
    """Time each contender ``repeats`` times, interleaved; ``inner`` calls per sample.

    A contender given as ``(label, fn, inner)`` overrides ``inner`` for itself (a fast
    operation timed next to a slow one needs many calls per sample).
    """
    if _progress is not None:
        _progress(name)
    entries = [(c[0], c[1], c[2] if len(c) == 3 else inner) for c in contenders]
    for _, fn, _ in entries:
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {label: [] for label, _, _ in entries}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for rep in range(repeats):
            order = entries if rep % 2 == 0 else list(reversed(entries))
            for label, fn, calls in order:
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                samples[label].append((time.perf_counter() - t0) / calls)
    finally:
        if gc_was_enabled:
            gc.enable()
    medians = {label: statistics.median(v) for label, v in samples.items()}
    return CaseResult(name, group, size, medians, list(targets), samples=samples)


def format_seconds(s: float) -> str:
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def format_ratio(ratio: float) -> str:
    """A time ratio readable at any size: three significant digits, and the speed-up below 1.

    ``f"{ratio:.3f}"`` shows an O(1) operation timed against an O(n) copy as 0.000;
    this shows ``6.25e-05 (16,000x faster)``.
    """
    text = f"{ratio:.3g}"
    if 0 < ratio < 1:
        speedup = 1 / ratio
        text += f" ({speedup:,.0f}x faster)" if speedup >= 10 else f" ({speedup:.2g}x faster)"
    return text


def print_results(results: Sequence[CaseResult]) -> None:
    """Plain-text report: medians per contender and each target's ratio."""
    for r in results:
        meds = ", ".join(f"{k}={format_seconds(v)}" for k, v in r.medians.items())
        print(f"{r.name}: {meds}")
        for t, ratio, ok in r.target_results():
            verdict = "met" if ok else "MISSED"
            spread = format_spread(r.ratio_spread(t.contender, t.baseline))
            print(f"    {t.describe():40s} ratio {format_ratio(ratio):26s} {verdict}{spread}")


def format_spread(spread: tuple[float, float] | None) -> str:
    """`` (IQR 0.97-1.05)`` for a ratio's interquartile range; empty without one."""
    if spread is None:
        return ""
    return f" (IQR {spread[0]:.3g}-{spread[1]:.3g})"
