"""Per-drop rejections inside a 200 (docs/contract.md §4), and the shape of the batch result."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from core.formats import money
from geo.models import ServiceArea
from orders.models import Batch, BatchStatus, DeliveryEvent, Drop, DropStatus, Order
from tests.factories import HOME, SHOP, batch, drop, group
from tests.helpers import ROYAL_PALACE, timeline_of

ANGKOR_WAT = {"lat": 13.4125, "long": 103.8670}
CENTRAL_MARKET = {
    "complete_address": "Central Market, Phnom Penh",
    "city": "Phnom Penh",
    "country": "KH",
}
NOWHERE = {"complete_address": "42 Nowhere Street", "city": "Atlantis", "country": "KH"}

# The fixture clock starts at 2026-11-23 03:00 UTC (10:00 in Phnom Penh) and ticks.
AN_HOUR_AGO = "2026-11-23T02:00:00Z"
THIS_AFTERNOON = "2026-11-23T07:00:00Z"  # 14:00 in Phnom Penh
TONIGHT = "2026-11-23T15:30:00Z"  # 22:30 in Phnom Penh

ACCEPTED_KEYS = {
    "client_order_id",
    "external_waybill",
    "status",
    "pass_order_id",
    "drop_id",
    "short_code",
    "price",
    "price_breakdown",
    "currency",
    "tracking_url",
}
REJECTED_KEYS = {"client_order_id", "external_waybill", "status", "failure_reason", "message"}


def recipient_without(*missing: str, client_order_id: str | None = None, **overrides) -> dict:
    """A drop whose recipient lacks the `missing` keys (e.g. "phone"), then gets `overrides`."""
    entry = drop(client_order_id)
    for key in missing:
        del entry["dropoff"][key]
    entry["dropoff"].update(overrides)
    return entry


def submit(api, key: str, *groups: dict) -> dict:
    response = api.bulk(batch(*groups), key)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["statusCode"] == 200
    assert body["success"] is True
    return body["data"]


def results_by_id(data: dict) -> dict[str, dict]:
    return {entry["client_order_id"]: entry for entry in data["orders"]}


def only_result(data: dict) -> dict:
    assert len(data["orders"]) == 1
    return data["orders"][0]


def assert_rejected(entry: dict, reason: str) -> None:
    assert set(entry) == REJECTED_KEYS
    assert entry["status"] == "rejected"
    assert entry["failure_reason"] == reason
    assert isinstance(entry["message"], str) and entry["message"]


def assert_accepted(entry: dict) -> None:
    assert set(entry) >= ACCEPTED_KEYS
    assert set(entry) - ACCEPTED_KEYS <= {"resolved_pin", "pickup_resolved_pin", "dropoff_pin"}
    assert entry["status"] == "accepted"


# --- INVALID_PHONE ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "phone",
    [
        None,
        85512345678,
        ["+85512345678"],
        "",
        "012345678",
        "+855 12 345 678",
        "+855-12-345-678",
        "+855123456789012345",
        "+85500000000",  # E.164-shaped, but no such number
        "+10000000000",
    ],
    ids=repr,
)
def test_bad_recipient_phone_is_invalid_phone(open_for_business, alice, api, phone):
    data = submit(api, alice.sandbox_key, group(drop("P-1", phone=phone), drop("P-2")))
    results = results_by_id(data)
    assert_rejected(results["P-1"], "INVALID_PHONE")
    assert_accepted(results["P-2"])
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["P-2"]


def test_missing_recipient_phone_is_invalid_phone(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, group(recipient_without("phone", client_order_id="P-1")))
    assert_rejected(only_result(data), "INVALID_PHONE")
    assert Drop.objects.count() == 0


@pytest.mark.parametrize(
    "phone", [None, 85512345678, "012345678", "+855 12 345 678", "+85500000000"]
)
def test_bad_pickup_phone_rejects_every_drop_of_its_group(open_for_business, alice, api, phone):
    data = submit(
        api,
        alice.sandbox_key,
        group(drop("P-1"), drop("P-2"), phone=phone),
        group(drop("P-3")),
    )
    results = results_by_id(data)
    assert_rejected(results["P-1"], "INVALID_PHONE")
    assert_rejected(results["P-2"], "INVALID_PHONE")
    assert "pickup" in results["P-1"]["message"]
    assert_accepted(results["P-3"])
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["P-3"]
    assert Order.objects.count() == 1


# --- INVALID_COORDINATES ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "place",
    [
        {"lat": 11.5696},
        {"long": 104.9210},
        {"lat": 11.5696, "long": None},
        {"lat": "11.5696", "long": 104.9210},
        {"lat": 11.5696, "long": "104.9210"},
        {"lat": True, "long": 104.9210},
        {"lat": 11.5696, "long": False},
        {"lat": [11.5], "long": 104.9210},
        {"lat": 90.0001, "long": 104.9210},
        {"lat": -91, "long": 104.9210},
        {"lat": 11.5696, "long": 180.5},
        {"lat": 11.5696, "long": -181},
        {"lat": 1e300, "long": 1e300},
        {"lat": 0, "long": 0},
        {"lat": 0.0, "long": -0.0},
        {"lat": 11.5696, "address": ROYAL_PALACE},  # half a pair is not rescued by an address
    ],
    ids=repr,
)
def test_bad_drop_coordinates_are_invalid_coordinates(open_for_business, alice, api, place):
    entry = recipient_without("lat", "long", client_order_id="G-1", **place)
    data = submit(api, alice.sandbox_key, group(entry, drop("G-2")))
    results = results_by_id(data)
    assert_rejected(results["G-1"], "INVALID_COORDINATES")
    assert_accepted(results["G-2"])
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["G-2"]


def test_drop_with_neither_coordinates_nor_address_is_invalid_coordinates(
    open_for_business, alice, api
):
    data = submit(api, alice.sandbox_key, group(recipient_without("lat", "long")))
    assert_rejected(only_result(data), "INVALID_COORDINATES")
    assert Drop.objects.count() == 0


@pytest.mark.parametrize("place", [{"lat": 11.5564}, {"lat": 0, "long": 0}, {}], ids=repr)
def test_bad_pickup_coordinates_reject_every_drop_of_its_group(
    open_for_business, alice, api, place
):
    pickup_group = group(drop("G-1"), drop("G-2"))
    del pickup_group["pickup"]["lat"], pickup_group["pickup"]["long"]
    pickup_group["pickup"].update(place)
    data = submit(api, alice.sandbox_key, pickup_group, group(drop("G-3")))
    results = results_by_id(data)
    assert_rejected(results["G-1"], "INVALID_COORDINATES")
    assert_rejected(results["G-2"], "INVALID_COORDINATES")
    assert_accepted(results["G-3"])
    assert Drop.objects.count() == 1


def test_a_zero_latitude_alone_is_a_real_place_not_invalid(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, group(drop("Z-1", lat=0, long=104.9)))
    assert_rejected(only_result(data), "OUT_OF_SERVICE_AREA")


# --- GEOCODE_FAILED and OUT_OF_SERVICE_AREA ---------------------------------------------------


def test_unknown_drop_address_is_geocode_failed(open_for_business, alice, api):
    entry = recipient_without("lat", "long", client_order_id="A-1", address=NOWHERE)
    data = submit(api, alice.sandbox_key, group(entry, drop("A-2")))
    results = results_by_id(data)
    assert_rejected(results["A-1"], "GEOCODE_FAILED")
    assert_accepted(results["A-2"])
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["A-2"]


def test_empty_drop_address_is_geocode_failed(open_for_business, alice, api):
    entry = recipient_without("lat", "long", address={})
    assert_rejected(only_result(submit(api, alice.sandbox_key, group(entry))), "GEOCODE_FAILED")


def test_unknown_pickup_address_rejects_its_group_with_geocode_failed(
    open_for_business, alice, api
):
    pickup_group = group(drop("A-1"), drop("A-2"), address=NOWHERE)
    del pickup_group["pickup"]["lat"], pickup_group["pickup"]["long"]
    data = submit(api, alice.sandbox_key, pickup_group, group(drop("A-3")))
    results = results_by_id(data)
    assert_rejected(results["A-1"], "GEOCODE_FAILED")
    assert_rejected(results["A-2"], "GEOCODE_FAILED")
    assert_accepted(results["A-3"])


def test_drop_at_angkor_wat_is_out_of_service_area(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, group(drop("O-1", **ANGKOR_WAT), drop("O-2")))
    results = results_by_id(data)
    assert_rejected(results["O-1"], "OUT_OF_SERVICE_AREA")
    assert_accepted(results["O-2"])
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["O-2"]


def test_address_only_drop_resolved_outside_the_area_is_out_of_service_area(
    open_for_business, alice, api
):
    angkor = {"complete_address": "Angkor Wat, Siem Reap", "city": "Siem Reap", "country": "KH"}
    entry = recipient_without("lat", "long", address=angkor)
    assert_rejected(
        only_result(submit(api, alice.sandbox_key, group(entry))), "OUT_OF_SERVICE_AREA"
    )


def test_pickup_at_angkor_wat_rejects_its_group(open_for_business, alice, api):
    data = submit(
        api, alice.sandbox_key, group(drop("O-1"), drop("O-2"), **ANGKOR_WAT), group(drop("O-3"))
    )
    results = results_by_id(data)
    assert_rejected(results["O-1"], "OUT_OF_SERVICE_AREA")
    assert_rejected(results["O-2"], "OUT_OF_SERVICE_AREA")
    assert "pickup" in results["O-1"]["message"]
    assert_accepted(results["O-3"])


def test_every_drop_is_out_of_area_when_no_area_is_active(open_for_business, alice, api):
    ServiceArea.objects.update(active=False)
    data = submit(api, alice.sandbox_key, group(drop()))
    assert_rejected(only_result(data), "OUT_OF_SERVICE_AREA")


# --- SCHEDULE_IN_PAST and OUTSIDE_OPERATING_HOURS ---------------------------------------------


def test_pickup_scheduled_in_the_past_rejects_its_group(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        group(drop("S-1"), drop("S-2"), pickup_scheduled_at=AN_HOUR_AGO),
        group(drop("S-3")),
    )
    results = results_by_id(data)
    assert_rejected(results["S-1"], "SCHEDULE_IN_PAST")
    assert_rejected(results["S-2"], "SCHEDULE_IN_PAST")
    assert_accepted(results["S-3"])
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["S-3"]


def test_pickup_scheduled_later_today_is_accepted_as_scheduled(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, group(drop("S-1"), pickup_scheduled_at=THIS_AFTERNOON))
    assert_accepted(only_result(data))
    stored = Drop.objects.get()
    assert stored.status == DropStatus.SCHEDULED
    assert stored.order.pickup_scheduled_at == datetime(2026, 11, 23, 7, 0, tzinfo=UTC)


def test_orders_after_closing_time_are_outside_operating_hours(open_for_business, alice, api):
    open_for_business.move_to(datetime(2026, 11, 23, 15, 0, tzinfo=UTC))  # 22:00 in Phnom Penh
    data = submit(api, alice.sandbox_key, group(drop("H-1"), drop("H-2")), group(drop("H-3")))
    assert [e["failure_reason"] for e in data["orders"]] == ["OUTSIDE_OPERATING_HOURS"] * 3
    assert data["status"] == "FAILED"
    assert Drop.objects.count() == 0
    assert Order.objects.count() == 0


@pytest.mark.parametrize(
    ("utc_hour", "utc_minute", "open_"),
    [(23, 59, False), (0, 0, True), (13, 59, True), (14, 0, False)],
    ids=["06:59", "07:00", "20:59", "21:00"],
)
def test_opening_hours_include_opening_and_exclude_closing_time(
    open_for_business, alice, api, utc_hour, utc_minute, open_
):
    day = 22 if utc_hour == 23 else 23
    open_for_business.move_to(datetime(2026, 11, day, utc_hour, utc_minute, tzinfo=UTC))
    entry = only_result(submit(api, alice.sandbox_key, group(drop())))
    if open_:
        assert_accepted(entry)
    else:
        assert_rejected(entry, "OUTSIDE_OPERATING_HOURS")


@pytest.mark.parametrize("when", [TONIGHT, "2026-11-23T22:30:00+07:00"])
def test_pickup_scheduled_after_closing_time_is_outside_operating_hours(
    open_for_business, alice, api, when
):
    data = submit(api, alice.sandbox_key, group(drop("H-1"), pickup_scheduled_at=when))
    assert_rejected(only_result(data), "OUTSIDE_OPERATING_HOURS")
    assert Drop.objects.count() == 0


def test_pickup_scheduled_inside_hours_is_accepted_while_closed_now(open_for_business, alice, api):
    open_for_business.move_to(datetime(2026, 11, 23, 15, 0, tzinfo=UTC))  # 22:00, closed
    tomorrow_morning = "2026-11-24T09:00:00+07:00"
    data = submit(api, alice.sandbox_key, group(drop(), pickup_scheduled_at=tomorrow_morning))
    assert_accepted(only_result(data))
    assert Drop.objects.get().status == DropStatus.SCHEDULED


# --- DUPLICATE_CLIENT_ORDER_ID ----------------------------------------------------------------


def test_second_drop_with_an_id_in_the_same_batch_is_duplicate(open_for_business, alice, api):
    data = submit(
        api, alice.sandbox_key, group(drop("D-1", waybill="first"), drop("D-2")), group(drop("D-1"))
    )
    first, other, second = data["orders"]
    assert_accepted(first)
    assert first["external_waybill"] == "first"
    assert_accepted(other)
    assert_rejected(second, "DUPLICATE_CLIENT_ORDER_ID")
    assert Drop.objects.get(client_order_id="D-1").external_waybill == "first"
    assert Drop.objects.count() == 2


def test_id_of_an_active_drop_from_an_earlier_batch_is_duplicate(open_for_business, alice, api):
    submit(api, alice.sandbox_key, group(drop("D-1")))
    data = submit(api, alice.sandbox_key, group(drop("D-1"), drop("D-2")))
    results = results_by_id(data)
    assert_rejected(results["D-1"], "DUPLICATE_CLIENT_ORDER_ID")
    assert_accepted(results["D-2"])
    assert Drop.objects.filter(client_order_id="D-1").count() == 1


def test_rejected_drop_does_not_take_its_id_in_the_same_batch(open_for_business, alice, api):
    data = submit(
        api, alice.sandbox_key, group(drop("D-1", phone="012345678"), drop("D-1", waybill="retry"))
    )
    bad, good = data["orders"]
    assert_rejected(bad, "INVALID_PHONE")
    assert_accepted(good)
    assert Drop.objects.get().external_waybill == "retry"


def test_rejected_drop_does_not_take_its_id_for_a_later_batch(open_for_business, alice, api):
    first = submit(api, alice.sandbox_key, group(drop("D-1", **ANGKOR_WAT)))
    assert_rejected(only_result(first), "OUT_OF_SERVICE_AREA")
    second = submit(api, alice.sandbox_key, group(drop("D-1")))
    assert_accepted(only_result(second))
    assert Drop.objects.get().client_order_id == "D-1"


@pytest.mark.parametrize("status", [DropStatus.DELIVERED, DropStatus.FAILED, DropStatus.CANCELLED])
def test_id_of_a_finished_drop_can_be_used_again(open_for_business, alice, api, status):
    submit(api, alice.sandbox_key, group(drop("D-1")))
    Drop.objects.update(status=status)
    assert_accepted(only_result(submit(api, alice.sandbox_key, group(drop("D-1")))))
    assert Drop.objects.filter(client_order_id="D-1").count() == 2


@pytest.mark.parametrize(
    "status", [DropStatus.SCHEDULED, DropStatus.ASSIGNED, DropStatus.PICKED_UP]
)
def test_id_of_any_active_drop_is_duplicate(open_for_business, alice, api, status):
    submit(api, alice.sandbox_key, group(drop("D-1")))
    Drop.objects.update(status=status)
    data = submit(api, alice.sandbox_key, group(drop("D-1")))
    assert_rejected(only_result(data), "DUPLICATE_CLIENT_ORDER_ID")


def test_ids_are_scoped_per_business_and_environment(open_for_business, alice, bob, api):
    submit(api, alice.sandbox_key, group(drop("D-1")))
    assert_accepted(only_result(submit(api, bob.sandbox_key, group(drop("D-1")))))
    assert_accepted(only_result(submit(api, alice.live_key, group(drop("D-1")))))
    assert Drop.objects.filter(client_order_id="D-1").count() == 3


# --- precedence: the first failing rule wins --------------------------------------------------


@pytest.mark.parametrize(
    ("pickup_overrides", "drop_overrides", "expected"),
    [
        ({}, {"phone": "012", "lat": 0, "long": 0}, "INVALID_PHONE"),
        ({}, {"phone": "012", **ANGKOR_WAT}, "INVALID_PHONE"),
        ({}, {"lat": 0, "long": 0, "address": NOWHERE}, "INVALID_COORDINATES"),
        ({"pickup_scheduled_at": AN_HOUR_AGO}, {"lat": 95}, "INVALID_COORDINATES"),
        ({"pickup_scheduled_at": AN_HOUR_AGO}, ANGKOR_WAT, "OUT_OF_SERVICE_AREA"),
        ({"phone": "bad"}, ANGKOR_WAT, "INVALID_PHONE"),
        ({"phone": "bad"}, {"phone": "also bad"}, "INVALID_PHONE"),
        (ANGKOR_WAT, {"lat": 0, "long": 0}, "INVALID_COORDINATES"),
        ({**ANGKOR_WAT, "pickup_scheduled_at": AN_HOUR_AGO}, {}, "OUT_OF_SERVICE_AREA"),
        ({"pickup_scheduled_at": "2026-11-22T15:00:00Z"}, {}, "SCHEDULE_IN_PAST"),  # 22:00 too
        ({"pickup_scheduled_at": TONIGHT}, ANGKOR_WAT, "OUT_OF_SERVICE_AREA"),
    ],
    ids=repr,
)
def test_a_drop_failing_several_rules_gets_the_first(
    open_for_business, alice, api, pickup_overrides, drop_overrides, expected
):
    data = submit(api, alice.sandbox_key, group(drop(**drop_overrides), **pickup_overrides))
    assert_rejected(only_result(data), expected)


def test_a_pickup_failure_wins_over_a_duplicate_id(open_for_business, alice, api):
    submit(api, alice.sandbox_key, group(drop("D-1")))
    data = submit(api, alice.sandbox_key, group(drop("D-1"), pickup_scheduled_at=TONIGHT))
    assert_rejected(only_result(data), "OUTSIDE_OPERATING_HOURS")


def test_a_drop_failure_wins_over_a_duplicate_id(open_for_business, alice, api):
    submit(api, alice.sandbox_key, group(drop("D-1")))
    data = submit(api, alice.sandbox_key, group(drop("D-1", **ANGKOR_WAT)))
    assert_rejected(only_result(data), "OUT_OF_SERVICE_AREA")


# --- the batch result -------------------------------------------------------------------------


def test_mixed_batch_is_partial_with_results_in_submission_order(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        group(drop("M-1", waybill="WB-1"), drop("M-2", phone="nope"), drop("M-3")),
        group(drop("M-4", **ANGKOR_WAT, waybill="WB-4")),
        group(drop("M-5"), drop("M-6")),
    )
    assert [e["client_order_id"] for e in data["orders"]] == [f"M-{i}" for i in range(1, 7)]
    assert [e["status"] for e in data["orders"]] == [
        "accepted",
        "rejected",
        "accepted",
        "rejected",
        "accepted",
        "accepted",
    ]
    assert data["status"] == "PARTIAL"
    assert data["counts"] == {"total": 6, "accepted": 4, "rejected": 2}

    results = results_by_id(data)
    assert set(results["M-1"]) == ACCEPTED_KEYS
    assert set(results["M-2"]) == REJECTED_KEYS
    assert [results[i]["external_waybill"] for i in ("M-1", "M-2", "M-4")] == ["WB-1", None, "WB-4"]

    row = Batch.objects.get()
    assert str(row.pk) == data["batch_id"]
    assert (row.status, row.total, row.accepted, row.rejected) == (BatchStatus.PARTIAL, 6, 4, 2)
    assert sorted(Drop.objects.values_list("client_order_id", flat=True)) == [
        "M-1",
        "M-3",
        "M-5",
        "M-6",
    ]


def test_accepted_entries_match_the_stored_drops(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, group(drop("E-1", waybill="WB-9"), drop("E-2")))
    for entry in data["orders"]:
        assert set(entry) == ACCEPTED_KEYS
        stored = Drop.objects.get(pk=entry["drop_id"])
        assert stored.client_order_id == entry["client_order_id"]
        assert str(stored.order_id) == entry["pass_order_id"]
        assert str(stored.batch_id) == data["batch_id"]
        assert stored.external_waybill == entry["external_waybill"]
        assert re.fullmatch(r"\d+\.\d{2}", entry["price"])
        assert entry["price"] == money(stored.price)
        assert entry["currency"] == stored.currency == "USD"
        assert stored.status == DropStatus.PENDING
        assert stored.environment == "sandbox"
        assert stored.business == alice.business
        # Its creation is the drop row itself, no event row.
        assert not stored.events.exists()
        assert [e.status for e in timeline_of(stored.pk)] == [DropStatus.PENDING]
    assert data["orders"][0]["external_waybill"] == "WB-9"
    assert data["orders"][1]["external_waybill"] is None


def test_drops_of_a_group_share_one_order_and_groups_get_their_own(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        group(drop("G-1"), drop("G-2"), drop("G-3")),
        group(drop("G-4"), drop("G-5")),
    )
    order_ids = [e["pass_order_id"] for e in data["orders"]]
    assert order_ids[0] == order_ids[1] == order_ids[2]
    assert order_ids[3] == order_ids[4]
    assert order_ids[0] != order_ids[3]
    assert len({e["drop_id"] for e in data["orders"]}) == 5
    assert sorted(str(pk) for pk in Order.objects.values_list("pk", flat=True)) == sorted(
        set(order_ids)
    )
    first = Order.objects.get(pk=order_ids[0])
    assert first.drops.count() == 3
    assert (first.pickup_lat, first.pickup_long) == (SHOP["lat"], SHOP["long"])


def test_group_with_every_drop_rejected_creates_no_order(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        group(drop("R-1", **ANGKOR_WAT), drop("R-2", phone="0")),
        group(drop("R-3")),
    )
    assert data["counts"] == {"total": 3, "accepted": 1, "rejected": 2}
    order = Order.objects.get()
    assert str(order.pk) == results_by_id(data)["R-3"]["pass_order_id"]


def test_batch_with_every_drop_accepted_is_completed(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, group(drop(), drop()), group(drop()))
    assert data["status"] == "COMPLETED"
    assert data["counts"] == {"total": 3, "accepted": 3, "rejected": 0}
    assert Batch.objects.get().status == BatchStatus.COMPLETED
    assert Drop.objects.count() == 3
    # A drop's creation is no event row: each timeline starts with it.
    assert DeliveryEvent.objects.count() == 0
    for stored in Drop.objects.all():
        assert [e.status for e in timeline_of(stored.pk)] == [DropStatus.PENDING]


def test_batch_with_no_drop_accepted_is_failed_and_still_stored(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, group(drop("F-1", phone="x"), drop("F-2", **ANGKOR_WAT)))
    assert data["status"] == "FAILED"
    assert data["counts"] == {"total": 2, "accepted": 0, "rejected": 2}
    row = Batch.objects.get()
    assert (row.status, row.total, row.accepted, row.rejected) == (BatchStatus.FAILED, 2, 0, 2)
    assert Order.objects.count() == 0
    assert Drop.objects.count() == 0
    assert DeliveryEvent.objects.count() == 0


def test_batch_result_carries_its_ids_poll_url_environment_and_time(open_for_business, alice, api):
    response = api.bulk(batch(group(drop()), client_batch_id="my-batch-7"), alice.sandbox_key)
    data = response.json()["data"]
    row = Batch.objects.get()
    assert data["batch_id"] == str(row.pk)
    assert data["client_batch_id"] == "my-batch-7"
    assert data["poll_url"] == f"http://testserver/api/v1/batches/{row.pk}"
    assert data["environment"] == "sandbox"
    assert data["created_at"].endswith("Z")
    created = datetime.fromisoformat(data["created_at"].replace("Z", "+00:00"))
    assert abs((created - row.created_at).total_seconds()) < 0.001
    assert abs((created - datetime(2026, 11, 23, 3, 0, tzinfo=UTC)).total_seconds()) < 60


def test_poll_url_uses_base_url_when_set(open_for_business, alice, api, settings):
    settings.BASE_URL = "https://api.example.com"
    data = submit(api, alice.sandbox_key, group(drop()))
    assert data["poll_url"] == f"https://api.example.com/api/v1/batches/{data['batch_id']}"


def test_live_key_creates_live_drops(open_for_business, alice, api):
    data = submit(api, alice.live_key, group(drop("L-1")))
    assert data["environment"] == "live"
    assert Drop.objects.get().environment == "live"
    assert Batch.objects.get().environment == "live"


# --- resolved pins ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "complete_address",
    ["Royal Palace, Phnom Penh", "royal palace phnom penh", "ROYAL-PALACE (Phnom Penh)!"],
)
def test_address_only_drop_echoes_its_resolved_pin(open_for_business, alice, api, complete_address):
    address = {**ROYAL_PALACE, "complete_address": complete_address}
    entry = recipient_without("lat", "long", client_order_id="R-1", address=address)
    result = only_result(submit(api, alice.sandbox_key, group(entry)))
    assert_accepted(result)
    assert result["resolved_pin"] == {"lat": 11.5637, "long": 104.9311}
    assert "pickup_resolved_pin" not in result
    stored = Drop.objects.get()
    assert (stored.lat, stored.long, stored.resolved) == (11.5637, 104.9311, True)
    assert stored.address == address


def test_address_only_pickup_echoes_its_resolved_pin_on_each_drop(open_for_business, alice, api):
    pickup_group = group(drop("R-1"), drop("R-2"), address=CENTRAL_MARKET)
    del pickup_group["pickup"]["lat"], pickup_group["pickup"]["long"]
    data = submit(api, alice.sandbox_key, pickup_group)
    for entry in data["orders"]:
        assert_accepted(entry)
        assert entry["pickup_resolved_pin"] == {"lat": 11.5696, "long": 104.9210}
        assert "resolved_pin" not in entry
    order = Order.objects.get()
    assert (order.pickup_lat, order.pickup_long, order.pickup_resolved) == (11.5696, 104.9210, True)


def test_coordinates_win_over_an_address(open_for_business, alice, api):
    entry = drop("R-1", address=ROYAL_PALACE)
    pickup_group = group(entry, address=CENTRAL_MARKET)
    result = only_result(submit(api, alice.sandbox_key, pickup_group))
    assert set(result) == ACCEPTED_KEYS  # no resolved pins
    stored = Drop.objects.get()
    assert (stored.lat, stored.long, stored.resolved) == (HOME["lat"], HOME["long"], False)
    assert (stored.order.pickup_lat, stored.order.pickup_long) == (SHOP["lat"], SHOP["long"])


def test_coordinates_win_even_over_an_unknown_address(open_for_business, alice, api):
    result = only_result(submit(api, alice.sandbox_key, group(drop(address=NOWHERE))))
    assert_accepted(result)
    assert "resolved_pin" not in result
