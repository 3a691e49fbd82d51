"""The periodic jobs and the quote's check keep their partial indexes when prepared.

A statement a connection has run five times is prepared there (config/settings.py:
prepare_threshold), and PostgreSQL may then run it with a generic plan, made once for any
parameters. A partial index (`WHERE status = 'PENDING'`) serves such a plan only if the
statement names the predicate's constants itself: sent as parameters, they cannot prove it,
and the plan reads the whole table (the quote's check of a business's active ids took 7.5 ms
with 4,000 drops behind it). These statements write them in (core.lookups.Among).

Each test runs the code, records its statements, and plans each one again as a generic plan
(`plan_cache_mode = force_generic_plan`) with sequential scans priced out, as a table of
millions of rows would price them, plain index scans too (bitmap scans need a condition),
and with the table's other indexes dropped for the test
(its transaction is rolled back): the partial index must be in the plan, which it can only
be if the plan can prove its predicate. Which index wins among several usable ones is the
statistics' choice, so they are not left to choose.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone
from psycopg import sql

from dispatch.dispatcher import expire_offers
from events.delivery import claim_due, endpoints_to_sweep
from notifications.sending import claim, expire_claims
from orders.services import taken_ids
from tracking.window_watch import flag_windows_at_risk

pytestmark = pytest.mark.django_db

_names = itertools.count()


def generic_plans(run: Callable[[], object], table: str, index: str | tuple[str, ...]) -> list[str]:
    """The generic plans of the statements `run` makes on `table`, one text each, with no
    index of the table left but `index` (a name, or several) and those backing constraints."""
    statements: list[tuple[str, tuple]] = []

    def record(execute, statement, params, many, context):
        if f'"{table}"' in statement and not statement.lstrip().startswith("SAVEPOINT"):
            statements.append((statement, tuple(params or ())))
        return execute(statement, params, many, context)

    with transaction.atomic():
        with connection.execute_wrapper(record):
            run()
        assert statements, f"nothing ran on {table}"
        _drop_indexes_but(table, {index} if isinstance(index, str) else set(index))
        plans = [_generic_plan(statement, params) for statement, params in statements]
        transaction.set_rollback(True)  # the indexes come back for the rest of the test
    return plans


def _drop_indexes_but(table: str, kept: set[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
            " WHERE x.indrelid = %s::regclass"
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
            [table],
        )
        names = {name for (name,) in cursor.fetchall()}
        assert kept <= names, f"{kept - names} is no index of {table}"
        for name in sorted(names - kept):
            cursor.execute(f'DROP INDEX "{name}"')
        # A unique constraint's index (drop_short_code_once) can serve a condition on its
        # second column in a bitmap scan: its constraint goes too (the test rolls back).
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'u'",
            [table],
        )
        for (name,) in cursor.fetchall():
            if name not in kept:
                cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')


def _generic_plan(statement: str, params: tuple) -> str:
    name = f"generic_probe_{next(_names)}"
    numbered = statement % tuple(f"${n}" for n in range(1, len(params) + 1))
    raw = connection.connection
    values = sql.SQL(", ").join(sql.Literal(value) for value in params).as_string(raw)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute("SET LOCAL enable_seqscan = off")
        # Nor an ordered walk of the primary key, filtering as it goes (kept, as it backs a
        # constraint): a statement ordered by id with a LIMIT took it in a full run, where
        # the statistics other tests left priced it below the partial index and a sort.
        # A bitmap scan needs an index condition, which the partial index gives only when
        # the plan can prove its predicate.
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(f"PREPARE {name} AS {numbered}")
        cursor.execute(f"EXPLAIN EXECUTE {name}({values})" if params else f"EXPLAIN EXECUTE {name}")
        plan = "\n".join(line for (line,) in cursor.fetchall())
        cursor.execute(f"DEALLOCATE {name}")
    return plan


def test_the_quotes_check_of_active_ids_reads_the_active_index(alice):
    index = "client_order_id_active_once"
    plans = generic_plans(
        lambda: taken_ids(alice.business, "sandbox", ["A-1", "A-2"]), "orders_drop", index
    )
    assert all(index in plan for plan in plans), plans


def test_the_window_job_reads_only_drops_on_track():
    plans = generic_plans(flag_windows_at_risk, "orders_drop", "drop_window_risk_due")
    assert all("drop_window_risk_due" in plan for plan in plans), plans


def test_the_webhook_sweep_and_claim_read_only_pending_deliveries():
    pending = ("delivery_due", "delivery_queue")  # both partial: WHERE status = 'PENDING'
    plans = generic_plans(endpoints_to_sweep, "events_delivery", pending)
    # A claim also counts the endpoint's claimed deliveries, a few rows of a partial index.
    claiming = (*pending, "delivery_claimed")
    plans += generic_plans(
        lambda: claim_due(endpoint_id=1, limit=50, share=5), "events_delivery", claiming
    )
    assert all(any(index in plan for index in claiming) for plan in plans), plans


def test_the_notification_claims_read_only_their_status():
    now = timezone.now()
    plans = generic_plans(lambda: claim(now=now), "notifications_message", "notification_due")
    assert all("notification_due" in plan for plan in plans), plans
    plans = generic_plans(
        lambda: expire_claims(now=now), "notifications_message", "notification_sending"
    )
    assert all("notification_sending" in plan for plan in plans), plans


def test_open_offers_expire_through_their_index():
    soon = timezone.now() + timedelta(minutes=1)
    plans = generic_plans(lambda: expire_offers(soon), "dispatch_offer", "offer_open_by_expiry")
    assert all("offer_open_by_expiry" in plan for plan in plans), plans
