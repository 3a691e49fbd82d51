"""POST /orders/cancel (docs/contract.md §5): cancel before pickup, refund to the cent, free the
id."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from billing.models import EntryKind, Invoice, InvoiceLine, LedgerEntry, Wallet
from billing.services import close_invoices
from orders.models import DeliveryEvent, Drop, DropStatus
from tests.factories import batch, drop, group
from tests.tracking.helpers import (
    THIS_AFTERNOON,
    advance,
    cancel,
    entries,
    error_code,
    history_of,
    ledger_sum,
    place,
)
from tracking import services
from tracking.services import cancel_orders

S = DropStatus
ROYAL_PALACE = {"lat": 11.5637, "long": 104.9311}
AEON_MALL = {"lat": 11.5486, "long": 104.9322}
AIRPORT = {"lat": 11.5466, "long": 104.8441}


def wallet_of(tenant, environment: str) -> Wallet:
    return Wallet.objects.get(business=tenant.business, environment=environment)


def refunds_of(drop_id) -> list[LedgerEntry]:
    return list(LedgerEntry.objects.filter(drop_id=drop_id, kind=EntryKind.REFUND))


def put_in(api, key: str, client_order_id: str, status: str) -> str:
    """A sandbox drop placed and driven to `status` through the API; returns its drop id."""
    scheduled = THIS_AFTERNOON if status == S.SCHEDULED else None
    drop_id = place(api, key, client_order_id, scheduled_at=scheduled)[client_order_id]
    if status == S.CANCELLED:
        entries(cancel(api, key, client_order_id))
    elif status not in (S.SCHEDULED, S.PENDING):
        entries(advance(api, key, client_order_id, to=status))
    assert Drop.objects.get(pk=drop_id).status == status
    return drop_id


@pytest.mark.parametrize("status", [S.SCHEDULED, S.PENDING, S.ASSIGNED])
def test_cancel_before_pickup_refunds_the_wallet_to_the_cent(open_for_business, alice, api, status):
    wallet = wallet_of(alice, "sandbox")
    start = wallet.balance
    drop_id = put_in(api, alice.sandbox_key, "C-1", status)
    price = Drop.objects.get(pk=drop_id).price

    entry = entries(cancel(api, alice.sandbox_key, "C-1"))["C-1"]

    assert "error" not in entry
    assert entry["status"] == S.CANCELLED == Drop.objects.get(pk=drop_id).status
    assert entry["events"][-1]["status"] == S.CANCELLED
    assert history_of(drop_id)[-1] == S.CANCELLED
    event = DeliveryEvent.objects.filter(drop_id=drop_id).latest("id")
    assert event.actor.startswith("api key ")
    [refund] = refunds_of(drop_id)
    assert refund.amount == price > 0
    wallet.refresh_from_db()
    assert wallet.balance == start == refund.balance_after
    assert wallet.balance == ledger_sum(wallet)


def test_cancelling_a_cancelled_drop_answers_it_cancelled_and_refunds_once(
    open_for_business, alice, api
):
    drop_id = put_in(api, alice.sandbox_key, "C-1", S.PENDING)
    wallet = wallet_of(alice, "sandbox")
    first = entries(cancel(api, alice.sandbox_key, "C-1"))["C-1"]
    balance, events = wallet_of(alice, "sandbox").balance, history_of(drop_id)

    again = entries(cancel(api, alice.sandbox_key, "C-1"))["C-1"]

    assert "error" not in first and "error" not in again  # a retry is answered as done
    assert again["status"] == S.CANCELLED == Drop.objects.get(pk=drop_id).status
    assert again["drop_id"] == first["drop_id"] == str(drop_id)
    assert history_of(drop_id) == events  # no second move
    assert len(refunds_of(drop_id)) == 1
    wallet.refresh_from_db()
    assert wallet.balance == balance == ledger_sum(wallet)


@pytest.mark.parametrize("status", [S.PICKED_UP, S.DELIVERED, S.FAILED])
def test_cancel_after_pickup_or_at_the_end_is_refused(open_for_business, alice, api, status):
    drop_id = put_in(api, alice.sandbox_key, "C-1", status)
    wallet = wallet_of(alice, "sandbox")
    balance, events = wallet.balance, history_of(drop_id)
    refunds = len(refunds_of(drop_id))

    entry = entries(cancel(api, alice.sandbox_key, "C-1"))["C-1"]

    assert error_code(entry) == "NOT_CANCELLABLE"
    assert status in entry["error"]["message"]
    assert entry["status"] == status == Drop.objects.get(pk=drop_id).status
    assert history_of(drop_id) == events
    assert len(refunds_of(drop_id)) == refunds  # one refund at most, from the first cancel
    wallet.refresh_from_db()
    assert wallet.balance == balance == ledger_sum(wallet)


def test_one_request_answers_per_identifier(open_for_business, alice, api):
    key = alice.sandbox_key
    put_in(api, key, "OK", S.PENDING)
    put_in(api, key, "LATE", S.PICKED_UP)

    response = cancel(api, key, "OK", "GHOST", "LATE", "OK")

    orders = response.json()["data"]["orders"]
    assert [o["client_order_id"] for o in orders] == ["OK", "GHOST", "LATE"]
    ok, ghost, late = orders
    assert ok["status"] == S.CANCELLED and "error" not in ok
    assert ghost["status"] == "NOT_FOUND" and error_code(ghost) == "NOT_FOUND"
    assert late["status"] == S.PICKED_UP and error_code(late) == "NOT_CANCELLABLE"
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND).count() == 1


def test_refunds_of_many_prices_are_exact_and_in_the_ledger(open_for_business, alice, api):
    wallet = wallet_of(alice, "live")
    start = wallet.balance
    body = batch(
        group(
            drop("R-1"),
            drop("R-2", **ROYAL_PALACE),
            drop("R-3", **AEON_MALL),
            drop("R-4", **AIRPORT),
        )
    )
    assert api.bulk(body, alice.live_key).json()["data"]["counts"]["accepted"] == 4
    prices = dict(Drop.objects.values_list("client_order_id", "price"))
    assert len(set(prices.values())) == 4  # four distances, four prices
    wallet.refresh_from_db()
    assert wallet.balance == start - sum(prices.values())

    entries(cancel(api, alice.live_key, "R-1", "R-3"))
    wallet.refresh_from_db()
    assert wallet.balance == start - prices["R-2"] - prices["R-4"] == ledger_sum(wallet)

    entries(cancel(api, alice.live_key, "R-2", "R-4"))
    wallet.refresh_from_db()
    assert wallet.balance == start == ledger_sum(wallet)
    refunds = LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.REFUND)
    assert sorted(r.amount for r in refunds) == sorted(prices.values())
    assert {r.drop.client_order_id: r.amount for r in refunds} == prices
    # Each entry's balance_after is the running sum of the ledger up to it.
    running = Decimal("0.00")
    for entry in LedgerEntry.objects.filter(wallet=wallet).order_by("id"):
        running += entry.amount
        assert entry.balance_after == running


def test_cancel_on_an_invoiced_account_writes_a_negative_line(open_for_business, make_tenant, api):
    tenant = make_tenant(billing="invoiced")
    ids = place(api, tenant.live_key, "I-1", "I-2")
    invoice = Invoice.objects.get(business=tenant.business, environment="live")
    price = Drop.objects.get(pk=ids["I-1"]).price
    accrued = invoice.accrued
    wallet = wallet_of(tenant, "live")
    balance = wallet.balance

    entry = entries(cancel(api, tenant.live_key, "I-1"))["I-1"]

    assert entry["status"] == S.CANCELLED
    [reversal] = InvoiceLine.objects.filter(drop_id=ids["I-1"], amount__lt=0)
    assert reversal.amount == -price
    assert reversal.invoice_id == invoice.pk
    invoice.refresh_from_db()
    assert invoice.accrued == accrued - price
    assert invoice.accrued == sum(invoice.lines.values_list("amount", flat=True))
    assert not LedgerEntry.objects.filter(kind=EntryKind.REFUND).exists()
    wallet.refresh_from_db()
    assert wallet.balance == balance
    assert not InvoiceLine.objects.filter(drop_id=ids["I-2"], amount__lt=0).exists()


def test_cancel_after_the_invoice_closed_reverses_on_the_current_month(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(billing="invoiced")
    drop_id = place(api, tenant.live_key, "I-1")["I-1"]
    price = Drop.objects.get(pk=drop_id).price
    november = Invoice.objects.get(business=tenant.business, environment="live")
    close_invoices(before_period="2026-12", today=date(2026, 12, 1))
    open_for_business.move_to(datetime(2026, 12, 1, 3, 0, tzinfo=UTC))

    entries(cancel(api, tenant.live_key, "I-1"))

    november.refresh_from_db()
    assert (november.period, november.status, november.accrued) == ("2026-11", "ISSUED", price)
    december = Invoice.objects.get(business=tenant.business, environment="live", period="2026-12")
    assert december.accrued == -price
    assert [line.amount for line in december.lines.all()] == [-price]


def test_a_failed_refund_leaves_the_drop_uncancelled(open_for_business, alice, api, monkeypatch):
    drop_id = put_in(api, alice.sandbox_key, "C-1", S.ASSIGNED)
    wallet = wallet_of(alice, "sandbox")
    balance = wallet.balance

    def broken_refund(**kwargs):
        raise RuntimeError("ledger unavailable")

    monkeypatch.setattr(services, "refund_drops", broken_refund)
    with pytest.raises(RuntimeError):
        cancel_orders(
            business=alice.business,
            environment="sandbox",
            identifiers=["C-1"],
            actor="test",
        )

    assert Drop.objects.get(pk=drop_id).status == S.ASSIGNED
    assert history_of(drop_id) == [S.PENDING, S.ASSIGNED]
    wallet.refresh_from_db()
    assert wallet.balance == balance


def test_after_cancel_the_client_order_id_is_free_again(open_for_business, alice, api):
    key = alice.sandbox_key
    first = put_in(api, key, "AGAIN", S.ASSIGNED)
    entries(cancel(api, key, "AGAIN"))

    second = place(api, key, "AGAIN")["AGAIN"]

    assert second != first
    assert Drop.objects.filter(client_order_id="AGAIN").count() == 2
    tracked = entries(api.track(["AGAIN"], key))["AGAIN"]
    assert tracked["drop_id"] == second and tracked["status"] == S.PENDING


def test_reuse_after_delivered_is_accepted(open_for_business, alice, api):
    key = alice.sandbox_key
    first = put_in(api, key, "AGAIN", S.DELIVERED)

    second = place(api, key, "AGAIN")["AGAIN"]

    assert second != first
    assert entries(api.track(["AGAIN"], key))["AGAIN"]["drop_id"] == second


def test_while_active_the_client_order_id_is_taken(open_for_business, alice, api):
    key = alice.sandbox_key
    put_in(api, key, "TAKEN", S.PICKED_UP)

    response = api.bulk(batch(group(drop("TAKEN"))), key)

    [result] = response.json()["data"]["orders"]
    assert result["failure_reason"] == "DUPLICATE_CLIENT_ORDER_ID"
    assert Drop.objects.filter(client_order_id="TAKEN").count() == 1


def test_cancel_after_reuse_cancels_the_active_drop(open_for_business, alice, api):
    key = alice.sandbox_key
    old = put_in(api, key, "AGAIN", S.DELIVERED)
    new = place(api, key, "AGAIN")["AGAIN"]

    entry = entries(cancel(api, key, "AGAIN"))["AGAIN"]

    assert entry["drop_id"] == new and entry["status"] == S.CANCELLED
    assert Drop.objects.get(pk=old).status == S.DELIVERED
    assert Drop.objects.get(pk=new).status == S.CANCELLED
    assert [r.drop_id for r in LedgerEntry.objects.filter(kind=EntryKind.REFUND)] == [
        Drop.objects.get(pk=new).pk
    ]


def test_a_sandbox_key_never_cancels_a_live_drop(open_for_business, alice, api):
    live = place(api, alice.live_key, "SAME")["SAME"]
    sandbox = place(api, alice.sandbox_key, "SAME")["SAME"]
    live_wallet = wallet_of(alice, "live")
    live_balance = live_wallet.balance

    entry = entries(cancel(api, alice.sandbox_key, "SAME"))["SAME"]

    assert entry["drop_id"] == sandbox
    assert Drop.objects.get(pk=sandbox).status == S.CANCELLED
    assert Drop.objects.get(pk=live).status == S.PENDING
    assert history_of(live) == [S.PENDING]
    live_wallet.refresh_from_db()
    assert live_wallet.balance == live_balance
    assert not LedgerEntry.objects.filter(wallet=live_wallet, kind=EntryKind.REFUND).exists()


def test_a_business_cannot_cancel_anothers_drop(open_for_business, alice, bob, api):
    drop_id = place(api, bob.sandbox_key, "B-1")["B-1"]

    entry = entries(cancel(api, alice.sandbox_key, "B-1"))["B-1"]

    assert entry["status"] == "NOT_FOUND"
    assert Drop.objects.get(pk=drop_id).status == S.PENDING


@pytest.mark.parametrize("body", [{}, {"identifiers": []}, {"identifiers": [7]}, "C-1"])
def test_bad_identifiers_are_400(open_for_business, alice, api, body):
    response = api.post("/orders/cancel", body, alice.sandbox_key)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_cancel_needs_a_key(db, api):
    assert cancel(api, None, "C-1").status_code == 401
