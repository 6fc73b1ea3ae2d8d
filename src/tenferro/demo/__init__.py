"""`python -m tenferro demo`: the main line and the storage facts, each one checked.

Each section prints facts as the seed chapter's experiment does and checks them:
a fact that does not hold makes the demo fail (exit status 1).
"""

from __future__ import annotations

from collections.abc import Callable

from . import domains, engine, groups, storage
from ._facts import DemoFailure, Facts, refusal

__all__ = ["DemoFailure", "Facts", "refusal", "run_demo"]


def _sections() -> list[Callable[[Facts], None]]:
    return [storage.run, engine.run, groups.run, domains.run]


def run_demo(out: Callable[[str], None] = print) -> Facts:
    """Run every section; raise `DemoFailure` listing the facts that did not hold."""
    facts = Facts(out=out)
    for section in _sections():
        section(facts)
    out("")
    if facts.failures:
        raise DemoFailure(
            f"{len(facts.failures)} of {facts.count} facts did not hold: "
            + "; ".join(facts.failures)
        )
    out(f"all {facts.count} facts hold")
    return facts
