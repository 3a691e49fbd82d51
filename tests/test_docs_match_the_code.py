"""docs/architecture.md and the README are where a newcomer finds where a change goes: they
name every package, and every module, function or class docs/architecture.md names exists.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"
NOT_PACKAGES = {"tests", "bench", "docs", "static", "templates", "bin", "locale"}
# A backticked word that is code: a path, a dotted or slashed reference, or a name with an
# underscore or inner capital (a plain word such as `orders` or `code` is prose).
PATH = re.compile(r"^[\w./-]+(/|\.(py|html|js|css|md|json|toml|txt))$")
REFERENCE = re.compile(r"^([a-z_]+(?:[./][a-z_]+)*)[./]([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)?)$")
NAME = re.compile(r"^_?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$|^_?[A-Z][a-z0-9]+[A-Z]\w*$|^_\w+$")


def packages() -> list[str]:
    """The repository's own Python packages at the top level (an app or config)."""
    return sorted(
        entry.name
        for entry in ROOT.iterdir()
        if entry.is_dir()
        and entry.name not in NOT_PACKAGES
        and (entry / "__init__.py").exists()
        and tracked(entry / "__init__.py")
    )


def tracked(path: Path) -> bool:
    listed = subprocess.run(
        ["git", "ls-files", "--error-unmatch", str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
    )
    return listed.returncode == 0


def code_spans(text: str) -> set[str]:
    spans = re.findall(r"`([^`\n]+)`", text)
    return {span.strip().rstrip("()") for span in spans}


def block_names(text: str) -> set[str]:
    """The first word of each line of the document's fenced blocks (its layer lists)."""
    names, inside = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside and line.strip():
            names.add(line.split()[0].rstrip("/"))
    return names


def defined_in(module: Path, name: str) -> bool:
    text = module.read_text()
    return bool(re.search(rf"^\s*(def|class|async def)\s+{name}\b|^\s*{name}\s*[:=]", text, re.M))


def module_file(dotted: str) -> Path | None:
    parts = dotted.replace(".", "/")
    for candidate in (ROOT / f"{parts}.py", ROOT / parts / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def exists_in_code(name: str) -> bool:
    found = subprocess.run(
        ["git", "grep", "-q", "-w", name, "--", "*.py", ":!tests", ":!bench"],
        cwd=ROOT,
    )
    return found.returncode == 0


def unresolved(span: str) -> str | None:
    """Why `span` names nothing in the code (None: it does, or it is not a code name)."""
    if "<" in span or " " in span or span.startswith(("/", "@", "-")):
        return None  # a pattern, a URL, a decorator or a call written as prose
    if PATH.match(span):
        return None if (ROOT / span).exists() or "/" not in span else "no such file"
    if match := REFERENCE.match(span):
        module = module_file(match[1])
        if module is not None:
            owner = match[2].split(".")[0]
            return None if defined_in(module, owner) else f"not defined in {module.name}"
    if NAME.match(span):
        return None if exists_in_code(span) else "not in the code"
    return None


@pytest.mark.parametrize("document", [ARCHITECTURE, README], ids=["architecture", "readme"])
def test_every_package_is_named_in_the_layout(document):
    named = block_names(document.read_text())
    missing = [package for package in packages() if package not in named]
    assert not missing, f"{document.name} does not name: {missing}"


def test_every_name_the_architecture_gives_exists():
    problems = {
        span: why
        for span in sorted(code_spans(ARCHITECTURE.read_text()))
        if (why := unresolved(span)) is not None
    }
    assert not problems, problems


def test_a_renamed_function_would_be_caught():
    assert unresolved("orders/services.no_such_step") is not None
    assert unresolved("decide_charges_that_never_were") is not None
    assert unresolved("orders/services.py") is None
