"""Wire formats: values the database formats (core/functions.py) equal Python's own."""

import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from django.db.models import DateTimeField, DecimalField, UUIDField, Value
from django.db.models.functions import Cast

from accounts.models import Business
from core.formats import iso_z, money
from core.functions import IsoZ, MoneyText, UuidText

MOMENTS = [
    datetime(2026, 11, 23, 3, 0, 0, tzinfo=UTC),
    datetime(2026, 11, 23, 3, 0, 0, 500000, tzinfo=UTC),
    datetime(2026, 11, 23, 3, 0, 0, 120000, tzinfo=UTC),
    datetime(2026, 11, 23, 3, 0, 0, 123999, tzinfo=UTC),  # truncated, never rounded up
    datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
]


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_isoz_formats_a_timestamp_exactly_like_iso_z(db, moment):
    Business.objects.create(name="Any", email="any@example.com")
    formatted = Business.objects.annotate(
        t=IsoZ(Value(moment, output_field=DateTimeField()))
    ).values_list("t", flat=True)

    assert list(formatted) == [iso_z(moment)]


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 11, 23, 3, 0, 0, tzinfo=UTC), "2026-11-23T03:00:00.000Z"),
        (datetime(2026, 11, 23, 3, 0, 0, 123999, tzinfo=UTC), "2026-11-23T03:00:00.123Z"),
        # Another zone is converted first (the UTC fast path must not skip it).
        (
            datetime(2026, 11, 23, 10, 0, 0, 5000, tzinfo=timezone(timedelta(hours=7))),
            "2026-11-23T03:00:00.005Z",
        ),
        (
            datetime(2026, 11, 23, 1, 30, tzinfo=timezone(timedelta(hours=-1, minutes=-30))),
            "2026-11-23T03:00:00.000Z",
        ),
    ],
    ids=str,
)
def test_iso_z_is_utc_with_milliseconds_and_z(moment, text):
    assert iso_z(moment) == text


def test_isoz_keeps_null(db):
    Business.objects.create(name="Any", email="any@example.com")
    formatted = Business.objects.annotate(
        t=IsoZ(Value(None, output_field=DateTimeField()))
    ).values_list("t", flat=True)

    assert list(formatted) == [None]


def test_uuidtext_gives_the_canonical_text_of_a_uuid(db):
    business = Business.objects.create(name="Any", email="any@example.com")
    some = uuid.uuid4()
    row = Business.objects.annotate(
        own=UuidText("id"), other=UuidText(Value(some, output_field=UUIDField()))
    ).values_list("own", "other")

    assert list(row) == [(str(business.pk), str(some))]


@pytest.mark.parametrize("amount", ["0", "2.8", "2.80", "0.05", "1234567890.12", "-5"])
def test_moneytext_formats_a_money_column_exactly_like_money(db, amount):
    Business.objects.create(name="Any", email="any@example.com")
    # As the money columns are typed: numeric(12, 2) (orders.models.MONEY).
    column = Cast(Value(Decimal(amount)), DecimalField(max_digits=12, decimal_places=2))
    formatted = Business.objects.annotate(t=MoneyText(column)).values_list("t", flat=True)

    assert list(formatted) == [money(Decimal(amount))]
