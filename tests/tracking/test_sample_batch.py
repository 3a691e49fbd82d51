"""docs/sample-batch.json, sent with a sandbox key, yields what docs/sandbox.md promises."""

from __future__ import annotations

import copy
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from billing.models import Wallet
from orders.decisions import Reason
from orders.models import Drop, DropStatus
from tests.factories import batch, drop, group
from tests.tracking.helpers import ledger_sum

SAMPLE = orjson.loads((Path(__file__).parents[2] / "docs" / "sample-batch.json").read_bytes())
ALL_REASONS = {r.name for r in Reason}
# In submission order: what each entry of the sample yields on a fresh sandbox account.
EXPECTED = [
    ("SAMPLE-ACCEPTED-1", "accepted"),
    ("SAMPLE-ACCEPTED-ADDRESS", "accepted"),
    ("SAMPLE-INVALID-PHONE", "INVALID_PHONE"),
    ("SAMPLE-INVALID-COORDINATES", "INVALID_COORDINATES"),
    ("SAMPLE-GEOCODE-FAILED", "GEOCODE_FAILED"),
    ("SAMPLE-OUT-OF-SERVICE-AREA", "OUT_OF_SERVICE_AREA"),
    ("SAMPLE-INVALID-TIME-WINDOW", "INVALID_TIME_WINDOW"),
    ("SAMPLE-PARCEL-TOO-LARGE", "PARCEL_TOO_LARGE"),
    ("SAMPLE-INVALID-COD", "INVALID_COD"),
    ("SAMPLE-ACCEPTED-1", "DUPLICATE_CLIENT_ORDER_ID"),
    ("SAMPLE-SCHEDULE-IN-PAST", "SCHEDULE_IN_PAST"),
    ("SAMPLE-OUTSIDE-OPERATING-HOURS", "OUTSIDE_OPERATING_HOURS"),
]
NIGHT = datetime(2026, 11, 23, 16, 30, tzinfo=UTC)  # 23:30 in Phnom Penh: the area is closed


def outcomes(response) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.content
    return [
        (o["client_order_id"], o.get("failure_reason", o["status"]))
        for o in response.json()["data"]["orders"]
    ]


def sandbox_wallet(tenant) -> Wallet:
    return Wallet.objects.get(business=tenant.business, environment="sandbox")


@pytest.mark.parametrize("hour", ["open", "night"])
def test_the_sample_yields_accepted_orders_and_every_reason_it_covers(
    open_for_business, alice, api, hour
):
    if hour == "night":
        open_for_business.move_to(NIGHT)  # every pickup is scheduled: any hour gives the same

    response = api.bulk(SAMPLE, alice.sandbox_key)

    assert outcomes(response) == EXPECTED
    data = response.json()["data"]
    assert data["environment"] == "sandbox"
    assert data["counts"] == {"total": 12, "accepted": 2, "rejected": 10}
    assert {reason for _, reason in EXPECTED} - {"accepted"} == ALL_REASONS - {
        "INSUFFICIENT_BALANCE"
    }
    by_id = {o["client_order_id"]: o for o in data["orders"][:2]}
    assert by_id["SAMPLE-ACCEPTED-ADDRESS"]["resolved_pin"] == {"lat": 11.5637, "long": 104.9311}
    assert by_id["SAMPLE-ACCEPTED-1"]["external_waybill"] == "WB-1"
    assert set(Drop.objects.values_list("client_order_id", "status", "environment")) == {
        ("SAMPLE-ACCEPTED-1", DropStatus.SCHEDULED, "sandbox"),
        ("SAMPLE-ACCEPTED-ADDRESS", DropStatus.SCHEDULED, "sandbox"),
    }
    wallet = sandbox_wallet(alice)
    charged = sum(Decimal(o["price"]) for o in by_id.values())
    assert wallet.balance == Decimal("100.00") - charged == ledger_sum(wallet)


def test_resending_the_sample_replays_its_client_batch_id(open_for_business, alice, api):
    first = api.bulk(SAMPLE, alice.sandbox_key)

    again = api.bulk(SAMPLE, alice.sandbox_key)  # a new Idempotency-Key, the same body

    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert Drop.objects.count() == 2


def test_a_new_client_batch_id_alone_meets_the_active_client_order_ids(
    open_for_business, alice, api
):
    api.bulk(SAMPLE, alice.sandbox_key)
    renamed = copy.deepcopy(SAMPLE)
    renamed["client_batch_id"] = "sandbox-sample-2"

    second = dict(outcomes(api.bulk(renamed, alice.sandbox_key))[:2])
    assert set(second.values()) == {"DUPLICATE_CLIENT_ORDER_ID"}

    renamed["client_batch_id"] = "sandbox-sample-3"
    for pickup_group in renamed["orders"]:
        for entry in pickup_group["dropoff"]:
            entry["client_order_id"] += "-B"
    third = outcomes(api.bulk(renamed, alice.sandbox_key))
    assert third == [(f"{i}-B", outcome) for i, outcome in EXPECTED]
    assert Drop.objects.count() == 4


def test_insufficient_balance_after_emptying_the_sandbox_wallet(open_for_business, alice, api):
    # As docs/sandbox.md tells it: 40 drops at 2.83, 35 accepted, 0.95 left.
    spending = batch(
        group(*[drop(f"SPEND-{i}") for i in range(40)], pickup_scheduled_at="2099-01-05T03:00:00Z")
    )
    spend = outcomes(api.bulk(spending, alice.sandbox_key))
    assert Counter(outcome for _, outcome in spend) == {"accepted": 35, "INSUFFICIENT_BALANCE": 5}
    assert [outcome for _, outcome in spend[35:]] == ["INSUFFICIENT_BALANCE"] * 5
    wallet = sandbox_wallet(alice)
    assert wallet.balance == Decimal("0.95")  # below any price: the base fee alone is 2.00

    sample = outcomes(api.bulk(SAMPLE, alice.sandbox_key))

    # Where the sample was accepted, the empty wallet now answers; the other reasons stay.
    # (The repeated SAMPLE-ACCEPTED-1 is no duplicate now: its first copy was not accepted.)
    were_accepted = ("accepted", "DUPLICATE_CLIENT_ORDER_ID")
    assert sample == [
        (i, "INSUFFICIENT_BALANCE" if outcome in were_accepted else outcome)
        for i, outcome in EXPECTED
    ]
    assert not Drop.objects.filter(client_order_id__startswith="SAMPLE-").exists()
    wallet.refresh_from_db()
    assert wallet.balance == ledger_sum(wallet)


def test_a_small_sandbox_balance_gives_insufficient_balance_at_once(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(sandbox_balance="1.00")

    sample = dict(outcomes(api.bulk(SAMPLE, tenant.sandbox_key))[:2])

    assert set(sample.values()) == {"INSUFFICIENT_BALANCE"}
    assert sandbox_wallet(tenant).balance == Decimal("1.00")
