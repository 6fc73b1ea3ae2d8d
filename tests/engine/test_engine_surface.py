"""`CpuEngine`'s public attributes are the documented operations and controls."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tenferro as tfr

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: The user guides that document engine operations (engine.md; linalg.md for the
#: linear-algebra family).
ENGINE_DOC = "\n".join((DOCS / name).read_text() for name in ("engine.md", "linalg.md"))
PLUMBING = ("run", "run_staged", "wrap", "output", "fresh", "give_back", "pool")


def _public(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_"))


@pytest.mark.parametrize("name", PLUMBING)
def test_output_plumbing_is_not_public(name: str) -> None:
    assert not hasattr(tfr.CpuEngine(), name)


@pytest.mark.parametrize("name", _public(tfr.CpuEngine))
def test_every_public_attribute_is_documented_in_the_engine_guides(name: str) -> None:
    assert re.search(rf"\b{name}\b", ENGINE_DOC), (
        f"CpuEngine.{name} is in neither docs/engine.md nor docs/linalg.md"
    )


def test_typed_operation_module_runs() -> None:
    # tests/typecheck/check_engine_types.py is what mypy checks (assert_type); at run
    # time the calls must simply work.
    from typecheck.check_engine_types import engine_operations_return_tensors

    engine_operations_return_tensors()


def test_binary_operations_keep_their_name_and_doc() -> None:
    eng = tfr.CpuEngine()
    assert eng.add.__name__ == "add"
    assert eng.add.__doc__
    out = eng.add(tfr.from_numpy(np.ones(2)), tfr.from_numpy(np.ones(2)))
    assert isinstance(out, tfr.Tensor)
