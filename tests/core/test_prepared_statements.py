"""The hot reads are prepared on their connection (config/settings.py: prepare_threshold).

Django turns psycopg's preparing off unless OPTIONS asks for it; asked, a statement a
connection has run five times is prepared there on its next run, and the server stops
parsing and planning it on every call (the API key's read 0.95 ms → 0.44 ms).
Behind PgBouncer in transaction mode nothing is prepared: the next run may land on another
server session.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from accounts.auth import unrevoked_key
from accounts.keys import digest_of
from orders.services import taken_ids
from tests.config.test_production_settings import PRODUCTION, run_python
from tests.factories import many_drops

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


def plan_counts(*fragments: str) -> list[tuple[int, int]]:
    """(generic plans, custom plans) of each prepared statement holding every fragment."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return [
            (generic, custom)
            for statement, generic, custom in cursor.fetchall()
            if all(fragment in statement for fragment in fragments)
        ]


@pytest.mark.django_db
def test_a_one_id_check_keeps_its_generic_plan(open_for_business, make_tenant, api):
    """A prepared statement runs with custom plans (planned per call) for its first five
    runs; then the server keeps the generic plan only if it costs no more than they did. A
    list of unknown length is priced as ten values, so a one-id check made with `= ANY(…)`
    (the quote's check of which ids are taken) was planned afresh on every call; one value is
    compared as one (core.lookups.any_values), and its generic plan is kept."""
    rich = make_tenant(name="Rich Shop", sandbox_balance="100000.00")
    # A business with some history and the table's statistics, as a live database has:
    # on an empty table every plan costs alike and the generic one is kept either way.
    sent = api.bulk(many_drops(1000, "ONE"), rich.sandbox_key)
    assert sent.json()["data"]["counts"]["accepted"] == 1000
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE orders_drop")
    for _ in range(16):  # five runs as they come, then prepared: five custom plans, six more
        assert taken_ids(rich.business, "sandbox", ["ONE-7"]) == {"ONE-7"}

    checks = plan_counts('SELECT "orders_drop"."client_order_id" AS "client_order_id" FROM')
    assert len(checks) == 1, prepared_statements()
    assert checks[0] == (6, 5)  # (generic plans, custom plans)


def test_production_prepares_and_pgbouncer_never_does():
    assert options_under(PRODUCTION)["prepare_threshold"] == 5
    behind_pgbouncer = options_under({**PRODUCTION, "DATABASE_POOLER": "pgbouncer"})
    assert behind_pgbouncer["prepare_threshold"] is None
    assert behind_pgbouncer["server_side_binding"] is True
