"""Wire formats: timestamps read as text come out exactly like timestamps formatted in Python."""

from datetime import UTC, datetime

import pytest
from django.db import connection

from config.formats import iso_z, iso_z_text

MOMENTS = [
    datetime(2026, 11, 23, 3, 0, 0, tzinfo=UTC),
    datetime(2026, 11, 23, 3, 0, 0, 500000, tzinfo=UTC),
    datetime(2026, 11, 23, 3, 0, 0, 120000, tzinfo=UTC),
    datetime(2026, 11, 23, 3, 0, 0, 123456, tzinfo=UTC),
    datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
]


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_a_timestamp_read_as_text_from_postgresql_matches_iso_z(db, moment):
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::timestamptz::text", [moment])
        stored = cursor.fetchone()[0]

    assert iso_z_text(stored) == iso_z(moment)


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_a_timestamp_in_sqlites_stored_shape_matches_iso_z(moment):
    stored = moment.replace(tzinfo=None).isoformat(sep=" ")  # Django's SQLite storage shape

    assert iso_z_text(stored) == iso_z(moment)


def test_database_sessions_run_in_utc_which_reading_timestamps_as_text_relies_on(db):
    with connection.cursor() as cursor:
        cursor.execute("SHOW TIME ZONE")
        assert cursor.fetchone()[0] == "UTC"


def test_none_stays_none():
    assert iso_z_text(None) is None
