"""Re-exports are explicit: every public name of `tenferro` is imported by name.

The package root and `tenferro.namespace` import each exported name from the
module that defines it (no ``import *``), and each ``__all__`` lists exactly the
public names the module binds, so a type checker and a reader see the same
surface as ``from tenferro import *``.
"""

from __future__ import annotations

import ast
import types
from pathlib import Path

import tenferro
import tenferro.namespace as namespace

SRC = Path(tenferro.__file__).resolve().parent


def _star_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [
        f"{path.relative_to(SRC)}:{node.lineno}: from {'.' * node.level}{node.module} import *"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
    ]


def _public_bindings(module: types.ModuleType) -> set[str]:
    """Names a module binds that do not start with an underscore, less imported modules
    and ``from __future__`` features (which only look like names)."""
    out = set()
    for name, value in vars(module).items():
        if name.startswith("_") and not (name.startswith("__") and name in module.__all__):
            continue
        if isinstance(value, types.ModuleType) and name not in module.__all__:
            continue  # a submodule or a module it imported, not part of its surface
        if name == "annotations" and not isinstance(value, (types.FunctionType, type)):
            continue
        out.add(name)
    return out


def _imported_names(path: Path, module: str) -> set[str]:
    """Names ``path`` imports by name from its relative import of ``module``."""
    tree = ast.parse(path.read_text())
    return {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == module
        for alias in node.names
    }


def test_no_package_imports_with_a_star() -> None:
    found = [hit for path in sorted(SRC.rglob("*.py")) for hit in _star_imports(path)]
    assert not found, f"import names explicitly, not with *: {found}"


def test_every_all_name_is_unique() -> None:
    for module in (tenferro, namespace):
        assert len(module.__all__) == len(set(module.__all__)), module.__name__


def test_namespace_all_lists_exactly_its_exported_functions() -> None:
    bound = _public_bindings(namespace)
    method_support = {
        name for name in bound if any(vars(namespace)[name] is f for f in namespace._FOR_METHODS)
    }
    exported = bound - method_support
    missing = sorted(exported - set(namespace.__all__))
    assert not missing, (
        f"tenferro.namespace binds {missing} but does not list them in __all__ "
        "(src/tenferro/namespace/__init__.py): add them, or to _FOR_METHODS if only the "
        "array methods use them"
    )
    unbound = sorted(set(namespace.__all__) - bound)
    assert not unbound, f"tenferro.namespace.__all__ lists {unbound}, which it does not bind"


def test_the_root_imports_every_namespace_name_by_name() -> None:
    imported = _imported_names(SRC / "__init__.py", "namespace")
    missing = sorted(set(namespace.__all__) - imported)
    assert not missing, (
        f"tenferro/__init__.py does not import {missing} from .namespace: add them to its "
        "`from .namespace import (...)` and to its __all__"
    )
    for name in namespace.__all__:
        assert getattr(tenferro, name) is getattr(namespace, name), name


def test_root_all_lists_exactly_its_public_names() -> None:
    bound = _public_bindings(tenferro)
    assert sorted(bound - set(tenferro.__all__)) == [], "bound at the root but not in __all__"
    assert sorted(set(tenferro.__all__) - bound) == [], "in __all__ but not bound at the root"


def test_root_all_covers_the_namespace() -> None:
    missing = sorted(set(namespace.__all__) - set(tenferro.__all__))
    assert not missing, f"add {missing} to __all__ in src/tenferro/__init__.py"
