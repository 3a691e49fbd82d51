"""The repository stands alone: no file says which tracker issue asked for something, it says
what the thing is (a decision record's title in docs/decisions.md, a target, a behaviour).

Every file git would see is searched, tracked or not yet added, ignored ones (.venv) aside.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# "issue N", "Issues N and M", "issue #N" with N a number, in any case.
CITATION = r"issues? #?[0-9]+"


def citations(*options: str, cwd: Path = ROOT) -> list[str]:
    """`git grep` of CITATION: each line that cites an issue, as path:line: text."""
    found = subprocess.run(
        ["git", "grep", *options, "-n", "-I", "-i", "-E", "-e", CITATION, "--", "."],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert found.returncode in (0, 1), found.stderr  # 1: nothing found; anything else failed
    return found.stdout.splitlines()


def test_no_file_cites_an_issue_number():
    assert citations("--untracked") == []


def test_a_citation_is_seen(tmp_path):
    cited = "# Asked for in " + "Issue" + " 18."  # split, so that this file cites nothing
    (tmp_path / "note.py").write_text(cited + "\n")
    (tmp_path / "plain.py").write_text("# An issue with the receiver, 18 times.\n")
    assert citations("--no-index", cwd=tmp_path) == [f"note.py:1:{cited}"]
