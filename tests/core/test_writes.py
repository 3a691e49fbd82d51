"""core.writes.insert_chunks: rows that are still being made go to PostgreSQL as they come.

The batch pipeline (orders.services._BatchRows.drops) builds its drop rows while the database
stores the ones already sent: these tests hold that the first chunk really is stored before
the last one is made, and that a stream which fails or brings nothing writes nothing.
"""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from core.models import RateCounter
from core.writes import insert_chunks, insert_rows

FIELDS = ("key", "window_end_ms", "hits")
CHUNK = 50


def counters(prefix: str, start: int, count: int = CHUNK) -> list[tuple]:
    return [(f"{prefix}:{n}", n, 1) for n in range(start, start + count)]


def copied_so_far(observer: psycopg.Connection, pid: int) -> int | None:
    """How many rows the COPY running in backend `pid` has stored, or None if none runs."""
    row = observer.execute(
        "SELECT tuples_processed FROM pg_stat_progress_copy WHERE pid = %s", (pid,)
    ).fetchone()
    return None if row is None else row[0]


@pytest.fixture
def observer():
    params = connection.settings_dict
    with psycopg.connect(
        host=params["HOST"], port=params["PORT"], user=params["USER"], dbname="postgres",
        autocommit=True,
    ) as other:  # fmt: skip
        yield other


@pytest.mark.django_db
def test_the_first_chunk_is_stored_before_the_next_one_is_made(observer):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    seen_while_making_the_second: list[int | None] = []

    def chunks():
        yield counters("stream", 0)
        # The caller is still making rows; the database must already be storing the first.
        deadline = time.monotonic() + 10
        stored = copied_so_far(observer, pid)
        while (stored or 0) < CHUNK and time.monotonic() < deadline:
            time.sleep(0.01)
            stored = copied_so_far(observer, pid)
        seen_while_making_the_second.append(stored)
        yield counters("stream", CHUNK)

    assert insert_chunks(RateCounter, FIELDS, chunks()) == 2 * CHUNK

    assert seen_while_making_the_second == [CHUNK]
    assert RateCounter.objects.filter(key__startswith="stream:").count() == 2 * CHUNK


@pytest.mark.django_db
def test_every_chunk_goes_into_one_statement():
    with CaptureQueriesContext(connection) as captured:
        count = insert_chunks(
            RateCounter, FIELDS, [counters("one", 0), [], counters("one", CHUNK, 7)]
        )

    assert count == CHUNK + 7
    assert [q["sql"].split(" (")[0] for q in captured] == ['COPY "core_rate_counter"']
    assert RateCounter.objects.filter(key__startswith="one:").count() == CHUNK + 7


@pytest.mark.django_db
def test_no_rows_no_statement():
    made = []

    def chunks():
        made.append("first")
        yield []
        made.append("second")
        yield []

    with CaptureQueriesContext(connection) as captured:
        assert insert_chunks(RateCounter, FIELDS, chunks()) == 0
        insert_rows(RateCounter, FIELDS, [])

    assert len(captured) == 0
    # The stream was still read to its end: its maker may note things on the way.
    assert made == ["first", "second"]


class BuilderFault(Exception):
    pass


@pytest.mark.django_db
def test_a_builder_that_fails_midway_writes_nothing_and_its_error_is_raised():
    def chunks():
        yield counters("broken", 0)
        raise BuilderFault("the second chunk could not be made")

    with pytest.raises(BuilderFault), transaction.atomic():
        insert_chunks(RateCounter, FIELDS, chunks())

    assert not RateCounter.objects.filter(key__startswith="broken:").exists()
    # The connection is usable again once the transaction is rolled back.
    insert_rows(RateCounter, FIELDS, counters("after", 0, 3))
    assert RateCounter.objects.filter(key__startswith="after:").count() == 3
