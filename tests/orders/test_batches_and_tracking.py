"""GET /batches/<id> and POST /orders/tracking (docs/contract.md §5), per business and
environment."""

from __future__ import annotations

import re
import uuid

import pytest

from orders.models import Batch, Drop, DropStatus
from tests.factories import HOME, PHONE, RECIPIENT_PHONE, SHOP, batch, drop, group
from tests.helpers import ROYAL_PALACE, assert_error
from tests.helpers import TRACKING_ENTRY_KEYS as TRACKED_KEYS

ANGKOR_WAT = {"lat": 13.4125, "long": 103.8670}
THIS_AFTERNOON = "2026-11-23T07:00:00Z"  # 14:00 in Phnom Penh; the fixture clock is at 10:00


def ok(response) -> dict:
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["statusCode"] == 200
    assert body["success"] is True
    return body["data"]


def create(api, key: str, *groups: dict) -> dict:
    return ok(api.bulk(batch(*groups), key))


def tracked(api, key: str, identifiers: list) -> list[dict]:
    data = ok(api.track(identifiers, key))
    assert set(data) == {"orders"}
    return data["orders"]


def not_found(client_order_id: str) -> dict:
    return {"client_order_id": client_order_id, "status": "NOT_FOUND"}


# --- GET /batches/<batch_id> ------------------------------------------------------------------


def test_batch_lookup_returns_the_stored_result_with_delivery_statuses(
    open_for_business, alice, api
):
    created = create(
        api,
        alice.sandbox_key,
        group(drop("B-1", waybill="WB-1"), drop("B-2", **ANGKOR_WAT)),
        group(drop("B-3"), pickup_scheduled_at=THIS_AFTERNOON),
    )
    fetched = ok(api.get(f"/batches/{created['batch_id']}", alice.sandbox_key))

    assert fetched["status"] == "PARTIAL" == Batch.objects.get().status
    assert fetched["orders"][0]["delivery_status"] == "PENDING"
    assert "delivery_status" not in fetched["orders"][1]
    assert fetched["orders"][2]["delivery_status"] == "SCHEDULED"
    for entry in fetched["orders"]:
        entry.pop("delivery_status", None)
    assert fetched == created


def test_batch_lookup_shows_the_current_delivery_status(open_for_business, alice, api):
    created = create(api, alice.sandbox_key, group(drop("B-1"), drop("B-2")))
    Drop.objects.filter(client_order_id="B-2").update(status=DropStatus.DELIVERED)
    fetched = ok(api.get(f"/batches/{created['batch_id']}", alice.sandbox_key))
    assert [e["delivery_status"] for e in fetched["orders"]] == ["PENDING", "DELIVERED"]


def test_failed_batch_can_be_looked_up(open_for_business, alice, api):
    created = create(api, alice.sandbox_key, group(drop("B-1", phone="0")))
    fetched = ok(api.get(f"/batches/{created['batch_id']}", alice.sandbox_key))
    assert fetched == created
    assert fetched["status"] == "FAILED"


def test_batch_lookup_follows_the_poll_url(open_for_business, alice, api):
    created = create(api, alice.sandbox_key, group(drop()))
    response = api.client.get(created["poll_url"], HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}")
    assert ok(response)["batch_id"] == created["batch_id"]
    with_slash = ok(api.get(f"/batches/{created['batch_id']}/", alice.sandbox_key))
    assert with_slash["batch_id"] == created["batch_id"]


@pytest.mark.parametrize(
    "batch_id",
    [
        "3f9d2c1e-8b7a-4c6d-9e5f-0a1b2c3d4e5f",
        "not-a-uuid",
        "12345",
        "%00",
        "1" * 300,
        "..%2F..%2Fetc",
    ],
)
def test_unknown_batch_is_404(open_for_business, alice, api, batch_id):
    create(api, alice.sandbox_key, group(drop()))
    assert_error(api.get(f"/batches/{batch_id}", alice.sandbox_key), 404, "NOT_FOUND")


def test_another_business_batch_is_404(open_for_business, alice, bob, api):
    created = create(api, bob.sandbox_key, group(drop()))
    unknown = assert_error(api.get(f"/batches/{uuid.uuid4()}", alice.sandbox_key), 404, "NOT_FOUND")
    foreign = assert_error(
        api.get(f"/batches/{created['batch_id']}", alice.sandbox_key), 404, "NOT_FOUND"
    )
    assert foreign["message"] == unknown["message"]  # nothing tells it apart from an unknown id
    assert ok(api.get(f"/batches/{created['batch_id']}", bob.sandbox_key))


def test_batch_of_the_other_environment_is_404(open_for_business, alice, api):
    sandbox = create(api, alice.sandbox_key, group(drop()))
    live = create(api, alice.live_key, group(drop()))
    assert_error(api.get(f"/batches/{sandbox['batch_id']}", alice.live_key), 404, "NOT_FOUND")
    assert_error(api.get(f"/batches/{live['batch_id']}", alice.sandbox_key), 404, "NOT_FOUND")
    assert ok(api.get(f"/batches/{live['batch_id']}", alice.live_key))["environment"] == "live"


# --- POST /orders/tracking: 400s --------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"identifiers": None},
        {"identifiers": "A-1"},
        {"identifiers": {"A-1": True}},
        {"identifiers": []},
        {"identifiers": [f"T-{i}" for i in range(1001)]},
        {"ids": ["A-1"]},
    ],
    ids=["missing", "null", "string", "object", "empty", "1001", "other name"],
)
def test_identifiers_must_be_an_array_of_1_to_1000(alice, api, body):
    error = assert_error(
        api.post("/orders/tracking", body, alice.sandbox_key), 400, "VALIDATION_ERROR"
    )
    assert [d["field"] for d in error["details"]] == ["identifiers"]


@pytest.mark.parametrize("body", [[], ["A-1"], "A-1", 1, None])
def test_tracking_body_must_be_an_object(alice, api, body):
    error = assert_error(
        api.post("/orders/tracking", body, alice.sandbox_key), 400, "VALIDATION_ERROR"
    )
    assert [d["field"] for d in error["details"]] == [""]


def test_every_bad_identifier_is_listed(alice, api):
    identifiers = ["A-1", 7, "", "B-1", None, "   ", ["C-1"], "x" * 101, {"id": "D"}, True]
    error = assert_error(api.track(identifiers, alice.sandbox_key), 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == [
        f"identifiers[{i}]" for i in (1, 2, 4, 5, 6, 7, 8, 9)
    ]


def test_tracking_at_most_1000_identifiers_answers_each(alice, api):
    identifiers = [f"T-{i}" for i in range(1000)]
    orders = tracked(api, alice.sandbox_key, identifiers)
    assert orders == [not_found(i) for i in identifiers]


def test_tracking_limit_follows_the_setting(alice, api, settings):
    settings.MAX_TRACKING_IDENTIFIERS = 3
    assert_error(api.track(["A", "B", "C", "D"], alice.sandbox_key), 400, "VALIDATION_ERROR")
    assert len(tracked(api, alice.sandbox_key, ["A", "B", "C"])) == 3


# --- POST /orders/tracking: answers -----------------------------------------------------------


def test_one_entry_per_distinct_identifier_in_request_order(open_for_business, alice, api):
    create(api, alice.sandbox_key, group(drop("A"), drop("C")))
    orders = tracked(api, alice.sandbox_key, ["C", "B", "C", "A", "B", "A"])
    assert [(o["client_order_id"], o["status"]) for o in orders] == [
        ("C", "PENDING"),
        ("B", "NOT_FOUND"),
        ("A", "PENDING"),
    ]
    assert orders[1] == not_found("B")


def test_tracked_drop_carries_every_field(open_for_business, alice, api):
    created = create(api, alice.sandbox_key, group(drop("T-1", waybill="WB-1", name="Dara")))
    accepted = created["orders"][0]
    [entry] = tracked(api, alice.sandbox_key, ["T-1"])
    stored = Drop.objects.get()

    assert set(entry) == TRACKED_KEYS
    assert entry["client_order_id"] == "T-1"
    assert entry["status"] == "PENDING"
    assert entry["drop_id"] == accepted["drop_id"] == str(stored.pk)
    assert entry["pass_order_id"] == accepted["pass_order_id"] == str(stored.order_id)
    # The label's code (docs/contract.md §24): the same in the answer, the entry and the row.
    assert entry["short_code"] == accepted["short_code"] == stored.short_code
    assert re.fullmatch(r"[0-9A-Z]{8,12}", stored.short_code)
    assert entry["batch_id"] == created["batch_id"]
    assert entry["external_waybill"] == "WB-1"
    assert entry["environment"] == "sandbox"
    assert entry["pickup"] == {
        "name": "Shop",
        "phone": PHONE,
        "lat": SHOP["lat"],
        "long": SHOP["long"],
        "address": None,
        "scheduled_at": None,
        "vehicle": "motorbike",
    }
    assert entry["dropoff"] == {
        "name": "Dara",
        "phone": RECIPIENT_PHONE,
        "lat": HOME["lat"],
        "long": HOME["long"],
        "address": None,
    }
    assert entry["driver"] is None
    assert entry["price"] == accepted["price"]
    assert entry["currency"] == accepted["currency"] == "USD"
    assert entry["created_at"] == created["created_at"]
    assert entry["updated_at"].endswith("Z")
    assert entry["events"] == [{"status": "PENDING", "at": created["created_at"]}]


def test_drop_with_a_future_pickup_is_tracked_as_scheduled(open_for_business, alice, api):
    create(api, alice.sandbox_key, group(drop("T-1"), pickup_scheduled_at=THIS_AFTERNOON))
    [entry] = tracked(api, alice.sandbox_key, ["T-1"])
    assert entry["status"] == "SCHEDULED"
    assert entry["pickup"]["scheduled_at"] == "2026-11-23T07:00:00.000Z"
    assert [e["status"] for e in entry["events"]] == ["SCHEDULED"]


def test_tracked_drop_shows_its_addresses_and_resolved_pins(open_for_business, alice, api):
    central_market = {**ROYAL_PALACE, "complete_address": "Central Market, Phnom Penh"}
    pickup_group = group(drop("T-1"), address=central_market)
    del pickup_group["pickup"]["lat"], pickup_group["pickup"]["long"]
    del pickup_group["dropoff"][0]["dropoff"]["lat"], pickup_group["dropoff"][0]["dropoff"]["long"]
    pickup_group["dropoff"][0]["dropoff"]["address"] = ROYAL_PALACE
    create(api, alice.sandbox_key, pickup_group)

    [entry] = tracked(api, alice.sandbox_key, ["T-1"])
    assert entry["pickup"]["address"] == central_market
    assert (entry["pickup"]["lat"], entry["pickup"]["long"]) == (11.5696, 104.9210)
    assert entry["dropoff"]["address"] == ROYAL_PALACE
    assert (entry["dropoff"]["lat"], entry["dropoff"]["long"]) == (11.5637, 104.9311)


def test_live_drop_is_tracked_with_the_live_key(open_for_business, alice, api):
    create(api, alice.live_key, group(drop("T-1")))
    [entry] = tracked(api, alice.live_key, ["T-1"])
    assert entry["environment"] == "live"
    assert entry["status"] == "PENDING"


def test_rejected_drop_is_not_found(open_for_business, alice, api):
    create(api, alice.sandbox_key, group(drop("T-1", **ANGKOR_WAT), drop("T-2")))
    orders = tracked(api, alice.sandbox_key, ["T-1", "T-2"])
    assert orders[0] == not_found("T-1")
    assert orders[1]["status"] == "PENDING"


def test_another_business_drops_are_not_found(open_for_business, alice, bob, api):
    create(api, bob.sandbox_key, group(drop("BOB-1")))
    create(api, alice.sandbox_key, group(drop("ALICE-1")))
    orders = tracked(api, alice.sandbox_key, ["BOB-1", "ALICE-1"])
    assert orders[0] == not_found("BOB-1")
    assert orders[1]["status"] == "PENDING"
    assert tracked(api, bob.sandbox_key, ["BOB-1"])[0]["status"] == "PENDING"


def test_the_other_environment_drops_are_not_found(open_for_business, alice, api):
    create(api, alice.sandbox_key, group(drop("SANDBOX-1")))
    create(api, alice.live_key, group(drop("LIVE-1")))
    assert tracked(api, alice.live_key, ["SANDBOX-1", "LIVE-1"])[0] == not_found("SANDBOX-1")
    assert tracked(api, alice.sandbox_key, ["LIVE-1", "SANDBOX-1"])[0] == not_found("LIVE-1")


def test_same_id_in_both_environments_is_tracked_per_environment(open_for_business, alice, api):
    sandbox = create(api, alice.sandbox_key, group(drop("T-1")))
    live = create(api, alice.live_key, group(drop("T-1")))
    [in_sandbox] = tracked(api, alice.sandbox_key, ["T-1"])
    [in_live] = tracked(api, alice.live_key, ["T-1"])
    assert in_sandbox["drop_id"] == sandbox["orders"][0]["drop_id"]
    assert in_live["drop_id"] == live["orders"][0]["drop_id"]


def test_the_active_drop_wins_over_a_finished_one(open_for_business, alice, api):
    create(api, alice.sandbox_key, group(drop("T-1")))
    Drop.objects.update(status=DropStatus.DELIVERED)
    again = create(api, alice.sandbox_key, group(drop("T-1")))
    [entry] = tracked(api, alice.sandbox_key, ["T-1"])
    assert entry["drop_id"] == again["orders"][0]["drop_id"]
    assert entry["status"] == "PENDING"

    # An older active drop still wins over a newer finished one.
    Drop.objects.filter(pk=again["orders"][0]["drop_id"]).update(status=DropStatus.CANCELLED)
    older = Drop.objects.exclude(pk=again["orders"][0]["drop_id"]).get()
    Drop.objects.filter(pk=older.pk).update(status=DropStatus.ASSIGNED)
    [entry] = tracked(api, alice.sandbox_key, ["T-1"])
    assert entry["drop_id"] == str(older.pk)
    assert entry["status"] == "ASSIGNED"


def test_the_newest_finished_drop_wins_when_none_is_active(open_for_business, alice, api):
    create(api, alice.sandbox_key, group(drop("T-1")))
    Drop.objects.update(status=DropStatus.DELIVERED)
    again = create(api, alice.sandbox_key, group(drop("T-1")))
    Drop.objects.filter(pk=again["orders"][0]["drop_id"]).update(status=DropStatus.CANCELLED)
    [entry] = tracked(api, alice.sandbox_key, ["T-1"])
    assert entry["drop_id"] == again["orders"][0]["drop_id"]
    assert entry["status"] == "CANCELLED"
