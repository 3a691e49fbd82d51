"""PATCH /orders/<drop_id> (docs/contract.md §17): what may change when, the rules of creation
on the edited drop, the envelope of every refusal, the event, and who may edit at all."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest
from django.utils import timezone

from events.models import Event
from geo.geometry import haversine_km
from orders.models import Drop, DropStatus
from orders.windows import EtaTerms
from tests.factories import HOME, SHOP
from tests.helpers import assert_error
from tests.tracking.helpers import THIS_AFTERNOON, advance, cancel, entries, place

S = DropStatus
NEW_PHONE = "+85512345670"
ANGKOR_WAT = {"lat": 13.4125, "long": 103.8670}
ROYAL_PALACE = {"lat": 11.5637, "long": 104.9311}
AIRPORT = {
    "lat": 11.5466,
    "long": 104.8441,
}  # in the area, far from the shop  # in the area, farther from the shop than HOME
CENTRAL_MARKET = {
    "complete_address": "Central Market, Phnom Penh",
    "city": "Phnom Penh",
    "country": "KH",
}
NOWHERE = {"complete_address": "42 Nowhere Street", "city": "Atlantis", "country": "KH"}


def patch(api, drop_id, body, key: str, raw: bool = False):
    data = body if raw else orjson.dumps(body)
    return api.client.patch(
        f"/api/v1/orders/{drop_id}",
        data,
        content_type="application/json",
        **api._headers(key),
    )


def edited(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()["data"]


def updates_of(drop_id) -> list[dict]:
    """The order.updated events of this drop, oldest first."""
    return [
        e.data
        for e in Event.objects.filter(type="order.updated").order_by("seq")
        if e.data["drop_id"] == str(drop_id)
    ]


def put_in(api, key: str, client_order_id: str, status: str) -> str:
    """A sandbox drop placed and driven to `status` through the API; its drop id."""
    scheduled = THIS_AFTERNOON if status == S.SCHEDULED else None
    drop_id = place(api, key, client_order_id, scheduled_at=scheduled)[client_order_id]
    if status == S.CANCELLED:
        entries(cancel(api, key, client_order_id))
    elif status not in (S.SCHEDULED, S.PENDING):
        entries(advance(api, key, client_order_id, to=status))
    assert Drop.objects.get(pk=drop_id).status == status
    return drop_id


# --- What changes, and what the client sees ------------------------------------------------


def test_a_new_phone_and_notes_answer_the_tracking_entry_and_tell_order_updated(
    open_for_business, alice, api
):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    before = Drop.objects.get(pk=drop_id)

    entry = edited(
        patch(
            api, drop_id, {"dropoff": {"phone": NEW_PHONE}, "notes": "Gate 42"}, alice.sandbox_key
        )
    )

    assert entry["drop_id"] == drop_id and entry["client_order_id"] == "E-1"
    assert entry["dropoff"]["phone"] == NEW_PHONE
    assert entry["dropoff"]["name"] == "Recipient"  # not sent: unchanged
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.recipient_phone, drop.notes) == (NEW_PHONE, "Gate 42")
    assert drop.updated_at > before.updated_at  # GET /orders?updated_since= sees it
    assert drop.price == before.price
    [event] = updates_of(drop_id)
    assert event["changed"] == ["dropoff.phone", "notes"]
    assert event["dropoff"]["phone"] == NEW_PHONE
    assert {k: v for k, v in event.items() if k != "changed"} == entry


def test_an_edit_that_changes_nothing_writes_nothing_and_tells_nothing(
    open_for_business, alice, api
):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    before = Drop.objects.get(pk=drop_id)
    same = {
        "dropoff": {"name": "Recipient", **HOME},
        "client_order_id": "E-1",
        "dropoff_verification": {"pin": False},
        "sandbox_scenario": "manual",
    }

    for body in ({}, same, {"external_waybill": None}):
        entry = edited(patch(api, drop_id, body, alice.sandbox_key))
        assert entry["updated_at"] == entry["created_at"]

    assert Drop.objects.get(pk=drop_id).updated_at == before.updated_at
    assert updates_of(drop_id) == []


@pytest.mark.parametrize("status", [S.ASSIGNED, S.PICKED_UP])
def test_name_phone_notes_and_waybill_change_while_active(open_for_business, alice, api, status):
    drop_id = put_in(api, alice.sandbox_key, "E-1", status)
    body = {
        "dropoff": {"name": "Dara", "phone": NEW_PHONE},
        "notes": "Call on arrival",
        "external_waybill": "WB-9",
    }

    entry = edited(patch(api, drop_id, body, alice.sandbox_key))

    assert entry["status"] == status
    assert (entry["dropoff"]["name"], entry["external_waybill"]) == ("Dara", "WB-9")
    [event] = updates_of(drop_id)
    assert event["changed"] == ["dropoff.name", "dropoff.phone", "notes", "external_waybill"]


# --- 409 NOT_EDITABLE -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"dropoff": ROYAL_PALACE}, ["dropoff.lat", "dropoff.long"]),
        (
            {"dropoff": {"address": CENTRAL_MARKET}},
            ["dropoff.lat", "dropoff.long", "dropoff.address"],
        ),
        ({"undeliverable_action": "dispose"}, ["undeliverable_action"]),
    ],
)
def test_the_location_and_the_promise_are_not_editable_after_pending(
    open_for_business, alice, api, body, fields
):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.ASSIGNED)
    before = Drop.objects.get(pk=drop_id)

    error = assert_error(patch(api, drop_id, body, alice.sandbox_key), 409, "NOT_EDITABLE")

    assert sorted(d["field"] for d in error["details"]) == sorted(fields)
    assert "ASSIGNED" in error["message"]
    after = Drop.objects.get(pk=drop_id)
    assert (after.lat, after.long, after.address, after.undeliverable_action) == (
        before.lat,
        before.long,
        before.address,
        before.undeliverable_action,
    )
    assert after.updated_at == before.updated_at
    assert updates_of(drop_id) == []


@pytest.mark.parametrize("status", [S.DELIVERED, S.FAILED, S.CANCELLED])
def test_a_finished_drop_is_not_editable(open_for_business, alice, api, status):
    drop_id = put_in(api, alice.sandbox_key, "E-1", status)

    error = assert_error(
        patch(api, drop_id, {"notes": "too late"}, alice.sandbox_key), 409, "NOT_EDITABLE"
    )

    assert status in error["message"]
    assert [d["field"] for d in error["details"]] == ["notes"]
    assert Drop.objects.get(pk=drop_id).notes is None
    assert updates_of(drop_id) == []


@pytest.mark.parametrize(
    "body",
    [
        {"client_order_id": "E-2"},
        {"dropoff_verification": {"pin": True}},
        {"sandbox_scenario": "deliver"},
    ],
)
def test_fields_fixed_at_creation_are_not_editable_when_changed(
    open_for_business, alice, api, body
):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)

    error = assert_error(patch(api, drop_id, body, alice.sandbox_key), 409, "NOT_EDITABLE")

    assert [d["field"] for d in error["details"]] == list(body)
    assert Drop.objects.get(pk=drop_id).client_order_id == "E-1"


# --- 400: the body's shape -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ([{"notes": "x"}], [""]),
        ("notes", [""]),
        (None, [""]),
        (
            {"parcel": {"size": "XXL"}, "cod": "5.00", "status": "DELIVERED"},
            ["status", "parcel.size", "cod"],
        ),
        ({"dropoff": {"resolved_pin": HOME, "name": "Dara"}}, ["dropoff.resolved_pin"]),
        ({"dropoff": "Dara"}, ["dropoff"]),
        ({"dropoff": {"name": ""}}, ["dropoff.name"]),
        ({"dropoff": {"name": None}}, ["dropoff.name"]),
        ({"dropoff": {"address": "St. 310"}}, ["dropoff.address"]),
        ({"notes": "x" * 501}, ["notes"]),
        ({"notes": 42}, ["notes"]),
        ({"external_waybill": ["WB"]}, ["external_waybill"]),
        ({"undeliverable_action": "burn"}, ["undeliverable_action"]),
        ({"dropoff_window": "14:00-16:00"}, ["dropoff_window"]),
        ({"dropoff_window": {"start": "2026-11-23T07:00:00Z"}}, ["dropoff_window.end"]),
        (
            {"dropoff_window": {"start": "today", "end": "2026-11-23T09:00:00Z"}},
            ["dropoff_window.start"],
        ),
    ],
)
def test_a_body_of_the_wrong_shape_is_400_naming_every_field(
    open_for_business, alice, api, body, fields
):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)

    error = assert_error(patch(api, drop_id, body, alice.sandbox_key), 400, "VALIDATION_ERROR")

    assert [d["field"] for d in error["details"]] == fields
    assert Drop.objects.get(pk=drop_id).updated_at == Drop.objects.get(pk=drop_id).created_at


def test_a_body_that_is_not_json_is_400(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    assert_error(patch(api, drop_id, b"", alice.sandbox_key, raw=True), 400, "MALFORMED_JSON")
    assert_error(patch(api, drop_id, b"{notes", alice.sandbox_key, raw=True), 400, "MALFORMED_JSON")


# --- 404: only the key's own drops ---------------------------------------------------------


def test_another_business_or_environment_or_no_drop_is_404(open_for_business, alice, bob, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    body = {"notes": "mine now"}

    for other_key, target in (
        (bob.sandbox_key, drop_id),  # another business
        (alice.live_key, drop_id),  # another environment
        (alice.sandbox_key, "0b8f7c1e-2d4a-4f6b-9c3e-5a7d9e1f2b4c"),  # no such drop
        (alice.sandbox_key, "not-a-uuid"),
        (alice.sandbox_key, "E-1"),  # a client_order_id is not a drop id
    ):
        error = assert_error(patch(api, target, body, other_key), 404, "NOT_FOUND")
        assert error["details"] == []

    assert Drop.objects.get(pk=drop_id).notes is None
    assert updates_of(drop_id) == []


def test_other_methods_on_a_drop_are_405_and_bulk_is_untouched(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    assert_error(api.get(f"/orders/{drop_id}", alice.sandbox_key), 405, "METHOD_NOT_ALLOWED")
    assert_error(patch(api, "bulk", {}, alice.sandbox_key), 405, "METHOD_NOT_ALLOWED")


# --- 422 EDIT_REJECTED: the rules of creation --------------------------------------------


def assert_rejected(response, reason: str) -> dict:
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["statusCode"] == 422 and body["success"] is False
    error = body["error"]
    assert set(error) == {"code", "failure_reason", "message", "details", "request_id"}
    assert (error["code"], error["failure_reason"]) == ("EDIT_REJECTED", reason)
    assert error["message"]
    assert error["request_id"] == response["X-Request-Id"]
    return error


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"dropoff": {"phone": "012 345 678"}}, "INVALID_PHONE"),
        ({"dropoff": {"phone": 85512345670}}, "INVALID_PHONE"),
        ({"dropoff": {"lat": 11.57}}, "INVALID_COORDINATES"),
        ({"dropoff": {"lat": 0, "long": 0}}, "INVALID_COORDINATES"),
        ({"dropoff": {"lat": 91, "long": 104.9}}, "INVALID_COORDINATES"),
        ({"dropoff": {"address": NOWHERE}}, "GEOCODE_FAILED"),
        ({"dropoff": ANGKOR_WAT}, "OUT_OF_SERVICE_AREA"),
    ],
)
def test_an_edited_drop_that_breaks_a_rule_of_creation_is_422_and_nothing_changes(
    open_for_business, alice, api, body, reason
):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    before = Drop.objects.get(pk=drop_id)

    assert_rejected(patch(api, drop_id, {**body, "notes": "and this"}, alice.sandbox_key), reason)

    after = Drop.objects.get(pk=drop_id)
    assert (after.recipient_phone, after.lat, after.long, after.notes, after.price) == (
        before.recipient_phone,
        before.lat,
        before.long,
        None,
        before.price,
    )
    assert updates_of(drop_id) == []


def test_a_window_that_cannot_be_kept_is_invalid_time_window(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    start = timezone.now() + timedelta(hours=2)
    short = {"start": start.isoformat(), "end": (start + timedelta(minutes=10)).isoformat()}

    error = assert_rejected(
        patch(api, drop_id, {"dropoff_window": short}, alice.sandbox_key), "INVALID_TIME_WINDOW"
    )

    assert "30 minutes" in error["message"]
    assert [d["field"] for d in error["details"]] == ["dropoff_window"]
    assert Drop.objects.get(pk=drop_id).window_start is None


def test_a_new_pin_outside_the_area_names_only_the_fields_sent(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)

    error = assert_rejected(
        patch(api, drop_id, {"dropoff": ANGKOR_WAT}, alice.sandbox_key), "OUT_OF_SERVICE_AREA"
    )
    assert [d["field"] for d in error["details"]] == ["dropoff.lat", "dropoff.long"]

    error = assert_rejected(
        patch(api, drop_id, {"dropoff": {"lat": 0, "long": 0}}, alice.sandbox_key),
        "INVALID_COORDINATES",
    )
    assert [d["field"] for d in error["details"]] == ["dropoff.lat", "dropoff.long"]


def test_a_window_edited_outside_opening_hours_is_invalid_time_window(
    open_for_business, alice, api
):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    # 22:00-23:30 in Phnom Penh, where the area closes at 21:00 (the clock says 10:00 there).
    late = window_from(timezone.now() + timedelta(hours=12), minutes=90)

    error = assert_rejected(
        patch(api, drop_id, {"dropoff_window": late}, alice.sandbox_key), "INVALID_TIME_WINDOW"
    )

    assert "opening hours" in error["message"]
    assert [d["field"] for d in error["details"]] == ["dropoff_window"]
    assert Drop.objects.get(pk=drop_id).window_start is None
    assert updates_of(drop_id) == []


def test_a_window_ending_before_it_starts_says_so(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    start = timezone.now() + timedelta(hours=3)
    backwards = {"start": iso(start), "end": iso(start - timedelta(hours=1))}

    error = assert_rejected(
        patch(api, drop_id, {"dropoff_window": backwards}, alice.sandbox_key),
        "INVALID_TIME_WINDOW",
    )

    assert error["message"] == "The drop-off window must end after it starts."


# --- The promise: window and undeliverable_action ---------------------------------------------


def window_from(start, minutes: int = 120) -> dict:
    return {"start": iso(start), "end": iso(start + timedelta(minutes=minutes))}


def iso(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_a_window_and_an_undeliverable_action_change_before_pickup(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.SCHEDULED)
    window = window_from(timezone.now() + timedelta(hours=5))

    body = {"dropoff_window": window, "undeliverable_action": "dispose"}
    entry = edited(patch(api, drop_id, body, alice.sandbox_key))

    assert entry["dropoff_window"]["start"][:19] == window["start"][:19]
    assert entry["dropoff_window"]["end"][:19] == window["end"][:19]
    assert (entry["window_status"], entry["undeliverable_action"]) == ("on_track", "dispose")
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.window_status, drop.undeliverable_action) == ("on_track", "dispose")
    assert drop.window_end - drop.window_start == timedelta(minutes=120)

    entry = edited(patch(api, drop_id, {"dropoff_window": None}, alice.sandbox_key))

    assert (entry["dropoff_window"], entry["window_status"]) == (None, None)
    assert Drop.objects.get(pk=drop_id).window_status is None
    assert [e["changed"] for e in updates_of(drop_id)] == [
        ["dropoff_window", "undeliverable_action"],
        ["dropoff_window"],
    ]


def test_a_window_is_not_editable_after_pending(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PICKED_UP)
    window = window_from(timezone.now() + timedelta(hours=5))

    error = assert_error(
        patch(api, drop_id, {"dropoff_window": window}, alice.sandbox_key), 409, "NOT_EDITABLE"
    )

    assert [d["field"] for d in error["details"]] == ["dropoff_window"]
    assert Drop.objects.get(pk=drop_id).window_start is None


def test_a_new_place_that_breaks_the_window_is_invalid_time_window(open_for_business, alice, api):
    drop_id = put_in(api, alice.sandbox_key, "E-1", S.PENDING)
    drop = Drop.objects.get(pk=drop_id)
    # A window that ends a few minutes after the earliest arrival at the drop's place.
    terms = EtaTerms()
    km = haversine_km(SHOP["lat"], SHOP["long"], drop.lat, drop.long)
    arrival = terms.earliest_arrival(drop.created_at, timezone.now(), km)
    end = arrival + timedelta(minutes=5)
    window = {"start": iso(end - timedelta(minutes=60)), "end": iso(end)}
    edited(patch(api, drop_id, {"dropoff_window": window}, alice.sandbox_key))

    error = assert_rejected(
        patch(api, drop_id, {"dropoff": AIRPORT}, alice.sandbox_key), "INVALID_TIME_WINDOW"
    )

    assert "earliest possible arrival" in error["message"]
    # Only the fields of the location that were sent (AIRPORT is lat and long).
    assert [d["field"] for d in error["details"]] == ["dropoff.lat", "dropoff.long"]
    assert (Drop.objects.get(pk=drop_id).lat, len(updates_of(drop_id))) == (drop.lat, 1)
