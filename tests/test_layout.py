"""The package layout of docs/architecture.md holds: imports between the compiler's
packages run one way, lazy imports inside functions included, so no two import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import aotk

# lowest first: a module may import its own package and the ones before it
LAYERS = ["codegen", "kernels", "dialect", "transforms", "lowering"]
ABOVE_ALL = {"backend", "aot", "tools"}  # the front ends: nothing in LAYERS imports them
ROOT = Path(aotk.__file__).parent
# the modules at the top of aotk/ that the compiler packages may use: shared services that
# import none of the packages (the front door, function, autodiff, interp, ..., is above)
SERVICES = {"dtypes", "timing", "paths", "context", "ir_walk"}


def _imported_packages(source: str) -> set[str]:
    """The aotk subpackages and top-level modules `source` imports, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "aotk" and len(parts) > 1 and _is_aotk_part(parts[1]):
                found.add(parts[1])
    return found


def _is_aotk_part(name: str) -> bool:
    return (ROOT / name).is_dir() or (ROOT / f"{name}.py").is_file()


def layering_violations(package: str, source: str) -> list[str]:
    rank = LAYERS.index(package)
    return sorted(
        other
        for other in _imported_packages(source)
        if other in ABOVE_ALL
        or (other in LAYERS and LAYERS.index(other) > rank)
        or (other not in LAYERS and other not in SERVICES)
    )


def test_the_shared_services_import_no_compiler_package() -> None:
    # context builds the xDSL context from the dialect; only lowering and tools use it
    allowed = {name: set() for name in SERVICES} | {"context": {"dialect"}}
    wrong = {
        name: sorted(bad)
        for name in sorted(SERVICES)
        if (bad := _imported_packages((ROOT / f"{name}.py").read_text()) - allowed[name])
    }
    assert wrong == {}


def test_compiler_packages_import_downwards_only() -> None:
    wrong = {
        str(path.relative_to(ROOT.parent)): bad
        for package in LAYERS
        for path in sorted((ROOT / package).glob("*.py"))
        if (bad := layering_violations(package, path.read_text()))
    }
    assert wrong == {}


def test_the_check_sees_an_upward_import_even_inside_a_function() -> None:
    source = (
        "def f():\n    from aotk.lowering import pipeline\n    from aotk.kernels import kernel\n"
    )
    assert layering_violations("dialect", source) == ["lowering"]
    assert layering_violations("kernels", "import aotk.backend.nn\n") == ["backend"]
    assert layering_violations("lowering", source) == []
    assert layering_violations("dialect", "from aotk import autodiff\n") == ["autodiff"]
    assert layering_violations("kernels", "from aotk import dtypes\n") == []


def _import_graph() -> dict[str, set[str]]:
    """Each package or top-level module of aotk -> the others it imports (at any depth)."""
    parts = {
        p.stem: list(p.rglob("*.py")) if p.is_dir() else [p]
        for p in ROOT.iterdir()
        if not p.name.startswith("__") and (p.suffix == ".py" or (p / "__init__.py").exists())
    }
    return {
        name: {o for f in files for o in _imported_packages(f.read_text())} - {name}
        for name, files in parts.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph`, or [] when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str]:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return []


def test_no_two_parts_of_aotk_import_each_other() -> None:
    assert _cycle(_import_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []
