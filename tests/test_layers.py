"""Packages point one way (docs/architecture.md): each imports only the layers below it.

core ← geo ← accounts ← events ← billing ← orders ← tracking ← dashboard ← console ← config

Read from the code's own imports with `ast`, migrations included; tests and benchmarks
may import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = [
    "core",
    "geo",
    "accounts",
    "events",
    "billing",
    "orders",
    "tracking",
    "dashboard",
    "console",
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
