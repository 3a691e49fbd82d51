"""Drop-off windows, notes and undeliverable_action at creation (docs/contract.md §17, §19):
their shape (400s naming the field), rule 7 INVALID_TIME_WINDOW in its place, and quotes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orders.models import Drop
from tests.factories import batch, drop, group
from tests.helpers import assert_error, assert_nothing_stored

# The fixture clock starts at 2026-11-23 03:00 UTC (10:00 in Phnom Penh) and ticks. From the
# shop to HOME (~1.7 km): the courier comes 15 min after the pickup time, 5 min at each end
# and ~4 min of riding: the earliest arrival is about 03:29.
NOW = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
PATH = "orders[0].dropoff[0]"


def at(minutes: float) -> str:
    return (NOW + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def windowed(client_order_id="W-1", start=40, end=100, **extra) -> dict:
    entry = drop(client_order_id, **extra)
    entry["dropoff_window"] = {"start": at(start), "end": at(end)}
    return entry


def submit(api, tenant, *drops, **pickup) -> list[dict]:
    response = api.bulk(batch(group(*drops, **pickup)), tenant.sandbox_key)
    assert response.status_code == 200, response.content
    return response.json()["data"]["orders"]


def fields_of(response) -> list[str]:
    return sorted(
        item["field"] for item in assert_error(response, 400, "VALIDATION_ERROR")["details"]
    )


@pytest.mark.parametrize(
    ("window", "fields"),
    [
        ("14:00-16:00", [f"{PATH}.dropoff_window"]),
        ([at(40), at(100)], [f"{PATH}.dropoff_window"]),
        ({"start": at(40)}, [f"{PATH}.dropoff_window.end"]),
        ({}, [f"{PATH}.dropoff_window.end", f"{PATH}.dropoff_window.start"]),
        ({"start": "2026-11-23T14:00:00", "end": at(100)}, [f"{PATH}.dropoff_window.start"]),
        ({"start": at(40), "end": "tomorrow"}, [f"{PATH}.dropoff_window.end"]),
        ({"start": at(40), "end": 1763870400}, [f"{PATH}.dropoff_window.end"]),
        ({"start": at(40), "end": at(100), "tz": "Asia/Phnom_Penh"}, [f"{PATH}.dropoff_window"]),
    ],
)
def test_a_malformed_window_is_400_naming_its_field(alice, api, window, fields):
    entry = drop("W-1")
    entry["dropoff_window"] = window
    response = api.bulk(batch(group(entry)), alice.sandbox_key)
    assert fields_of(response) == fields
    assert_nothing_stored()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("notes", "x" * 501),
        ("notes", 42),
        ("notes", ["gate code 42"]),
        ("undeliverable_action", "burn"),
        ("undeliverable_action", "RETURN"),
        ("undeliverable_action", True),
        ("undeliverable_action", ["return"]),
    ],
)
def test_bad_notes_or_undeliverable_action_is_400_naming_the_field(alice, api, field, value):
    entry = drop("W-1")
    entry[field] = value
    response = api.bulk(batch(group(entry)), alice.sandbox_key)
    assert fields_of(response) == [f"{PATH}.{field}"]
    assert_nothing_stored()


def test_notes_of_500_characters_and_both_actions_are_accepted(open_for_business, alice, api):
    entries = [drop("N-1", notes="é" * 500), drop("N-2"), drop("N-3")]
    entries[0]["notes"] = "é" * 500
    entries[1]["undeliverable_action"] = "dispose"
    entries[2]["undeliverable_action"] = "return"
    assert [r["status"] for r in submit(api, alice, *entries)] == ["accepted"] * 3


def test_a_window_that_can_be_kept_is_accepted(open_for_business, alice, api):
    (result,) = submit(api, alice, windowed(start=40, end=100))
    assert result["status"] == "accepted"
    # A window given in another zone is the same moment.
    entry = drop("W-2")
    entry["dropoff_window"] = {
        "start": "2026-11-23T10:40:00+07:00",
        "end": "2026-11-23T11:40+07:00",
    }
    (result,) = submit(api, alice, entry)
    assert result["status"] == "accepted"


@pytest.mark.parametrize(
    ("start", "end", "says"),
    [
        (40, 69, "at least 30 minutes"),  # 29 minutes long
        (100, 40, "must end after it starts"),
        (40, 40, "must end after it starts"),
        (0, 25, "at least 30 minutes"),
        (-60, 25, "earliest possible arrival"),  # long enough, but over before we can be there
        (7 * 24 * 60 + 1, 7 * 24 * 60 + 120, "within 7 days"),
    ],
)
def test_a_window_that_cannot_be_kept_is_invalid_time_window(
    open_for_business, alice, api, start, end, says
):
    (result,) = submit(api, alice, windowed(start=start, end=end))
    assert result["status"] == "rejected"
    assert result["failure_reason"] == "INVALID_TIME_WINDOW"
    assert says in result["message"]
    assert not Drop.objects.exists()


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (12 * 60, 13 * 60 + 30),  # 22:00-23:30 in Phnom Penh: the area closes at 21:00
        (10 * 60 + 30, 11 * 60 + 30),  # 20:30-21:30: ends after closing
        (20 * 60 + 30, 22 * 60),  # 06:30-08:00 the next day: starts before opening
        (10 * 60 + 30, 22 * 60),  # 20:30 to 08:00 the next day: over the night
    ],
)
def test_a_window_outside_the_areas_opening_hours_is_invalid_time_window(
    open_for_business, alice, api, start, end
):
    (result,) = submit(api, alice, windowed(start=start, end=end))
    assert result["failure_reason"] == "INVALID_TIME_WINDOW"
    assert result["message"] == (
        "The drop-off window must lie within the opening hours of the drop's service area "
        "on its day (07:00–21:00, Asia/Phnom_Penh)."
    )
    assert not Drop.objects.exists()


def test_a_window_ending_as_the_area_closes_is_accepted(open_for_business, alice, api):
    # 20:00-21:00 and, tomorrow, 07:00-08:00 in Phnom Penh.
    results = submit(
        api, alice, windowed("H-1", start=10 * 60, end=11 * 60), windowed("H-2", 21 * 60, 22 * 60)
    )
    assert [r["status"] for r in results] == ["accepted", "accepted"]


def test_the_earliest_arrival_counts_from_the_scheduled_pickup(open_for_business, alice, api):
    # 03:15-03:45: kept if the courier leaves now, not if the pickup is at 05:00.
    kept_now = submit(api, alice, windowed("S-1", start=15, end=45))
    later = submit(api, alice, windowed("S-2", start=15, end=45), pickup_scheduled_at=at(120))
    assert kept_now[0]["status"] == "accepted"
    assert later[0]["failure_reason"] == "INVALID_TIME_WINDOW"
    # Far from the shop, the ride counts too (~12 km: ~29 min more).
    far = submit(api, alice, windowed("S-3", start=15, end=45, lat=11.65, long=104.99))
    assert far[0]["failure_reason"] == "INVALID_TIME_WINDOW"


def test_a_window_starting_exactly_7_days_ahead_is_accepted(open_for_business, alice, api):
    week = 7 * 24 * 60
    (result,) = submit(api, alice, windowed(start=week - 1, end=week + 60))
    assert result["status"] == "accepted"


def test_invalid_time_window_comes_after_opening_hours_and_before_duplicates(
    open_for_business, alice, api
):
    # The pickup at 22:30 Phnom Penh: rule 6 wins over the window's rule 7.
    late = submit(
        api, alice, windowed("P-1", start=0, end=10), pickup_scheduled_at=at(12 * 60 + 30)
    )
    assert late[0]["failure_reason"] == "OUTSIDE_OPERATING_HOURS"
    # P-2 taken by an active drop: a bad window is rule 7, before the duplicate's rule 8.
    submit(api, alice, drop("P-2"))
    again = submit(api, alice, windowed("P-2", start=0, end=10), windowed("P-2"))
    assert [r["failure_reason"] for r in again] == [
        "INVALID_TIME_WINDOW",
        "DUPLICATE_CLIENT_ORDER_ID",
    ]


def test_a_refused_window_costs_nothing_and_later_drops_still_fit(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(sandbox_balance="3.00")  # one drop (~2.83)
    results = submit(api, tenant, windowed("R-1", start=0, end=10), drop("R-2"))
    assert [r["status"] for r in results] == ["rejected", "accepted"]


def test_a_quote_decides_windows_as_bulk_does(open_for_business, alice, api):
    body = batch(group(windowed("Q-1", start=40, end=100), windowed("Q-2", start=0, end=10)))
    response = api.post("/orders/quote", body, alice.sandbox_key)
    assert response.status_code == 200, response.content
    entries = response.json()["data"]["orders"]
    assert entries[0]["status"] == "quotable"
    assert entries[1]["failure_reason"] == "INVALID_TIME_WINDOW"
    assert "at least 30 minutes" in entries[1]["message"]
    late = batch(group(windowed("Q-4", start=12 * 60, end=13 * 60 + 30)))
    response = api.post("/orders/quote", late, alice.sandbox_key)
    (entry,) = response.json()["data"]["orders"]
    assert entry["failure_reason"] == "INVALID_TIME_WINDOW"
    assert "opening hours" in entry["message"]
    malformed = batch(group(windowed("Q-3") | {"dropoff_window": {"start": at(40)}}))
    assert fields_of(api.post("/orders/quote", malformed, alice.sandbox_key)) == [
        f"{PATH}.dropoff_window.end"
    ]


def test_a_window_read_before_does_not_excuse_a_later_drop_s_mistakes(alice, api):
    """Times already read are not read again (orders.inputs.FieldErrors.moments): a later drop
    sending the same times with another field, or one bad end, is still refused."""
    good = windowed("W-1", start=40, end=100)
    extra = windowed("W-2", start=40, end=100)
    extra["dropoff_window"]["zone"] = "Asia/Phnom_Penh"
    half = windowed("W-3", start=40, end=100)
    half["dropoff_window"]["end"] = half["dropoff_window"]["end"].rstrip("Z")
    response = api.bulk(batch(group(good, extra, half)), alice.sandbox_key)
    assert fields_of(response) == [
        "orders[0].dropoff[1].dropoff_window",
        "orders[0].dropoff[2].dropoff_window.end",
    ]
    assert_nothing_stored()
