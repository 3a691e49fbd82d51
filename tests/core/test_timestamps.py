"""Timestamps read by psycopg's C loader (core/timestamps.py) are the datetimes Django's own
loader gives: the same instant, in UTC, with Django's tzinfo, to the microsecond."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from psycopg.postgres import types

from core.models import PeriodicSlot
from core.timestamps import UtcTimestamptzLoader

pytestmark = pytest.mark.django_db
TIMESTAMPTZ = types["timestamptz"].oid
TEXTS = [
    "2026-11-26 20:00:00.123456+07",
    "1999-12-31 23:59:59.999999-09:30",
    "2026-03-29 01:30:00+00",
    "0001-01-01 00:00:00+00",
]


def read(texts: list[str]) -> list[datetime]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT t::timestamptz FROM unnest(%s::text[]) AS t", [texts])
        return [value for (value,) in cursor.fetchall()]


def test_the_connection_reads_timestamps_with_the_c_loader():
    connection.ensure_connection()
    assert connection.connection.adapters.get_loader(TIMESTAMPTZ, 0) is UtcTimestamptzLoader
    with connection.cursor() as cursor:  # Django does not put its own back on a cursor
        assert cursor.cursor.adapters.get_loader(TIMESTAMPTZ, 0) is UtcTimestamptzLoader


def test_the_same_datetimes_as_djangos_loader():
    ours = read(TEXTS)
    with connection.cursor() as cursor:
        djangos = type("DjangoUtc", (BaseTzLoader,), {"timezone": UTC})
        cursor.cursor.adapters.register_loader("timestamptz", djangos)
        cursor.cursor.execute("SELECT t::timestamptz FROM unnest(%s::text[]) AS t", [TEXTS])
        theirs = [value for (value,) in cursor.cursor.fetchall()]
    assert ours == theirs
    assert [d.tzinfo for d in ours] == [UTC] * len(TEXTS)
    assert ours[0] == datetime(2026, 11, 26, 13, 0, 0, 123456, tzinfo=UTC)
    assert ours[1] == datetime(2000, 1, 1, 9, 29, 59, 999999, tzinfo=UTC)


def test_the_orm_writes_and_reads_back_the_same_instant():
    moment = datetime(2026, 11, 26, 20, 0, 0, 654321, tzinfo=timezone(timedelta(hours=7)))
    slot = PeriodicSlot.objects.create(
        job="timestamps", due_at=moment, claimed_at=moment, worker_id="w"
    )
    read_back = PeriodicSlot.objects.get(pk=slot.pk)
    assert read_back.due_at == moment and read_back.due_at.tzinfo is UTC
