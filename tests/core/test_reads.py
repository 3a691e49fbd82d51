"""core.reads.driver_rows: rows as the driver's tuples, streamed in chunks on PostgreSQL,
and still a statement like any other for Django (wrappers, query log, errors)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.db.models.functions import Concat, NullIf
from django.test.utils import CaptureQueriesContext

from core.formats import WireTimes, iso_z, moment_of
from core.functions import TimeText, UuidText
from core.models import RateCounter
from core.reads import ROWS_PER_CHUNK, driver_rows, rows_compiled_once
from core.writes import insert_rows
from tests.core.test_prepared_statements import prepared_statements

MANY = 2 * ROWS_PER_CHUNK + 7  # more than one chunk, and a last one that is not full


@pytest.fixture
def counters(db):
    insert_rows(
        RateCounter,
        ("key", "window_end_ms", "hits"),
        [(f"k{n:04d}", n, n % 3) for n in range(MANY)],
    )


def test_every_row_in_order_over_several_chunks(counters):
    query = RateCounter.objects.order_by("key").values_list("key", "window_end_ms", "hits")

    rows = driver_rows(query)

    assert rows == list(query)
    assert len(rows) == MANY and all(type(row) is tuple for row in rows)


def test_computed_columns_come_as_the_database_made_them(alice):
    query = (
        type(alice.business)
        .objects.filter(pk=alice.business.pk)
        .values_list(UuidText("id"), Concat(F("name"), F("name")))
    )

    assert driver_rows(query) == [(str(alice.business.pk), alice.business.name * 2)]


def test_the_statement_passes_the_execute_wrappers_and_the_query_log(counters):
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as captured, connection.execute_wrapper(wrapper):
        driver_rows(RateCounter.objects.values_list("key"))

    assert len(seen) == 1 and seen[0].startswith("SELECT")
    assert [q["sql"] for q in captured] == seen


def test_a_failing_statement_raises_djangos_error_and_spoils_only_its_transaction(counters):
    broken = RateCounter.objects.extra(select={"boom": "1 / (hits - hits)"}).values_list("boom")

    with pytest.raises(DatabaseError), transaction.atomic():
        driver_rows(broken)

    assert len(driver_rows(RateCounter.objects.values_list("key"))) == MANY


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 23, 8, 55, 47, 848_225, tzinfo=UTC),
        datetime(2026, 11, 23, 8, 55, 47, tzinfo=UTC),  # no fraction: none written
        datetime(2026, 11, 23, 8, 55, 47, 100_000, tzinfo=UTC),  # trailing zeros dropped
        datetime(2026, 11, 23, 8, 55, 47, 999, tzinfo=UTC),  # under a millisecond
        datetime(2026, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2026, 11, 23, 15, 0, tzinfo=timezone(timedelta(hours=7))),  # stored as UTC
    ],
)
def test_a_time_comes_as_the_servers_text_and_reads_as_its_moment(alice, moment):
    """TimeText reads a time as the database writes it; WireTimes gives iso_z's text of it,
    and moment_of the moment itself, whatever fraction the database wrote."""
    business = type(alice.business)
    business.objects.filter(pk=alice.business.pk).update(
        created_at=moment, approved_at=moment + timedelta(minutes=1)
    )
    query = business.objects.filter(pk=alice.business.pk).values_list(
        TimeText("created_at"),
        NullIf(TimeText("approved_at"), TimeText("created_at")),
        NullIf(TimeText("created_at"), TimeText("created_at")),
    )

    [(created, approved, same)] = driver_rows(query)

    assert type(created) is str and moment_of(created) == moment
    assert WireTimes().iso_z(created) == iso_z(moment)
    assert moment_of(approved) == moment + timedelta(minutes=1)
    assert same is None


def test_a_read_compiled_once_sends_its_sql_with_new_values(counters):
    """The second call compiles nothing (its queryset is never built) and still reads the
    rows of its own values."""
    built = []

    def read(low: int) -> list[tuple]:
        def queryset():
            built.append(low)
            return RateCounter.objects.filter(hits__gte=low).order_by("key").values_list("key")

        return rows_compiled_once(("test counters", "gte"), [low], queryset)

    assert read(2) == list(
        RateCounter.objects.filter(hits__gte=2).order_by("key").values_list("key")
    )
    assert read(1) == list(
        RateCounter.objects.filter(hits__gte=1).order_by("key").values_list("key")
    )
    assert built == [2]


def test_a_wrong_guess_of_djangos_values_is_never_kept(counters):
    """Values that are not the ones Django binds leave nothing cached: each call compiles,
    and answers for its own queryset."""
    query = RateCounter.objects.filter(hits=1).order_by("key").values_list("key")
    built = []

    def queryset():
        built.append(1)
        return query

    for _ in range(2):
        assert rows_compiled_once(("test counters", "wrong"), [7], queryset) == list(query)
    assert len(built) == 2


@pytest.mark.parametrize(
    ("expected", "prepared"),
    [(ROWS_PER_CHUNK, True), (ROWS_PER_CHUNK + 1, False), (None, False)],
)
def test_a_read_expected_small_is_executed_and_prepared_a_large_one_streamed(
    counters, expected, prepared
):
    """Up to a chunk's rows expected, the read is executed, so psycopg prepares it on the
    connection after five runs (the server stops planning it per call); a larger or unknown
    read is streamed, never prepared. The rows are the same either way, however many come."""
    low = MANY % 3  # every row: hits are 0, 1 or 2
    query = RateCounter.objects.filter(hits__gte=low).order_by("key").values_list("key")
    for _ in range(7):  # the first run sends the values Django compiled, typed its own way
        rows = rows_compiled_once(
            ("test counters", "expected"), [low], lambda: query, expected=expected
        )
        assert rows == list(query) and len(rows) == MANY
    assert any('"core_rate_counter"' in s for s in prepared_statements()) == prepared


def test_instances_compiled_once_are_what_the_orm_makes(alice):
    """core.reads.instances_compiled_once: every field with its type as the ORM gives it,
    a JSON field's text parsed as the field's converter does (a webhook endpoint's
    event_types is a list, not its text), the instance saved, not adding; the SQL kept: the
    second call builds no queryset."""
    from core.reads import instances_compiled_once
    from events.models import WebhookEndpoint

    WebhookEndpoint.objects.create(
        business=alice.business, environment="sandbox", url="https://example.com/h",
        event_types=["batch.created", "order.*"], secret="s", description="d",
    )  # fmt: skip

    def fields(endpoint):
        return {
            f.attname: getattr(endpoint, f.attname) for f in type(endpoint)._meta.concrete_fields
        }

    expected = [fields(e) for e in WebhookEndpoint.objects.filter(business=alice.business)]
    built = []

    def queryset():
        built.append(1)
        return WebhookEndpoint.objects.filter(business=alice.business)

    for _ in range(2):  # compiled, then sent again as compiled
        made = instances_compiled_once(
            WebhookEndpoint, ("test endpoints",), [alice.business.pk], queryset
        )
        assert [fields(e) for e in made] == expected
        assert [{k: type(v) for k, v in fields(e).items()} for e in made] == [
            {k: type(v) for k, v in e.items()} for e in expected
        ]
        assert made[0].event_types == ["batch.created", "order.*"]
        assert not made[0]._state.adding
    assert len(built) == 1
