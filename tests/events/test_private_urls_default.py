"""Where plain http and private webhook URLs are allowed by default (config/settings.py):
under `make run` only (DEBUG on, the embedded SQLite database); production keeps the rule of
docs/contract.md §11 (DEBUG off, or PostgreSQL), and the variable still decides when set.

The real settings are imported in a subprocess with a clean environment, as a process
starting up would (tests/config/test_production_settings.py).
"""

from __future__ import annotations

import pytest

from tests.config.test_production_settings import STRONG_KEY, run_python

SQLITE = "sqlite:///db.sqlite3"
POSTGRES = "postgres://delivery@db.internal:5432/delivery"
SHOW = "from django.conf import settings; print(settings.WEBHOOK_ALLOW_PRIVATE_URLS)"


def allowed_under(**environment: str) -> bool:
    result = run_python({"SECRET_KEY": STRONG_KEY, **environment}, "-c", SHOW)
    assert result.returncode == 0, result.stderr
    return {"True": True, "False": False}[result.stdout.strip()]


@pytest.mark.parametrize(
    ("debug", "database", "allowed"),
    [
        ("true", SQLITE, True),  # make run
        ("true", POSTGRES, False),  # a developer's PostgreSQL, or a misconfigured production
        ("false", SQLITE, False),
        ("false", POSTGRES, False),  # production
    ],
)
def test_private_urls_are_allowed_by_default_only_with_debug_on_sqlite(debug, database, allowed):
    assert allowed_under(DEBUG=debug, DATABASE_URL=database) is allowed


def test_the_variable_decides_when_set():
    assert (
        allowed_under(DEBUG="true", DATABASE_URL=SQLITE, WEBHOOK_ALLOW_PRIVATE_URLS="false")
        is False
    )
    assert allowed_under(DEBUG="false", DATABASE_URL=POSTGRES, WEBHOOK_ALLOW_PRIVATE_URLS="true")
