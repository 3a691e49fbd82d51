"""Request-level 400s of POST /orders/bulk (docs/contract.md §4): every shape error, nothing
stored."""

from __future__ import annotations

import copy
import uuid

import pytest

from orders.models import Batch, Drop, IdempotencyRecord
from tests.factories import batch, drop, group, many_drops, pickup
from tests.helpers import ROYAL_PALACE, assert_error, assert_nothing_stored


def assert_validation_error(response, *fields: str) -> list[dict]:
    """A VALIDATION_ERROR whose details name exactly these fields, each with a message."""
    details = assert_error(response, 400, "VALIDATION_ERROR")["details"]
    for item in details:
        assert set(item) == {"field", "message"}
        assert isinstance(item["message"], str) and item["message"]
    assert sorted(item["field"] for item in details) == sorted(fields)
    return details


def one_drop_batch() -> dict:
    return batch(group(drop("V-1")))


def edit(body: dict, path: tuple, value) -> dict:
    """A copy of `body` with the value at `path` replaced (or removed when value is DELETE)."""
    body = copy.deepcopy(body)
    target = body
    for step in path[:-1]:
        target = target[step]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


class _Delete:
    """The field left out (a stable repr: test ids must be the same in every process)."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()
PICKUP = ("orders", 0, "pickup")
DROP = ("orders", 0, "dropoff", 0)
RECIPIENT = (*DROP, "dropoff")


# --- the body and the batch ---------------------------------------------------------------


@pytest.mark.parametrize("body", [[], "batch", 42, None])
def test_body_that_is_not_an_object_is_400(alice, api, body):
    response = api.bulk(body, alice.sandbox_key)
    assert_validation_error(response, "")
    assert_nothing_stored()


@pytest.mark.parametrize(
    "value", [DELETE, None, "", "   ", 42, ["B-1"], {"id": "B-1"}, "x" * 101], ids=repr
)
def test_client_batch_id_must_be_a_non_empty_string_of_at_most_100(alice, api, value):
    response = api.bulk(edit(one_drop_batch(), ("client_batch_id",), value), alice.sandbox_key)
    assert_validation_error(response, "client_batch_id")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [DELETE, None, [], {}, "orders", 1, {"pickup": {}}], ids=repr)
def test_orders_must_be_a_non_empty_array(alice, api, value):
    response = api.bulk(edit(one_drop_batch(), ("orders",), value), alice.sandbox_key)
    assert_validation_error(response, "orders")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [None, "group", 1, [group()]], ids=repr)
def test_pickup_group_must_be_an_object(alice, api, value):
    body = batch(group(drop("V-1")), group(drop("V-2")))
    response = api.bulk(edit(body, ("orders", 1), value), alice.sandbox_key)
    assert_validation_error(response, "orders[1]")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [DELETE, None, "Shop", 7, [pickup()]], ids=repr)
def test_pickup_must_be_an_object(alice, api, value):
    response = api.bulk(edit(one_drop_batch(), PICKUP, value), alice.sandbox_key)
    assert_validation_error(response, "orders[0].pickup")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [DELETE, None, [], {}, drop(), "V-1"], ids=repr)
def test_dropoff_must_be_a_non_empty_array(alice, api, value):
    response = api.bulk(edit(one_drop_batch(), ("orders", 0, "dropoff"), value), alice.sandbox_key)
    assert_validation_error(response, "orders[0].dropoff")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [None, "V-2", 3, [drop()]], ids=repr)
def test_drop_must_be_an_object(alice, api, value):
    body = batch(group(drop("V-1"), drop("V-2"), drop("V-3")))
    response = api.bulk(edit(body, ("orders", 0, "dropoff", 2), value), alice.sandbox_key)
    assert_validation_error(response, "orders[0].dropoff[2]")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [DELETE, None, "Recipient", 1, [{"name": "R"}]], ids=repr)
def test_recipient_must_be_an_object(alice, api, value):
    response = api.bulk(edit(one_drop_batch(), RECIPIENT, value), alice.sandbox_key)
    assert_validation_error(response, "orders[0].dropoff[0].dropoff")
    assert_nothing_stored()


# --- fields of drops and pickups ----------------------------------------------------------


@pytest.mark.parametrize("value", [DELETE, None, "", "  ", 12, ["C-1"], "x" * 101], ids=repr)
def test_client_order_id_must_be_a_non_empty_string_of_at_most_100(alice, api, value):
    response = api.bulk(
        edit(one_drop_batch(), (*DROP, "client_order_id"), value), alice.sandbox_key
    )
    assert_validation_error(response, "orders[0].dropoff[0].client_order_id")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [DELETE, None, "", " ", 5, {"first": "A"}, "n" * 201], ids=repr)
def test_pickup_name_must_be_a_non_empty_string_of_at_most_200(alice, api, value):
    response = api.bulk(edit(one_drop_batch(), (*PICKUP, "name"), value), alice.sandbox_key)
    assert_validation_error(response, "orders[0].pickup.name")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [DELETE, None, "", " ", 5, ["A"], "n" * 201], ids=repr)
def test_recipient_name_must_be_a_non_empty_string_of_at_most_200(alice, api, value):
    response = api.bulk(edit(one_drop_batch(), (*RECIPIENT, "name"), value), alice.sandbox_key)
    assert_validation_error(response, "orders[0].dropoff[0].dropoff.name")
    assert_nothing_stored()


@pytest.mark.parametrize("value", [12, 1.5, True, ["WB-1"], {"id": "WB-1"}], ids=repr)
def test_external_waybill_must_be_a_string(alice, api, value):
    response = api.bulk(
        edit(one_drop_batch(), (*DROP, "external_waybill"), value), alice.sandbox_key
    )
    assert_validation_error(response, "orders[0].dropoff[0].external_waybill")
    assert_nothing_stored()


@pytest.mark.parametrize(
    "value",
    [
        "tomorrow",
        "",
        "2026-13-01T10:00:00Z",
        "23/11/2026 10:00",
        "2026-11-23T10:00:00",  # no zone
        "2026-11-23 10:00",  # no zone
        1795410000,
        ["2026-11-23T10:00:00Z"],
        "2026-11-23T10:00:00Z\x00garbage",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:00:00-05:00",  # after year 9999 in UTC
        "9999-12-31T20:00:00Z",  # after year 9999 in Phnom Penh
    ],
    ids=repr,
)
def test_pickup_scheduled_at_must_be_iso_8601_with_a_zone(alice, api, value):
    response = api.bulk(
        edit(one_drop_batch(), (*PICKUP, "pickup_scheduled_at"), value), alice.sandbox_key
    )
    assert_validation_error(response, "orders[0].pickup.pickup_scheduled_at")
    assert_nothing_stored()


@pytest.mark.parametrize(
    ("where", "path"),
    [(PICKUP, "orders[0].pickup.address"), (RECIPIENT, "orders[0].dropoff[0].dropoff.address")],
)
@pytest.mark.parametrize("value", ["Royal Palace, Phnom Penh", 5, ["Royal Palace"]], ids=repr)
def test_address_must_be_an_object(alice, api, where, path, value):
    response = api.bulk(edit(one_drop_batch(), (*where, "address"), value), alice.sandbox_key)
    assert_validation_error(response, path)
    assert_nothing_stored()


@pytest.mark.parametrize(
    ("where", "path"),
    [(PICKUP, "orders[0].pickup.address"), (RECIPIENT, "orders[0].dropoff[0].dropoff.address")],
)
@pytest.mark.parametrize("value", [7, None, ["Phnom Penh"]], ids=repr)
def test_address_parts_must_be_strings(alice, api, where, path, value):
    address = {**ROYAL_PALACE, "city": value}
    response = api.bulk(edit(one_drop_batch(), (*where, "address"), address), alice.sandbox_key)
    assert_validation_error(response, f"{path}.city")
    assert_nothing_stored()


# --- all errors at once ---------------------------------------------------------------------


def test_every_shape_error_is_listed_with_its_path(alice, api):
    body = {
        "client_batch_id": "",
        "orders": [
            {
                "pickup": pickup(name=""),
                "dropoff": [drop("OK-1"), {"dropoff": {"phone": "+85512345679"}}],
            },
            {"pickup": "nowhere", "dropoff": []},
            {
                "pickup": pickup(pickup_scheduled_at="soon", address="Central Market"),
                "dropoff": [
                    drop("OK-2"),
                    drop("OK-3", waybill=None) | {"external_waybill": 99},
                    drop("x" * 101),
                    "not a drop",
                    {"client_order_id": "OK-4", "dropoff": None},
                ],
            },
        ],
    }
    response = api.bulk(body, alice.sandbox_key)
    assert_validation_error(
        response,
        "client_batch_id",
        "orders[0].pickup.name",
        "orders[0].dropoff[1].client_order_id",
        "orders[0].dropoff[1].dropoff.name",
        "orders[1].pickup",
        "orders[1].dropoff",
        "orders[2].pickup.address",
        "orders[2].pickup.pickup_scheduled_at",
        "orders[2].dropoff[1].external_waybill",
        "orders[2].dropoff[2].client_order_id",
        "orders[2].dropoff[3]",
        "orders[2].dropoff[4].dropoff",
    )
    assert_nothing_stored()


def test_valid_drops_are_not_created_when_another_drop_is_malformed(open_for_business, alice, api):
    body = batch(group(drop("V-1"), drop("V-2")), group(drop("V-3"), drop("V-4")))
    body = edit(body, ("orders", 1, "dropoff", 1, "client_order_id"), "")
    response = api.bulk(body, alice.sandbox_key)
    assert_validation_error(response, "orders[1].dropoff[1].client_order_id")
    assert_nothing_stored()


def test_longest_allowed_values_are_accepted(open_for_business, alice, api):
    body = batch(group(drop("c" * 100, name="r" * 200), name="p" * 200), client_batch_id="b" * 100)
    response = api.bulk(body, alice.sandbox_key)
    assert response.status_code == 200, response.content
    assert response.json()["data"]["counts"]["accepted"] == 1
    assert Drop.objects.get().client_order_id == "c" * 100
    assert Batch.objects.get().client_batch_id == "b" * 100


# --- MAX_DROPS_PER_BATCH --------------------------------------------------------------------


def test_more_drops_than_the_batch_limit_is_400(alice, api, settings):
    settings.MAX_DROPS_PER_BATCH = 3
    body = batch(group(drop(), drop()), group(drop(), drop()))
    response = api.bulk(body, alice.sandbox_key)
    details = assert_validation_error(response, "orders")
    assert "3" in details[0]["message"]
    assert_nothing_stored()


def test_exactly_the_batch_limit_is_accepted(open_for_business, alice, api, settings):
    settings.MAX_DROPS_PER_BATCH = 3
    body = batch(group(drop(), drop()), group(drop()))
    response = api.bulk(body, alice.sandbox_key)
    assert response.status_code == 200, response.content
    assert response.json()["data"]["counts"] == {"total": 3, "accepted": 3, "rejected": 0}
    assert Drop.objects.count() == 3


def test_5001_drops_is_over_the_default_limit(alice, api):
    response = api.bulk(many_drops(5001), alice.sandbox_key)
    details = assert_validation_error(response, "orders")
    assert "5000" in details[0]["message"]
    assert_nothing_stored()


# --- Idempotency-Key ------------------------------------------------------------------------


def test_missing_idempotency_key_is_400(alice, api):
    response = api.post("/orders/bulk", one_drop_batch(), alice.sandbox_key)
    assert_error(response, 400, "IDEMPOTENCY_KEY_MISSING")
    assert_nothing_stored()


@pytest.mark.parametrize("value", ["", "   "])
def test_blank_idempotency_key_counts_as_missing(alice, api, value):
    response = api.bulk(one_drop_batch(), alice.sandbox_key, headers={"Idempotency-Key": value})
    assert_error(response, 400, "IDEMPOTENCY_KEY_MISSING")
    assert_nothing_stored()


@pytest.mark.parametrize("value", ["batch-1", "g" * 32, "x" * 300])
def test_idempotency_key_that_is_not_a_uuid_is_400(alice, api, value):
    response = api.bulk(one_drop_batch(), alice.sandbox_key, idempotency_key=value)
    assert_error(response, 400, "IDEMPOTENCY_KEY_INVALID")
    assert_nothing_stored()


def test_a_rejected_request_leaves_its_idempotency_key_free(open_for_business, alice, api):
    key = str(uuid.uuid4())
    bad = api.bulk(edit(one_drop_batch(), ("client_batch_id",), ""), alice.sandbox_key, key)
    assert_validation_error(bad, "client_batch_id")

    good = api.bulk(one_drop_batch(), alice.sandbox_key, key)
    assert good.status_code == 200, good.content
    assert "Idempotent-Replayed" not in good
    assert Drop.objects.get().client_order_id == "V-1"
    assert IdempotencyRecord.objects.get().key == uuid.UUID(key)


def test_every_bad_address_part_is_listed(alice, api):
    address = {"complete_address": 5, "city": "Phnom Penh", "country": ["KH"]}
    response = api.bulk(edit(one_drop_batch(), (*RECIPIENT, "address"), address), alice.sandbox_key)
    assert_validation_error(
        response,
        "orders[0].dropoff[0].dropoff.address.complete_address",
        "orders[0].dropoff[0].dropoff.address.country",
    )
    assert_nothing_stored()
