"""POST /orders/quote and quote_id in a bulk body (docs/contract.md §12): a quote is the batch's
decisions without its writes, and a bulk body that names it pays its prices."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from billing.models import LedgerEntry, PricingPlan
from billing.services import sandbox_top_up
from orders.models import Batch, Drop, Quote
from orders.tasks import purge_expired_quotes
from tests.factories import batch, drop, group
from tests.fixtures import OPEN_HOURS
from tests.helpers import ROYAL_PALACE, assert_error, run_concurrently

SIEM_REAP = {"lat": 13.4125, "long": 103.8670}
FAR = {"lat": 11.65, "long": 104.99}  # inside the area, ~12 km from the shop


def quote(api, tenant, body):
    response = api.post("/orders/quote", body, tenant.sandbox_key)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def mixed_body(client_batch_id="Q-1"):
    """Every kind of outcome: priced, out of area, a duplicate, a bad phone, an address."""
    address_only = drop("A-5")
    address_only["dropoff"] = {"name": "R", "phone": "+85512345679", "address": ROYAL_PALACE}
    return batch(
        group(
            drop("A-1"),
            drop("A-2", **SIEM_REAP),
            drop("A-1"),
            drop("A-3", phone="12"),
            drop("A-4", **FAR),
            address_only,
        ),
        client_batch_id=client_batch_id,
    )


def test_a_quote_says_what_bulk_then_does_and_writes_nothing_else(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(sandbox_balance="10.00")  # room for some drops, not all
    body = mixed_body()

    quoted = quote(api, tenant, body)

    assert Drop.objects.count() == 0 and Batch.objects.count() == 0
    assert not LedgerEntry.objects.filter(kind="ORDER_DEBIT").exists()
    assert Quote.objects.count() == 1
    done = api.bulk(body, tenant.sandbox_key).json()["data"]["orders"]
    assert [(q["status"], q.get("price"), q.get("failure_reason"), q.get("message")) for q in
            quoted["orders"]] == [
        ("quotable" if d["status"] == "accepted" else "rejected", d.get("price"),
         d.get("failure_reason"), d.get("message"))
        for d in done
    ]  # fmt: skip
    reasons = [q.get("failure_reason") for q in quoted["orders"]]
    assert reasons == [
        None,
        "OUT_OF_SERVICE_AREA",
        "DUPLICATE_CLIENT_ORDER_ID",
        "INVALID_PHONE",
        "INSUFFICIENT_BALANCE",
        None,
    ]
    assert quoted["orders"][5]["resolved_pin"] == done[5]["resolved_pin"]
    assert quoted["counts"] == {"total": 6, "quotable": 2, "rejected": 4}
    assert Decimal(quoted["total_price"]) == sum(
        Decimal(q["price"]) for q in quoted["orders"] if q["status"] == "quotable"
    )
    assert quoted["environment"] == "sandbox" and quoted["currency"] == "USD"


def test_a_quote_refuses_what_bulk_refuses_with_400(open_for_business, alice, api):
    response = api.post("/orders/quote", {"orders": []}, alice.sandbox_key)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert {d["field"] for d in error["details"]} == {"client_batch_id", "orders"}
    assert not Quote.objects.exists()


def test_quoted_prices_are_charged_even_after_the_plan_changes(open_for_business, alice, api):
    body = batch(group(drop("P-1", **FAR)), client_batch_id="P")
    quoted = quote(api, alice, body)
    PricingPlan.objects.filter(pk=alice.business.pricing_plan_id).update(base_fee="9.00")

    response = api.bulk({**body, "quote_id": quoted["quote_id"]}, alice.sandbox_key)

    [entry] = response.json()["data"]["orders"]
    assert entry["price"] == quoted["orders"][0]["price"]
    assert Drop.objects.get().price == Decimal(quoted["orders"][0]["price"])
    assert Quote.objects.get().batch == Batch.objects.get()
    # Without the quote the new plan applies.
    other = api.bulk(batch(group(drop("P-2", **FAR))), alice.sandbox_key).json()["data"]
    assert Decimal(other["orders"][0]["price"]) > Decimal(entry["price"])


def test_an_expired_quote_is_409(open_for_business, alice, api):
    body = batch(group(drop("E-1")), client_batch_id="E")
    quoted = quote(api, alice, body)
    open_for_business.move_to(OPEN_HOURS + timedelta(minutes=16))

    response = api.bulk({**body, "quote_id": quoted["quote_id"]}, alice.sandbox_key)

    assert_error(response, 409, "QUOTE_EXPIRED")
    assert not Drop.objects.exists() and not Batch.objects.exists()


def test_a_quote_of_another_body_is_409_mismatch(open_for_business, alice, api):
    quoted = quote(api, alice, batch(group(drop("M-1")), client_batch_id="M"))
    other = batch(group(drop("M-2")), client_batch_id="M")

    response = api.bulk({**other, "quote_id": quoted["quote_id"]}, alice.sandbox_key)

    assert_error(response, 409, "QUOTE_MISMATCH")
    assert not Batch.objects.exists()


@pytest.mark.parametrize(
    "quote_id", ["3f9d2c1e-8b7a-4c6d-9e5f-0a1b2c3d4e5f", "not-a-uuid", "bob's"]
)
def test_an_unknown_or_foreign_quote_is_404(open_for_business, alice, bob, api, quote_id):
    body = batch(group(drop("U-1")), client_batch_id="U")
    if quote_id == "bob's":
        quote_id = quote(api, bob, body)["quote_id"]
    response = api.bulk({**body, "quote_id": quote_id}, alice.sandbox_key)
    assert_error(response, 404, "NOT_FOUND")


def test_a_quote_id_that_is_not_a_string_is_400(open_for_business, alice, api):
    response = api.bulk({**batch(), "quote_id": 7}, alice.sandbox_key)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"] == [{"field": "quote_id", "message": "Must be a string."}]


def test_a_failed_batch_does_not_use_up_its_quote(open_for_business, make_tenant, api):
    tenant = make_tenant(sandbox_balance="3.00")  # one drop's worth
    body = batch(group(drop("F-1")), client_batch_id="F")
    quoted = quote(api, tenant, body)
    api.bulk(batch(group(drop("OTHER"))), tenant.sandbox_key)  # spends the wallet meanwhile
    with_quote = {**body, "quote_id": quoted["quote_id"]}
    failed = api.bulk(with_quote, tenant.sandbox_key).json()["data"]
    assert failed["orders"][0]["failure_reason"] == "INSUFFICIENT_BALANCE"
    assert Quote.objects.get().batch is None

    sandbox_top_up(business=tenant.business, amount=Decimal("5.00"))
    again = api.bulk(with_quote, tenant.sandbox_key).json()["data"]

    assert again["status"] == "COMPLETED"
    assert again["orders"][0]["price"] == quoted["orders"][0]["price"]
    assert Quote.objects.get().batch_id == uuid.UUID(again["batch_id"])


@pytest.mark.django_db(transaction=True)
def test_one_quote_backs_one_batch_under_concurrency(open_for_business, alice):
    from tests.fixtures import Api

    body = batch(group(drop("C-1"), drop("C-2")), client_batch_id="C")
    quoted = quote(Api(), alice, body)
    with_quote = {**body, "quote_id": quoted["quote_id"]}

    responses = run_concurrently(8, lambda api, i: api.bulk(with_quote, alice.sandbox_key))

    assert [r.status_code for r in responses] == [200] * 8
    assert len({r.json()["data"]["batch_id"] for r in responses}) == 1
    assert Batch.objects.count() == 1 and Drop.objects.count() == 2
    assert Quote.objects.get().batch == Batch.objects.get()


def test_expired_quotes_are_purged(open_for_business, alice, api):
    quote(api, alice, batch())
    open_for_business.move_to(OPEN_HOURS + timedelta(minutes=5))
    quote(api, alice, batch())
    open_for_business.move_to(OPEN_HOURS + timedelta(minutes=16))

    assert purge_expired_quotes.call() == 1
    assert Quote.objects.count() == 1


def test_a_quote_that_backs_a_batch_is_409_quote_used_for_another(open_for_business, alice, api):
    body = batch(group(drop("Q-1")), client_batch_id="FIRST")
    quoted = quote(api, alice, body)
    first = api.bulk({**body, "quote_id": quoted["quote_id"]}, alice.sandbox_key)
    assert first.json()["data"]["status"] == "COMPLETED"

    # The same drops as a new batch, naming the quote the first one used.
    again = {**batch(group(drop("Q-2")), client_batch_id="SECOND"), "quote_id": quoted["quote_id"]}
    response = api.bulk(again, alice.sandbox_key)

    error = assert_error(response, 409, "QUOTE_USED")
    assert "already backs" in error["message"]
    assert Batch.objects.count() == 1 and Drop.objects.count() == 1
    # A retry of the batch that used it still replays, not a 409.
    replay = api.bulk({**body, "quote_id": quoted["quote_id"]}, alice.sandbox_key)
    assert replay.status_code == 200
    assert replay.json()["data"]["batch_id"] == first.json()["data"]["batch_id"]
