"""The package imports only downward (DESIGN section 9, docs/internals.md "Layers").

The import graph is built from the source with `ast`, so imports hidden in
function bodies count as much as module-level ones. Imports under
``if TYPE_CHECKING:`` are left out: they never run, so they cannot form a
runtime cycle and a type checker may see any layer.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "tenferro"

# The layer table: (layer number, layer name, module-name patterns). A module may
# import modules of its own layer or of a lower one, never of a higher one, and the
# whole graph must be acyclic. A pattern "x.*" matches the package x and all its
# submodules. Every module under src/tenferro must match exactly one pattern, so a
# new module forces a decision about where it belongs. Keep in step with the map
# in docs/internals.md.
LAYERS: list[tuple[int, str, tuple[str, ...]]] = [
    (0, "base", ("errors", "dtype", "layout", "placement", "copies", "borrow", "_roots", "alloc")),
    (1, "storage", ("storage.*",)),
    (2, "tensor", ("_services", "_array_methods", "guards", "view", "tensor", "group")),
    (3, "services", ("engine.*", "interop.*", "domains.*")),
    # linalg is the array API extension: it builds on the namespace's functions.
    (
        4,
        "namespace",
        ("", "namespace.*", "linalg.*", "random", "_namespace.*", "array_api.*", "creation.*"),
    ),
    # tenferro.autodiff wraps the namespace's functions (layer 4); nothing imports it.
    (5, "distributed, autodiff", ("distributed.*", "autodiff.*")),
    (6, "tools", ("cli", "__main__", "demo.*", "bench.*")),
]


def _module_files() -> dict[str, Path]:
    """Dotted module name (relative to the package, "" for the package) -> source file."""
    root = SRC / PACKAGE
    out: dict[str, Path] = {}
    # Compiled modules (Cython .pyx) are modules of the package too: their imports
    # are read from their `from tenferro... import` lines (`_pyx_edges`).
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyx")]):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _module_files()


def _matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return module == base or module.startswith(base + ".")
    return module == pattern


def layer_of(module: str) -> int:
    hits = [n for n, _, pats in LAYERS for p in pats if _matches(module, p)]
    if len(hits) != 1:
        raise AssertionError(
            f"module tenferro.{module} matches {len(hits)} layer patterns; give it exactly "
            "one place in LAYERS (tests/test_layers.py) and in docs/internals.md"
        )
    return hits[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST, type_only: bool = False) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:`` (unless ``type_only``)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        if not type_only and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _resolve(importer: str, is_package: bool, level: int, module: str | None) -> str | None:
    """The absolute package-relative name a ``from``/``import`` refers to (None: not ours)."""
    if level == 0:
        if module is None or not (module == PACKAGE or module.startswith(PACKAGE + ".")):
            return None
        return module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    parts = importer.split(".") if importer else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    if module:
        parts += module.split(".")
    return ".".join(parts)


def _known(name: str) -> str:
    """The longest prefix of ``name`` that is a module of the package."""
    while name not in MODULES:
        if "." not in name:
            return ""
        name = name.rsplit(".", 1)[0]
    return name


def _pyx_edges(path: Path) -> set[str]:
    """The package modules a Cython module imports (absolute ``from tenferro.x import``)."""
    import re

    edges: set[str] = set()
    for m in re.finditer(r"^\s*(?:from|c?import)\s+(tenferro[\w.]*)", path.read_text(), re.M):
        target = _resolve("", True, 0, m.group(1))
        if target is not None:
            edges.add(_known(target))
    return edges


def import_edges(module: str, type_only: bool = False) -> set[str]:
    """The package modules ``module`` imports (module level and inside functions).

    ``type_only``: also the imports under ``if TYPE_CHECKING:``.
    """
    path = MODULES[module]
    if path.suffix == ".pyx":
        return _pyx_edges(path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    edges: set[str] = set()
    for node in _runtime_nodes(tree, type_only):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(module, is_package, 0, alias.name)
                if target is not None:
                    edges.add(_known(target))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module)
            if target is None:
                continue
            for alias in node.names:
                # `from . import x` imports the submodule x when there is one.
                sub = f"{target}.{alias.name}" if target else alias.name
                edges.add(sub if sub in MODULES else _known(target))
        elif isinstance(node, ast.Call):
            # importlib.import_module("tenferro.x") with a literal name
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                target = _resolve(module, is_package, 0, node.args[0].value)
                if target is not None:
                    edges.add(_known(target))
    edges.discard(module)
    return edges


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    return {m: import_edges(m, type_only) for m in MODULES}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (as a closed path), or None when it is acyclic."""
    color = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    for start in graph:
        if color[start]:
            continue
        path: list[str] = []
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        color[start] = 1
        path.append(start)
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                color[node] = 2
                continue
            nxt = todo.pop()
            if color.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if color.get(nxt) == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(graph[nxt])))
    return None


def _name(module: str) -> str:
    return f"{PACKAGE}.{module}" if module else PACKAGE


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    names = {n: name for n, name, _ in LAYERS}
    bad = []
    for module, targets in sorted(graph.items()):
        low = layer_of(module)
        for target in sorted(targets):
            high = layer_of(target)
            if high > low:
                bad.append(
                    f"{_name(module)} ({names[low]}) imports {_name(target)} ({names[high]})"
                )
    return bad


def test_every_module_has_exactly_one_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_the_graph_sees_function_level_and_relative_imports() -> None:
    # A fixed point of the builder: cli imports the demo only inside a function.
    assert "demo" in import_edges("cli")
    assert "errors" in import_edges("tensor")
    assert "storage.host" in import_edges("guards")


def test_import_graph_is_acyclic() -> None:
    cycle = _find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(_name(m) for m in cycle)


def test_modules_import_only_their_own_or_lower_layers() -> None:
    bad = layer_violations(import_graph())
    assert not bad, "imports that go up a layer:\n" + "\n".join(bad)


def test_storage_imports_nothing_above_it_not_even_for_types() -> None:
    # Stricter than the rule for other layers: storage must not even name a type
    # from above (a recycler is any object with `recycle`, see storage/recycler.py).
    graph = import_graph(type_only=True)
    above = [
        f"{_name(m)} -> {_name(t)}"
        for m in graph
        if layer_of(m) == 1
        for t in graph[m]
        if layer_of(t) > 1
    ]
    assert not above, "\n".join(above)


def test_a_cycle_is_found_in_a_graph_that_has_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    cycle = _find_cycle(graph)
    assert cycle is not None
    assert cycle[0] == cycle[-1]
    assert set(cycle) == {"a", "b", "c"}


def test_an_upward_import_is_reported() -> None:
    bad = layer_violations({"storage.host": {"engine.pool"}, "engine.pool": set()})
    assert bad == ["tenferro.storage.host (storage) imports tenferro.engine.pool (services)"]


@pytest.mark.parametrize(
    "module",
    ["tenferro.bench", "tenferro.demo", "tenferro.domains._children", "rich", "matplotlib"],
)
def test_import_tenferro_does_not_load_tools(module: str) -> None:
    code = f"import sys, tenferro; sys.exit(int({module!r} in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, f"import tenferro loaded {module}\n{result.stderr}"
