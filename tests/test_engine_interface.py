"""The modules above `Tensor` use only its documented internal interface.

docs/internals.md ("The engine's view of Tensor") lists what code outside
`tensor.py` may touch: three read-only fields, a few private methods and the
private constructors. Engine outputs are built by `tensor._pooled` or by the
compiled per-operation protocol (engine/_core.pyx, which sets the same fields);
no Python module builds a Tensor by hand (`INLINED` lists the declared
exceptions: none) or pins a buffer by hand (`PINS_BY_HAND`: the general path's
`Reads` only).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tenferro.tensor as tensor_module
from tenferro.tensor import Tensor

SRC = Path(tensor_module.__file__).resolve().parent

#: Fields other modules may read (never write).
READ_FIELDS = {"_shape", "_dtype", "_st"}
#: Tensor methods other modules may call.
METHODS = {
    "_live",
    "_raise_moved",
    "_resolve",
    "_read_flat",
    "_read_array",
    "_move",
    "_begin_out",
    "_wrap",
}
#: Private functions of tensor.py other modules may import.
FUNCTIONS = {
    "_pooled",
    "_adopt",
    "_base_chain",
    "_check_adoptable",
    "_col_major_copy",
    "_unadoptable",
    "_release_host_buffer",
}
#: Where `tensor._pooled` is inlined: (module, enclosing function). None: the hot
#: paths call the compiled core (engine/_core.pyx), which builds what `_pooled` builds.
INLINED: set[tuple[str, str]] = set()
#: Modules outside storage/ that pin a buffer themselves (append to or remove from
#: `storage.host.reading`, or call ``HostBuffer.pin``/``unpin``), with why. Every
#: other pin is the compiled core's.
PINS_BY_HAND = {
    # `Reads`: the general path's operand registry, which pins any number of
    # operands (tensors and views) for a whole call and checks each with its typed
    # refusal; the per-operation hot paths call the compiled core instead.
    "engine/_base.py",
}

TENSOR_PRIVATE = {n for n in dir(Tensor) if n.startswith("_") and not n.startswith("__")} | set(
    Tensor.__slots__
) - {"__weakref__"}


def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel != "tensor.py":
            out.append((rel, ast.parse(path.read_text())))
    return out


def _is_new_tensor(node: ast.AST) -> bool:
    """``_new(Tensor)`` or ``object.__new__(Tensor)``."""
    return (
        isinstance(node, ast.Call)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "Tensor"
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "_new")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "__new__")
        )
    )


def _slot_assignments(body: list[ast.stmt], var: str) -> dict[str, str]:
    """``{slot: source of the value}`` for the statements ``var.<slot> = value``."""
    out = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == var
            ):
                out[target.attr] = ast.unparse(stmt.value)
    return out


def _pooled_fields() -> dict[str, str]:
    tree = ast.parse(Path(tensor_module.__file__).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_pooled")
    return _slot_assignments(fn.body, "t")


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of ``fn``, not descending into the functions nested in it."""
    out: list[ast.AST] = [fn]
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _inlined_blocks() -> list[tuple[str, str, dict[str, str]]]:
    """Every block outside tensor.py that builds a Tensor by hand, with its fields."""
    found = []
    for rel, tree in _modules():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for block in _own_nodes(fn):
                body = getattr(block, "body", None)
                if not isinstance(body, list):
                    continue
                for i, stmt in enumerate(body):
                    value = getattr(stmt, "value", None)
                    target = getattr(stmt, "target", None)
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                        target = stmt.targets[0]
                    if value is not None and _is_new_tensor(value):
                        assert isinstance(target, ast.Name), ast.unparse(stmt)
                        found.append((rel, fn.name, _slot_assignments(body[i + 1 :], target.id)))
    return found


def test_pooled_sets_every_slot_of_tensor() -> None:
    assert set(_pooled_fields()) == set(Tensor.__slots__) - {"__weakref__"}


def test_tensors_are_built_by_hand_only_where_pooled_is_inlined() -> None:
    places = {(rel, fn) for rel, fn, _ in _inlined_blocks()}
    assert places == INLINED


def _pins_by_hand(tree: ast.Module) -> list[str]:
    """Every place in ``tree`` that touches the engine-read registry or pins a buffer."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.ImportFrom) and any(a.name == "reading" for a in node.names)) or (
            isinstance(node, ast.Attribute) and node.attr in {"reading", "pin", "unpin"}
        ):
            found.append(ast.unparse(node))
    return found


def test_buffers_are_pinned_by_hand_only_in_the_declared_modules() -> None:
    pinning = {rel for rel, tree in _modules() if _pins_by_hand(tree)}
    pinning = {rel for rel in pinning if not rel.startswith("storage/")}
    assert pinning == PINS_BY_HAND


def test_the_pin_scan_sees_a_hand_inlined_protocol() -> None:
    source = (
        "from tenferro.storage.host import reading\n"
        "def f(st):\n"
        "    reading.append(st)\n"
        "    try:\n"
        "        return st.flat[0]\n"
        "    finally:\n"
        "        reading.remove(st)\n"
    )
    assert _pins_by_hand(ast.parse(source))
    assert _pins_by_hand(ast.parse("def g(buf):\n    buf.pin()\n"))
    assert _pins_by_hand(ast.parse("import x as _host\nr = _host.reading\n"))


def test_inlined_copies_set_the_fields_pooled_sets() -> None:
    pooled = _pooled_fields()
    for rel, fn, fields in _inlined_blocks():
        assert set(fields) == set(pooled), (rel, fn)
        # The same storage and state; the shape expression is the caller's own.
        # The same storage (the engine's recycler) and state; shape and dtype are
        # the caller's own expressions.
        assert re.fullmatch(r"HostBuffer\(owner, .+, \w+\._recycler\)", fields["_st"]), (rel, fn)
        assert pooled["_st"] == "HostBuffer(owner, flat, recycler)"
        assert fields["_moved"] == pooled["_moved"] == "None", (rel, fn)


def test_other_modules_use_only_the_documented_tensor_internals() -> None:
    allowed = READ_FIELDS | METHODS | {"_moved"}  # `_moved` only in the inlined blocks
    used: dict[str, set[str]] = {}
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in TENSOR_PRIVATE:
                used.setdefault(node.attr, set()).add(rel)
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("tensor"):
                for alias in node.names:
                    if alias.name.startswith("_"):
                        assert alias.name in FUNCTIONS, (rel, alias.name)
    extra = {name: sorted(mods) for name, mods in used.items() if name not in allowed}
    assert not extra, f"undocumented Tensor internals used outside tensor.py: {extra}"


def test_no_module_writes_tensor_fields_outside_the_inlined_blocks() -> None:
    inlined = {rel for rel, _ in INLINED}
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr in {"_st", "_moved"}
                    and rel not in inlined
                    and rel != "storage/group.py"  # GroupTables._moved: its own field
                ):
                    raise AssertionError(f"{rel}: {ast.unparse(node)}")


# -- the compiled per-operation protocol (engine/_core.pyx) --------------------------------
def _fields(t: Tensor) -> tuple[object, ...]:
    st = t._st
    return (
        t._shape,
        t._dtype,
        t._moved,
        st.__class__,
        st.owner,
        st.flat,
        st.recycler,
        st.origin,
        st._root,
        st._stale,
        st.exclusive,
        st.failed_read,
    )


def test_the_compiled_core_builds_what_pooled_builds() -> None:
    import numpy as np

    from tenferro.dtype import DType
    from tenferro.engine import _core

    owner = np.empty(4)
    by_core = _core.pooled((2, 2), DType.F64, owner, owner, None)
    by_python = tensor_module._pooled((2, 2), DType.F64, owner, owner, None)
    assert _fields(by_core) == _fields(by_python)


def test_the_compiled_core_pins_before_the_kernel_and_unpins_after_a_failure() -> None:
    import numpy as np
    import pytest

    import tenferro as tfr
    from tenferro.dtype import DType
    from tenferro.engine import _core
    from tenferro.storage import host

    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.arange(4.0))
    seen: list[int] = []

    def kernel(x: object, out: object) -> None:
        seen.append(a._st.readers())
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError):
        _core.unary(kernel, a, DType.F64, eng)
    assert seen == [1]  # pinned while the kernel ran
    assert not host.reading  # unpinned in finally
    assert a._st.failed_read  # the failure policy's mark on the operand
    assert eng.buffer_pool_stats().buffers == 0  # the failed output was dropped


def test_the_compiled_core_leaves_an_exclusively_borrowed_operand_to_the_general_path() -> None:
    import numpy as np

    import tenferro as tfr
    from tenferro.dtype import DType
    from tenferro.engine import _core
    from tenferro.storage import host

    eng = tfr.CpuEngine()
    a = tfr.from_numpy(np.arange(4.0))
    with a.map_write():
        assert _core.unary(np.negative, a, DType.F64, eng) is None
        assert _core.binary(np.add, a, a, DType.F64, eng) is None
    assert not host.reading
    assert eng.buffer_pool_stats() == tfr.CpuEngine().buffer_pool_stats()


# -- the namespace's interface to the engine (engine/interface.py) -------------------------
#: Underscore attributes of engines (and their plumbing) that only engine/ may touch.
ENGINE_PRIVATE = {
    "_pool",
    "_recycler",
    "_state",
    "_run",
    "_run_staged",
    "_output",
    "_fresh",
    "_full_fast",
    "_axes_fast",
    "_threads",
    "_domain",
}
#: The same names on objects that are not engines, with the reason each is allowed.
NOT_ENGINES = {
    # Dask's coroutine behind Client.run, the only one that takes callback_timeout
    # (a stopped worker must not block `contract` past its timeout).
    ("distributed/_contract.py", "client._run"),
}
#: A view's descriptor fields, which only view.py (and the engine interface) may write.
VIEW_FIELDS = {"_shape", "_strides", "_offset", "_base", "_source", "_dtype"}


def test_modules_above_the_engine_use_only_its_interface() -> None:
    for rel, tree in _modules():
        if rel.startswith(("engine/", "storage/")):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ENGINE_PRIVATE
                and (rel, ast.unparse(node)) not in NOT_ENGINES
            ):
                raise AssertionError(f"{rel}: {ast.unparse(node)} (use engine.interface)")


def test_modules_above_the_engine_never_write_a_views_descriptor() -> None:
    for rel, tree in _modules():
        if rel.startswith(("engine/", "storage/")) or rel in {"view.py", "tensor.py"}:
            continue
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AugAssign):
                targets = [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr in VIEW_FIELDS
                    and not (isinstance(target.value, ast.Name) and target.value.id == "self")
                ):
                    raise AssertionError(f"{rel}: {ast.unparse(node)} (use engine.interface)")
