"""A pickup_scheduled_at with an offset ISO 8601 allows but PostgreSQL does not store (beyond
±15:59) is read as its UTC moment in the one shared parser (orders/inputs.py), so bulk, quote and
the dashboard's CSV upload all take it: never a 500."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orders.models import Order
from tests.dashboard.test_csv_upload import csv_bytes, order_row, results, upload
from tests.factories import batch, drop, group

# 2026-11-24 12:00 in Phnom Penh (opening hours), the day after the suite's clock.
MOMENT = datetime(2026, 11, 24, 5, 0, tzinfo=UTC)
OFFSETS = {
    "+23:59": "2026-11-25T04:59:00+23:59",
    "-16:00": "2026-11-23T13:00:00-16:00",
    "+16:00": "2026-11-24T21:00:00+16:00",
    "-23:59:59": "2026-11-23T05:00:01-23:59:59",
}


def scheduled(at: str) -> dict:
    body = batch(group(drop("S-1")))
    body["orders"][0]["pickup"]["pickup_scheduled_at"] = at
    return body


@pytest.mark.parametrize("at", OFFSETS.values(), ids=OFFSETS.keys())
def test_bulk_stores_the_moment_in_utc(open_for_business, alice, api, at):
    response = api.bulk(scheduled(at), alice.sandbox_key)

    assert response.status_code == 200, response.content
    [entry] = response.json()["data"]["orders"]
    assert entry["status"] == "accepted", entry
    assert Order.objects.get().pickup_scheduled_at == MOMENT
    [tracked] = api.track(["S-1"], alice.sandbox_key).json()["data"]["orders"]
    assert tracked["status"] == "SCHEDULED"


@pytest.mark.parametrize("at", OFFSETS.values(), ids=OFFSETS.keys())
def test_quote_agrees_with_bulk(open_for_business, alice, api, at):
    response = api.post("/orders/quote", scheduled(at), alice.sandbox_key)

    assert response.status_code == 200, response.content
    assert response.json()["data"]["orders"][0]["status"] == "quotable"


def test_the_csv_upload_takes_such_an_offset_too(open_for_business, alice, alice_web):
    data = csv_bytes(order_row("CSV-1", pickup_scheduled_at=OFFSETS["+23:59"]))

    response = upload(alice_web, data)

    assert response.status_code == 200
    assert [(row, status) for row, status, _ in results(response)] == [(2, "accepted")]
    assert Order.objects.get().pickup_scheduled_at == MOMENT


def test_a_moment_past_the_years_we_take_is_still_a_400_naming_the_field(alice, api):
    response = api.bulk(scheduled("9999-12-31T23:00:00-23:59"), alice.sandbox_key)

    assert response.status_code == 400
    [detail] = response.json()["error"]["details"]
    assert detail["field"] == "orders[0].pickup.pickup_scheduled_at"
