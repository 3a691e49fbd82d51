"""The hot reads are prepared on their connection (config/settings.py: prepare_threshold).

Django turns psycopg's preparing off unless OPTIONS asks for it; asked, a statement a
connection has run five times is prepared there on its next run, and the server stops
parsing and planning it on every call (issue 34: the API key's read 0.95 ms → 0.44 ms).
Behind PgBouncer in transaction mode nothing is prepared: the next run may land on another
server session.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from accounts.auth import unrevoked_key
from accounts.keys import digest_of
from tests.config.test_production_settings import PRODUCTION, run_python

SHOW_OPTIONS = """
import json
from django.conf import settings
print(json.dumps(settings.DATABASES["default"].get("OPTIONS", {})))
"""


def options_under(environment: dict[str, str]) -> dict:
    result = run_python(environment, "-c", SHOW_OPTIONS)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.django_db
def test_the_api_keys_read_is_prepared_once_run_five_times(alice):
    digest = digest_of(alice.sandbox_key)
    assert not any("accounts_apikey" in s for s in prepared_statements())
    for _ in range(6):  # five runs as they come, then the prepared one
        assert unrevoked_key(digest)[0].business == alice.business
    assert connection.connection.prepare_threshold == 5
    assert any('FROM "accounts_apikey"' in s for s in prepared_statements())


def test_production_prepares_and_pgbouncer_never_does():
    assert options_under(PRODUCTION)["prepare_threshold"] == 5
    behind_pgbouncer = options_under({**PRODUCTION, "DATABASE_POOLER": "pgbouncer"})
    assert behind_pgbouncer["prepare_threshold"] is None
    assert behind_pgbouncer["server_side_binding"] is True
