"""core.writes.insert_chunks: rows that are still being made go to PostgreSQL as they come.

The batch pipeline (orders.services) builds its drop rows while the database stores the ones
already sent (a saving `make bench` measures): these tests hold that every chunk goes into
one statement, and that a stream which fails or brings nothing writes nothing.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from core.models import RateCounter
from core.writes import insert_chunks, insert_rows

FIELDS = ("key", "window_end_ms", "hits")
CHUNK = 50


def counters(prefix: str, start: int, count: int = CHUNK) -> list[tuple]:
    return [(f"{prefix}:{n}", n, 1) for n in range(start, start + count)]


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
