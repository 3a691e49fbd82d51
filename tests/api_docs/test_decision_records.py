"""The docs stand alone: every link to a decision record or a contract section names a
heading that exists, and no document under docs/ cites a tracker's issue number instead of
saying what the thing is.

Headings are slugged as GitHub slugs them, by the function that gives the served guides
their anchors (config.guides.heading_id), so a link that works here works on both.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from markdown_it import MarkdownIt

from config.guides import heading_id

ROOT = Path(settings.BASE_DIR)
DOCS = ROOT / "docs"
LINKED = ("decisions.md", "contract.md")
# `decisions.md#anchor` or `contract.md#anchor`, in a link or written out.
LINK = re.compile(r"\b(decisions|contract)\.md#([^)\s\"'>`]+)")
SELF_LINK = re.compile(r"\]\(#([^)\s]+)\)")
# "issue N", "Issues N and M", "issue #N", and a bare "#46" (not an anchor's "#4-post-…").
ISSUE_NUMBER = re.compile(r"(?i)\bissues?\s+#?[0-9]+|(?:^|[\s(\[])#[0-9]+(?![\w-])", re.M)
# Split so that this file does not match itself (test_docs_consistency.py reads every file).
OUTSIDE = re.compile(r"\.\./shared/|\b(?:DESIGN|SPEC)" + r"\.md\b|outside this repository")


def anchors_of(markdown: str) -> set[str]:
    """The GitHub anchors of a Markdown document's headings."""
    tokens = MarkdownIt("commonmark").enable(["table"]).parse(markdown)
    taken: dict[str, int] = {}
    anchors = set()
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            words = "".join(
                child.content
                for child in tokens[index + 1].children or []
                if child.type in ("text", "code_inline")
            )
            anchors.add(heading_id(words, taken))
    return anchors


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_the_slug_is_githubs():
    assert anchors_of("## §4 POST /orders/bulk\n") == {"4-post-ordersbulk"}
    assert anchors_of("### `make run` is one supervisor process\n") == {
        "make-run-is-one-supervisor-process"
    }
    assert anchors_of("## Failover by pg_auto_failover, not Patroni\n") == {
        "failover-by-pg_auto_failover-not-patroni"
    }
    assert anchors_of("## Twice\n## Twice\n") == {"twice", "twice-1"}


def test_every_link_to_a_decision_or_a_contract_section_names_a_heading():
    anchors = {name: anchors_of((DOCS / name).read_text()) for name in LINKED}
    links, broken = 0, []
    for path in documents():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for target, anchor in LINK.findall(line):
                links += 1
                if anchor not in anchors[f"{target}.md"]:
                    broken.append(f"{path.relative_to(ROOT)}:{number}: {target}.md#{anchor}")
    for name in LINKED:  # and the two documents' links to their own headings
        for number, line in enumerate((DOCS / name).read_text().splitlines(), 1):
            for anchor in SELF_LINK.findall(line):
                links += 1
                if anchor not in anchors[name]:
                    broken.append(f"docs/{name}:{number}: #{anchor}")
    assert links >= 10  # the docs do link to the records: the check reads them
    assert broken == []


def test_a_broken_anchor_is_seen():
    anchors = anchors_of("## Drops are written with COPY\n")
    assert "drops-are-written-with-copy" in anchors
    assert "issue-18" not in anchors
    assert LINK.findall("see [why](decisions.md#issue-18).") == [("decisions", "issue-18")]


def test_no_document_under_docs_cites_an_issue_number():
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0).strip()}"
        for path in sorted(DOCS.rglob("*.md"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for match in ISSUE_NUMBER.finditer(line)
    ]
    assert cited == []


def test_the_citation_pattern_tells_issue_numbers_from_anchors():
    # Split, so that the repository holds no citation (tests/test_stands_alone.py).
    for text in ("issue " + "34", "Issues " + "29 and 30", "issue #" + "46", "(#46)", "see #12."):
        assert ISSUE_NUMBER.search(text), text
    for text in ("[§4](contract.md#4-post-ordersbulk)", "an issue with the receiver", "# Title"):
        assert not ISSUE_NUMBER.search(text), text


def test_the_decisions_and_the_contract_point_nowhere_outside_the_repository():
    pointing = [
        f"docs/{name}: {match.group(0)}"
        for name in LINKED
        for match in OUTSIDE.finditer((DOCS / name).read_text())
    ]
    assert pointing == []
