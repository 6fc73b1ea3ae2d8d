"""Every public function says what it returns: none of the export lists' functions is
typed ``-> Any`` (what strict mypy would let flow silently into a caller's code).

Read from the annotations, not by running mypy: a plain function's own return
annotation, and for a function a factory made (a closure) the annotation its
module gives the name, a Protocol whose ``__call__`` says what it returns (as the
elementwise families do).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any

import pytest

import tenferro

#: The modules whose ``__all__`` is the public surface.
PUBLIC = [
    "tenferro",
    "tenferro.namespace",
    "tenferro.namespace.fft",
    "tenferro.linalg",
    "tenferro.autodiff",
    "tenferro.distributed",
]

#: Annotations that say nothing about what comes back.
UNTYPED = {"Any", "list[Any]", "tuple[Any, ...]", "typing.Any"}

#: Functions that return a value whose type lies outside tenferro, with the reason.
ALLOWED_ANY = {
    # cotengra's ContractionTree: cotengra has no type information to name.
    "tenferro.distributed.sliced_tree",
    # One cotangent per primal, each a pytree shaped like its primal (any structure).
    "tenferro.autodiff.hvp",
}


def _public_functions() -> list[tuple[str, Any]]:
    seen: set[int] = set()
    out = []
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if isinstance(obj, type) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            out.append((f"{name}.{attr}", obj))
    return out


def _protocol_return(attr: str) -> str | None:
    """What the Protocol a tenferro module annotates its binding ``attr`` with says it
    returns (by name: importing `tenferro.autodiff` wraps the bound functions)."""
    for mod_name, module in list(sys.modules.items()):
        if not mod_name.startswith("tenferro.") or module is None:
            continue
        names = vars(module)
        protocol = names.get(names.get("__annotations__", {}).get(attr, ""))
        call = vars(protocol).get("__call__") if isinstance(protocol, type) else None
        if call is not None and "return" in getattr(call, "__annotations__", {}):
            return str(call.__annotations__["return"])
    return None


def _declared_type(attr: str, fn: Any) -> str | None:
    """The annotation of what ``fn`` (exported as ``attr``) returns, as written in the
    source: the Protocol of a generated function's binding, else the function's own."""
    declared = _protocol_return(attr)
    if declared is not None:
        return declared
    return getattr(inspect.unwrap(fn), "__annotations__", {}).get("return")


def test_there_are_public_functions_to_check() -> None:
    assert len(_public_functions()) > 200


@pytest.mark.parametrize("name", [name for name, _ in _public_functions()])
def test_a_public_function_declares_what_it_returns(name: str) -> None:
    if name in ALLOWED_ANY:
        return
    module, attr = name.rsplit(".", 1)
    # Looked up now, not at collection: a test that re-imports tenferro replaces them.
    declared = _declared_type(attr, getattr(importlib.import_module(module), attr))
    assert declared is not None and declared not in UNTYPED, (
        f"{name} is typed -> {declared}: name what it returns (Result for an array, a "
        "Protocol for a family of generated functions)"
    )


def test_the_exemptions_are_still_public() -> None:
    names = {name for name, _ in _public_functions()}
    assert names >= ALLOWED_ANY
    assert tenferro.__all__
