"""The recipient's side in the API (docs/contract.md §14): tracking links, delivery PINs, proof of
delivery and failure on tracking entries, and who may send a sandbox scenario."""

from __future__ import annotations

import re

import pytest
from django.test import override_settings

from events.models import Event, EventType
from orders.links import tracking_token
from orders.models import Drop, DropStatus
from tests.factories import batch, drop, group
from tests.helpers import TRACKING_ENTRY_KEYS, assert_error
from tests.tracking.helpers import advance, entries, place

S = DropStatus
TOKEN_URL = re.compile(r"\Ahttps://track\.example\.com/t/[A-Za-z0-9_-]{22}\Z")


@pytest.fixture
def sandbox(open_for_business, alice):
    return alice.sandbox_key


def bulk_one(api, key, **fields):
    """One drop with extra drop fields (dropoff_verification, sandbox_scenario); the answer."""
    body = batch(group({**drop("R-1"), **fields}))
    return api.bulk(body, key)


@override_settings(BASE_URL="https://track.example.com")
def test_every_accepted_drop_gets_its_own_tracking_url_in_the_result_and_the_entry(sandbox, api):
    response = api.bulk(batch(group(drop("T-1"), drop("T-2"))), sandbox)

    orders = response.json()["data"]["orders"]
    urls = [o["tracking_url"] for o in orders]
    assert all(TOKEN_URL.match(url) for url in urls) and len(set(urls)) == 2
    tokens = {d.client_order_id: tracking_token(d.pk) for d in Drop.objects.all()}
    assert urls == [
        f"https://track.example.com/t/{tokens['T-1']}",
        f"https://track.example.com/t/{tokens['T-2']}",
    ]
    tracked = entries(api.track(["T-1", "T-2"], sandbox))
    assert [tracked["T-1"]["tracking_url"], tracked["T-2"]["tracking_url"]] == urls


def test_a_rejected_drop_has_no_tracking_url(sandbox, api):
    response = api.bulk(batch(group(drop("BAD", phone="12"))), sandbox)

    [entry] = response.json()["data"]["orders"]
    assert entry["status"] == "rejected" and "tracking_url" not in entry


def test_a_drop_asking_for_a_pin_gets_four_digits_in_its_result_only(sandbox, api):
    response = bulk_one(api, sandbox, dropoff_verification={"pin": True})

    [entry] = response.json()["data"]["orders"]
    assert re.fullmatch(r"[0-9]{4}", entry["dropoff_pin"])
    assert Drop.objects.get(pk=entry["drop_id"]).dropoff_pin == entry["dropoff_pin"]
    # The PIN is the business's to pass on: it is in no tracking entry or event.
    [tracked] = api.track(["R-1"], sandbox).json()["data"]["orders"]
    assert set(tracked) == TRACKING_ENTRY_KEYS and "dropoff_pin" not in tracked
    assert entry["dropoff_pin"] not in str(list(Event.objects.values_list("data", flat=True)))


@pytest.mark.parametrize("verification", [None, {"pin": False}, {}])
def test_no_pin_unless_asked(sandbox, api, verification):
    fields = {} if verification is None else {"dropoff_verification": verification}
    [entry] = bulk_one(api, sandbox, **fields).json()["data"]["orders"]

    assert entry["status"] == "accepted" and "dropoff_pin" not in entry
    assert Drop.objects.get(pk=entry["drop_id"]).dropoff_pin is None


@pytest.mark.parametrize(
    "verification", [True, "pin", [], {"pin": "yes"}, {"pin": 1}, {"pin": True, "photo": True}]
)
def test_a_malformed_dropoff_verification_is_a_validation_error(sandbox, api, verification):
    response = bulk_one(api, sandbox, dropoff_verification=verification)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"][0]["field"] == "orders[0].dropoff[0].dropoff_verification"
    assert not Drop.objects.exists()


@pytest.mark.parametrize("scenario", ["explode", "", 3, ["deliver"], "DELIVER"])
def test_an_unknown_sandbox_scenario_is_a_validation_error(sandbox, api, scenario):
    response = bulk_one(api, sandbox, sandbox_scenario=scenario)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"][0]["field"] == "orders[0].dropoff[0].sandbox_scenario"


@pytest.mark.parametrize("scenario", ["manual", "deliver", "fail", "cancel_by_courier"])
def test_a_live_key_sending_a_sandbox_scenario_gets_400_and_nothing_is_stored(
    open_for_business, alice, api, scenario
):
    response = bulk_one(api, alice.live_key, sandbox_scenario=scenario)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"] == [
        {
            "field": "orders[0].dropoff[0].sandbox_scenario",
            "message": "sandbox_scenario is for sandbox keys only.",
        }
    ]
    assert not Drop.objects.exists()
    quoted = api.post(
        "/orders/quote", batch(group({**drop("Q"), "sandbox_scenario": scenario})), alice.live_key
    )
    assert_error(quoted, 400, "VALIDATION_ERROR")


def test_a_sandbox_scenario_is_stored_and_only_walking_ones_are_queued(sandbox, api):
    body = batch(
        group(
            {**drop("M"), "sandbox_scenario": "manual"},
            {**drop("D"), "sandbox_scenario": "deliver"},
            drop("N"),
        )
    )
    assert api.bulk(body, sandbox).status_code == 200

    rows = {d.client_order_id: d for d in Drop.objects.all()}
    assert rows["M"].sandbox_scenario == "manual" and rows["M"].scenario_next_at is None
    assert rows["N"].sandbox_scenario is None and rows["N"].scenario_next_at is None
    assert rows["D"].sandbox_scenario == "deliver"
    assert rows["D"].scenario_next_at > rows["D"].created_at


def test_entries_carry_no_proof_or_failure_while_active(sandbox, api):
    place(api, sandbox, "A-1")

    [entry] = api.track(["A-1"], sandbox).json()["data"]["orders"]

    assert entry["proof_of_delivery"] is None and entry["failure"] is None


def test_the_test_driver_delivers_a_pin_drop_with_the_pin_and_says_so(sandbox, api):
    [result] = bulk_one(api, sandbox, dropoff_verification={"pin": True}).json()["data"]["orders"]

    entry = entries(advance(api, sandbox, "R-1", to="DELIVERED"))["R-1"]

    assert entry["status"] == S.DELIVERED
    delivered_at = entry["events"][-1]["at"]
    assert entry["proof_of_delivery"] == {
        "method": "pin",
        "at": delivered_at,
        "received_by": None,
        "photo_url": None,
        "signature_url": None,
    }
    assert entry["failure"] is None and entry["eta"] is None
    # The webhook's entry says the same.
    last = Event.objects.filter(type=EventType.ORDER_STATUS_CHANGED).order_by("seq").last()
    assert last.data["proof_of_delivery"]["method"] == "pin"
    assert Drop.objects.get(pk=result["drop_id"]).pin_attempts == 0


def test_a_drop_without_pin_or_photo_is_delivered_with_method_none(sandbox, api):
    place(api, sandbox, "A-1")

    entry = entries(advance(api, sandbox, "A-1", to="DELIVERED"))["A-1"]

    assert entry["proof_of_delivery"]["method"] == "none"


def test_a_failed_drop_carries_its_reason_and_time(sandbox, api):
    place(api, sandbox, "A-1")

    entry = entries(advance(api, sandbox, "A-1", to="FAILED"))["A-1"]

    assert entry["status"] == S.FAILED
    assert entry["failure"] == {"reason": "RECIPIENT_UNAVAILABLE", "at": entry["events"][-1]["at"]}
    assert entry["proof_of_delivery"] is None
    last = Event.objects.filter(type=EventType.ORDER_STATUS_CHANGED).order_by("seq").last()
    assert last.data["failure"]["reason"] == "RECIPIENT_UNAVAILABLE"
