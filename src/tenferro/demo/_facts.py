"""The demo's checked facts: each section prints them and records those that do not hold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import TenferroError

__all__ = ["DemoFailure", "Facts", "refusal"]


class DemoFailure(AssertionError):
    """A demo fact did not hold."""


@dataclass
class Facts:
    """Collects printed, checked facts."""

    out: Callable[[str], None] = print
    failures: list[str] = field(default_factory=list)
    count: int = 0

    def section(self, title: str) -> None:
        self.out("")
        self.out(f"== {title} ==")

    def show(self, label: str, value: Any) -> None:
        """Print an observation that is informative but not checked."""
        self.out(f"{label} = {value}")

    def check(self, label: str, value: Any, expected: Any = True) -> Any:
        """Print ``label: value`` and record a failure unless ``value == expected``."""
        self.count += 1
        ok = bool(value == expected)
        mark = "" if ok else f"   <-- expected {expected!r}"
        self.out(f"{label}: {value}{mark}")
        if not ok:
            self.failures.append(f"{label}: got {value!r}, expected {expected!r}")
        return value


def refusal(fn: Callable[[], Any]) -> str:
    """The message of the `TenferroError` that ``fn()`` raises, or ``"no error"``."""
    try:
        fn()
    except TenferroError as exc:
        return str(exc)
    return "no error"
