"""Packages point one way (docs/architecture.md): each imports only the layers below it.

core ← geo ← fleet ← accounts ← events ← billing ← orders ← tracking ← dispatch ← notifications
← couriers ← dashboard ← console ← agents ← config

Read from the code's own imports with `ast`, migrations included; tests and benchmarks
may import anything. Inside a layer too, no two modules import each other, directly or
through a longer circle (imports inside functions count: they run all the same).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = [
    "core",
    "geo",
    "fleet",
    "accounts",
    "events",
    "billing",
    "orders",
    "tracking",
    "dispatch",
    "notifications",
    "couriers",
    "dashboard",
    "console",
    "agents",
]
# The root URLconf, settings and WSGI name every app: that is their job.
TOP = "config"
RANK = {name: rank for rank, name in enumerate([*LAYERS, TOP])}


def imported_packages(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name.split(".")[0] for name in names} & set(RANK)


def upward_imports() -> list[str]:
    found = []
    for package in RANK:
        for path in sorted((ROOT / package).rglob("*.py")):
            for target in imported_packages(path):
                if RANK[target] > RANK[package]:
                    found.append(f"{path.relative_to(ROOT)} imports {target}")
    return found


def test_every_package_imports_only_the_layers_below_it():
    assert upward_imports() == []


def test_every_package_of_the_project_has_a_layer():
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert packages - {"tests", "bench"} == set(RANK)


def module_name(path: Path, root: Path = ROOT) -> str:
    """`a/b/c.py` is a.b.c; `a/b/__init__.py` is a.b."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str], root: Path = ROOT) -> set[str]:
    """The project's modules this file imports: relative imports resolved; `from a import b`
    names the module a.b when b is one, else a (b is a name defined in a)."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return (found & modules) - {here}


def import_graph(root: Path = ROOT, packages=tuple(RANK)) -> dict[str, set[str]]:
    """Module → the project's modules it imports, over every file of the packages."""
    paths = [path for package in packages for path in sorted((root / package).rglob("*.py"))]
    modules = {module_name(path, root) for path in paths}
    return {module_name(path, root): imported_modules(path, modules, root) for path in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of imports (its first module repeated at the end), or [] if none."""
    done: set[str] = set()
    for start in sorted(graph):
        path: list[str] = []
        on_path: set[str] = set()
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        if start in done:
            continue
        path.append(start)
        on_path.add(start)
        while stack:
            node, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
            elif target in on_path:
                return [*path[path.index(target) :], target]
            elif target not in done:
                stack.append((target, iter(sorted(graph.get(target, ())))))
                path.append(target)
                on_path.add(target)
    return []


def test_no_two_modules_import_each_other_even_through_others():
    cycle = find_cycle(import_graph())
    assert cycle == [], "an import circle: " + " → ".join(cycle)


def test_the_graph_resolves_relative_and_submodule_imports(tmp_path):
    (tmp_path / "app" / "views").mkdir(parents=True)
    files = {
        "app/__init__.py": "",
        "app/models.py": "from .services import make\n",
        "app/services.py": "def make():\n    from app import models\n",
        "app/views/__init__.py": "",
        "app/views/pages.py": "from ..models import Thing\nfrom . import common\n",
        "app/views/common.py": "import app.services\nfrom app.views.pages import x\n",
    }
    for name, source in files.items():
        (tmp_path / name).write_text(source)
    graph = import_graph(tmp_path, packages=("app",))
    assert graph["app.models"] == {"app.services"}
    assert graph["app.services"] == {"app.models"}  # inside a function: it counts
    assert graph["app.views.pages"] == {"app.models", "app.views.common"}
    assert graph["app.views.common"] == {"app.services", "app.views.pages"}
    assert find_cycle(graph) == ["app.models", "app.services", "app.models"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from orders.models import Drop\n", {"orders"}),
        ("import billing.services\n", {"billing"}),
        ("from . import models\n", set()),
        ("import json\nfrom django.db import models\n", set()),
    ],
)
def test_the_check_reads_imports(tmp_path, source, expected):
    module = tmp_path / "m.py"
    module.write_text(source)
    assert imported_packages(module) == expected
