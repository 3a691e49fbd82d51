"""POST /orders/tracking (docs/contract.md §5) after moves: events, driver, price, pins, times."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.formats import iso_z, money
from orders.models import Drop, DropStatus
from tests.factories import batch, drop, group
from tests.geo.helpers import CENTRAL_MARKET, CENTRAL_MARKET_PIN
from tests.helpers import ROYAL_PALACE
from tests.helpers import TRACKING_ENTRY_KEYS as ENTRY_KEYS
from tests.tracking.helpers import THIS_AFTERNOON, advance, cancel, drop_in, entries, place

S = DropStatus


def track_one(api, key: str, identifier: str) -> dict:
    return entries(api.track([identifier], key))[identifier]


def test_tracking_shows_the_whole_story_of_a_moved_drop(open_for_business, alice, api):
    key = alice.sandbox_key
    # A drop with an address and no coordinates: the pin comes from the geocoder.
    by_address = drop("T-1", waybill="WB-1", address=ROYAL_PALACE)
    del by_address["dropoff"]["lat"], by_address["dropoff"]["long"]
    body = batch(group(by_address, pickup_scheduled_at=THIS_AFTERNOON))
    accepted = api.bulk(body, key).json()["data"]["orders"][0]
    assert accepted["status"] == "accepted", accepted
    created = Drop.objects.get(pk=accepted["drop_id"])
    open_for_business.shift(timedelta(minutes=5))

    entries(advance(api, key, "T-1", to=S.PICKED_UP))
    entry = track_one(api, key, "T-1")

    moved = Drop.objects.get(pk=created.pk)
    assert set(entry) == ENTRY_KEYS
    assert entry["status"] == S.PICKED_UP
    assert entry["drop_id"] == accepted["drop_id"]
    assert entry["pass_order_id"] == accepted["pass_order_id"] == str(moved.order_id)
    assert entry["batch_id"] == str(moved.batch_id)
    assert entry["external_waybill"] == "WB-1"
    assert entry["environment"] == "sandbox"
    assert entry["price"] == accepted["price"] == money(moved.price)
    assert entry["currency"] == "USD"
    # Picked up: the simulated courier 0.3 of the way (tracking/sandbox_driver.py).
    position = entry["driver"].pop("position")
    assert entry["driver"] == {
        "name": "Sandbox Test Driver",
        "phone": "+85512000000",
        "vehicle": "motorbike",
    }
    pickup, dropoff = entry["pickup"], entry["dropoff"]
    assert position["at"] == entry["events"][-1]["at"]
    assert abs(position["lat"] - (pickup["lat"] + 0.3 * (dropoff["lat"] - pickup["lat"]))) < 1e-9
    assert entry["created_at"] == iso_z(created.created_at)
    assert entry["updated_at"] == iso_z(moved.updated_at)
    assert moved.updated_at - created.created_at >= timedelta(minutes=5)
    assert [e["status"] for e in entry["events"]] == [
        S.SCHEDULED,
        S.PENDING,
        S.ASSIGNED,
        S.PICKED_UP,
    ]
    assert entry["events"][0]["at"] == entry["created_at"]
    assert {e["at"] for e in entry["events"][1:]} == {entry["updated_at"]}
    assert entry["pickup"]["scheduled_at"] == THIS_AFTERNOON.replace("Z", ".000Z")
    assert entry["pickup"]["name"] == "Shop"
    assert "resolved_pin" not in entry["pickup"]
    assert entry["dropoff"]["resolved_pin"] == accepted["resolved_pin"]
    assert entry["dropoff"]["resolved_pin"] == {"lat": 11.5637, "long": 104.9311}
    assert entry["dropoff"]["address"]["complete_address"] == "Royal Palace, Phnom Penh"


def test_a_pickup_given_by_address_shows_its_address_and_resolved_pin(
    open_for_business, alice, api
):
    """The pickup's address is JSON in the database, read as text by tracking and parsed:
    the entry carries the object the batch sent, not a string of it."""
    by_address = group(drop("P-1"), drop("P-2"), address=CENTRAL_MARKET)
    del by_address["pickup"]["lat"], by_address["pickup"]["long"]
    answer = api.bulk(batch(by_address), alice.sandbox_key).json()["data"]
    assert [o["status"] for o in answer["orders"]] == ["accepted", "accepted"], answer

    tracked = entries(api.track(["P-1", "P-2"], alice.sandbox_key))

    for entry in tracked.values():
        assert entry["pickup"]["address"] == CENTRAL_MARKET
        assert entry["pickup"]["resolved_pin"] == CENTRAL_MARKET_PIN
        assert (entry["pickup"]["lat"], entry["pickup"]["long"]) == tuple(
            CENTRAL_MARKET_PIN.values()
        )


def test_events_stay_in_order_across_separate_moves(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "T-1")
    for _ in range(3):
        open_for_business.shift(timedelta(minutes=1))
        entries(advance(api, key, "T-1"))

    events = track_one(api, key, "T-1")["events"]

    assert [e["status"] for e in events] == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    assert len({e["at"] for e in events}) == 4


def test_no_driver_before_assignment(open_for_business, alice, api):
    place(api, alice.sandbox_key, "T-1")
    entry = track_one(api, alice.sandbox_key, "T-1")
    assert entry["driver"] is None
    assert [e["status"] for e in entry["events"]] == [S.PENDING]


def test_tracking_after_reuse_returns_the_active_drop(open_for_business, alice, api):
    key = alice.sandbox_key
    old = place(api, key, "AGAIN")["AGAIN"]
    entries(advance(api, key, "AGAIN", to=S.DELIVERED))
    open_for_business.shift(timedelta(minutes=1))
    new = place(api, key, "AGAIN")["AGAIN"]

    entry = track_one(api, key, "AGAIN")

    assert entry["drop_id"] == new != old
    assert entry["status"] == S.PENDING
    assert entry["driver"] is None  # the new drop's order, not the delivered one's
    assert [e["status"] for e in entry["events"]] == [S.PENDING]


def test_tracking_with_none_active_returns_the_newest(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "AGAIN")
    entries(advance(api, key, "AGAIN", to=S.DELIVERED))
    open_for_business.shift(timedelta(minutes=1))
    newest = place(api, key, "AGAIN")["AGAIN"]
    entries(cancel(api, key, "AGAIN"))

    entry = track_one(api, key, "AGAIN")

    assert entry["drop_id"] == newest
    assert entry["status"] == S.CANCELLED
    assert [e["status"] for e in entry["events"]] == [S.PENDING, S.CANCELLED]


def test_an_active_drop_wins_over_a_newer_finished_one(region, alice, api):
    active = drop_in(S.ASSIGNED, business=alice.business, client_order_id="X")
    drop_in(S.CANCELLED, business=alice.business, client_order_id="X")

    entry = track_one(api, alice.sandbox_key, "X")

    assert entry["drop_id"] == str(active.pk)


def test_one_entry_per_distinct_identifier_in_request_order(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "A", "B")
    entries(advance(api, key, "B"))

    response = api.track(["B", "NOPE", "A", "B"], key)

    orders = response.json()["data"]["orders"]
    assert [o["client_order_id"] for o in orders] == ["B", "NOPE", "A"]
    assert [o["status"] for o in orders] == [S.ASSIGNED, "NOT_FOUND", S.PENDING]
    assert orders[1] == {"client_order_id": "NOPE", "status": "NOT_FOUND"}


def test_a_live_key_tracks_only_live_drops(open_for_business, alice, api):
    place(api, alice.sandbox_key, "SAME")
    entries(advance(api, alice.sandbox_key, "SAME", to=S.DELIVERED))
    live = place(api, alice.live_key, "SAME")["SAME"]

    entry = track_one(api, alice.live_key, "SAME")

    assert entry["drop_id"] == live
    assert entry["environment"] == "live"
    assert entry["status"] == S.PENDING


@pytest.mark.parametrize("body", [{}, {"identifiers": []}, {"identifiers": ["  "]}])
def test_bad_identifiers_are_400(open_for_business, alice, api, body):
    response = api.post("/orders/tracking", body, alice.sandbox_key)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_identifier_errors_name_the_field_and_the_rule(open_for_business, alice, api):
    item = "Must be a non-empty string of at most 100 characters."
    error = api.track(["A-1", "", 7, "B-1", "C\x00"], alice.sandbox_key).json()["error"]
    assert error["details"] == [
        {"field": "identifiers[1]", "message": item},
        {"field": "identifiers[2]", "message": item},
        {"field": "identifiers[4]", "message": item},
    ]
    for body in ({"identifiers": "A-1"}, {"identifiers": None}, {"identifiers": [""] * 1001}):
        error = api.post("/orders/tracking", body, alice.sandbox_key).json()["error"]
        assert error["details"] == [
            {"field": "identifiers", "message": "Must be an array of 1 to 1000 strings."}
        ]
    error = api.post("/orders/tracking", ["A-1"], alice.sandbox_key).json()["error"]
    assert error["details"] == [{"field": "", "message": "The body must be a JSON object."}]
