"""Idempotency of POST /orders/bulk (docs/contract.md §4): replays, 409s, scopes and the purge."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from io import StringIO

import orjson
import pytest
from django.core.management import call_command

from accounts.services import create_api_key
from billing.models import LedgerEntry, Wallet
from orders.models import Batch, BatchStatus, DeliveryEvent, Drop, IdempotencyRecord, Order
from tests.factories import batch, drop, group
from tests.fixtures import OPEN_HOURS

# Angkor Wat: a valid pin, but outside every service area.
SIEM_REAP = {"lat": 13.4125, "long": 103.8670}


def stored_rows() -> dict[str, int]:
    """How many rows a batch can leave behind, by model."""
    models = (Batch, Order, Drop, DeliveryEvent, IdempotencyRecord, LedgerEntry)
    return {model.__name__: model.objects.count() for model in models}


def sandbox_balance(tenant):
    return Wallet.objects.get(business=tenant.business, environment="sandbox").balance


def reordered(value):
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {k: reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(v) for v in value]
    return value


def post_raw(api, raw: bytes, key: str, idempotency_key: str):
    return api.post("/orders/bulk", raw, key, {"Idempotency-Key": idempotency_key}, raw=True)


def test_same_key_and_body_replays_the_stored_response_byte_for_byte(open_for_business, alice, api):
    body = batch(group(drop("R-1"), drop("R-2")))
    key = str(uuid.uuid4())
    first = api.bulk(body, alice.sandbox_key, key)
    assert first.status_code == 200, first.content
    assert "Idempotent-Replayed" not in first.headers
    rows, balance = stored_rows(), sandbox_balance(alice)

    open_for_business.shift(timedelta(seconds=5))  # a replay later must not re-render the time
    second = api.bulk(body, alice.sandbox_key, key)

    assert second.status_code == 200
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content == first.content
    assert stored_rows() == rows
    assert sandbox_balance(alice) == balance


def test_key_order_and_whitespace_do_not_change_the_fingerprint(open_for_business, alice, api):
    body = batch(group(drop("F-1", waybill="WB-1"), drop("F-2", name="សុខ ស្រីពៅ")))
    compact = orjson.dumps(body)  # UTF-8, no spaces, keys as built
    # Reversed keys, odd spacing, and non-ASCII text as \uXXXX escapes.
    spaced = json.dumps(reordered(body), indent=4, separators=(" ,  ", " :  ")).encode()
    assert b"\\u" in spaced and b"\\u" not in compact
    assert json.loads(spaced) == body  # the same value in other bytes
    key = str(uuid.uuid4())

    first = post_raw(api, compact, alice.sandbox_key, key)
    second = post_raw(api, spaced, alice.sandbox_key, key)

    assert first.status_code == second.status_code == 200, second.content
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content == first.content
    assert Batch.objects.count() == 1
    assert Drop.objects.count() == 2


def test_reused_key_with_other_body_is_409_and_stores_nothing(open_for_business, alice, api):
    key = str(uuid.uuid4())
    first = api.bulk(batch(group(drop("K-1"))), alice.sandbox_key, key)
    assert first.status_code == 200, first.content
    rows, balance = stored_rows(), sandbox_balance(alice)

    reused = api.bulk(batch(group(drop("K-2"))), alice.sandbox_key, key)

    assert reused.status_code == 409
    error = reused.json()["error"]
    assert error["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert "Idempotent-Replayed" not in reused.headers
    assert stored_rows() == rows
    assert sandbox_balance(alice) == balance
    assert not Drop.objects.filter(client_order_id="K-2").exists()


def test_a_key_changed_in_one_field_deep_inside_is_another_body(open_for_business, alice, api):
    body = batch(group(drop("D-1"), drop("D-2")))
    key = str(uuid.uuid4())
    assert api.bulk(body, alice.sandbox_key, key).status_code == 200
    body["orders"][0]["dropoff"][1]["dropoff"]["name"] = "Someone else"

    reused = api.bulk(body, alice.sandbox_key, key)

    assert reused.status_code == 409
    assert reused.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_the_key_is_compared_as_a_uuid_whatever_its_spelling(open_for_business, alice, api):
    body = batch(group(drop("UP-1")))
    key = uuid.uuid4()
    first = api.bulk(body, alice.sandbox_key, str(key))

    second = api.bulk(body, alice.sandbox_key, str(key).upper())

    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content == first.content
    assert IdempotencyRecord.objects.get().key == key


def test_the_key_is_shared_by_every_api_key_of_the_environment(open_for_business, alice, api):
    other_sandbox_key = create_api_key(business=alice.business, environment="sandbox").plaintext
    body = batch(group(drop("AK-1")))
    key = str(uuid.uuid4())
    first = api.bulk(body, alice.sandbox_key, key)

    second = api.bulk(body, other_sandbox_key, key)
    other_body = api.bulk(batch(group(drop("AK-2"))), other_sandbox_key, key)

    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content == first.content
    assert other_body.status_code == 409
    assert other_body.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert Batch.objects.count() == 1


def test_the_same_key_is_independent_for_another_business(open_for_business, alice, bob, api):
    key = str(uuid.uuid4())
    mine = api.bulk(batch(group(drop("S-1"))), alice.sandbox_key, key)
    theirs = api.bulk(batch(group(drop("S-2"))), bob.sandbox_key, key)

    assert mine.status_code == theirs.status_code == 200, theirs.content
    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.json()["data"]["counts"]["accepted"] == 1
    assert Batch.objects.filter(business=bob.business).count() == 1
    assert IdempotencyRecord.objects.filter(key=key).count() == 2


def test_the_same_key_is_independent_in_the_other_environment(open_for_business, alice, api):
    key = str(uuid.uuid4())
    sandbox = api.bulk(batch(group(drop("E-1")), client_batch_id="B-E"), alice.sandbox_key, key)
    live = api.bulk(batch(group(drop("E-2")), client_batch_id="B-E"), alice.live_key, key)

    assert sandbox.status_code == live.status_code == 200, live.content
    assert "Idempotent-Replayed" not in live.headers
    assert live.json()["data"]["environment"] == "live"
    assert live.json()["data"]["counts"]["accepted"] == 1
    assert sorted(Batch.objects.values_list("environment", flat=True)) == ["live", "sandbox"]
    assert sorted(
        IdempotencyRecord.objects.filter(key=key).values_list("environment", flat=True)
    ) == ["live", "sandbox"]


def test_reused_client_batch_id_with_the_same_body_under_another_key_replays(
    open_for_business, alice, api
):
    body = batch(group(drop("CB-1")))
    first = api.bulk(body, alice.sandbox_key, str(uuid.uuid4()))
    assert first.status_code == 200, first.content
    rows, balance = stored_rows(), sandbox_balance(alice)
    other_key = str(uuid.uuid4())

    second = api.bulk(body, alice.sandbox_key, other_key)

    assert second.status_code == 200
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content == first.content
    assert sandbox_balance(alice) == balance
    # The only new row is the second key's record, pointing at the first batch.
    assert stored_rows() == {**rows, "IdempotencyRecord": rows["IdempotencyRecord"] + 1}
    assert IdempotencyRecord.objects.get(key=other_key).batch == Batch.objects.get()
    # ...so that key now replays on its own too.
    third = api.bulk(body, alice.sandbox_key, other_key)
    assert third.headers["Idempotent-Replayed"] == "true"
    assert third.content == first.content


def test_reused_client_batch_id_with_another_body_is_409(open_for_business, alice, api):
    first = api.bulk(batch(group(drop("CB-2")), client_batch_id="B-1"), alice.sandbox_key)
    assert first.status_code == 200, first.content
    rows, balance = stored_rows(), sandbox_balance(alice)
    other_key = str(uuid.uuid4())

    reused = api.bulk(
        batch(group(drop("CB-3")), client_batch_id="B-1"), alice.sandbox_key, other_key
    )

    assert reused.status_code == 409
    assert reused.json()["error"]["code"] == "CLIENT_BATCH_ID_REUSED"
    assert stored_rows() == rows
    assert sandbox_balance(alice) == balance
    assert not IdempotencyRecord.objects.filter(key=other_key).exists()


def test_a_400_is_not_stored_and_the_same_key_is_then_processed_fresh(
    open_for_business, alice, api
):
    key = str(uuid.uuid4())
    body = batch(group(drop("V-1")))
    del body["orders"][0]["dropoff"][0]["client_order_id"]

    invalid = api.bulk(body, alice.sandbox_key, key)

    assert invalid.status_code == 400
    assert invalid.json()["error"]["code"] == "VALIDATION_ERROR"
    assert not IdempotencyRecord.objects.exists()
    assert not Batch.objects.exists()

    body["orders"][0]["dropoff"][0]["client_order_id"] = "V-1"
    fixed = api.bulk(body, alice.sandbox_key, key)

    assert fixed.status_code == 200, fixed.content
    assert "Idempotent-Replayed" not in fixed.headers
    assert fixed.json()["data"]["counts"]["accepted"] == 1
    assert IdempotencyRecord.objects.get().key == uuid.UUID(key)


def test_a_failed_batch_is_stored_and_replayed(open_for_business, alice, api):
    body = batch(group(drop("X-1", **SIEM_REAP), drop("X-2", **SIEM_REAP)))
    key = str(uuid.uuid4())
    first = api.bulk(body, alice.sandbox_key, key)
    assert first.status_code == 200, first.content
    data = first.json()["data"]
    assert data["status"] == "FAILED"
    assert data["counts"] == {"total": 2, "accepted": 0, "rejected": 2}

    second = api.bulk(body, alice.sandbox_key, key)

    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content == first.content
    stored = Batch.objects.get()
    assert stored.status == BatchStatus.FAILED
    assert IdempotencyRecord.objects.get().batch == stored
    assert not Drop.objects.exists()


def test_replays_never_charge_the_wallet_twice(open_for_business, alice, api):
    start = sandbox_balance(alice)
    body = batch(group(drop("M-1"), drop("M-2"), drop("M-3")))
    key = str(uuid.uuid4())
    first = api.bulk(body, alice.sandbox_key, key)
    charged = sandbox_balance(alice)
    debits = LedgerEntry.objects.count()
    assert charged < start
    assert first.json()["data"]["counts"]["accepted"] == 3

    for _ in range(3):
        api.bulk(body, alice.sandbox_key, key)  # same key
        api.bulk(body, alice.sandbox_key)  # same client_batch_id, fresh key

    assert sandbox_balance(alice) == charged
    assert LedgerEntry.objects.count() == debits
    assert Drop.objects.count() == 3


def test_purge_removes_only_records_older_than_the_ttl(open_for_business, alice, api, settings):
    assert settings.IDEMPOTENCY_TTL_HOURS == 24
    old_key, fresh_key = str(uuid.uuid4()), str(uuid.uuid4())
    api.bulk(batch(), alice.sandbox_key, old_key)
    open_for_business.move_to(OPEN_HOURS + timedelta(hours=4))
    api.bulk(batch(), alice.sandbox_key, fresh_key)

    open_for_business.move_to(OPEN_HOURS + timedelta(hours=23))
    call_command("purge_idempotency_keys", stdout=StringIO())
    assert IdempotencyRecord.objects.count() == 2  # the old one is 23 hours old: kept

    open_for_business.move_to(OPEN_HOURS + timedelta(hours=24, minutes=1))
    call_command("purge_idempotency_keys", stdout=StringIO())

    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == [uuid.UUID(fresh_key)]
    assert Batch.objects.count() == 2  # the batches themselves stay


def test_purge_follows_the_ttl_setting(open_for_business, alice, api, settings):
    settings.IDEMPOTENCY_TTL_HOURS = 2
    api.bulk(batch(), alice.sandbox_key)
    open_for_business.move_to(OPEN_HOURS + timedelta(hours=1))
    call_command("purge_idempotency_keys", stdout=StringIO())
    assert IdempotencyRecord.objects.count() == 1

    open_for_business.move_to(OPEN_HOURS + timedelta(hours=2, minutes=1))
    call_command("purge_idempotency_keys", stdout=StringIO())
    assert not IdempotencyRecord.objects.exists()


@pytest.mark.parametrize("body_changes", [False, True], ids=["same-body", "other-body"])
def test_after_purge_the_same_key_meets_the_client_batch_id(
    open_for_business, alice, api, body_changes
):
    body = batch(group(drop("P-1")), client_batch_id="B-purge")
    key = str(uuid.uuid4())
    first = api.bulk(body, alice.sandbox_key, key)
    assert first.status_code == 200, first.content
    open_for_business.move_to(OPEN_HOURS + timedelta(hours=25))
    call_command("purge_idempotency_keys", stdout=StringIO())
    assert not IdempotencyRecord.objects.exists()
    rows, balance = stored_rows(), sandbox_balance(alice)
    if body_changes:
        body["orders"][0]["dropoff"][0]["client_order_id"] = "P-2"

    again = api.bulk(body, alice.sandbox_key, key)

    assert sandbox_balance(alice) == balance
    if body_changes:
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "CLIENT_BATCH_ID_REUSED"
        assert stored_rows() == rows
    else:
        assert again.status_code == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.content == first.content
        assert stored_rows() == {**rows, "IdempotencyRecord": 1}
        assert IdempotencyRecord.objects.get().batch == Batch.objects.get()


# --- A FAILED batch reserves nothing (docs/contract.md §4) ------------------------------------


def test_a_failed_batch_frees_its_client_batch_id_for_a_new_key(open_for_business, alice, api):
    # The README's own trap: sent after hours, every drop OUTSIDE_OPERATING_HOURS.
    body = batch(group(drop("F-1")), client_batch_id="evening")
    open_for_business.move_to(OPEN_HOURS + timedelta(hours=12))  # 22:00 in Phnom Penh
    failed_key = str(uuid.uuid4())
    failed = api.bulk(body, alice.sandbox_key, failed_key)
    assert failed.json()["data"]["status"] == "FAILED"
    open_for_business.move_to(OPEN_HOURS + timedelta(days=1))

    fresh = api.bulk(body, alice.sandbox_key)

    assert fresh.status_code == 200, fresh.content
    assert "Idempotent-Replayed" not in fresh.headers
    data = fresh.json()["data"]
    assert data["status"] == "COMPLETED"
    assert data["batch_id"] != failed.json()["data"]["batch_id"]
    assert Drop.objects.get().client_order_id == "F-1"
    # The failed batch's own key still replays it, and its poll_url still answers.
    again = api.bulk(body, alice.sandbox_key, failed_key)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == failed.content
    poll = api.get(f"/batches/{failed.json()['data']['batch_id']}", alice.sandbox_key)
    assert poll.status_code == 200
    assert poll.json()["data"]["status"] == "FAILED"


def test_a_failed_batch_frees_its_id_for_another_body_too(open_for_business, alice, api):
    failed = api.bulk(
        batch(group(drop("X-1", **SIEM_REAP)), client_batch_id="B"), alice.sandbox_key
    )
    assert failed.json()["data"]["status"] == "FAILED"

    other = api.bulk(batch(group(drop("X-2")), client_batch_id="B"), alice.sandbox_key)

    assert other.status_code == 200, other.content
    assert other.json()["data"]["status"] == "COMPLETED"
    assert Batch.objects.filter(client_batch_id="B").count() == 2


def test_several_failed_batches_may_share_an_id_but_one_live_batch_holds_it(
    open_for_business, alice, api
):
    for n in range(3):
        failed = api.bulk(
            batch(group(drop(f"X-{n}", **SIEM_REAP)), client_batch_id="B"), alice.sandbox_key
        )
        assert failed.json()["data"]["status"] == "FAILED"
    accepted = api.bulk(batch(group(drop("OK-1")), client_batch_id="B"), alice.sandbox_key)
    assert accepted.json()["data"]["status"] == "COMPLETED"

    again = api.bulk(batch(group(drop("OK-2")), client_batch_id="B"), alice.sandbox_key)

    assert again.status_code == 409
    assert again.json()["error"]["code"] == "CLIENT_BATCH_ID_REUSED"
    assert Batch.objects.filter(client_batch_id="B").count() == 4


def test_a_partial_batch_keeps_its_client_batch_id(open_for_business, alice, api):
    body = batch(group(drop("P-1"), drop("P-2", **SIEM_REAP)), client_batch_id="P")
    first = api.bulk(body, alice.sandbox_key)
    assert first.json()["data"]["status"] == "PARTIAL"

    same_body = api.bulk(body, alice.sandbox_key)
    other_body = api.bulk(batch(group(drop("P-3")), client_batch_id="P"), alice.sandbox_key)

    assert same_body.headers["Idempotent-Replayed"] == "true"
    assert same_body.content == first.content
    assert other_body.status_code == 409
