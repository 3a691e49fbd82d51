"""A row read from the database is read by name: its shape is declared once, beside the
query that reads it (a named tuple or a core.rows.Shape), and app code never picks a
column by its position (docs/architecture.md, "Row shapes are declared once").
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_APP_CODE = {"tests", "bench", ".venv", "node_modules"}
# `row[3]`, `rows[0][8]`: a column picked by where it sits in the row.
BY_POSITION = re.compile(r"\brow\[\d+\]|\brows\[\d+\]\[")


def app_modules() -> list[Path]:
    return [
        path
        for path in sorted(ROOT.rglob("*.py"))
        if not NOT_APP_CODE & set(path.relative_to(ROOT).parts)
    ]


def test_no_app_code_reads_a_row_by_position():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in app_modules()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if BY_POSITION.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_check_sees_a_column_read_by_position():
    assert BY_POSITION.search("pickup = (rows[0][6], rows[0][7])")
    assert BY_POSITION.search("ids = [row[0] for row in couriers]")
    assert not BY_POSITION.search("first = rows[0]")
    assert not BY_POSITION.search("ids = [courier.courier_id for courier in couriers]")
