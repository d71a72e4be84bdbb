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


def _imported_packages(source: str) -> set[str]:
    """The aotk subpackages `source` imports, at any depth of the module."""
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
            if parts[0] == "aotk" and len(parts) > 1 and (ROOT / parts[1]).is_dir():
                found.add(parts[1])
    return found


def layering_violations(package: str, source: str) -> list[str]:
    rank = LAYERS.index(package)
    return sorted(
        other
        for other in _imported_packages(source)
        if other in ABOVE_ALL or (other in LAYERS and LAYERS.index(other) > rank)
    )


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
