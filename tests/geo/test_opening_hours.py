"""OUTSIDE_OPERATING_HOURS (docs/contract.md §4 rule 6): the pickup time, in the service time zone.

Opening hours are "opens" inclusive, "closes" exclusive, in settings.TIME_ZONE
(Asia/Phnom_Penh, UTC+7). The demo area is open 07:00–21:00 every day.
"""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from geo.geometry import geometry_from_geojson
from geo.services import Area
from orders.models import Drop, DropStatus, Order
from tests.factories import batch, drop, group
from tests.geo.helpers import local, make_area, polygon, reasons, submit

# 2026-11-22 is a Sunday, 2026-11-23 a Monday, 2026-11-24 a Tuesday.
KANDAL = polygon(105.00, 11.45, 105.10, 11.70)  # shares the demo area's east edge
KANDAL_PIN = {"lat": 11.55, "long": 105.05}
RIVERSIDE_PIN = {"lat": 11.5700, "long": 104.9300}  # in the demo area
RIVERSIDE = polygon(104.92, 11.56, 104.94, 11.58)


def one_drop(**pickup_overrides) -> dict:
    return batch(group(drop("A"), **pickup_overrides))


def outcome(api, key: str, **pickup_overrides) -> str:
    return reasons(submit(api, key, one_drop(**pickup_overrides)))["A"]


# --- minutes around opening and closing, pickup "now" ---


@pytest.mark.parametrize(
    ("wall_clock", "expected"),
    [
        ((6, 59), "OUTSIDE_OPERATING_HOURS"),
        ((7, 0), "accepted"),
        ((7, 1), "accepted"),
        ((20, 59), "accepted"),
        ((21, 0), "OUTSIDE_OPERATING_HOURS"),
        ((21, 1), "OUTSIDE_OPERATING_HOURS"),
    ],
)
def test_unscheduled_pickup_is_judged_at_the_current_minute(
    open_for_business, alice, api, wall_clock, expected
):
    open_for_business.move_to(local(2026, 11, 23, *wall_clock))

    assert outcome(api, alice.sandbox_key) == expected
    assert Drop.objects.count() == (1 if expected == "accepted" else 0)


# --- the same edges to the second, with a scheduled pickup ---


@pytest.mark.parametrize(
    ("scheduled", "expected"),
    [
        ("2026-11-23T06:59:59+07:00", "OUTSIDE_OPERATING_HOURS"),
        ("2026-11-23T07:00:00+07:00", "accepted"),
        ("2026-11-23T20:59:59+07:00", "accepted"),
        ("2026-11-23T21:00:00+07:00", "OUTSIDE_OPERATING_HOURS"),
    ],
)
def test_scheduled_pickup_is_judged_at_its_own_time(
    open_for_business, alice, api, scheduled, expected
):
    open_for_business.move_to(local(2026, 11, 23, 5, 0))  # before all of them, shop closed

    assert outcome(api, alice.sandbox_key, pickup_scheduled_at=scheduled) == expected


def test_schedule_inside_hours_is_accepted_while_the_area_is_closed_now(
    open_for_business, alice, api
):
    open_for_business.move_to(local(2026, 11, 23, 23, 0))

    assert outcome(api, alice.sandbox_key) == "OUTSIDE_OPERATING_HOURS"
    assert (
        outcome(api, alice.sandbox_key, pickup_scheduled_at="2026-11-24T08:00:00+07:00")
        == "accepted"
    )


# --- the day boundary is the service time zone's, not UTC's ---


@pytest.fixture
def monday_only(region):
    """The demo area, open 07:00–21:00 on Mondays only."""
    region.hours.exclude(weekday=0).delete()
    return region


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        # Sunday 23:30 local is Sunday 16:30 UTC.
        (local(2026, 11, 22, 23, 30), "OUTSIDE_OPERATING_HOURS"),
        # Monday 07:00 local is Monday 00:00 UTC: a UTC reading would say closed.
        (local(2026, 11, 23, 7, 0), "accepted"),
        (local(2026, 11, 23, 20, 59), "accepted"),
        # Tuesday 03:00 local is Monday 20:00 UTC: a UTC reading would say open.
        (local(2026, 11, 24, 3, 0), "OUTSIDE_OPERATING_HOURS"),
    ],
)
def test_weekday_is_read_in_the_service_time_zone(monday_only, clock, alice, api, moment, expected):
    clock.move_to(moment)

    assert outcome(api, alice.sandbox_key) == expected


def test_area_without_any_hours_is_always_closed(open_for_business, alice, api, region):
    region.hours.all().delete()

    assert outcome(api, alice.sandbox_key) == "OUTSIDE_OPERATING_HOURS"
    assert Order.objects.count() == 0


# --- a schedule sent with a non-UTC offset is judged at the instant it names ---


@pytest.mark.parametrize(
    ("scheduled", "instant_utc", "expected"),
    [
        # +07:00 is local time already; read as UTC, 20:30 would be 03:30 next day (closed).
        ("2026-11-24T20:30:00+07:00", datetime(2026, 11, 24, 13, 30, tzinfo=UTC), "accepted"),
        ("2026-11-24T06:30:00+07:00", None, "OUTSIDE_OPERATING_HOURS"),
        # -05:00: 06:00 there is 18:00 in Phnom Penh (open), though 06:00 local is closed.
        ("2026-11-23T06:00:00-05:00", datetime(2026, 11, 23, 11, 0, tzinfo=UTC), "accepted"),
        # 10:00 there is 22:00 in Phnom Penh (closed), though 10:00 local is open.
        ("2026-11-23T10:00:00-05:00", None, "OUTSIDE_OPERATING_HOURS"),
    ],
)
def test_schedule_with_an_offset_is_judged_at_that_instant(
    open_for_business, alice, api, scheduled, instant_utc, expected
):
    assert outcome(api, alice.sandbox_key, pickup_scheduled_at=scheduled) == expected
    if instant_utc is not None:
        assert Order.objects.get().pickup_scheduled_at == instant_utc
        assert Drop.objects.get().status == DropStatus.SCHEDULED


def test_schedule_with_an_offset_is_compared_with_now_as_an_instant(open_for_business, alice, api):
    # The clock reads Monday 10:00 in Phnom Penh = Monday 03:00 UTC = Sunday 22:00 at -05:00.
    a_minute_ago = "2026-11-22T21:59:00-05:00"
    in_a_minute = "2026-11-22T22:01:00-05:00"

    assert outcome(api, alice.sandbox_key, pickup_scheduled_at=a_minute_ago) == "SCHEDULE_IN_PAST"
    assert outcome(api, alice.sandbox_key, pickup_scheduled_at=in_a_minute) == "accepted"


def test_tracking_shows_an_offset_schedule_in_utc(open_for_business, alice, api):
    submit(api, alice.sandbox_key, one_drop(pickup_scheduled_at="2026-11-23T06:00:00-05:00"))

    entry = api.track(["A"], alice.sandbox_key).json()["data"]["orders"][0]

    scheduled_at = entry["pickup"]["scheduled_at"]
    assert scheduled_at.endswith("Z")
    assert datetime.fromisoformat(scheduled_at) == datetime(2026, 11, 23, 11, 0, tzinfo=UTC)
    assert entry["status"] == "SCHEDULED"


# --- whose hours: the pickup's area, any of them if it lies in several ---


def test_pickup_area_hours_decide_not_the_drop_area_hours(open_for_business, alice, api):
    make_area("Kandal", KANDAL, opens=time(12), closes=time(13))  # closed at 10:00

    data = submit(
        api,
        alice.sandbox_key,
        batch(
            group(drop("FROM-KANDAL"), **KANDAL_PIN),
            group(drop("TO-KANDAL", **KANDAL_PIN)),
        ),
    )

    assert reasons(data) == {"FROM-KANDAL": "OUTSIDE_OPERATING_HOURS", "TO-KANDAL": "accepted"}


def test_pickup_in_two_areas_is_open_when_either_is(open_for_business, alice, api):
    make_area("Riverside nights", RIVERSIDE, opens=time(17), closes=time(23, 30))
    open_for_business.move_to(local(2026, 11, 23, 22, 0))  # demo area closed, Riverside open

    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("RIVERSIDE"), **RIVERSIDE_PIN), group(drop("ELSEWHERE"))),
    )

    assert reasons(data) == {"RIVERSIDE": "accepted", "ELSEWHERE": "OUTSIDE_OPERATING_HOURS"}


# --- Area.is_open_at, the rule itself ---


@pytest.mark.parametrize(
    ("moment", "is_open"),
    [
        (local(2026, 11, 23, 6, 59, 59, 999999), False),
        (local(2026, 11, 23, 7, 0), True),
        (local(2026, 11, 23, 20, 59, 59, 999999), True),
        (local(2026, 11, 23, 21, 0), False),
        (datetime(2026, 11, 23, 0, 0, tzinfo=UTC), True),  # 07:00 Monday in Phnom Penh
        (datetime(2026, 11, 22, 23, 59, tzinfo=UTC), False),  # 06:59 Monday in Phnom Penh
        (datetime(2026, 11, 23, 13, 59, tzinfo=UTC), True),  # 20:59 Monday
        (datetime(2026, 11, 23, 14, 0, tzinfo=UTC), False),  # 21:00 Monday
    ],
)
def test_area_opens_inclusive_and_closes_exclusive(moment, is_open):
    area = Area(
        1,
        "Mondays",
        geometry_from_geojson(polygon(104.8, 11.45, 105.0, 11.7)),
        {0: [(time(7), time(21))]},
    )

    assert area.is_open_at(moment) is is_open


def test_area_with_a_lunch_break_is_closed_between_its_two_spans():
    area = Area(
        1,
        "Lunch break",
        geometry_from_geojson(polygon(104.8, 11.45, 105.0, 11.7)),
        {0: [(time(7), time(12)), (time(13), time(21))]},
    )

    assert area.is_open_at(local(2026, 11, 23, 11, 59))
    assert not area.is_open_at(local(2026, 11, 23, 12, 30))
    assert area.is_open_at(local(2026, 11, 23, 13, 0))
    assert not area.is_open_at(local(2026, 11, 24, 13, 0))  # Tuesday: no hours


# --- a drop-off window lies within the hours (docs/contract.md §17) ---

ALL_WEEK = {day: [(time(0), time(23, 59, 59, 999999))] for day in range(7)}


def area_open(hours: dict) -> Area:
    return Area(1, "Hours", geometry_from_geojson(polygon(104.8, 11.45, 105.0, 11.7)), hours)


@pytest.mark.parametrize(
    ("start", "end", "kept"),
    [
        (local(2026, 11, 23, 7, 0), local(2026, 11, 23, 21, 0), True),  # opening to closing
        (local(2026, 11, 23, 11, 0), local(2026, 11, 23, 14, 0), True),  # hours that meet
        (local(2026, 11, 23, 6, 30), local(2026, 11, 23, 8, 0), False),  # starts before opening
        (local(2026, 11, 23, 20, 30), local(2026, 11, 23, 21, 1), False),  # ends after closing
        (local(2026, 11, 24, 11, 30), local(2026, 11, 24, 13, 30), False),  # over lunch
        (local(2026, 11, 23, 20, 0), local(2026, 11, 24, 8, 0), False),  # over the night
        (local(2026, 11, 25, 9, 0), local(2026, 11, 25, 10, 0), False),  # Wednesday: closed
    ],
)
def test_a_window_lies_within_the_hours_of_its_day(start, end, kept):
    area = area_open(
        {
            0: [(time(7), time(12)), (time(11), time(13)), (time(13), time(21))],  # one stretch
            1: [(time(7), time(12)), (time(13), time(21))],  # a lunch break
        }
    )

    assert area.open_throughout(start, end) is kept


def test_an_area_open_all_day_keeps_a_window_over_midnight_and_a_long_one():
    area = area_open(ALL_WEEK)

    assert area.open_throughout(local(2026, 11, 23, 23, 0), local(2026, 11, 24, 1, 0))
    assert area.open_throughout(local(2026, 11, 23, 9, 0), local(2026, 12, 31, 9, 0))
    closed_sunday = area_open({day: ALL_WEEK[day] for day in range(6)})
    assert not closed_sunday.open_throughout(local(2026, 11, 23, 9, 0), local(2026, 12, 31, 9, 0))
